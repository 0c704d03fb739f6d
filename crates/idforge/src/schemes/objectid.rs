//! `objectid`: MongoDB's BSON ObjectId (the ObjectId specification,
//! <https://github.com/mongodb/specifications/blob/master/source/bson-objectid/objectid.md>),
//! on idforge's sequencer.
//!
//! ```text
//!  seconds(32) | node(40) | counter(24)      12 bytes, big-endian; 24 lowercase hex characters
//! ```
//!
//! As the specification defines it: 12 bytes, a 4-byte big-endian timestamp in seconds since
//! the Unix epoch (unsigned: it runs out in 2106), a 5-byte value unique to the machine and
//! process, a 3-byte big-endian counter; text is the 24 hex characters of the bytes, written
//! lowercase. Parsing follows pymongo's `bson.ObjectId(str)`: exactly 24 hex characters, in
//! either case (nothing trimmed, no `0x`).
//!
//! **What idforge changes, and what it guarantees.** The specification draws the 5-byte value
//! at random once per process and starts the counter at a random value, so two processes are
//! kept apart by chance. idforge writes the node there instead (0 to 2^40 - 1, required, never
//! drawn at random) and the counter is the sequencer's, from 0 in each second: 16,777,216 ids
//! per second (at exhaustion the generator waits for the next second). Ids are therefore
//! unique by construction across the threads of a process, across the processes of a host that
//! share a state file (`idforge gen objectid --node N --shared`), and across machines with
//! distinct nodes, and increasing per generator. Give two hosts the same node and they collide.
//!
//! ```
//! use idforge::schemes::objectid::ObjectId;
//! let id: ObjectId = "507f1f77bcf86cd799439011".parse()?; // the MongoDB manual's example
//! assert_eq!(id.unix_seconds(), 0x507f1f77);
//! assert_eq!(id.to_string(), "507f1f77bcf86cd799439011");
//! assert!("507f1f77bcf86cd79943901".parse::<ObjectId>().is_err()); // 23 characters
//! # Ok::<(), idforge::Error>(())
//! ```

use crate::error::{malformed, Error};
use crate::layout::{Field, Layout};
use crate::text::{self, Format};

/// Width of the seconds field.
pub const TIME_BITS: u32 = 32;
/// Width of the node, the specification's 5-byte process-unique value.
pub const NODE_BITS: u32 = 40;
/// Width of the counter.
pub const COUNTER_BITS: u32 = 24;

/// The 96-bit layout of ObjectId and xid: seconds, a 40-bit node, a 24-bit counter.
pub(crate) fn layout_named(name: &str) -> Layout {
    Layout::builder(name, 96)
        .time(Field::at(NODE_BITS + COUNTER_BITS, TIME_BITS))
        .node(Field::at(COUNTER_BITS, NODE_BITS))
        .counter(Field::at(0, COUNTER_BITS))
        .tick_ns(1_000_000_000)
        .build()
        .unwrap_or_else(|e| unreachable!("the {name} preset is valid: {e}"))
}

/// The ObjectId layout.
///
/// ```
/// let l = idforge::schemes::objectid::layout();
/// assert_eq!((l.bits, l.tick_ns), (96, 1_000_000_000)); // 12 bytes, seconds
/// assert_eq!(l.diagram(), "time(32) | node(40) | counter(24)");
/// ```
pub fn layout() -> Layout {
    layout_named("objectid")
}

/// An ObjectId: 12 bytes (the low 96 bits of the value).
///
/// ```
/// use idforge::schemes::objectid::ObjectId;
/// let id: ObjectId = "507f1f77bcf86cd799439011".parse()?; // MongoDB's documentation
/// assert_eq!(id.unix_seconds(), 1_350_508_407); // 2012-10-17T21:13:27Z
/// assert_eq!("507F1F77BCF86CD799439011".parse::<ObjectId>()?, id); // either case
/// assert_eq!(id.to_string(), "507f1f77bcf86cd799439011");
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId(pub u128);

impl ObjectId {
    /// The value.
    ///
    /// ```
    /// use idforge::schemes::objectid::ObjectId;
    /// let id: ObjectId = "507f1f77bcf86cd799439011".parse()?;
    /// assert_eq!(id.as_u128(), 0x507f1f77_bcf86cd799_439011);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn as_u128(self) -> u128 {
        self.0
    }
    /// The 12 bytes, as BSON stores them.
    ///
    /// ```
    /// use idforge::schemes::objectid::ObjectId;
    /// let id: ObjectId = "507f1f77bcf86cd799439011".parse()?;
    /// assert_eq!(id.to_bytes(), [0x50, 0x7f, 0x1f, 0x77, 0xbc, 0xf8, 0x6c, 0xd7, 0x99, 0x43, 0x90, 0x11]);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn to_bytes(self) -> [u8; 12] {
        let b = self.0.to_be_bytes();
        let mut out = [0u8; 12];
        out.copy_from_slice(&b[4..]);
        out
    }
    /// From the 12 bytes.
    ///
    /// ```
    /// use idforge::schemes::objectid::ObjectId;
    /// let id = ObjectId::from_bytes([0x50, 0x7f, 0x1f, 0x77, 0xbc, 0xf8, 0x6c, 0xd7, 0x99, 0x43, 0x90, 0x11]);
    /// assert_eq!(id.to_string(), "507f1f77bcf86cd799439011");
    /// ```
    pub fn from_bytes(b: [u8; 12]) -> ObjectId {
        let mut full = [0u8; 16];
        full[4..].copy_from_slice(&b);
        ObjectId(u128::from_be_bytes(full))
    }
    /// The timestamp: Unix seconds.
    ///
    /// ```
    /// use idforge::schemes::objectid::ObjectId;
    /// use idforge::{Generator, ManualClock, Scheme};
    /// let g = Generator::with_clock(&Scheme::ObjectId, Some(1), ManualClock::new(1_700_000_000_500_000_000), Scheme::ObjectId.default_policy())?;
    /// assert_eq!(ObjectId(g.next()?).unix_seconds(), 1_700_000_000);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn unix_seconds(self) -> u32 {
        (self.0 >> 64) as u32
    }
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(text::encode(self.0, 96, Format::Hex).as_str())
    }
}

impl std::str::FromStr for ObjectId {
    type Err = Error;
    fn from_str(s: &str) -> Result<ObjectId, Error> {
        parse(s).map(ObjectId)
    }
}

/// Parses ObjectId text: exactly 24 hex characters, either case.
///
/// # Errors
/// [`Error::MalformedId`] naming the length or the first character that is not hex.
///
/// ```
/// use idforge::schemes::objectid::parse;
/// assert_eq!(parse("000000000000000000000001")?, 1);
/// let e = parse("507f1f77bcf86cd79943901").unwrap_err();
/// assert!(e.to_string().contains("24 hex characters, not 23"));
/// assert!(parse("507f1f77bcf86cd79943901g").is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn parse(s: &str) -> Result<u128, Error> {
    if s.len() != 24 {
        return Err(malformed(
            s,
            format!(
                "ObjectId text has 24 hex characters, not {}",
                s.chars().count()
            ),
        ));
    }
    if let Some(c) = s.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(malformed(s, format!("character {c:?} is not a hex digit")));
    }
    text::parse(s, 96, Some(Format::Hex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        let l = layout();
        assert_eq!(l.end_year(), 2106);
        assert_eq!(l.ids_per_tick(), 1 << 24);
        assert_eq!(l.node_count(), 1 << 40);
        assert_eq!(l.signed64(), crate::layout::Signed64::Wider);
    }
}
