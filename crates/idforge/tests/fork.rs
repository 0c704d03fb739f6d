//! `fork()` with state that existed before it: a locality generator, a reserved batch, a durable
//! ceiling being raised. Each test forks real children; a child reports its ids through a pipe.
#![allow(unsafe_code)]

use std::collections::HashSet;
use std::time::{Duration, Instant};

use idforge::schemes::locality::{self, LocalityGenerator};

#[path = "common/alone.rs"]
mod alone;
use alone::in_own_process;
use idforge::{Generator, ManualClock, Policy, Scheme, StampCell, StateOptions, WallClock};

/// Forks `children` processes; each runs `f(i)` and sends its ids back. The parent runs
/// `f(children)` meanwhile. Returns every process's ids (the parent's last).
fn in_forked_children(children: usize, f: impl FnMut(usize) -> Vec<u128>) -> Vec<Vec<u128>> {
    // SAFETY: fork(2); the caller's child code only computes, writes to a pipe and _exits.
    in_children_made_by(|| unsafe { libc::fork() }, children, f)
}

unsafe extern "C" {
    /// glibc 2.34 and later (POSIX 2024): fork without running the `pthread_atfork` handlers.
    fn _Fork() -> libc::pid_t;
}

/// `fork()` itself, with the `pthread_atfork` handlers.
fn plain_fork() -> libc::pid_t {
    // SAFETY: fork(2); the caller's child code only computes, writes to a pipe and _exits.
    unsafe { libc::fork() }
}

/// `fork()` without the `pthread_atfork` handlers: `_Fork()`.
fn underscore_fork() -> libc::pid_t {
    // SAFETY: as fork(2), minus the handlers.
    unsafe { _Fork() }
}

/// `fork()` as a raw `clone(SIGCHLD)` system call: no handlers, no libc bookkeeping.
fn raw_clone() -> libc::pid_t {
    // SAFETY: clone with only SIGCHLD is fork(2) at the system-call level; the child only
    // computes, writes to a pipe and _exits.
    unsafe {
        libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0) as libc::pid_t
    }
}

/// As [`in_forked_children`], with the children made by `fork`.
fn in_children_made_by(
    fork: impl Fn() -> libc::pid_t,
    children: usize,
    mut f: impl FnMut(usize) -> Vec<u128>,
) -> Vec<Vec<u128>> {
    let mut pipes = Vec::new();
    for i in 0..children {
        let mut fds = [0i32; 2];
        // SAFETY: pipe(2) into a two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // The child computes its ids, writes them to the pipe and _exits without running the
        // harness's destructors.
        let pid = fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ids = f(i);
            let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_ne_bytes()).collect();
            let mut off = 0;
            while off < bytes.len() {
                // SAFETY: writing an initialised buffer to our pipe.
                let w =
                    unsafe { libc::write(fds[1], bytes[off..].as_ptr().cast(), bytes.len() - off) };
                if w <= 0 {
                    break;
                }
                off += w as usize;
            }
            // SAFETY: leave at once.
            unsafe { libc::_exit(0) };
        }
        // SAFETY: close our copy of the write end.
        unsafe { libc::close(fds[1]) };
        pipes.push((pid, fds[0]));
    }
    let mine = f(children);
    let mut all = Vec::new();
    for (pid, fd) in pipes {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        loop {
            // SAFETY: reading into a local buffer of the given size.
            let r = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
            if r <= 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..r as usize]);
        }
        let mut status = 0;
        // SAFETY: closing our read end, waiting for our own child.
        unsafe {
            libc::close(fd);
            libc::waitpid(pid, &mut status, 0);
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child failed: {status}"
        );
        all.push(
            buf.chunks_exact(16)
                .map(|c| u128::from_ne_bytes(c.try_into().unwrap()))
                .collect(),
        );
    }
    all.push(mine);
    all
}

fn distinct(all: &[Vec<u128>]) -> usize {
    all.iter().flatten().collect::<HashSet<_>>().len()
}

/// One millisecond, frozen: every id of every process carries the same time, so only the counter
/// can keep them apart.
const T_MS: u64 = 1_800_000_000_000;

fn locality_on_frozen_clock(pid: Option<u64>) -> LocalityGenerator<ManualClock> {
    let b = LocalityGenerator::builder()
        .clock(ManualClock::new(T_MS * 1_000_000))
        .mac_fragment(0xabc_def0);
    match pid {
        Some(p) => b.pid(p),
        None => b,
    }
    .build()
    .unwrap()
}

#[test]
fn locality_parent_and_forked_children_never_repeat_an_id() {
    for pid in [None, Some(7)] {
        let g = locality_on_frozen_clock(pid);
        let _ = g.next(); // the generator is in use before the fork (a prefork server)
        let all = in_forked_children(4, |_| (0..100).map(|_| g.next().as_u128()).collect());
        assert_eq!(all.iter().map(Vec::len).sum::<usize>(), 500);
        assert_eq!(
            distinct(&all),
            500,
            "pid {pid:?}: parent and children repeated each other's ids"
        );
    }
}

/// Makes this thread hold a block of `g`'s positions (a thread reserves one after it saw another
/// thread take a position between two of its own); asserts that the state word is 31 to 62
/// positions past the last id.
fn hold_a_locality_block(g: &LocalityGenerator<ManualClock>) -> Vec<u128> {
    let mut ids = vec![g.next().as_u128()];
    ids.push(std::thread::scope(|s| {
        s.spawn(|| g.next().as_u128()).join().unwrap()
    }));
    ids.push(g.next().as_u128());
    let last = g.next();
    ids.push(last.as_u128());
    let ahead = g
        .counter()
        .wrapping_sub(last.counter_reversed().unwrap())
        .wrapping_mul(locality_prime_inverse());
    assert!((31..=62).contains(&ahead), "no block held ({ahead})");
    ids
}

fn locality_prime_inverse() -> u32 {
    let p = locality::PRIME;
    let mut inv = p;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(p.wrapping_mul(inv)));
    }
    inv
}

/// The forking thread holds a block of positions: the child (made by `fork`, `_Fork` or a raw
/// `clone`) must not go on with it while the parent does.
#[test]
fn a_locality_block_held_at_a_fork_is_not_issued_twice() {
    if in_own_process("a_locality_block_held_at_a_fork_is_not_issued_twice") {
        return;
    }
    for (how, fork) in [
        ("fork", plain_fork as fn() -> libc::pid_t),
        ("_Fork", underscore_fork),
        ("clone", raw_clone),
    ] {
        let g = locality_on_frozen_clock(None);
        let before = hold_a_locality_block(&g);
        let all = in_children_made_by(fork, 2, |_| (0..100).map(|_| g.next().as_u128()).collect());
        let mut seen: HashSet<u128> = before.into_iter().collect();
        let repeated = all.iter().flatten().filter(|id| !seen.insert(**id)).count();
        assert_eq!(
            repeated, 0,
            "{how}: {repeated} ids issued twice across the fork"
        );
    }
}

#[test]
fn locality_sequential_mode_across_a_fork_never_repeats() {
    let g = locality_on_frozen_clock(Some(9));
    g.use_sequential();
    let _ = g.next();
    // Children switch modes back and forth while the parent takes ids: one sequence for all.
    let all = in_forked_children(3, |i| {
        let mut ids = Vec::new();
        for round in 0..20 {
            if (round + i) % 3 == 0 {
                g.use_variable();
            } else {
                g.use_sequential();
            }
            ids.extend((0..10).map(|_| g.next().as_u128()));
        }
        ids
    });
    assert_eq!(all.iter().map(Vec::len).sum::<usize>(), 800, "ids lost");
    let mut seen = std::collections::HashMap::new();
    for (p, ids) in all.iter().enumerate() {
        for (k, id) in ids.iter().enumerate() {
            if let Some((q, j)) = seen.insert(*id, (p, k)) {
                panic!("{id:032x}: process {p} id {k} repeats process {q} id {j}");
            }
        }
    }
}

#[test]
fn the_process_wide_locality_generator_is_shared_with_forked_children() {
    let _ = locality::shared().next();
    let all = in_forked_children(4, |_| {
        (0..2_000)
            .map(|_| locality::shared().next().as_u128())
            .collect()
    });
    assert_eq!(distinct(&all), 10_000);
}

/// Snowflake (no random bits) on a frozen clock: only the stamps keep its ids apart.
fn frozen_snowflake() -> Generator<ManualClock> {
    Generator::with_clock(
        &Scheme::Snowflake,
        Some(3),
        ManualClock::new(T_MS * 1_000_000),
        Policy::DEFAULT,
    )
    .unwrap()
}

#[test]
fn a_batch_reserved_before_a_fork_is_not_issued_twice() {
    // Snowflake has no random bits: only the stamps keep ids apart.
    let g = frozen_snowflake();
    let mut batch = g.reserve(64).unwrap();
    let first = batch.next().unwrap();
    // Parent and child each drain their copy of the batch (63 ids left), then take 10 more.
    let all = in_forked_children(1, |_| {
        let mut ids: Vec<u128> = batch.by_ref().collect();
        ids.extend((0..10).map(|_| g.next().unwrap()));
        ids
    });
    assert_eq!(all[1].len(), 73, "the parent keeps its whole batch");
    assert_eq!(all[0].len(), 73, "the child gets as many fresh ids");
    let mut seen: HashSet<u128> = HashSet::from([first]);
    for id in all.iter().flatten() {
        assert!(seen.insert(*id), "id {id:#x} issued twice across the fork");
    }
}

#[test]
fn a_per_thread_block_taken_before_a_fork_is_not_issued_twice() {
    // Snowflake has no random bits and the clock is frozen: only the stamps keep ids apart.
    let g = frozen_snowflake();
    let mut blocks = g.blocks(64);
    let first = blocks.next().unwrap();
    // Parent and child each hold the rest of the block (63 stamps); each takes 100 ids.
    let all = in_forked_children(2, |_| (0..100).map(|_| blocks.next().unwrap()).collect());
    let mut seen: HashSet<u128> = HashSet::from([first]);
    for (i, ids) in all.iter().enumerate() {
        assert!(ids.windows(2).all(|w| w[1] > w[0]), "process {i} went down");
        for id in ids {
            assert!(seen.insert(*id), "id {id:#x} issued twice across the fork");
        }
    }
    assert_eq!(all[2][0], first + 1, "the parent keeps its block");
}

/// A child made without the `pthread_atfork` handlers (`_Fork`, a raw `clone`) copied the
/// parent's batch and block and issued them again: fork detection now also reads a
/// `MADV_WIPEONFORK` page, which the kernel zeroes in every such child.
#[test]
fn a_batch_and_a_block_are_not_issued_twice_across_a_fork_without_handlers() {
    if in_own_process("a_batch_and_a_block_are_not_issued_twice_across_a_fork_without_handlers") {
        return;
    }
    for (how, fork) in [
        ("_Fork", underscore_fork as fn() -> libc::pid_t),
        ("clone", raw_clone),
    ] {
        let g = frozen_snowflake();
        let mut batch = g.reserve(64).unwrap();
        let mut blocks = g.blocks(64);
        let first = [batch.next().unwrap(), blocks.next().unwrap()];
        let all = in_children_made_by(fork, 1, |_| {
            let mut ids: Vec<u128> = batch.by_ref().collect();
            ids.extend((0..100).map(|_| blocks.next().unwrap()));
            ids
        });
        let mut seen: HashSet<u128> = HashSet::from(first);
        let repeated = all.iter().flatten().filter(|id| !seen.insert(**id)).count();
        assert_eq!(
            repeated, 0,
            "{how}: {repeated} ids issued twice across the fork"
        );
    }
}

#[test]
fn a_forked_child_starts_its_own_ticker() {
    use idforge::ticker::TickerClock;
    use idforge::Clock;
    let ticker = TickerClock::start().unwrap();
    // Each process reads the ticker, waits 20 ms and reads it again: in the child the parent's
    // refreshing thread does not exist, so without a new one the value would stand still.
    let all = in_forked_children(2, |_| {
        let a = ticker.now_ns();
        std::thread::sleep(Duration::from_millis(20));
        let b = ticker.now_ns();
        std::thread::sleep(Duration::from_millis(20));
        vec![a as u128, b as u128, ticker.now_ns() as u128]
    });
    for (i, r) in all.iter().enumerate() {
        assert!(r[2] > r[1], "process {i}: the ticker stood still ({r:?})");
    }
}

#[test]
fn a_fork_while_another_thread_raises_the_durable_ceiling_never_deadlocks_the_child() {
    let d = std::env::temp_dir().join(format!("idforge-fork-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let mut state = StateOptions::new(d.join("d.state"));
    state.durable = true;
    let g = Generator::host_wide(
        &Scheme::GlobalId,
        Some(1),
        WallClock,
        Scheme::GlobalId.default_policy(),
        &state,
    )
    .unwrap();
    let cell = g.sequencer().cell();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        // A thread that raises the ceiling (an msync each time) without pause.
        s.spawn(|| {
            let mut needed = cell.ceiling();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                needed = needed.saturating_add(1 << 20);
                cell.raise_ceiling(needed).unwrap();
            }
        });
        for round in 0..40 {
            // SAFETY: the child raises the ceiling once and _exits.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                let ok = cell.raise_ceiling(cell.ceiling().saturating_add(1)).is_ok();
                // SAFETY: leave at once.
                unsafe { libc::_exit(if ok { 0 } else { 3 }) };
            }
            let start = Instant::now();
            let mut status = 0;
            loop {
                // SAFETY: polling our own child.
                let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                if r == pid {
                    break;
                }
                if start.elapsed() > Duration::from_secs(5) {
                    // SAFETY: killing and reaping our own stuck child.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    panic!("fork round {round}: the child hung raising the durable ceiling");
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "round {round}: child status {status}"
            );
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_forked_child_draws_other_uuid7_random_bits_by_default() {
    let g = Generator::new(&Scheme::Uuid7, None).unwrap();
    assert_eq!(g.random_source(), idforge::RandomSource::Secure);
    let _ = g.next();
    let all = in_forked_children(1, |_| (0..100).map(|_| g.next().unwrap()).collect());
    let low = |v: &Vec<u128>| {
        v.iter()
            .map(|id| id & ((1 << 58) - 1))
            .collect::<HashSet<_>>()
    };
    assert!(low(&all[0]).is_disjoint(&low(&all[1])));
}

#[test]
fn a_forked_child_draws_other_random_bits_with_either_source() {
    // Each source's per-thread generator exists in the parent before the fork; the child must
    // reseed (the fork counter of `pthread_atfork`), not repeat the parent's bits.
    for source in [idforge::RandomSource::Secure, idforge::RandomSource::Fast] {
        let g = Generator::new(&Scheme::Uuid7, None)
            .unwrap()
            .with_random(source);
        let _ = g.next();
        let all = in_forked_children(1, |_| (0..100).map(|_| g.next().unwrap()).collect());
        let low = |v: &Vec<u128>| {
            v.iter()
                .map(|id| id & ((1 << 58) - 1))
                .collect::<HashSet<_>>()
        };
        assert!(low(&all[0]).is_disjoint(&low(&all[1])), "{source:?}");
    }
}
