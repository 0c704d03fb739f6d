//! A child of a lease holder made without the `pthread_atfork` handlers: `_Fork()` (POSIX
//! 2024, glibc 2.34 and later) or a raw `clone(SIGCHLD)` system call. The per-id check compared
//! only the handlers' fork counter, so such a child issued ids from the parent's leased cell
//! until the copied ceiling (an attack review: 20,248 of 25,000 `_Fork` children's ids and
//! 15,955 of 25,000 raw-clone children's ids were the parent's too). The core's fork count now
//! also reads a `MADV_WIPEONFORK` page, which the kernel zeroes in every child that gets a copy
//! of the address space. `libc::fork()` for contrast, and a fork from a thread while others
//! issue and renew, with a `Batch` and `Blocks` made before it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::{OpenOptions, Opened};
use idforge_fleet::{FleetOptions, Member, MemoryStore, Store};

#[path = "../../idforge/tests/common/alone.rs"]
mod alone;
use alone::in_own_process;

extern "C" {
    /// glibc >= 2.34: fork without running the atfork handlers (async-signal-safe).
    fn _Fork() -> libc::pid_t;
}

fn leased(mem: &Arc<MemoryStore>, ns: &str) -> (Member, Opened) {
    let kind = Kind::from_name("snowflake", None).unwrap();
    let mut o = FleetOptions::new(ns, &kind, &OpenOptions::default()).unwrap();
    o.ttl = Duration::from_secs(30);
    let store: Arc<dyn Store> = mem.clone();
    let m = Member::join(store, o).unwrap();
    let g = Opened::open(
        &kind,
        &OpenOptions {
            node: Some(m.node()),
            cell: Some(m.cell()),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    (m, g)
}

#[derive(Clone, Copy, Debug)]
enum How {
    Fork,
    UnderscoreFork,
    RawClone,
}

/// Forks with `how`; the child issues `n` ids (pipe), the parent issues `n` too. Returns
/// (child ids, child refusals, parent ids).
fn run(how: How, n: usize) -> (Vec<u128>, usize, Vec<u128>) {
    let mem = Arc::new(MemoryStore::new());
    let (m, g) = leased(&mem, &format!("fork-{how:?}"));
    for _ in 0..1000 {
        g.next().unwrap();
    }
    let mut fds = [0i32; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let pid = unsafe {
        match how {
            How::Fork => libc::fork(),
            How::UnderscoreFork => _Fork(),
            How::RawClone => {
                libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0)
                    as libc::pid_t
            }
        }
    };
    assert!(pid >= 0);
    if pid == 0 {
        let mut out: Vec<u8> = Vec::new();
        let mut refused = 0u128;
        let mut ids = Vec::new();
        for _ in 0..n {
            match g.next() {
                Ok(id) => ids.push(id),
                Err(_) => refused += 1,
            }
        }
        out.extend_from_slice(&refused.to_ne_bytes());
        for id in ids {
            out.extend_from_slice(&id.to_ne_bytes());
        }
        let mut off = 0;
        while off < out.len() {
            let w = unsafe { libc::write(fds[1], out[off..].as_ptr().cast(), out.len() - off) };
            if w <= 0 {
                break;
            }
            off += w as usize;
        }
        unsafe { libc::_exit(0) };
    }
    unsafe { libc::close(fds[1]) };
    let parent: Vec<u128> = (0..n).map(|_| g.next().unwrap()).collect();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let r = unsafe { libc::read(fds[0], chunk.as_mut_ptr().cast(), chunk.len()) };
        if r <= 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..r as usize]);
    }
    let mut st = 0;
    unsafe {
        libc::close(fds[0]);
        libc::waitpid(pid, &mut st, 0);
    }
    let w: Vec<u128> = buf
        .chunks_exact(16)
        .map(|c| u128::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    m.shutdown().unwrap();
    (w[1..].to_vec(), w[0] as usize, parent)
}

/// 5 rounds; returns (ids the children issued, ids issued by both parent and child).
fn report(how: How) -> (usize, usize) {
    let (mut issued, mut dups) = (0, 0);
    for round in 0..5 {
        let (child, refused, parent) = run(how, 5000);
        let p: HashSet<u128> = parent.iter().copied().collect();
        let dup = child.iter().filter(|id| p.contains(id)).count();
        eprintln!(
            "{how:?} round {round}: child issued {} ids ({refused} refused), parent {}; ids issued by both: {dup}",
            child.len(),
            parent.len()
        );
        issued += child.len();
        dups += dup;
    }
    (issued, dups)
}

#[test]
fn a_child_made_by_fork_is_refused() {
    assert_eq!(report(How::Fork), (0, 0));
}

#[test]
fn a_child_made_by_underscore_fork_is_refused() {
    if in_own_process("a_child_made_by_underscore_fork_is_refused") {
        return;
    }
    let (issued, dup) = report(How::UnderscoreFork);
    assert_eq!((issued, dup), (0, 0), "_Fork() children issued {issued} ids from the parent's lease, {dup} of them the parent's too");
}

#[test]
fn a_child_made_by_a_raw_clone_is_refused() {
    if in_own_process("a_child_made_by_a_raw_clone_is_refused") {
        return;
    }
    let (issued, dup) = report(How::RawClone);
    assert_eq!((issued, dup), (0, 0), "clone(SIGCHLD) children issued {issued} ids from the parent's lease, {dup} of them the parent's too");
}

/// libc::fork() from a thread while 4 threads issue and the renewal thread is busy (T = 2 s,
/// R = 400 ms: a renewal every 100 ms); a Batch and a Blocks made before the fork are used in the
/// child. 20 forks; every child id counted.
#[test]
fn fork_from_a_thread_while_others_issue_and_renewals_run() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mem = Arc::new(MemoryStore::new());
    let kind = Kind::from_name("snowflake", None).unwrap();
    let mut o = FleetOptions::new("fork-busy", &kind, &OpenOptions::default()).unwrap();
    o.ttl = Duration::from_secs(2);
    o.reserve_ahead = Duration::from_millis(400);
    let store: Arc<dyn Store> = mem.clone();
    let m = Member::join(store, o).unwrap();
    let tb = kind.timebase(&OpenOptions::default()).unwrap().unwrap();
    let seq = idforge::Sequencer::with_cell(
        idforge::WallClock,
        m.cell(),
        tb,
        idforge::Scheme::Snowflake.default_policy(),
    )
    .unwrap();
    let gen = idforge::Generator::with_sequencer(&idforge::Scheme::Snowflake, Some(m.node()), seq)
        .unwrap();
    let (g, gen) = (&gen, &gen);
    let stop = AtomicBool::new(false);
    let mut child_ids = 0usize;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let _ = g.next();
                }
            });
        }
        let forker = s.spawn(|| {
            let mut n = 0usize;
            for _ in 0..20 {
                let mut batch = gen.reserve(64).unwrap();
                let _ = batch.next();
                let mut blocks = gen.blocks(64);
                let _ = blocks.next();
                std::thread::sleep(Duration::from_millis(37));
                let mut fds = [0i32; 2];
                assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    let mut k: u64 = 0;
                    for _ in 0..500 {
                        k += u64::from(g.next().is_ok());
                        k += u64::from(blocks.next().is_ok());
                    }
                    k += batch.count() as u64;
                    unsafe {
                        libc::write(fds[1], (&k as *const u64).cast(), 8);
                        libc::_exit(0)
                    };
                }
                let mut k = 0u64;
                unsafe {
                    libc::close(fds[1]);
                    libc::read(fds[0], (&mut k as *mut u64).cast(), 8);
                    libc::close(fds[0]);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
                n += k as usize;
            }
            n
        });
        child_ids = forker.join().unwrap();
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!("20 children issued {child_ids} ids");
    assert_eq!(child_ids, 0);
    assert!(m.status().issuing);
    m.shutdown().unwrap();
}
