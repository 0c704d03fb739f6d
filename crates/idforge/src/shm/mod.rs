//! Shared-memory stamps: the sequencer's `u64` in memory that several processes map.
//!
//! * [`SharedWords`]: one page of `MAP_SHARED | MAP_ANONYMOUS` memory holding atomic words. It
//!   behaves like in-process atomics, but a `fork()`ed child shares the page with its parent
//!   instead of getting a copy, so a counter or stamp in it is never issued twice by parent and
//!   child. [`ProcessStamp`] (every in-process generator's stamp) and the locality generator's
//!   counter live in such a page.
//! * [`HostStamp`]: the stamp in a memory-mapped *state file* that every process of the host maps
//!   (Chronicle's `MappedUniqueTimeProvider`, seed `001`): ids are unique and ordered across all
//!   processes sharing the file, and across restarts while the file is kept.
//!
//! All of idforge's `unsafe` code is in one private submodule, `shm/sys.rs`: the raw
//! `mmap`/`munmap` of the anonymous page, a mapping seen as atomic words, the `SIGBUS` guard of
//! state file mappings, and a few `libc` calls (`flock`, `geteuid`, `getpwuid_r`, `kill(pid, 0)`,
//! `pthread_atfork`), each behind a safe function or type. The rest is safe code: the state
//! file's header (`header.rs`), its location (`paths.rs`), its trust checks and creation
//! (`file.rs`), how a new file starts (`fresh.rs`), [`HostStamp`] (`host.rs`) and the shared
//! anonymous words (`words.rs`).
//!
//! # The state file
//!
//! One page (4096 bytes), native-endian (a state file is for one host):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `IDFORGE\x01` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | page size of the file (4096) |
//! | 16 | 8 | FNV-1a checksum of bytes 0..16 and of the fingerprint |
//! | 24 | 8 | reserved (0) |
//! | 32 | 8 | the stamp (atomic) |
//! | 40 | 8 | durable mode: the ceiling being persisted (atomic) |
//! | 48 | 8 | durable mode: the ceiling known to be on disk (atomic) |
//! | 56 | 8 | durable mode: hash of the boot id of the machine boot that last opened the file (atomic) |
//! | 64 | 256 | fingerprint: what the stamp means (`scheme=… layout=… tick=… epoch=… node=… durable=… policy=…`), NUL-padded |
//!
//! The file is created atomically: the header is written and synced to a temporary file in the
//! same directory, which is then hard-linked to the final name (`link` fails if the name exists,
//! so a racing process either wins or opens the winner's complete file). Mode `0600` by default.
//!
//! # Who may control the file
//!
//! A process that can write the state file or rename entries in its directory can make another
//! process issue duplicates (by rewinding the stamp, or by swapping the file). So, unless the user
//! asked for a shared mode explicitly ([`StateOptions::shared_mode`]), a state file is refused if
//! it is not owned by the current user or is writable by group or others, and its directory is
//! refused if it is owned by another user (root excepted) or writable by group or others without
//! the sticky bit. Symbolic links are not followed for the file itself.
//!
//! # A file truncated, deleted or replaced while in use
//!
//! * **Truncated**: touching a mapped page past the end of its file raises `SIGBUS`. A process
//!   that maps a state file installs a `SIGBUS` handler (once) that, for a fault inside a state
//!   file mapping, puts a private zero page in its place and marks the mapping lost; every id from
//!   a lost mapping is refused with [`StateFileError::Lost`]. Faults elsewhere go to the handler
//!   that was installed before (or the default action) as if idforge were not there.
//! * **Deleted or replaced**: a process checks that the path still names the file it mapped (same
//!   device and inode, at least one page long) after every [`CHECK_INTERVAL`] of wall-clock time
//!   or of stamp time, whichever comes first (one `stat` per interval, not per id), and refuses
//!   every id after the check fails. The same check compares the header with the one opened (a
//!   file rewritten in place) and the stamp with the one seen at the previous check (a stamp
//!   written back); an id whose stamp is not above the last check's makes that comparison at
//!   once. The process that creates a new file waits [`FRESH_MARGIN`] after finding it missing,
//!   then starts its stamp at the tick after the one its clock reads plus the lead a process may
//!   have issued ahead of its clock ([`fresh_lead`]: `max_lead` under `RunAhead` and in durable
//!   mode) and the clock's error: ids from a new file at the same path start above every id the
//!   processes on the old file (with the same policy) could still issue before they noticed,
//!   whatever the tick's length (the argument is in the `fresh` module's source).
//!
//! # Durable mode
//!
//! A process restart keeps the stamp (it is in the page cache). A machine crash may lose the
//! latest stamp, and a clock that stepped back meanwhile could then repeat ids. In durable mode
//! the sequencer may not issue a stamp above the *ceiling* until the ceiling has been written to
//! disk (`msync`): when an id would pass it, the ceiling is raised to one second of stamps ahead
//! and synced first. When a process opens the file in a new boot of the machine (the boot id in
//! the header differs from `/proc/sys/kernel/random/boot_id`), the stamp may have been lost with
//! the page cache, so it is raised to the persisted ceiling: the first id after a power loss is
//! above every id ever issued. Within one boot the page cache holds the stamp and it is kept.
//! Where the boot cannot be identified (no readable boot id: other systems, hardened containers),
//! the first process to open the file while no other process has it open (every process holds a
//! shared `flock` on it) assumes a crash happened and raises the stamp to the persisted ceiling;
//! a process that finds others running trusts the stamp they keep. After a raise the generator
//! waits (up to about one second) for the clock to come within its policy's lead of the stamp. Cost: one `msync` of one page per
//! second of id time (a latency spike of typically 0.1–10 ms on the call that raises it; nothing on
//! the others). The raise takes no lock, so a `fork()` while another thread raises cannot
//! deadlock the child.

// Without `host-wide`, the state-file helpers have no caller left.
#![cfg_attr(not(feature = "host-wide"), allow(dead_code, unused_imports))]

use std::path::Path;

use crate::error::Error;

#[cfg(feature = "host-wide")]
mod file;
mod fresh;
mod header;
#[cfg(feature = "host-wide")]
mod host;
mod paths;
#[allow(unsafe_code)]
mod sys;
#[cfg(all(test, feature = "host-wide"))]
mod tests;
#[cfg(feature = "host-wide")]
mod watch;
mod words;

pub use crate::error::StateFileError;
pub use fresh::{fresh_lead, fresh_stamp, policy_lead, CHECK_INTERVAL, FRESH_MARGIN};
pub use header::{check_header, fingerprint, policy_text, state_header};
#[cfg(feature = "host-wide")]
pub use host::HostStamp;
pub use paths::{
    default_state_dir, default_state_path, state_file_name, StateOptions, BOOT_ID_PATH,
};
pub(crate) use sys::{allowed_cpus, pin_to_cpu};
pub use words::{ProcessStamp, SharedWords};

/// Fork detection shared by everything in a process that must not be copied into a child (a
/// batch of reserved stamps, a ticker's thread, a fleet lease): `watch_forks` registers a
/// `pthread_atfork` child handler once, `fork_generation` counts the forks that led here, and
/// `forks_always_counted` says whether it also counts forks made without those handlers.
pub use sys::{fork_generation, forks_always_counted, watch_forks};

/// ASCII bytes read as `&str` without validation (id text; see `text::Text`).
pub(crate) use sys::AsciiBuf;

/// The size of a state file and of a shared page of words.
const PAGE: usize = 4096;

fn io_err(path: &Path, action: &'static str, e: std::io::Error) -> Error {
    Error::StateFile(StateFileError::Io {
        path: path.display().to_string(),
        action,
        reason: e.to_string(),
    })
}

/// Whether a process with this id exists (it may belong to another user) and has not exited:
/// a zombie (exited, not yet reaped by its parent) is not alive. It still answers `kill(pid, 0)`,
/// and a lock holder killed inside its critical section stays a zombie until its parent reaps
/// it; counting it alive kept the parent's mode switch waiting on a lock no one held, for as
/// long as the child went unreaped (for ever if the thread that reaps was the one waiting).
pub(crate) fn process_alive(pid: u64) -> bool {
    libc::pid_t::try_from(pid).is_ok_and(|pid| sys::process_exists(pid) && !is_zombie(pid))
}

/// Whether `/proc` shows the process as a zombie (`Z`) or dead (`X`): the state field after the
/// command name in parentheses, which may itself contain `)`. `false` where `/proc` cannot say.
fn is_zombie(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}
