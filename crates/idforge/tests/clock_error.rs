//! A clock's own error (`Clock::max_error_ns`) against the policy, on manual clocks that
//! behave as the cheap ones do: a renewed calibration reading a little below the one before, a
//! ticker lagging its precise source, a process on the counter and one on `CLOCK_REALTIME`
//! sharing one stamp. Deterministic. Each test is a reproduction an attack review wrote against
//! the first version of the error allowance, and failed on it (A and D: the `Wait` policy ran
//! ahead; B: a spurious `ClockBehind`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idforge::{
    Clock, Generator, ManualClock, OnClockBehind, OnExhausted, Policy, Scheme, Sequencer,
    StateOptions, Timebase,
};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
const T0: u64 = 1_800_000_000_000 * MS; // a millisecond boundary

/// A manual clock that declares an error bound (as `SystemClock::fast()` and the ticker do:
/// 50 us), and whose reading is `time + offset` (a calibration that reads ahead or behind).
#[derive(Clone)]
struct Jitter {
    time: ManualClock,
    offset: Arc<AtomicU64>, // added, wrapping: a "negative" offset is 2^64 - x
    error: u64,
}

impl Clock for Jitter {
    fn now_ns(&self) -> u64 {
        self.time
            .now_ns()
            .wrapping_add(self.offset.load(Ordering::SeqCst))
    }
    fn max_error_ns(&self) -> u64 {
        self.error
    }
    fn pause(&self, _ns: u64) {
        std::thread::yield_now();
    }
}

fn tb(counter_bits: u32) -> Timebase {
    Timebase {
        epoch_ns: 0,
        tick_ns: MS,
        time_bits: 48,
        counter_bits,
    }
}

/// Runs `f` on a thread and gives up after `ms`: `None` when it blocked (as a Wait should).
fn within<T: Send + 'static>(ms: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let h = std::thread::spawn(f);
    let until = std::time::Instant::now() + Duration::from_millis(ms);
    while std::time::Instant::now() < until {
        if h.is_finished() {
            return Some(h.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None // left blocked; the test process exits anyway
}

/// A: under `OnExhausted::Wait` (the default policy), a reading a microsecond below an earlier
/// one, well within the 50 us the clock declares as its own error, must not be taken for a
/// clock that stepped back. It was (`last_tick > now_tick` let the range lead): one stamp
/// landed a tick ahead of every reading the clock ever gave, and from there every caller saw
/// "clock behind" and kept running ahead, up to `max_lead` (1 s), with the clock frozen.
#[test]
fn wait_policy_waits_for_a_reading_back_within_the_clocks_own_error() {
    let time = ManualClock::new(T0 + MS); // the start of tick t0 + 1
    let clock = Jitter {
        time: time.clone(),
        offset: Arc::new(AtomicU64::new(0)),
        error: 50 * US,
    };
    assert_eq!(Policy::DEFAULT.on_exhausted, OnExhausted::Wait);
    let seq = Arc::new(Sequencer::new(clock.clone(), tb(2), Policy::DEFAULT).unwrap());
    let t1 = T0 / MS + 1;
    for _ in 0..4 {
        assert_eq!(seq.next().unwrap() >> 2, t1); // tick t1's counter used up
    }
    // The calibration is renewed and reads 1 us lower: tick t1 - 1, within the declared error.
    clock.offset.store(US.wrapping_neg(), Ordering::SeqCst);
    let most_ever = t1; // the highest tick the clock has ever read
    let s = seq.clone();
    let got = within(300, move || {
        (0..200).map(|_| s.next().unwrap()).collect::<Vec<_>>()
    });
    match got {
        None => eprintln!("blocked, as Wait should"),
        Some(stamps) => {
            let worst = stamps.iter().map(|s| s >> 2).max().unwrap();
            panic!(
                "Wait policy ran ahead: {} stamps issued while the clock never read past tick \
                 {most_ever} (it reads {} now, 1 us back within its 50 us error); the last is \
                 tick {worst}, {} ticks ahead (lead {:?})",
                stamps.len(),
                most_ever - 1,
                worst - most_ever,
                seq.lead()
            );
        }
    }
}

/// B: two generators on one stamp (processes sharing a host-wide state file: the clock is not
/// part of the file's fingerprint), one on the counter (`--clock counter`), one on
/// `CLOCK_REALTIME` (`--clock precise`). The counter process reads 20 ns ahead of
/// CLOCK_REALTIME (allowed: that is its error; the docs measure up to 46 ns), across a 32 ns tick
/// boundary, and runs ahead to the lead at nanots' capacity. Its stamps lead CLOCK_REALTIME by
/// max_lead + 1 tick, within max_lead + error. The precise process, reading CLOCK_REALTIME later,
/// must wait that tick out. It was refused with `ClockBehind` while the precise clock declared
/// no error (it now declares the counter's: `SystemClock::precise().max_error_ns()`).
#[test]
fn a_precise_process_beside_a_counter_process_waits_when_the_counter_reads_ahead() {
    // T0 is a multiple of 32 ns; start 20 ns into a tick: the counter process reads 20 ns more,
    // in the next tick.
    let time = ManualClock::new(T0 + 20);
    let counter = Jitter {
        time: time.clone(),
        offset: Arc::new(AtomicU64::new(20)),
        error: 50 * US,
    };
    // nanots' tick and policy: 32 ns ticks, RunAhead with max_lead 1 ms, Fail beyond.
    let tbn = Timebase {
        epoch_ns: 0,
        tick_ns: 32,
        time_bits: 59,
        counter_bits: 0,
    };
    let policy = Policy {
        on_exhausted: OnExhausted::RunAhead,
        max_lead: Duration::from_millis(1),
        on_clock_behind: OnClockBehind::Fail,
    };
    let stamp = Arc::new(AtomicU64::new(0)); // the state file's word
    let fast = Sequencer::with_cell(counter, stamp.clone(), tbn, policy).unwrap();
    let declared = idforge::SystemClock::precise().max_error_ns();
    assert!(
        declared > 0,
        "the precise system clock allows for the counter's error"
    );
    let realtime = Jitter {
        time: time.clone(),
        offset: Arc::new(AtomicU64::new(0)),
        error: declared,
    };
    let precise = Arc::new(Sequencer::with_cell(realtime, stamp.clone(), tbn, policy).unwrap());
    // The counter process at its capacity: it runs to the lead.
    let mut n = 0;
    // `lead()` is measured to the start of the last stamp's tick: at the bound it is within one
    // 32 ns tick of `max_lead`, and the next call would wait for the (frozen) clock.
    while fast.lead() + Duration::from_nanos(32) <= Duration::from_millis(1) {
        fast.next().unwrap();
        n += 1;
    }
    let last = stamp.load(Ordering::SeqCst);
    let lead_real = (last * 32) as i128 - time.now_ns() as i128;
    eprintln!(
        "{n} stamps; last leads CLOCK_REALTIME by {lead_real} ns (max_lead + error = 1050000)"
    );
    assert!(lead_real <= 1_050_000);
    // 5 ns later, the precise process asks for one id. Correct: it waits (the clock here is
    // frozen, so it stays blocked). Wrong: ClockBehind.
    time.advance(5);
    let p = precise.clone();
    let r = within(300, move || p.next());
    if let Some(r) = &r {
        time.advance(MS); // nothing to release
        panic!(
            "the precise process got {r:?} although the stamps lead its clock by {lead_real} ns, \
             within max_lead + the other process's clock error"
        );
    }
    time.advance(10 * MS); // release the waiter
}

/// A ticker-like clock: the cheap reading lags the precise one by `lag`; `pause` lets simulated
/// time pass (the manual clock advances by what the sequencer waits for), so the test is
/// deterministic and needs no threads.
#[derive(Clone)]
struct Lagging {
    time: ManualClock,
    lag: u64,
}

impl Clock for Lagging {
    fn now_ns(&self) -> u64 {
        self.time.now_ns() - self.lag
    }
    fn now_precise_ns(&self) -> u64 {
        self.time.now_ns()
    }
    fn max_error_ns(&self) -> u64 {
        50 * US // as the ticker declares
    }
    fn pause(&self, ns: u64) {
        self.time.advance(ns);
    }
}

/// D: under `OnExhausted::Wait`, a single thread on a ticker-like clock lagging its precise
/// source by 0.5 ms (the ticker lags 100-175 us on an idle machine, without bound on a loaded
/// one) must not run ahead. It ran ahead by the whole `max_lead` (1 s) without the clock moving
/// at all: the call that waits for the next tick reads the precise clock and keeps reading it
/// after the wait, so it issues in the precise tick t+1 while the ticker still reads t; every
/// later call read the ticker, found the last stamp "ahead of the clock", took that for a clock
/// that stepped back and kept counting into later ticks. A range ahead of the reading because
/// the clock looks stepped back is now taken only on a precise reading.
#[test]
fn wait_policy_on_a_lagging_cheap_clock_does_not_run_ahead() {
    // Half a tick and three ticks, both beyond the clock's declared error (50 us): only the
    // precise reading before a range is taken ahead of the reading tells a lag from a step back.
    lagging_by(MS / 2);
    lagging_by(3 * MS);
}

fn lagging_by(lag: u64) {
    let time = ManualClock::new(T0 + lag + MS / 10);
    let clock = Lagging {
        time: time.clone(),
        lag,
    };
    let seq = Sequencer::new(clock.clone(), tb(2), Policy::DEFAULT).unwrap();
    let t = T0 / MS;
    for _ in 0..4 {
        assert_eq!(seq.next().unwrap() >> 2, t);
    }
    // The 5th is in the precise clock's tick: the next one when that is tick t (simulated: pause
    // advances the clock to it), else the precise clock's own.
    let fifth = seq.next().unwrap();
    let frozen_at = time.now_ns();
    assert_eq!(fifth >> 2, frozen_at / MS, "lag {lag}");
    // Now the clock stands still (no call needs to wait under a correct Wait policy for the
    // next 3 ids, the rest of the tick's counter; the 4th must wait).
    let mut issued_without_waiting = Vec::new();
    for _ in 0..5000 {
        let s = seq.next().unwrap();
        if time.now_ns() != frozen_at {
            break; // it waited: correct from here
        }
        issued_without_waiting.push(s);
    }
    let precise_tick = frozen_at / MS;
    let worst = issued_without_waiting.last().map_or(0, |s| s >> 2);
    assert!(
        issued_without_waiting.len() <= 3,
        "lag {lag}: Wait policy ran ahead: {} ids issued with the precise clock frozen at tick {} \
         (the ticker at tick {}), up to tick {} ({} ticks ahead of the precise clock)",
        issued_without_waiting.len(),
        precise_tick,
        (frozen_at - lag) / MS,
        worst,
        worst - precise_tick
    );
}

/// E: a state file deleted under a process, and created again by a process whose cheap clock
/// lags (a ticker whose thread was not scheduled while the creator waited its 2 ms). The new
/// file's first stamp came from the cheap reading, 3 ms behind: it started below ids the
/// process on the deleted file had issued, and repeated 10 of them. It now comes from the
/// precise reading. (Attack review of the clock's error, F1.)
#[test]
fn a_state_file_created_again_on_a_lagging_clock_starts_above_the_deleted_ones_ids() {
    let dir = std::env::temp_dir().join(format!("idforge-clock-error-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = StateOptions::new(dir.join("snowflake.state"));
    let time = ManualClock::new(T0);
    let precise = Lagging {
        time: time.clone(),
        lag: 0,
    };
    let a = Generator::host_wide(
        &Scheme::Snowflake,
        Some(1),
        precise,
        Policy::DEFAULT,
        &state,
    )
    .unwrap();
    let mut issued = std::collections::HashSet::new();
    for _ in 0..6 {
        for _ in 0..10 {
            issued.insert(a.next().unwrap());
        }
        time.advance(MS);
    }
    std::fs::remove_file(&state.path).unwrap();
    let ticker = Lagging {
        time: time.clone(),
        lag: 3 * MS,
    };
    let b =
        Generator::host_wide(&Scheme::Snowflake, Some(1), ticker, Policy::DEFAULT, &state).unwrap();
    time.advance(2 * MS);
    let repeated = (0..30)
        .map(|_| b.next().unwrap())
        .filter(|id| issued.contains(id))
        .count();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        repeated, 0,
        "ids of the new state file repeat the deleted one's"
    );
}

/// F: GUARANTEES §2, "clock steps back by 1 ms: keeps issuing from the last stamp", on a clock
/// that declares the system clocks' 50 us of error. The error was rounded up to a whole tick,
/// so a step back of one tick was taken for the clock's error and waited out under `Wait`
/// (2 ms for Snowflake, 20 ms for Sonyflake, 2 s for a one-second tick). (Attack review, F3.)
#[test]
fn a_step_back_of_a_tick_and_a_half_keeps_issuing_on_a_clock_with_an_error() {
    for (scheme, tick) in [(Scheme::Snowflake, MS), (Scheme::Sonyflake, 10 * MS)] {
        let time = ManualClock::new(T0 + tick - tick / 10); // late in a tick
        let clock = Jitter {
            time: time.clone(),
            offset: Arc::new(AtomicU64::new(0)),
            error: 50 * US,
        };
        let g = Arc::new(Generator::with_clock(&scheme, Some(1), clock, Policy::DEFAULT).unwrap());
        let first = g.next().unwrap();
        time.step_back(tick + tick / 2);
        let g2 = g.clone();
        match within(300, move || g2.next()) {
            Some(next) => assert!(next.unwrap() > first),
            None => {
                time.advance(2 * tick); // release the blocked call
                panic!("{scheme:?}: a step back of 1.5 ticks was waited out instead of issuing");
            }
        }
    }
}

/// A clock of the system clocks' error (50 us), exact: a cheap reading equal to the precise one.
fn system_like(at: u64) -> (Jitter, ManualClock) {
    let time = ManualClock::new(at);
    let clock = Jitter {
        time: time.clone(),
        offset: Arc::new(AtomicU64::new(0)),
        error: 50 * US,
    };
    (clock, time)
}

/// G: a `max_lead` that is not a whole number of ticks. GUARANTEES §2: a clock stepped back by
/// no more than `max_lead` keeps issuing from the last stamp. With the lead counted in whole
/// ticks (rounded down), a step back between `max_lead_ticks` ticks and `max_lead` was refused
/// with `ClockBehind` once the clock's error no longer rounded up to a tick: 1 s back on a 3 ms
/// tick (`behind: 1.002s`), 12 ms back under a 15 ms `max_lead` on 10 ms ticks, 100 us back
/// under a 500 us `max_lead` on 1 ms ticks. (A re-attack of the nanosecond comparison.)
#[test]
fn a_step_back_within_a_max_lead_of_a_fraction_of_ticks_keeps_issuing() {
    // The default policy (1 s) on 3 ms ticks: 333.3 ticks.
    let layout = idforge::Layout::parse_spec("time:41,counter:12,tick=3ms").unwrap();
    let t0 = 600_000 * 3 * MS;
    let (clock, time) = system_like(t0 + 100 * US);
    let p = Policy {
        on_clock_behind: OnClockBehind::Fail,
        ..Policy::DEFAULT
    };
    let g = Generator::with_clock(&Scheme::Custom(layout), None, clock, p).unwrap();
    let a = g.next().unwrap();
    time.set(t0 + 100 * US - 1_000 * MS);
    let b = g.next();
    assert!(
        matches!(b, Ok(b) if b == a + 1),
        "1 s back, 3 ms ticks: {b:?}"
    );

    // 15 ms on 10 ms ticks, and 500 us on 1 ms ticks.
    for (tick, max_lead, at, back) in [
        (10 * MS, 15 * MS, MS, 12 * MS),
        (MS, 500 * US, 20 * US, 100 * US),
    ] {
        let tb = Timebase {
            epoch_ns: 0,
            tick_ns: tick,
            time_bits: 44,
            counter_bits: 8,
        };
        let (clock, time) = system_like(T0 + at);
        let p = Policy {
            on_exhausted: OnExhausted::Wait,
            max_lead: Duration::from_nanos(max_lead),
            on_clock_behind: OnClockBehind::Fail,
        };
        let seq = Sequencer::new(clock, tb, p).unwrap();
        let a = seq.next().unwrap();
        time.step_back(back);
        let b = seq.next();
        assert!(
            matches!(b, Ok(b) if b == a + 1),
            "{back} ns back, max_lead {max_lead} ns, {tick} ns ticks: {b:?}"
        );
        // Further back than max_lead and the error: refused, naming how far.
        time.step_back(max_lead);
        match seq.next() {
            Err(idforge::Error::ClockBehind { behind, .. }) => {
                assert!(
                    behind > Duration::from_nanos(max_lead + 50 * US),
                    "{behind:?}"
                )
            }
            other => panic!("{} ns back: {other:?}", back + max_lead),
        }
    }
}
