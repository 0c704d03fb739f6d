//! Loom models of the sequencer's CAS step: every interleaving of 2 and 3 threads (including
//! spurious CAS failures) issues distinct stamps, increasing within each thread.
//!
//! Built only with `--cfg loom` (loom is a dev-dependency under that cfg):
//! `RUSTFLAGS="--cfg loom" cargo test -p idforge --test loom`, as `.ci/run` does.

#![cfg(loom)]

use idforge::{Clock, ManualClock, Policy, Sequencer, StampCell, Timebase};
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;

/// The stamp in a loom-checked atomic, with the same (Relaxed) orderings as the real cell.
struct LoomCell(AtomicU64);

impl StampCell for LoomCell {
    fn load(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.0
            .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

const MS: u64 = 1_000_000;

fn sequencer(clock: ManualClock, policy: Policy) -> Arc<Sequencer<ManualClock, LoomCell>> {
    let tb = Timebase {
        epoch_ns: 0,
        tick_ns: MS,
        time_bits: 48,
        counter_bits: 1, // two ids per tick: the models cross tick boundaries
    };
    Arc::new(Sequencer::with_cell(clock, LoomCell(AtomicU64::new(0)), tb, policy).unwrap())
}

fn check(per_thread: Vec<Vec<u64>>) {
    let mut all: Vec<u64> = per_thread.iter().flatten().copied().collect();
    for v in &per_thread {
        assert!(v.windows(2).all(|w| w[0] < w[1]), "per-thread order: {v:?}");
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "duplicate stamp in {per_thread:?}");
}

fn run(threads: usize, per_thread: usize, clock_step: u64) {
    run_with(threads, per_thread, clock_step, Policy::UNBOUNDED)
}

fn run_with(threads: usize, per_thread: usize, clock_step: u64, policy: Policy) {
    loom::model(move || {
        let clock = ManualClock::new(5 * MS);
        clock.auto_advance(clock_step);
        let seq = sequencer(clock.clone(), policy);
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let seq = seq.clone();
                loom::thread::spawn(move || {
                    (0..per_thread)
                        .map(|_| seq.next().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let per: Vec<Vec<u64>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let last = seq.last_stamp();
        assert!(
            per.iter().flatten().all(|s| *s <= last),
            "the cell holds the largest stamp"
        );
        let _ = clock.now_ns();
        check(per);
    });
}

#[test]
fn two_threads_frozen_clock() {
    run(2, 2, 0);
}

#[test]
fn two_threads_moving_clock() {
    // Every clock read moves time by 0.6 ms: threads see different ticks in different orders.
    run(2, 2, 600_000);
}

#[test]
fn three_threads_frozen_clock() {
    run(3, 1, 0);
}

#[test]
fn three_threads_moving_clock() {
    run(3, 1, 600_000);
}

#[test]
fn two_threads_default_policy_moving_clock() {
    // Under the default policy the counter (2 per tick) runs out and the threads take the wait
    // branch until the clock reaches the next tick: still no duplicate, in every interleaving.
    run_with(2, 2, 600_000, Policy::DEFAULT);
}

/// A cell with a durable ceiling, as `HostStamp` in durable mode: raising it writes the mark to
/// "disk" (`persisted`: the `fetch_max` of the pending mark followed by its `msync`), then
/// publishes it as the ceiling. No lock (as in `HostStamp`, so a fork cannot deadlock a child):
/// concurrent raisers each persist their own target before publishing it.
struct CeilingCell {
    stamp: AtomicU64,
    persisted: AtomicU64,
    ceiling: AtomicU64,
}

impl StampCell for CeilingCell {
    fn load(&self) -> u64 {
        self.stamp.load(Ordering::Relaxed)
    }
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.stamp
            .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
    fn ceiling(&self) -> u64 {
        self.ceiling.load(Ordering::Acquire)
    }
    fn raise_ceiling(&self, needed: u64) -> Result<u64, idforge::Error> {
        let current = self.ceiling.load(Ordering::Acquire);
        if current >= needed {
            return Ok(current);
        }
        let target = needed + 2;
        self.persisted.fetch_max(target, Ordering::AcqRel);
        self.ceiling.fetch_max(target, Ordering::Release);
        Ok(target)
    }
}

#[test]
fn two_threads_never_issue_above_the_persisted_ceiling() {
    // Without a lock around the raise the interleavings multiply past what a test run can
    // explore (minutes, unbounded); a preemption bound of 5 explores them in about 10 s (loom's
    // authors find most bugs within 2 or 3). Publishing the ceiling before persisting it fails.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(5);
    model.check(|| {
        let tb = Timebase {
            epoch_ns: 0,
            tick_ns: MS,
            time_bits: 48,
            counter_bits: 1,
        };
        let cell = CeilingCell {
            stamp: AtomicU64::new(0),
            persisted: AtomicU64::new(0),
            ceiling: AtomicU64::new(0),
        };
        let seq = Arc::new(
            Sequencer::with_cell(ManualClock::new(5 * MS), cell, tb, Policy::UNBOUNDED).unwrap(),
        );
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let seq = seq.clone();
                loom::thread::spawn(move || {
                    (0..2)
                        .map(|_| {
                            let s = seq.next().unwrap();
                            // Persisted marks only grow: reading it after the issue is a bound
                            // on what it was when the stamp was issued.
                            assert!(
                                s <= seq.cell().persisted.load(Ordering::Acquire),
                                "stamp {s} above the persisted mark"
                            );
                            s
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let per: Vec<Vec<u64>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        check(per);
    });
}

/// A manual clock on which waiting lets the time waited for pass, and yields to loom's scheduler.
#[derive(Clone)]
struct YieldingClock(ManualClock);

impl Clock for YieldingClock {
    fn now_ns(&self) -> u64 {
        self.0.now_ns()
    }
    fn pause(&self, ns: u64) {
        self.0.advance(ns);
        loom::thread::yield_now();
    }
}

/// Under `OnExhausted::Wait` no stamp is ahead of the clock: every stamp's tick is at most the
/// tick of a clock reading taken after it was issued (the clock only moves forward here: one
/// thread advances it by a tick, once). A reading reused after a lost CAS is older than the
/// `last` the CAS returned, and makes `last_tick > now_tick` look like a clock that stepped back.
#[test]
fn wait_policy_never_runs_ahead_of_the_clock() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let clock = ManualClock::new(5 * MS);
        let tb = Timebase {
            epoch_ns: 0,
            tick_ns: MS,
            time_bits: 48,
            counter_bits: 1,
        };
        let seq = Arc::new(
            Sequencer::with_cell(
                YieldingClock(clock.clone()),
                LoomCell(AtomicU64::new(0)),
                tb,
                Policy::DEFAULT,
            )
            .unwrap(),
        );
        let issuer = |n: usize| {
            let seq = seq.clone();
            let clock = clock.clone();
            loom::thread::spawn(move || {
                for _ in 0..n {
                    let s = seq.next().unwrap();
                    let now_tick = clock.now_ns() / MS;
                    assert!(
                        s >> 1 <= now_tick,
                        "stamp of tick {} issued with the clock at tick {now_tick} under Wait",
                        s >> 1
                    );
                }
            })
        };
        let x = issuer(1);
        let y = issuer(2);
        let mover = {
            let clock = clock.clone();
            loom::thread::spawn(move || clock.advance(MS))
        };
        mover.join().unwrap();
        x.join().unwrap();
        y.join().unwrap();
    });
}
