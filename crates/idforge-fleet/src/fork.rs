//! Telling a forked child from the process that joined the fleet. A lease, its fencing token,
//! its reservation and the thread that renews it belong to one process: a child that `fork()`
//! copies them, and its leased cell refuses every id (see [`crate::Member`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

static FORKS: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    // Async-signal-safe, as a handler run in the child of a multithreaded process must be: one
    // atomic add.
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// Registers (once per process) the handler that counts forks in the child; whether it is
/// registered.
pub(crate) fn watch() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // SAFETY: registers a child handler that only performs an atomic add; the function lives
        // for the whole program.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) == 0 }
    })
}

/// How many forks led to this process since it started (0 in the original process): one
/// relaxed load, cheap enough for every id.
#[inline]
pub(crate) fn generation() -> u64 {
    FORKS.load(Ordering::Relaxed)
}
