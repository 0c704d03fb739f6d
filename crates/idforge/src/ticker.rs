//! [`TickerClock`]: the real-time clock as a value a background thread refreshes, for callers who
//! trade the time's accuracy for the cheapest possible read.
//!
//! A read is two relaxed loads (the value and the fork generation): about a nanosecond, against
//! 10–15 ns for [`SystemClock`]'s counter and 30–70 ns for `CLOCK_REALTIME` on a virtual
//! machine. The price is the time's accuracy: the value lags the real-time clock by up to one
//! refresh period (100 µs) plus however long the system takes to wake the refreshing thread,
//! which on an overloaded machine has **no bound** (milliseconds are common, and a process
//! stopped and continued reads an old value until the thread runs again). This is the clock
//! ferroid and quanta's `recent()` use by default. `idforge bench --clock ticker` measures the
//! lag on the machine at hand.
//!
//! Uniqueness and order do not depend on it: the sequencer is the authority, as with every
//! clock. A lagging value only makes ids carry an older time (and, under the `Wait` policy, an
//! exhausted tick wait for the value to move on).
//!
//! After a `fork()` the child has no refreshing thread; its first read starts one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::error::Error;

/// How often the value is refreshed.
pub const PERIOD: Duration = Duration::from_micros(100);

/// The real-time clock as a value refreshed every [`PERIOD`] by a background thread. See the
/// [module documentation](self) for what it costs and what it gives up.
///
/// ```
/// use idforge::{Clock, WallClock};
/// use idforge::ticker::TickerClock;
/// let ticker = TickerClock::start()?;
/// let lag = WallClock.now_ns().saturating_sub(ticker.now_ns());
/// assert!(lag < 5_000_000_000); // usually well under a millisecond
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TickerClock {
    ticker: &'static Ticker,
}

#[derive(Debug)]
#[repr(align(128))]
struct Ticker {
    /// The last value the thread read.
    now: AtomicU64,
    /// The fork generation the refreshing thread runs in.
    generation: AtomicU64,
    /// Held while a thread is started.
    starting: Mutex<()>,
}

impl TickerClock {
    /// The process's ticker clock, starting its refreshing thread if it is not running.
    ///
    /// # Errors
    /// [`Error::ClockUnavailable`] when the thread cannot be spawned, or fork detection cannot
    /// be set up (without it a forked child would read a value that never moves).
    ///
    /// ```
    /// use idforge::ticker::TickerClock;
    /// use idforge::{Clock, WallClock};
    /// let t = TickerClock::start()?; // once per process; later calls share the thread
    /// assert!(t.now_ns() <= WallClock.now_ns() + 1_000_000_000);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn start() -> Result<TickerClock, Error> {
        if !crate::shm::watch_forks() {
            return Err(Error::ClockUnavailable(
                "pthread_atfork failed, so forks could not be detected".into(),
            ));
        }
        let ticker = TICKER.get_or_init(|| Ticker {
            now: AtomicU64::new(SystemClock::fast().now_ns()),
            generation: AtomicU64::new(u64::MAX),
            starting: Mutex::new(()),
        });
        ticker.ensure_running()?;
        Ok(TickerClock { ticker })
    }

    /// How far the value is behind the real-time clock now.
    ///
    /// ```
    /// use idforge::ticker::TickerClock;
    /// let t = TickerClock::start()?;
    /// // Refreshed every 100 µs; a loaded machine can delay the thread, so only a loose bound here.
    /// assert!(t.lag() < std::time::Duration::from_secs(60));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn lag(&self) -> Duration {
        Duration::from_nanos(
            crate::clock::WallClock
                .now_ns()
                .saturating_sub(self.now_ns()),
        )
    }
}

static TICKER: OnceLock<Ticker> = OnceLock::new();

impl Ticker {
    /// Starts the refreshing thread unless one runs in this process.
    fn ensure_running(&'static self) -> Result<(), Error> {
        let generation = crate::shm::fork_generation();
        if self.generation.load(Ordering::Acquire) == generation {
            return Ok(());
        }
        let _guard = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        if self.generation.load(Ordering::Acquire) == generation {
            return Ok(());
        }
        self.now
            .store(SystemClock::fast().now_ns(), Ordering::Relaxed);
        std::thread::Builder::new()
            .name("idforge-ticker".into())
            .spawn(move || self.run(generation))
            .map_err(|e| Error::ClockUnavailable(format!("cannot start its thread: {e}")))?;
        self.generation.store(generation, Ordering::Release);
        Ok(())
    }

    /// Refreshes the value for as long as the process runs (a forked child starts its own).
    fn run(&self, generation: u64) {
        let clock = SystemClock::fast();
        while crate::shm::fork_generation() == generation {
            self.now.store(clock.now_ns(), Ordering::Relaxed);
            std::thread::sleep(PERIOD);
        }
    }

    #[cold]
    fn restart(&'static self) -> u64 {
        // A failure to spawn leaves the value as it is: still a valid reading, only older; the
        // next read tries again.
        let _ = self.ensure_running();
        self.now.load(Ordering::Relaxed)
    }
}

impl Clock for TickerClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        if self.ticker.generation.load(Ordering::Relaxed) != crate::shm::fork_generation() {
            return self.ticker.restart();
        }
        self.ticker.now.load(Ordering::Relaxed)
    }

    /// The system clock's reading (the calibrated counter).
    fn now_precise_ns(&self) -> u64 {
        SystemClock::fast().now_precise_ns()
    }

    /// The error of the precise reading (the calibrated counter), which is what the sequencer
    /// compares with it. The ticker's own value lags by up to a period plus the thread's wake-up
    /// delay, which has no bound; the sequencer never takes that lag for a clock that stepped
    /// back, because it decides every such case on [`Clock::now_precise_ns`].
    fn max_error_ns(&self) -> u64 {
        SystemClock::fast().max_error_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::WallClock;

    #[test]
    fn the_value_moves_and_stays_close_to_the_real_time_clock_when_the_machine_is_idle() {
        let t = TickerClock::start().unwrap();
        let a = t.now_ns();
        std::thread::sleep(Duration::from_millis(5));
        let b = t.now_ns();
        assert!(b > a, "the ticker did not move in 5 ms");
        // Never ahead of the real-time clock by more than the counter's error.
        let w = WallClock.now_ns();
        assert!(t.now_ns() <= w + SystemClock::MAX_ERROR.as_nanos() as u64);
        // Usually a period behind; a loaded test machine can delay the thread a lot more.
        assert!(t.lag() < Duration::from_secs(2), "lag {:?}", t.lag());
    }
}
