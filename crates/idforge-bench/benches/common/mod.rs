//! Helpers shared by the benchmarks.

use std::time::{Duration, Instant};

/// Runs `iters` calls of `f` split over two threads; returns the wall time of the whole, so that
/// criterion reports the time per call of the total throughput.
pub fn two_threads(iters: u64, f: &(dyn Fn() + Sync)) -> Duration {
    let half = iters / 2 + 1;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..half {
                    f();
                }
            });
        }
    });
    start.elapsed()
}
