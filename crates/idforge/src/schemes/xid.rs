//! `xid`: rs/xid's globally unique id (<https://github.com/rs/xid>), on idforge's sequencer.
//!
//! ```text
//!  seconds(32) | machine(24) | pid(16) | counter(24)     12 bytes; 20 base32hex characters
//! ```
//!
//! As rs/xid defines it: the MongoDB ObjectId's 12 bytes (4-byte big-endian Unix seconds, a
//! 3-byte machine id, a 2-byte process id, a 3-byte big-endian counter) written as 20
//! characters of lowercase base32hex (RFC 4648, section 7: `0123456789abcdefghijklmnopqrstuv`),
//! the bytes from the first, the last character carrying the last bit and four zero bits
//! ([`Format::Xid`]). Decoding follows rs/xid's `UnmarshalText`: exactly 20 characters, each
//! in the lowercase alphabet (uppercase is refused), and the last character's padding bits
//! zero (only `0` or `g` may end an xid).
//!
//! **What idforge changes, and what it guarantees.** rs/xid derives the machine id from a hash
//! of the host's machine id or hostname, takes the process id, and starts the counter at a
//! random value; processes are kept apart by their pid, hosts by a 24-bit hash. idforge writes
//! its node into the machine id and pid fields together (0 to 2^40 - 1, required: `node >> 16`
//! is the machine id, `node & 0xffff` the pid field), and the counter is the sequencer's, from
//! 0 in each second (16,777,216 ids per second; then it waits for the next second). Ids are
//! unique by construction across threads, across the processes of a host that share a state
//! file (`--shared`), and across machines with distinct nodes; increasing per generator.
//!
//! ```
//! use idforge::schemes::xid::Xid;
//! let id: Xid = "9m4e2mr0ui3e8a215n4g".parse()?; // rs/xid's README
//! assert_eq!(id.to_string(), "9m4e2mr0ui3e8a215n4g");
//! assert_eq!(id.to_bytes()[..4], [0x4d, 0x88, 0xe1, 0x5b]); // 2011-03-22T17:50:19Z
//! assert!("9M4E2MR0UI3E8A215N4G".parse::<Xid>().is_err());
//! assert!("9m4e2mr0ui3e8a215n4h".parse::<Xid>().is_err()); // padding bits set
//! # Ok::<(), idforge::Error>(())
//! ```

use crate::error::Error;
use crate::layout::Layout;
use crate::text::{self, Format};

/// The xid layout: ObjectId's, with the node in the machine id and pid fields.
///
/// ```
/// let l = idforge::schemes::xid::layout();
/// assert_eq!(l.bits, 96);
/// assert_eq!(l.diagram(), "time(32) | node(40) | counter(24)");
/// ```
pub fn layout() -> Layout {
    super::objectid::layout_named("xid")
}

/// An xid: 12 bytes (the low 96 bits of the value).
///
/// ```
/// use idforge::schemes::xid::Xid;
/// let id: Xid = "9m4e2mr0ui3e8a215n4g".parse()?; // rs/xid's README
/// assert_eq!((id.unix_seconds(), id.machine(), id.pid(), id.counter()),
///            (0x4d88_e15b, 0x60_f486, 0xe428, 0x41_2dc9));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Xid(pub u128);

impl Xid {
    /// The value.
    ///
    /// ```
    /// use idforge::schemes::xid::Xid;
    /// let id: Xid = "9m4e2mr0ui3e8a215n4g".parse()?;
    /// assert_eq!(id.as_u128(), 0x4d88e15b_60f486_e428_412dc9);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn as_u128(self) -> u128 {
        self.0
    }
    /// The 12 bytes (rs/xid's `Bytes`).
    ///
    /// ```
    /// use idforge::schemes::xid::Xid;
    /// let id: Xid = "9m4e2mr0ui3e8a215n4g".parse()?;
    /// assert_eq!(id.to_bytes(), [0x4d, 0x88, 0xe1, 0x5b, 0x60, 0xf4, 0x86, 0xe4, 0x28, 0x41, 0x2d, 0xc9]);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn to_bytes(self) -> [u8; 12] {
        let b = self.0.to_be_bytes();
        let mut out = [0u8; 12];
        out.copy_from_slice(&b[4..]);
        out
    }
    /// The timestamp: Unix seconds.
    ///
    /// ```
    /// use idforge::schemes::xid::Xid;
    /// let id: Xid = "9m4e2mr0ui3e8a215n4g".parse()?;
    /// assert_eq!(id.unix_seconds(), 1_300_816_219); // 2011-03-22T17:50:19Z
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn unix_seconds(self) -> u32 {
        (self.0 >> 64) as u32
    }
    /// The machine id field (3 bytes).
    ///
    /// ```
    /// use idforge::schemes::xid::Xid;
    /// use idforge::{Generator, Scheme};
    /// // idforge writes its node into the machine id (node >> 16) and the pid (node & 0xffff).
    /// let g = Generator::new(&Scheme::Xid, Some((0xabcdef << 16) | 0x1234))?;
    /// assert_eq!(Xid(g.next()?).machine(), 0xab_cdef);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn machine(self) -> u32 {
        ((self.0 >> 40) & 0xFF_FFFF) as u32
    }
    /// The pid field (2 bytes).
    ///
    /// ```
    /// use idforge::schemes::xid::Xid;
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Xid, Some((0xabcdef << 16) | 0x1234))?;
    /// assert_eq!(Xid(g.next()?).pid(), 0x1234);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn pid(self) -> u16 {
        (self.0 >> 24) as u16
    }
    /// The counter field (3 bytes).
    ///
    /// ```
    /// use idforge::schemes::xid::Xid;
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Xid, Some(1))?;
    /// let (a, b) = (Xid(g.next()?), Xid(g.next()?));
    /// assert!(a.unix_seconds() < b.unix_seconds() || b.counter() == a.counter() + 1);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn counter(self) -> u32 {
        (self.0 & 0xFF_FFFF) as u32
    }
}

impl std::fmt::Display for Xid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(text::encode(self.0, 96, Format::Xid).as_str())
    }
}

impl std::str::FromStr for Xid {
    type Err = Error;
    fn from_str(s: &str) -> Result<Xid, Error> {
        parse(s).map(Xid)
    }
}

/// Parses xid text as rs/xid does (the text as given, not trimmed).
///
/// # Errors
/// [`Error::MalformedId`] naming the length, the character outside the alphabet, or the set
/// padding bits.
///
/// ```
/// use idforge::schemes::xid::parse;
/// assert_eq!(parse("9m4e2mr0ui3e8a215n4g")?, 0x4d88e15b_60f486_e428_412dc9);
/// assert!(parse("9m4e2mr0ui3e8a215n4").is_err()); // 19 characters
/// assert!(parse("9M4E2MR0UI3E8A215N4G").is_err()); // uppercase
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn parse(s: &str) -> Result<u128, Error> {
    if s.trim() != s {
        return Err(crate::error::malformed(
            s,
            "xid text has no spaces around it",
        ));
    }
    text::parse(s, 96, Some(Format::Xid))
}
