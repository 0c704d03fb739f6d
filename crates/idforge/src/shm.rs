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
//! This module holds all of idforge's `unsafe` code: turning a pointer into a mapping into an
//! `&AtomicU64`, the raw `mmap`/`munmap` of the anonymous page, and the `SIGBUS` guard of state
//! file mappings.
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
//!   once. The process that creates a new file waits [`FRESH_MARGIN`] (plus `max_lead` under
//!   `RunAhead`, plus one second in durable mode) after finding it missing, then starts its stamp
//!   at the clock: ids from a new file at the same path start above every id the processes on
//!   the old file (with the same policy) could still issue before they noticed.
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

// Without `host-wide`, the state-file helpers below have no caller left.
#![cfg_attr(not(feature = "host-wide"), allow(dead_code, unused_imports))]

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

#[cfg(feature = "host-wide")]
use memmap2::MmapMut;

use crate::error::Error;
use crate::sequencer::{OnExhausted, Policy, StampCell, Timebase};

const PAGE: usize = 4096;
const MAGIC: [u8; 8] = *b"IDFORGE\x01";
const VERSION: u32 = 1;
const OFF_CHECKSUM: usize = 16;
const OFF_STAMP: usize = 32;
const OFF_PENDING: usize = 40;
const OFF_DURABLE: usize = 48;
const OFF_BOOT: usize = 56;
const OFF_FINGERPRINT: usize = 64;
const FINGERPRINT_LEN: usize = 256;

/// How often (in wall-clock time, and in stamp time) a process checks that its state file's path
/// still names the file it mapped.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(1);

/// How long a process that creates a state file waits before it reads the clock for the file's
/// first stamp ([`fresh_wait`]): more than [`CHECK_INTERVAL`], so processes still using a deleted
/// file at the same path have stopped, and their stamps are below the clock (plus the lead their
/// policy allows).
pub const FRESH_MARGIN: Duration = Duration::from_millis(2);

/// The lead a fresh state file allows for under the unbounded policy of a fixed clock (whose
/// lead has no bound to allow for).
const UNBOUNDED_FRESH_LEAD: Duration = Duration::from_secs(1);

/// Where the boot id is read (Linux).
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

pub use crate::error::StateFileError;

fn io_err(path: &Path, action: &'static str, e: std::io::Error) -> Error {
    Error::StateFile(StateFileError::Io {
        path: path.display().to_string(),
        action,
        reason: e.to_string(),
    })
}

static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    // Async-signal-safe: one atomic add.
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers (once per process) a `pthread_atfork` handler that counts forks in the child.
pub(crate) fn watch_forks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registering a child handler that only performs an atomic add; the function
        // lives for the whole program.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
}

/// How many forks led to this process (0 in the original process): per-process state copied by
/// `fork()` (random generators, reserved batches) compares it to know it must be renewed.
/// [`watch_forks`] must have been called before the fork for the count to move.
#[inline]
pub(crate) fn fork_generation() -> u64 {
    FORK_GENERATION.load(Ordering::Relaxed)
}

/// A hash of this boot of the machine, from the boot id at `path`; `None` when it cannot be read
/// (then the boot cannot be identified).
fn boot_id_hash(path: &Path) -> Option<u64> {
    let id = fs::read_to_string(path).ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| fnv1a(&[id.as_bytes()]) | 1)
}

/// FNV-1a, 64-bit: a stable checksum (std's hashers may change between Rust releases).
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// How a policy is written in a fingerprint: every process sharing a file must agree on it.
pub fn policy_text(policy: &Policy) -> String {
    let lead = if policy.max_lead == Duration::MAX {
        "unbounded".to_string()
    } else {
        format!("{}ns", policy.max_lead.as_nanos())
    };
    format!(
        "{}/{lead}/{}",
        match policy.on_exhausted {
            OnExhausted::Wait => "wait",
            OnExhausted::RunAhead => "run-ahead",
        },
        match policy.on_clock_behind {
            crate::sequencer::OnClockBehind::Wait => "wait",
            crate::sequencer::OnClockBehind::Fail => "fail",
        }
    )
}

/// The fingerprint of a generator: what a state file's stamp means, and the policy every process
/// issuing from it follows.
pub fn fingerprint(
    scheme: &str,
    layout_spec: &str,
    tb: &Timebase,
    node: u64,
    durable: bool,
    policy: &Policy,
) -> String {
    format!(
        "scheme={scheme} layout={layout_spec} tick={}ns epoch={}ns counter={} node={node} durable={} policy={}",
        tb.tick_ns,
        tb.epoch_ns,
        tb.counter_bits,
        if durable { "yes" } else { "no" },
        policy_text(policy),
    )
}

/// How long the process that creates a state file waits, after it found the file missing and
/// before it reads the clock for the new file's first stamp: [`FRESH_MARGIN`], plus the lead a
/// process may issue ahead of its clock under `RunAhead` (`max_lead`), plus one second in
/// durable mode (a process that recovered to a durable mark may be up to that far ahead).
/// Processes still issuing from a deleted file at the same path (with the same policy) stop
/// within [`CHECK_INTERVAL`], and their stamps were at most that far ahead of the clock: the new
/// file's stamps start above theirs. The unbounded policy of a fixed clock (`--at`) has no lead
/// to wait out.
pub fn fresh_wait(policy: &Policy, durable: bool) -> Duration {
    let lead = match policy.on_exhausted {
        OnExhausted::RunAhead if policy.max_lead == Duration::MAX => Duration::ZERO,
        OnExhausted::RunAhead => policy.max_lead,
        OnExhausted::Wait => Duration::ZERO,
    };
    FRESH_MARGIN
        + lead
        + if durable {
            Duration::from_secs(1)
        } else {
            Duration::ZERO
        }
}

/// How far ahead of its clock a process following `policy` may issue: `max_lead` under
/// `RunAhead` (one second for the unbounded policy), nothing under `Wait` (whose lead comes only
/// from a clock that stepped back).
pub fn policy_lead(policy: &Policy) -> Duration {
    match policy.on_exhausted {
        OnExhausted::RunAhead if policy.max_lead == Duration::MAX => UNBOUNDED_FRESH_LEAD,
        OnExhausted::RunAhead => policy.max_lead,
        OnExhausted::Wait => Duration::ZERO,
    }
}

/// The stamp a newly created state file starts at, for a generator whose clock reads `now_ns`
/// (read after [`HostStamp::open_fresh`] waited [`fresh_wait`]): the clock's tick, less one so
/// that the first id takes counter 0 of that tick.
pub fn fresh_stamp(tb: &Timebase, now_ns: u64) -> u64 {
    let at = u128::from(now_ns);
    let tick = at.saturating_sub(u128::from(tb.epoch_ns)) / u128::from(tb.tick_ns);
    let stamp = tick << tb.counter_bits;
    if stamp > u128::from(tb.max_stamp()) {
        0
    } else {
        (stamp as u64).saturating_sub(1)
    }
}

/// How to open a [`HostStamp`].
#[derive(Debug, Clone)]
pub struct StateOptions {
    /// The state file.
    pub path: PathBuf,
    /// Permission bits of a newly created file (default `0o600`).
    pub mode: u32,
    /// The mode was asked for explicitly to share the file with a group or others: a file and
    /// directory writable as far as `mode` allows, by any owner, are then accepted (see
    /// [`StateOptions::shared_mode`]).
    pub shared: bool,
    /// Durable mode: persist a ceiling before issuing past it.
    pub durable: bool,
    /// Where the boot id is read (default [`BOOT_ID_PATH`]); an unreadable one means the boot
    /// cannot be identified, and durable mode then recovers to the persisted mark on every open.
    pub boot_id_path: PathBuf,
}

impl StateOptions {
    /// Options for `path`, mode `0600`, not durable.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StateOptions {
            path: path.into(),
            mode: 0o600,
            shared: false,
            durable: false,
            boot_id_path: PathBuf::from(BOOT_ID_PATH),
        }
    }

    /// Share the file explicitly: new files get `mode` (for instance `0o660` for a group), and an
    /// existing file or directory writable by group or others, or owned by another user, is
    /// accepted as far as `mode` grants that access. Everyone who can write the file can make
    /// every process using it issue duplicates: share only with whom you trust.
    pub fn shared_mode(mut self, mode: u32) -> Self {
        self.mode = mode & 0o7777;
        self.shared = true;
        self
    }
}

/// The home directory of the effective user from the password database (not `$HOME`, which
/// differs between shells, `sudo` and services).
fn passwd_home() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `passwd` is plain old data, zero is a valid bit pattern for it.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes into `pw` and `buf` (whose length we pass) and sets `result` to
    // `&pw` on success; the strings it returns point into `buf`, read before `buf` is dropped.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pw.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir is a NUL-terminated string inside `buf`, which is alive here.
    let dir = unsafe { CStr::from_ptr(pw.pw_dir) };
    let dir = std::ffi::OsStr::from_bytes(dir.to_bytes());
    (!dir.is_empty() && dir != "/").then(|| PathBuf::from(dir))
}

/// The default directory for state files: `$IDFORGE_STATE_DIR` if set, else
/// `<home>/.local/state/idforge` with the home directory of the effective user from the password
/// database (`$HOME` only if the user has no entry there).
///
/// The per-shell variables `XDG_STATE_HOME` and `HOME` are deliberately not followed: two shells of
/// one user with different values would otherwise use two state files for one scheme and node,
/// and their ids would collide. There is no fallback to a shared temporary directory (another
/// user could create it first): without a home directory this is
/// [`StateFileError::NoDefaultDir`].
///
/// # Errors
/// [`StateFileError::NoDefaultDir`] when neither the variable nor a home directory is available.
pub fn default_state_dir() -> Result<PathBuf, Error> {
    if let Some(d) = std::env::var_os("IDFORGE_STATE_DIR").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    let home = passwd_home().or_else(|| {
        std::env::var_os("HOME")
            .filter(|v| !v.is_empty() && v != "/")
            .map(PathBuf::from)
    });
    match home {
        Some(h) => Ok(h.join(".local/state/idforge")),
        None => Err(Error::StateFile(StateFileError::NoDefaultDir {
            reason: "the current user has no home directory".into(),
        })),
    }
}

/// The default state file of a scheme and node: `<default_state_dir>/<scheme>[-node<N>].state`
/// (custom layouts add a hash of their spec, so two layouts never share a file).
///
/// # Errors
/// As [`default_state_dir`].
pub fn default_state_path(
    scheme: &str,
    layout_spec: &str,
    node: Option<u64>,
) -> Result<PathBuf, Error> {
    let mut name = scheme.to_string();
    if scheme == "custom" {
        name.push_str(&format!("-{:016x}", fnv1a(&[layout_spec.as_bytes()])));
    }
    if let Some(n) = node {
        name.push_str(&format!("-node{n}"));
    }
    name.push_str(".state");
    Ok(default_state_dir()?.join(name))
}

/// Whether a process with this id exists (it may belong to another user).
pub(crate) fn process_alive(pid: u64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// `flock(2)` on a file; whether it was granted.
fn flock(file: &File, op: libc::c_int) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor this `File` owns; no memory is passed.
    unsafe { libc::flock(file.as_raw_fd(), op) == 0 }
}

/// The lock a state file's creators hold on its directory; released on drop.
struct DirectoryLock {
    _dir: File,
}

/// Takes the directory's exclusive `flock`, waiting up to 10 s for another creator.
fn lock_directory(dir: &Path) -> Result<DirectoryLock, Error> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| io_err(dir, "open the directory of", e))?;
    let start = std::time::Instant::now();
    while !flock(&f, libc::LOCK_EX | libc::LOCK_NB) {
        if start.elapsed() > Duration::from_secs(10) {
            return Err(Error::StateFile(StateFileError::Io {
                path: dir.display().to_string(),
                action: "lock the directory of",
                reason: "another process has been creating a state file there for 10 s (stopped?); find it with `fuser` or `lsof` on the directory".into(),
            }));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(DirectoryLock { _dir: f })
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuses a state file or directory that someone else could change (see the module docs).
fn check_trusted(
    what: &'static str,
    path: &Path,
    meta: &fs::Metadata,
    opts: &StateOptions,
) -> Result<(), Error> {
    let me = euid();
    let mode = meta.mode() & 0o7777;
    let untrusted = |problem: String, fix: String| {
        Err(Error::StateFile(StateFileError::Untrusted {
            what,
            path: path.display().to_string(),
            problem,
            fix,
        }))
    };
    let is_dir = what == "directory";
    // Write access granted to group and others beyond what an explicit shared mode allows.
    let allowed = if opts.shared { opts.mode & 0o022 } else { 0 };
    let mut extra_write = mode & 0o022 & !allowed;
    if is_dir && mode & 0o1000 != 0 {
        // Sticky: others may add names but not rename or delete ours; the file check decides.
        extra_write = 0;
    }
    // Another owner is accepted only when the user shares the file on purpose with a mode that
    // lets group or others write (a private mode such as 600 keeps the owner check).
    let shares_write = opts.shared && opts.mode & 0o022 != 0;
    let owner_ok = meta.uid() == me || (is_dir && meta.uid() == 0) || shares_write;
    if !owner_ok {
        return untrusted(
            format!(
                "owned by user id {} (this process runs as {me})",
                meta.uid()
            ),
            if is_dir {
                "Use a directory of your own (`StateOptions::path`, or IDFORGE_STATE_DIR)".into()
            } else {
                "Use your own file (`StateOptions::path`); to share one file between users on purpose, give it a group-writable mode and open it with that mode (`StateOptions::shared_mode`, e.g. 660)".into()
            },
        );
    }
    if extra_write != 0 {
        return untrusted(
            format!(
                "writable by {} (mode {mode:o})",
                match (extra_write & 0o020 != 0, extra_write & 0o002 != 0) {
                    (true, true) => "its group and others",
                    (true, false) => "its group",
                    _ => "others",
                }
            ),
            format!(
                "Run `chmod go-w {}`, or, to share it on purpose, open it with a mode that allows it (`StateOptions::shared_mode`, e.g. 660)",
                path.display()
            ),
        );
    }
    Ok(())
}

/// One page of shared anonymous memory holding atomic `u64` words: like in-process atomics, but
/// a `fork()`ed child shares the page with its parent instead of getting a copy.
///
/// ```
/// use idforge::shm::SharedWords;
/// let w = SharedWords::new()?;
/// w.word(0).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
/// assert_eq!(w.word(0).load(std::sync::atomic::Ordering::Relaxed), 1);
/// # Ok::<(), idforge::Error>(())
/// ```
pub struct SharedWords {
    page: *mut libc::c_void,
}

// SAFETY: the page is only accessed through atomics; the raw pointer is only unmapped in Drop,
// which has exclusive access.
unsafe impl Send for SharedWords {}
// SAFETY: as above: shared access is atomic only.
unsafe impl Sync for SharedWords {}

impl SharedWords {
    /// How many words the page holds.
    pub const LEN: usize = PAGE / 8;

    /// A new page of words, all zero.
    ///
    /// # Errors
    /// [`StateFileError::Io`] if the page cannot be mapped.
    pub fn new() -> Result<SharedWords, Error> {
        // SAFETY: an anonymous shared mapping of one page with no address hint has no
        // preconditions; the result is checked against MAP_FAILED before use.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(Error::StateFile(StateFileError::Io {
                path: "(shared anonymous page)".into(),
                action: "map",
                reason: std::io::Error::last_os_error().to_string(),
            }));
        }
        Ok(SharedWords { page })
    }

    /// Word `i` (`i < LEN`; panics otherwise).
    #[inline]
    pub fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < Self::LEN, "SharedWords has {} words", Self::LEN);
        // SAFETY: the page is page-aligned and PAGE bytes long, so word i is 8-byte aligned and
        // inside it; it lives until Drop, which cannot run while `&self` is borrowed; it is only
        // accessed through atomics. AtomicU64 has the size and alignment of u64.
        unsafe { &*(self.page as *const AtomicU64).add(i) }
    }
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        // SAFETY: `page` came from a successful mmap of PAGE bytes and is unmapped exactly once;
        // no reference into it survives `self`.
        unsafe {
            libc::munmap(self.page, PAGE);
        }
    }
}

/// A `u64` inside a shared mapping.
struct Slot {
    ptr: *const AtomicU64,
}

impl Slot {
    /// # Safety
    /// `base + offset` must be 8-byte aligned and lie, with its 8 bytes, inside a mapping that
    /// outlives the `Slot`, and that memory must only ever be accessed atomically while it exists.
    unsafe fn new(base: *const u8, offset: usize) -> Slot {
        Slot {
            ptr: base.add(offset).cast::<AtomicU64>(),
        }
    }

    fn get(&self) -> &AtomicU64 {
        // SAFETY: `Slot::new`'s contract: the pointer is aligned, in a live mapping owned by the
        // struct that owns this slot (so it outlives `&self`), and accessed only through atomics.
        // `AtomicU64` has the same size and alignment as `u64`, and atomics on shared memory are
        // coherent across processes (lock-free 64-bit atomics on every supported target).
        unsafe { &*self.ptr }
    }
}

// SAFETY: the slot only hands out `&AtomicU64`, which is Send + Sync.
unsafe impl Send for Slot {}
// SAFETY: as above.
unsafe impl Sync for Slot {}

/// The `SIGBUS` guard of state file mappings (see the module docs).
mod guard {
    use super::*;

    /// Mappings that can be guarded at once.
    pub(super) const SLOTS: usize = 256;
    /// Base address of each guarded page (0: free slot).
    static BASES: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    /// Set by the handler when it replaced a slot's page.
    pub(super) static LOST: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
    /// The action that was installed before ours (a leaked `sigaction`).
    static PREVIOUS: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn on_sigbus(
        _sig: libc::c_int,
        info: *mut libc::siginfo_t,
        _ctx: *mut libc::c_void,
    ) {
        // Only async-signal-safe work here: atomics, mmap, sigaction.
        // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler of SIGBUS.
        let addr = unsafe { (*info).si_addr() } as usize;
        for i in 0..SLOTS {
            let base = BASES[i].load(Ordering::Acquire);
            if base != 0 && addr >= base && addr < base + PAGE {
                LOST[i].store(true, Ordering::SeqCst);
                // SAFETY: `base` is a page of ours (registered while its mapping lives); a
                // private zero page replaces it, so the faulting access is retried on memory that
                // exists. Ids from it are refused because LOST is set first.
                let p = unsafe {
                    libc::mmap(
                        base as *mut libc::c_void,
                        PAGE,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if p != libc::MAP_FAILED {
                    return;
                }
                break;
            }
        }
        // Not ours (or the replacement failed): restore the previous action and return; the
        // access faults again and is handled as it would have been without idforge.
        let prev = PREVIOUS.load(Ordering::Acquire) as *const libc::sigaction;
        // SAFETY: PREVIOUS points to a leaked, initialised sigaction (set before our handler was
        // installed); a null pointer restores the default action.
        unsafe {
            if prev.is_null() {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            } else {
                libc::sigaction(libc::SIGBUS, prev, std::ptr::null_mut());
            }
        }
    }

    fn install() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: sigaction with a zeroed struct filled in below; the previous action is
            // stored in a leaked box that lives for the rest of the program.
            unsafe {
                let prev: &'static mut libc::sigaction = Box::leak(Box::new(std::mem::zeroed()));
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), prev) != 0 {
                    return;
                }
                PREVIOUS.store(prev as *const libc::sigaction as usize, Ordering::Release);
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_sigbus as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
            }
        });
    }

    /// Guards the page at `base`; the slot index, or `None` if every slot is taken.
    pub(super) fn register(base: usize) -> Option<usize> {
        install();
        for i in 0..SLOTS {
            if BASES[i]
                .compare_exchange(0, base, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                LOST[i].store(false, Ordering::SeqCst);
                return Some(i);
            }
        }
        None
    }

    pub(super) fn unregister(slot: usize) {
        BASES[slot].store(0, Ordering::Release);
    }
}

// Why a `HostStamp` stopped issuing.
#[cfg(feature = "host-wide")]
const BROKEN_NONE: u64 = 0;
#[cfg(feature = "host-wide")]
const BROKEN_DELETED: u64 = 1;
#[cfg(feature = "host-wide")]
const BROKEN_REPLACED: u64 = 2;
#[cfg(feature = "host-wide")]
const BROKEN_TRUNCATED: u64 = 3;
#[cfg(feature = "host-wide")]
const BROKEN_UNCHECKABLE: u64 = 4;
#[cfg(feature = "host-wide")]
const BROKEN_REWOUND: u64 = 5;

/// The stamp in a state file shared by every process of the host.
#[cfg(feature = "host-wide")]
pub struct HostStamp {
    // Field order: the slots point into `map`, so they are declared (and dropped) first.
    stamp: Slot,
    pending: Slot,
    durable_ceiling: Slot,
    durable: bool,
    ahead: u64,
    /// The `SIGBUS` guard slot of the mapping.
    guard: usize,
    /// Identity of the mapped file.
    dev: u64,
    ino: u64,
    /// When the path was last checked: clock ns and stamp.
    last_check_ns: AtomicU64,
    last_check_stamp: AtomicU64,
    check_ns: u64,
    check_stamps: u64,
    /// Sticky: why this process stopped issuing from the file (`BROKEN_*`).
    broken: AtomicU64,
    /// The header (bytes 0..32) and fingerprint as opened: a periodic check compares them.
    header: Vec<u8>,
    fingerprint_bytes: Vec<u8>,
    map: MmapMut,
    /// Open while the mapping is in use: it holds the shared `flock`.
    _file: File,
    path: PathBuf,
}

#[cfg(feature = "host-wide")]
impl std::fmt::Debug for HostStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostStamp")
            .field("path", &self.path)
            .field("stamp", &self.stamp.get().load(Ordering::Relaxed))
            .field("durable", &self.durable)
            .finish()
    }
}

#[cfg(feature = "host-wide")]
impl HostStamp {
    /// Opens (creating it if needed) the state file for a generator with this fingerprint and
    /// time base. A newly created file starts at stamp 0; generators use
    /// [`HostStamp::open_fresh`], which starts a new file ahead of their clock.
    ///
    /// # Errors
    /// Every [`StateFileError`] but `Lost`.
    pub fn open(opts: &StateOptions, fingerprint: &str, tb: &Timebase) -> Result<HostStamp, Error> {
        Self::open_fresh(opts, fingerprint, tb, Duration::ZERO, &|| 0)
    }

    /// Opens (creating it if needed) the state file for a generator with this fingerprint and
    /// time base; a file this call creates starts at `fresh_stamp()` (see [`fresh_stamp`]),
    /// evaluated only after the file was found missing and `wait` ([`fresh_wait`]) has passed. In durable mode the stamp starts at or
    /// above the persisted ceiling. The file and its directory must be trusted (module docs).
    ///
    /// # Errors
    /// Every [`StateFileError`] but `Lost`.
    pub fn open_fresh(
        opts: &StateOptions,
        fingerprint: &str,
        tb: &Timebase,
        wait: Duration,
        fresh_stamp: &dyn Fn() -> u64,
    ) -> Result<HostStamp, Error> {
        let path = &opts.path;
        if fingerprint.len() > FINGERPRINT_LEN {
            return Err(Error::InvalidLayout(format!(
                "the state fingerprint is longer than {FINGERPRINT_LEN} bytes: {fingerprint}"
            )));
        }
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| io_err(dir, "create the directory for", e))?;
        }
        let link =
            fs::symlink_metadata(dir).map_err(|e| io_err(dir, "inspect the directory of", e))?;
        if link.file_type().is_symlink() && link.uid() != euid() && link.uid() != 0 {
            // Whoever owns the link can point it elsewhere at any time: two files for one path.
            return Err(Error::StateFile(StateFileError::Untrusted {
                what: "directory",
                path: dir.display().to_string(),
                problem: format!(
                    "a symbolic link owned by user id {} (this process runs as {})",
                    link.uid(),
                    euid()
                ),
                fix: "Use a directory of your own (`StateOptions::path`, or IDFORGE_STATE_DIR)"
                    .into(),
            }));
        }
        let dir_meta = fs::metadata(dir).map_err(|e| io_err(dir, "inspect the directory of", e))?;
        if !dir_meta.is_dir() {
            return Err(Error::StateFile(StateFileError::Untrusted {
                what: "directory",
                path: dir.display().to_string(),
                problem: "not a directory".into(),
                fix: "Choose a path in a directory (`StateOptions::path`)".into(),
            }));
        }
        check_trusted("directory", dir, &dir_meta, opts)?;
        match fs::symlink_metadata(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Creators hold the directory's lock from the moment they find the file missing
                // until it exists: no other file can appear (and be used, and be deleted) at the
                // path while this one waits out the predecessors' lead.
                let _creating = lock_directory(dir)?;
                match fs::symlink_metadata(path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        std::thread::sleep(wait);
                        create(dir, path, opts.mode, fingerprint, fresh_stamp())?;
                    }
                    _ => {} // another creator made it meanwhile: use theirs
                }
            }
            Err(e) => return Err(io_err(path, "inspect", e)),
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    Error::StateFile(StateFileError::Untrusted {
                        what: "file",
                        path: path.display().to_string(),
                        problem: "a symbolic link".into(),
                        fix: "Give the file itself (`StateOptions::path`)".into(),
                    })
                } else {
                    io_err(path, "open", e)
                }
            })?;
        let meta = file.metadata().map_err(|e| io_err(path, "stat", e))?;
        if !meta.is_file() {
            return Err(Error::StateFile(StateFileError::Untrusted {
                what: "file",
                path: path.display().to_string(),
                problem: "not a regular file".into(),
                fix: "Choose a regular file (`StateOptions::path`)".into(),
            }));
        }
        check_trusted("file", path, &meta, opts)?;
        let len = meta.len();
        if len < PAGE as u64 {
            return Err(Error::StateFile(StateFileError::Truncated {
                path: path.display().to_string(),
                len,
                expected: PAGE as u64,
            }));
        }
        // SAFETY: the file is mapped shared, read-write, for exactly one page that the file holds
        // (checked above). Other processes change the stamp words concurrently; this process only
        // reads the header as bytes before creating the atomic slots, and afterwards touches the
        // stamp words only through atomics. A truncation of the file by another process while it
        // is mapped raises SIGBUS on the next access: the guard registered below replaces the page
        // and marks it lost, and every id is then refused.
        let mut map = unsafe { memmap2::MmapOptions::new().len(PAGE).map_mut(&file) }
            .map_err(|e| io_err(path, "map", e))?;
        let base = map.as_mut_ptr() as *const u8;
        let Some(guard) = guard::register(base as usize) else {
            return Err(Error::StateFile(StateFileError::Io {
                path: path.display().to_string(),
                action: "guard",
                reason: format!("this process has {} state files open already", guard::SLOTS),
            }));
        };
        // Unregister on every early return below.
        struct Unregister(Option<usize>);
        impl Drop for Unregister {
            fn drop(&mut self) {
                if let Some(s) = self.0 {
                    guard::unregister(s);
                }
            }
        }
        let mut unregister = Unregister(Some(guard));
        check_header(path, &map, fingerprint)?;
        // SAFETY: a page mapping is page-aligned, so base + 24/32/40/48 are 8-byte aligned and
        // inside the page; the slots are owned by the HostStamp that owns `map` and are dropped
        // before it (field order); from here on these words are accessed only atomically.
        let (stamp, pending, durable_ceiling) = unsafe {
            (
                Slot::new(base, OFF_STAMP),
                Slot::new(base, OFF_PENDING),
                Slot::new(base, OFF_DURABLE),
            )
        };
        // Every process holds a shared lock on the file while it uses it; the first one to open
        // it (no lock held by anyone) gets the exclusive lock first: it knows no process survived
        // from before, which durable mode needs where the boot cannot be identified. It keeps
        // the exclusive lock until its recovery is done, so others wait for it (below).
        let first = flock(&file, libc::LOCK_EX | libc::LOCK_NB);
        if !first && !flock(&file, libc::LOCK_SH) {
            return Err(io_err(path, "lock", std::io::Error::last_os_error()));
        }
        let per_second = (1_000_000_000u64 / tb.tick_ns).max(1);
        let ahead = per_second.checked_shl(tb.counter_bits).unwrap_or(u64::MAX);
        let check_ns = CHECK_INTERVAL.as_nanos() as u64;
        let check_ticks = (check_ns / tb.tick_ns).max(1);
        unregister.0 = None;
        let hs = HostStamp {
            stamp,
            pending,
            durable_ceiling,
            durable: opts.durable,
            ahead,
            guard,
            dev: meta.dev(),
            ino: meta.ino(),
            last_check_ns: AtomicU64::new(0),
            last_check_stamp: AtomicU64::new(0),
            check_ns,
            check_stamps: check_ticks.checked_shl(tb.counter_bits).unwrap_or(u64::MAX),
            broken: AtomicU64::new(BROKEN_NONE),
            header: map[..OFF_STAMP].to_vec(),
            fingerprint_bytes: map[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN].to_vec(),
            map,
            _file: file,
            path: path.clone(),
        };
        if hs.durable {
            hs.recover_after_reboot(&opts.boot_id_path, first)?;
        }
        if first && !flock(&hs._file, libc::LOCK_SH) {
            return Err(io_err(path, "lock", std::io::Error::last_os_error()));
        }
        Ok(hs)
    }

    /// Durable mode, on open: in a new boot of the machine (or when the boot cannot be
    /// identified) the stamp in the file may be older than ids issued before a crash, so it is
    /// raised to the persisted mark; the mark is synced before it becomes the ceiling others may
    /// issue up to.
    fn recover_after_reboot(&self, boot_id_path: &Path, first: bool) -> Result<(), Error> {
        let boot = boot_id_hash(boot_id_path);
        let slot = self.boot_slot();
        let seen = slot.get().load(Ordering::Acquire);
        // A known boot: recover when it changed. An unknown boot: recover when no other process
        // has the file open (a crash kills them all; a live one means the stamp is current), so
        // processes already running are not pushed ahead.
        let recover = match boot {
            Some(b) => b != seen,
            None => first,
        };
        if recover {
            // A new boot, an unknown boot, or the file's first durable open: everything up to the
            // persisted mark may have been issued.
            let mark = self.pending.get().load(Ordering::Acquire);
            self.stamp.get().fetch_max(mark, Ordering::AcqRel);
            if let Some(boot) = boot {
                let _ =
                    slot.get()
                        .compare_exchange(seen, boot, Ordering::AcqRel, Ordering::Acquire);
            }
        }
        // Sync before trusting the mark: a process killed between raising `pending` and its
        // msync left a mark that may not be on disk.
        let mark = self.pending.get().load(Ordering::Acquire);
        self.map
            .flush_range(0, PAGE)
            .map_err(|e| io_err(&self.path, "sync (msync) the durable ceiling of", e))?;
        self.durable_ceiling
            .get()
            .fetch_max(mark, Ordering::Release);
        Ok(())
    }

    fn boot_slot(&self) -> Slot {
        // SAFETY: offset 56 is 8-byte aligned inside the page mapping owned by `self`; the
        // returned slot is used only while `self` (and so the mapping) is borrowed.
        unsafe { Slot::new(self.map.as_ptr(), OFF_BOOT) }
    }

    /// Simulates a reboot for tests: forget which boot last opened the file.
    #[doc(hidden)]
    pub fn forget_boot(&self) {
        self.boot_slot().get().store(0, Ordering::SeqCst);
    }

    /// The state file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The persisted ceiling (durable mode).
    pub fn persisted_ceiling(&self) -> u64 {
        self.pending.get().load(Ordering::Acquire)
    }

    /// Overwrites the stamp: for tests that simulate a crash which lost the latest stamp.
    #[doc(hidden)]
    pub fn force_stamp(&self, stamp: u64) {
        self.stamp.get().store(stamp, Ordering::SeqCst);
    }

    /// Whether this process still issues from the file: `Err` once the file was found truncated,
    /// deleted or replaced.
    ///
    /// # Errors
    /// [`StateFileError::Lost`].
    #[inline]
    pub fn usable(&self) -> Result<(), Error> {
        if guard::LOST[self.guard].load(Ordering::Acquire) {
            self.broken
                .compare_exchange(
                    BROKEN_NONE,
                    BROKEN_TRUNCATED,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .ok();
        }
        match self.broken.load(Ordering::Relaxed) {
            BROKEN_NONE => Ok(()),
            why => Err(self.lost(why)),
        }
    }

    #[cold]
    fn lost(&self, why: u64) -> Error {
        Error::StateFile(StateFileError::Lost {
            path: self.path.display().to_string(),
            what: match why {
                BROKEN_DELETED => "was deleted",
                BROKEN_REPLACED => "was replaced by another file",
                BROKEN_TRUNCATED => "was truncated",
                BROKEN_REWOUND => "was rewound (an older stamp was written into it, for instance a copy restored over it)",
                _ => "could no longer be checked",
            }
            .into(),
        })
    }

    /// Checks now that the path still names the mapped file, whole.
    ///
    /// # Errors
    /// [`StateFileError::Lost`].
    #[cold]
    pub fn check_path(&self) -> Result<(), Error> {
        let why = match fs::symlink_metadata(&self.path) {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino => {
                if m.len() < PAGE as u64 {
                    BROKEN_TRUNCATED
                } else {
                    BROKEN_NONE
                }
            }
            Ok(_) => BROKEN_REPLACED,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BROKEN_DELETED,
            Err(_) => BROKEN_UNCHECKABLE,
        };
        if why != BROKEN_NONE {
            self.set_broken(why);
        }
        self.usable()
    }

    #[cold]
    fn check_now(&self, now_ns: u64, stamp: u64) -> Result<(), Error> {
        self.check_path()?;
        // The header as opened (a file rewritten in place, by `cp` for instance, is caught here
        // even when no access fell in the moment it was short)...
        if self.map[..OFF_STAMP] != self.header[..]
            || self.map[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN]
                != self.fingerprint_bytes[..]
        {
            self.set_broken(BROKEN_REPLACED);
        }
        // ...and a stamp that never went back.
        self.check_rewind()?;
        self.last_check_ns.store(now_ns, Ordering::Relaxed);
        self.last_check_stamp
            .fetch_max(self.load().max(stamp), Ordering::Relaxed);
        self.usable()
    }

    /// The stamp a cell holds only grows: below a value seen at an earlier check, someone wrote
    /// an older stamp into the file (a backup copied over it, a rewind).
    #[cold]
    fn check_rewind(&self) -> Result<(), Error> {
        if self.load() < self.last_check_stamp.load(Ordering::Relaxed) {
            self.set_broken(BROKEN_REWOUND);
        }
        self.usable()
    }

    fn set_broken(&self, why: u64) {
        let _ =
            self.broken
                .compare_exchange(BROKEN_NONE, why, Ordering::Relaxed, Ordering::Relaxed);
    }
}

#[cfg(feature = "host-wide")]
impl Drop for HostStamp {
    fn drop(&mut self) {
        guard::unregister(self.guard);
    }
}

#[cfg(feature = "host-wide")]
impl StampCell for HostStamp {
    #[inline]
    fn load(&self) -> u64 {
        self.stamp.get().load(Ordering::Relaxed)
    }

    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.stamp
            .get()
            .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }

    #[inline]
    fn ceiling(&self) -> u64 {
        if self.durable {
            // Acquire pairs with the Release store after the msync in `raise_ceiling`.
            self.durable_ceiling.get().load(Ordering::Acquire)
        } else {
            u64::MAX
        }
    }

    /// Lock-free, so a `fork()` while another thread raises cannot leave the child waiting for
    /// a lock no thread of its own holds: each raiser persists its own target before publishing
    /// it (concurrent raisers may sync the page more than once).
    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        self.usable()?;
        let current = self.durable_ceiling.get().load(Ordering::Acquire);
        if current >= needed {
            return Ok(current);
        }
        let target = needed.saturating_add(self.ahead);
        self.pending.get().fetch_max(target, Ordering::AcqRel);
        // The synced page holds `pending >= target`.
        self.map
            .flush_range(0, PAGE)
            .map_err(|e| io_err(&self.path, "sync (msync) the durable ceiling of", e))?;
        // Only now may stamps up to `target` be issued, by any process.
        self.durable_ceiling
            .get()
            .fetch_max(target, Ordering::Release);
        Ok(target)
    }

    #[inline]
    fn check_issued(&self, now_ns: u64, stamp: u64) -> Result<(), Error> {
        self.usable()?;
        let checked = self.last_check_stamp.load(Ordering::Relaxed);
        if stamp <= checked {
            // Below a stamp seen at the last check: a race with that check, or the file was
            // rewound since. The cell never goes back by itself, so it tells which.
            self.check_rewind()?;
        }
        let since_ns = now_ns.abs_diff(self.last_check_ns.load(Ordering::Relaxed));
        if since_ns < self.check_ns && stamp.wrapping_sub(checked) < self.check_stamps {
            return Ok(());
        }
        self.check_now(now_ns, stamp)
    }
}

/// The first page of a new state file for `fingerprint` (at most 256 bytes).
pub fn state_header(fingerprint: &str) -> Vec<u8> {
    let mut page = vec![0u8; PAGE];
    page[0..8].copy_from_slice(&MAGIC);
    page[8..12].copy_from_slice(&VERSION.to_ne_bytes());
    page[12..16].copy_from_slice(&(PAGE as u32).to_ne_bytes());
    let fp = &mut page[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN];
    // Longer fingerprints are refused by `HostStamp::open`; here they are cut, never a panic.
    let n = fingerprint.len().min(FINGERPRINT_LEN);
    fp[..n].copy_from_slice(&fingerprint.as_bytes()[..n]);
    let sum = fnv1a(&[
        &page[0..16],
        &page[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN],
    ]);
    page[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&sum.to_ne_bytes());
    page
}

fn create(
    dir: &Path,
    path: &Path,
    mode: u32,
    fingerprint: &str,
    fresh_stamp: u64,
) -> Result<(), Error> {
    let tmp = dir.join(format!(
        ".{}.{}.{:x}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id(),
        rand::random::<u64>()
    ));
    let mut page = state_header(fingerprint);
    page[OFF_STAMP..OFF_STAMP + 8].copy_from_slice(&fresh_stamp.to_ne_bytes());
    let result = (|| {
        let mut f: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
            .map_err(|e| io_err(path, "create", e))?;
        // The mode asked for, not narrowed by the umask (a group-shared file must be group-writable).
        f.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| io_err(path, "set the mode of", e))?;
        f.write_all(&page).map_err(|e| io_err(path, "write", e))?;
        f.sync_all().map_err(|e| io_err(path, "sync", e))?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => {}
            // Another process created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err(path, "create (link)", e)),
        }
        // Make the new name itself durable: sync the directory.
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err(path, "sync the directory of", e))
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// Checks a state file's first page against the fingerprint a generator expects: magic,
/// version, checksum, fingerprint, each with its own [`StateFileError`]. `path` is for messages.
///
/// # Errors
/// The [`StateFileError`] that describes what is wrong.
pub fn check_header(path: &Path, page: &[u8], fingerprint: &str) -> Result<(), Error> {
    let p = || path.display().to_string();
    if page.len() < PAGE {
        return Err(Error::StateFile(StateFileError::Truncated {
            path: p(),
            len: page.len() as u64,
            expected: PAGE as u64,
        }));
    }
    if page[0..8] != MAGIC {
        return Err(Error::StateFile(StateFileError::Foreign { path: p() }));
    }
    let mut v = [0u8; 4];
    v.copy_from_slice(&page[8..12]);
    let version = u32::from_ne_bytes(v);
    if version != VERSION {
        return Err(Error::StateFile(StateFileError::Version {
            path: p(),
            found: version,
            expected: VERSION,
        }));
    }
    let fp = &page[OFF_FINGERPRINT..OFF_FINGERPRINT + FINGERPRINT_LEN];
    let mut s = [0u8; 8];
    s.copy_from_slice(&page[OFF_CHECKSUM..OFF_CHECKSUM + 8]);
    if u64::from_ne_bytes(s) != fnv1a(&[&page[0..16], fp]) {
        return Err(Error::StateFile(StateFileError::Corrupt { path: p() }));
    }
    let end = fp.iter().position(|&b| b == 0).unwrap_or(fp.len());
    let found = String::from_utf8_lossy(&fp[..end]).into_owned();
    if found != fingerprint {
        if let (Some((a, pa)), Some((b, pb))) = (
            found.split_once(" policy="),
            fingerprint.split_once(" policy="),
        ) {
            if a == b {
                return Err(Error::StateFile(StateFileError::PolicyMismatch {
                    path: p(),
                    expected: pb.to_string(),
                    found: pa.to_string(),
                }));
            }
        }
        return Err(Error::StateFile(StateFileError::Mismatch {
            path: p(),
            expected: fingerprint.to_string(),
            found,
        }));
    }
    Ok(())
}

/// The stamp in one page of shared anonymous memory: an in-process atomic that a forked child
/// shares with its parent (a private copy would let both issue the same ids).
pub struct ProcessStamp {
    words: SharedWords,
}

impl ProcessStamp {
    /// A new stamp, starting at zero.
    ///
    /// # Errors
    /// [`StateFileError::Io`] if the page cannot be mapped.
    pub fn new() -> Result<ProcessStamp, Error> {
        Ok(ProcessStamp {
            words: SharedWords::new()?,
        })
    }
}

impl std::fmt::Debug for ProcessStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessStamp")
            .field("stamp", &self.words.word(0).load(Ordering::Relaxed))
            .finish()
    }
}

impl StampCell for ProcessStamp {
    #[inline]
    fn load(&self) -> u64 {
        self.words.word(0).load(Ordering::Relaxed)
    }
    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.words
            .word(0)
            .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

#[cfg(all(test, feature = "host-wide"))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tb() -> Timebase {
        Timebase {
            epoch_ns: 0,
            tick_ns: 1_000_000,
            time_bits: 48,
            counter_bits: 12,
        }
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "idforge-shm-{name}-{}-{:x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn two_mappings_of_one_file_share_the_stamp() {
        let d = tmpdir("share");
        let o = StateOptions::new(d.join("s.state"));
        let a = HostStamp::open(&o, "fp", &tb()).unwrap();
        let b = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert!(a.compare_exchange_weak(0, 42).is_ok() || a.compare_exchange_weak(0, 42).is_ok());
        assert_eq!(b.load(), 42);
        let mode = fs::metadata(d.join("s.state"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn bad_files_get_their_errors() {
        let d = tmpdir("bad");
        let path = d.join("x.state");
        let o = StateOptions::new(&path);
        let err = |fp: &str| HostStamp::open(&o, fp, &tb()).unwrap_err();
        let write = |bytes: &[u8]| {
            fs::write(&path, bytes).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        };

        write(b"short");
        let e = err("fp");
        assert!(matches!(
            e,
            Error::StateFile(StateFileError::Truncated { len: 5, .. })
        ));
        assert!(e.to_string().contains("Stop every process still using it"));

        write(&vec![7u8; PAGE]);
        assert!(matches!(
            err("fp"),
            Error::StateFile(StateFileError::Foreign { .. })
        ));

        let mut page = state_header("fp");
        page[8] = 9;
        write(&page);
        assert!(matches!(
            err("fp"),
            Error::StateFile(StateFileError::Version { found: 9, .. })
        ));

        let mut page = state_header("fp");
        page[OFF_FINGERPRINT] ^= 1;
        write(&page);
        let e = err("fp");
        assert!(matches!(
            e,
            Error::StateFile(StateFileError::Corrupt { .. })
        ));
        assert!(e.to_string().contains("Stop every process still using it"));

        write(&state_header("scheme=a"));
        let e = err("scheme=b");
        assert!(
            matches!(&e, Error::StateFile(StateFileError::Mismatch { found, .. }) if found == "scheme=a")
        );
        assert!(e.to_string().contains(&path.display().to_string()));
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn processes_with_another_policy_are_told_so() {
        let d = tmpdir("policy");
        let o = StateOptions::new(d.join("p.state"));
        let run_ahead = Policy {
            on_exhausted: OnExhausted::RunAhead,
            max_lead: Duration::from_millis(2000),
            ..Policy::DEFAULT
        };
        let fp = |p: &Policy| fingerprint("snowflake", "l", &tb(), 1, false, p);
        let _a = HostStamp::open(&o, &fp(&run_ahead), &tb()).unwrap();
        let e = HostStamp::open(&o, &fp(&Policy::DEFAULT), &tb()).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, Error::StateFile(StateFileError::PolicyMismatch { .. })),
            "{text}"
        );
        assert!(text.contains("run-ahead/2000000000ns/fail"), "{text}");
        assert!(text.contains("wait/1000000000ns/fail"), "{text}");
        assert!(text.contains("on_exhausted"), "{text}");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn short_pages_are_truncated_not_a_panic() {
        for len in [0, 7, 12, 100, 319, PAGE - 1] {
            let page = vec![0u8; len];
            assert!(matches!(
                check_header(Path::new("short"), &page, "fp"),
                Err(Error::StateFile(StateFileError::Truncated { .. }))
            ));
        }
        // A real header cut short is refused the same way.
        let h = state_header("fp");
        assert!(check_header(Path::new("short"), &h[..300], "fp").is_err());
        assert!(check_header(Path::new("full"), &h, "fp").is_ok());
    }

    #[test]
    fn durable_mode_persists_a_ceiling_before_passing_it() {
        let d = tmpdir("durable");
        let mut o = StateOptions::new(d.join("d.state"));
        o.durable = true;
        let a = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(a.ceiling(), 0);
        let c = a.raise_ceiling(5_000).unwrap();
        assert_eq!(c, 5_000 + (1_000 << 12));
        assert_eq!(a.persisted_ceiling(), c);
        assert_eq!(a.ceiling(), c);
        if boot_id_hash(Path::new(BOOT_ID_PATH)).is_some() {
            // Within one boot, reopening keeps the stamp (a restart must not jump ahead).
            a.force_stamp(10);
            let same_boot = HostStamp::open(&o, "fp", &tb()).unwrap();
            assert_eq!(same_boot.load(), 10);
        }
        // A crash that lost the stamp, then a new boot: reopening starts at the persisted ceiling.
        a.force_stamp(10);
        a.forget_boot();
        drop(a);
        let b = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(b.load(), c);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn without_a_boot_id_every_durable_open_recovers_to_the_mark() {
        let d = tmpdir("noboot");
        let mut o = StateOptions::new(d.join("d.state"));
        o.durable = true;
        o.boot_id_path = d.join("no-such-boot-id");
        let a = HostStamp::open(&o, "fp", &tb()).unwrap();
        let c = a.raise_ceiling(5_000).unwrap();
        // A power loss that lost the latest stamp (the page cache is gone), and no way to tell
        // that the machine rebooted: the next open must still start at the persisted mark.
        a.force_stamp(10);
        drop(a);
        let b = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(
            b.load(),
            c,
            "an unidentifiable boot must be taken for a crash"
        );
        // An empty boot id file counts as unreadable too.
        fs::write(&o.boot_id_path, "\n").unwrap();
        b.force_stamp(10);
        drop(b);
        let first = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(first.load(), c);
        // While a process has the file open there was no crash since it opened it: a second
        // process trusts the stamp and does not push the running one ahead of its clock.
        first.force_stamp(c - 7);
        let second = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(second.load(), c - 7);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn files_and_directories_others_can_write_are_refused() {
        let d = tmpdir("trust");
        let path = d.join("t.state");
        let o = StateOptions::new(&path);
        drop(HostStamp::open(&o, "fp", &tb()).unwrap());
        // A file writable by others.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        let e = HostStamp::open(&o, "fp", &tb()).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::StateFile(StateFileError::Untrusted { what: "file", .. })
            ),
            "{e}"
        );
        assert!(e.to_string().contains("chmod go-w"), "{e}");
        // ...accepted when asked for explicitly.
        let shared = StateOptions::new(&path).shared_mode(0o666);
        drop(HostStamp::open(&shared, "fp", &tb()).unwrap());
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        // A directory writable by others (no sticky bit).
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        let e = HostStamp::open(&o, "fp", &tb()).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::StateFile(StateFileError::Untrusted {
                    what: "directory",
                    ..
                })
            ),
            "{e}"
        );
        // With the sticky bit (like /tmp) others cannot rename or delete our file: accepted.
        fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
        drop(HostStamp::open(&o, "fp", &tb()).unwrap());
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        // A symbolic link is not followed.
        let link = d.join("link.state");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = HostStamp::open(&StateOptions::new(&link), "fp", &tb()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn files_and_directories_of_another_user_are_refused() {
        // chown needs root; CI and this project's machines run as root. Elsewhere the refusal
        // of files others can write (above) still runs.
        if euid() != 0 {
            eprintln!("NOTE: not root, the other-owner case cannot be set up here");
            return;
        }
        let d = tmpdir("owner");
        let path = d.join("o.state");
        let o = StateOptions::new(&path);
        drop(HostStamp::open(&o, "fp", &tb()).unwrap());
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let e = HostStamp::open(&o, "fp", &tb()).unwrap_err();
        assert!(e.to_string().contains("owned by user id 65534"), "{e}");
        std::os::unix::fs::chown(&path, Some(0), None).unwrap();
        // The attack of the issue: another user pre-creates the directory, mode 777.
        let evil = d.join("evil");
        fs::create_dir(&evil).unwrap();
        fs::set_permissions(&evil, fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::chown(&evil, Some(65534), None).unwrap();
        let e = HostStamp::open(&StateOptions::new(evil.join("x.state")), "fp", &tb()).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::StateFile(StateFileError::Untrusted {
                    what: "directory",
                    ..
                })
            ),
            "{e}"
        );
        assert!(!evil.join("x.state").exists(), "nothing is created there");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_truncated_file_is_refused_not_a_crash() {
        let d = tmpdir("truncate");
        let path = d.join("t.state");
        let a = HostStamp::open(&StateOptions::new(&path), "fp", &tb()).unwrap();
        assert!(a.compare_exchange_weak(0, 7).is_ok() || a.compare_exchange_weak(0, 7).is_ok());
        a.check_issued(1, 7).unwrap();
        // Another process shrinks the file under the mapping: the next access faults (SIGBUS),
        // which the guard turns into a refusal.
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        let _ = a.load();
        let e = a.check_issued(2, 8).unwrap_err();
        assert!(
            matches!(&e, Error::StateFile(StateFileError::Lost { what, .. }) if what == "was truncated"),
            "{e}"
        );
        assert!(a.raise_ceiling(100).is_err());
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_deleted_or_replaced_file_is_noticed_within_the_check_interval() {
        let d = tmpdir("deleted");
        let path = d.join("t.state");
        let o = StateOptions::new(&path);
        let ms = 1_000_000;
        let a = HostStamp::open(&o, "fp", &tb()).unwrap();
        a.check_issued(10 * ms, 1).unwrap();
        fs::remove_file(&path).unwrap();
        // Within the interval, no system call is made (amortised)...
        a.check_issued(10 * ms + ms / 2, 2).unwrap();
        // ...after it, by wall time or by stamp time, the loss is found.
        let e = a.check_issued(11 * ms, 3).unwrap_err();
        assert!(e.to_string().contains("was deleted"), "{e}");
        // Sticky: every later id is refused at once.
        assert!(a.check_issued(11 * ms, 4).is_err());

        let b = HostStamp::open(&o, "fp", &tb()).unwrap();
        b.check_issued(10 * ms, 1).unwrap();
        let other = d.join("other.state");
        fs::write(&other, state_header("fp")).unwrap();
        fs::rename(&other, &path).unwrap();
        let e = b.check_issued(10 * ms, 1 + (1 << 12)).unwrap_err();
        assert!(e.to_string().contains("was replaced"), "{e}");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_new_file_starts_ahead_of_the_clock() {
        let ms = 1_000_000;
        let run_ahead = Policy {
            on_exhausted: OnExhausted::RunAhead,
            max_lead: Duration::from_millis(5),
            ..Policy::DEFAULT
        };
        // The first id is the clock's tick, counter 0.
        assert_eq!(fresh_stamp(&tb(), 1_000 * ms), (1_000 << 12) - 1);
        // The creator waits out the margin, the RunAhead lead, and a second in durable mode.
        assert_eq!(fresh_wait(&Policy::DEFAULT, false), FRESH_MARGIN);
        assert_eq!(
            fresh_wait(&run_ahead, true),
            FRESH_MARGIN + Duration::from_millis(5) + Duration::from_secs(1)
        );
        assert_eq!(fresh_wait(&Policy::UNBOUNDED, false), FRESH_MARGIN);
        let d = tmpdir("fresh");
        let o = StateOptions::new(d.join("f.state"));
        let asked = std::sync::atomic::AtomicU64::new(0);
        let t0 = std::time::Instant::now();
        let a = HostStamp::open_fresh(&o, "fp", &tb(), FRESH_MARGIN, &|| {
            // Read only after the wait: processes on a deleted file have stopped by now.
            assert!(t0.elapsed() >= FRESH_MARGIN);
            asked.fetch_add(1, Ordering::Relaxed);
            12_345
        })
        .unwrap();
        assert_eq!(a.load(), 12_345);
        // An existing file keeps its stamp, and the fresh stamp is not even computed.
        assert_eq!(
            HostStamp::open_fresh(&o, "fp", &tb(), FRESH_MARGIN, &|| {
                asked.fetch_add(1, Ordering::Relaxed);
                99
            })
            .unwrap()
            .load(),
            12_345
        );
        assert_eq!(asked.load(Ordering::Relaxed), 1);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn creators_are_serialised_so_no_file_appears_during_a_wait() {
        // A waits 300 ms before creating; B, arriving meanwhile with no wait of its own, must
        // neither create its own file nor compute a fresh stamp: it opens A's file when it exists.
        let d = tmpdir("creators");
        let o = StateOptions::new(d.join("c.state"));
        let b_fresh = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let a = s.spawn(|| {
                HostStamp::open_fresh(&o, "fp", &tb(), Duration::from_millis(300), &|| 777)
                    .unwrap()
                    .load()
            });
            std::thread::sleep(Duration::from_millis(50));
            let b = HostStamp::open_fresh(&o, "fp", &tb(), Duration::ZERO, &|| {
                b_fresh.store(true, Ordering::Relaxed);
                1
            })
            .unwrap();
            assert_eq!(b.load(), 777, "B must open A's file");
            assert_eq!(a.join().unwrap(), 777);
        });
        assert!(!b_fresh.load(Ordering::Relaxed), "B computed a fresh stamp");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_rewound_or_rewritten_file_is_refused() {
        let d = tmpdir("rewound");
        let path = d.join("r.state");
        let a = HostStamp::open(&StateOptions::new(&path), "fp", &tb()).unwrap();
        let ms = 1_000_000;
        a.force_stamp(5_000);
        a.check_issued(10 * ms, 5_000).unwrap();
        // A backup copied over the live file: same inode, whole again, an older stamp.
        let mut old = state_header("fp");
        old[OFF_STAMP..OFF_STAMP + 8].copy_from_slice(&100u64.to_ne_bytes());
        fs::write(&path, &old).unwrap();
        // The next id's stamp (101, from the rewound cell) is refused at once, not a ms later.
        a.force_stamp(101);
        let e = a.check_issued(10 * ms, 101).unwrap_err();
        assert!(e.to_string().contains("was rewound"), "{e}");

        // A file rewritten with another header (same inode) is caught at the next check.
        let path2 = d.join("w.state");
        let b = HostStamp::open(&StateOptions::new(&path2), "fp", &tb()).unwrap();
        b.check_issued(10 * ms, 1).unwrap();
        fs::write(&path2, state_header("fp-other")).unwrap();
        let e = b.check_issued(11 * ms, 2).unwrap_err();
        assert!(e.to_string().contains("was replaced"), "{e}");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_private_explicit_mode_keeps_the_owner_check() {
        if euid() != 0 {
            eprintln!("NOTE: not root, the other-owner case cannot be set up here");
            return;
        }
        let d = tmpdir("mode600");
        let path = d.join("o.state");
        drop(HostStamp::open(&StateOptions::new(&path), "fp", &tb()).unwrap());
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        // --state-mode 600 is private: another user's file is still refused.
        let e =
            HostStamp::open(&StateOptions::new(&path).shared_mode(0o600), "fp", &tb()).unwrap_err();
        assert!(e.to_string().contains("owned by user id 65534"), "{e}");
        // A group-writable shared mode accepts it (its mode is within what was asked for).
        fs::set_permissions(&path, fs::Permissions::from_mode(0o660)).unwrap();
        drop(HostStamp::open(&StateOptions::new(&path).shared_mode(0o660), "fp", &tb()).unwrap());
        // A symlink owned by another user, standing for the directory, is refused.
        let real = d.join("real");
        fs::create_dir(&real).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
        let e = HostStamp::open(&StateOptions::new(link.join("x.state")), "fp", &tb()).unwrap_err();
        assert!(
            e.to_string()
                .contains("symbolic link owned by user id 65534"),
            "{e}"
        );
        // A group-shared file gets exactly the mode asked for, whatever the umask.
        let shared = d.join("g.state");
        drop(HostStamp::open(&StateOptions::new(&shared).shared_mode(0o660), "fp", &tb()).unwrap());
        assert_eq!(
            fs::metadata(&shared).unwrap().permissions().mode() & 0o777,
            0o660
        );
        fs::remove_dir_all(d).unwrap();
    }
}

#[cfg(test)]
mod process_tests {
    use super::*;

    #[test]
    fn process_stamp_is_a_plain_atomic() {
        let s = ProcessStamp::new().unwrap();
        assert_eq!(s.load(), 0);
        assert!(s.compare_exchange_weak(0, 7).is_ok() || s.compare_exchange_weak(0, 7).is_ok());
        assert_eq!(s.load(), 7);
        assert!(s.compare_exchange_weak(0, 9).is_err());
    }
}
