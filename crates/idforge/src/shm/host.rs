//! [`HostStamp`]: the stamp in a memory-mapped state file shared by every process of the host.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::file::{check_trusted, create, lock_directory};
use super::fresh::CHECK_INTERVAL;
use super::header::{
    check_header, fnv1a, FINGERPRINT_LEN, OFF_BOOT, OFF_DURABLE, OFF_FINGERPRINT, OFF_PENDING,
    OFF_STAMP,
};
use super::paths::StateOptions;
use super::watch::{
    Watch, BROKEN_DELETED, BROKEN_NONE, BROKEN_REPLACED, BROKEN_REWOUND, BROKEN_TRUNCATED,
    BROKEN_UNCHECKABLE,
};
use super::{io_err, sys, PAGE};
use crate::error::{Error, StateFileError};
use crate::sequencer::{StampCell, Timebase};

/// A hash of this boot of the machine, from the boot id at `path`; `None` when it cannot be read
/// (then the boot cannot be identified).
pub(super) fn boot_id_hash(path: &Path) -> Option<u64> {
    let id = fs::read_to_string(path).ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| fnv1a(&[id.as_bytes()]) | 1)
}

/// The stamp in a state file shared by every process of the host.
pub struct HostStamp {
    /// The file's first page (dropped, so unmapped, before `_file` is closed).
    map: sys::StateMap,
    durable: bool,
    ahead: u64,
    /// Identity of the mapped file.
    dev: u64,
    ino: u64,
    /// The periodic checks' state: when the file was last checked, the stamp seen then, and
    /// (sticky) why this process stopped issuing from it.
    watch: Watch<AtomicU64>,
    /// The header (words 0..4) and fingerprint as opened: a periodic check compares them.
    header: Box<[u64; HEADER_WORDS]>,
    fingerprint_words: Box<[u64; FINGERPRINT_WORDS]>,
    /// Open while the mapping is in use: it holds the shared `flock`.
    _file: File,
    path: PathBuf,
}

/// Words of the header before the stamp, and of the fingerprint.
const HEADER_WORDS: usize = OFF_STAMP / 8;
const FINGERPRINT_WORDS: usize = FINGERPRINT_LEN / 8;

/// Relaxed loads of the words of `words` from byte `offset`.
fn load_words<const N: usize>(words: &sys::Words, offset: usize) -> [u64; N] {
    std::array::from_fn(|i| words[offset / 8 + i].load(Ordering::Relaxed))
}

impl std::fmt::Debug for HostStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostStamp")
            .field("path", &self.path)
            .field("stamp", &self.load())
            .field("durable", &self.durable)
            .finish()
    }
}

impl HostStamp {
    /// Opens (creating it if needed) the state file for a generator with this fingerprint and
    /// time base. A newly created file starts at stamp 0; generators use
    /// [`HostStamp::open_fresh`], which starts a new file ahead of their clock.
    ///
    /// # Errors
    /// As [`HostStamp::open_fresh`].
    ///
    /// ```
    /// use idforge::shm::{HostStamp, StateOptions};
    /// use idforge::{StampCell, Timebase};
    /// let dir = std::env::temp_dir().join(format!("idforge-doc-open-{}", std::process::id()));
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let a = HostStamp::open(&StateOptions::new(dir.join("s.state")), "example", &tb)?;
    /// let b = HostStamp::open(&StateOptions::new(dir.join("s.state")), "example", &tb)?;
    /// assert!(a.compare_exchange_weak(0, 5).is_ok() || a.compare_exchange_weak(0, 5).is_ok());
    /// assert_eq!(b.load(), 5); // one stamp for both
    /// assert!(HostStamp::open(&StateOptions::new(dir.join("s.state")), "another", &tb).is_err());
    /// # drop((a, b));
    /// # std::fs::remove_dir_all(dir).ok();
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn open(opts: &StateOptions, fingerprint: &str, tb: &Timebase) -> Result<HostStamp, Error> {
        Self::open_fresh(opts, fingerprint, tb, Duration::ZERO, &|| 0)
    }

    /// Opens (creating it if needed) the state file for a generator with this fingerprint and
    /// time base; a file this call creates starts at `fresh_stamp()` (see [`fresh_stamp`](super::fresh_stamp)),
    /// evaluated only after the file was found missing and `wait` ([`fresh_wait`](super::fresh_wait)) has passed. In durable mode the stamp starts at or
    /// above the persisted ceiling. The file and its directory must be trusted (module docs).
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] when `fingerprint` is longer than 256 bytes. Otherwise
    /// [`Error::StateFile`] with:
    /// * [`StateFileError::Io`] when the directory cannot be created or inspected, the file
    ///   cannot be created, opened, inspected, locked or mapped, this process already has 256
    ///   state files mapped, or (durable mode) the recovered ceiling cannot be synced;
    /// * [`StateFileError::Busy`] when another creator has held the directory's lock for 10 s
    ///   and is stopped, a zombie or unknown (two minutes while it runs);
    /// * [`StateFileError::Untrusted`] when the directory or the file could be changed by another
    ///   user (owned by one, or writable by group or others beyond `opts`' shared mode), the
    ///   directory is a symbolic link owned by another user or not a directory, or the file is a
    ///   symbolic link or not a regular file;
    /// * [`StateFileError::Truncated`] when the file is shorter than one page, and the errors of
    ///   [`check_header`](super::check_header) (`Foreign`, `Version`, `Corrupt`, `Mismatch`,
    ///   `PolicyMismatch`) when its header is not the one `fingerprint` expects.
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
                .map_err(|e| io_err(path, "create its directory", e))?;
        }
        let link =
            fs::symlink_metadata(dir).map_err(|e| io_err(path, "inspect its directory", e))?;
        if link.file_type().is_symlink() && link.uid() != sys::euid() && link.uid() != 0 {
            // Whoever owns the link can point it elsewhere at any time: two files for one path.
            return Err(Error::StateFile(StateFileError::Untrusted {
                what: "directory",
                path: dir.display().to_string(),
                problem: format!(
                    "a symbolic link owned by user id {} (this process runs as {})",
                    link.uid(),
                    sys::euid()
                ),
                fix: "Use a directory of your own (`StateOptions::path`, or IDFORGE_STATE_DIR)"
                    .into(),
            }));
        }
        let dir_meta = fs::metadata(dir).map_err(|e| io_err(path, "inspect its directory", e))?;
        if !dir_meta.is_dir() {
            return Err(Error::StateFile(StateFileError::Untrusted {
                what: "directory",
                path: dir.display().to_string(),
                problem: "not a directory".into(),
                fix: "Choose a path in a directory (`StateOptions::path`)".into(),
            }));
        }
        check_trusted("directory", dir, &dir_meta, opts)?;
        // A file deleted between the look below and the open is created again (an attack
        // review: 158 of 2,052 processes racing deletions failed with "cannot open: No such
        // file"); bounded, so a path that keeps vanishing is an error.
        let mut attempts = 0;
        let file = loop {
            attempts += 1;
            match Self::create_if_missing_and_open(opts, fingerprint, dir, wait, fresh_stamp)? {
                Some(file) => break file,
                None if attempts < 16 => continue,
                None => {
                    return Err(io_err(
                        path,
                        "open",
                        std::io::Error::other(
                            "it was deleted each time it was created or found, 16 times",
                        ),
                    ))
                }
            }
        };
        Self::map_opened(opts, fingerprint, tb, file)
    }

    /// Creates the file if it is missing (under the directory's lock, waiting `wait` before
    /// `fresh_stamp()` is read), then opens it without following a symbolic link; `None` when
    /// it was deleted before the open.
    fn create_if_missing_and_open(
        opts: &StateOptions,
        fingerprint: &str,
        dir: &Path,
        wait: Duration,
        fresh_stamp: &dyn Fn() -> u64,
    ) -> Result<Option<File>, Error> {
        let path = &opts.path;
        match fs::symlink_metadata(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Creators hold the directory's lock from the moment they find the file missing
                // until it exists: no other file can appear (and be used, and be deleted) at the
                // path while this one waits out the predecessors' lead.
                let _creating = lock_directory(dir, opts.lock_patience)?;
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
        match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
        {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                Err(Error::StateFile(StateFileError::Untrusted {
                    what: "file",
                    path: path.display().to_string(),
                    problem: "a symbolic link".into(),
                    fix: "Give the file itself (`StateOptions::path`)".into(),
                }))
            }
            Err(e) => Err(io_err(path, "open", e)),
        }
    }

    /// Checks, maps and locks an opened state file.
    fn map_opened(
        opts: &StateOptions,
        fingerprint: &str,
        tb: &Timebase,
        file: File,
    ) -> Result<HostStamp, Error> {
        let path = &opts.path;
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
        let map = sys::StateMap::new(&file).map_err(|e| match e {
            sys::MapError::Map(e) => io_err(path, "map", e),
            sys::MapError::NoGuardSlot => Error::StateFile(StateFileError::Io {
                path: path.display().to_string(),
                action: "guard",
                reason: format!(
                    "this process has {} state file mappings open already (one per host-wide \
                     generator that is still alive): reuse generators instead of opening one per \
                     call, or let unused ones go",
                    sys::GUARD_SLOTS
                ),
            }),
        })?;
        // The page read word by word (other processes may be changing the stamp words); the
        // header and fingerprint checked here are the ones later checks compare with.
        let page: [u64; PAGE / 8] = load_words(map.words(), 0);
        let bytes: Vec<u8> = page.iter().flat_map(|w| w.to_ne_bytes()).collect();
        check_header(path, &bytes, fingerprint)?;
        // Every process holds a shared lock on the file while it uses it; the first one to open
        // it (no lock held by anyone) gets the exclusive lock first: it knows no process survived
        // from before, which durable mode needs where the boot cannot be identified. It keeps
        // the exclusive lock until its recovery is done, so others wait for it (below).
        let first = sys::flock(&file, libc::LOCK_EX | libc::LOCK_NB);
        if !first && !sys::flock(&file, libc::LOCK_SH) {
            return Err(io_err(path, "lock", std::io::Error::last_os_error()));
        }
        let per_second = (1_000_000_000u64 / tb.tick_ns).max(1);
        let ahead = per_second.checked_shl(tb.counter_bits).unwrap_or(u64::MAX);
        let check_ns = CHECK_INTERVAL.as_nanos() as u64;
        let check_ticks = (check_ns / tb.tick_ns).max(1);
        let hs = HostStamp {
            durable: opts.durable,
            ahead,
            dev: meta.dev(),
            ino: meta.ino(),
            watch: Watch::new(
                check_ns,
                check_ticks.checked_shl(tb.counter_bits).unwrap_or(u64::MAX),
                || AtomicU64::new(0),
            ),
            header: Box::new(std::array::from_fn(|i| page[i])),
            fingerprint_words: Box::new(std::array::from_fn(|i| page[OFF_FINGERPRINT / 8 + i])),
            map,
            _file: file,
            path: path.clone(),
        };
        if hs.durable {
            hs.recover_after_reboot(&opts.boot_id_path, first)?;
        }
        if first && !sys::flock(&hs._file, libc::LOCK_SH) {
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
        let slot = self.word(OFF_BOOT);
        let seen = slot.load(Ordering::Acquire);
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
            let mark = self.pending().load(Ordering::Acquire);
            self.stamp().fetch_max(mark, Ordering::AcqRel);
            if let Some(boot) = boot {
                let _ = slot.compare_exchange(seen, boot, Ordering::AcqRel, Ordering::Acquire);
            }
        }
        // Sync before trusting the mark: a process killed between raising `pending` and its
        // msync left a mark that may not be on disk.
        let mark = self.pending().load(Ordering::Acquire);
        self.map
            .sync()
            .map_err(|e| io_err(&self.path, "sync (msync) the durable ceiling of", e))?;
        self.durable_ceiling().fetch_max(mark, Ordering::Release);
        Ok(())
    }

    /// The atomic word at byte `offset` of the page.
    #[inline]
    fn word(&self, offset: usize) -> &AtomicU64 {
        &self.map.words()[offset / 8]
    }

    #[inline]
    fn stamp(&self) -> &AtomicU64 {
        self.word(OFF_STAMP)
    }

    #[inline]
    fn pending(&self) -> &AtomicU64 {
        self.word(OFF_PENDING)
    }

    #[inline]
    fn durable_ceiling(&self) -> &AtomicU64 {
        self.word(OFF_DURABLE)
    }

    /// Simulates a reboot for tests: forget which boot last opened the file.
    #[doc(hidden)]
    pub fn forget_boot(&self) {
        self.word(OFF_BOOT).store(0, Ordering::SeqCst);
    }

    /// The state file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The persisted ceiling (durable mode).
    pub fn persisted_ceiling(&self) -> u64 {
        self.pending().load(Ordering::Acquire)
    }

    /// Overwrites the stamp: for tests that simulate a crash which lost the latest stamp.
    #[doc(hidden)]
    pub fn force_stamp(&self, stamp: u64) {
        self.stamp().store(stamp, Ordering::SeqCst);
    }

    /// Whether this process still issues from the file: `Err` once the file was found truncated,
    /// deleted or replaced.
    ///
    /// # Errors
    /// [`StateFileError::Lost`].
    #[inline]
    pub fn usable(&self) -> Result<(), Error> {
        if self.map.lost() {
            self.watch.set_broken(BROKEN_TRUNCATED);
        }
        match self.watch.broken() {
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

    /// A swap replaced a stamp below what a check had recorded: the file was rewound, unless it
    /// was truncated (the SIGBUS guard's private page reads as zeros), which is named as such.
    #[cold]
    fn replaced_below_the_record(&self, before: u64, replaced: u64) -> Result<(), Error> {
        self.usable()?;
        match self.watch.check_replaced(before, replaced) {
            BROKEN_NONE => Ok(()),
            why => Err(self.lost(why)),
        }
    }

    /// Checks now that the path still names the mapped file, whole.
    ///
    /// # Errors
    /// [`StateFileError::Lost`].
    #[cold]
    pub fn check_path(&self) -> Result<(), Error> {
        let why = self.path_problem();
        if why != BROKEN_NONE {
            self.watch.set_broken(why);
        }
        self.usable()
    }

    /// Why the path no longer names the mapped file, whole (`BROKEN_NONE` while it does).
    #[cold]
    fn path_problem(&self) -> u64 {
        match fs::symlink_metadata(&self.path) {
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
        }
    }

    /// The periodic check's look at the file: the path still names it, whole, with the header
    /// as opened (a file rewritten in place, by `cp` for instance, is caught here even when no
    /// access fell in the moment it was short). The stamp is compared by the [`Watch`].
    #[cold]
    fn file_problem(&self) -> u64 {
        match self.path_problem() {
            BROKEN_NONE => {}
            why => return why,
        }
        if load_words(self.map.words(), 0) != *self.header
            || load_words(self.map.words(), OFF_FINGERPRINT) != *self.fingerprint_words
        {
            return BROKEN_REPLACED;
        }
        BROKEN_NONE
    }
}

impl StampCell for HostStamp {
    #[inline]
    fn load(&self) -> u64 {
        self.stamp().load(Ordering::Relaxed)
    }

    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.stamp()
            .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }

    #[inline]
    fn ceiling(&self) -> u64 {
        if self.durable {
            // Acquire pairs with the Release store after the msync in `raise_ceiling`.
            self.durable_ceiling().load(Ordering::Acquire)
        } else {
            u64::MAX
        }
    }

    /// Lock-free, so a `fork()` while another thread raises cannot leave the child waiting for
    /// a lock no thread of its own holds: each raiser persists its own target before publishing
    /// it (concurrent raisers may sync the page more than once).
    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        self.usable()?;
        let current = self.durable_ceiling().load(Ordering::Acquire);
        if current >= needed {
            return Ok(current);
        }
        let target = needed.saturating_add(self.ahead);
        self.pending().fetch_max(target, Ordering::AcqRel);
        // The synced page holds `pending >= target`.
        self.map
            .sync()
            .map_err(|e| io_err(&self.path, "sync (msync) the durable ceiling of", e))?;
        // Only now may stamps up to `target` be issued, by any process.
        self.durable_ceiling().fetch_max(target, Ordering::Release);
        Ok(target)
    }

    #[inline]
    fn before_swap(&self) -> u64 {
        self.watch.before_swap()
    }

    #[inline]
    fn check_replaced(&self, before: u64, replaced: u64) -> Result<(), Error> {
        if replaced >= before {
            return Ok(());
        }
        self.replaced_below_the_record(before, replaced)
    }

    #[inline]
    fn check_issued(&self, now_ns: u64, stamp: u64) -> Result<(), Error> {
        self.usable()?;
        match self
            .watch
            .check_issued(self.stamp(), now_ns, stamp, || self.file_problem())
        {
            BROKEN_NONE => Ok(()),
            why => Err(self.lost(why)),
        }
    }
}
