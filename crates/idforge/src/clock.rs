//! Clocks: where the time in an id comes from.
//!
//! A [`Clock`] reads nanoseconds since the Unix epoch. Generators are generic over their clock, so
//! the choice costs nothing on the hot path:
//!
//! * [`SystemClock`], the default of every generator: the system's real-time clock read the
//!   cheap way, a CPU time-stamp counter calibrated against `CLOCK_REALTIME` every 200 µs
//!   (error at most [`SystemClock::MAX_ERROR`]), for every layout whose tick is at least that
//!   bound; `CLOCK_REALTIME` itself for finer ticks (`nanots`) or when asked
//!   ([`SystemClock::precise`]);
//! * [`WallClock`]: always one `clock_gettime(CLOCK_REALTIME)` (a vDSO call on Linux);
//! * [`ManualClock`] is for tests, examples and backfills: it can be set, advanced, stepped back
//!   and frozen, and clones share one time.
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
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new(1_700_000_000_000_000_000).now_ns(), 1_700_000_000_000_000_000);
    /// ```
    fn now_ns(&self) -> u64;

    /// A reading straight from the clock's source, which the sequencer takes before it refuses
    /// or waits because the clock looks behind: a cheap reading that lags (a calibration not
    /// yet renewed after the system clock was stepped forward, a ticker not yet woken) must
    /// not make a process refuse ids that another process, reading the same system clock
    /// afresh, issues. The default is [`Clock::now_ns`].
    ///
    /// ```
    /// use idforge::{Clock, SystemClock, WallClock};
    /// let fast = SystemClock::fast();
    /// let precise = fast.now_precise_ns(); // a CLOCK_REALTIME reading, whatever the clock
    /// assert!(precise <= WallClock.now_ns());
    /// ```
    fn now_precise_ns(&self) -> u64 {
        self.now_ns()
    }

    /// How far (in nanoseconds) the readings stamps were issued from may be ahead of a later
    /// *precise* reading of this clock ([`Clock::now_precise_ns`]) without the clock having
    /// stepped back: the error of the cheapest clock that may issue into the same stamp (a
    /// renewed calibration reads a little below the one before it; a process on the counter
    /// shares a state file with one on `CLOCK_REALTIME`). The sequencer takes a clock up to
    /// this much behind as not stepped back: past the lead, a lead to wait out rather than
    /// `ClockBehind`; under `OnExhausted::Wait`, a reason to wait rather than to continue from
    /// the last stamp. It compares only precise readings with this bound: a cheap reading that
    /// lags by more (a ticker whose thread was not scheduled) is read again precisely before
    /// any such decision, so a lag need not be declared here. The
    /// system clocks (fast, precise, [`WallClock`], the ticker) declare
    /// [`SystemClock::MAX_ERROR`]; 0, the default, is for a clock that is the only one on its
    /// stamp and never goes back by itself (a manual clock).
    ///
    /// ```
    /// use idforge::{Clock, ManualClock, SystemClock, WallClock};
    /// assert_eq!(ManualClock::new(0).max_error_ns(), 0);
    /// assert_eq!(WallClock.max_error_ns(), SystemClock::MAX_ERROR.as_nanos() as u64);
    /// ```
    fn max_error_ns(&self) -> u64 {
        0
    }

    /// Lets time pass while a sequencer waits for the clock to reach a later tick.
    ///
    /// `ns` is how far the clock is from the tick waited for. The wall clock sleeps (or yields
    /// for short waits); the manual clock only yields, because its time moves when a test moves it.
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// let clock = ManualClock::new(5);
    /// clock.pause(1_000_000); // a manual clock only yields: its time moves when it is moved
    /// assert_eq!(clock.now_ns(), 5);
    /// ```
    fn pause(&self, ns: u64) {
        if ns >= 200_000 {
            // Sleep a little less than needed: oversleeping costs throughput, waking early a loop.
            // To a deadline, so that frequent signals cannot stretch it (see `sleep_ns`).
            sleep_ns(ns - 100_000);
        } else {
            std::thread::yield_now();
        }
    }
}

/// The system's real-time clock (`SystemTime`, `CLOCK_REALTIME` on Linux).
///
/// It may step backwards (NTP corrections, a manual change): the sequencer handles that.
///
/// ```
/// use idforge::{Clock, WallClock};
/// use std::time::{SystemTime, UNIX_EPOCH};
/// let system = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
/// let now = WallClock.now_ns();
/// assert!(now > 1_600_000_000_000_000_000); // after September 2020
/// assert!(now.abs_diff(system) < 1_000_000_000); // the same clock, read twice
/// ```
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

    /// [`SystemClock::MAX_ERROR`]: a process on the counter may share the stamp.
    fn max_error_ns(&self) -> u64 {
        SystemClock::MAX_ERROR.as_nanos() as u64
    }
}

/// The system's real-time clock, read the cheapest way whose error fits the layout.
///
/// Reading `CLOCK_REALTIME` costs a vDSO call (30–70 ns on a virtual machine). A fast
/// `SystemClock` reads the CPU's time-stamp counter instead (through the `quanta` crate, which
/// checks that the counter is invariant) and converts it with a calibration against
/// `CLOCK_REALTIME` that the first reader after each 200 µs renews. It is used only where the
/// kernel itself keeps time with that counter (clock source `tsc`: the kernel checked at boot
/// that the CPUs' counters agree); elsewhere every reading is `CLOCK_REALTIME`. So it follows the
/// real-time clock, slewing and steps included:
///
/// * between renewals it is off by at most [`SystemClock::MAX_ERROR`]: the calibration's own
///   sampling window is at most 2 µs, and 200 µs of a counter whose converted rate differs from
///   the real-time clock's by up to 20 % adds 40 µs (the real-time clock may be slewed by 8 %,
///   chrony's largest default slew, or have its tick changed by 10 % through `adjtimex`; and
///   `quanta` measured the counter's rate once, against a monotonic clock that may have been
///   slewed as much). In practice it is within a few hundred nanoseconds (`idforge bench`
///   measures it);
/// * after the real-time clock is **stepped**, it reads the old time for at most 200 µs (the
///   next renewal sees the step). Before it refuses or waits because the clock looks behind,
///   the sequencer asks for a precise reading ([`Clock::now_precise_ns`]), so a process whose
///   calibration is not yet renewed does not refuse ids another process issues at the new
///   time.
///
/// Uniqueness and order never depend on the clock: the [`Sequencer`](crate::Sequencer) is the
/// authority. [`SystemClock::for_tick`] picks the fast reading for ticks of at least
/// `MAX_ERROR` (every millisecond layout) and the precise one below (`nanots`' 32 ns tick).
/// Without the crate's `fast-clock` feature every `SystemClock` is precise.
///
/// ```
/// use idforge::{Clock, SystemClock, WallClock};
/// let fast = SystemClock::fast();
/// fast.now_ns(); // the first read in a process measures the counter's rate (about 1 ms)
/// let (a, b, c) = (WallClock.now_ns(), fast.now_ns(), WallClock.now_ns());
/// let bound = SystemClock::MAX_ERROR.as_nanos() as u64;
/// assert!(a <= b + bound && b <= c + bound); // within 50 µs (much closer in practice)
/// assert!(SystemClock::for_tick(32).is_precise());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemClock {
    precise: bool,
}

impl SystemClock {
    /// The most a fast reading is off the real-time clock, apart from the millisecond after the
    /// real-time clock is stepped.
    pub const MAX_ERROR: Duration = Duration::from_micros(50);

    /// The counter-based reading (precise when the crate is built without `fast-clock`).
    ///
    /// ```
    /// use idforge::SystemClock;
    /// assert_eq!(SystemClock::fast().is_precise(), !cfg!(feature = "fast-clock"));
    /// assert_eq!(SystemClock::default(), SystemClock::fast());
    /// ```
    pub const fn fast() -> SystemClock {
        SystemClock {
            precise: !cfg!(feature = "fast-clock"),
        }
    }

    /// Every reading is a `clock_gettime(CLOCK_REALTIME)`, like [`WallClock`].
    ///
    /// ```
    /// use idforge::{Clock, SystemClock, WallClock};
    /// let c = SystemClock::precise();
    /// assert!(c.is_precise());
    /// assert!(c.now_ns() <= WallClock.now_ns());
    /// ```
    pub const fn precise() -> SystemClock {
        SystemClock { precise: true }
    }

    /// The fast reading when `tick_ns` is at least [`SystemClock::MAX_ERROR`], else the precise one.
    ///
    /// ```
    /// use idforge::SystemClock;
    /// assert!(SystemClock::for_tick(32).is_precise()); // nanots' 32 ns tick
    /// assert_eq!(SystemClock::for_tick(1_000_000), SystemClock::fast()); // a millisecond tick
    /// ```
    pub const fn for_tick(tick_ns: u64) -> SystemClock {
        if tick_ns >= SystemClock::MAX_ERROR.as_nanos() as u64 {
            SystemClock::fast()
        } else {
            SystemClock::precise()
        }
    }

    /// Whether every reading is a `CLOCK_REALTIME` call.
    ///
    /// ```
    /// use idforge::SystemClock;
    /// assert!(SystemClock::precise().is_precise());
    /// ```
    pub const fn is_precise(&self) -> bool {
        self.precise
    }
}

impl Default for SystemClock {
    /// The fast reading.
    fn default() -> Self {
        SystemClock::fast()
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        #[cfg(feature = "fast-clock")]
        if !self.precise {
            if let Some(c) = calibrated::global() {
                return c.now_ns();
            }
        }
        WallClock.now_ns()
    }

    /// [`SystemClock::MAX_ERROR`], for the fast reading and the precise one alike: a renewed
    /// calibration may read a little below the one before it, either may be ahead of
    /// `CLOCK_REALTIME`, and a process on the precise clock may share its stamp (a state file)
    /// with one on the counter.
    fn max_error_ns(&self) -> u64 {
        SystemClock::MAX_ERROR.as_nanos() as u64
    }

    /// `CLOCK_REALTIME`, renewing the calibration from that reading when it can.
    fn now_precise_ns(&self) -> u64 {
        #[cfg(feature = "fast-clock")]
        if !self.precise {
            if let Some(c) = calibrated::global() {
                return c.refresh();
            }
        }
        WallClock.now_ns()
    }
}

#[cfg(feature = "fast-clock")]
pub(crate) mod calibrated {
    //! A counter calibrated against a reference clock, renewed every period.

    use std::sync::atomic::{fence, AtomicU64, Ordering};
    use std::sync::OnceLock;

    use super::{Clock, WallClock};

    /// How often the calibration is renewed.
    pub(crate) const PERIOD_NS: u64 = 200_000;
    /// The widest sampling window (in counter time) a calibration is taken from.
    pub(crate) const WINDOW_NS: u64 = 2_000;
    /// `base_raw` while a calibration is being written: outside every reader's range.
    const WRITING: u64 = u64::MAX;

    /// The process's calibration of the time-stamp counter against `CLOCK_REALTIME`; `None`
    /// where the kernel does not keep time with that counter.
    #[inline]
    pub(crate) fn global() -> Option<&'static Calibrated<WallClock>> {
        static GLOBAL: OnceLock<Option<Calibrated<WallClock>>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                kernel_uses_tsc().then(|| Calibrated::new(quanta::Clock::new(), WallClock))
            })
            .as_ref()
    }

    /// Whether the kernel's clock source is the time-stamp counter: it then checked at boot
    /// that the CPUs' counters agree (unsynchronised counters make it pick another source), and
    /// `CLOCK_REALTIME` is itself the counter scaled. On other sources (`kvm-clock`, `hpet`,
    /// ...) counters of two CPUs may differ by more than the error bound.
    fn kernel_uses_tsc() -> bool {
        cfg!(any(target_arch = "x86", target_arch = "x86_64"))
            && std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .is_ok_and(|s| s.trim() == "tsc")
    }

    /// Counter readings converted to the reference's time: `base_wall + (raw - base_raw)`, with
    /// `base_*` renewed by the first reader more than a period after them. `base_raw` doubles as
    /// the sequence word of a seqlock: a reader that sees it change (or `WRITING`) reads the
    /// reference instead.
    #[repr(align(128))]
    pub(crate) struct Calibrated<R: Clock> {
        base_raw: AtomicU64,
        base_wall: AtomicU64,
        /// The process id of the thread renewing the calibration; 0 when none is. Within a
        /// process renewals never overlap (a thread stalled in one holds it, and the others read
        /// the reference meanwhile), so two writers never mix their samples. A renewal held by
        /// another process id was inherited through a fork from a thread that does not exist
        /// here, and is taken over.
        busy: AtomicU64,
        period_raw: u64,
        window_raw: u64,
        counter: quanta::Clock,
        reference: R,
    }

    impl<R: Clock> Calibrated<R> {
        pub(crate) fn new(counter: quanta::Clock, reference: R) -> Self {
            // Counter units in 2^32 of them, to convert the period and window to counter units.
            let per = counter.delta_as_nanos(0, 1 << 32).max(1) as u128;
            let units = |ns: u64| ((ns as u128) << 32).div_ceil(per).max(1) as u64;
            Calibrated {
                base_raw: AtomicU64::new(WRITING),
                base_wall: AtomicU64::new(0),
                busy: AtomicU64::new(0),
                period_raw: units(PERIOD_NS),
                window_raw: units(WINDOW_NS),
                counter,
                reference,
            }
        }

        #[inline]
        pub(crate) fn now_ns(&self) -> u64 {
            let raw = self.counter.raw();
            let base = self.base_raw.load(Ordering::Acquire);
            // One comparison covers both a stale calibration and a counter behind it.
            if raw.wrapping_sub(base) < self.period_raw && base != WRITING {
                let wall = self.base_wall.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if self.base_raw.load(Ordering::Relaxed) == base {
                    return wall.saturating_add(self.counter.delta_as_nanos(base, raw));
                }
            }
            self.renew()
        }

        /// The reference's reading, renewing the calibration from it when no other thread is.
        pub(crate) fn refresh(&self) -> u64 {
            self.renew()
        }

        /// Reads the reference, and renews the calibration from that reading when no other
        /// thread is and the reading's window is narrow enough.
        #[cold]
        fn renew(&self) -> u64 {
            let me = u64::from(std::process::id());
            let taken = self.busy.load(Ordering::Relaxed);
            if taken == me
                || self
                    .busy
                    .compare_exchange(taken, me, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
            {
                return self.reference.now_ns();
            }
            let r1 = self.counter.raw();
            let wall = self.reference.now_ns();
            let r2 = self.counter.raw();
            if r2 >= r1 && r2 - r1 <= self.window_raw {
                let mid = r1 + (r2 - r1) / 2;
                self.base_raw.store(WRITING, Ordering::Relaxed);
                fence(Ordering::Release);
                self.base_wall.store(wall, Ordering::Relaxed);
                self.base_raw.store(mid, Ordering::Release);
            }
            self.busy.store(0, Ordering::Release);
            wall
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::clock::ManualClock;
        use std::sync::Arc;

        /// A calibration on a mock counter (1 unit = 1 ns) against a manual reference.
        fn mocked() -> (Calibrated<ManualClock>, Arc<quanta::Mock>, ManualClock) {
            let (counter, mock) = quanta::Clock::mock();
            mock.increment(1_000);
            let reference = ManualClock::new(1_700_000_000_000_000_000);
            (Calibrated::new(counter, reference.clone()), mock, reference)
        }

        #[test]
        fn follows_the_counter_between_renewals_and_sees_a_step_within_a_period() {
            let (c, mock, reference) = mocked();
            let t0 = reference.now_ns();
            assert_eq!(c.now_ns(), t0, "the first reading calibrates");
            mock.increment(300);
            assert_eq!(
                c.now_ns(),
                t0 + 300,
                "between renewals the counter moves it"
            );
            // The real-time clock is stepped forward a second; the counter does not see it...
            reference.advance(1_000_000_000);
            mock.increment(PERIOD_NS / 2);
            assert_eq!(c.now_ns(), t0 + 300 + PERIOD_NS / 2);
            // ...until the calibration is a period old.
            mock.increment(PERIOD_NS / 2);
            assert_eq!(c.now_ns(), reference.now_ns());
            mock.increment(50);
            assert_eq!(c.now_ns(), reference.now_ns() + 50);
        }

        #[test]
        fn a_counter_behind_its_calibration_renews_it() {
            let (c, mock, reference) = mocked();
            c.now_ns();
            mock.decrement(500);
            reference.advance(7);
            assert_eq!(c.now_ns(), reference.now_ns());
        }

        #[test]
        fn a_reading_taken_over_a_wide_window_is_not_used_as_a_calibration() {
            /// A reference whose reading takes 10 µs of counter time.
            struct Slow(Arc<quanta::Mock>, ManualClock);
            impl Clock for Slow {
                fn now_ns(&self) -> u64 {
                    self.0.increment(10_000);
                    self.1.now_ns()
                }
            }
            let (counter, mock) = quanta::Clock::mock();
            mock.increment(1_000);
            let reference = ManualClock::new(5_000_000_000);
            let c = Calibrated::new(counter, Slow(mock.clone(), reference.clone()));
            assert_eq!(c.now_ns(), 5_000_000_000);
            reference.advance(1);
            // No calibration was kept: every reading goes to the reference.
            assert_eq!(c.now_ns(), 5_000_000_001);
            assert_eq!(c.base_raw.load(Ordering::Relaxed), WRITING);
        }

        #[test]
        fn a_renewal_under_way_in_this_process_is_left_to_it_and_an_inherited_one_taken_over() {
            let (c, mock, reference) = mocked();
            c.now_ns();
            mock.increment(PERIOD_NS + 1);
            // Another thread of this process is renewing (or stalled while renewing).
            let me = u64::from(std::process::id());
            c.busy.store(me, Ordering::Relaxed);
            reference.advance(1_000_000_000);
            // A reader leaves the renewal to it: it reads the reference, and the calibration
            // stays as it was however long that thread takes (no second writer mixes samples).
            let before = c.base_raw.load(Ordering::Relaxed);
            for _ in 0..3 {
                mock.increment(PERIOD_NS + 1);
                assert_eq!(c.now_ns(), reference.now_ns());
            }
            assert_eq!(c.base_raw.load(Ordering::Relaxed), before);
            // A renewal held by another process id was inherited through a fork: its thread
            // does not exist here, and the first reader takes it over.
            c.busy.store(me + 1, Ordering::Relaxed);
            reference.advance(5);
            assert_eq!(c.now_ns(), reference.now_ns());
            mock.increment(10);
            assert_eq!(c.now_ns(), reference.now_ns() + 10);
            assert_eq!(c.busy.load(Ordering::Relaxed), 0);
        }

        /// The real counter against `CLOCK_REALTIME`: every reading bracketed by two real-time
        /// readings at most 2 µs apart is within `MAX_ERROR` of the bracket.
        #[test]
        fn the_real_counter_stays_within_max_error_of_the_real_time_clock() {
            // A calibration of its own on the real counter (whatever the kernel's clock source:
            // `global()` would not use the counter off `tsc`, this test still does).
            let c = Calibrated::new(quanta::Clock::new(), WallClock);
            let bound = crate::clock::SystemClock::MAX_ERROR.as_nanos() as u64;
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
            let (mut kept, mut worst) = (0u64, 0u64);
            while std::time::Instant::now() < deadline {
                let w1 = WallClock.now_ns();
                let f = c.now_ns();
                let w2 = WallClock.now_ns();
                if w2 < w1 || w2 - w1 > 2_000 {
                    continue; // preempted, or the clock stepped: not a measurement
                }
                kept += 1;
                let err = w1.saturating_sub(f).max(f.saturating_sub(w2));
                worst = worst.max(err);
                assert!(
                    err <= bound,
                    "counter clock off by {err} ns (bound {bound} ns) after {kept} readings"
                );
            }
            assert!(kept > 1_000, "only {kept} usable readings in 300 ms");
            eprintln!("{kept} readings, worst error {worst} ns");
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
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// let clock = ManualClock::new(42);
    /// assert_eq!((clock.now_ns(), clock.now_ns()), (42, 42)); // frozen
    /// ```
    pub fn new(ns: u64) -> Self {
        let clock = Self::default();
        clock.set(ns);
        clock
    }

    /// A frozen clock at the current wall-clock time.
    ///
    /// ```
    /// use idforge::{Clock, ManualClock, WallClock};
    /// let before = WallClock.now_ns();
    /// let clock = ManualClock::at_wall_time();
    /// assert!(clock.now_ns() >= before && clock.now_ns() <= WallClock.now_ns());
    /// ```
    pub fn at_wall_time() -> Self {
        Self::new(WallClock.now_ns())
    }

    /// Sets the time, forwards or backwards.
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// let clock = ManualClock::new(1_000);
    /// clock.set(10);
    /// assert_eq!(clock.now_ns(), 10);
    /// ```
    pub fn set(&self, ns: u64) {
        self.inner.now.store(ns, Ordering::SeqCst);
    }

    /// Moves the time forward by `ns` (saturating).
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// let clock = ManualClock::new(u64::MAX - 1);
    /// clock.advance(5);
    /// assert_eq!(clock.now_ns(), u64::MAX); // saturates
    /// ```
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
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// let clock = ManualClock::new(3_000);
    /// clock.step_back(1_000);
    /// assert_eq!(clock.now_ns(), 2_000);
    /// ```
    pub fn step_back(&self, ns: u64) {
        let _ = self
            .inner
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_sub(ns))
            });
    }

    /// Makes every read advance the clock by `step_ns` after returning the current time.
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// let clock = ManualClock::new(100);
    /// clock.auto_advance(10);
    /// assert_eq!([clock.now_ns(), clock.now_ns(), clock.now_ns()], [100, 110, 120]);
    /// ```
    pub fn auto_advance(&self, step_ns: u64) {
        self.inner.step.store(step_ns, Ordering::SeqCst);
    }

    /// Stops automatic advancing: the clock stands still until set or advanced.
    ///
    /// ```
    /// use idforge::{Clock, ManualClock};
    /// let clock = ManualClock::new(100);
    /// clock.auto_advance(10);
    /// clock.now_ns();
    /// clock.freeze();
    /// assert_eq!([clock.now_ns(), clock.now_ns()], [110, 110]);
    /// ```
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
    fn now_precise_ns(&self) -> u64 {
        (**self).now_precise_ns()
    }
    fn max_error_ns(&self) -> u64 {
        (**self).max_error_ns()
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
    fn now_precise_ns(&self) -> u64 {
        (**self).now_precise_ns()
    }
    fn max_error_ns(&self) -> u64 {
        (**self).max_error_ns()
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

/// Sleeps `ns` nanoseconds, to a deadline on `CLOCK_MONOTONIC`: a signal interrupts the sleep
/// and it resumes toward the same deadline. (A relative sleep, as `std::thread::sleep`,
/// restarts with the time the kernel says is left, which grows by the timer slack at every
/// interruption: a signal every 50 µs kept a 1 ms pause from ever ending.)
#[allow(unsafe_code)] // clock_gettime and clock_nanosleep
fn sleep_ns(ns: u64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current time into `ts`; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let total = ts.tv_nsec as u64 + ns % 1_000_000_000;
    ts.tv_sec += (ns / 1_000_000_000 + total / 1_000_000_000) as libc::time_t;
    ts.tv_nsec = (total % 1_000_000_000) as libc::c_long;
    loop {
        // SAFETY: `ts` is a valid absolute time; no remaining time is asked for (null).
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

#[cfg(test)]
#[allow(unsafe_code)] // sigaction, pthread_kill: signals at a sleeping thread
mod sleep_tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    extern "C" fn nothing(_: libc::c_int) {}

    /// A 1 ms pause while the thread gets a signal (with a handler, so each one interrupts the
    /// sleep) every 10 µs: ends. `std::thread::sleep` in its place never ended (seen: the
    /// channel's wait below ran out).
    fn ends_under_signals(sleep: fn(u64)) -> bool {
        // SAFETY: installs a handler that does nothing, without SA_RESTART, for SIGURG (which
        // nothing else here uses; its default action is to ignore it).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
            libc::sigaction(libc::SIGURG, &sa, std::ptr::null_mut());
        }
        let (tx, rx) = mpsc::channel();
        let (ptx, prx) = mpsc::channel();
        let sleeper = std::thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            ptx.send(unsafe { libc::pthread_self() } as usize).unwrap();
            sleep(1_000_000);
            let _ = tx.send(());
        });
        let thread = prx.recv().unwrap() as libc::pthread_t;
        let stop = Arc::new(AtomicBool::new(false));
        let stopper = stop.clone();
        let signaller = std::thread::spawn(move || {
            while !stopper.load(Ordering::Relaxed) {
                // SAFETY: the sleeper thread is alive until `stop` is set (joined after).
                unsafe { libc::pthread_kill(thread, libc::SIGURG) };
                // A spin, not a sleep: signals more often than the timer slack (50 µs).
                let t = std::time::Instant::now();
                while t.elapsed() < Duration::from_micros(10) {
                    std::hint::spin_loop();
                }
            }
        });
        // 10 s for a 1 ms pause: only a pause that never ends runs out.
        let ended = rx.recv_timeout(Duration::from_secs(10)).is_ok();
        stop.store(true, Ordering::Relaxed);
        signaller.join().unwrap();
        if ended {
            sleeper.join().unwrap();
        }
        ended
    }

    #[test]
    fn a_pause_ends_while_signals_keep_interrupting_it() {
        assert!(ends_under_signals(super::sleep_ns));
    }
}
