//! A state file deleted under a running process and created again at the same path, on layouts
//! whose tick is longer than the creator's wait (a defect found earlier). The creator started the new
//! file at counter 0 of the clock's *current* tick; on a 100 ms custom layout, Sonyflake's 10 ms
//! and a durable 2 s tick, the processes on the deleted file had already used that tick, and
//! the new file repeated their ids. A new file now starts at the tick after the one its clock
//! reads plus the lead a predecessor may have issued at. Deterministic: manual clocks, which the
//! creator reads after its (real) wait exactly where the deleted file's process left them.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use idforge::{
    Clock, Error, Generator, Layout, ManualClock, OnExhausted, Policy, Scheme, StateFileError,
    StateOptions,
};

const MS: u64 = 1_000_000;
/// A whole second: a tick boundary for every tick length used here.
const T0: u64 = 1_800_000_000_000 * MS;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("idforge-fresh-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn custom(tick: &str) -> Scheme {
    Scheme::Custom(
        Layout::parse_spec(&format!(
            "time:41,node:10,counter:12,tick={tick},epoch=2020-01-01T00:00:00Z"
        ))
        .unwrap(),
    )
}

/// A issues ids at several moments inside one tick; its file is deleted; B creates the file
/// again `gap` later, still inside that tick; the clock moves on by a tick (and B's lead) so B
/// can issue. Returns how many of B's ids repeat A's, after checking that A stopped.
fn repeats_after_recreation(
    scheme: &Scheme,
    tick_ns: u64,
    policy: Policy,
    durable: bool,
    per_moment: usize,
    name: &str,
) -> usize {
    let d = dir(name);
    let mut state = StateOptions::new(d.join("s.state"));
    state.durable = durable;
    let time = ManualClock::new(T0);
    // A new file starts at the tick after the clock's plus the lead a predecessor may have
    // issued at: its first id waits for the clock to get there.
    let lead = idforge::shm::fresh_lead(&policy, durable).as_nanos() as u64;
    let a = Generator::host_wide(scheme, Some(3), time.clone(), policy, &state).unwrap();
    time.advance(tick_ns + lead);
    let mut issued = HashSet::new();
    // Ten moments in the first tenth of a tick, `per_moment` ids at each.
    for _ in 0..10 {
        for _ in 0..per_moment {
            issued.insert(a.next().unwrap());
        }
        time.advance(tick_ns / 100);
    }
    std::fs::remove_file(&state.path).unwrap();
    time.advance(2 * MS); // still inside the tick for every layout here
    let b = Generator::host_wide(scheme, Some(3), time.clone(), policy, &state).unwrap();
    // A notices the deletion on its next call and issues nothing more.
    match a.next() {
        Err(Error::StateFile(StateFileError::Lost { .. })) => {}
        other => panic!("{name}: the process on the deleted file went on: {other:?}"),
    }
    // B issues on a thread while the clock moves on in steps of a twentieth of a tick, as a
    // real one would: under `Wait` B waits for its first tick to come, but issues from there.
    let b = std::sync::Arc::new(b);
    let issuer = {
        let b = b.clone();
        std::thread::spawn(move || (0..200).map(|_| b.next().unwrap()).collect::<Vec<u128>>())
    };
    let mut moved = 0;
    while !issuer.is_finished() {
        assert!(
            moved < 2 * (tick_ns + lead + MS),
            "{name}: B issued nothing in two ticks and its lead"
        );
        std::thread::sleep(Duration::from_millis(1));
        time.advance(tick_ns / 20);
        moved += tick_ns / 20;
    }
    let ids = issuer.join().unwrap();
    let _ = std::fs::remove_dir_all(&d);
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "{name}: B out of order"
    );
    ids.iter().filter(|id| issued.contains(id)).count()
}

#[test]
fn a_file_created_again_inside_a_100_ms_tick_repeats_nothing() {
    let n = repeats_after_recreation(
        &custom("100ms"),
        100 * MS,
        Policy::DEFAULT,
        false,
        200,
        "custom100",
    );
    assert_eq!(n, 0, "{n} ids of the new file repeat the deleted one's");
}

#[test]
fn a_sonyflake_file_created_again_inside_its_10_ms_tick_repeats_nothing() {
    let n = repeats_after_recreation(
        &Scheme::Sonyflake,
        10 * MS,
        Policy::DEFAULT,
        false,
        20, // 256 ids a tick
        "sonyflake",
    );
    assert_eq!(n, 0, "{n} ids of the new file repeat the deleted one's");
}

#[test]
fn a_durable_file_on_a_2_s_tick_created_again_repeats_nothing() {
    let n = repeats_after_recreation(
        &custom("2s"),
        2_000 * MS,
        Policy::DEFAULT,
        true,
        200,
        "durable2s",
    );
    assert_eq!(n, 0, "{n} ids of the new file repeat the deleted one's");
}

#[test]
fn a_run_ahead_file_on_a_100_ms_tick_created_again_repeats_nothing() {
    let policy = Policy {
        on_exhausted: OnExhausted::RunAhead,
        max_lead: Duration::from_millis(250),
        ..Policy::DEFAULT
    };
    // 10,000 ids in a tick of 4,096: A runs two ticks ahead of its clock.
    let n = repeats_after_recreation(
        &custom("100ms"),
        100 * MS,
        policy,
        false,
        1_000,
        "runahead100",
    );
    assert_eq!(n, 0, "{n} ids of the new file repeat the deleted one's");
}

/// The creator no longer sleeps `max_lead` under the directory's lock: it starts the file ahead
/// by the lead instead (which `RunAhead` allows), so a first open costs the margin, not the lead
/// (it took 5 s with `--max-lead 5000`), and openers arriving meanwhile are not held up.
#[test]
fn a_first_open_under_run_ahead_does_not_sleep_the_lead() {
    let d = dir("nosleep");
    let state = StateOptions::new(d.join("s.state"));
    let policy = Policy {
        on_exhausted: OnExhausted::RunAhead,
        max_lead: Duration::from_secs(5),
        ..Policy::DEFAULT
    };
    let started = std::time::Instant::now();
    let g = Generator::host_wide(
        &Scheme::Snowflake,
        Some(1),
        idforge::WallClock,
        policy,
        &state,
    )
    .unwrap();
    let first = g.next().unwrap();
    let took = started.elapsed();
    let _ = std::fs::remove_dir_all(&d);
    assert!(
        took < Duration::from_secs(2),
        "opening a new state file and issuing one id took {took:?}"
    );
    // ...and the first id is ahead of the clock by about the lead, never more than allowed.
    let at = g.layout().unix_ns_of(g.layout().decode(first).ticks) as i128;
    let now = idforge::WallClock.now_ns() as i128;
    assert!(
        at - now <= Duration::from_secs(5).as_nanos() as i128 + MS as i128,
        "first id {} ns ahead of the clock",
        at - now
    );
}

/// A cheap reading that stands still (a ticker whose thread is not scheduled) beside a precise
/// one that moves, as `TickerClock` has them.
#[derive(Clone)]
struct StoppedTicker {
    cheap: u64,
    precise: ManualClock,
}

impl Clock for StoppedTicker {
    fn now_ns(&self) -> u64 {
        self.cheap
    }
    fn now_precise_ns(&self) -> u64 {
        self.precise.now_ns()
    }
    fn max_error_ns(&self) -> u64 {
        50_000
    }
    fn pause(&self, _ns: u64) {
        std::thread::yield_now();
    }
}

/// Before: with a ticker's thread stopped, a process went on issuing from a deleted state
/// file for seconds (its check keys on clock or stamp time, and the clock stood still). What
/// holds, and is asserted here: such a process issues only stamps of its stale reading's tick
/// (anything else is decided on a precise reading, which also makes it check its file), so its
/// ids stay below the new file's first stamp, and it notices the deletion once its stamps have
/// moved a check interval's worth (4,096 Snowflake ids) or its clock moves.
#[test]
fn a_process_whose_ticker_stopped_issues_below_a_new_file_and_stops_within_a_check_interval() {
    let d = dir("stopped-ticker");
    let state = StateOptions::new(d.join("s.state"));
    let time = ManualClock::new(T0);
    // The file is created, then the clock moves into the next tick and A's ticker stops there.
    let creator = Generator::host_wide(
        &Scheme::Snowflake,
        Some(4),
        time.clone(),
        Policy::DEFAULT,
        &state,
    )
    .unwrap();
    drop(creator);
    time.advance(MS + MS / 2);
    let a = Generator::host_wide(
        &Scheme::Snowflake,
        Some(4),
        StoppedTicker {
            cheap: time.now_ns(),
            precise: time.clone(),
        },
        Policy::DEFAULT,
        &state,
    )
    .unwrap();
    let mut issued = HashSet::new();
    for _ in 0..10 {
        issued.insert(a.next().unwrap());
    }
    std::fs::remove_file(&state.path).unwrap();
    time.advance(5_000 * MS); // the real time moves on; A's ticker does not
    let b = Generator::host_wide(
        &Scheme::Snowflake,
        Some(4),
        time.clone(),
        Policy::DEFAULT,
        &state,
    )
    .unwrap();
    time.advance(2 * MS);
    let from_b: Vec<u128> = (0..1_000).map(|_| b.next().unwrap()).collect();
    let mut after = 0;
    let stopped = loop {
        match a.next() {
            Ok(id) => {
                after += 1;
                issued.insert(id);
                assert!(after <= 4_096, "A went on past a check interval of stamps");
            }
            Err(e) => break e,
        }
    };
    let _ = std::fs::remove_dir_all(&d);
    assert!(
        matches!(stopped, Error::StateFile(StateFileError::Lost { .. })),
        "{stopped:?}"
    );
    let repeats = from_b.iter().filter(|id| issued.contains(id)).count();
    assert_eq!(repeats, 0, "{repeats} of B's ids repeat A's");
}
