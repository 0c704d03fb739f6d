//! Two threads against one on a shared Locality generator, in long runs that alternate, for a
//! machine shared with other work: criterion's samples are short, and a pair of threads spawned
//! for one sample on a busy 2-core machine is often placed on one core, where it does not
//! contend (nor run in parallel) at all.
//!
//! Each round times `N` ids on one thread, then `N` ids split over two threads, for each of:
//!
//! * `generator`: `LocalityGenerator::next` (two threads on it take blocks of positions; one
//!   thread alone takes one position per id with a `fetch_add`);
//! * `load+add per id`: the generator's step before 2026-11-26 (a relaxed load and a `fetch_add`
//!   of one shared word per id, the clock read and the id assembly);
//! * `add per id`: the step that followed, and that the blocks replaced under contention: a
//!   `fetch_add` per id only;
//! * `clock only`, `arithmetic only`: no shared write at all, what two threads can get from the
//!   CPUs at that moment.
//!
//! It prints, per variant, the median and quartiles over the rounds of (ids per second of two
//! threads) / (ids per second of one), and the median nanoseconds per id of one thread.
//!
//! Run: `cargo bench -p idforge-bench --bench locality_interleaved -- [N] [ROUNDS]` (default
//! 20,000,000 ids and 7 rounds; on a loaded machine, `nice -n -10` gives the threads the cores).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use idforge::schemes::locality::{reverse_nibbles, LocalityGenerator, PRIME};
use idforge::{Clock, SystemClock};

/// A shared word on a cache line of its own.
#[repr(align(128))]
struct Word(AtomicU64);

fn assemble(counter: u32, clock: &SystemClock) -> u128 {
    let ms = clock.now_ns() / 1_000_000;
    (u128::from(reverse_nibbles(counter)) << 96) | (0xb << 76) | u128::from(ms)
}

fn load_add_per_id(word: &AtomicU64, clock: &SystemClock) -> u128 {
    let seen = word.load(Ordering::Relaxed);
    let step = if seen & 1 == 0 { PRIME } else { 1 };
    let before = word.fetch_add(u64::from(step) << 32, Ordering::Relaxed);
    assemble(((before >> 32) as u32).wrapping_add(step), clock)
}

fn add_per_id(word: &AtomicU64, clock: &SystemClock) -> u128 {
    let before = word.fetch_add(1 << 32, Ordering::Relaxed);
    assemble(
        ((before >> 32) as u32).wrapping_add(1).wrapping_mul(PRIME),
        clock,
    )
}

/// Seconds for `n` calls of `f` split over `threads` threads.
fn time<F: Fn() -> u128 + Sync>(n: u64, threads: u64, f: &F) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..n / threads {
                    let v = f();
                    black_box(v as u64);
                    black_box((v >> 64) as u64);
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

/// (1-thread time) / (2-thread time) for the same number of ids (the ratio of ids per second),
/// and the 1-thread time per id in nanoseconds.
fn ratio<F: Fn() -> u128 + Sync>(n: u64, f: F) -> (f64, f64) {
    let one = time(n, 1, &f);
    (one / time(n, 2, &f), one * 1e9 / n as f64)
}

fn main() {
    // `cargo bench` passes `--bench`; the numbers are ours.
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(20_000_000);
    let rounds = args.get(1).copied().unwrap_or(7);
    let g = LocalityGenerator::builder()
        .pid(1)
        .mac_fragment(1)
        .build()
        .unwrap();
    let word = Word(AtomicU64::new(0));
    let clock = SystemClock::fast();
    let names = [
        "generator",
        "load+add per id",
        "add per id",
        "clock only",
        "arithmetic only",
    ];
    let mut ratios: Vec<Vec<(f64, f64)>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        ratios[0].push(ratio(n, || g.next().as_u128()));
        ratios[1].push(ratio(n, || load_add_per_id(&word.0, &clock)));
        ratios[2].push(ratio(n, || add_per_id(&word.0, &clock)));
        ratios[3].push(ratio(n, || u128::from(clock.now_ns())));
        ratios[4].push(ratio(n, || {
            let mut x = black_box(12_345u64);
            for _ in 0..20 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            u128::from(x)
        }));
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("{n} ids per run, {rounds} rounds; load average {load}");
    for (name, r) in names.iter().zip(&ratios) {
        let mut two: Vec<f64> = r.iter().map(|x| x.0).collect();
        let mut one_ns: Vec<f64> = r.iter().map(|x| x.1).collect();
        two.sort_by(f64::total_cmp);
        one_ns.sort_by(f64::total_cmp);
        let q = |f: usize| two[(two.len() - 1) * f / 4];
        println!(
            "{name:16} ids/s of 2 threads / 1: median {:.2} (quartiles {:.2} to {:.2}); 1 thread {:.1} ns/id",
            q(2),
            q(1),
            q(3),
            one_ns[one_ns.len() / 2]
        );
    }
}
