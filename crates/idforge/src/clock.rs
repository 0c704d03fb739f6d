//! Clocks: where the time in an id comes from.
//!
//! A [`Clock`] reads nanoseconds since the Unix epoch. Generators are generic over their clock, so
//! the choice costs nothing on the hot path: [`WallClock`] compiles down to one
//! `clock_gettime(CLOCK_REALTIME)` (a vDSO call on Linux). [`ManualClock`] is for tests, examples
//! and backfills: it can be set, advanced, stepped back and frozen, and clones share one time.
//!
//! Timestamps in ids are wall time. Monotonicity does not come from the clock (wall clocks step
//! back) but from the [`Sequencer`](crate::Sequencer).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of nanoseconds since the Unix epoch (1970-01-01T00:00:00Z).
///
/// ```
/// use idforge::{Clock, WallClock};
/// let now = WallClock.now_ns();
/// assert!(now > 1_600_000_000_000_000_000); // after September 2020
/// ```
pub trait Clock: Send + Sync {
    /// Nanoseconds since the Unix epoch. A clock set before 1970 reads as 0.
    fn now_ns(&self) -> u64;

    /// Lets time pass while a sequencer waits for the clock to reach a later tick.
    ///
    /// `ns` is how far the clock is from the tick waited for. The wall clock sleeps (or yields
    /// for short waits); the manual clock only yields, because its time moves when a test moves it.
    fn pause(&self, ns: u64) {
        if ns >= 200_000 {
            // Sleep a little less than needed: oversleeping costs throughput, waking early a loop.
            std::thread::sleep(Duration::from_nanos(ns - 100_000));
        } else {
            std::thread::yield_now();
        }
    }
}

/// The system's real-time clock (`SystemTime`, `CLOCK_REALTIME` on Linux).
///
/// It may step backwards (NTP corrections, a manual change): the sequencer handles that.
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl Clock for WallClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            // u64 nanoseconds last until 2554; saturate rather than wrap after that.
            Ok(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
            Err(_) => 0,
        }
    }
}

/// A clock that moves only when told to: for tests, reproducible examples and backfills.
///
/// Clones share the same time, so a test can keep one handle and give another to a generator.
/// Optionally it advances by a fixed step on every read ([`ManualClock::auto_advance`]);
/// [`ManualClock::freeze`] stops that.
///
/// ```
/// use idforge::{Clock, ManualClock};
/// let clock = ManualClock::new(1_000);
/// let handle = clock.clone();
/// handle.advance(500);
/// assert_eq!(clock.now_ns(), 1_500);
/// handle.step_back(2_000);
/// assert_eq!(clock.now_ns(), 0); // saturates at the epoch
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    inner: Arc<ManualState>,
}

#[derive(Debug, Default)]
struct ManualState {
    now: AtomicU64,
    step: AtomicU64,
}

impl ManualClock {
    /// A frozen clock reading `ns` nanoseconds since the Unix epoch.
    pub fn new(ns: u64) -> Self {
        let clock = Self::default();
        clock.set(ns);
        clock
    }

    /// A frozen clock at the current wall-clock time.
    pub fn at_wall_time() -> Self {
        Self::new(WallClock.now_ns())
    }

    /// Sets the time, forwards or backwards.
    pub fn set(&self, ns: u64) {
        self.inner.now.store(ns, Ordering::SeqCst);
    }

    /// Moves the time forward by `ns` (saturating).
    pub fn advance(&self, ns: u64) {
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .inner
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(ns))
            });
    }

    /// Moves the time back by `ns` (saturating at the epoch).
    pub fn step_back(&self, ns: u64) {
        let _ = self
            .inner
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_sub(ns))
            });
    }

    /// Makes every read advance the clock by `step_ns` after returning the current time.
    pub fn auto_advance(&self, step_ns: u64) {
        self.inner.step.store(step_ns, Ordering::SeqCst);
    }

    /// Stops automatic advancing: the clock stands still until set or advanced.
    pub fn freeze(&self) {
        self.auto_advance(0);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        let step = self.inner.step.load(Ordering::SeqCst);
        if step == 0 {
            self.inner.now.load(Ordering::SeqCst)
        } else {
            self.inner.now.fetch_add(step, Ordering::SeqCst)
        }
    }

    fn pause(&self, _ns: u64) {
        std::thread::yield_now();
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
    fn pause(&self, ns: u64) {
        (**self).pause(ns)
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
    fn pause(&self, ns: u64) {
        (**self).pause(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_is_after_2020_and_moves() {
        let a = WallClock.now_ns();
        std::thread::sleep(Duration::from_millis(2));
        let b = WallClock.now_ns();
        assert!(a > 1_577_836_800_000_000_000);
        assert!(b > a);
    }

    #[test]
    fn manual_clock_set_advance_back_freeze() {
        let c = ManualClock::new(10);
        c.advance(5);
        assert_eq!(c.now_ns(), 15);
        c.step_back(20);
        assert_eq!(c.now_ns(), 0);
        c.set(100);
        c.auto_advance(3);
        assert_eq!(c.now_ns(), 100);
        assert_eq!(c.now_ns(), 103);
        c.freeze();
        assert_eq!(c.now_ns(), 106);
        assert_eq!(c.now_ns(), 106);
    }
}
