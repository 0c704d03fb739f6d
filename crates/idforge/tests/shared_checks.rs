//! Many threads on one host-wide generator, pausing a few microseconds between ids as a service's
//! request handlers do: the state file's checks (deleted, replaced, truncated, rewound) never
//! refuse a file that nothing touched.
//!
//! On a 16-core machine this shape made every thread of a shared snowflake generator refuse with
//! "was rewound" within two seconds: a check read the cell, another thread issued and recorded a
//! higher stamp, and the check then read that record. The loom model in `shm::watch` explores
//! that interleaving exhaustively (and fails with the reads in the old order, or `Relaxed`); this
//! test runs the real generator, file and clock. Two cores rarely interleave the two reads, so here
//! it mostly shows that the checks still run (the detection tests are in `state_file.rs`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::Instant;

use idforge::{Generator, Scheme, StateOptions, WallClock};

const THREADS: usize = 16;
const PER_THREAD: usize = 6_000;

/// A directory of this test's own, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("idforge-checks-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Spins for about `ns` nanoseconds (a sleep would be far longer than a few microseconds).
fn spin(ns: u128) {
    let t = Instant::now();
    while t.elapsed().as_nanos() < ns {
        std::hint::spin_loop();
    }
}

fn threads_with_pauses_are_never_refused(scheme: Scheme, node: Option<u64>) {
    let name = scheme.name().to_string();
    let scheme = &scheme;
    let dir = TempDir::new(&name);
    let state = StateOptions::new(dir.0.join(format!("{}.state", name)));
    let g = Generator::host_wide(scheme, node, WallClock, scheme.default_policy(), &state)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let start = Barrier::new(THREADS);
    let per: Vec<Vec<u128>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let (g, start, name) = (&g, &start, &name);
                s.spawn(move || {
                    start.wait();
                    let mut ids = Vec::with_capacity(PER_THREAD);
                    for i in 0..PER_THREAD {
                        // 0 to 5 µs, different in each thread: the threads drift in and out of
                        // step, as the reproduction did with 5 µs in every thread.
                        spin(((i + t) % 6) as u128 * 1_000);
                        match g.next() {
                            Ok(id) => ids.push(id),
                            Err(e) => panic!(
                                "{}: thread {t} refused after {i} ids of a file nothing \
                                 touched: {e}",
                                name
                            ),
                        }
                    }
                    ids
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let layout = scheme.layout();
    let mut all = HashSet::with_capacity(THREADS * PER_THREAD);
    for (t, ids) in per.iter().enumerate() {
        // Each thread's ids increase (compared by time and counter: no random bit hides a
        // repeat).
        let stamps: Vec<(u128, u128)> = ids
            .iter()
            .map(|&id| {
                let p = layout.decode(id);
                (p.ticks, p.counter)
            })
            .collect();
        assert!(
            stamps.windows(2).all(|w| w[0] < w[1]),
            "{}: thread {t}'s ids do not increase",
            name
        );
        for s in stamps {
            assert!(all.insert(s), "{}: stamp {s:?} issued twice", name);
        }
    }
    assert_eq!(all.len(), THREADS * PER_THREAD);
}

#[test]
fn sixteen_threads_on_a_host_wide_snowflake_generator_are_never_refused() {
    threads_with_pauses_are_never_refused(Scheme::Snowflake, Some(1));
}

#[test]
fn sixteen_threads_on_a_host_wide_uuid7_generator_are_never_refused() {
    threads_with_pauses_are_never_refused(Scheme::Uuid7, None);
}
