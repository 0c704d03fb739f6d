//! [`Watch`]: what a process remembers between the checks of a state file it issues from, and
//! the test "the stamp went back", apart from the file, so that a loom model can run it.
//!
//! # Why the orderings matter
//!
//! A check records the highest stamp it saw (`last_check_stamp`). A later check, in any thread
//! of the process, refuses the file as *rewound* when the cell holds less than that. The cell only
//! grows by itself, so the test is sound only if a check that reads a recorded value also sees the
//! cell at least as high as the recorder saw it. Two things make it so:
//!
//! * the record is read **before** the cell (read the other way round, another thread can issue
//!   and record a higher stamp between the two reads, and a cell that only grew looks rewound: on
//!   16 cores every thread of a shared generator refused within two seconds);
//! * the record is written with `Release` and read with `Acquire`: the recorder's CAS and its
//!   read of the cell then happen before the checker's read of the cell, which by coherence
//!   returns at least the value they wrote or read. With `Relaxed` the checker may still read an
//!   older value of the cell (allowed by the memory model, and found by the loom model below).

use std::sync::atomic::{AtomicU64, Ordering};

/// Why a process stopped issuing from its state file (`BROKEN_*`).
pub(super) const BROKEN_NONE: u64 = 0;
pub(super) const BROKEN_DELETED: u64 = 1;
pub(super) const BROKEN_REPLACED: u64 = 2;
pub(super) const BROKEN_TRUNCATED: u64 = 3;
pub(super) const BROKEN_UNCHECKABLE: u64 = 4;
pub(super) const BROKEN_REWOUND: u64 = 5;

/// The operations [`Watch`] needs of an atomic word: the standard one, and loom's in the model.
pub(super) trait Word {
    fn load(&self, order: Ordering) -> u64;
    fn store(&self, value: u64, order: Ordering);
    fn fetch_max(&self, value: u64, order: Ordering) -> u64;
    fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64>;
}

impl Word for AtomicU64 {
    #[inline]
    fn load(&self, order: Ordering) -> u64 {
        AtomicU64::load(self, order)
    }
    #[inline]
    fn store(&self, value: u64, order: Ordering) {
        AtomicU64::store(self, value, order)
    }
    #[inline]
    fn fetch_max(&self, value: u64, order: Ordering) -> u64 {
        AtomicU64::fetch_max(self, value, order)
    }
    #[inline]
    fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
        AtomicU64::compare_exchange(self, current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

/// The state of a process's checks of one state file, and the checks that compare the stamp.
pub(super) struct Watch<W> {
    /// When the file was last checked: clock ns, and the highest stamp seen then.
    last_check_ns: W,
    last_check_stamp: W,
    /// Sticky: why this process stopped issuing from the file (`BROKEN_*`).
    broken: W,
    /// Check at least this often, in clock ns and in stamps.
    check_ns: u64,
    check_stamps: u64,
}

impl<W: Word> Watch<W> {
    /// A watch that checks every `check_ns` of clock time or `check_stamps` stamps; `new` makes
    /// each word (zero).
    pub(super) fn new(check_ns: u64, check_stamps: u64, new: impl Fn() -> W) -> Self {
        Watch {
            last_check_ns: new(),
            last_check_stamp: new(),
            broken: new(),
            check_ns,
            check_stamps,
        }
    }

    /// Why the process stopped issuing (`BROKEN_NONE` while it still does).
    #[inline]
    pub(super) fn broken(&self) -> u64 {
        self.broken.load(Ordering::Relaxed)
    }

    /// Stops issuing for `why`; the first reason stays.
    pub(super) fn set_broken(&self, why: u64) {
        let _ = self.broken.compare_exchange(BROKEN_NONE, why);
    }

    /// After `stamp` was installed in `cell` from a reading of `now_ns`: compares the stamp with
    /// the last check's, and every `check_ns` (or `check_stamps`) runs `check_file` (which
    /// returns a `BROKEN_*` reason) and records this check. Returns why the process stopped
    /// issuing, `BROKEN_NONE` while it has not (between full checks, a reason another thread
    /// found is reported by the caller's own look at [`broken`](Self::broken) before the id).
    #[inline]
    pub(super) fn check_issued(
        &self,
        cell: &W,
        now_ns: u64,
        stamp: u64,
        check_file: impl FnOnce() -> u64,
    ) -> u64 {
        let checked = self.last_check_stamp.load(Ordering::Relaxed);
        if stamp <= checked {
            // Below a stamp seen at a check: a race with that check, or the file was rewound
            // since. The cell never goes back by itself, so it tells which.
            let why = self.check_rewind(cell);
            if why != BROKEN_NONE {
                return why;
            }
        }
        let since_ns = now_ns.abs_diff(self.last_check_ns.load(Ordering::Relaxed));
        if since_ns < self.check_ns && stamp.wrapping_sub(checked) < self.check_stamps {
            return BROKEN_NONE;
        }
        self.check_now(cell, now_ns, stamp, check_file)
    }

    /// The highest stamp a check recorded, read with `Acquire` before a compare-and-swap: the
    /// cell then held at least this much before the swap (module docs).
    #[inline]
    pub(super) fn before_swap(&self) -> u64 {
        self.last_check_stamp.load(Ordering::Acquire)
    }

    /// After a compare-and-swap that replaced `replaced`, with [`before_swap`](Self::before_swap)
    /// read before it: a replaced stamp below what a check had seen means an older stamp was
    /// written into the cell (however far back: the stamp installed over it, from the clock, may
    /// be above everything recorded, and would go on repeating the ids issued since the record).
    #[inline]
    pub(super) fn check_replaced(&self, before: u64, replaced: u64) -> u64 {
        if replaced < before {
            self.set_broken(BROKEN_REWOUND);
            return BROKEN_REWOUND;
        }
        BROKEN_NONE
    }

    /// Runs `check_file` and the rewind check now, and records this check.
    #[cold]
    pub(super) fn check_now(
        &self,
        cell: &W,
        now_ns: u64,
        stamp: u64,
        check_file: impl FnOnce() -> u64,
    ) -> u64 {
        let why = check_file();
        if why != BROKEN_NONE {
            self.set_broken(why);
        }
        self.check_rewind(cell);
        self.last_check_ns.store(now_ns, Ordering::Relaxed);
        // Release: a check that reads this value also sees the cell at least this high.
        self.last_check_stamp
            .fetch_max(cell.load(Ordering::Relaxed).max(stamp), Ordering::Release);
        self.broken()
    }

    /// The stamp a cell holds only grows: below a value recorded at an earlier check, someone
    /// wrote an older stamp into the file (a backup copied over it, a rewind). The record is
    /// read first, with `Acquire` (module docs). Returns why the process stopped issuing.
    #[cold]
    fn check_rewind(&self, cell: &W) -> u64 {
        let seen = self.last_check_stamp.load(Ordering::Acquire);
        if cell.load(Ordering::Relaxed) < seen {
            self.set_broken(BROKEN_REWOUND);
        }
        self.broken()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch() -> Watch<AtomicU64> {
        // Checks every call (0 ns apart would be `< 0`: never).
        Watch::new(0, 0, || AtomicU64::new(0))
    }

    #[test]
    fn a_cell_that_only_grows_is_never_rewound() {
        let (w, cell) = (watch(), AtomicU64::new(0));
        for s in 1..1_000u64 {
            cell.store(s, Ordering::Relaxed);
            assert_eq!(w.check_issued(&cell, s, s, || BROKEN_NONE), BROKEN_NONE);
        }
    }

    #[test]
    fn an_older_stamp_written_after_a_check_is_rewound_at_the_next_id() {
        // Checked only every 1 s and 1,000 stamps: the stamp below the record alone triggers it.
        let w = Watch::new(1_000_000_000, 1_000, || AtomicU64::new(0));
        let cell = AtomicU64::new(0);
        cell.store(100, Ordering::Relaxed);
        assert_eq!(w.check_now(&cell, 1, 100, || BROKEN_NONE), BROKEN_NONE);
        cell.store(50, Ordering::Relaxed); // a copy restored over the file
        cell.store(51, Ordering::Relaxed); // the next id, issued from it
        assert_eq!(w.check_issued(&cell, 2, 51, || BROKEN_NONE), BROKEN_REWOUND);
        // Sticky, and the first reason stays.
        w.set_broken(BROKEN_DELETED);
        assert_eq!(w.broken(), BROKEN_REWOUND);
    }

    #[test]
    fn the_file_check_runs_every_interval_and_its_reason_sticks() {
        let w = Watch::new(1_000, 1 << 20, || AtomicU64::new(0));
        let cell = AtomicU64::new(5);
        let mut runs = 0;
        let mut check = |t: u64, why: u64| {
            w.check_issued(&cell, t, 5 + t, || {
                runs += 1;
                why
            })
        };
        assert_eq!(check(10_000, BROKEN_NONE), BROKEN_NONE); // first call: due
        assert_eq!(check(10_500, BROKEN_DELETED), BROKEN_NONE); // 500 ns later: not due
        assert_eq!(check(11_000, BROKEN_DELETED), BROKEN_DELETED); // due, and fails
        assert_eq!(runs, 2);
    }
}

/// Loom model: threads that issue from one cell and check it, as the threads of one process
/// sharing a host-wide generator do, never find it rewound; a thread that writes an older stamp
/// is found. Run with `RUSTFLAGS="--cfg loom" cargo test -p idforge --lib loom_model`.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::atomic::AtomicU64 as LoomU64;
    use loom::sync::Arc;

    impl Word for LoomU64 {
        fn load(&self, order: Ordering) -> u64 {
            LoomU64::load(self, order)
        }
        fn store(&self, value: u64, order: Ordering) {
            LoomU64::store(self, value, order)
        }
        fn fetch_max(&self, value: u64, order: Ordering) -> u64 {
            LoomU64::fetch_max(self, value, order)
        }
        fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
            LoomU64::compare_exchange(self, current, new, Ordering::Relaxed, Ordering::Relaxed)
        }
    }

    struct Model {
        cell: LoomU64,
        watch: Watch<LoomU64>,
    }

    /// Issues one stamp as the sequencer does (`max(now, last + 1)` by a CAS, Relaxed, with the
    /// record read before each CAS), then checks it as `HostStamp`'s `check_replaced` and
    /// `check_issued` do. Returns the stamp and the watch's verdict.
    fn issue(m: &Model, now_ns: u64) -> (u64, u64) {
        let mut last = m.cell.load(Ordering::Relaxed);
        loop {
            let stamp = now_ns.max(last + 1);
            let before = m.watch.before_swap();
            match LoomU64::compare_exchange(
                &m.cell,
                last,
                stamp,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    let why = match m.watch.check_replaced(before, last) {
                        BROKEN_NONE => m.watch.check_issued(&m.cell, now_ns, stamp, || BROKEN_NONE),
                        why => why,
                    };
                    return (stamp, why);
                }
                Err(actual) => last = actual,
            }
        }
    }

    /// Every interleaving with at most `bound` preemptions (unbounded, the three-thread model
    /// runs for many minutes; loom's advice is that 2 or 3 find almost every bug).
    fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(bound);
        model.check(f);
    }

    fn model(check_ns: u64, check_stamps: u64) -> Arc<Model> {
        Arc::new(Model {
            cell: LoomU64::new(0),
            watch: Watch::new(check_ns, check_stamps, || LoomU64::new(0)),
        })
    }

    #[test]
    fn loom_model_threads_checking_one_cell_never_see_a_rewind() {
        // Every call checks (as a process whose clock moved a millisecond since its last check
        // does): the record moves as often as it can.
        check(3, || {
            let m = model(0, 0);
            let other = {
                let m = m.clone();
                loom::thread::spawn(move || [issue(&m, 1), issue(&m, 2)])
            };
            let mut all = vec![issue(&m, 10), issue(&m, 11)];
            all.extend(other.join().unwrap());
            for (stamp, why) in &all {
                assert_eq!(
                    *why, BROKEN_NONE,
                    "stamp {stamp} refused as rewound: {all:?}"
                );
            }
        });
    }

    #[test]
    fn loom_model_three_threads_with_checks_between_intervals() {
        // Checks only every 2 stamps: the "stamp below the record" path and the full check mix.
        check(2, || {
            let m = model(u64::MAX, 2);
            let hs: Vec<_> = (0..3)
                .map(|_| {
                    let m = m.clone();
                    loom::thread::spawn(move || issue(&m, 1))
                })
                .collect();
            for h in hs {
                let (stamp, why) = h.join().unwrap();
                assert_eq!(why, BROKEN_NONE, "stamp {stamp} refused as rewound");
            }
        });
    }

    #[test]
    fn loom_model_a_stamp_written_back_is_found() {
        // One thread issues and checks; another writes an older stamp after the first check
        // recorded a higher one (joined, so ordered): the next id finds it, whatever else runs.
        check(3, || {
            let m = model(0, 0);
            assert_eq!(issue(&m, 1).1, BROKEN_NONE);
            assert_eq!(issue(&m, 2).1, BROKEN_NONE);
            let other = {
                let m = m.clone();
                loom::thread::spawn(move || issue(&m, 3))
            };
            other.join().unwrap();
            m.cell.store(1, Ordering::Relaxed); // a copy restored over the file
            assert_eq!(issue(&m, 4).1, BROKEN_REWOUND);
        });
    }

    #[test]
    fn loom_model_a_stamp_written_far_back_is_found_though_the_next_is_above_every_record() {
        // The next stamp comes from the clock (100), above every record: only the stamp its
        // CAS replaced (0) tells. Fails without `check_replaced`.
        check(3, || {
            let m = model(0, 0);
            let other = {
                let m = m.clone();
                loom::thread::spawn(move || issue(&m, 3))
            };
            assert_eq!(issue(&m, 2).1, BROKEN_NONE);
            assert_eq!(other.join().unwrap().1, BROKEN_NONE);
            m.cell.store(0, Ordering::Relaxed); // written far back
            let (stamp, why) = issue(&m, 100);
            assert_eq!((stamp, why), (100, BROKEN_REWOUND));
        });
    }
}
