//! `fork()` of a process holding a fleet lease (in-memory store). The lease, its token, its
//! reservation and the stamp of the leased cell are the joining process's: a forked child's
//! cell refuses every id, and its copy of the member gives nothing back. Each test forks real
//! children; a child reports through a pipe.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::{OpenOptions, Opened};
use idforge::{OnClockBehind, OnExhausted, Policy};
use idforge_fleet::{FleetOptions, Member, MemoryStore, Store};

/// What a child reports: the ids it was given, how many calls were refused with the forked
/// message, and how many with another error.
#[derive(Debug, Default)]
struct Report {
    ids: Vec<u128>,
    refused_forked: u64,
    refused_other: u64,
    /// Whether the child's [`Member::status`] said it may not issue, because of the fork.
    status_says_forked: bool,
    /// Whether dropping its copy of the member returned (within 2 s).
    drop_returned: bool,
    /// After dropping its copy of the member: the store calls its copy of the store saw, and
    /// whether the node key is still held there.
    calls_after_drop: u64,
    still_held: bool,
}

impl Report {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [
            self.ids.len() as u128,
            u128::from(self.refused_forked),
            u128::from(self.refused_other),
            u128::from(self.calls_after_drop),
            u128::from(self.still_held),
            u128::from(self.status_says_forked),
            u128::from(self.drop_returned),
        ] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        for id in &self.ids {
            b.extend_from_slice(&id.to_ne_bytes());
        }
        b
    }

    fn decode(b: &[u8]) -> Report {
        let w: Vec<u128> = b
            .chunks_exact(16)
            .map(|c| u128::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert!(
            w.len() >= 7,
            "a child sent a short report ({} bytes)",
            b.len()
        );
        Report {
            ids: w[7..].to_vec(),
            status_says_forked: w[5] != 0,
            drop_returned: w[6] != 0,
            refused_forked: w[1] as u64,
            refused_other: w[2] as u64,
            calls_after_drop: w[3] as u64,
            still_held: w[4] != 0,
        }
    }
}

/// Forks `children` processes; each runs `f()` and sends its report back, then `_exit`s. The
/// parent runs `parent()` meanwhile (right after the forks). Returns the children's reports,
/// after each has exited 0, and what `parent()` returned.
fn forked_children<P>(
    children: usize,
    f: impl Fn() -> Report,
    parent: impl FnOnce() -> P,
) -> (Vec<Report>, P) {
    let mut pipes = Vec::new();
    for _ in 0..children {
        let mut fds = [0i32; 2];
        // SAFETY: pipe(2) into a two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child computes its report, writes it to the pipe and _exits without running
        // the harness's destructors.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // A panic must not unwind into the test harness's copy in the child.
            let Ok(report) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&f)) else {
                // SAFETY: leave at once, failed.
                unsafe { libc::_exit(3) }
            };
            let bytes = report.encode();
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
    let mine = parent();
    let mut reports = Vec::new();
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
        reports.push(Report::decode(&buf));
    }
    (reports, mine)
}

/// A Snowflake member (long lease: its renewal thread sleeps through the test, so no lock of the
/// store is held at a fork) and a generator on its cell running ahead of the clock: the stamp is
/// ahead at the fork, so parent and children continue from the same one unless something keeps
/// them apart.
fn leased_snowflake(mem: &Arc<MemoryStore>, ns: &str) -> (Member, Opened) {
    let kind = Kind::from_name("snowflake", None).unwrap();
    let mut o = FleetOptions::new(ns, &kind, &OpenOptions::default()).unwrap();
    o.ttl = Duration::from_secs(30);
    o.reserve_ahead = Duration::from_secs(8);
    let store: Arc<dyn Store> = mem.clone();
    let m = Member::join(store, o).unwrap();
    let g = Opened::open(
        &kind,
        &OpenOptions {
            node: Some(m.node()),
            cell: Some(m.cell()),
            policy: Some(Policy {
                on_exhausted: OnExhausted::RunAhead,
                max_lead: Duration::from_secs(1),
                on_clock_behind: OnClockBehind::Fail,
            }),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    (m, g)
}

/// Before: parent and 2 children issued 3,000 ids, 1,000 distinct.
#[test]
fn a_forked_child_of_a_lease_holder_issues_nothing_and_the_parent_goes_on() {
    let mem = Arc::new(MemoryStore::new());
    let (m, g) = leased_snowflake(&mem, "fork");
    // In use before the fork (a prefork server), 8 ticks ahead of the clock.
    for _ in 0..8 * 4096 {
        g.next().unwrap();
    }
    let node = m.node();
    let calls_at_fork = mem.calls();
    let m = std::sync::Mutex::new(Some(m));
    let (reports, parent) = forked_children(
        2,
        || {
            let mut r = Report::default();
            for _ in 0..1000 {
                match g.next() {
                    Ok(id) => r.ids.push(id),
                    Err(e)
                        if e.to_string()
                            .contains("was forked from the holder of the lease") =>
                    {
                        r.refused_forked += 1
                    }
                    Err(_) => r.refused_other += 1,
                }
            }
            let st = m.lock().unwrap().as_ref().unwrap().status();
            r.status_says_forked = !st.issuing && st.lost.is_some_and(|l| l.contains("forked"));
            // The child's copy of the member is dropped: it must neither wait for the parent's
            // renewal thread (which does not exist here) nor give the parent's node id back.
            let copy = m.lock().unwrap().take();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                drop(copy);
                let _ = tx.send(());
            });
            r.drop_returned = rx.recv_timeout(Duration::from_secs(2)).is_ok();
            r.calls_after_drop = mem.calls() - calls_at_fork;
            r.still_held = mem.scan("fork").unwrap().held.contains(&node);
            r
        },
        || (0..1000).map(|_| g.next().unwrap()).collect::<Vec<u128>>(),
    );
    let mut all: HashSet<u128> = parent.iter().copied().collect();
    for r in &reports {
        let repeated = r.ids.iter().filter(|id| !all.insert(**id)).count();
        assert_eq!(
            r.ids.len(),
            0,
            "a forked child issued {} ids from its parent's lease ({repeated} of them the parent's too)",
            r.ids.len()
        );
        assert_eq!(
            (r.refused_forked, r.refused_other),
            (1000, 0),
            "every call refused, saying why"
        );
        assert!(r.status_says_forked, "the child's status says it may issue");
        assert!(
            r.drop_returned,
            "dropping the child's copy of the member hung"
        );
        assert_eq!(r.calls_after_drop, 0, "the child called the store");
        assert!(r.still_held, "the child gave the parent's node id back");
    }
    // The parent holds its lease and issues as before.
    let m = m.into_inner().unwrap().unwrap();
    assert!(m.status().issuing, "{:?}", m.status());
    m.shutdown().unwrap();
}

/// The child's way out: a membership of its own (here on its copy of the in-memory store, which
/// knows the parent's claim; against etcd it would be a new connection).
#[test]
fn a_forked_child_that_joins_again_issues_on_a_node_id_of_its_own() {
    let mem = Arc::new(MemoryStore::new());
    let (m, g) = leased_snowflake(&mem, "fork-rejoin");
    for _ in 0..8 * 4096 {
        g.next().unwrap();
    }
    let (reports, parent) = forked_children(
        1,
        || {
            let (m2, g2) = leased_snowflake(&mem, "fork-rejoin");
            assert_ne!(m2.node(), m.node());
            let r = Report {
                ids: (0..1000).map(|_| g2.next().unwrap()).collect(),
                ..Report::default()
            };
            m2.shutdown().unwrap();
            r
        },
        || {
            (0..1000)
                .map(|_| g.next().unwrap())
                .collect::<HashSet<u128>>()
        },
    );
    assert_eq!(reports[0].ids.len(), 1000);
    assert!(reports[0].ids.iter().all(|id| !parent.contains(id)));
    m.shutdown().unwrap();
}
