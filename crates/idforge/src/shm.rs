//! Shared-memory stamps: the sequencer's `u64` in memory that several processes map.
//!
//! * [`ProcessStamp`]: one page of `MAP_SHARED | MAP_ANONYMOUS` memory. It behaves like an
//!   in-process atomic, but a `fork()`ed child shares the page with its parent instead of getting
//!   a copy, so ids of parent and child never collide. Every in-process generator uses it.
//! * [`HostStamp`]: the stamp in a memory-mapped *state file* that every process of the host maps
//!   (Chronicle's `MappedUniqueTimeProvider`, seed `001`): ids are unique and ordered across all
//!   processes sharing the file, and across restarts while the file is kept.
//!
//! This module holds all of idforge's `unsafe` code: turning a pointer into a mapping into an
//! `&AtomicU64`, and the raw `mmap`/`munmap` of the anonymous page.
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
//! | 32 | 8 | the stamp (atomic) |
//! | 40 | 8 | durable mode: the ceiling being persisted (atomic) |
//! | 48 | 8 | durable mode: the ceiling known to be on disk (atomic) |
//! | 56 | 8 | durable mode: hash of the boot id of the machine boot that last opened the file (atomic) |
//! | 64 | 256 | fingerprint: what the stamp means (`scheme=… layout=… tick=… epoch=… node=… durable=…`), NUL-padded |
//!
//! The file is created atomically: the header is written and synced to a temporary file in the
//! same directory, which is then hard-linked to the final name (`link` fails if the name exists,
//! so a racing process either wins or opens the winner's complete file). Mode `0600` by default.
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
//! above every id ever issued. Within one boot the page cache holds the stamp and it is kept. Cost: one `msync` of one page per second of id time
//! (a latency spike of typically 0.1–10 ms on the call that raises it; nothing on the others).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use memmap2::MmapMut;

use crate::error::Error;
use crate::sequencer::{StampCell, Timebase};

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

/// What can go wrong with a state file. Each message names the file and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateFileError {
    /// The file could not be created, opened, mapped or synced.
    #[error("state file {path}: cannot {action}: {reason}. Choose a writable location with --state PATH or IDFORGE_STATE")]
    Io {
        /// The file.
        path: String,
        /// What was being done.
        action: &'static str,
        /// The operating system's error.
        reason: String,
    },
    /// The file is shorter than one header page.
    #[error("state file {path} is truncated ({len} bytes, a state file has {expected}); it was not written by idforge or was cut short. Move it away (idforge recreates it) or point --state elsewhere")]
    Truncated {
        /// The file.
        path: String,
        /// Its length.
        len: u64,
        /// The expected length.
        expected: u64,
    },
    /// The file does not start with idforge's magic.
    #[error("state file {path} is not an idforge state file (wrong magic bytes); refusing to overwrite it. Point --state at another path")]
    Foreign {
        /// The file.
        path: String,
    },
    /// The file has another format version.
    #[error("state file {path} has format version {found}, this idforge reads version {expected}; use the idforge that wrote it, or move the file away")]
    Version {
        /// The file.
        path: String,
        /// The version found.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// The header's checksum does not match: it was damaged.
    #[error("state file {path} has a corrupt header (checksum mismatch); its stamp cannot be trusted. Move it away and restart only when the wall clock is past every id it issued")]
    Corrupt {
        /// The file.
        path: String,
    },
    /// The file was written for another scheme, layout or node.
    #[error("state file {path} belongs to `{found}`, not `{expected}`; sharing it would mix two id spaces. Use a separate --state path for each scheme, layout and node")]
    Mismatch {
        /// The file.
        path: String,
        /// What this generator needs.
        expected: String,
        /// What the file holds.
        found: String,
    },
}

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

/// How many forks led to this process (0 in the original process): per-thread state copied by
/// `fork()` (random generators) compares it to know it must be renewed.
#[inline]
pub(crate) fn fork_generation() -> u64 {
    FORK_GENERATION.load(Ordering::Relaxed)
}

/// A hash of this boot of the machine (Linux: `/proc/sys/kernel/random/boot_id`; elsewhere a
/// constant, so durable mode always recovers to the mark on open).
fn boot_id_hash() -> u64 {
    match fs::read_to_string("/proc/sys/kernel/random/boot_id") {
        Ok(id) => fnv1a(&[id.trim().as_bytes()]) | 1,
        Err(_) => 1,
    }
}

/// FNV-1a, 64-bit: a stable checksum (std's hashers may change between Rust releases).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The fingerprint of a generator: what a state file's stamp means.
pub fn fingerprint(
    scheme: &str,
    layout_spec: &str,
    tb: &Timebase,
    node: u64,
    durable: bool,
) -> String {
    format!(
        "scheme={scheme} layout={layout_spec} tick={}ns epoch={}ns counter={} node={node} durable={}",
        tb.tick_ns,
        tb.epoch_ns,
        tb.counter_bits,
        if durable { "yes" } else { "no" }
    )
}

/// How to open a [`HostStamp`].
#[derive(Debug, Clone)]
pub struct StateOptions {
    /// The state file.
    pub path: PathBuf,
    /// Permission bits of a newly created file (default `0o600`).
    pub mode: u32,
    /// Durable mode: persist a ceiling before issuing past it.
    pub durable: bool,
}

impl StateOptions {
    /// Options for `path`, mode `0600`, not durable.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StateOptions {
            path: path.into(),
            mode: 0o600,
            durable: false,
        }
    }
}

/// The default directory for state files: `$IDFORGE_STATE_DIR`, else `$XDG_STATE_HOME/idforge`,
/// else `$HOME/.local/state/idforge`, else `/tmp/idforge-$USER`. It survives process restarts
/// (and, except for the last, reboots).
pub fn default_state_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("IDFORGE_STATE_DIR") {
        return d;
    }
    if let Some(d) = env("XDG_STATE_HOME") {
        return d.join("idforge");
    }
    if let Some(h) = env("HOME") {
        return h.join(".local/state/idforge");
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    PathBuf::from(format!("/tmp/idforge-{user}"))
}

/// The default state file of a scheme and node: `<default_state_dir>/<scheme>[-node<N>].state`
/// (custom layouts add a hash of their spec, so two layouts never share a file).
pub fn default_state_path(scheme: &str, layout_spec: &str, node: Option<u64>) -> PathBuf {
    let mut name = scheme.to_string();
    if scheme == "custom" {
        name.push_str(&format!("-{:016x}", fnv1a(&[layout_spec.as_bytes()])));
    }
    if let Some(n) = node {
        name.push_str(&format!("-node{n}"));
    }
    name.push_str(".state");
    default_state_dir().join(name)
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

/// The stamp in a state file shared by every process of the host.
pub struct HostStamp {
    // Field order: the slots point into `map`, so they are declared (and dropped) first.
    stamp: Slot,
    pending: Slot,
    durable_ceiling: Slot,
    durable: bool,
    ahead: u64,
    raise: Mutex<()>,
    map: MmapMut,
    path: PathBuf,
}

impl std::fmt::Debug for HostStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostStamp")
            .field("path", &self.path)
            .field("stamp", &self.stamp.get().load(Ordering::Relaxed))
            .field("durable", &self.durable)
            .finish()
    }
}

impl HostStamp {
    /// Opens (creating it if needed) the state file for a generator with this fingerprint and
    /// time base. In durable mode the stamp starts at or above the persisted ceiling.
    pub fn open(opts: &StateOptions, fingerprint: &str, tb: &Timebase) -> Result<HostStamp, Error> {
        let path = &opts.path;
        if fingerprint.len() > FINGERPRINT_LEN {
            return Err(Error::InvalidLayout(format!(
                "the state fingerprint is longer than {FINGERPRINT_LEN} bytes: {fingerprint}"
            )));
        }
        if !path.exists() {
            create(path, opts.mode, fingerprint)?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_err(path, "open", e))?;
        let len = file.metadata().map_err(|e| io_err(path, "stat", e))?.len();
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
        // stamp words only through atomics. Truncation of the file by another process while
        // mapped would raise SIGBUS: state files are ours (mode 0600) and never truncated by idforge.
        let mut map = unsafe { memmap2::MmapOptions::new().len(PAGE).map_mut(&file) }
            .map_err(|e| io_err(path, "map", e))?;
        check_header(path, &map, fingerprint)?;
        let base = map.as_mut_ptr() as *const u8;
        // SAFETY: a page mapping is page-aligned, so base + 32/40/48 are 8-byte aligned and inside
        // the page; the slots are owned by the HostStamp that owns `map` and are dropped before it
        // (field order); from here on these words are accessed only atomically.
        let (stamp, pending, durable_ceiling) = unsafe {
            (
                Slot::new(base, OFF_STAMP),
                Slot::new(base, OFF_PENDING),
                Slot::new(base, OFF_DURABLE),
            )
        };
        let per_second = (1_000_000_000u64 / tb.tick_ns).max(1);
        let ahead = per_second.checked_shl(tb.counter_bits).unwrap_or(u64::MAX);
        let hs = HostStamp {
            stamp,
            pending,
            durable_ceiling,
            durable: opts.durable,
            ahead,
            raise: Mutex::new(()),
            map,
            path: path.clone(),
        };
        if hs.durable {
            hs.recover_after_reboot()?;
        }
        Ok(hs)
    }

    /// Durable mode, on open: in a new boot of the machine the stamp in the file may be older than
    /// ids issued before a crash, so it is raised to the persisted mark; the mark is synced before
    /// it becomes the ceiling others may issue up to.
    fn recover_after_reboot(&self) -> Result<(), Error> {
        let boot = boot_id_hash();
        let slot = self.boot_slot();
        let seen = slot.get().load(Ordering::Acquire);
        if seen != boot {
            // A new boot (or the file's first durable open): everything up to the persisted mark
            // may have been issued.
            let mark = self.pending.get().load(Ordering::Acquire);
            self.stamp.get().fetch_max(mark, Ordering::AcqRel);
            let _ = slot
                .get()
                .compare_exchange(seen, boot, Ordering::AcqRel, Ordering::Acquire);
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
}

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

    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        let _one_at_a_time = self.raise.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.durable_ceiling.get().load(Ordering::Acquire);
        if current >= needed {
            return Ok(current);
        }
        let target = needed.saturating_add(self.ahead);
        self.pending.get().fetch_max(target, Ordering::AcqRel);
        self.map
            .flush_range(0, PAGE)
            .map_err(|e| io_err(&self.path, "sync (msync) the durable ceiling of", e))?;
        // Only now may stamps up to `target` be issued, by any process.
        self.durable_ceiling
            .get()
            .fetch_max(target, Ordering::Release);
        Ok(target)
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

fn create(path: &Path, mode: u32, fingerprint: &str) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.exists() {
        fs::create_dir_all(dir).map_err(|e| io_err(dir, "create the directory for", e))?;
        // Best effort: a directory we created is private to the user.
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
    let tmp = dir.join(format!(
        ".{}.{}.{:x}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id(),
        crate::generator::random_u128() as u64
    ));
    let result = (|| {
        let mut f: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(|e| io_err(path, "create", e))?;
        f.write_all(&state_header(fingerprint))
            .map_err(|e| io_err(path, "write", e))?;
        f.sync_all().map_err(|e| io_err(path, "sync", e))?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => {}
            // Another process created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err(path, "create (link)", e)),
        }
        // Make the new name itself durable: sync the directory.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err(path, "sync the directory of", e))
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// Checks a state file's first page against the fingerprint a generator expects: magic,
/// version, checksum, fingerprint, each with its own [`StateFileError`]. `path` is for messages.
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
    slot: Slot,
    page: *mut libc::c_void,
}

// SAFETY: the page is only accessed through the atomic slot; the raw pointer is only unmapped
// in Drop, which has exclusive access.
unsafe impl Send for ProcessStamp {}
// SAFETY: as above: shared access is atomic only.
unsafe impl Sync for ProcessStamp {}

impl ProcessStamp {
    /// A new stamp, starting at zero.
    pub fn new() -> Result<ProcessStamp, Error> {
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
        // SAFETY: the page is page-aligned, zero-filled, at least 8 bytes, lives until Drop
        // (which the slot, a field of the same struct, does not outlive), and is only accessed
        // through the atomic.
        let slot = unsafe { Slot::new(page as *const u8, 0) };
        Ok(ProcessStamp { slot, page })
    }
}

impl Drop for ProcessStamp {
    fn drop(&mut self) {
        // SAFETY: `page` came from a successful mmap of PAGE bytes and is unmapped exactly once;
        // no reference into it survives `self`.
        unsafe {
            libc::munmap(self.page, PAGE);
        }
    }
}

impl std::fmt::Debug for ProcessStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessStamp")
            .field("stamp", &self.slot.get().load(Ordering::Relaxed))
            .finish()
    }
}

impl StampCell for ProcessStamp {
    #[inline]
    fn load(&self) -> u64 {
        self.slot.get().load(Ordering::Relaxed)
    }
    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.slot
            .get()
            .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            crate::generator::random_u128() as u32
        ));
        fs::create_dir_all(&d).unwrap();
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

        fs::write(&path, b"short").unwrap();
        assert!(matches!(
            err("fp"),
            Error::StateFile(StateFileError::Truncated { len: 5, .. })
        ));

        fs::write(&path, vec![7u8; PAGE]).unwrap();
        assert!(matches!(
            err("fp"),
            Error::StateFile(StateFileError::Foreign { .. })
        ));

        let mut page = state_header("fp");
        page[8] = 9;
        fs::write(&path, &page).unwrap();
        assert!(matches!(
            err("fp"),
            Error::StateFile(StateFileError::Version { found: 9, .. })
        ));

        let mut page = state_header("fp");
        page[OFF_FINGERPRINT] ^= 1;
        fs::write(&path, &page).unwrap();
        assert!(matches!(
            err("fp"),
            Error::StateFile(StateFileError::Corrupt { .. })
        ));

        fs::write(&path, state_header("scheme=a")).unwrap();
        let e = err("scheme=b");
        assert!(
            matches!(&e, Error::StateFile(StateFileError::Mismatch { found, .. }) if found == "scheme=a")
        );
        assert!(e.to_string().contains(&path.display().to_string()));
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
        // Within one boot, reopening keeps the stamp (a restart must not jump ahead).
        a.force_stamp(10);
        let same_boot = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(same_boot.load(), 10);
        // A crash that lost the stamp, then a new boot: reopening starts at the persisted ceiling.
        a.forget_boot();
        drop(a);
        drop(same_boot);
        let b = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(b.load(), c);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn process_stamp_is_a_plain_atomic() {
        let s = ProcessStamp::new().unwrap();
        assert_eq!(s.load(), 0);
        assert!(s.compare_exchange_weak(0, 7).is_ok() || s.compare_exchange_weak(0, 7).is_ok());
        assert_eq!(s.load(), 7);
        assert!(s.compare_exchange_weak(0, 9).is_err());
    }
}
