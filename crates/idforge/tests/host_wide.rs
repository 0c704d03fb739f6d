//! Host-wide and fork-safe generation: the stamp shared by processes (a state file) and by a
//! forked child (the in-process page).

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use idforge::{
    Error, Generator, ManualClock, OnClockBehind, OnExhausted, Policy, Scheme, StateFileError,
    StateOptions,
};

const MS: u64 = 1_000_000;
const T: u64 = 1_800_000_000_000 * MS; // 2027-01-15

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("idforge-hw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn parent_and_forked_child_never_collide() {
    let g = Generator::new(&Scheme::Snowflake, Some(3)).unwrap();
    let before = g.next().unwrap();
    const N: usize = 20_000;
    let mut child_ids = vec![0u128; N];
    let mut fds = [0i32; 2];
    // SAFETY: plain pipe(2) into a two-element array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only generates into preallocated memory, writes it to the pipe and
    // _exits: no allocation, no locks other than the generator's atomics.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        for slot in child_ids.iter_mut() {
            *slot = g.next().unwrap_or(0);
        }
        let bytes = child_ids.len() * 16;
        let mut off = 0;
        while off < bytes {
            // SAFETY: writing the initialised buffer's bytes to our pipe.
            let w = unsafe {
                libc::write(
                    fds[1],
                    (child_ids.as_ptr() as *const u8).add(off).cast(),
                    bytes - off,
                )
            };
            if w <= 0 {
                break;
            }
            off += w as usize;
        }
        // SAFETY: leave the child at once, without running the test harness's destructors.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: close our copy of the write end.
    unsafe { libc::close(fds[1]) };
    let parent_ids: Vec<u128> = (0..N).map(|_| g.next().unwrap()).collect();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        // SAFETY: reading into a local buffer of the given size.
        let r = unsafe { libc::read(fds[0], chunk.as_mut_ptr().cast(), chunk.len()) };
        if r <= 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..r as usize]);
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(buf.len(), N * 16, "child wrote all its ids");
    let child: Vec<u128> = buf
        .chunks_exact(16)
        .map(|c| u128::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert!(child.iter().all(|&id| id > before));
    assert!(child.windows(2).all(|w| w[0] < w[1]));
    let all: HashSet<u128> = parent_ids.iter().chain(child.iter()).copied().collect();
    assert_eq!(all.len(), 2 * N, "parent and child issued the same id");
}

/// GlobalId (128 ids per ms, no random bits) allowed to run up to 2 s ahead of its clock: every
/// generator that starts within 2 s of another runs through the same ticks, so only a shared stamp
/// keeps their ids apart.
const RUN_AHEAD_2S: Policy = Policy {
    on_exhausted: OnExhausted::RunAhead,
    max_lead: Duration::from_secs(2),
    on_clock_behind: OnClockBehind::Fail,
};

#[test]
fn generators_on_one_state_file_share_one_sequence() {
    // Four generators, each with its own mapping of one state file, in four threads, on one frozen
    // clock: each takes 50,000 GlobalId ids (390 ms of ticks at 128 per ms). On private copies of
    // the page each would issue the same 50,000 ids from the same tick; sharing the stamp, they
    // take 200,000 distinct ids between them.
    let d = tmpdir("share");
    let state = StateOptions::new(d.join("global-id.state"));
    let clock = ManualClock::new(T);
    let gens: Vec<_> = (0..4)
        .map(|_| {
            Generator::host_wide(
                &Scheme::GlobalId,
                Some(5),
                clock.clone(),
                RUN_AHEAD_2S,
                &state,
            )
            .unwrap()
        })
        .collect();
    // A new state file starts past the lead its predecessors could have issued at (2 s under
    // this policy): move the clock there, so the generators have the whole lead to run ahead.
    clock.advance(2_000 * MS + MS);
    let start = std::sync::Barrier::new(gens.len());
    let per: Vec<Vec<u128>> = std::thread::scope(|s| {
        let hs: Vec<_> = gens
            .iter()
            .map(|g| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    (0..50_000).map(|_| g.next().unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = HashSet::new();
    let mut duplicates = 0;
    for v in &per {
        assert!(
            v.windows(2).all(|w| w[0] < w[1]),
            "each generator's ids increase"
        );
        duplicates += v.iter().filter(|&&id| !all.insert(id)).count();
    }
    assert_eq!(
        duplicates, 0,
        "{duplicates} of 200,000 ids were issued twice: the generators do not share the state file's stamp"
    );
    // One sequence: the 200,000 stamps are consecutive from the new file's first tick (the
    // one after the lead), the last 1.56 s ahead of it.
    let layout = Scheme::GlobalId.layout();
    let top = all.iter().map(|&id| layout.decode(id).ticks).max().unwrap();
    assert_eq!(top as u64, T / MS + 2_001 + (200_000 - 1) / 128);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_restart_whose_clock_is_behind_continues_above_the_file() {
    let d = tmpdir("behind");
    let state = StateOptions::new(d.join("sf.state"));
    let clock = ManualClock::new(T);
    let a = Generator::host_wide(
        &Scheme::Snowflake,
        Some(1),
        clock.clone(),
        Policy::DEFAULT,
        &state,
    )
    .unwrap();
    clock.advance(MS); // a new file's first id is in the tick after its creator's reading
    let last_a = (0..4_000).map(|_| a.next().unwrap()).last().unwrap_or(0);
    drop(a);
    // The "restarted process" reads a clock 500 ms behind: within the default 1 s bound it keeps
    // counting up from the file's stamp.
    let clock = ManualClock::new(T - 500 * MS);
    let b =
        Generator::host_wide(&Scheme::Snowflake, Some(1), clock, Policy::DEFAULT, &state).unwrap();
    assert!(b.next().unwrap() > last_a);
    drop(b);
    // An hour behind: refused (never a repeat), and said so.
    let clock = ManualClock::new(T - 3_600_000 * MS);
    let c =
        Generator::host_wide(&Scheme::Snowflake, Some(1), clock, Policy::DEFAULT, &state).unwrap();
    assert!(matches!(c.next(), Err(Error::ClockBehind { .. })));
    // Another policy on the same file is refused, naming both policies.
    let e = Generator::host_wide(
        &Scheme::Snowflake,
        Some(1),
        ManualClock::new(T),
        Policy::UNBOUNDED,
        &state,
    )
    .unwrap_err();
    assert!(e.to_string().contains("wait/1000000000ns/fail"), "{e}");
    // With an unbounded lead (on a file of that policy) a restart continues above the file, an
    // hour ahead of its clock.
    let unbounded = StateOptions::new(d.join("unbounded.state"));
    let open = |t: u64| {
        Generator::host_wide(
            &Scheme::Snowflake,
            Some(1),
            ManualClock::new(t),
            Policy::UNBOUNDED,
            &unbounded,
        )
        .unwrap()
    };
    let first_run = open(T);
    let last_a = (0..4_000)
        .map(|_| first_run.next().unwrap())
        .max()
        .unwrap_or(0);
    drop(first_run);
    let d2 = open(T - 3_600_000 * MS);
    assert!(d2.next().unwrap() > last_a);
    assert!(d2.sequencer().lead() >= Duration::from_secs(3599));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn durable_mode_survives_a_lost_stamp_and_a_clock_stepped_back() {
    let d = tmpdir("durable");
    let mut state = StateOptions::new(d.join("d.state"));
    state.durable = true;
    let clock = ManualClock::new(T);
    let a = Generator::host_wide(
        &Scheme::GlobalId,
        Some(9),
        clock.clone(),
        Policy::UNBOUNDED,
        &state,
    )
    .unwrap();
    let mut issued = Vec::new();
    for _ in 0..5_000 {
        issued.push(a.next().unwrap());
        clock.advance(MS / 4);
    }
    let max_issued = *issued.iter().max().unwrap();
    // Power loss: the page with the latest stamp never reached the disk, and the clock comes back
    // an hour early. Simulate the lost page by winding the stamp back to zero.
    a.sequencer().cell().force_stamp(0);
    a.sequencer().cell().forget_boot(); // the machine rebooted
    drop(a);
    let clock = ManualClock::new(T - 3_600_000 * MS);
    let b =
        Generator::host_wide(&Scheme::GlobalId, Some(9), clock, Policy::UNBOUNDED, &state).unwrap();
    let first = b.next().unwrap();
    assert!(
        first > max_issued,
        "restart after a lost stamp must start above every issued id"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn durable_restarts_within_one_boot_keep_the_stamp_under_the_default_policy() {
    let d = tmpdir("durable-restart");
    let mut state = StateOptions::new(d.join("n.state"));
    state.durable = true;
    for _ in 0..3 {
        // nanots allows only 1 ms of lead: a restart that jumped to the 1-second mark would fail.
        let g = Generator::host_wide(
            &Scheme::NanoTs,
            None,
            idforge::WallClock,
            Scheme::NanoTs.default_policy(),
            &state,
        )
        .unwrap();
        for _ in 0..1_000 {
            g.next().unwrap();
        }
        assert!(g.sequencer().lead() <= Duration::from_millis(1));
    }
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn state_files_are_bound_to_their_scheme_and_node() {
    let d = tmpdir("bound");
    let state = StateOptions::new(d.join("x.state"));
    Generator::host_wide(
        &Scheme::Snowflake,
        Some(1),
        idforge::WallClock,
        Policy::DEFAULT,
        &state,
    )
    .unwrap();
    let e = Generator::host_wide(
        &Scheme::Snowflake,
        Some(2),
        idforge::WallClock,
        Policy::DEFAULT,
        &state,
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::StateFile(StateFileError::Mismatch { .. })),
        "{e}"
    );
    let e = Generator::host_wide(
        &Scheme::GlobalId,
        Some(1),
        idforge::WallClock,
        Policy::DEFAULT,
        &state,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("separate path (`StateOptions::path`)"),
        "{e}"
    );
    let mut durable = state.clone();
    durable.durable = true;
    assert!(Generator::host_wide(
        &Scheme::Snowflake,
        Some(1),
        idforge::WallClock,
        Policy::DEFAULT,
        &durable
    )
    .is_err());
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn an_unwritable_location_is_a_clear_error() {
    let state = StateOptions::new("/proc/idforge-test/uuid7.state");
    let e = Generator::host_wide(
        &Scheme::Uuid7,
        None,
        idforge::WallClock,
        Policy::DEFAULT,
        &state,
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::StateFile(StateFileError::Io { .. })),
        "{msg}"
    );
    assert!(
        msg.contains("/proc/idforge-test") && msg.contains("StateOptions::path"),
        "{msg}"
    );
    // A file where a directory should be.
    let state = StateOptions::new("/etc/hostname/uuid7.state");
    assert!(Generator::host_wide(
        &Scheme::Uuid7,
        None,
        idforge::WallClock,
        Policy::DEFAULT,
        &state
    )
    .is_err());
}

#[test]
fn nanots_tags_share_one_state_file() {
    // Two tags on one file, in two threads, on one frozen clock: nanots has no counter (one value
    // per 32 ns tick), so each of 10,000 calls runs one tick further ahead. On private copies both
    // would take the same 10,000 ticks; on one stamp every tick is taken once, whatever the tag.
    let d = tmpdir("tags");
    let state = StateOptions::new(d.join("nanots.state"));
    let policy = Scheme::NanoTs.default_policy();
    let clock = ManualClock::new(T);
    let plain = Generator::host_wide(&Scheme::NanoTs, None, clock.clone(), policy, &state).unwrap();
    let tagged =
        Generator::host_wide(&Scheme::NanoTs, Some(3), clock.clone(), policy, &state).unwrap();
    // The new file starts past the lead a predecessor could have issued at: move the clock
    // there, so the generators have the whole lead to run ahead.
    clock.advance(idforge::shm::fresh_lead(&policy, false).as_nanos() as u64 + 100_000);
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            (0..10_000)
                .map(|_| plain.next_u64().unwrap())
                .collect::<Vec<_>>()
        });
        let b = s.spawn(|| {
            (0..10_000)
                .map(|_| tagged.next_u64().unwrap())
                .collect::<Vec<_>>()
        });
        (a.join().unwrap(), b.join().unwrap())
    });
    assert!(a.iter().all(|v| v & 31 == 0) && b.iter().all(|v| v & 31 == 3));
    let mut ticks = HashSet::new();
    let shared = a
        .iter()
        .chain(&b)
        .filter(|&&v| !ticks.insert(v >> 5))
        .count();
    assert_eq!(
        shared, 0,
        "{shared} ticks were taken by both tags: the tags do not share one stamp"
    );
    std::fs::remove_dir_all(d).unwrap();
}
