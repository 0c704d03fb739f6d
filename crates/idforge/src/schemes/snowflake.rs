//! `snowflake` and `sonyflake`: the Snowflake family, and the basis of custom layouts.
//!
//! ```text
//! snowflake:  0 | time(41) | node(10) | sequence(12)     ms since 1288834974657 (2010-11-04T01:42:54.657Z)
//! sonyflake:  0 | time(39) | sequence(8) | machine(16)   10 ms ticks since 2014-09-01T00:00:00Z
//! ```
//!
//! Twitter's Snowflake waits for the next millisecond when the 4,096 sequence numbers of one run
//! out and refuses to generate when the clock moves backwards; here the sequence is the low part
//! of the sequencer stamp, exhaustion waits, and a clock that steps back by up to one second is
//! ridden out by counting on from the last stamp (beyond that: [`Error::ClockBehind`]).
//! Sonyflake likewise waits for the next 10 ms tick after 256 ids; its machine id, the low 16
//! bits of the private IP address in the original, is given explicitly here.
//!
//! [`Error::ClockBehind`]: crate::Error::ClockBehind
//!
//! ```
//! use idforge::{Generator, Scheme};
//! let g = Generator::new(&Scheme::Sonyflake, Some(0xBEEF)).unwrap();
//! assert_eq!(g.next_u64().unwrap() & 0xFFFF, 0xBEEF);
//! ```

use crate::layout::{Field, Layout};

/// Twitter's epoch, 2010-11-04T01:42:54.657Z, in Unix nanoseconds.
pub const TWITTER_EPOCH_NS: u64 = 1_288_834_974_657_000_000;
/// Sonyflake's default epoch, 2014-09-01T00:00:00Z, in Unix nanoseconds.
pub const SONYFLAKE_EPOCH_NS: u64 = 1_409_529_600_000_000_000;

/// Twitter Snowflake: `0 | time(41) | node(10) | sequence(12)`.
///
/// ```
/// use idforge::schemes::snowflake::{twitter, TWITTER_EPOCH_NS};
/// let l = twitter();
/// let p = l.decode(1_541_815_603_606_036_480); // a published tweet id
/// assert_eq!((p.node, p.counter), (378, 0));
/// assert_eq!(l.unix_ns_of(p.ticks), 1_656_432_460_105_000_000); // 2022-06-28T16:07:40.105Z
/// assert_eq!(l.epoch_ns, TWITTER_EPOCH_NS);
/// ```
pub fn twitter() -> Layout {
    Layout::builder("snowflake", 64)
        .time(Field::at(22, 41))
        .node(Field::at(12, 10))
        .counter(Field::at(0, 12))
        .epoch_ns(TWITTER_EPOCH_NS)
        .build()
        .unwrap_or_else(|e| unreachable!("the snowflake preset is valid: {e}"))
}

/// Sonyflake: `0 | time(39) | sequence(8) | machine(16)` in 10 ms ticks.
///
/// ```
/// use idforge::schemes::snowflake::sonyflake;
/// let l = sonyflake();
/// assert_eq!(l.diagram(), "0(1) | time(39) | counter(8) | node(16)");
/// assert_eq!(l.ids_per_second(), 25_600.0); // 256 per 10 ms
/// ```
pub fn sonyflake() -> Layout {
    Layout::builder("sonyflake", 64)
        .time(Field::at(24, 39))
        .counter(Field::at(16, 8))
        .node(Field::at(0, 16))
        .tick_ns(10_000_000)
        .epoch_ns(SONYFLAKE_EPOCH_NS)
        .build()
        .unwrap_or_else(|e| unreachable!("the sonyflake preset is valid: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_match_the_originals() {
        assert_eq!(twitter().end_year(), 2080); // 2^41 ms after 2010-11-04
        assert_eq!(sonyflake().end_year(), 2188); // 2^39 x 10 ms after 2014-09-01 ("174 years")
        assert_eq!(twitter().ids_per_second(), 4_096_000.0);
        assert_eq!(sonyflake().ids_per_second(), 25_600.0);
    }

    #[test]
    fn a_known_twitter_id_decodes() {
        // 1541815603606036480: a public tweet id from 2022-06-28.
        let l = twitter();
        let p = l.decode(1_541_815_603_606_036_480);
        let ns = l.unix_ns_of(p.ticks);
        assert_eq!(
            crate::time::format_unix_ns(ns as i128, 3),
            "2022-06-28T16:07:40.105Z"
        );
    }
}
