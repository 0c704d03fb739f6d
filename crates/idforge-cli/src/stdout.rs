//! Whether standard output is open: Rust drops writes to a closed stdout without an error, so a
//! command whose stdout was closed (`>&-`) would lose its ids and exit 0.

use std::io;

/// Whether file descriptor 1 was closed when the process started. The Rust runtime puts
/// /dev/null on a closed stdout before `main` runs, so it is looked at earlier, by a constructor
/// in `.init_array`.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
static CLOSED_AT_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
#[used]
#[link_section = ".init_array"]
static LOOK_AT_STDOUT: extern "C" fn() = {
    extern "C" fn look() {
        // SAFETY: F_GETFD only reads the descriptor's flags; no memory is passed.
        let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
        CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
    }
    look
};

/// Whether standard output was open when the process started.
pub fn is_open() -> bool {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    if CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        io::stdout().as_fd().try_clone_to_owned().is_ok()
    }
    #[cfg(not(unix))]
    true
}
