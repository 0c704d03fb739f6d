//! `ulid`: ULID, the Universally Unique Lexicographically Sortable Identifier
//! (<https://github.com/ulid/spec>), on idforge's sequencer.
//!
//! ```text
//!  unix_ts_ms(48) | counter(16) | random(64)      (the spec's 80 "randomness" bits = counter + random)
//! ```
//!
//! As the spec defines it: 128 bits, most significant byte first; a 48-bit Unix time in
//! milliseconds (runs out in the year 10889: `7ZZZZZZZZZZZZZZZZZZZZZZZZZ` is the largest ULID);
//! 26 characters of Crockford's base32 (`0123456789ABCDEFGHJKMNPQRSTVWXYZ`), written uppercase
//! ([`Format::Ulid`]). Decoding follows the spec's Go reference (oklog/ulid `ParseStrict`):
//! exactly 26 characters, case-insensitive, the letters I, L, O and U refused (the reference does
//! not read them as look-alikes of 1 and 0), and a first character above `7` refused as an
//! overflow, as the spec's "Overflow Errors when Parsing Base32 Strings" asks.
//!
//! **What idforge changes.** The spec's monotonic generation keeps the 80 random bits of the
//! first ULID of a millisecond and adds one for each further ULID in it, so a second process (or
//! an unlucky draw) can repeat a value. idforge puts the sequencer's 16-bit counter in the top
//! bits of those 80 and fresh random bits in the 64 below, as [`uuid7`](super::uuid7) does:
//! within a millisecond each ULID is above the previous one (by far more than one), 65,536 per
//! millisecond; at exhaustion the generator waits for the next millisecond (the spec's
//! generation fails instead, after 2^80). Ids are unique and increasing across the threads of a
//! process, and across the processes of a host that share a state file
//! (`Generator::host_wide`, `idforge gen ulid --shared`), by the counter, not by chance. Text
//! sorts like the value, so ULIDs sort lexicographically as the spec requires.
//!
//! ```
//! use idforge::schemes::ulid::{self, Ulid};
//! let a = ulid::ulid()?;
//! let b = ulid::ulid()?;
//! assert!(b > a && b.to_string() > a.to_string());
//! assert_eq!(a.to_string().parse::<Ulid>()?, a);
//! assert_eq!("7ZZZZZZZZZZZZZZZZZZZZZZZZZ".parse::<Ulid>()?.as_u128(), u128::MAX);
//! assert!("80000000000000000000000000".parse::<Ulid>().is_err()); // overflow
//! # Ok::<(), idforge::Error>(())
//! ```

use std::sync::OnceLock;

use crate::error::Error;
use crate::generator::Generator;
use crate::layout::{Field, Layout};
use crate::schemes::Scheme;
use crate::text::{self, Format};

/// Width of the millisecond timestamp.
pub const TIME_BITS: u32 = 48;
/// Width of the sequencer's counter, the top of the spec's 80 random bits.
pub const COUNTER_BITS: u32 = 16;
/// Fresh random bits below the counter.
pub const RANDOM_BITS: u32 = 64;

/// The ULID layout: time, then the counter and random bits in the spec's randomness.
///
/// ```
/// let l = idforge::schemes::ulid::layout();
/// assert_eq!(l.diagram(), "time(48) | counter(16) | random(64)");
/// assert_eq!(l, idforge::Scheme::Ulid.layout());
/// ```
pub fn layout() -> Layout {
    Layout::builder("ulid", 128)
        .time(Field::at(128 - TIME_BITS, TIME_BITS))
        .counter(Field::at(RANDOM_BITS, COUNTER_BITS))
        .random(Field::at(0, RANDOM_BITS))
        .build()
        .unwrap_or_else(|e| unreachable!("the ulid preset is valid: {e}"))
}

/// A ULID: 128 bits, text as the spec writes it.
///
/// ```
/// use idforge::schemes::ulid::Ulid;
/// let id: Ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV".parse()?; // the spec's example
/// assert_eq!(id.unix_ms(), 1_469_922_850_259); // 2016-07-30T23:54:10.259Z
/// assert_eq!("01arz3ndektsv4rrffq69g5fav".parse::<Ulid>()?, id); // case-insensitive
/// assert_eq!(id.to_string(), "01ARZ3NDEKTSV4RRFFQ69G5FAV");
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ulid(pub u128);

impl Ulid {
    /// The value.
    ///
    /// ```
    /// use idforge::schemes::ulid::Ulid;
    /// assert_eq!("00000000000000000000000001".parse::<Ulid>()?.as_u128(), 1);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn as_u128(self) -> u128 {
        self.0
    }
    /// The spec's binary form: 16 bytes, most significant first.
    ///
    /// ```
    /// use idforge::schemes::ulid::Ulid;
    /// let id: Ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV".parse()?;
    /// assert_eq!(id.to_bytes()[..6], [0x01, 0x56, 0x3e, 0x3a, 0xb5, 0xd3]); // the 48-bit time first
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }
    /// From the spec's binary form.
    ///
    /// ```
    /// use idforge::schemes::ulid::Ulid;
    /// let id: Ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV".parse()?;
    /// assert_eq!(Ulid::from_bytes(id.to_bytes()), id);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn from_bytes(b: [u8; 16]) -> Ulid {
        Ulid(u128::from_be_bytes(b))
    }
    /// The time field: Unix milliseconds.
    ///
    /// ```
    /// use idforge::schemes::ulid;
    /// use idforge::{Clock, WallClock};
    /// let before = WallClock.now_ns() / 1_000_000;
    /// let id = ulid::ulid()?;
    /// let after = WallClock.now_ns() / 1_000_000;
    /// // The generator reads the fast clock, within 50 µs of the system's: allow 1 ms either side.
    /// assert!(before <= id.unix_ms() + 1 && id.unix_ms() <= after + 1);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn unix_ms(self) -> u64 {
        (self.0 >> (128 - TIME_BITS)) as u64
    }
    /// The 80 bits after the time (idforge's counter is their top 16 bits).
    ///
    /// ```
    /// use idforge::schemes::ulid::Ulid;
    /// let id: Ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV".parse()?;
    /// assert_eq!(id.randomness(), id.as_u128() & ((1 << 80) - 1));
    /// assert_eq!(id.randomness() >> 64, 54_902); // where idforge's counter sits
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn randomness(self) -> u128 {
        self.0 & ((1u128 << 80) - 1)
    }
}

impl std::fmt::Display for Ulid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(text::encode(self.0, 128, Format::Ulid).as_str())
    }
}

impl std::str::FromStr for Ulid {
    type Err = Error;
    /// Strict: exactly 26 characters, untrimmed (see the module's documentation).
    fn from_str(s: &str) -> Result<Ulid, Error> {
        parse(s).map(Ulid)
    }
}

/// Parses ULID text as the spec's reference does (the text as given, not trimmed).
///
/// # Errors
/// [`Error::MalformedId`] naming the length, the character outside the alphabet, or the
/// overflowing first character.
///
/// ```
/// use idforge::schemes::ulid::parse;
/// assert_eq!(parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")?, u128::MAX);
/// assert!(parse(" 01ARZ3NDEKTSV4RRFFQ69G5FAV").is_err()); // not trimmed
/// assert!(parse("01ARZ3NDEKTSV4RRFFQ69G5FAL").is_err()); // L is not in the alphabet
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn parse(s: &str) -> Result<u128, Error> {
    if s.trim() != s {
        return Err(crate::error::malformed(
            s,
            "ULID text has no spaces around it",
        ));
    }
    text::parse(s, 128, Some(Format::Ulid))
}

/// A ULID from the process-wide generator (in-process stamp; for ids unique across the
/// processes of a host, open `ulid` with a state file: `Generator::host_wide`).
///
/// # Errors
/// As [`crate::uuid7()`]: a shared page that cannot be mapped on first use, the clock stepped
/// back by more than a second, the time field run out (10889).
///
/// ```
/// let (a, b) = (idforge::schemes::ulid::ulid()?, idforge::schemes::ulid::ulid()?);
/// assert!(a < b); // increasing within the process
/// assert_eq!(a.to_string().len(), 26);
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn ulid() -> Result<Ulid, Error> {
    static GEN: OnceLock<Generator> = OnceLock::new();
    let g = match GEN.get() {
        Some(g) => g,
        None => {
            let g = Generator::new(&Scheme::Ulid, None)?;
            GEN.get_or_init(|| g)
        }
    };
    g.next().map(Ulid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples_decode() {
        // The reference's README (ulid/javascript): ulid(1469918176385) is 01ARYZ6S41....
        let u: Ulid = "01ARYZ6S41TSV4RRFFQ69G5FAV".parse().unwrap();
        assert_eq!(u.unix_ms(), 1_469_918_176_385);
        assert_eq!(u.to_string(), "01ARYZ6S41TSV4RRFFQ69G5FAV");
        assert_eq!("01aryz6s41tsv4rrffq69g5fav".parse::<Ulid>().unwrap(), u);
        assert_eq!(layout().end_year(), 10889);
    }

    #[test]
    fn look_alikes_and_overflow_are_refused() {
        for bad in [
            "01ARZ3NDEKTSV4RRFFQ69G5FAI",
            "01ARZ3NDEKTSV4RRFFQ69G5FAL",
            "01ARZ3NDEKTSV4RRFFQ69G5FAO",
            "01ARZ3NDEKTSV4RRFFQ69G5FAU",
            "81ARZ3NDEKTSV4RRFFQ69G5FAV",
            "01ARZ3NDEKTSV4RRFFQ69G5FA",
            " 01ARZ3NDEKTSV4RRFFQ69G5FAV",
        ] {
            assert!(bad.parse::<Ulid>().is_err(), "{bad}");
        }
        let e = "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"
            .parse::<Ulid>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("overflows"), "{e}");
    }
}
