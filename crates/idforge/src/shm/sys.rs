//! The system calls behind the stamp cells, each behind a safe function or type, and the ASCII
//! buffer id text is written into ([`AsciiBuf`]): idforge's only `unsafe` code. Every `unsafe`
//! block states, in its `// SAFETY:` comment, the invariant that makes it sound; the rest of `shm`
//! (and of the crate) is safe code under `#![deny(unsafe_code)]`.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::PAGE;

/// One page seen as atomic words: the only view of mapped memory this crate hands out.
pub(super) type Words = [AtomicU64; PAGE / 8];

// `Words` covers the page exactly and has the alignment of `u64`, which a page start satisfies.
const _: () = assert!(std::mem::size_of::<Words>() == PAGE);
const _: () = assert!(std::mem::align_of::<Words>() <= PAGE);

static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// A word in a private anonymous page marked `MADV_WIPEONFORK`: this process writes 1 into it,
/// and the kernel hands every child made by duplicating the address space (`fork`, `_Fork`,
/// `clone` without `CLONE_VM`) a zeroed page, whether or not the `pthread_atfork` handlers ran.
/// Null until [`watch_forks`] has set it up, and when the kernel cannot (before Linux 4.14).
static WIPED_IN_CHILD: std::sync::atomic::AtomicPtr<AtomicU64> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

extern "C" fn after_fork_in_child() {
    // Async-signal-safe: one atomic add.
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Maps the wipe-on-fork page and marks it; `None` where `MADV_WIPEONFORK` is not supported.
fn wipe_on_fork_word() -> Option<NonNull<AtomicU64>> {
    // SAFETY: an anonymous private mapping of one page at an address the kernel picks: no
    // preconditions, no existing memory touched; checked against MAP_FAILED. The page is never
    // unmapped (it lives as long as the process), so the pointer stays valid.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: `page` is the mapping just made, PAGE bytes long.
    if unsafe { libc::madvise(page, PAGE, libc::MADV_WIPEONFORK) } != 0 {
        // SAFETY: unmaps exactly the mapping made above, which nothing else refers to.
        unsafe { libc::munmap(page, PAGE) };
        return None;
    }
    let word = NonNull::new(page.cast::<AtomicU64>())?;
    // SAFETY: the page is mapped, writable, page-aligned (so aligned for AtomicU64) and, from
    // here on, only ever accessed through this atomic.
    unsafe { word.as_ref() }.store(1, Ordering::Relaxed);
    Some(word)
}

/// Registers (once per process) a `pthread_atfork` handler that counts forks in the child, and
/// a wipe-on-fork page that catches children made without those handlers (`_Fork`, a raw
/// `clone`); says whether the handler is registered: without it a forked child could not tell
/// it was forked, and a batch of stamps reserved before the fork would be issued by parent and
/// child alike.
pub fn watch_forks() -> bool {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        if let Some(word) = wipe_on_fork_word() {
            WIPED_IN_CHILD.store(word.as_ptr(), Ordering::Release);
        }
        // SAFETY: registers a child handler that only performs an atomic add (async-signal-safe,
        // as a handler run in the child of a multithreaded process must be); the function lives
        // for the whole program.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) == 0 }
    })
}

/// Whether every fork shows in [`fork_generation`], including a child made without the
/// `pthread_atfork` handlers (`_Fork`, a raw `clone`): [`watch_forks`] registered its handler and
/// the kernel supports the wipe-on-fork page (Linux 4.14 and later). Registers them if needed.
pub fn forks_always_counted() -> bool {
    watch_forks() && !WIPED_IN_CHILD.load(Ordering::Acquire).is_null()
}

/// How many forks led to this process (0 in the original process): two relaxed loads. Counted
/// only once [`watch_forks`] has run; a child made without the `pthread_atfork` handlers is
/// counted when it first asks, through the wipe-on-fork page (Linux 4.14 and later).
#[inline]
pub fn fork_generation() -> u64 {
    let word = WIPED_IN_CHILD.load(Ordering::Relaxed);
    // SAFETY: non-null only once it points at the wipe-on-fork word, which is never unmapped.
    // Acquire, paired with the Release store in `forked_without_handlers`: a thread that finds
    // the mark another thread of a fork's child set must also see that thread's count, or it
    // would read the parent's generation (on a weakly ordered CPU, or with the two loads
    // reordered) and go on with a block the parent goes on with too. Free on x86.
    if !word.is_null() && unsafe { &*word }.load(Ordering::Acquire) == 0 {
        return forked_without_handlers(word);
    }
    FORK_GENERATION.load(Ordering::Relaxed)
}

/// A child whose wipe-on-fork page is zero: count the fork (threads racing here may count it
/// more than once, which only makes the number differ more) and mark the page as this process's.
#[cold]
#[inline(never)]
fn forked_without_handlers(word: *mut AtomicU64) -> u64 {
    let generation = FORK_GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    // SAFETY: as in `fork_generation`: the word is mapped for the life of the process.
    // Release: publishes the count above to threads that then find the mark (Acquire there).
    unsafe { &*word }.store(1, Ordering::Release);
    generation
}

/// The home directory of the effective user in the password database, as stored there.
pub(super) fn passwd_home() -> Option<OsString> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `passwd` is plain old data (integers and raw pointers): all zeros is a valid value.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes only into `pw` and into `buf` (whose length we pass), and sets
    // `result` to `&pw` on success; geteuid has no preconditions.
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
    // SAFETY: on success pw_dir is a NUL-terminated string inside `buf`, which is alive here;
    // the bytes are copied out before `buf` is dropped.
    let dir = unsafe { CStr::from_ptr(pw.pw_dir) };
    Some(std::ffi::OsStr::from_bytes(dir.to_bytes()).to_os_string())
}

/// Whether the process `pid` exists (it may belong to another user). `false` for `pid <= 0`,
/// which `kill` would take for a process group.
pub(super) fn process_exists(pid: libc::pid_t) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing to a single process (pid > 0); it only checks
    // that the process exists. No memory is passed.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// `flock(2)` on a file; whether it was granted.
pub(super) fn flock(file: &File, op: libc::c_int) -> bool {
    // SAFETY: flock on a file descriptor this `File` owns (open for the call); no memory is
    // passed.
    unsafe { libc::flock(file.as_raw_fd(), op) == 0 }
}

/// The effective user id.
pub(super) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// One page of `MAP_SHARED | MAP_ANONYMOUS` memory, all zeros at first, seen as atomic words.
pub(super) struct SharedPage {
    page: NonNull<Words>,
}

// SAFETY: the page is only reachable as `&Words` (atomics, which are Send + Sync); it is unmapped
// only in Drop, which has exclusive access.
unsafe impl Send for SharedPage {}
// SAFETY: as above: shared access is atomic only.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// Maps a new page.
    pub(super) fn new() -> std::io::Result<SharedPage> {
        // SAFETY: an anonymous shared mapping of one page with no address hint has no
        // preconditions and touches no existing memory; the result is checked against MAP_FAILED
        // before use.
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
            return Err(std::io::Error::last_os_error());
        }
        let page = NonNull::new(page.cast::<Words>()).ok_or(std::io::ErrorKind::Other)?;
        Ok(SharedPage { page })
    }

    /// The page's words.
    #[inline]
    pub(super) fn words(&self) -> &Words {
        // SAFETY: the pointer is a live, page-aligned, readable and writable mapping of PAGE
        // bytes (the size and alignment of `Words`, checked at compile time), zero-filled (a
        // valid `AtomicU64`); it stays mapped until Drop, which cannot run while `&self` is
        // borrowed; this process accesses it only through these atomics (shared with forked
        // children, which do the same).
        unsafe { self.page.as_ref() }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: `page` came from a successful mmap of PAGE bytes and is unmapped exactly once;
        // no reference into it outlives `self`.
        unsafe {
            libc::munmap(self.page.as_ptr().cast(), PAGE);
        }
    }
}

/// Why a state file could not be mapped.
#[cfg(feature = "host-wide")]
pub(super) enum MapError {
    /// `mmap` failed.
    Map(std::io::Error),
    /// Every `SIGBUS` guard slot is taken ([`guard::SLOTS`] state files are mapped already).
    NoGuardSlot,
}

/// The first page of a state file, mapped shared and read-write, seen as atomic words and
/// guarded against `SIGBUS`: a truncation of the file while it is mapped replaces the page with a
/// private zero page and sets [`StateMap::lost`] instead of killing the process.
#[cfg(feature = "host-wide")]
pub(super) struct StateMap {
    map: memmap2::MmapRaw,
    guard: usize,
}

#[cfg(feature = "host-wide")]
impl StateMap {
    /// Maps the first page of `file` (open read-write) and guards it. A file shorter than a
    /// page may be mapped: touching the missing part is caught by the guard ([`StateMap::lost`]).
    pub(super) fn new(file: &File) -> Result<StateMap, MapError> {
        let map = memmap2::MmapOptions::new()
            .len(PAGE)
            .map_raw(file)
            .map_err(MapError::Map)?;
        let guard = guard::register(map.as_ptr() as usize).ok_or(MapError::NoGuardSlot)?;
        Ok(StateMap { map, guard })
    }

    /// The page's words.
    #[inline]
    pub(super) fn words(&self) -> &Words {
        // SAFETY: the mapping starts at offset 0 of the file, so it is page-aligned, and it is
        // PAGE bytes long, readable and writable (the size and alignment of `Words`); it stays
        // mapped until `self` is dropped, which cannot happen while `&self` is borrowed. Any bit
        // pattern is a valid `AtomicU64`. This process never makes a non-atomic reference into
        // it; other processes update the words with atomics as well. (A file rewritten with
        // write(2) meanwhile changes bytes under our atomics; aligned 8-byte loads and stores
        // are single accesses on every supported target, and the checks in `host.rs` notice.)
        // Touching a page past the end of a truncated file raises SIGBUS, which the guard
        // registered in `new` (and released in Drop, before the unmap) turns into a zero page.
        unsafe { &*self.map.as_ptr().cast::<Words>() }
    }

    /// Whether the page was lost (the file was truncated under it and the guard replaced it).
    #[inline]
    pub(super) fn lost(&self) -> bool {
        guard::LOST[self.guard].load(Ordering::Acquire)
    }

    /// Writes the page to disk (`msync`).
    pub(super) fn sync(&self) -> std::io::Result<()> {
        self.map.flush_range(0, PAGE)
    }
}

#[cfg(feature = "host-wide")]
impl Drop for StateMap {
    fn drop(&mut self) {
        // Before the mapping goes (when `map` drops, after this).
        guard::unregister(self.guard);
    }
}

/// The `SIGBUS` guard of state file mappings (see the module docs of `shm`).
#[cfg(feature = "host-wide")]
mod guard {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::PAGE;

    /// Mappings that can be guarded at once.
    pub(in crate::shm) const SLOTS: usize = 256;
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
        // SAFETY: the kernel passes a valid siginfo to a SA_SIGINFO handler of SIGBUS.
        let addr = unsafe { (*info).si_addr() } as usize;
        for i in 0..SLOTS {
            let base = BASES[i].load(Ordering::Acquire);
            if base != 0 && addr >= base && addr < base + PAGE {
                LOST[i].store(true, Ordering::SeqCst);
                // SAFETY: `base` is the page of a live `StateMap` (registered after its mmap,
                // unregistered before its munmap; the faulting access comes from a borrow of
                // it). A private zero page replaces it, so the faulting access is retried on
                // memory that exists; nothing in Rust holds a non-atomic view of the page. Ids
                // from it are refused because LOST is set first.
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
        // installed), or is null; an all-zero sigaction with SIG_DFL restores the default action.
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
            // SAFETY: `sigaction` is plain old data (all zeros is valid); the previous action is
            // written into a leaked box that lives for the rest of the program, and our action
            // is filled in before it is installed. The handler only does async-signal-safe work.
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

    /// Guards the page at `base` (of a live mapping that unregisters before it is unmapped);
    /// the slot index, or `None` if every slot is taken.
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

#[cfg(feature = "host-wide")]
pub(super) use guard::SLOTS as GUARD_SLOTS;

/// Bytes that are ASCII by construction, so they are read as `&str` without UTF-8 validation:
/// every write clears the top bit of every byte it stores (an AND in a register, free next to
/// the store). `str::from_utf8` of the 36 bytes of a UUID cost more than writing them.
#[derive(Clone, Copy)]
pub struct AsciiBuf<const N: usize>([u8; N]);

impl<const N: usize> AsciiBuf<N> {
    /// All zero bytes (ASCII NUL).
    #[inline]
    pub const fn zeroed() -> Self {
        AsciiBuf([0; N])
    }

    /// Stores `b` (its top bit cleared) at `i`.
    ///
    /// # Panics
    /// If `i >= N`, as indexing does.
    #[inline]
    pub fn set(&mut self, i: usize, b: u8) {
        self.0[i] = b & 0x7F;
    }

    /// Stores `bytes` (each with its top bit cleared) from `at`.
    ///
    /// # Panics
    /// If they do not fit, as slicing does.
    #[inline]
    pub fn put_slice(&mut self, at: usize, bytes: &[u8]) {
        for (d, &b) in self.0[at..at + bytes.len()].iter_mut().zip(bytes) {
            *d = b & 0x7F;
        }
    }

    /// Stores the 4 bytes of `x`, most significant first, from `at` (top bits cleared).
    #[inline]
    pub fn put_u32_be(&mut self, at: usize, x: u32) {
        self.0[at..at + 4].copy_from_slice(&(x & 0x7F7F_7F7F).to_be_bytes());
    }

    /// Stores the 8 bytes of `x`, most significant first, from `at` (top bits cleared).
    #[inline]
    pub fn put_u64_be(&mut self, at: usize, x: u64) {
        self.0[at..at + 8].copy_from_slice(&(x & 0x7F7F_7F7F_7F7F_7F7F).to_be_bytes());
    }

    /// The first `len` bytes (all of them if `len` is larger) as text.
    #[inline]
    pub fn as_str(&self, len: usize) -> &str {
        let bytes = &self.0[..len.min(N)];
        // SAFETY: every byte is below 0x80: `zeroed` starts from zeros and every method that
        // writes (`set`, `put_slice`, `put_u32_be`, `put_u64_be`) clears the top bit of each byte
        // it stores; nothing else can reach the array. A sequence of bytes below 0x80 is valid
        // UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// The first `len` bytes (all of them if `len` is larger).
    #[inline]
    pub fn as_bytes(&self, len: usize) -> &[u8] {
        &self.0[..len.min(N)]
    }
}

/// The CPUs this thread may run on (Linux: its affinity mask; elsewhere, or when it cannot be
/// read, none, so callers do not pin).
pub(crate) fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
        // size_of::<cpu_set_t>() bytes into it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let r =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if r != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: CPU_ISSET reads the set within its size.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// Pins the calling thread to `cpu` (Linux; a no-op elsewhere, and when it fails).
pub(crate) fn pin_to_cpu(cpu: usize) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as in `allowed_cpus`; CPU_SET writes within the set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut set) };
        let _ = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_exited_child_not_yet_reaped_is_not_alive() {
        // A lock holder killed inside a mode switch is a zombie until its parent reaps it: the
        // switch lock must be taken over from it (it answers `kill(pid, 0)` all the same).
        // SAFETY: the child only calls `_exit`, which is async-signal-safe, as a child of a
        // multithreaded process (the test harness) must.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: ends the child at once, running no destructors or atexit handlers.
            unsafe { libc::_exit(0) };
        }
        // Wait (without reaping) until the child has exited.
        // SAFETY: `siginfo_t` is plain old data: all zeros is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits for this child's exit, leaving it unreaped (WNOWAIT); `info` is written.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        assert_eq!(rc, 0);
        assert!(super::process_exists(pid), "kill(pid, 0) sees the zombie");
        let alive = crate::shm::process_alive(pid as u64);
        // SAFETY: reaps the child forked above.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        assert!(!alive, "an exited, unreaped child counted as alive");
        assert!(crate::shm::process_alive(u64::from(std::process::id())));
    }
}
