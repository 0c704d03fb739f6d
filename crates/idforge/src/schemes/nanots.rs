//! `nanots` and `nanots-host`: Chronicle's unique nanosecond timestamps (seeds `001` and `002`).
//!
//! ```text
//!  nanots       time(59), 32 ns ticks | tag(5)          a u64 of Unix nanoseconds whose low
//!                                                       5 bits are a caller's tag (0..=31)
//!  nanots-host  unix ns / 10^d * 10^d + host            decimal: the last d = 2 (or 3) digits of
//!               2021-12-28T14:07:02.954100128           the nanoseconds are the host id: 28
//! ```
//!
//! Both are a plain `u64` of nanoseconds since the Unix epoch that reads as a timestamp
//! ([`format`](crate::time::nanots_text::format), [`parse`](crate::time::nanots_text::parse)) and is unique because the [`Sequencer`] never issues a stamp twice.
//!
//! # `nanots`: seed `001`, *System wide unique nanosecond timestamps*
//!
//! Chronicle's `MappedUniqueTimeProvider` keeps the last timestamp in shared memory and makes every
//! value unique at 32 ns granularity: consecutive values differ after `>> 5`, so the low 5 bits are
//! free for a source id. Here that is a bit [`layout`]: the time field is 59 bits of 32 ns ticks
//! at shift 5, the *node* field is the 5-bit tag at shift 0, and there is no counter. The
//! sequencer's stamp is the 32 ns tick; the value is `tick << 5 | tag`, which is the wall time
//! rounded down to 32 ns, plus the tag.
//!
//! * 59 bits of 32 ns ticks are exactly the 2^64 nanoseconds of a `u64`: the layout runs out in
//!   2554 (July 21).
//! * One tick per value: at most 31.25 million values per second per stamp cell (host).
//! * Policy [`POLICY`]: run ahead of the wall clock by at most 1 ms under load, then wait; the
//!   clock stepping back by more than 1 ms is [`Error::ClockBehind`].
//!
//! Changed from the original, and why:
//! * **the low 5 bits are always the tag.** Chronicle returns the clock's real low 5 nanosecond
//!   bits when the clock has moved on to a new 32 ns slot (and zeros only when it had to bump), so
//!   they are never reliably free. Here they are always zero before the tag goes in: a caller's
//!   tag cannot be confused with clock noise, and `value >> 5` is the whole unique part.
//! * **bounded run-ahead.** Chronicle runs ahead for as long as demand or a stepped-back clock
//!   require. Here the lead is bounded at 1 ms, after which the generator waits for the clock
//!   (under load) or refuses (a clock that stepped back further), so values stay within 1 ms of
//!   the time they claim.
//! * **the cell.** Chronicle's last timestamp lives in a memory-mapped file shared by every process
//!   of a user. By default the stamp here is an in-process `AtomicU64`; any shared
//!   [`StampCell`] can hold it instead (`Sequencer::with_cell`).
//!
//! ```
//! use idforge::schemes::nanots::{self, POLICY};
//! use idforge::{ManualClock, Sequencer};
//! let layout = nanots::layout();
//! let clock = ManualClock::new(1_640_700_422_954_100_150);
//! let seq = Sequencer::new(clock, layout.timebase(), POLICY)?;
//! let a = layout.encode(7, seq.next()? as u128, 0, 0) as u64; // tag 7
//! let b = layout.encode(7, seq.next()? as u128, 0, 0) as u64;
//! // ...150 ns rounded down to 32 ns is ...128; the tag adds 7.
//! assert_eq!(nanots::format(a), "2021-12-28T14:07:02.954100135");
//! assert_eq!((b >> 5) - (a >> 5), 1);
//! # Ok::<(), idforge::Error>(())
//! ```
//!
//! # `nanots-host`: seed `002`, *unique identifiers in a distributed system*
//!
//! Chronicle's `DistributedUniqueTimeProvider` overwrites the lowest two *decimal* digits of the
//! nanosecond timestamp with a host id from 0 to 99: 100 ns resolution, at most ten million values
//! per second per host, unique across up to 100 hosts. With three digits ([`HostDigits::new`]
//! with `digits = 3`) it is 1000 hosts at microsecond resolution, a million per second each.
//! Decimal digits are not a bit layout, so this is [`HostDigits`] (the time base and the
//! arithmetic) and [`HostGenerator`] (a [`Sequencer`] whose stamp counts 10^digits ns ticks).
//!
//! Changed from the original, and why:
//! * **a host id out of range is refused.** The original silently takes the host id modulo 100,
//!   so hosts 7 and 107 would issue the same values. [`HostDigits::new`] returns
//!   [`Error::NodeOutOfRange`] instead.
//! * **bounded run-ahead**, as for `nanots`: [`POLICY`].
//! * **the end of the range.** The sequencer bounds its stamp by a power of two, and
//!   `stamp * 10^digits + host` must fit a `u64`: with 2 digits the stamp has 57 bits and the
//!   range ends in 2426; with 3 digits, 54 bits and 2540.
//!
//! ```
//! use idforge::schemes::nanots::{self, HostDigits, HostGenerator};
//! let g = HostGenerator::new(28, 2)?;
//! let id = g.next()?;
//! assert_eq!(id % 100, 28);
//! let (unix_ns, host) = HostDigits::decode(id, 2);
//! assert_eq!((unix_ns % 100, host), (0, 28));
//! println!("{}", nanots::format(id)); // e.g. 2021-12-28T14:07:02.954100128
//! # Ok::<(), idforge::Error>(())
//! ```
//!
//! # Text
//!
//! [`format`](crate::time::nanots_text::format) prints `2021-12-28T14:07:02.954100128` (UTC, no zone suffix, trailing zeros of the
//! fraction dropped) as Chronicle's `NanoTimestampLongConverter` does; [`parse`] reads it back,
//! and also accepts a trailing `Z` or an offset such as `+02:00`. Changed from the original: the
//! original ignores an offset (reading `16:07+02:00` as 16:07 UTC); here it is honoured
//! (14:07 UTC), since ignoring it silently shifts the time.

use std::time::Duration;

use crate::clock::{Clock, WallClock};
use crate::error::Error;
use crate::layout::{Field, Layout};
use crate::sequencer::{OnClockBehind, OnExhausted, Policy, Sequencer, StampCell, Timebase};
use crate::shm::ProcessStamp;

#[cfg(test)]
const NS_PER_S: u64 = 1_000_000_000;

/// Width of the tag in the low bits of a `nanots` value.
pub const TAG_BITS: u32 = 5;

/// The policy of both schemes: run ahead of the wall clock by at most 1 ms when demand outpaces
/// the tick (Chronicle runs ahead, without a bound), then wait; refuse with
/// [`Error::ClockBehind`] if the clock steps back by more than 1 ms.
///
/// ```
/// use idforge::{schemes::nanots::POLICY, OnExhausted};
/// assert_eq!(POLICY.on_exhausted, OnExhausted::RunAhead);
/// assert_eq!(POLICY.max_lead, std::time::Duration::from_millis(1));
/// ```
pub const POLICY: Policy = Policy {
    on_exhausted: OnExhausted::RunAhead,
    max_lead: Duration::from_millis(1),
    on_clock_behind: OnClockBehind::Fail,
};

/// The `nanots` layout: `time(59) | tag(5)`, the time in 32 ns ticks since the Unix epoch, the
/// tag as the node field, no counter.
///
/// ```
/// let l = idforge::schemes::nanots::layout();
/// assert_eq!(l.diagram(), "time(59) | node(5)");
/// assert_eq!(l.end_year(), 2554);
/// assert_eq!(l.encode(3, 10, 0, 0), 10 << 5 | 3);
/// ```
pub fn layout() -> Layout {
    Layout::builder("nanots", 64)
        .node(Field::at(0, TAG_BITS))
        .time(Field::at(TAG_BITS, 64 - TAG_BITS))
        .tick_ns(1 << TAG_BITS)
        .epoch_ns(0)
        .build()
        .unwrap_or_else(|e| unreachable!("the nanots preset is valid: {e}"))
}

/// Where a `nanots-host` value keeps its host id: the last `digits` decimal digits of the
/// nanoseconds.
///
/// ```
/// use idforge::schemes::nanots::HostDigits;
/// let h = HostDigits::new(28, 2)?;
/// assert_eq!(h.encode(16_407_004_229_541_001), 1_640_700_422_954_100_128);
/// assert!(HostDigits::new(100, 2).is_err()); // not taken modulo 100
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostDigits {
    digits: u32,
    host: u64,
    /// `10^digits`: one tick in nanoseconds, and one more than the largest host id.
    modulus: u64,
}

impl HostDigits {
    /// A host id `host` in the last `digits` decimal digits. `digits` is 2 (hosts 0 to 99, 100 ns
    /// resolution) or 3 (hosts 0 to 999, 1 µs). Unlike the original, a host id that does not fit
    /// is not reduced modulo `10^digits`, since two hosts would then share an id.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] when `digits` is not 2 or 3; [`Error::NodeOutOfRange`] when
    /// `host >= 10^digits`.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostDigits;
    /// let h = HostDigits::new(28, 2)?;
    /// assert_eq!((h.host(), h.digits()), (28, 2));
    /// assert!(HostDigits::new(100, 2).is_err());
    /// assert!(HostDigits::new(1, 4).is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn new(host: u64, digits: u32) -> Result<Self, Error> {
        if !(2..=3).contains(&digits) {
            return Err(Error::InvalidLayout(format!(
                "nanots-host keeps the host id in the last 2 or 3 decimal digits of the \
                 nanoseconds, not {digits}: 2 digits give hosts 0 to 99 at 100 ns resolution, \
                 3 give hosts 0 to 999 at 1 µs"
            )));
        }
        let modulus = 10u64.pow(digits);
        if host >= modulus {
            return Err(Error::NodeOutOfRange {
                scheme: format!("nanots-host with {digits} decimal host digits"),
                node: host as u128,
                bits: u64::BITS - (modulus - 1).leading_zeros(),
                max: (modulus - 1) as u128,
            });
        }
        Ok(HostDigits {
            digits,
            host,
            modulus,
        })
    }

    /// The host id.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostDigits;
    /// assert_eq!(HostDigits::new(42, 2)?.host(), 42);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn host(&self) -> u64 {
        self.host
    }

    /// The number of decimal digits holding the host id (2 or 3).
    ///
    /// ```
    /// use idforge::schemes::nanots::HostDigits;
    /// assert_eq!(HostDigits::new(42, 3)?.digits(), 3);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn digits(&self) -> u32 {
        self.digits
    }

    /// The sequencer time base: Unix epoch, ticks of `10^digits` ns, no counter, and as many time
    /// bits as keep `stamp * 10^digits + host` within a `u64` (57 for 2 digits, 54 for 3).
    ///
    /// ```
    /// use idforge::schemes::nanots::HostDigits;
    /// let tb = HostDigits::new(0, 2)?.timebase();
    /// assert_eq!((tb.tick_ns, tb.time_bits, tb.counter_bits), (100, 57, 0));
    /// assert!(tb.max_stamp().checked_mul(100).and_then(|v| v.checked_add(99)).is_some());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timebase(&self) -> Timebase {
        // The largest stamp is 2^bits - 1, so the largest value is 2^bits * modulus - 1: that fits
        // when 2^bits <= 2^64 / modulus, i.e. bits = floor(log2(floor(2^64 / modulus))).
        let ticks = u64::MAX / self.modulus;
        Timebase {
            epoch_ns: 0,
            tick_ns: self.modulus,
            time_bits: u64::BITS - 1 - ticks.leading_zeros(),
            counter_bits: 0,
        }
    }

    /// The value of a stamp (`unix_ns / 10^digits`, as the sequencer issues it):
    /// `stamp * 10^digits + host`. A stamp above `self.timebase().max_stamp()` wraps.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostDigits;
    /// let h = HostDigits::new(42, 2)?;
    /// // A stamp counts units of 100 ns; the last two decimal digits are the host id.
    /// assert_eq!(h.encode(16_407_004_229_541_001), 1_640_700_422_954_100_142);
    /// assert_eq!(HostDigits::decode(h.encode(16_407_004_229_541_001), 2), (1_640_700_422_954_100_100, 42));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn encode(&self, stamp: u64) -> u64 {
        stamp.wrapping_mul(self.modulus).wrapping_add(self.host)
    }

    /// Splits a value into its Unix nanoseconds with the host digits zeroed and its host id.
    /// For `digits` of 20 or more (beyond a `u64`) the whole value is the host id.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostDigits;
    /// let v = 1_640_700_422_954_100_128; // 2021-12-28T14:07:02.954100128
    /// assert_eq!(HostDigits::decode(v, 2), (1_640_700_422_954_100_100, 28));
    /// assert_eq!(HostDigits::decode(v, 3), (1_640_700_422_954_100_000, 128));
    /// ```
    pub fn decode(value: u64, digits: u32) -> (u64, u64) {
        match 10u64.checked_pow(digits) {
            Some(m) => (value - value % m, value % m),
            None => (0, value),
        }
    }
}

/// A `nanots-host` generator: a [`Sequencer`] of `10^digits` ns ticks, each stamp followed by
/// the host id in decimal. See the [module documentation](self).
///
/// ```
/// use idforge::schemes::nanots::{HostGenerator, POLICY};
/// use idforge::ManualClock;
/// let g = HostGenerator::with_clock(7, 2, ManualClock::new(1_000_000_050), POLICY)?;
/// assert_eq!(g.next()?, 1_000_000_007);
/// assert_eq!(g.next()?, 1_000_000_107); // frozen clock: runs ahead by one 100 ns tick
/// # Ok::<(), idforge::Error>(())
/// ```
pub struct HostGenerator<C: Clock = WallClock, S: StampCell = ProcessStamp> {
    host: HostDigits,
    seq: Sequencer<C, S>,
}

impl<C: Clock + std::fmt::Debug, S: StampCell> std::fmt::Debug for HostGenerator<C, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostGenerator")
            .field("host", &self.host)
            .field("sequencer", &self.seq)
            .finish()
    }
}

impl HostGenerator {
    /// A generator on the wall clock with an in-process stamp and [`POLICY`].
    ///
    /// # Errors
    /// As [`HostDigits::new`] ([`Error::InvalidLayout`] for `digits` other than 2 or 3,
    /// [`Error::NodeOutOfRange`] for a host id that does not fit them); [`Error::StateFile`]
    /// ([`StateFileError::Io`](crate::StateFileError::Io)) when the shared page for the stamp
    /// cannot be mapped.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostGenerator;
    /// let g = HostGenerator::new(7, 3)?;
    /// assert_eq!(g.next()? % 1_000, 7);
    /// assert!(HostGenerator::new(1_000, 3).is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn new(host: u64, digits: u32) -> Result<HostGenerator, Error> {
        HostGenerator::with_clock(host, digits, WallClock, POLICY)
    }
}

impl<C: Clock> HostGenerator<C> {
    /// A generator on a given clock and policy with an in-process stamp.
    ///
    /// # Errors
    /// As [`HostGenerator::new`].
    ///
    /// ```
    /// use idforge::schemes::nanots::{HostGenerator, POLICY};
    /// use idforge::ManualClock;
    /// let g = HostGenerator::with_clock(42, 2, ManualClock::new(1_700_000_000_000_000_000), POLICY)?;
    /// assert_eq!(g.next()?, 1_700_000_000_000_000_042);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn with_clock(
        host: u64,
        digits: u32,
        clock: C,
        policy: Policy,
    ) -> Result<HostGenerator<C>, Error> {
        let host = HostDigits::new(host, digits)?;
        let seq = Sequencer::with_cell(clock, ProcessStamp::new()?, host.timebase(), policy)?;
        Ok(HostGenerator { host, seq })
    }
}

#[cfg(feature = "host-wide")]
impl<C: Clock> HostGenerator<C, crate::shm::HostStamp> {
    /// A host-wide generator: its stamp is in the state file `state.path`, shared by every
    /// process of the host that opens it (see [`crate::Generator::host_wide`]). The file is bound
    /// to the host id, the digits and the policy.
    ///
    /// # Errors
    /// [`Error::StateFile`] when the file cannot be used; as [`HostGenerator::with_sequencer`].
    ///
    /// ```
    /// use idforge::schemes::nanots::{HostDigits, HostGenerator};
    /// use idforge::{StateOptions, SystemClock};
    /// static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    /// let dir = std::env::temp_dir().join(format!(
    ///     "idforge-doc-nanots-host-{}-{}", std::process::id(),
    ///     N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    /// let state = StateOptions::new(dir.join("nanots-host.state"));
    /// let policy = idforge::schemes::nanots::POLICY;
    /// let a = HostGenerator::host_wide(HostDigits::new(7, 2)?, SystemClock::precise(), policy, &state)?;
    /// let b = HostGenerator::host_wide(HostDigits::new(7, 2)?, SystemClock::precise(), policy, &state)?;
    /// let first = a.next()?;
    /// assert!(b.next()? > first); // one stamp for both
    /// assert_eq!(first % 100, 7);
    /// // The file is bound to its host id.
    /// assert!(HostGenerator::host_wide(HostDigits::new(8, 2)?, SystemClock::precise(), policy, &state).is_err());
    /// # drop((a, b));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn host_wide(
        host: HostDigits,
        clock: C,
        policy: Policy,
        state: &crate::shm::StateOptions,
    ) -> Result<Self, Error> {
        let seq = crate::generator::host_wide_sequencer(
            "nanots-host",
            &format!("digits={}", host.digits()),
            host.timebase(),
            host.host(),
            clock,
            policy,
            state,
        )?;
        Self::with_sequencer(host, seq)
    }
}

impl<C: Clock, S: StampCell> HostGenerator<C, S> {
    /// The sequencer, taking the generator apart.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostGenerator;
    /// let g = HostGenerator::new(5, 2)?;
    /// let id = g.next()?;
    /// let seq = g.into_sequencer();
    /// assert_eq!(seq.last_stamp(), id / 100); // the stamp is the id without its host digits
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn into_sequencer(self) -> Sequencer<C, S> {
        self.seq
    }

    /// A generator over a given sequencer (a shared-memory cell, a model-checked atomic, ...),
    /// whose time base must be `host.timebase()`.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] when the sequencer's time base is not `host.timebase()`.
    ///
    /// ```
    /// use idforge::schemes::nanots::{HostDigits, HostGenerator, POLICY};
    /// use idforge::{ManualClock, Sequencer};
    /// let host = HostDigits::new(5, 2)?;
    /// let seq = Sequencer::new(ManualClock::new(1_700_000_000_000_000_000), host.timebase(), POLICY)?;
    /// let g = HostGenerator::with_sequencer(host, seq)?;
    /// assert_eq!(g.next()? % 100, 5);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn with_sequencer(host: HostDigits, seq: Sequencer<C, S>) -> Result<Self, Error> {
        if *seq.timebase() != host.timebase() {
            return Err(Error::InvalidLayout(format!(
                "nanots-host with {} digits needs a sequencer with time base {:?}, not {:?}",
                host.digits,
                host.timebase(),
                seq.timebase()
            )));
        }
        Ok(HostGenerator { host, seq })
    }

    /// The next value: unique, greater than every value issued before it from this sequencer's
    /// cell, and `≡ host (mod 10^digits)`.
    ///
    /// # Errors
    /// As [`Sequencer::next`]: [`Error::TimeOutOfRange`] past the year the time base ends in,
    /// [`Error::ClockBehind`] when the clock stepped back by more than the policy's `max_lead`
    /// (with `OnClockBehind::Fail`, as [`POLICY`] has), and for a host-wide generator
    /// [`Error::StateFile`] (`Lost` once the state file was truncated, deleted, replaced or
    /// rewound; `Io` when a durable ceiling cannot be synced).
    ///
    /// ```
    /// use idforge::schemes::nanots::HostGenerator;
    /// let g = HostGenerator::new(28, 2)?;
    /// let a = g.next()?;
    /// assert!(g.next()? > a);
    /// assert_eq!(a % 100, 28);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next(&self) -> Result<u64, Error> {
        // The time base keeps every stamp at most `max_stamp`, so `encode` cannot wrap.
        self.seq.next().map(|stamp| self.host.encode(stamp))
    }

    /// The next value as a typed [`NanoTs`](crate::NanoTs).
    ///
    /// # Errors
    /// As [`next`](Self::next).
    ///
    /// ```
    /// use idforge::schemes::nanots::HostGenerator;
    /// let g = HostGenerator::new(28, 2)?;
    /// let ts = g.next_nanots()?;
    /// assert_eq!(ts.as_u64() % 100, 28);
    /// assert!(g.next_nanots()? > ts);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next_nanots(&self) -> Result<crate::NanoTs, Error> {
        self.next().map(crate::NanoTs::from_u64)
    }

    /// The host id and its digits.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostGenerator;
    /// let g = HostGenerator::new(123, 3)?;
    /// assert_eq!((g.host().host(), g.host().digits()), (123, 3));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn host(&self) -> &HostDigits {
        &self.host
    }

    /// The sequencer.
    ///
    /// ```
    /// use idforge::schemes::nanots::HostGenerator;
    /// let g = HostGenerator::new(5, 2)?;
    /// let id = g.next()?;
    /// assert_eq!(g.sequencer().last_stamp() * 100 + 5, id);
    /// assert_eq!(g.sequencer().timebase().tick_ns, 100);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn sequencer(&self) -> &Sequencer<C, S> {
        &self.seq
    }
}

pub use crate::time::nanots_text::{decode_text_or_int, format, parse};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::sync::Arc;

    const ARTICLE: &str = "2021-12-28T14:07:02.954100128";
    const ARTICLE_NS: u64 = 1_640_700_422_954_100_128;

    #[test]
    fn nanots_layout_limits() {
        let l = layout();
        assert_eq!(l.end_year(), 2554);
        assert_eq!(l.timebase().end_unix_ns(), 1u128 << 64);
        assert_eq!(l.ids_per_second(), 31_250_000.0);
        assert_eq!(l.node_count(), 32);
        assert_eq!(l.timebase().counter_bits, 0);
        // The id is the tick shifted up by 5, the tag in the low bits: the time rounded down to
        // 32 ns, plus the tag.
        let tick = ARTICLE_NS / 32;
        let id = l.encode(31, tick as u128, 0, 0) as u64;
        assert_eq!(id, ARTICLE_NS / 32 * 32 + 31);
        assert_eq!(l.decode(id as u128).node, 31);
        assert_eq!(l.decode(id as u128).ticks, tick as u128);
    }

    #[test]
    fn nanots_frozen_clock_runs_ahead_one_ms_then_waits() {
        let start = 1_000 * NS_PER_S;
        let clock = ManualClock::new(start);
        let seq = Arc::new(Sequencer::new(clock.clone(), layout().timebase(), POLICY).unwrap());
        // 1 ms is 31,250 ticks of 32 ns: the current tick and 31,250 borrowed ones.
        let first = seq.next().unwrap();
        assert_eq!(first, start / 32);
        for i in 1..=31_250 {
            assert_eq!(seq.next().unwrap(), first + i);
        }
        assert_eq!(seq.lead(), Duration::from_millis(1));
        let s2 = seq.clone();
        let waiter = std::thread::spawn(move || s2.next().unwrap());
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "past 1 ms ahead it must wait");
        clock.advance(32);
        assert_eq!(waiter.join().unwrap(), first + 31_251);
        assert_eq!(seq.lead(), Duration::from_millis(1));
    }

    #[test]
    fn nanots_host_timebase_cannot_overflow() {
        for (digits, bits, end_year) in [(2, 57, 2426), (3, 54, 2540)] {
            let h = HostDigits::new(10u64.pow(digits) - 1, digits).unwrap();
            let tb = h.timebase();
            assert_eq!(tb.time_bits, bits);
            let max = tb.max_stamp();
            let top = max
                .checked_mul(10u64.pow(digits))
                .and_then(|v| v.checked_add(h.host()));
            assert!(top.is_some(), "{digits} digits overflow at the last stamp");
            // One more time bit would overflow: the bound is tight.
            assert!((max * 2 + 1).checked_mul(10u64.pow(digits)).is_none());
            assert_eq!(crate::time::year_of_unix_ns(tb.end_unix_ns()), end_year);
        }
    }

    #[test]
    fn nanots_host_article_example() {
        assert_eq!(parse(ARTICLE).unwrap(), ARTICLE_NS);
        assert_eq!(HostDigits::decode(ARTICLE_NS, 2), (ARTICLE_NS - 28, 28));
        assert_eq!(HostDigits::decode(ARTICLE_NS, 3), (ARTICLE_NS - 128, 128));
        let h = HostDigits::new(28, 2).unwrap();
        assert_eq!(h.encode(ARTICLE_NS / 100), ARTICLE_NS);
        assert_eq!(HostDigits::decode(ARTICLE_NS, 20), (0, ARTICLE_NS));
    }

    #[test]
    fn nanots_host_rejects_bad_hosts_and_digits() {
        let err = HostDigits::new(100, 2).unwrap_err();
        assert!(matches!(
            err,
            Error::NodeOutOfRange {
                node: 100,
                max: 99,
                ..
            }
        ));
        assert!(err.to_string().contains("from 0 to 99"), "{err}");
        let err = HostDigits::new(1_000, 3).unwrap_err();
        assert!(matches!(
            err,
            Error::NodeOutOfRange {
                node: 1000,
                max: 999,
                ..
            }
        ));
        for digits in [0, 1, 4, 20] {
            let err = HostDigits::new(0, digits).unwrap_err();
            assert!(matches!(err, Error::InvalidLayout(_)), "{digits}: {err:?}");
        }
        assert!(HostDigits::new(99, 2).is_ok());
        assert!(HostDigits::new(999, 3).is_ok());
    }

    #[test]
    fn nanots_host_generator_checks_the_sequencer_timebase() {
        let h = HostDigits::new(5, 3).unwrap();
        let wrong = Sequencer::new(ManualClock::new(0), layout().timebase(), POLICY).unwrap();
        assert!(matches!(
            HostGenerator::with_sequencer(h, wrong),
            Err(Error::InvalidLayout(_))
        ));
        let right = Sequencer::new(ManualClock::new(1_234_567), h.timebase(), POLICY).unwrap();
        let g = HostGenerator::with_sequencer(h, right).unwrap();
        assert_eq!(g.next().unwrap(), 1_234_005);
        assert_eq!(g.next().unwrap(), 1_235_005);
        assert_eq!(g.host().host(), 5);
        assert_eq!(g.sequencer().last_stamp(), 1_235);
    }

    #[test]
    fn nanots_format_drops_trailing_zeros() {
        assert_eq!(format(ARTICLE_NS), ARTICLE);
        assert_eq!(format(0), "1970-01-01T00:00:00");
        assert_eq!(format(1), "1970-01-01T00:00:00.000000001");
        assert_eq!(format(1_640_700_422_900_000_000), "2021-12-28T14:07:02.9");
        assert_eq!(format(1_640_700_422_000_000_000), "2021-12-28T14:07:02");
        assert_eq!(format(i64::MAX as u64), "2262-04-11T23:47:16.854775807");
        assert_eq!(format(u64::MAX), "2554-07-21T23:34:33.709551615");
    }

    #[test]
    fn nanots_parse_accepts_fraction_widths_and_offsets() {
        assert_eq!(parse("1970-01-01T00:00:01.5").unwrap(), 1_500_000_000);
        assert_eq!(
            parse("1970-01-01T00:00:01.000000001").unwrap(),
            1_000_000_001
        );
        assert_eq!(parse("1970-01-01T02:00:00+02:00").unwrap(), 0);
        assert_eq!(parse("1969-12-31T23:00:00-01:00").unwrap(), 0);
        assert_eq!(
            parse("2021-12-28T14:07:02.954100128-00:00").unwrap(),
            ARTICLE_NS
        );
        assert_eq!(parse("2554-07-21T23:34:33.709551615").unwrap(), u64::MAX);
    }

    #[test]
    fn nanots_parse_errors_name_the_problem() {
        let reason = |text: &str| match parse(text) {
            Err(Error::InvalidTime { input, reason }) => {
                assert_eq!(input, crate::error::clip(text));
                reason
            }
            other => panic!("{text:?}: expected InvalidTime, got {other:?}"),
        };
        assert!(reason("").contains("empty"));
        assert!(reason("2021-12-28").contains("ends after 10 characters"));
        assert!(reason("2021-12-28 14:07:02").contains("character 11 is ' '"));
        assert!(reason("2021-1x-28T14:07:02").contains("a digit"));
        assert!(reason("2021-12-28T14:07:02.").contains("1 to 9 fraction digits"));
        assert!(reason("2021-12-28T14:07:02.1234567890").contains("10 digits"));
        assert!(reason("2021-12-28T14:07:02+0200").contains("+02:00"));
        assert!(reason("2021-12-28T14:07:02+24:00").contains("hours 00 to 23"));
        assert!(reason("2021-12-28T14:07:02 UTC").contains("unexpected"));
        assert!(reason("2021-02-29T00:00:00").contains("day"));
        assert!(reason("2021-13-01T00:00:00").contains("month"));
        assert!(reason("2016-12-31T23:59:60").contains("second"));
        assert!(reason("1969-12-31T23:59:59.999999999").contains("before 1970"));
        assert!(reason("2554-07-21T23:34:33.709551616").contains("after 2554"));
        assert!(reason("２021-12-28T14:07:02").contains("character 1"));
    }

    #[test]
    fn nanots_text_or_int() {
        assert_eq!(decode_text_or_int(" 42 ").unwrap(), 42);
        assert_eq!(decode_text_or_int(ARTICLE).unwrap(), ARTICLE_NS);
        assert_eq!(decode_text_or_int(&u64::MAX.to_string()).unwrap(), u64::MAX);
        assert!(matches!(
            decode_text_or_int("18446744073709551616"),
            Err(Error::MalformedId { .. })
        ));
        assert!(matches!(
            decode_text_or_int("0x2a"),
            Err(Error::MalformedId { .. })
        ));
        assert!(matches!(
            decode_text_or_int(""),
            Err(Error::MalformedId { .. })
        ));
        assert!(matches!(
            decode_text_or_int("2021-12-28T25:00:00"),
            Err(Error::InvalidTime { .. })
        ));
    }
}
