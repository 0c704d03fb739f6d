//! The `RunAhead` bound (guarantee 2): under `OnExhausted::RunAhead` with `max_lead` M, no id's
//! time is more than M ahead of the clock at the moment it is issued. GlobalId's counter (128 ids
//! per ms) is exhausted at once, so the generators below run ahead as far as they may.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idforge::{
    Clock, Generator, Layout, ManualClock, OnClockBehind, OnExhausted, Policy, Scheme, WallClock,
};

const MS: u64 = 1_000_000;
const T: u64 = 1_800_000_000_000 * MS; // 2027-01-15, a millisecond boundary

fn run_ahead(max_lead_ms: u64) -> Policy {
    Policy {
        on_exhausted: OnExhausted::RunAhead,
        max_lead: Duration::from_millis(max_lead_ms),
        on_clock_behind: OnClockBehind::Fail,
    }
}

/// How far an id's time (the start of its tick) is ahead of `clock_ns`, in nanoseconds (negative
/// when behind).
fn lead_ns(layout: &Layout, id: u128, clock_ns: u64) -> i128 {
    layout.unix_ns_of(layout.decode(id).ticks) as i128 - clock_ns as i128
}

#[test]
fn run_ahead_never_leads_the_wall_clock_by_more_than_max_lead() {
    const M: u64 = 20 * MS;
    let g = Generator::with_clock(&Scheme::GlobalId, Some(1), WallClock, run_ahead(20)).unwrap();
    let layout = g.layout().clone();
    let deadline = Instant::now() + Duration::from_millis(300);
    let max_seen = AtomicU64::new(0);
    let issued = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let (mut max, mut n) = (i128::MIN, 0);
                while Instant::now() < deadline {
                    let id = g.next().unwrap();
                    // The clock read after the id was issued: never earlier than the reading the
                    // sequencer checked the id against.
                    let lead = lead_ns(&layout, id, WallClock.now_ns());
                    assert!(
                        lead <= M as i128,
                        "id {id:#x} is {lead} ns ahead of the clock, more than max_lead ({M} ns)"
                    );
                    max = max.max(lead);
                    n += 1;
                }
                max_seen.fetch_max(max.max(0) as u64, Ordering::Relaxed);
                issued.fetch_add(n, Ordering::Relaxed);
            });
        }
    });
    // The test means something only if the counter ran out and the generator did run ahead.
    let (max, n) = (max_seen.into_inner(), issued.into_inner());
    assert!(n > 150 * 128, "only {n} ids in 300 ms");
    assert!(
        max >= M / 2,
        "the generator ran at most {max} ns ahead: the bound was not exercised"
    );
}

#[test]
fn run_ahead_bound_is_exact_on_a_manual_clock() {
    const M: u64 = 5 * MS;
    let clock = ManualClock::new(T);
    let g = Generator::with_clock(&Scheme::GlobalId, Some(1), clock.clone(), run_ahead(5)).unwrap();
    let layout = g.layout().clone();

    // Frozen at T: the ticks T .. T + 5 ms are allowed, 6 × 128 ids, the last exactly 5 ms ahead.
    let ids: Vec<u128> = (0..6 * 128).map(|_| g.next().unwrap()).collect();
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(
            lead_ns(&layout, id, T),
            (i as u64 / 128 * MS) as i128,
            "id {i}"
        );
    }
    assert_eq!(g.sequencer().lead(), Duration::from_millis(5));
    // The next id is 6 ms ahead: it waits until the clock moves.
    std::thread::scope(|s| {
        let waiter = s.spawn(|| g.next().unwrap());
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "past max_lead RunAhead must wait");
        clock.advance(MS);
        assert_eq!(lead_ns(&layout, waiter.join().unwrap(), T + MS), M as i128);
    });

    // Four threads against a clock that moves 1 ms at a time: every id at most M ahead of the
    // clock read after it, and the bound is reached.
    let done = AtomicBool::new(false);
    let max_seen = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut max = i128::MIN;
                while !done.load(Ordering::Relaxed) {
                    let id = g.next().unwrap();
                    let lead = lead_ns(&layout, id, clock.now_ns());
                    assert!(lead <= M as i128, "id {id:#x} is {lead} ns ahead");
                    max = max.max(lead);
                }
                max_seen.fetch_max(max.max(0) as u64, Ordering::Relaxed);
            });
        }
        for _ in 0..200 {
            std::thread::sleep(Duration::from_micros(500));
            clock.advance(MS);
        }
        done.store(true, Ordering::Relaxed);
        // Release the threads waiting at the bound.
        clock.advance(1_000 * MS);
    });
    assert_eq!(max_seen.into_inner(), M, "the bound is reached exactly");
}
