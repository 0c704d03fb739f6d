//! Measuring a generator shared by threads: throughput, **fairness** and **tail latency**.
//!
//! Throughput alone hides starvation: a generator whose CAS loser backs off can reach one
//! thread's rate with two threads by letting one of them make nearly every id. [`measure`] runs
//! `threads` threads calling one function for a while and reports, beside the ids per second:
//!
//! * **fairness** per window (25 ms by default): the fewest ids any thread made in the window
//!   divided by the most (1.0 = even; 0 = a thread made none for the whole window), worst and
//!   median over the run's whole windows;
//! * **latency** of every call (p50, p99, p99.9, max), the time from the end of a thread's
//!   previous call to the end of this one: a thread that waits a whole window for one id shows
//!   as a max of 25 ms.
//!
//! Every call is timed (one `Instant::now()`, 20–40 ns on a virtual machine), for the peers
//! measured beside idforge too, so the figures compare like with like. `idforge bench --threads`
//! and the `fairness` benchmark (`cargo bench -p idforge-bench --bench fairness`) use it.
//!
//! ```
//! use idforge::contention::{measure, Options};
//! use idforge::{Generator, Scheme};
//! use std::time::Duration;
//! let g = Generator::new(&Scheme::Snowflake, Some(1))?;
//! let opts = Options { threads: 2, duration: Duration::from_millis(60), ..Options::default() };
//! let r = measure(&opts, || g.next().is_ok());
//! assert_eq!(r.per_thread.len(), 2);
//! assert!(r.ids > 0 && r.errors == 0);
//! assert!(r.latency.max_ns >= r.latency.p50_ns);
//! println!("{:.1} M ids/s, fairness {:.2} worst, p99.9 {} ns", r.per_second() / 1e6,
//!          r.fairness_worst, r.latency.p999_ns);
//! # Ok::<(), idforge::Error>(())
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

/// How [`measure`] runs.
///
/// ```
/// use idforge::contention::Options;
/// let o = Options::default();
/// assert_eq!((o.threads, o.window.as_millis(), o.pin), (2, 25, true));
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    /// Threads calling the function at once.
    pub threads: usize,
    /// How long they call it.
    pub duration: Duration,
    /// The window fairness is measured in.
    pub window: Duration,
    /// Pin thread `i` to the `i`-th CPU this process may run on, when there are at least as
    /// many CPUs as threads (Linux; elsewhere, and with more threads than CPUs, threads float).
    pub pin: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: 2,
            duration: Duration::from_millis(500),
            window: Duration::from_millis(25),
            pin: true,
        }
    }
}

/// Per-call latency, in nanoseconds. Percentiles are the upper bound of their histogram bucket
/// (at most 1/8 above the true value); `max_ns` is exact.
///
/// ```
/// use idforge::contention::Latency;
/// let l = Latency::default();
/// assert_eq!(l.max_ns, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// The longest call.
    pub max_ns: u64,
}

/// What [`measure`] found.
///
/// ```
/// use idforge::contention::{measure, Options};
/// use std::time::Duration;
/// let o = Options { threads: 1, duration: Duration::from_millis(30), ..Options::default() };
/// let r = measure(&o, || true);
/// assert_eq!(r.fairness_worst, 1.0); // one thread is always even with itself
/// ```
#[derive(Debug, Clone)]
pub struct Report {
    /// Successful calls, all threads.
    pub ids: u64,
    /// Calls that returned `false`.
    pub errors: u64,
    /// Successful calls of each thread.
    pub per_thread: Vec<u64>,
    /// How long the threads ran, from the common start to the last thread's end.
    pub elapsed: Duration,
    /// Whole windows measured (the last, partial one is left out).
    pub windows: usize,
    /// The lowest over whole windows of (fewest ids of a thread / most ids of a thread); 1.0
    /// with one thread, 0.0 when a thread made none in some window.
    pub fairness_worst: f64,
    /// The median of that ratio over whole windows.
    pub fairness_median: f64,
    /// Per-call latency over every call of every thread.
    pub latency: Latency,
}

impl Report {
    /// Successful calls per second, all threads together.
    ///
    /// ```
    /// use idforge::contention::{measure, Options};
    /// let r = measure(&Options { threads: 1, ..Options::default() }, || true);
    /// assert!(r.per_second() > 0.0);
    /// ```
    pub fn per_second(&self) -> f64 {
        self.ids as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// A log-linear histogram of nanoseconds: 8 buckets per power of two.
struct Histogram([u64; BUCKETS]);

const BUCKETS: usize = 8 + 61 * 8;

fn bucket(ns: u64) -> usize {
    if ns < 8 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros(); // 3..=63
    8 + (e as usize - 3) * 8 + ((ns >> (e - 3)) & 7) as usize
}

/// The largest value of bucket `i`.
fn bucket_top(i: usize) -> u64 {
    if i < 8 {
        return i as u64;
    }
    let e = (i - 8) / 8 + 3;
    let m = ((i - 8) % 8) as u64;
    let low = (8 + m) << (e - 3);
    low.saturating_add((1u64 << (e - 3)) - 1)
}

impl Histogram {
    fn new() -> Self {
        Histogram([0; BUCKETS])
    }

    fn add(&mut self, other: &Histogram) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    fn percentile(&self, p: f64) -> u64 {
        let total: u64 = self.0.iter().sum();
        if total == 0 {
            return 0;
        }
        let want = ((total as f64 * p).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, n) in self.0.iter().enumerate() {
            seen += n;
            if seen >= want {
                return bucket_top(i);
            }
        }
        bucket_top(BUCKETS - 1)
    }
}

/// One thread's results.
struct Thread {
    ok: u64,
    errors: u64,
    windows: Vec<u64>,
    hist: Histogram,
    max_ns: u64,
    end: Instant,
}

/// Runs `opts.threads` threads calling `f` (which returns whether it made an id) for
/// `opts.duration`, all starting together, and reports throughput, fairness and latency.
///
/// ```
/// use idforge::contention::{measure, Options};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
/// // A plain atomic counter as the "generator".
/// let c = AtomicU64::new(0);
/// let o = Options { threads: 2, duration: Duration::from_millis(50), ..Options::default() };
/// let r = measure(&o, || { c.fetch_add(1, Ordering::Relaxed); true });
/// assert_eq!(r.ids, c.load(Ordering::Relaxed));
/// assert_eq!(r.per_thread.iter().sum::<u64>(), r.ids);
/// ```
///
/// # Panics
/// If `opts.threads` is 0 or `opts.window` is zero, or a thread panics (the panic is passed on).
pub fn measure<F: Fn() -> bool + Sync>(opts: &Options, f: F) -> Report {
    assert!(
        opts.threads > 0,
        "contention::measure needs at least one thread"
    );
    assert!(!opts.window.is_zero(), "contention::measure needs a window");
    let window_ns = opts.window.as_nanos().max(1);
    let n_windows = (opts.duration.as_nanos() / window_ns) as usize + 1;
    let cpus = crate::shm::allowed_cpus();
    let pin = opts.pin && cpus.len() >= opts.threads;
    let ready = Barrier::new(opts.threads + 1);
    let go = AtomicBool::new(false);
    let start: OnceLock<Instant> = OnceLock::new();
    let threads: Vec<Thread> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..opts.threads)
            .map(|t| {
                let (f, ready, go, start, cpus) = (&f, &ready, &go, &start, &cpus);
                s.spawn(move || {
                    if pin {
                        crate::shm::pin_to_cpu(cpus[t]);
                    }
                    ready.wait();
                    while !go.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    let start = *start.get().expect("set before go");
                    let end = start + opts.duration;
                    let mut th = Thread {
                        ok: 0,
                        errors: 0,
                        windows: vec![0; n_windows],
                        hist: Histogram::new(),
                        max_ns: 0,
                        end: start,
                    };
                    let mut prev = Instant::now();
                    loop {
                        let made = f();
                        let now = Instant::now();
                        let ns = now.saturating_duration_since(prev).as_nanos() as u64;
                        prev = now;
                        th.hist.0[bucket(ns)] += 1;
                        th.max_ns = th.max_ns.max(ns);
                        if made {
                            th.ok += 1;
                            let w = (now.saturating_duration_since(start).as_nanos() / window_ns)
                                as usize;
                            th.windows[w.min(n_windows - 1)] += 1;
                        } else {
                            th.errors += 1;
                        }
                        if now >= end {
                            th.end = now;
                            break;
                        }
                    }
                    th
                })
            })
            .collect();
        ready.wait();
        let _ = start.set(Instant::now());
        go.store(true, Ordering::Release);
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let start = *start.get().expect("set");
    let whole = (opts.duration.as_nanos() / window_ns) as usize;
    let mut ratios: Vec<f64> = (0..whole)
        .map(|w| {
            let counts = threads.iter().map(|t| t.windows[w]);
            let (lo, hi) = counts.fold((u64::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
            if hi == 0 {
                1.0 // nobody made an id (every call failed): no thread was favoured
            } else {
                lo as f64 / hi as f64
            }
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let mut hist = Histogram::new();
    for t in &threads {
        hist.add(&t.hist);
    }
    let end = threads.iter().map(|t| t.end).max().unwrap_or(start);
    Report {
        ids: threads.iter().map(|t| t.ok).sum(),
        errors: threads.iter().map(|t| t.errors).sum(),
        per_thread: threads.iter().map(|t| t.ok).collect(),
        elapsed: end.saturating_duration_since(start),
        windows: whole,
        fairness_worst: ratios.first().copied().unwrap_or(1.0),
        fairness_median: ratios.get(ratios.len() / 2).copied().unwrap_or(1.0),
        latency: Latency {
            p50_ns: hist.percentile(0.5),
            p99_ns: hist.percentile(0.99),
            p999_ns: hist.percentile(0.999),
            max_ns: threads.iter().map(|t| t.max_ns).max().unwrap_or(0),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_and_their_tops_bound_them() {
        for v in (0..5_000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = bucket(v);
            assert!(b < BUCKETS, "{v}");
            assert!(
                bucket_top(b) >= v,
                "{v}: bucket {b} tops at {}",
                bucket_top(b)
            );
            assert!(
                b == 0 || bucket_top(b - 1) < v,
                "{v}: belongs lower than {b}"
            );
        }
        // At most 1/8 above the value.
        for v in [9u64, 100, 1_000, 123_456, 25_000_000] {
            assert!(bucket_top(bucket(v)) <= v + v / 8, "{v}");
        }
    }

    #[test]
    fn percentiles_come_from_the_calls() {
        let mut h = Histogram::new();
        for v in 1..=1_000u64 {
            h.0[bucket(v)] += 1;
        }
        let p50 = h.percentile(0.5);
        assert!((500..=563).contains(&p50), "{p50}");
        assert!(h.percentile(0.999) >= 999);
        assert_eq!(Histogram::new().percentile(0.5), 0);
    }

    #[test]
    fn a_thread_that_is_held_back_shows_as_unfair_and_slow() {
        // The first caller is stopped for 110 ms (four whole windows): some window has it at 0
        // while the other thread runs, and its one long call is the max. Fails when windows or
        // latency are not kept per call.
        let first = std::sync::atomic::AtomicBool::new(true);
        let o = Options {
            threads: 2,
            duration: Duration::from_millis(200),
            window: Duration::from_millis(25),
            pin: false,
        };
        let r = measure(&o, || {
            if first.swap(false, Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(110));
            }
            true
        });
        assert_eq!(r.fairness_worst, 0.0, "{r:?}");
        assert!(r.latency.max_ns >= 110_000_000, "{r:?}");
        assert_eq!(r.windows, 8);
        assert_eq!(r.errors, 0);
    }
}
