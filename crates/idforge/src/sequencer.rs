//! The sequencer: the single source of uniqueness in idforge.
//!
//! Its whole state is one `u64` *stamp*: clock ticks since the layout's epoch, shifted left by the
//! counter width, with the counter in the low bits. Every id is made from one stamp, and a stamp is
//! issued at most once:
//!
//! ```text
//! next = max(tick(now) << counter_bits, last + 1)      -- one compare-and-swap on `last`
//! ```
//!
//! This is the algorithm of the uProtocol UUID builder (seed `000`) and of Chronicle's
//! `MappedUniqueTimeProvider` (seed `001`), with the corner cases made explicit in a [`Policy`]:
//!
//! * **counter exhausted** within the current tick: [`OnExhausted::Wait`] for the next tick, or
//!   [`OnExhausted::RunAhead`] of the wall clock by up to [`Policy::max_lead`] (then wait);
//! * **wall clock behind the last stamp** (it stepped back, or an earlier run-ahead is not yet
//!   caught up): keep issuing from the last stamp while it is at most `max_lead` ahead of the clock;
//!   past that, [`OnClockBehind::Wait`] until the clock catches up or [`OnClockBehind::Fail`]
//!   with [`Error::ClockBehind`].
//!
//! Neither policy can return a duplicate: every issued stamp is greater than the last one in the
//! cell's modification order. How far the sequencer runs ahead of the clock is [`Sequencer::lead`].
//!
//! The stamp lives in a [`StampCell`]: an in-process `AtomicU64` by default; any other cell that
//! offers load and compare-and-swap (a word in shared memory, a model-checked atomic) can hold it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use strength_reduce::StrengthReducedU64;

use crate::clock::{Clock, WallClock};
use crate::error::Error;
use crate::time::{format_unix_ns, year_of_unix_ns};

/// What the sequencer does when a tick's counter is used up.
///
/// ```
/// use idforge::{ManualClock, OnExhausted, Policy, Sequencer, Timebase};
/// // A 1-bit counter: two ids per tick. RunAhead borrows the next tick instead of waiting.
/// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 1 };
/// let policy = Policy { on_exhausted: OnExhausted::RunAhead, ..Policy::DEFAULT };
/// let seq = Sequencer::new(ManualClock::new(3_000_000), tb, policy)?;
/// let stamps = [seq.next()?, seq.next()?, seq.next()?];
/// assert_eq!(stamps, [3 << 1, (3 << 1) + 1, 4 << 1]); // the third is from tick 4, ahead of the clock
/// assert_eq!(seq.lead(), std::time::Duration::from_millis(1));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExhausted {
    /// Wait for the wall clock to reach the next tick. Ids never run ahead of the clock because
    /// of load (Twitter Snowflake, uProtocol).
    Wait,
    /// Borrow the next tick's counter now, running ahead of the wall clock by at most
    /// [`Policy::max_lead`], then wait (Chronicle).
    RunAhead,
}

/// What the sequencer does when the wall clock is further behind the last stamp than
/// [`Policy::max_lead`].
///
/// ```
/// use idforge::{Error, ManualClock, OnClockBehind, Policy, Sequencer, Timebase};
/// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
/// let clock = ManualClock::new(10_000_000_000);
/// let policy = Policy { on_clock_behind: OnClockBehind::Fail, ..Policy::DEFAULT };
/// let seq = Sequencer::new(clock.clone(), tb, policy)?;
/// seq.next()?;
/// clock.set(9_500_000_000); // 0.5 s back: within max_lead, ids go on from the last stamp
/// assert!(seq.next().is_ok());
/// clock.set(1_000_000_000); // 9 s back: Fail says so at once
/// assert!(matches!(seq.next(), Err(Error::ClockBehind { .. })));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnClockBehind {
    /// Block until the clock has caught up to within `max_lead` of the last stamp.
    Wait,
    /// Return [`Error::ClockBehind`] at once; nothing is issued.
    Fail,
}

/// How a sequencer treats exhaustion and a clock that is behind. Every scheme documents its own.
///
/// ```
/// use idforge::{OnClockBehind, OnExhausted, Policy};
/// use std::time::Duration;
/// let p = Policy::default();
/// assert_eq!(p, Policy::DEFAULT);
/// assert_eq!((p.on_exhausted, p.max_lead, p.on_clock_behind),
///            (OnExhausted::Wait, Duration::from_secs(1), OnClockBehind::Fail));
/// // Tolerate a clock 5 s behind, waiting for it rather than failing.
/// let lenient = Policy { max_lead: Duration::from_secs(5), on_clock_behind: OnClockBehind::Wait, ..p };
/// assert_ne!(lenient, Policy::DEFAULT);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Counter exhausted within the current tick.
    pub on_exhausted: OnExhausted,
    /// The most the last stamp may be ahead of the wall clock, for either reason.
    pub max_lead: Duration,
    /// Past `max_lead` because the clock is behind.
    pub on_clock_behind: OnClockBehind,
}

impl Policy {
    /// Wait at exhaustion; tolerate the clock stepping back by up to one second (issuing from the
    /// last stamp meanwhile); fail beyond that. The default of every in-process scheme.
    pub const DEFAULT: Policy = Policy {
        on_exhausted: OnExhausted::Wait,
        max_lead: Duration::from_secs(1),
        on_clock_behind: OnClockBehind::Fail,
    };

    /// No bound at all: keep counting up from the last stamp however far the clock lags. Used
    /// for a fixed clock (`idforge gen --at`), where the clock never moves.
    pub const UNBOUNDED: Policy = Policy {
        on_exhausted: OnExhausted::RunAhead,
        max_lead: Duration::MAX,
        on_clock_behind: OnClockBehind::Fail,
    };
}

impl Default for Policy {
    fn default() -> Self {
        Policy::DEFAULT
    }
}

/// Where a sequencer keeps its stamp: anything with an atomic load and compare-and-swap on a `u64`.
///
/// Implementations must make `compare_exchange_weak` atomic with respect to every other access to
/// the same cell (from any thread, or any process that shares it).
///
/// ```
/// use idforge::{ManualClock, Policy, Sequencer, StampCell, Timebase};
/// use std::sync::atomic::AtomicU64;
/// use std::sync::Arc;
/// // Two sequencers sharing one cell never issue the same stamp.
/// let cell = Arc::new(AtomicU64::new(0));
/// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
/// let a = Sequencer::with_cell(ManualClock::new(1_000_000), cell.clone(), tb, Policy::DEFAULT)?;
/// let b = Sequencer::with_cell(ManualClock::new(1_000_000), cell.clone(), tb, Policy::DEFAULT)?;
/// assert_eq!([a.next()?, b.next()?, a.next()?], [1 << 12, (1 << 12) + 1, (1 << 12) + 2]);
/// assert_eq!(StampCell::load(&cell), (1 << 12) + 2);
/// # Ok::<(), idforge::Error>(())
/// ```
pub trait StampCell: Send + Sync {
    /// The current stamp.
    ///
    /// ```
    /// use idforge::StampCell;
    /// use std::sync::atomic::AtomicU64;
    /// let cell = AtomicU64::new(42);
    /// assert_eq!(StampCell::load(&cell), 42);
    /// ```
    fn load(&self) -> u64;
    /// Replaces `current` by `new` if the cell still holds `current`; otherwise returns what it
    /// holds. May fail spuriously.
    ///
    /// # Errors
    /// `Err` with the value the cell holds when it does not hold `current`, or spuriously (with
    /// `current`); the cell is then unchanged.
    ///
    /// ```
    /// use idforge::StampCell;
    /// use std::sync::atomic::AtomicU64;
    /// let cell = AtomicU64::new(42);
    /// // A wrong `current` fails and reports what the cell holds.
    /// assert_eq!(StampCell::compare_exchange_weak(&cell, 7, 43), Err(42));
    /// // The right one succeeds (a weak CAS may fail spuriously: retry).
    /// while StampCell::compare_exchange_weak(&cell, 42, 43).is_err() {}
    /// assert_eq!(StampCell::load(&cell), 43);
    /// ```
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64>;

    /// The highest stamp that may be issued now: a mark some store has durably reserved (a
    /// persisted high-water mark; later, a lease in a coordination service). `u64::MAX`, the
    /// default, means no ceiling, and the check compiles away.
    ///
    /// ```
    /// use idforge::StampCell;
    /// use std::sync::atomic::AtomicU64;
    /// assert_eq!(AtomicU64::new(0).ceiling(), u64::MAX); // an in-process cell has no ceiling
    /// ```
    #[inline]
    fn ceiling(&self) -> u64 {
        u64::MAX
    }

    /// Durably raises the ceiling to at least `needed` and returns the new ceiling. Called by the
    /// sequencer, outside the hot path, before it issues a stamp above [`StampCell::ceiling`].
    ///
    /// # Errors
    /// Whatever keeps the cell from persisting the ceiling; the sequencer then issues nothing
    /// and returns the error. The default never fails; `HostStamp` returns
    /// [`Error::StateFile`] (`Lost` for a file found truncated, deleted, replaced or rewound,
    /// `Io` when the `msync` fails).
    ///
    /// ```
    /// use idforge::StampCell;
    /// use std::sync::atomic::AtomicU64;
    /// assert_eq!(AtomicU64::new(0).raise_ceiling(1_000)?, u64::MAX);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        let _ = needed;
        Ok(u64::MAX)
    }

    /// Called after `stamp` was installed (by a clock reading of `now_ns`) and before it is
    /// returned: a cell whose store can be lost (a state file truncated, deleted or replaced)
    /// refuses it here. The default accepts, and compiles away.
    ///
    /// # Errors
    /// When the stamp must not be returned; the sequencer passes the error on (the stamp stays
    /// consumed, never issued). `HostStamp` returns [`Error::StateFile`]
    /// with `Lost` once its file was found truncated, deleted, replaced or rewound.
    ///
    /// ```
    /// use idforge::StampCell;
    /// use std::sync::atomic::AtomicU64;
    /// assert!(AtomicU64::new(0).check_issued(1_000_000, 5).is_ok()); // nothing to lose in memory
    /// ```
    #[inline]
    fn check_issued(&self, now_ns: u64, stamp: u64) -> Result<(), Error> {
        let _ = (now_ns, stamp);
        Ok(())
    }

    /// Read by the sequencer before each compare-and-swap and handed back to
    /// [`check_replaced`](StampCell::check_replaced) when the swap succeeds. `HostStamp` reads
    /// the highest stamp its checks have seen in the file. The default is 0, and compiles away.
    ///
    /// ```
    /// use idforge::StampCell;
    /// use std::sync::atomic::AtomicU64;
    /// assert_eq!(AtomicU64::new(7).before_swap(), 0);
    /// ```
    #[inline]
    fn before_swap(&self) -> u64 {
        0
    }

    /// Called after a compare-and-swap replaced `replaced` (the stamp the cell held), with what
    /// [`before_swap`](StampCell::before_swap) returned before it, and before
    /// [`check_issued`](StampCell::check_issued). A cell that only grows never replaces a value
    /// below one seen before the swap: `HostStamp` refuses (`Lost`, "was rewound") when it did,
    /// which catches an older stamp written into the file at the first id after it, however far
    /// back (the new stamp, from the clock, may be above everything seen). The default accepts,
    /// and compiles away.
    ///
    /// # Errors
    /// When the stamp must not be returned, as [`check_issued`](StampCell::check_issued).
    ///
    /// ```
    /// use idforge::StampCell;
    /// use std::sync::atomic::AtomicU64;
    /// assert!(AtomicU64::new(0).check_replaced(10, 5).is_ok()); // an in-process cell trusts itself
    /// ```
    #[inline]
    fn check_replaced(&self, before: u64, replaced: u64) -> Result<(), Error> {
        let _ = (before, replaced);
        Ok(())
    }
}

// Memory ordering: Relaxed is enough. The stamp is the only shared datum; no other memory is
// published through it. Uniqueness needs only that all read-modify-writes of one atomic are
// totally ordered (its modification order), which holds for every ordering: a successful CAS from
// `last` to `new` means no other CAS was placed between them, so two callers never install the same
// value. Per-thread monotonicity follows from read-write coherence.
impl StampCell for AtomicU64 {
    #[inline]
    fn load(&self) -> u64 {
        AtomicU64::load(self, Ordering::Relaxed)
    }
    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        AtomicU64::compare_exchange_weak(self, current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

impl<S: StampCell + ?Sized> StampCell for &S {
    #[inline]
    fn load(&self) -> u64 {
        (**self).load()
    }
    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        (**self).compare_exchange_weak(current, new)
    }
    #[inline]
    fn ceiling(&self) -> u64 {
        (**self).ceiling()
    }
    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        (**self).raise_ceiling(needed)
    }
    #[inline]
    fn check_issued(&self, now_ns: u64, stamp: u64) -> Result<(), Error> {
        (**self).check_issued(now_ns, stamp)
    }
    #[inline]
    fn before_swap(&self) -> u64 {
        (**self).before_swap()
    }
    #[inline]
    fn check_replaced(&self, before: u64, replaced: u64) -> Result<(), Error> {
        (**self).check_replaced(before, replaced)
    }
}

impl<S: StampCell + ?Sized> StampCell for std::sync::Arc<S> {
    #[inline]
    fn load(&self) -> u64 {
        (**self).load()
    }
    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        (**self).compare_exchange_weak(current, new)
    }
    #[inline]
    fn ceiling(&self) -> u64 {
        (**self).ceiling()
    }
    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        (**self).raise_ceiling(needed)
    }
    #[inline]
    fn check_issued(&self, now_ns: u64, stamp: u64) -> Result<(), Error> {
        (**self).check_issued(now_ns, stamp)
    }
    #[inline]
    fn before_swap(&self) -> u64 {
        (**self).before_swap()
    }
    #[inline]
    fn check_replaced(&self, before: u64, replaced: u64) -> Result<(), Error> {
        (**self).check_replaced(before, replaced)
    }
}

/// The time base of a sequencer: epoch, tick unit, and the widths of time and counter.
///
/// ```
/// use idforge::Timebase;
/// // Snowflake's: 41 bits of milliseconds from 2010-11-04T01:42:54.657Z, a 12-bit counter.
/// let tb = Timebase { epoch_ns: 1_288_834_974_657_000_000, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
/// assert_eq!(tb, idforge::Scheme::Snowflake.layout().timebase());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timebase {
    /// Nanoseconds since the Unix epoch of tick 0.
    pub epoch_ns: u64,
    /// Length of one tick in nanoseconds (1,000,000 for milliseconds).
    pub tick_ns: u64,
    /// Width of the time field in ticks. The stamp holds at most `64 - counter_bits` of them.
    pub time_bits: u32,
    /// Width of the counter in the low bits of the stamp.
    pub counter_bits: u32,
}

impl Timebase {
    /// Time bits the `u64` stamp can hold: the layout's, capped at `64 - counter_bits`.
    ///
    /// ```
    /// use idforge::Timebase;
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1, time_bits: 64, counter_bits: 16 };
    /// assert_eq!(tb.stamp_time_bits(), 48); // the u64 stamp keeps 64 - 16 bits of time
    /// ```
    pub fn stamp_time_bits(&self) -> u32 {
        self.time_bits.min(64 - self.counter_bits)
    }

    /// The largest stamp: last tick the time field holds, counter at its maximum.
    ///
    /// ```
    /// use idforge::Timebase;
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// assert_eq!(tb.max_stamp(), (1 << 53) - 1);
    /// ```
    pub fn max_stamp(&self) -> u64 {
        let bits = self.stamp_time_bits() + self.counter_bits;
        if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        }
    }

    /// Unix nanoseconds at which the time field runs out (saturating).
    ///
    /// ```
    /// use idforge::Timebase;
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000_000, time_bits: 32, counter_bits: 0 };
    /// assert_eq!(tb.end_unix_ns(), (1u128 << 32) * 1_000_000_000); // 2106-02-07
    /// ```
    pub fn end_unix_ns(&self) -> u128 {
        let ticks = 1u128 << self.stamp_time_bits();
        ticks * self.tick_ns as u128 + self.epoch_ns as u128
    }

    /// Checks the widths and the tick unit.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] when the tick is 0 ns, the counter is wider than 32 bits, or the
    /// time field has no bits.
    ///
    /// ```
    /// use idforge::Timebase;
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// assert!(tb.validate().is_ok());
    /// assert!(Timebase { tick_ns: 0, ..tb }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), Error> {
        if self.tick_ns == 0 {
            return Err(Error::InvalidLayout(
                "the tick unit must be at least 1 ns".into(),
            ));
        }
        if self.counter_bits > 32 {
            return Err(Error::InvalidLayout(format!(
                "a counter of {} bits leaves the stamp too few time bits; use at most 32",
                self.counter_bits
            )));
        }
        if self.time_bits == 0 {
            return Err(Error::InvalidLayout(
                "the time field needs at least 1 bit".into(),
            ));
        }
        Ok(())
    }
}

/// A range of stamps taken in one atomic step by [`Sequencer::reserve`].
///
/// ```
/// use idforge::StampRange;
/// let r = StampRange { start: 10, len: 3 };
/// assert_eq!(r.len(), 3);
/// assert_eq!(r.collect::<Vec<_>>(), [10, 11, 12]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StampRange {
    /// The first stamp.
    pub start: u64,
    /// How many consecutive stamps, `start..start + len`.
    pub len: u64,
}

impl Iterator for StampRange {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let s = self.start;
        // Wrapping: a range may end at stamp u64::MAX (a layout whose stamp fills 64 bits).
        self.start = self.start.wrapping_add(1);
        self.len -= 1;
        Some(s)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.len).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for StampRange {}

/// The lock-free sequencer. See the [module documentation](self).
///
/// ```
/// use idforge::{ManualClock, Policy, Sequencer, Timebase};
/// let clock = ManualClock::new(5_000_000); // 5 ms after the epoch, frozen
/// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 48, counter_bits: 12 };
/// let seq = Sequencer::new(clock.clone(), tb, Policy::DEFAULT).unwrap();
/// assert_eq!(seq.next().unwrap(), 5 << 12);       // tick 5, counter 0
/// assert_eq!(seq.next().unwrap(), (5 << 12) + 1); // same tick, counter 1
/// clock.advance(1_000_000);
/// assert_eq!(seq.next().unwrap(), 6 << 12);       // new tick: counter resets
/// ```
pub struct Sequencer<C: Clock = WallClock, S: StampCell = AtomicU64> {
    clock: C,
    cell: S,
    tb: Timebase,
    tick: StrengthReducedU64,
    max_stamp: u64,
    /// The last tick the stamp can hold (`max_stamp >> counter_bits`).
    max_tick: u64,
    /// How many ticks a stamp may lead the clock on `take`'s fast path: `max_lead` in whole
    /// ticks (rounded down: a subset of what `step` takes) under [`OnExhausted::RunAhead`],
    /// else 0.
    fast_lead_ticks: u64,
    /// The clock's own error ([`Clock::max_error_ns`]): how much further than the lead a
    /// reading may be behind the start of the last stamp's tick and still count as a lead to
    /// wait out rather than a clock that stepped back. Kept in nanoseconds: rounded up to whole
    /// ticks it would make a step back of one tick look like the clock's error.
    error_ns: u64,
    policy: Policy,
}

impl<C: Clock, S: StampCell> Sequencer<C, S> {
    /// The same sequencer with its cell wrapped by `f` (into an enum of cell types, for
    /// instance); the stamp stays where it is.
    ///
    /// ```
    /// use idforge::{ManualClock, Policy, Sequencer, Timebase};
    /// use std::sync::Arc;
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(ManualClock::new(2_000_000), tb, Policy::DEFAULT)?;
    /// let first = seq.next()?;
    /// let shared = seq.map_cell(Arc::new); // the same stamp, now in an Arc
    /// assert_eq!(shared.next()?, first + 1);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn map_cell<T: StampCell>(self, f: impl FnOnce(S) -> T) -> Sequencer<C, T> {
        Sequencer {
            clock: self.clock,
            cell: f(self.cell),
            tb: self.tb,
            tick: self.tick,
            max_stamp: self.max_stamp,
            max_tick: self.max_tick,
            fast_lead_ticks: self.fast_lead_ticks,
            error_ns: self.error_ns,
            policy: self.policy,
        }
    }
}

impl<C: Clock + std::fmt::Debug, S: StampCell> std::fmt::Debug for Sequencer<C, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequencer")
            .field("clock", &self.clock)
            .field("last", &self.cell.load())
            .field("timebase", &self.tb)
            .field("policy", &self.policy)
            .finish()
    }
}

impl<C: Clock> Sequencer<C, AtomicU64> {
    /// A sequencer with an in-process stamp starting at zero.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] when the time base is unsound (see [`Timebase::validate`]).
    ///
    /// ```
    /// use idforge::{Policy, Sequencer, Timebase, WallClock};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(WallClock, tb, Policy::DEFAULT)?;
    /// assert!(seq.next()? > 0);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn new(clock: C, timebase: Timebase, policy: Policy) -> Result<Self, Error> {
        Self::with_cell(clock, AtomicU64::new(0), timebase, policy)
    }
}

// No backoff after a lost CAS. One that made the loser wait (32 to 512 `pause`s, longer after
// each loss) raised two threads' throughput on 2 cores, but by letting the winner keep the line:
// the loser retried with the value its lost CAS had returned, stale after the wait, and lost
// again. Measured (`cargo bench -p idforge-bench --bench fairness`): in 25 ms windows the slower
// of two threads made 0.00-0.09x the ids of the faster one, and single calls took up to 85 ms;
// on 16 cores every idforge generator showed 0.00. Without it, the loser retries at once with the
// value it found, as a plain CAS cell does.
//
// Not done: a `fetch_add` for stamps within the reading's tick, where every thread's attempt
// succeeds (fairer than any CAS loop on many cores). Its result is known only after the add: near
// a tick's end, threads that checked for room and then added can push the cell into the next
// tick. Under `OnExhausted::Wait` the other threads would then see a stamp ahead of their
// reading, which `step` takes for a clock that stepped back, and issue ahead of the clock up to
// `max_lead`: the run-ahead under load that `tests/contention.rs` guards against. It needs a
// `step` that tells the two apart before it can be used.

/// Why `take`'s fast path gave up, and what it had read.
pub(crate) enum Retry {
    /// Decide again from here: `last` as read (or as a lost CAS found it), `now` as read,
    /// `fresh` whether `now` was read after `last` was seen.
    From { last: u64, now: u64, fresh: bool },
    /// The stamp was issued, and the cell's check after issuing failed.
    Failed(Box<Error>),
}

/// Outcome of one look at the clock and the last stamp.
enum Step {
    /// Take the range `start..=end`, ahead of the reading because the clock looks stepped back
    /// (under `OnExhausted::Wait`): taken only on a fresh precise reading, so that a cheap clock
    /// lagging its source is never taken for a step back.
    TakeBehind { start: u64, end: u64 },
    /// Install `end` over `last`; the range starts at `start`.
    Take { start: u64, end: u64 },
    /// Wait this many nanoseconds of clock time, then look again.
    Wait(u64),
}

impl<C: Clock, S: StampCell> Sequencer<C, S> {
    /// A sequencer over a given cell (shared memory, a model-checked atomic, ...).
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] when the time base is unsound (see [`Timebase::validate`]).
    ///
    /// ```
    /// use idforge::{ManualClock, Policy, ProcessStamp, Sequencer, Timebase};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::with_cell(ManualClock::new(9_000_000), ProcessStamp::new()?, tb, Policy::DEFAULT)?;
    /// assert_eq!(seq.next()?, 9 << 12);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn with_cell(clock: C, cell: S, timebase: Timebase, policy: Policy) -> Result<Self, Error> {
        timebase.validate()?;
        let tick = StrengthReducedU64::new(timebase.tick_ns);
        let fast_lead_ticks = if policy.on_exhausted == OnExhausted::RunAhead {
            u64::try_from(policy.max_lead.as_nanos() / u128::from(timebase.tick_ns))
                .unwrap_or(u64::MAX)
        } else {
            0
        };
        let error_ns = clock.max_error_ns();
        Ok(Sequencer {
            clock,
            cell,
            max_stamp: timebase.max_stamp(),
            max_tick: timebase.max_stamp() >> timebase.counter_bits,
            tb: timebase,
            tick,
            fast_lead_ticks,
            error_ns,
            policy,
        })
    }

    /// The next stamp: unique, and greater than every stamp issued before it from this cell.
    ///
    /// # Errors
    /// [`Error::BeforeEpoch`] when the clock reads a time before the epoch;
    /// [`Error::TimeOutOfRange`] when the clock's tick, or the next stamp, no longer fits the
    /// time field; [`Error::ClockBehind`] when the clock is further behind the last stamp than
    /// `max_lead` and the policy says [`OnClockBehind::Fail`]; and whatever the cell's
    /// [`StampCell::raise_ceiling`] or [`StampCell::check_issued`] returns (a host-wide cell:
    /// [`Error::StateFile`]). Nothing is issued on an error.
    ///
    /// ```
    /// use idforge::{Error, ManualClock, OnClockBehind, Policy, Sequencer, Timebase};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let clock = ManualClock::new(10_000_000_000); // 10 s after the epoch
    /// let policy = Policy { on_clock_behind: OnClockBehind::Fail, ..Policy::DEFAULT };
    /// let seq = Sequencer::new(clock.clone(), tb, policy)?;
    /// let first = seq.next()?;
    /// assert!(seq.next()? > first);
    /// clock.set(5_000_000_000); // the clock steps back 5 s, more than max_lead (1 s)
    /// assert!(matches!(seq.next(), Err(Error::ClockBehind { .. })));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next(&self) -> Result<u64, Error> {
        self.take(1)
    }

    /// `n` consecutive stamps in one atomic step, for batches. `n` is at most one tick's counter
    /// capacity (`1 << counter_bits`); `n == 0` returns an empty range without touching the cell.
    ///
    /// ```
    /// use idforge::{ManualClock, Policy, Sequencer, Timebase};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(ManualClock::new(7_000_000), tb, Policy::DEFAULT)?;
    /// let batch = seq.reserve(64)?;
    /// assert_eq!(batch.len, 64);
    /// assert_eq!(seq.next()?, batch.start + 64);
    /// assert!(seq.reserve(5_000).is_err()); // more than one tick's 4096
    /// # Ok::<(), idforge::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ReserveTooLarge`] when `n > 1 << counter_bits`; otherwise as
    /// [`next`](Self::next).
    #[inline]
    pub fn reserve(&self, n: u64) -> Result<StampRange, Error> {
        if n == 0 {
            return Ok(StampRange { start: 0, len: 0 });
        }
        let cap = 1u64 << self.tb.counter_bits;
        if n > cap {
            return Err(Error::ReserveTooLarge {
                requested: n,
                max: cap,
            });
        }
        self.take(n).map(|start| StampRange { start, len: n })
    }

    /// How far the last issued stamp is ahead of the wall clock (zero when it is not).
    ///
    /// ```
    /// use idforge::{ManualClock, Policy, Sequencer, Timebase};
    /// use std::time::Duration;
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let clock = ManualClock::new(10_000_000);
    /// let seq = Sequencer::new(clock.clone(), tb, Policy::DEFAULT)?;
    /// seq.next()?;
    /// assert_eq!(seq.lead(), Duration::ZERO);
    /// clock.set(9_500_000); // the clock steps back half a millisecond
    /// assert_eq!(seq.lead(), Duration::from_micros(500));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn lead(&self) -> Duration {
        // The stamp first, then the clock: every stamp issued so far was checked against a clock
        // reading no later than ours, so a lead that came from running ahead is never seen above
        // the policy's bound (a clock that stepped back can still show any lead).
        // Measured as `take` bounds it: from the reading to the start of the stamp's tick, in
        // nanoseconds (whole ticks would show a stamp 400 µs ahead as 1 ms, above a 500 µs
        // `max_lead` it keeps to).
        let stamp_ns = self.stamp_unix_ns(self.cell.load());
        duration_ns(stamp_ns.saturating_sub(u128::from(self.clock.now_ns())))
    }

    /// The last stamp issued (0 before the first).
    ///
    /// ```
    /// use idforge::{ManualClock, Policy, Sequencer, Timebase};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(ManualClock::new(1_000_000), tb, Policy::DEFAULT)?;
    /// assert_eq!(seq.last_stamp(), 0);
    /// let s = seq.next()?;
    /// assert_eq!(seq.last_stamp(), s);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn last_stamp(&self) -> u64 {
        self.cell.load()
    }

    /// The cell holding the stamp.
    ///
    /// ```
    /// use idforge::{ManualClock, Policy, Sequencer, Timebase};
    /// use std::sync::atomic::Ordering;
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(ManualClock::new(1_000_000), tb, Policy::DEFAULT)?;
    /// let s = seq.next()?;
    /// assert_eq!(seq.cell().load(Ordering::Relaxed), s);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn cell(&self) -> &S {
        &self.cell
    }

    /// The clock this sequencer reads.
    ///
    /// ```
    /// use idforge::{Clock, ManualClock, Policy, Sequencer, Timebase};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(ManualClock::new(4_000_000), tb, Policy::DEFAULT)?;
    /// seq.clock().advance(1_000_000);
    /// assert_eq!(seq.clock().now_ns(), 5_000_000);
    /// assert_eq!(seq.next()?, 5 << 12);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The time base.
    ///
    /// ```
    /// use idforge::{Policy, Sequencer, Timebase, WallClock};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(WallClock, tb, Policy::DEFAULT)?;
    /// assert_eq!(seq.timebase(), &tb);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timebase(&self) -> &Timebase {
        &self.tb
    }

    /// The policy.
    ///
    /// ```
    /// use idforge::{Policy, Sequencer, Timebase, WallClock};
    /// let tb = Timebase { epoch_ns: 0, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(WallClock, tb, Policy::UNBOUNDED)?;
    /// assert_eq!(seq.policy().max_lead, std::time::Duration::MAX);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Unix nanoseconds of the start of a stamp's tick.
    ///
    /// ```
    /// use idforge::{ManualClock, Policy, Sequencer, Timebase};
    /// let tb = Timebase { epoch_ns: 1_000_000_000, tick_ns: 1_000_000, time_bits: 41, counter_bits: 12 };
    /// let seq = Sequencer::new(ManualClock::new(1_007_000_000), tb, Policy::DEFAULT)?;
    /// let s = seq.next()?; // tick 7 after the epoch
    /// assert_eq!(seq.stamp_unix_ns(s), 1_007_000_000);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn stamp_unix_ns(&self, stamp: u64) -> u128 {
        (stamp >> self.tb.counter_bits) as u128 * self.tb.tick_ns as u128 + self.tb.epoch_ns as u128
    }

    #[inline]
    fn tick_of(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.tb.epoch_ns) / self.tick
    }

    /// Takes `n >= 1` consecutive stamps; returns the first.
    #[inline]
    fn take(&self, n: u64) -> Result<u64, Error> {
        match self.take_fast(n) {
            Ok(start) => Ok(start),
            Err(retry) => self.take_retry(n, retry),
        }
    }

    /// `take`'s fast path: the common case of `step`, a stamp within the clock's tick (or within
    /// the lead `RunAhead` allows) that fits the stamp and the ceiling and wins its CAS. It
    /// decides nothing `step` would decide otherwise (a subset of its `Take` cases, sound on a
    /// reading older than the stamp); everything else (a lost CAS, a wait, a clock behind, an error, a ceiling to
    /// raise) is a [`Retry`] for [`take_retry`](Self::take_retry), with what was read. Kept
    /// small and free of `Error` values, so that a generator's `next` inlines it without a
    /// stack frame: on 2 cores that halved the cost of a Snowflake id on the ticker clock.
    #[inline(always)]
    pub(crate) fn take_fast(&self, n: u64) -> Result<u64, Retry> {
        // The clock first, then the stamp, right before the CAS: the cell's line is held for a
        // load and a CAS, not across a clock read, which on 2 cores halved the CASes lost to
        // another thread. The reading may then be older than `last`, so the fast path takes
        // only what it could take from any reading older than the truth, as a reading reused
        // after a lost CAS (see `take_slow`): a stamp above `last` (never a repeat) whose tick is
        // at most the reading's (plus the whole ticks of lead `RunAhead` allows: a lead over an
        // older reading is a smaller one over the clock). Whatever needs a fresh reading (a
        // wait, a clock behind) is decided by `take_slow`, which reads the clock again.
        let now = self.clock.now_ns();
        let before = self.cell.before_swap();
        let last = self.cell.load();
        if let Some(since_epoch) = now.checked_sub(self.tb.epoch_ns) {
            let cb = self.tb.counter_bits;
            let now_tick = since_epoch / self.tick;
            if now_tick <= self.max_tick {
                let start = (now_tick << cb).max(last.wrapping_add(1));
                let end = start.wrapping_add(n - 1);
                if start > last
                    && end >= start
                    && end <= self.max_stamp
                    && end >> cb <= now_tick.saturating_add(self.fast_lead_ticks)
                    && end <= self.cell.ceiling()
                {
                    return match self.cell.compare_exchange_weak(last, end) {
                        Ok(_) => match self
                            .cell
                            .check_replaced(before, last)
                            .and_then(|()| self.cell.check_issued(now, end))
                        {
                            Ok(()) => Ok(start),
                            Err(e) => Err(Retry::Failed(Box::new(e))),
                        },
                        Err(actual) => Err(Retry::From {
                            last: actual,
                            now,
                            fresh: false,
                        }),
                    };
                }
            }
        }
        Err(Retry::From {
            last,
            now,
            fresh: false,
        })
    }

    /// `take` past its fast path.
    #[inline(never)]
    pub(crate) fn take_retry(&self, n: u64, retry: Retry) -> Result<u64, Error> {
        match retry {
            Retry::From { last, now, fresh } => self.take_slow(n, last, now, fresh),
            Retry::Failed(e) => Err(*e),
        }
    }

    /// The loop of `take` past its fast path: `last` as read (or as a lost CAS found it), `now`
    /// as read, `fresh` whether `now` was read after `last` was seen.
    #[inline]
    fn take_slow(
        &self,
        n: u64,
        mut last: u64,
        mut now: u64,
        mut fresh: bool,
    ) -> Result<u64, Error> {
        // Whether `now` was read after `last` was seen. After a failed CAS the reading is reused
        // while the stamp it yields lies within the reading's own tick: such a stamp never
        // repeats (it is above `last` whatever the clock says) nor leads the clock, and
        // contention does not pay a second clock read. Anything else is decided again on a fresh
        // reading: a wait, a clock behind, and a stamp ahead of the reading, because `step` may
        // only take `last` being ahead of the clock for a clock that stepped back (or a lead the
        // policy allowed) when the clock was read after `last` was seen. From a reading older
        // than `last` it would also be another thread's newer tick, and under `Wait` an
        // exhausted counter would run ahead.
        // Whether `now` came from `Clock::now_precise_ns`: a cheap clock that lags (a
        // calibration not yet renewed after a forward step, a ticker not yet woken) is read
        // precisely before the sequencer refuses or waits for it, and from then on for the rest
        // of this call: stamps another thread issued from a precise reading may lead the cheap
        // one by the policy's whole lead plus the cheap clock's lag, and going back to the cheap
        // reading after a wait would take that for a clock that stepped back.
        let mut precise = false;
        let read = |precise: bool| {
            if precise {
                self.clock.now_precise_ns()
            } else {
                self.clock.now_ns()
            }
        };
        loop {
            let step = match self.step(now, last, n) {
                Ok(Step::Take { start, end })
                    if fresh || end >> self.tb.counter_bits <= self.tick_of(now) =>
                {
                    Step::Take { start, end }
                }
                _ if !fresh => {
                    now = read(precise);
                    fresh = true;
                    continue;
                }
                _ if !precise => {
                    now = self.clock.now_precise_ns();
                    precise = true;
                    continue;
                }
                other => other?,
            };
            match step {
                Step::Take { start, end } | Step::TakeBehind { start, end } => {
                    if end > self.cell.ceiling() {
                        self.cell.raise_ceiling(end)?;
                        last = self.cell.load();
                        now = read(precise);
                        continue;
                    }
                    let before = self.cell.before_swap();
                    match self.cell.compare_exchange_weak(last, end) {
                        Ok(_) => {
                            self.cell.check_replaced(before, last)?;
                            self.cell.check_issued(now, end)?;
                            return Ok(start);
                        }
                        Err(actual) => {
                            last = actual;
                            fresh = false;
                        }
                    }
                }
                Step::Wait(ns) => {
                    // Re-check at least every 50 ms: a stepped clock may be corrected meanwhile.
                    self.clock.pause(ns.min(50_000_000));
                    last = self.cell.load();
                    now = read(precise);
                }
            }
        }
    }

    /// The decision of one loop iteration, apart from the CAS. Pure: easy to test and to model.
    #[inline]
    fn step(&self, now: u64, last: u64, n: u64) -> Result<Step, Error> {
        let Some(since_epoch) = now.checked_sub(self.tb.epoch_ns) else {
            return Err(self.before_epoch(now));
        };
        let cb = self.tb.counter_bits;
        let now_tick = since_epoch / self.tick;
        if now_tick > self.max_tick {
            return Err(self.out_of_range(now));
        }
        let start = (now_tick << cb).max(last.wrapping_add(1));
        let end = start.wrapping_add(n - 1);
        // `start <= last`: the stamp was at u64::MAX; `end < start`: the range wrapped.
        if end > self.max_stamp || start <= last || end < start {
            return Err(self.out_of_range(now));
        }
        let end_tick = end >> cb;
        if end_tick <= now_tick {
            return Ok(Step::Take { start, end });
        }
        // The range would be ahead of the wall clock. Leads are compared in clock nanoseconds
        // against the policy's `max_lead` and the clock's error as they are, not rounded to
        // whole ticks: a 50 µs error must not excuse a 1 ms tick, and a `max_lead` that is not
        // a whole number of ticks (15 ms of 10 ms ticks, 500 µs of 1 ms ticks) must not refuse
        // a step back it covers.
        let now_ns = u128::from(now);
        let max_lead_ns = self.policy.max_lead.as_nanos();
        let error_ns = u128::from(self.error_ns);
        // How far the start of the last stamp's tick is ahead of the reading (0 when it is
        // not). A stamp issued at the most lead the policy allows is up to the clock's own
        // error further ahead of a later reading (a renewed calibration, the precise source):
        // a lead to wait out below, not a step back.
        let ahead_ns = self.stamp_unix_ns(last).saturating_sub(now_ns);
        if ahead_ns > max_lead_ns + error_ns {
            // The clock fell behind the last stamp by more than the bound: it stepped back.
            return match self.policy.on_clock_behind {
                OnClockBehind::Fail => Err(Error::ClockBehind {
                    behind: duration_ns(ahead_ns),
                    max_lead: self.policy.max_lead,
                }),
                OnClockBehind::Wait => Ok(Step::Wait(wait_ns(
                    self.stamp_unix_ns(last) - max_lead_ns - now_ns,
                ))),
            };
        }
        // How far the range's last id would be ahead of the reading.
        let lead_ns = self.stamp_unix_ns(end) - now_ns;
        let run_ahead = self.policy.on_exhausted == OnExhausted::RunAhead;
        // Under `Wait`, a range may lead the reading only because the clock stepped back: the
        // last stamp ahead of it by more than the clock's own error (a reading a little below
        // an earlier one, or a cheap clock lagging the precise reading a stamp was issued from,
        // is not a step back, and must not make `Wait` run ahead).
        let stepped_back = ahead_ns > error_ns;
        if lead_ns <= max_lead_ns {
            if run_ahead {
                return Ok(Step::Take { start, end });
            }
            if stepped_back {
                return Ok(Step::TakeBehind { start, end });
            }
        }
        // Exhausted: wait until the clock reaches the time where the range is allowed.
        let wait = if run_ahead || stepped_back {
            lead_ns - max_lead_ns
        } else {
            lead_ns
        };
        Ok(Step::Wait(wait_ns(wait)))
    }

    #[cold]
    fn before_epoch(&self, now: u64) -> Error {
        Error::BeforeEpoch {
            time: format_unix_ns(now as i128, 9),
            epoch: format_unix_ns(self.tb.epoch_ns as i128, 9),
        }
    }

    #[cold]
    fn out_of_range(&self, now: u64) -> Error {
        let end = self.tb.end_unix_ns();
        Error::TimeOutOfRange {
            scheme: "this layout".into(),
            time: format_unix_ns(now as i128, 9),
            year: year_of_unix_ns(end),
        }
    }
}

/// A wait of `ns` clock nanoseconds, at least 1 (a wait always lets time pass).
fn wait_ns(ns: u128) -> u64 {
    u64::try_from(ns).unwrap_or(u64::MAX).max(1)
}

fn duration_ns(ns: u128) -> Duration {
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::collections::HashSet;
    use std::sync::Arc;

    const MS: u64 = 1_000_000;
    const HOUR: u64 = 3_600_000 * MS;

    fn tb(counter_bits: u32) -> Timebase {
        Timebase {
            epoch_ns: 0,
            tick_ns: MS,
            time_bits: 48,
            counter_bits,
        }
    }

    fn policy(
        on_exhausted: OnExhausted,
        max_lead_ms: u64,
        on_clock_behind: OnClockBehind,
    ) -> Policy {
        Policy {
            on_exhausted,
            max_lead: Duration::from_millis(max_lead_ms),
            on_clock_behind,
        }
    }

    #[test]
    fn frozen_clock_counts_up_then_waits_for_next_tick() {
        let clock = ManualClock::new(1_000 * MS);
        let seq = Arc::new(Sequencer::new(clock.clone(), tb(4), Policy::DEFAULT).unwrap());
        let ids: Vec<u64> = (0..16).map(|_| seq.next().unwrap()).collect();
        assert_eq!(ids, ((1_000 << 4)..(1_000 << 4) + 16).collect::<Vec<_>>());
        // The 17th would need tick 1001: under Wait it blocks until the clock gets there.
        let s2 = seq.clone();
        let waiter = std::thread::spawn(move || s2.next().unwrap());
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiter.is_finished(),
            "Wait must block while the clock is frozen"
        );
        assert_eq!(seq.lead(), Duration::ZERO);
        clock.advance(MS);
        assert_eq!(waiter.join().unwrap(), 1_001 << 4);
    }

    #[test]
    fn run_ahead_borrows_ticks_up_to_the_bound_then_waits() {
        let clock = ManualClock::new(1_000 * MS);
        let p = policy(OnExhausted::RunAhead, 2, OnClockBehind::Fail);
        let seq = Arc::new(Sequencer::new(clock.clone(), tb(2), p).unwrap());
        // Ticks 1000, 1001, 1002 (lead 2 ms) are allowed: 12 stamps.
        let ids: Vec<u64> = (0..12).map(|_| seq.next().unwrap()).collect();
        assert_eq!(ids, ((1_000 << 2)..(1_000 << 2) + 12).collect::<Vec<_>>());
        assert_eq!(seq.lead(), Duration::from_millis(2));
        let s2 = seq.clone();
        let waiter = std::thread::spawn(move || s2.next().unwrap());
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "past the bound RunAhead must wait");
        clock.advance(MS);
        assert_eq!(waiter.join().unwrap(), 1_003 << 2);
        assert_eq!(seq.lead(), Duration::from_millis(2));
    }

    /// `lead()` measures what `take` bounds: from the reading to the start of the last stamp's
    /// tick. Counted in whole ticks it showed a stamp 400 µs ahead as 1 ms, above the 500 µs
    /// `max_lead` the stamp kept to (a re-attack; the sustained bench, `idforge serve` and the
    /// wait after opening a state file read it).
    #[test]
    fn lead_is_what_take_bounds_in_nanoseconds() {
        let clock = ManualClock::new(1_000 * MS + 600_000);
        let p = Policy {
            on_exhausted: OnExhausted::RunAhead,
            max_lead: Duration::from_micros(500),
            on_clock_behind: OnClockBehind::Fail,
        };
        let seq = Sequencer::new(clock.clone(), tb(2), p).unwrap();
        for _ in 0..4 {
            seq.next().unwrap();
        }
        assert_eq!(seq.lead(), Duration::ZERO, "tick 1000: not ahead");
        assert_eq!(
            seq.next().unwrap(),
            1_001 << 2,
            "tick 1001 starts 400 µs ahead"
        );
        assert_eq!(seq.lead(), Duration::from_micros(400));
        clock.advance(100_000);
        assert_eq!(seq.lead(), Duration::from_micros(300));
    }

    /// A manual clock that declares an error bound, as the counter and ticker clocks do.
    #[derive(Clone)]
    struct Jittery(ManualClock, u64);
    impl Clock for Jittery {
        fn now_ns(&self) -> u64 {
            self.0.now_ns()
        }
        fn max_error_ns(&self) -> u64 {
            self.1
        }
    }

    /// At the most lead the policy allows, a clock that reads a little behind its earlier
    /// reading (within its own error: a renewed calibration) is a lead to wait out, not a clock
    /// that stepped back; further back than the error it still fails. Before the bound was
    /// taken into account, `nanots` on the counter clock failed with `ClockBehind { behind:
    /// 1.000096ms, max_lead: 1ms }` within a second of two threads running ahead.
    #[test]
    fn a_clock_behind_by_no_more_than_its_error_past_the_lead_waits_instead_of_failing() {
        let clock = ManualClock::new(1_000 * MS);
        let jittery = Jittery(clock.clone(), MS / 2); // half a tick of error
        let p = policy(OnExhausted::RunAhead, 2, OnClockBehind::Fail);
        let seq = Arc::new(Sequencer::new(jittery.clone(), tb(2), p).unwrap());
        let ids: Vec<u64> = (0..12).map(|_| seq.next().unwrap()).collect();
        assert_eq!(seq.lead(), Duration::from_millis(2), "at the most lead");
        clock.step_back(MS / 2); // within the error: the last tick starts 2.5 ms ahead
        let s2 = seq.clone();
        let waiter = std::thread::spawn(move || s2.next());
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiter.is_finished(),
            "a reading within the clock's error must be waited out, not refused"
        );
        clock.advance(3 * MS / 2); // tick 1001: the next stamp (tick 1003) is 2 ticks ahead
        let next = waiter.join().unwrap().unwrap();
        assert_eq!(next, ids[11] + 1);
        // Further back than the lead and the error is a step back, refused as before, even by
        // a microsecond: the error is not rounded up to a whole tick.
        let seq = Sequencer::new(jittery.clone(), tb(2), p).unwrap();
        clock.set(2_000 * MS);
        for _ in 0..12 {
            seq.next().unwrap();
        }
        clock.step_back(MS / 2 + 1_000);
        assert!(matches!(seq.next(), Err(Error::ClockBehind { .. })));
        // A clock with no error bound refuses the half-tick case at once.
        let exact = ManualClock::new(1_000 * MS);
        let seq = Sequencer::new(exact.clone(), tb(2), p).unwrap();
        for _ in 0..12 {
            seq.next().unwrap();
        }
        exact.step_back(MS / 2);
        assert!(matches!(seq.next(), Err(Error::ClockBehind { .. })));
    }

    /// Under `Wait`, a clock one tick behind the last stamp (more than its error) stepped back:
    /// the call issues from the last stamp at once. With the error rounded up to a whole tick
    /// it was taken for the clock's error and waited out (up to two ticks: 20 ms for
    /// Sonyflake, 2 s for a one-second tick).
    #[test]
    fn under_wait_a_step_back_of_one_tick_beyond_the_error_keeps_issuing() {
        let clock = ManualClock::new(1_000 * MS + 9 * MS / 10); // late in tick 1000
        let jittery = Jittery(clock.clone(), MS / 20); // 50 µs, as the system clocks
        let p = policy(OnExhausted::Wait, 1_000, OnClockBehind::Fail);
        let seq = Arc::new(Sequencer::new(jittery, tb(2), p).unwrap());
        let first = seq.next().unwrap();
        clock.step_back(3 * MS / 2); // tick 999, 1.4 ms before the last stamp's tick
        let s2 = seq.clone();
        let taker = std::thread::spawn(move || s2.next());
        for _ in 0..100 {
            if taker.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if !taker.is_finished() {
            clock.advance(2 * MS); // release it before failing
            panic!("a step back of 1.5 ticks beyond a 50 µs error was waited out");
        }
        assert_eq!(taker.join().unwrap().unwrap(), first + 1);
        // A reading 30 µs before the last stamp's tick is within the error: it waits for that
        // tick. 60 µs before it is beyond the error: it issues at once, ahead of the reading.
        for (back, waits) in [(30_000, true), (60_000, false)] {
            let clock = ManualClock::new(1_001 * MS + 10_000);
            let seq = Arc::new(Sequencer::new(Jittery(clock.clone(), MS / 20), tb(2), p).unwrap());
            assert_eq!(seq.next().unwrap(), 1_001 << 2);
            clock.set(1_001 * MS - back);
            let s2 = seq.clone();
            let taker = std::thread::spawn(move || s2.next());
            // One that must not wait gets 2 s to finish (a loaded machine may not run the
            // thread for a while); one that must wait is still waiting after 30 ms.
            let deadline =
                std::time::Instant::now() + Duration::from_millis(if waits { 30 } else { 2_000 });
            while !taker.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(!taker.is_finished(), waits, "{back} ns back");
            clock.set(1_001 * MS);
            assert_eq!(taker.join().unwrap().unwrap(), (1_001 << 2) + 1);
        }
    }

    /// A cheap clock that lags its precise source by a settable amount, as a ticker whose
    /// thread was not scheduled.
    #[derive(Clone)]
    struct Lagging(ManualClock, Arc<std::sync::atomic::AtomicU64>);
    impl Clock for Lagging {
        fn now_ns(&self) -> u64 {
            self.0.now_ns()
                - std::sync::atomic::AtomicU64::load(&self.1, std::sync::atomic::Ordering::SeqCst)
        }
        fn now_precise_ns(&self) -> u64 {
            self.0.now_ns()
        }
    }

    /// Stamps issued from precise readings at the most lead, then the cheap reading lags by
    /// more than the lead: the call reads the precise clock, waits for the lead, and must keep
    /// reading the precise clock after the wait. Going back to the cheap one, it took the lag
    /// for a clock that stepped back and failed (`ClockBehind`, seen as `behind: 1.07ms` on
    /// `nanots` with the ticker).
    #[test]
    fn a_call_that_read_the_precise_clock_keeps_reading_it_while_it_waits() {
        let clock = ManualClock::new(1_000 * MS);
        let lag = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let p = policy(OnExhausted::RunAhead, 2, OnClockBehind::Fail);
        let seq = Arc::new(Sequencer::new(Lagging(clock.clone(), lag.clone()), tb(2), p).unwrap());
        let ids: Vec<u64> = (0..12).map(|_| seq.next().unwrap()).collect();
        std::sync::atomic::AtomicU64::store(&lag, 5 * MS, std::sync::atomic::Ordering::SeqCst); // the ticker falls 5 ms behind
        let s2 = seq.clone();
        let waiter = std::thread::spawn(move || s2.next());
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "at the most lead: it waits");
        clock.advance(MS);
        assert_eq!(waiter.join().unwrap().unwrap(), ids[11] + 1);
    }

    #[test]
    fn clock_stepped_back_an_hour_fails_without_duplicates() {
        let clock = ManualClock::new(10 * HOUR);
        let seq = Sequencer::new(clock.clone(), tb(12), Policy::DEFAULT).unwrap();
        let before = seq.next().unwrap();
        clock.step_back(HOUR);
        let err = seq.next().unwrap_err();
        assert!(
            matches!(err, Error::ClockBehind { behind, .. } if behind == Duration::from_secs(3600))
        );
        assert!(err.to_string().contains("Fix the clock"));
        assert_eq!(seq.last_stamp(), before, "a refused call issues nothing");
        assert_eq!(seq.lead(), Duration::from_secs(3600));
        clock.advance(HOUR);
        assert!(seq.next().unwrap() > before);
    }

    #[test]
    fn clock_stepped_back_within_bound_keeps_issuing_from_last() {
        let clock = ManualClock::new(10 * HOUR);
        let seq = Sequencer::new(clock.clone(), tb(2), Policy::DEFAULT).unwrap();
        let first = seq.next().unwrap();
        clock.step_back(500 * MS);
        let mut prev = first;
        // Even with the counter exhausted while behind, it keeps counting up from the last stamp
        // (into later ticks) as long as it stays within the 1 s bound.
        for _ in 0..100 {
            let s = seq.next().unwrap();
            assert_eq!(s, prev + 1);
            prev = s;
        }
        assert!(seq.lead() >= Duration::from_millis(500));
    }

    #[test]
    fn clock_stepped_back_an_hour_waits_under_wait_policy() {
        let clock = ManualClock::new(10 * HOUR);
        let p = policy(OnExhausted::Wait, 1_000, OnClockBehind::Wait);
        let seq = Arc::new(Sequencer::new(clock.clone(), tb(12), p).unwrap());
        let before = seq.next().unwrap();
        clock.step_back(HOUR);
        let s2 = seq.clone();
        let waiter = std::thread::spawn(move || s2.next().unwrap());
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiter.is_finished(),
            "Wait must block while the clock is an hour behind"
        );
        clock.advance(HOUR - 999 * MS); // now 999 ms behind: within the bound
        let after = waiter.join().unwrap();
        assert_eq!(after, before + 1, "continues right after the last stamp");
    }

    #[test]
    fn unbounded_policy_on_a_frozen_clock_never_repeats() {
        let clock = ManualClock::new(HOUR);
        let seq = Sequencer::new(clock, tb(4), Policy::UNBOUNDED).unwrap();
        let mut seen = HashSet::new();
        let mut prev = 0;
        for _ in 0..10_000 {
            let s = seq.next().unwrap();
            assert!(s > prev);
            assert!(seen.insert(s));
            prev = s;
        }
        assert_eq!(seq.lead(), Duration::from_millis(10_000 / 16 - 1));
    }

    #[test]
    fn reserve_is_contiguous_and_bounded() {
        let clock = ManualClock::new(HOUR);
        let seq = Sequencer::new(clock.clone(), tb(6), Policy::DEFAULT).unwrap();
        let r = seq.reserve(64).unwrap();
        assert_eq!(r.start, (HOUR / MS) << 6);
        assert_eq!(r.collect::<Vec<_>>().len(), 64);
        assert!(matches!(
            seq.reserve(65),
            Err(Error::ReserveTooLarge {
                requested: 65,
                max: 64
            })
        ));
        assert_eq!(seq.reserve(0).unwrap().len, 0);
        // The counter is used up in this tick, so under Wait the next range starts at tick + 1.
        clock.advance(MS);
        assert_eq!(seq.reserve(10).unwrap().start, ((HOUR / MS) + 1) << 6);
    }

    #[test]
    fn time_beyond_the_layout_names_the_year() {
        let t = Timebase {
            epoch_ns: 0,
            tick_ns: 1_000_000_000,
            time_bits: 31,
            counter_bits: 0,
        };
        // 2^31 seconds after 1970 is 2038-01-19.
        let clock = ManualClock::new((1u64 << 31) * 1_000_000_000);
        let seq = Sequencer::new(clock, t, Policy::DEFAULT).unwrap();
        match seq.next() {
            Err(Error::TimeOutOfRange { year, .. }) => assert_eq!(year, 2038),
            other => panic!("expected TimeOutOfRange, got {other:?}"),
        }
    }

    #[test]
    fn before_epoch_is_an_error() {
        let t = Timebase {
            epoch_ns: 2 * HOUR,
            tick_ns: MS,
            time_bits: 41,
            counter_bits: 12,
        };
        let seq = Sequencer::new(ManualClock::new(HOUR), t, Policy::DEFAULT).unwrap();
        assert!(matches!(seq.next(), Err(Error::BeforeEpoch { .. })));
    }

    #[test]
    fn threads_on_one_sequencer_never_collide() {
        let seq = Sequencer::new(WallClock, tb(12), Policy::DEFAULT).unwrap();
        let all: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..20_000).map(|_| seq.next().unwrap()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut set = HashSet::new();
        for v in &all {
            assert!(v.windows(2).all(|w| w[0] < w[1]));
            for s in v {
                assert!(set.insert(*s));
            }
        }
        assert_eq!(set.len(), 80_000);
    }

    /// The sequencer with the calibrated counter: a forward step of the system clock seen by
    /// one calibration before another (they live here, not in `clock`, which is below the
    /// sequencer).
    #[cfg(feature = "fast-clock")]
    mod forward_steps {
        use super::*;
        use crate::clock::calibrated::{Calibrated, PERIOD_NS};

        /// One process's calibration as a sequencer's clock.
        struct Cal<'a, R: Clock>(&'a Calibrated<R>);
        impl<R: Clock> Clock for Cal<'_, R> {
            fn now_ns(&self) -> u64 {
                self.0.now_ns()
            }
            fn now_precise_ns(&self) -> u64 {
                self.0.refresh()
            }
        }

        const T0: u64 = 1_800_000_000_000_000_000;

        fn tb12() -> Timebase {
            Timebase {
                epoch_ns: 0,
                tick_ns: 1_000_000,
                time_bits: 48,
                counter_bits: 12,
            }
        }

        /// Two processes on one stamp (a state file), each with its own calibration of the
        /// same counter. The system clock steps forward 2 s (more than the default `max_lead`):
        /// the process renewed first issues at the new time; the other, still inside its period,
        /// reads the old time, and must not be refused with `ClockBehind` for a clock that went
        /// forward. Failed before the sequencer took a precise reading before refusing.
        #[test]
        fn a_forward_step_does_not_make_a_process_not_yet_renewed_refuse() {
            let (counter, mock) = quanta::Clock::mock();
            mock.increment(1_000);
            let reference = ManualClock::new(T0);
            let p1 = Calibrated::new(counter.clone(), reference.clone());
            let p2 = Calibrated::new(counter, reference.clone());
            let advance = |ns: u64| {
                mock.increment(ns);
                reference.advance(ns);
            };
            p1.now_ns();
            advance(PERIOD_NS / 2);
            p2.now_ns(); // renewed half a period after P1
            let stamp = std::sync::atomic::AtomicU64::new(0);
            let s1 = Sequencer::with_cell(Cal(&p1), &stamp, tb12(), Policy::DEFAULT).unwrap();
            let s2 = Sequencer::with_cell(Cal(&p2), &stamp, tb12(), Policy::DEFAULT).unwrap();
            s2.next().unwrap();
            reference.advance(2_000_000_000);
            advance(PERIOD_NS * 6 / 10); // P1's calibration is expired, P2's is not
            let a = s1.next().unwrap();
            assert_eq!(a >> 12, reference.now_ns() / 1_000_000, "P1 sees the step");
            let b = s2.next();
            assert!(b.is_ok(), "P2 refused after a forward step: {b:?}");
            // P2's precise reading renewed its calibration: it reads the new time from now on.
            assert_eq!(p2.now_ns(), reference.now_ns());
        }

        /// The same beside a process reading `CLOCK_REALTIME` itself (`--clock precise`, nanots).
        #[test]
        fn a_forward_step_does_not_make_a_fast_process_refuse_beside_a_precise_one() {
            let (counter, mock) = quanta::Clock::mock();
            mock.increment(1_000);
            let reference = ManualClock::new(T0);
            let fast = Calibrated::new(counter, reference.clone());
            fast.now_ns();
            let stamp = std::sync::atomic::AtomicU64::new(0);
            let precise =
                Sequencer::with_cell(reference.clone(), &stamp, tb12(), Policy::DEFAULT).unwrap();
            let counted =
                Sequencer::with_cell(Cal(&fast), &stamp, tb12(), Policy::DEFAULT).unwrap();
            mock.increment(PERIOD_NS / 10);
            reference.advance(PERIOD_NS / 10 + 2_000_000_000);
            precise.next().unwrap();
            let r = counted.next();
            assert!(
                r.is_ok(),
                "the fast process refused after a forward step: {r:?}"
            );
        }
    }
}
