//! `snowflake`, `sonyflake`, `discord` and `instagram`: the Snowflake family by name, and the
//! basis of custom layouts.
//!
//! ```text
//! snowflake:  0 | time(41) | node(10) | sequence(12)     ms since 1288834974657 (2010-11-04T01:42:54.657Z)
//! sonyflake:  0 | time(39) | sequence(8) | machine(16)   10 ms ticks since 2014-09-01T00:00:00Z
//! discord:    time(42) | worker(5) | process(5) | increment(12)   ms since 1420070400000 (2015-01-01T00:00:00Z)
//! instagram:  time(41) | shard(13) | sequence(10)       ms since 1314220021721 (2011-08-24T21:07:01.721Z)
//! ```
//!
//! **Discord** (Discord's API reference, "Snowflakes": <https://discord.com/developers/docs/reference#snowflakes>):
//! the top 42 bits are milliseconds since the Discord epoch, the first second of 2015; then a
//! 5-bit internal worker id, a 5-bit internal process id and a 12-bit increment. idforge's node is
//! the worker and process ids together, `worker << 5 | process` (0 to 1023, required), and the
//! increment is the sequencer's counter, from 0 in each millisecond. Discord sends snowflakes as
//! strings because they pass 2^53; the 42-bit time sets bit 63 from 2084-09-06 on, so they fit a
//! signed 64-bit integer until 2084 only (`schemes` says so).
//!
//! **Instagram** ("Sharding & IDs at Instagram", Instagram Engineering, 2012): 41 bits of
//! milliseconds since Instagram's epoch, a 13-bit logical shard id and a 10-bit sequence (a
//! PostgreSQL sequence modulo 1024, so 1,024 ids per shard per millisecond). The post's prose
//! speaks of an epoch "on January 1st, 2011", but its PL/pgSQL function, which made the ids,
//! declares `our_epoch bigint := 1314220021721` (2011-08-24T21:07:01.721Z): that is the epoch
//! here. The shard is idforge's node (0 to 8191, required); the sequence is the sequencer's
//! counter, from 0 in each millisecond, so two ids of one shard never repeat (the post's
//! `nextval % 1024` repeats after 1,024 ids in a millisecond). 41 + 13 + 10 bits fill all 64:
//! bit 63 is the time's top bit, set from 2046-06-27 on (`schemes`: signed until 2046).
//!
//! Mastodon's ids (`ms << 16 | 16 bits`) are not a preset: their low 16 bits are a hash of the
//! table name, a secret salt and a sequence, chosen so that ids do not tell how many statuses a
//! server makes or let one guess the next; a counter there would give away both.
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

/// Discord's epoch, 2015-01-01T00:00:00Z, in Unix nanoseconds.
pub const DISCORD_EPOCH_NS: u64 = 1_420_070_400_000_000_000;
/// Instagram's epoch, `our_epoch` of its ID function (1314220021721 ms,
/// 2011-08-24T21:07:01.721Z), in Unix nanoseconds.
pub const INSTAGRAM_EPOCH_NS: u64 = 1_314_220_021_721_000_000;

/// Discord: `time(42) | worker(5) | process(5) | increment(12)`, the node is
/// `worker << 5 | process`.
pub fn discord() -> Layout {
    Layout::builder("discord", 64)
        .time(Field::at(22, 42))
        .node(Field::at(12, 10))
        .counter(Field::at(0, 12))
        .epoch_ns(DISCORD_EPOCH_NS)
        .build()
        .unwrap_or_else(|e| unreachable!("the discord preset is valid: {e}"))
}

/// Discord's worker and process ids as idforge's node: `worker << 5 | process`.
///
/// ```
/// assert_eq!(idforge::schemes::snowflake::discord_node(1, 0), Some(32));
/// assert_eq!(idforge::schemes::snowflake::discord_node(32, 0), None);
/// ```
pub fn discord_node(worker: u8, process: u8) -> Option<u64> {
    (worker < 32 && process < 32).then(|| u64::from(worker) << 5 | u64::from(process))
}

/// Instagram: `time(41) | shard(13) | sequence(10)`, the node is the shard id.
pub fn instagram() -> Layout {
    Layout::builder("instagram", 64)
        .time(Field::at(23, 41))
        .node(Field::at(10, 13))
        .counter(Field::at(0, 10))
        .epoch_ns(INSTAGRAM_EPOCH_NS)
        .build()
        .unwrap_or_else(|e| unreachable!("the instagram preset is valid: {e}"))
}

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
    fn discord_documented_snowflake_decodes() {
        // Discord's API reference, "Snowflakes": 175928847299117063 is
        // 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
        let l = discord();
        let p = l.decode(175_928_847_299_117_063);
        assert_eq!(
            crate::time::format_unix_ns(l.unix_ns_of(p.ticks) as i128, 3),
            "2016-04-30T11:18:25.796Z"
        );
        assert_eq!(p.node, u128::from(discord_node(1, 0).unwrap()));
        assert_eq!(p.counter, 7);
        assert_eq!(l.end_year(), 2154); // 2^42 ms after 2015
        assert_eq!(l.signed64(), crate::layout::Signed64::Until(2084));
    }

    #[test]
    fn instagram_post_example_decodes() {
        // "Sharding & IDs at Instagram": 1387263000 ms after the epoch, shard 1341, sequence
        // 5001 % 1024 = 905; with the function's epoch that is 2011-09-09 (the post's day).
        let id: u64 = 1_387_263_000 << 23 | 1341 << 10 | 905;
        let l = instagram();
        let p = l.decode(u128::from(id));
        assert_eq!((p.ticks, p.node, p.counter), (1_387_263_000, 1341, 905));
        assert_eq!(
            crate::time::format_unix_ns(l.unix_ns_of(p.ticks) as i128, 3),
            "2011-09-09T22:28:04.721Z"
        );
        assert_eq!(l.node_count(), 8192);
        assert_eq!(l.ids_per_tick(), 1024);
        assert_eq!(l.signed64(), crate::layout::Signed64::Until(2046));
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
