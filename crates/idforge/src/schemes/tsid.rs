//! `tsid`: TSID, the time-sorted id of f4b6a3/tsid-creator
//! (<https://github.com/f4b6a3/tsid-creator>), on idforge's sequencer.
//!
//! ```text
//!  time(42) | node(10) | counter(12)         ms since 2020-01-01T00:00:00Z, 64 bits
//! ```
//!
//! As tsid-creator defines it (`Tsid`, `TsidFactory`): a 64-bit integer whose top 42 bits are
//! milliseconds since its epoch `TSID_EPOCH`, 2020-01-01T00:00:00Z, and whose low 22 bits
//! (`RANDOM_BITS`) hold a node id and a counter, with the factory's default `nodeBits` of 10
//! (1,024 nodes; 4,096 ids per millisecond). Its text is 13 characters of Crockford base32,
//! uppercase (`Tsid.toString`; `toLowerCase` is the lowercase form), and decoding follows
//! `Tsid.isValid`: exactly 13 characters, either case, I and L read as 1 and O as 0, U refused,
//! and a first character above `F` refused (the 65th bit of 13 characters must be zero). That
//! is idforge's [`Format::Base32`] at 64 bits; `dec` is the integer. The time field runs out
//! in 2159; ids fit a signed 64-bit integer (`long`, `bigint`) until 2089.
//!
//! **What idforge changes.** tsid-creator starts the counter of each millisecond at a random
//! value and picks a random node when none is configured. idforge requires the node (0-1023;
//! never a random one) and the counter is the sequencer's, from 0 in each millisecond: ids are
//! unique across the threads of a process and across the processes of a host sharing a state
//! file by construction, and across machines with distinct nodes. At 4,096 ids in a
//! millisecond the generator waits for the next one (tsid-creator borrows the next
//! millisecond instead, as idforge's `OnExhausted::RunAhead` policy does).
//!
//! ```
//! use idforge::schemes::tsid::Tsid;
//! let t: Tsid = "0AWE5HZP3SKTK".parse()?;
//! assert_eq!(t.to_string(), "0AWE5HZP3SKTK");
//! assert_eq!("0awe5hzp3sktk".parse::<Tsid>()?, t);
//! assert!("G000000000000".parse::<Tsid>().is_err()); // above F: 65 bits
//! # Ok::<(), idforge::Error>(())
//! ```

use crate::error::Error;
use crate::layout::{Field, Layout};
use crate::text::{self, Format};

/// tsid-creator's `TSID_EPOCH`: 2020-01-01T00:00:00Z, in Unix nanoseconds.
pub const EPOCH_NS: u64 = 1_577_836_800_000 * 1_000_000;
/// Width of the node field (tsid-creator's default `nodeBits`).
pub const NODE_BITS: u32 = 10;
/// Width of the counter (22 - `NODE_BITS`).
pub const COUNTER_BITS: u32 = 12;

/// The TSID layout with tsid-creator's default 10 node bits.
///
/// ```
/// let l = idforge::schemes::tsid::layout();
/// assert_eq!(l.diagram(), "time(42) | node(10) | counter(12)");
/// assert_eq!(l.unix_ns_of(0), 1_577_836_800_000_000_000); // 2020-01-01T00:00:00Z
/// ```
pub fn layout() -> Layout {
    Layout::builder("tsid", 64)
        .time(Field::at(22, 42))
        .node(Field::at(COUNTER_BITS, NODE_BITS))
        .counter(Field::at(0, COUNTER_BITS))
        .epoch_ns(EPOCH_NS)
        .build()
        .unwrap_or_else(|e| unreachable!("the tsid preset is valid: {e}"))
}

/// A TSID: 64 bits; text as tsid-creator writes it.
///
/// ```
/// use idforge::schemes::tsid::Tsid;
/// let id: Tsid = "0AWE5HZP3SKTK".parse()?;
/// assert_eq!(id.as_u64(), 392_311_864_492_347_219);
/// assert_eq!(id.unix_ms(), 1_671_371_237_296); // 2022-12-18T13:47:17.296Z
/// assert_eq!(id.to_string(), "0AWE5HZP3SKTK");
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tsid(pub u64);

impl Tsid {
    /// The value (tsid-creator's `toLong`).
    ///
    /// ```
    /// use idforge::schemes::tsid::Tsid;
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Tsid, Some(5))?;
    /// let id = Tsid(g.next()? as u64);
    /// assert_eq!((id.as_u64() >> 12) & 1023, 5); // the node
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0
    }
    /// Unix milliseconds (tsid-creator's `getUnixMilliseconds`).
    ///
    /// ```
    /// use idforge::schemes::tsid::Tsid;
    /// assert_eq!(Tsid(0).unix_ms(), 1_577_836_800_000); // the epoch, 2020-01-01
    /// assert_eq!(Tsid(1 << 22).unix_ms(), 1_577_836_800_001);
    /// ```
    pub fn unix_ms(self) -> u64 {
        (self.0 >> 22) + EPOCH_NS / 1_000_000
    }
    /// The lowercase text (tsid-creator's `toLowerCase`).
    ///
    /// ```
    /// use idforge::schemes::tsid::Tsid;
    /// let id: Tsid = "0AWE5HZP3SKTK".parse()?;
    /// assert_eq!(id.to_lower(), "0awe5hzp3sktk");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn to_lower(self) -> String {
        self.to_string().to_ascii_lowercase()
    }
}

impl std::fmt::Display for Tsid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(text::encode(u128::from(self.0), 64, Format::Base32).as_str())
    }
}

impl std::str::FromStr for Tsid {
    type Err = Error;
    /// As tsid-creator's `Tsid.from(String)`: 13 characters (not trimmed).
    fn from_str(s: &str) -> Result<Tsid, Error> {
        if s.trim() != s {
            return Err(crate::error::malformed(
                s,
                "TSID text has no spaces around it",
            ));
        }
        text::parse(s, 64, Some(Format::Base32)).map(|v| Tsid(v as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_match_tsid_creator() {
        let l = layout();
        assert_eq!(l.end_year(), 2159);
        assert_eq!(l.signed64(), crate::layout::Signed64::Until(2089));
        assert_eq!(l.ids_per_tick(), 4096);
        assert_eq!(l.node_count(), 1024);
    }
}
