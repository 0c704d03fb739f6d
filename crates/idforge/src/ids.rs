//! Typed ids: one type per family of ids, so an id carries its width and its text form.
//!
//! | type | ids of | text ([`Display`](fmt::Display)) | raw |
//! | --- | --- | --- | --- |
//! | [`UuidId`] | `uuid7`, `uprotocol`, `uprotocol-v8` | `0190a0b1-…` (8-4-4-4-12, lowercase) | `u128` |
//! | [`Id64`] | `global-id`, `snowflake`, `sonyflake`, 64-bit custom layouts | decimal | `u64` |
//! | [`Id128`] | `global-id-128`, 128-bit custom layouts | decimal | `u128` |
//! | [`NanoTs`] | `nanots`, `nanots-host` | decimal | `u64` |
//!
//! [`LocalityUuid`](crate::schemes::locality::LocalityUuid) (feature `locality`) has the same
//! traits. Every type is `Copy`, orders like its raw value, parses what it prints (and what
//! [`text::parse`] reads for its width), and converts to and from its raw integer and its
//! big-endian bytes. [`Generator::next_uuid`](crate::Generator::next_uuid) and its siblings make
//! them, refusing a scheme of another family with [`Error::WrongIdType`].
//!
//! ```
//! use idforge::{Generator, Id64, Scheme, UuidId};
//! let g = Generator::new(&Scheme::Uuid7, None)?;
//! let id: UuidId = g.next_uuid()?;
//! assert_eq!(id.version(), 7);
//! assert_eq!(id.to_string().parse::<UuidId>()?, id);
//!
//! let snowflake = Generator::new(&Scheme::Snowflake, Some(7))?;
//! let n: Id64 = snowflake.next_id64()?;
//! assert_eq!(n.to_string(), n.as_u64().to_string());
//! assert!(snowflake.next_uuid().is_err()); // a snowflake is not a UUID
//! # Ok::<(), idforge::Error>(())
//! ```
//!
//! # Features
//!
//! * `serde`: `Serialize` and `Deserialize` for every type. In human-readable formats (JSON,
//!   YAML, TOML, ...) integer ids are **strings** of decimal digits (`"1541815603606036480"`:
//!   JavaScript's numbers lose precision past 2^53) and UUIDs their text; in binary formats
//!   integer ids are `u64`/`u128` numbers and UUIDs 16 bytes. Deserializing from a
//!   human-readable format also takes a number up to 2^64 - 1, or any text [`FromStr`]
//!   accepts. A larger JSON number is refused (JSON parsers such as `serde_json` hand it over as
//!   a float, its low digits already lost): send 128-bit ids as strings, as they serialize.
//! * `uuid`: `From` conversions between [`UuidId`] (and `LocalityUuid`) and `uuid::Uuid`.

use std::fmt;
use std::str::FromStr;

use crate::error::{malformed, Error};
use crate::text::{self, Format};

pub use crate::family::IdFamily;

mod sealed {
    pub trait Sealed {}
}

/// A typed id that [`Generator::next_id`](crate::Generator::next_id) can return: [`UuidId`],
/// [`Id64`], [`Id128`] or [`NanoTs`]. Sealed: the generator checks the family, so only these
/// types implement it.
pub trait TypedId:
    sealed::Sealed
    + Copy
    + Ord
    + std::hash::Hash
    + fmt::Debug
    + fmt::Display
    + FromStr<Err = Error>
    + Send
    + Sync
    + 'static
{
    /// The family of ids this type holds.
    const FAMILY: IdFamily;

    /// The id of a generated value (64-bit ids in the low bits), which the generator has checked
    /// to be of [`Self::FAMILY`].
    #[doc(hidden)]
    fn from_generated(raw: u128) -> Self;
}

/// Parses an integer id: text made only of decimal digits is decimal (the ids' own `Display`,
/// so every id reads back), anything else as [`text::parse`] detects it (`0x` hex, base32, ...).
fn parse_integer_id(s: &str, bits: u32) -> Result<u128, Error> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        text::parse(s, bits, Some(Format::Dec))
    } else {
        text::parse(s, bits, None)
    }
}

/// Parses UUID text (8-4-4-4-12, either case) or 32 hex digits (with or without `0x`).
fn parse_uuid_text(s: &str) -> Result<u128, Error> {
    let t = s.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if digits.len() == 32 && digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        // 32 hex digits are a UUID's hex for this type, even when made only of digits.
        return text::parse(s, 128, Some(Format::Hex));
    }
    let uuid_like = t.contains('-') || t.starts_with('{') || t.starts_with("urn:");
    match text::detect(t, 128) {
        Ok(Format::Uuid) => text::parse(s, 128, Some(Format::Uuid)),
        // Say exactly what is wrong with text meant as a UUID.
        _ if uuid_like => text::parse(s, 128, Some(Format::Uuid)),
        _ => Err(malformed(
            s,
            "expected a UUID: 8-4-4-4-12 hex digits (0190a0b1-7c3d-7e4f-8a6b-7c8d9e0f1a2b) or 32 hex digits",
        )),
    }
}

/// A 128-bit UUID-shaped id (`uuid7`, `uprotocol`, `uprotocol-v8`): 16 bytes, most
/// significant first, printed as canonical lowercase UUID text.
///
/// Any UUID parses (the version is not checked: [`version`](Self::version) tells it), from
/// canonical text in either case or 32 hex digits. With the `serde` feature it is its text in
/// human-readable formats and 16 bytes in binary ones; with `uuid`, it converts to and from
/// `uuid::Uuid`.
///
/// ```
/// use idforge::UuidId;
/// let id: UuidId = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F".parse()?;
/// assert_eq!(id.to_string(), "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
/// assert_eq!(id.version(), 7);
/// assert_eq!(UuidId::from_bytes(id.to_bytes()), id);
/// assert_eq!(u128::from(id), 0x017F22E2_79B0_7CC3_98C4_DC0C0C07398F);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UuidId([u8; 16]);

impl UuidId {
    /// The nil UUID (RFC 9562, section 5.9): all 128 bits zero.
    ///
    /// ```
    /// use idforge::UuidId;
    /// assert_eq!(UuidId::nil().to_string(), "00000000-0000-0000-0000-000000000000");
    /// assert!(UuidId::nil().is_nil() && UuidId::nil() < UuidId::max());
    /// ```
    pub const fn nil() -> Self {
        Self([0; 16])
    }

    /// The max UUID (RFC 9562, section 5.10): all 128 bits one.
    ///
    /// ```
    /// use idforge::UuidId;
    /// assert_eq!(UuidId::max().to_string(), "ffffffff-ffff-ffff-ffff-ffffffffffff");
    /// assert!(UuidId::max().is_max());
    /// ```
    pub const fn max() -> Self {
        Self([0xFF; 16])
    }

    /// Whether this is the nil UUID.
    ///
    /// ```
    /// assert!(idforge::UuidId::nil().is_nil());
    /// assert!(!idforge::UuidId::max().is_nil());
    /// ```
    pub const fn is_nil(self) -> bool {
        self.as_u128() == 0
    }

    /// Whether this is the max UUID.
    ///
    /// ```
    /// assert!(idforge::UuidId::max().is_max());
    /// assert!(!idforge::UuidId::from_u128(1).is_max());
    /// ```
    pub const fn is_max(self) -> bool {
        self.as_u128() == u128::MAX
    }

    /// The UUID whose 128 bits, most significant first, are `value`.
    ///
    /// ```
    /// let id = idforge::UuidId::from_u128(0x017F22E2_79B0_7CC3_98C4_DC0C0C07398F);
    /// assert_eq!(id.to_string(), "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    /// ```
    pub const fn from_u128(value: u128) -> Self {
        Self(value.to_be_bytes())
    }

    /// The 128 bits as a number (byte 0 most significant).
    ///
    /// ```
    /// let id: idforge::UuidId = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f".parse()?;
    /// assert_eq!(id.as_u128() >> 80, 0x017F_22E2_79B0); // the 48-bit millisecond field
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn as_u128(self) -> u128 {
        u128::from_be_bytes(self.0)
    }

    /// The UUID of 16 bytes, most significant first.
    ///
    /// ```
    /// let mut bytes = [0u8; 16];
    /// bytes[0] = 0x01;
    /// assert_eq!(idforge::UuidId::from_bytes(bytes).to_string(), "01000000-0000-0000-0000-000000000000");
    /// ```
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The 16 bytes, most significant first (the order of the text).
    ///
    /// ```
    /// let id: idforge::UuidId = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f".parse()?;
    /// assert_eq!(id.to_bytes()[..3], [0x01, 0x7f, 0x22]);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The 16 bytes, borrowed, most significant first.
    ///
    /// ```
    /// let id: idforge::UuidId = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f".parse()?;
    /// assert_eq!(id.as_bytes()[..2], [0x01, 0x7f]);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The UUID as 32 lowercase hex digits, without hyphens (`{:X}` for uppercase).
    ///
    /// ```
    /// let id: idforge::UuidId = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f".parse()?;
    /// assert_eq!(id.simple().to_string(), "017f22e279b07cc398c4dc0c0c07398f");
    /// assert_eq!(format!("{:X}", id.simple()), "017F22E279B07CC398C4DC0C0C07398F");
    /// assert_eq!(id.urn().to_string(), "urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    /// assert_eq!(id.braced().to_string(), "{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}");
    /// assert_eq!(id.hyphenated().to_string(), id.to_string());
    /// // Every form reads back.
    /// for text in [id.simple().to_string(), id.urn().to_string(), id.braced().to_string()] {
    ///     assert_eq!(text.parse::<idforge::UuidId>()?, id);
    /// }
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn simple(self) -> UuidText {
        UuidText(self, UuidForm::Simple)
    }

    /// The UUID as canonical 8-4-4-4-12 text (what `Display` writes; `{:X}` for uppercase).
    ///
    /// ```
    /// let id = idforge::UuidId::max();
    /// assert_eq!(format!("{:X}", id.hyphenated()), "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF");
    /// ```
    pub const fn hyphenated(self) -> UuidText {
        UuidText(self, UuidForm::Hyphenated)
    }

    /// The UUID as a URN: `urn:uuid:` and its canonical text (RFC 9562, section 4).
    ///
    /// ```
    /// assert_eq!(idforge::UuidId::nil().urn().to_string(), "urn:uuid:00000000-0000-0000-0000-000000000000");
    /// ```
    pub const fn urn(self) -> UuidText {
        UuidText(self, UuidForm::Urn)
    }

    /// The UUID in braces: `{` canonical text `}` (as Microsoft's GUIDs are written).
    ///
    /// ```
    /// assert_eq!(idforge::UuidId::nil().braced().to_string(), "{00000000-0000-0000-0000-000000000000}");
    /// ```
    pub const fn braced(self) -> UuidText {
        UuidText(self, UuidForm::Braced)
    }

    /// The time of a UUID that records one as RFC 9562 defines it: version 7 (48-bit Unix
    /// milliseconds), 1 and 6 (100-nanosecond intervals since 1582-10-15); `None` for other
    /// versions (4, 8: no time the RFC places). As `uuid`'s `get_timestamp`.
    ///
    /// ```
    /// // RFC 9562, Appendix A.6 (version 7) and A.5 (version 6).
    /// let v7: idforge::UuidId = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F".parse()?;
    /// assert_eq!(v7.timestamp().unwrap().to_string(), "2022-02-22T19:22:22Z");
    /// assert_eq!(v7.unix_ms(), Some(1_645_557_742_000));
    /// let v6: idforge::UuidId = "1EC9414C-232A-6B00-B3C8-9F6BDECED846".parse()?;
    /// assert_eq!(v6.timestamp().unwrap().to_string(), "2022-02-22T19:22:22Z");
    /// assert_eq!(idforge::UuidId::nil().timestamp(), None);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timestamp(self) -> Option<jiff::Timestamp> {
        let ns = self.unix_ns()?;
        jiff::Timestamp::from_nanosecond(ns).ok()
    }

    /// [`UuidId::timestamp`] in whole Unix milliseconds (`None` before 1970 or without a time).
    ///
    /// ```
    /// let id: idforge::UuidId = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F".parse()?;
    /// assert_eq!(id.unix_ms(), Some(1_645_557_742_000));
    /// assert_eq!(idforge::UuidId::max().unix_ms(), None);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn unix_ms(self) -> Option<u64> {
        u64::try_from(self.unix_ns()?.div_euclid(1_000_000)).ok()
    }

    fn unix_ns(self) -> Option<i128> {
        let v = self.as_u128();
        if self.is_nil() || self.is_max() || (v >> 62) & 0b11 != 0b10 {
            return None;
        }
        match self.version() {
            7 => Some(((v >> 80) as i128) * 1_000_000),
            1 | 6 => {
                let ticks = i128::from(crate::time::gregorian_ticks(v, self.version()));
                Some((ticks - i128::from(crate::time::GREGORIAN_TO_UNIX_100NS)) * 100)
            }
            _ => None,
        }
    }

    /// The UUID of a byte slice of exactly 16 bytes.
    ///
    /// # Errors
    /// [`Error::ByteLength`] for any other length.
    ///
    /// ```
    /// use idforge::UuidId;
    /// assert!(UuidId::from_slice(&[0; 16]).is_ok());
    /// assert!(UuidId::from_slice(&[0; 8]).is_err());
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Self, Error> {
        let bytes: [u8; 16] = bytes.try_into().map_err(|_| Error::ByteLength {
            what: "UUID",
            expected: 16,
            found: bytes.len(),
        })?;
        Ok(Self::from_bytes(bytes))
    }

    /// The version nibble (7 for `uuid7` and `uprotocol`, 8 for `uprotocol-v8`).
    ///
    /// ```
    /// let v4: idforge::UuidId = "20be0ffc-314a-4d53-ba50-013a65ca76d2".parse()?;
    /// assert_eq!(v4.version(), 4);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn version(self) -> u8 {
        self.0[6] >> 4
    }
}

/// A UUID's text in one of its forms: [`UuidId::simple`], [`UuidId::hyphenated`],
/// [`UuidId::urn`], [`UuidId::braced`]. `Display` writes lowercase hex, `{:X}` uppercase.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct UuidText(UuidId, UuidForm);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum UuidForm {
    Simple,
    Hyphenated,
    Urn,
    Braced,
}

impl UuidText {
    fn write(&self, f: &mut fmt::Formatter<'_>, upper: bool) -> fmt::Result {
        let v = self.0.as_u128();
        let (pre, post) = match self.1 {
            UuidForm::Simple | UuidForm::Hyphenated => ("", ""),
            UuidForm::Urn => ("urn:uuid:", ""),
            UuidForm::Braced => ("{", "}"),
        };
        // One buffer, written once and handed to the formatter in one piece: no allocation (the
        // uppercase forms made a `String`) and no UTF-8 validation.
        let mut buf = crate::shm::AsciiBuf::<45>::zeroed();
        buf.put_slice(0, pre.as_bytes());
        let mut len = pre.len();
        if self.1 == UuidForm::Simple {
            buf.put_slice(len, &text::hex32(v, upper));
            len += 32;
        } else {
            buf.put_slice(len, &text::uuid_ascii(v, upper));
            len += 36;
        }
        buf.put_slice(len, post.as_bytes());
        len += post.len();
        f.write_str(buf.as_str(len))
    }
}

impl fmt::Display for UuidText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, false)
    }
}

impl fmt::UpperHex for UuidText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, true)
    }
}

impl fmt::LowerHex for UuidText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, false)
    }
}

/// A 64-bit integer id (`global-id`, `snowflake`, `sonyflake`, 64-bit custom layouts), printed
/// in decimal.
///
/// It parses decimal, `0x` hex, 16 hex digits or 13 Crockford base32 characters
/// ([`text::parse`] at 64 bits). With the `serde` feature it is a **string** of decimal digits in
/// human-readable formats such as JSON (JavaScript's numbers hold only 53 bits) and a `u64` in
/// binary ones.
///
/// ```
/// use idforge::Id64;
/// let id: Id64 = "1541815603606036480".parse()?;
/// assert_eq!(id.as_u64(), 1_541_815_603_606_036_480);
/// assert_eq!("0x1565a11f6217a000".parse::<Id64>()?, id);
/// assert_eq!(id.to_string(), "1541815603606036480");
/// assert_eq!(Id64::from_bytes(id.to_bytes()), id);
/// assert_eq!(u64::from(id), 1_541_815_603_606_036_480);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id64(u64);

impl Id64 {
    /// The id whose value is `value`.
    ///
    /// ```
    /// assert_eq!(idforge::Id64::from_u64(42).to_string(), "42");
    /// ```
    pub const fn from_u64(value: u64) -> Self {
        Self(value)
    }

    /// The value.
    ///
    /// ```
    /// let id: idforge::Id64 = "0x2a".parse()?;
    /// assert_eq!(id.as_u64(), 42);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The id of 8 bytes, most significant first.
    ///
    /// ```
    /// assert_eq!(idforge::Id64::from_bytes([0, 0, 0, 0, 0, 0, 1, 0]).as_u64(), 256);
    /// ```
    pub const fn from_bytes(bytes: [u8; 8]) -> Self {
        Self(u64::from_be_bytes(bytes))
    }

    /// The 8 bytes, most significant first (so byte order sorts like the value).
    ///
    /// ```
    /// assert_eq!(idforge::Id64::from_u64(256).to_bytes(), [0, 0, 0, 0, 0, 0, 1, 0]);
    /// ```
    pub const fn to_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
}

/// A 128-bit integer id that is not a UUID (`global-id-128`, 128-bit custom layouts), printed in
/// decimal.
///
/// It parses decimal, `0x` hex, 32 hex digits or 26 Crockford base32 characters
/// ([`text::parse`] at 128 bits). With the `serde` feature it is a **string** of decimal digits
/// in human-readable formats and a `u128` in binary ones.
///
/// ```
/// use idforge::Id128;
/// let id = Id128::from(1u128 << 100);
/// assert_eq!(id.to_string(), "1267650600228229401496703205376");
/// assert_eq!(id.to_string().parse::<Id128>()?, id);
/// assert_eq!(Id128::from_bytes(id.to_bytes()), id);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id128(u128);

impl Id128 {
    /// The id whose value is `value`.
    ///
    /// ```
    /// assert_eq!(idforge::Id128::from_u128(1 << 64).to_string(), "18446744073709551616");
    /// ```
    pub const fn from_u128(value: u128) -> Self {
        Self(value)
    }

    /// The value.
    ///
    /// ```
    /// let id: idforge::Id128 = "18446744073709551616".parse()?;
    /// assert_eq!(id.as_u128(), 1 << 64);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The id of 16 bytes, most significant first.
    ///
    /// ```
    /// let mut b = [0u8; 16];
    /// b[15] = 7;
    /// assert_eq!(idforge::Id128::from_bytes(b).as_u128(), 7);
    /// ```
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(u128::from_be_bytes(bytes))
    }

    /// The 16 bytes, most significant first.
    ///
    /// ```
    /// assert_eq!(idforge::Id128::from_u128(7).to_bytes()[15], 7);
    /// ```
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }
}

/// A unique nanosecond timestamp (`nanots`, `nanots-host`): nanoseconds since the Unix epoch,
/// printed in decimal; [`to_time_text`](Self::to_time_text) gives Chronicle's timestamp text.
///
/// It parses a decimal integer or timestamp text such as `2021-12-28T14:07:02.954100128`
/// ([`nanots::decode_text_or_int`](crate::schemes::nanots::decode_text_or_int)). With the
/// `serde` feature it is a **string** of decimal digits in human-readable formats and a `u64` in
/// binary ones.
///
/// ```
/// use idforge::NanoTs;
/// let ts: NanoTs = "2021-12-28T14:07:02.954100128".parse()?;
/// assert_eq!(ts.as_u64(), 1_640_700_422_954_100_128);
/// assert_eq!(ts.to_string(), "1640700422954100128");
/// assert_eq!(ts.to_time_text(), "2021-12-28T14:07:02.954100128");
/// assert_eq!(ts.to_string().parse::<NanoTs>()?, ts);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NanoTs(u64);

impl NanoTs {
    /// The timestamp of `value` nanoseconds since the Unix epoch.
    ///
    /// ```
    /// let ts = idforge::NanoTs::from_u64(1_640_700_422_954_100_128);
    /// assert_eq!(ts.to_time_text(), "2021-12-28T14:07:02.954100128");
    /// ```
    pub const fn from_u64(value: u64) -> Self {
        Self(value)
    }

    /// Nanoseconds since the Unix epoch.
    ///
    /// ```
    /// let ts: idforge::NanoTs = "2021-12-28T14:07:02.954100128".parse()?;
    /// assert_eq!(ts.as_u64() % 1_000_000_000, 954_100_128);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The timestamp of 8 bytes, most significant first.
    pub const fn from_bytes(bytes: [u8; 8]) -> Self {
        Self(u64::from_be_bytes(bytes))
    }

    /// The 8 bytes, most significant first.
    pub const fn to_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }

    /// Chronicle's text of the value, `2021-12-28T14:07:02.954100128` (UTC, no zone suffix;
    /// [`nanots::format`](crate::schemes::nanots::format)).
    ///
    /// ```
    /// assert_eq!(idforge::NanoTs::from_u64(1).to_time_text(), "1970-01-01T00:00:00.000000001");
    /// ```
    pub fn to_time_text(self) -> String {
        crate::time::nanots_text::format(self.0)
    }

    /// The time the timestamp records.
    ///
    /// ```
    /// let ts: idforge::NanoTs = "2021-12-28T14:07:02.954100128".parse()?;
    /// assert_eq!(ts.timestamp().to_string(), "2021-12-28T14:07:02.954100128Z");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timestamp(self) -> jiff::Timestamp {
        // Every u64 of nanoseconds (to the year 2554) is within jiff's range.
        jiff::Timestamp::from_nanosecond(i128::from(self.0)).unwrap_or(jiff::Timestamp::MAX)
    }
}

/// `Display` (canonical text), `Debug` (`Type(text)`), `FromStr`, the raw conversions and the
/// `TypedId` impl, for a type `$t` over raw `$raw`.
macro_rules! common {
    ($t:ident, $raw:ty, $family:ident, |$v:ident| $display:expr, |$s:ident| $parse:expr) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let $v = <$raw>::from(*self);
                f.write_str($display.as_str())
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($t), "({})"), self)
            }
        }

        impl FromStr for $t {
            type Err = Error;
            /// Parses the text [`Display`](fmt::Display) writes, and the other forms listed on
            /// the type. Surrounding whitespace is ignored.
            fn from_str($s: &str) -> Result<Self, Error> {
                $parse.map(Self::from)
            }
        }

        impl From<$raw> for $t {
            fn from(value: $raw) -> Self {
                Self::raw_into(value)
            }
        }

        impl From<$t> for $raw {
            fn from(id: $t) -> $raw {
                id.raw()
            }
        }

        impl sealed::Sealed for $t {}

        impl TypedId for $t {
            const FAMILY: IdFamily = IdFamily::$family;
            #[inline]
            fn from_generated(raw: u128) -> Self {
                Self::raw_into(raw as $raw)
            }
        }
    };
}

common!(
    UuidId,
    u128,
    Uuid,
    |v| text::encode(v, 128, Format::Uuid),
    |s| parse_uuid_text(s)
);
common!(
    Id64,
    u64,
    Id64,
    |v| text::encode(v as u128, 64, Format::Dec),
    |s| parse_integer_id(s, 64).map(|v| v as u64)
);
common!(
    Id128,
    u128,
    Id128,
    |v| text::encode(v, 128, Format::Dec),
    |s| parse_integer_id(s, 128)
);
common!(
    NanoTs,
    u64,
    NanoTs,
    |v| text::encode(v as u128, 64, Format::Dec),
    |s| crate::time::nanots_text::decode_text_or_int(s)
);

impl UuidId {
    #[inline]
    const fn raw(self) -> u128 {
        self.as_u128()
    }
    #[inline]
    const fn raw_into(v: u128) -> Self {
        Self::from_u128(v)
    }
}

/// The raw value of the integer types, for the conversions `common!` makes.
macro_rules! raw_of {
    ($($t:ident: $raw:ty),*) => {$(
        impl $t {
            #[inline]
            const fn raw(self) -> $raw {
                self.0
            }
            #[inline]
            const fn raw_into(v: $raw) -> Self {
                Self(v)
            }
        }
    )*};
}
raw_of!(Id64: u64, Id128: u128, NanoTs: u64);

impl From<[u8; 16]> for UuidId {
    fn from(bytes: [u8; 16]) -> Self {
        Self::from_bytes(bytes)
    }
}

impl From<UuidId> for [u8; 16] {
    fn from(id: UuidId) -> [u8; 16] {
        id.to_bytes()
    }
}

impl TryFrom<&[u8]> for UuidId {
    type Error = Error;
    fn try_from(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_slice(bytes)
    }
}

impl TryFrom<u128> for Id64 {
    type Error = std::num::TryFromIntError;
    /// The id of a value that fits 64 bits.
    fn try_from(v: u128) -> Result<Self, Self::Error> {
        u64::try_from(v).map(Id64)
    }
}

impl TryFrom<u128> for NanoTs {
    type Error = std::num::TryFromIntError;
    /// The timestamp of a value that fits 64 bits.
    fn try_from(v: u128) -> Result<Self, Self::Error> {
        u64::try_from(v).map(NanoTs)
    }
}

#[cfg(feature = "uuid")]
impl From<UuidId> for uuid::Uuid {
    fn from(id: UuidId) -> uuid::Uuid {
        uuid::Uuid::from_bytes(id.0)
    }
}

#[cfg(feature = "uuid")]
impl From<uuid::Uuid> for UuidId {
    fn from(id: uuid::Uuid) -> UuidId {
        UuidId(id.into_bytes())
    }
}

/// Serde for the typed ids: text in human-readable formats, numbers or bytes in binary ones.
#[cfg(feature = "serde")]
pub(crate) mod serde_impl {
    use std::fmt;
    use std::marker::PhantomData;
    use std::str::FromStr;

    use serde::de::{self, Deserializer, SeqAccess, Visitor};
    use serde::ser::Serializer;

    use super::{Id128, Id64, NanoTs, UuidId};
    use crate::text::{self, Format};

    /// A UUID: its text, or its 16 bytes.
    pub(crate) fn serialize_uuid<S: Serializer>(value: u128, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(text::encode(value, 128, Format::Uuid).as_str())
        } else {
            s.serialize_bytes(&value.to_be_bytes())
        }
    }

    /// A UUID from text ([`FromStr`] of `T`), 16 bytes, or a sequence of 16 bytes.
    pub(crate) fn deserialize_uuid<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr<Err = crate::Error> + From<u128>,
    {
        struct V<T>(PhantomData<T>);
        impl<'de, T: FromStr<Err = crate::Error> + From<u128>> Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a UUID as text (8-4-4-4-12 hex digits) or 16 bytes")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<T, E> {
                match <[u8; 16]>::try_from(v) {
                    Ok(b) => Ok(T::from(u128::from_be_bytes(b))),
                    Err(_) => Err(E::invalid_length(v.len(), &"16 bytes")),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
                let mut b = [0u8; 16];
                for (i, slot) in b.iter_mut().enumerate() {
                    *slot = seq
                        .next_element()?
                        .ok_or_else(|| de::Error::invalid_length(i, &"16 bytes"))?;
                }
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(17, &"16 bytes"));
                }
                Ok(T::from(u128::from_be_bytes(b)))
            }
        }
        if d.is_human_readable() {
            d.deserialize_str(V(PhantomData))
        } else {
            d.deserialize_bytes(V(PhantomData))
        }
    }

    /// An integer id from a string ([`FromStr`] of `T`) or any non-negative integer that fits.
    struct IntVisitor<T>(PhantomData<T>, &'static str);

    impl<'de, T> Visitor<'de> for IntVisitor<T>
    where
        T: FromStr<Err = crate::Error> + TryFrom<u128>,
    {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{} as a string of decimal digits or an integer", self.1)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            v.parse().map_err(E::custom)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            self.visit_u128(u128::from(v))
        }
        fn visit_u128<E: de::Error>(self, v: u128) -> Result<T, E> {
            T::try_from(v).map_err(|_| E::custom(format_args!("{v} does not fit {}", self.1)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            match u128::try_from(v) {
                Ok(v) => self.visit_u128(v),
                Err(_) => Err(E::custom(format_args!(
                    "{v} is negative; {} is unsigned",
                    self.1
                ))),
            }
        }
        fn visit_i128<E: de::Error>(self, v: i128) -> Result<T, E> {
            match u128::try_from(v) {
                Ok(v) => self.visit_u128(v),
                Err(_) => Err(E::custom(format_args!(
                    "{v} is negative; {} is unsigned",
                    self.1
                ))),
            }
        }
        /// A number with a fraction or past what the format reads as an integer: JSON
        /// parsers such as `serde_json` (without `arbitrary_precision`) hand integers above
        /// 2^64 over as floats, whose digits are already lost; refused, never rounded.
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
            Err(E::custom(format_args!(
                "{v} is not an integer this format can carry exactly (JSON numbers above 2^64 arrive rounded); give {} as a string of decimal digits",
                self.1
            )))
        }
    }

    impl serde::Serialize for UuidId {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serialize_uuid(self.as_u128(), s)
        }
    }

    impl<'de> serde::Deserialize<'de> for UuidId {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            deserialize_uuid(d)
        }
    }

    macro_rules! int_serde {
        ($t:ident, $ser:ident, $de:ident, $what:literal) => {
            impl serde::Serialize for $t {
                fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    if s.is_human_readable() {
                        s.collect_str(self)
                    } else {
                        s.$ser(self.0)
                    }
                }
            }

            impl<'de> serde::Deserialize<'de> for $t {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    let v = IntVisitor(PhantomData, $what);
                    if d.is_human_readable() {
                        d.deserialize_any(v)
                    } else {
                        d.$de(v)
                    }
                }
            }
        };
    }

    int_serde!(Id64, serialize_u64, deserialize_u64, "a 64-bit id");
    int_serde!(Id128, serialize_u128, deserialize_u128, "a 128-bit id");
    int_serde!(
        NanoTs,
        serialize_u64,
        deserialize_u64,
        "a nanosecond timestamp"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::Scheme;

    #[test]
    fn families_of_the_presets() {
        let f = |s: Scheme| s.family();
        assert_eq!(f(Scheme::UProtocol), IdFamily::Uuid);
        assert_eq!(f(Scheme::UProtocolV8), IdFamily::Uuid);
        assert_eq!(f(Scheme::GlobalId), IdFamily::Id64);
        assert_eq!(f(Scheme::Sonyflake), IdFamily::Id64);
        assert_eq!(f(Scheme::GlobalId128), IdFamily::Id128);
    }

    #[test]
    fn uuid_text_refuses_decimal() {
        assert!("12".parse::<UuidId>().is_err());
        assert_eq!(
            "0x0000000000000000000000000000000c"
                .parse::<UuidId>()
                .unwrap(),
            UuidId::from_u128(12)
        );
    }
}
