//! The state file on disk: who may control it, the lock its creators hold on its directory, and
//! its atomic creation.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use super::header::{state_header, OFF_STAMP};
use super::paths::StateOptions;
use super::{io_err, sys};
use crate::error::{Error, StateFileError};

/// The lock a state file's creators hold on its directory; released on drop.
pub(super) struct DirectoryLock {
    dir: File,
}

impl Drop for DirectoryLock {
    /// Unlocks before the descriptor closes. An `flock` belongs to the open file description,
    /// which a child forked meanwhile (by another thread, while this one created a file) shares:
    /// closing only this process's descriptor left the lock held for the child's whole life, and
    /// every creator on the host then waited up to two minutes for it (an attack review: a first
    /// `idforge.uuid7()` in another process took 25 s, then 120 s and an error). Unlocking
    /// releases it for every holder of the description.
    fn drop(&mut self) {
        let _ = sys::flock(&self.dir, libc::LOCK_UN);
    }
}

/// The longest an opener waits for the directory's lock, whoever holds it.
const LOCK_LIMIT: Duration = Duration::from_secs(120);

/// Takes the directory's exclusive `flock`. A creator holds it for [`FRESH_MARGIN`](super::FRESH_MARGIN)
/// and the file's creation: an opener waits while the holder runs (up to two minutes), and
/// gives up after `patience` ([`StateOptions::lock_patience`](super::StateOptions::lock_patience),
/// 10 s by default) when the holder is stopped, a zombie or cannot be found, saying which
/// process holds the lock.
pub(super) fn lock_directory(dir: &Path, patience: Duration) -> Result<DirectoryLock, Error> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| io_err(dir, "open the directory of", e))?;
    let start = std::time::Instant::now();
    let mut next_look = patience.min(LOCK_LIMIT);
    while !sys::flock(&f, libc::LOCK_EX | libc::LOCK_NB) {
        let waited = start.elapsed();
        if waited > next_look {
            let holder = f
                .metadata()
                .ok()
                .and_then(|m| lock_holder(m.dev(), m.ino()));
            // A holder whose state cannot be read ('?': it exited, and the lock lives on in a
            // descriptor another process inherited) is not known to run: not waited for.
            let running = holder
                .as_ref()
                .is_some_and(|(_, state)| !matches!(state, 'T' | 't' | 'Z' | 'X' | '?'));
            if !running || waited > LOCK_LIMIT {
                return Err(busy(dir, holder, waited));
            }
            next_look = waited + Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(DirectoryLock { dir: f })
}

#[cold]
fn busy(dir: &Path, holder: Option<(u32, char)>, waited: Duration) -> Error {
    let (holder, fix) = match holder {
        Some((pid, '?')) => (
            format!("process {pid}, gone (a process it forked may hold the lock)"),
            "Find the holder with `fuser` or `lsof` on the directory, and end it".to_string(),
        ),
        Some((pid, state)) => {
            let what = match state {
                'T' | 't' => "stopped",
                'Z' | 'X' => "a zombie",
                'D' => "in an uninterruptible wait (a hung file system?)",
                _ => "running",
            };
            (
                format!("process {pid} ({what})"),
                format!(
                    "Continue it (`kill -CONT {pid}`) or end it; this process waits for a \
                     running creator for up to {} s",
                    LOCK_LIMIT.as_secs()
                ),
            )
        }
        None => (
            "another process".to_string(),
            "Find it with `fuser` or `lsof` on the directory, and continue or end it".to_string(),
        ),
    };
    Error::StateFile(StateFileError::Busy {
        dir: dir.display().to_string(),
        holder,
        waited_s: waited.as_secs(),
        fix,
    })
}

/// The process holding an exclusive `flock` on the inode `ino` of device `dev`, from
/// `/proc/locks` (`1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`), with its state letter
/// from `/proc/PID/stat` (`R`, `S`, `D`, `T`, `Z`...; `?` when it cannot be read).
fn lock_holder(dev: u64, ino: u64) -> Option<(u32, char)> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let wanted = format!("{major:02x}:{minor:02x}:{ino}");
    let find = |locks: &str| {
        locks.lines().find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (kind, mode, pid, id) = (f.get(1)?, f.get(3)?, f.get(4)?, f.get(5)?);
            (*kind == "FLOCK" && *mode == "WRITE" && *id == wanted)
                .then(|| pid.parse::<u32>().ok())
                .flatten()
        })
    };
    // The kernel lists the locks by position, anew for each `read`: read in pieces (as
    // `read_to_string` does, from a small first read), a lock released by another process
    // between two reads shifts the list, and the one looked for was skipped (the test of this
    // message failed 1 run in 12 beside other tests taking and dropping locks). One read of
    // the whole list, and a second look if the holder is still not in it.
    let pid = (0..3).find_map(|_| {
        use std::io::Read;
        let mut buf = vec![0u8; 1 << 20];
        let n = fs::File::open("/proc/locks").ok()?.read(&mut buf).ok()?;
        find(&String::from_utf8_lossy(&buf[..n]))
    })?;
    let state = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // `pid (comm) S ...`: the command may hold spaces and parentheses.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
        })
        .unwrap_or('?');
    Some((pid, state))
}

/// Refuses a state file or directory that someone else could change (see the module docs).
pub(super) fn check_trusted(
    what: &'static str,
    path: &Path,
    meta: &fs::Metadata,
    opts: &StateOptions,
) -> Result<(), Error> {
    let me = sys::euid();
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
                "Run `chmod go-w {}`, or, to share it on purpose, open it with a mode that allows it (`StateOptions::shared_mode`, {} here: {} can write it)",
                path.display(),
                if mode & 0o002 != 0 { "666" } else { "660" },
                if mode & 0o002 != 0 { "every user" } else { "its group" },
            ),
        );
    }
    Ok(())
}

/// Creates the state file at `path` atomically: a complete header (with `fresh_stamp`), synced
/// in a temporary file of `dir`, then hard-linked to `path` (a file created there first wins).
pub(super) fn create(
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
