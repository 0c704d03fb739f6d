//! Ids as text: decimal, fixed-width hex, Crockford base32 and canonical UUID text.
//!
//! Every format except decimal has a fixed width for a given id width, so text sorts like the
//! number it encodes. Encoding writes into a stack buffer ([`Text`]): no allocation per id.
//! JSON output elsewhere in idforge always carries ids as strings, since JSON numbers lose
//! precision past 2^53.

use std::fmt;
use std::str::FromStr;

use crate::error::{clip, malformed, Error};
use crate::shm::AsciiBuf;

/// A text format for ids.
///
/// ```
/// use idforge::text::{encode, parse, Format};
/// let id = 1_541_815_603_606_036_480u128;
/// assert_eq!(encode(id, 64, Format::Hex).as_str(), "1565a11f6217a000");
/// assert_eq!("hex".parse::<Format>(), Ok(Format::Hex));
/// assert!("HEX".parse::<Format>().unwrap_err().contains("use dec, hex, base32"));
/// assert_eq!(parse("1565a11f6217a000", 64, Some(Format::Hex))?, id);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Decimal digits, no padding (`1541815603606036480`).
    Dec,
    /// Lowercase hex, fixed width: 16 digits for 64-bit ids, 32 for 128-bit.
    Hex,
    /// Crockford base32, fixed width (13 characters for 64 bits, 26 for 128), uppercase; sorts
    /// like the number. Decoding accepts lowercase and the look-alikes `I`, `L` (1) and `O` (0).
    Base32,
    /// Canonical UUID text, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase (128-bit ids).
    Uuid,
    /// ULID text (<https://github.com/ulid/spec>): Crockford base32 as [`Format::Base32`]
    /// writes it (26 uppercase characters for 128 bits), decoded as the spec and its Go reference
    /// (oklog/ulid `ParseStrict`) do: case-insensitive, the letters I, L, O and U refused (no
    /// look-alikes), and a first character above `7` refused as an overflow.
    Ulid,
    /// xid text (<https://github.com/rs/xid>): base32hex (RFC 4648, section 7), lowercase, the
    /// bits from the most significant one, padded with zero bits at the end (20 characters for a
    /// 96-bit id). Decoding refuses uppercase and a last character whose padding bits are set,
    /// as rs/xid does.
    Xid,
    /// A TypeID's suffix (<https://github.com/jetify-com/typeid>, spec 0.3.0): 26 lowercase
    /// Crockford base32 characters for 128 bits, first character at most `7`. Decoding is
    /// strict (lowercase only, no look-alikes) and takes an optional `prefix_` before the
    /// suffix, whose rules it checks ([`check_typeid_prefix`]) and then drops.
    TypeId,
}

impl Format {
    /// The format's name as the command line spells it.
    ///
    /// ```
    /// use idforge::text::Format;
    /// assert_eq!(Format::Base32.name(), "base32");
    /// assert_eq!(Format::TypeId.name().parse::<Format>(), Ok(Format::TypeId));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Format::Dec => "dec",
            Format::Hex => "hex",
            Format::Base32 => "base32",
            Format::Uuid => "uuid",
            Format::Ulid => "ulid",
            Format::Xid => "xid",
            Format::TypeId => "typeid",
        }
    }

    /// The format's name in messages.
    fn long_name(self) -> &'static str {
        match self {
            Format::Dec => "decimal",
            Format::Hex => "hex",
            Format::Base32 => "base32",
            Format::Uuid => "UUID",
            Format::Ulid => "ULID",
            Format::Xid => "xid",
            Format::TypeId => "TypeID",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "dec" | "decimal" => Ok(Format::Dec),
            "hex" => Ok(Format::Hex),
            "base32" | "crockford" => Ok(Format::Base32),
            "uuid" => Ok(Format::Uuid),
            "ulid" => Ok(Format::Ulid),
            "xid" | "base32hex" => Ok(Format::Xid),
            "typeid" => Ok(Format::TypeId),
            _ => Err(format!(
                "unknown format {s:?}; use dec, hex, base32, uuid, ulid, xid or typeid"
            )),
        }
    }
}

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const CROCKFORD_LOWER: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
const BASE32HEX_LOWER: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

/// Encoded id text on the stack (at most 40 bytes: a 128-bit decimal is 39 digits).
///
/// ```
/// use idforge::text::{encode, Format};
/// let t = encode(255, 64, Format::Hex); // no allocation
/// assert_eq!(t.to_string(), "00000000000000ff");
/// ```
#[derive(Clone, Copy)]
pub struct Text {
    buf: AsciiBuf<40>,
    len: u8,
}

impl Text {
    /// The text.
    ///
    /// ```
    /// use idforge::text::{encode, Format};
    /// assert_eq!(encode(42, 64, Format::Dec).as_str(), "42");
    /// ```
    #[inline]
    pub fn as_str(&self) -> &str {
        // ASCII by construction: no UTF-8 validation (it cost more than encoding a UUID).
        self.buf.as_str(self.len as usize)
    }
    /// The text's bytes.
    ///
    /// ```
    /// use idforge::text::{encode, Format};
    /// assert_eq!(encode(42, 64, Format::Dec).as_bytes(), b"42");
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_bytes(self.len as usize)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The width an id of `bits` bits is encoded and parsed at: 1 to 128 (0 is read as 1, anything
/// above 128 as 128).
const fn clamp_bits(bits: u32) -> u32 {
    if bits == 0 {
        1
    } else if bits > 128 {
        128
    } else {
        bits
    }
}

/// Characters of the fixed-width base32 text of a `bits`-wide id (widths are taken as 1 to 128).
///
/// ```
/// use idforge::text::{base32_width, encode, Format};
/// assert_eq!((base32_width(64), base32_width(96), base32_width(128)), (13, 20, 26));
/// assert_eq!(encode(1, 64, Format::Base32).as_str().len(), base32_width(64));
/// ```
pub const fn base32_width(bits: u32) -> usize {
    clamp_bits(bits).div_ceil(5) as usize
}

/// Digits of the fixed-width hex text of a `bits`-wide id (widths are taken as 1 to 128).
///
/// ```
/// use idforge::text::{encode, hex_width, Format};
/// assert_eq!((hex_width(64), hex_width(96), hex_width(128)), (16, 24, 32));
/// assert_eq!(encode(1, 96, Format::Hex).as_str(), "000000000000000000000001");
/// ```
pub const fn hex_width(bits: u32) -> usize {
    clamp_bits(bits).div_ceil(4) as usize
}

/// Encodes a `bits`-wide id. [`Format::Uuid`] needs 128 bits: check with [`check_format`]
/// first; a 64-bit id asked for as a UUID is written zero-extended.
///
/// Any width is accepted without a panic: widths 1 to 128 are exact (hex has
/// [`hex_width`] digits, base32 [`base32_width`] characters), 0 is taken as 1 and anything above
/// 128 as 128. Bits of `value` above the width are not written.
///
/// ```
/// use idforge::text::{encode, Format};
/// assert_eq!(encode(255, 64, Format::Hex).as_str(), "00000000000000ff");
/// assert_eq!(encode(255, 64, Format::Dec).as_str(), "255");
/// assert_eq!(encode(32, 64, Format::Base32).as_str(), "0000000000010");
/// assert_eq!(encode(0x0188_0000_0000_7000_8000_0000_0000_0001, 128, Format::Uuid).as_str(),
///            "01880000-0000-7000-8000-000000000001");
/// assert_eq!(encode(0xabc, 12, Format::Hex).as_str(), "abc");
/// assert_eq!(encode(255, 200, Format::Hex).as_str(), "000000000000000000000000000000ff");
/// ```
#[inline]
pub fn encode(value: u128, bits: u32, format: Format) -> Text {
    let bits = clamp_bits(bits);
    let value = if bits < 128 {
        value & ((1u128 << bits) - 1)
    } else {
        value
    };
    let mut t = Text {
        buf: AsciiBuf::zeroed(),
        len: 0,
    };
    match format {
        Format::Dec => {
            let mut b = itoa::Buffer::new();
            let s = if bits <= 64 {
                b.format(value as u64)
            } else {
                b.format(value)
            };
            t.buf.put_slice(0, s.as_bytes());
            t.len = s.len() as u8;
        }
        Format::Hex => {
            // All 32 digits of the (masked) value, then the last `hex_width` of them.
            let n = hex_width(bits);
            let digits = hex32(value, false);
            t.buf.put_slice(0, &digits[32 - n..]);
            t.len = n as u8;
        }
        Format::Base32 | Format::Ulid | Format::TypeId => {
            let alphabet = if format == Format::TypeId {
                CROCKFORD_LOWER
            } else {
                CROCKFORD
            };
            let n = base32_width(bits);
            match n {
                // The common widths with the loop unrolled (constant shifts).
                26 => t.buf.put_slice(0, &base32_fixed::<26>(value, alphabet)),
                13 => t.buf.put_slice(0, &base32_fixed::<13>(value, alphabet)),
                _ => {
                    for i in 0..n {
                        t.buf
                            .set(i, alphabet[((value >> (5 * (n - 1 - i))) & 0x1F) as usize]);
                    }
                }
            }
            t.len = n as u8;
        }
        Format::Xid => {
            // Left-aligned: the padding bits are the last character's lowest ones.
            let n = base32_width(bits);
            let padded = value << (5 * n as u32 - bits);
            for i in 0..n {
                t.buf.set(
                    i,
                    BASE32HEX_LOWER[((padded >> (5 * (n - 1 - i))) & 0x1F) as usize],
                );
            }
            t.len = n as u8;
        }
        Format::Uuid => {
            // Whole words straight into the buffer: digits 0-7, 8-11, 12-15, 16-19, 20-31.
            let (hi, lo) = (
                hex16((value >> 64) as u64, false),
                hex16(value as u64, false),
            );
            t.buf.put_u64_be(0, (hi >> 64) as u64);
            t.buf.set(8, b'-');
            t.buf.put_u32_be(9, (hi >> 32) as u32);
            t.buf.set(13, b'-');
            t.buf.put_u32_be(14, hi as u32);
            t.buf.set(18, b'-');
            t.buf.put_u32_be(19, (lo >> 96) as u32);
            t.buf.set(23, b'-');
            t.buf.put_u32_be(24, (lo >> 64) as u32);
            t.buf.put_u64_be(28, lo as u64);
            t.len = 36;
        }
    }
    t
}

/// The `N` base32 characters of `value`'s low `5 * N` bits in `alphabet`, most significant
/// first: [`encode`]'s loop for a width known when compiling (constant shifts, unrolled).
#[inline]
fn base32_fixed<const N: usize>(value: u128, alphabet: &[u8; 32]) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = alphabet[((value >> (5 * (N - 1 - i))) & 0x1F) as usize];
    }
    out
}

/// The 16 hex digits of `x`, most significant first, as the bytes of a big-endian `u128`: each
/// nibble is spread into a byte of its own (four shift-and-mask rounds), then turned into its
/// digit with no table and no branch (`'0' + n`, plus the distance to `'a'` or `'A'` where
/// `n >= 10`, found per byte as the carry of `n + 6` into bit 4).
#[inline]
pub(crate) const fn hex16(x: u64, upper: bool) -> u128 {
    const ONES: u128 = 0x0101_0101_0101_0101_0101_0101_0101_0101;
    let mut v = x as u128;
    v = (v | (v << 32)) & 0x0000_0000_FFFF_FFFF_0000_0000_FFFF_FFFF;
    v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF_0000_FFFF_0000_FFFF;
    v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF_00FF_00FF_00FF_00FF;
    v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F_0F0F_0F0F_0F0F_0F0F;
    let letters = ((v + ONES * 6) >> 4) & ONES;
    let to_letter = if upper {
        b'A' - b'0' - 10
    } else {
        b'a' - b'0' - 10
    };
    v + ONES * b'0' as u128 + letters * to_letter as u128
}

/// The 32 hex digits of a 128-bit value, most significant first.
#[inline]
pub(crate) const fn hex32(value: u128, upper: bool) -> [u8; 32] {
    let hi = hex16((value >> 64) as u64, upper).to_be_bytes();
    let lo = hex16(value as u64, upper).to_be_bytes();
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 16 {
        out[i] = hi[i];
        out[16 + i] = lo[i];
        i += 1;
    }
    out
}

/// The canonical 36-character text of a UUID (8-4-4-4-12 hex digits), lowercase or uppercase.
#[inline]
pub(crate) fn uuid_ascii(value: u128, upper: bool) -> [u8; 36] {
    let d = hex32(value, upper);
    let mut out = [b'-'; 36];
    out[..8].copy_from_slice(&d[..8]);
    out[9..13].copy_from_slice(&d[8..12]);
    out[14..18].copy_from_slice(&d[12..16]);
    out[19..23].copy_from_slice(&d[16..20]);
    out[24..].copy_from_slice(&d[20..]);
    out
}

/// Whether `format` can represent ids of `scheme`, `bits` wide.
///
/// # Errors
///
/// [`Error::UnsupportedFormat`] for [`Format::Uuid`] when the scheme's ids are not UUIDs.
///
/// ```
/// use idforge::text::{check_format, Format};
/// assert!(check_format(Format::Hex, 64, false, "snowflake").is_ok());
/// assert!(check_format(Format::Uuid, 64, false, "snowflake").is_err());
/// ```
pub fn check_format(format: Format, bits: u32, is_uuid: bool, scheme: &str) -> Result<(), Error> {
    let only = |what: &str| {
        Err(Error::UnsupportedFormat {
            format: format.to_string(),
            scheme: scheme.into(),
            reason: format!("{what}; its ids are {bits} bits wide"),
        })
    };
    match format {
        Format::Ulid | Format::TypeId if bits != 128 => {
            return only("ULID and TypeID text holds 128-bit ids")
        }
        Format::Xid if bits != 96 => return only("xid text holds 96-bit ids"),
        _ => {}
    }
    if format == Format::Uuid && !is_uuid {
        return Err(Error::UnsupportedFormat {
            format: format.to_string(),
            scheme: scheme.into(),
            reason: format!("its ids are {bits}-bit integers, not UUIDs; use dec, hex or base32"),
        });
    }
    Ok(())
}

/// Whether text has the shape of UUID text: canonical (with hyphens), braced (`{...}`) or a URN
/// (`urn:uuid:...`). It may still be malformed; [`parse_uuid`] says how.
///
/// ```
/// use idforge::text::looks_like_uuid;
/// assert!(looks_like_uuid("01901234-5678-7abc-8def-0123456789ab"));
/// assert!(looks_like_uuid("{01901234-5678-7abc-8def-0123456789ab}"));
/// assert!(looks_like_uuid("urn:uuid:01901234-5678-7abc-8def-0123456789ab"));
/// assert!(!looks_like_uuid("1541815603606036480"));
/// ```
pub fn looks_like_uuid(text: &str) -> bool {
    let t = text.trim();
    let b = t.as_bytes();
    // A leading '-' is a negative number or a flag, not a UUID.
    t.starts_with('{')
        || (b.len() >= 9 && b[..9].eq_ignore_ascii_case(b"urn:uuid:"))
        || (t.contains('-') && !t.starts_with('-'))
}

/// `text.trim()`, without decoding characters when both ends are visible ASCII (whitespace is
/// ASCII at most 0x20, or not ASCII).
///
/// ```
/// assert_eq!(idforge::text::trim(" \u{2003}ab\t"), "ab");
/// assert_eq!(idforge::text::trim("ab"), "ab");
/// ```
#[inline]
pub fn trim(text: &str) -> &str {
    match text.as_bytes() {
        [first, .., last] if (0x21..0x7F).contains(first) && (0x21..0x7F).contains(last) => text,
        _ => text.trim(),
    }
}

/// The formats the text's shape allows for a `bits`-wide id, before parsing (at most three;
/// the rest of the array is unused), and how many.
fn shapes(t: &str, bits: u32) -> ([Format; 3], usize) {
    let b = t.as_bytes();
    let mut v = [Format::Dec; 3];
    let mut n = 0;
    let mut push = |f: Format| {
        v[n] = f;
        n += 1;
    };
    if b.is_empty() {
    } else if looks_like_uuid(t) {
        push(Format::Uuid);
    } else if t.starts_with("0x") || t.starts_with("0X") {
        push(Format::Hex);
    } else {
        let digits = b.iter().all(u8::is_ascii_digit);
        if digits {
            push(Format::Dec);
        }
        // 32 digits: the hex of a 128-bit value, also accepted for narrower ids if it fits.
        if (b.len() == hex_width(bits) || b.len() == 32) && b.iter().all(u8::is_ascii_hexdigit) {
            push(Format::Hex);
        }
        if b.len() == base32_width(bits) {
            push(Format::Base32);
        }
    }
    (v, n)
}

/// Reads text whose format is not given: the one reading its shape allows, or an error.
fn resolve(t: &str, orig: &str, bits: u32) -> Result<(Format, u128), Error> {
    // The two common shapes, told apart without [`shapes`]: what it would find for them is
    // one format, read (or refused) as below.
    let b = t.as_bytes();
    let one = if b.len() == 36 && b[8] == b'-' && b[0] != b'-' {
        // A '-' not in front: UUID text, and nothing else.
        Some(Format::Uuid)
    } else if !b.is_empty()
        && b.len() != hex_width(bits)
        && b.len() != 32
        && b.len() != base32_width(bits)
        && b.iter().all(u8::is_ascii_digit)
    {
        // Digits of no other format's width: decimal only.
        Some(Format::Dec)
    } else {
        None
    };
    if let Some(f) = one {
        return parse_as(t, orig, bits, f).map(|v| (f, v));
    }
    let mut found = [(Format::Dec, 0u128); 3];
    let mut n = 0;
    let mut first_error = None;
    let (formats, count) = shapes(t, bits);
    for &f in &formats[..count] {
        match parse_as(t, orig, bits, f) {
            Ok(v) => {
                found[n] = (f, v);
                n += 1;
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match &found[..n] {
        [] => Err(first_error.unwrap_or_else(|| {
            malformed(
                orig,
                format!(
                    "not a recognisable id: expected decimal digits, {} hex digits, {} base32 characters, or a UUID (8-4-4-4-12 hex digits)",
                    hex_width(bits),
                    base32_width(bits)
                ),
            )
        })),
        [(f, v), rest @ ..] if rest.iter().all(|(_, w)| w == v) => Ok((*f, *v)),
        several => Err(Error::AmbiguousId {
            input: clip(t),
            readings: several
                .iter()
                .map(|(f, v)| format!("{} ({v})", f.long_name()))
                .collect::<Vec<_>>()
                .join(" or "),
            choose: several
                .iter()
                .map(|(f, _)| format!("format `{}`", f.name()))
                .collect::<Vec<_>>()
                .join(" or "),
        }),
    }
}

/// The format of id text of a `bits`-wide id: canonical, braced or URN UUID text, `0x` hex,
/// decimal digits, hex of exactly the id's width in digits (or 32), or base32 of exactly its
/// width. It never guesses: text that reads as two different values (digits only, and exactly
/// as long as the hex or base32 text of the width) is ambiguous.
///
/// # Errors
///
/// [`Error::AmbiguousId`] when the text reads as more than one value (it names the formats to
/// choose from), [`Error::MalformedId`] when it reads as none.
///
/// ```
/// use idforge::text::{detect, Format};
/// assert_eq!(detect("1541815603606036480", 64).unwrap(), Format::Dec);
/// assert_eq!(detect("155c9e3f1ee1f000", 64).unwrap(), Format::Hex);
/// assert_eq!(detect("{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}", 128).unwrap(), Format::Uuid);
/// // Digits only, 16 of them: decimal, or the hex of a 64-bit id.
/// assert!(detect("1999999999800000", 64).is_err());
/// ```
pub fn detect(text: &str, bits: u32) -> Result<Format, Error> {
    resolve(text.trim(), text, clamp_bits(bits)).map(|(f, _)| f)
}

/// Parses id text of an id `bits` wide (taken as 1 to 128), in `format` or, with `None`, the
/// one format the text can be ([`detect`]).
///
/// # Errors
///
/// [`Error::MalformedId`] when the text is not an id in the format, or does not fit in `bits`;
/// without a format, also [`Error::AmbiguousId`] when it reads as two different values.
///
/// ```
/// use idforge::text::{parse, Format};
/// assert_eq!(parse("255", 64, None).unwrap(), 255);
/// assert_eq!(parse("0x00ff", 64, None).unwrap(), 255);
/// assert_eq!(parse("000000000007Z", 64, Some(Format::Base32)).unwrap(), 255);
/// assert_eq!(parse("1999999999800000", 64, Some(Format::Hex)).unwrap(), 0x1999_9999_9980_0000);
/// assert!(parse("1999999999800000", 64, None).is_err()); // decimal or hex?
/// assert!(parse("12x", 64, None).is_err());
/// ```
pub fn parse(text: &str, bits: u32, format: Option<Format>) -> Result<u128, Error> {
    let t = trim(text);
    let bits = clamp_bits(bits);
    match format {
        Some(f) => parse_as(t, text, bits, f),
        None => resolve(t, text, bits).map(|(_, v)| v),
    }
}

fn parse_as(t: &str, orig: &str, bits: u32, format: Format) -> Result<u128, Error> {
    let value = match format {
        Format::Dec => parse_dec(t, orig)?,
        Format::Hex => parse_hex(t, orig)?,
        Format::Base32 => parse_base32(t, orig, bits)?,
        Format::Uuid => parse_uuid(t, orig)?,
        Format::Ulid => parse_ulid(t, orig, bits)?,
        Format::Xid => parse_xid(t, orig, bits)?,
        Format::TypeId => parse_typeid(t, orig)?.1,
    };
    if bits < 128 && value >> bits != 0 {
        return Err(malformed(
            orig,
            format!("the value does not fit in {bits} bits"),
        ));
    }
    Ok(value)
}

/// The value of 8 decimal digits (the first the most significant) and whether all 8 bytes
/// are digits, at once (SWAR, as simdjson's `parse_eight_digits_unrolled`): every byte's high
/// nibble is 3 and stays 3 after adding 6 exactly when it is `'0'..='9'`; pairs, then fours,
/// then the eight are joined with three multiplications. A per-digit fold is a chain of 8
/// multiply-adds, each waiting for the last.
#[inline(always)]
fn dec8(eight: &[u8]) -> (u32, bool) {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let mut b = [0u8; 8];
    b.copy_from_slice(eight);
    let x = u64::from_le_bytes(b);
    let valid =
        (x & HIGH) | ((x.wrapping_add(0x0606_0606_0606_0606) & HIGH) >> 4) == 0x3333_3333_3333_3333;
    let mut v = x.wrapping_sub(0x3030_3030_3030_3030);
    v = v.wrapping_mul(10).wrapping_add(v >> 8);
    v = ((v & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    (v as u32, valid)
}

fn parse_dec(t: &str, orig: &str) -> Result<u128, Error> {
    // At most 19 digits fit 64 bits: read them in one pass (the checks below only say what
    // is wrong with other text), eight at a time after the first `len % 8`.
    let word = |run: &[u8], ok: &mut bool| {
        let (head, words) = run.split_at(run.len() % 8);
        let v = head.iter().fold(0u64, |v, &c| {
            let d = c.wrapping_sub(b'0');
            *ok &= d <= 9;
            v.wrapping_mul(10).wrapping_add(u64::from(d))
        });
        words.chunks_exact(8).fold(v, |v, eight| {
            let (digits, valid) = dec8(eight);
            *ok &= valid;
            v.wrapping_mul(100_000_000).wrapping_add(u64::from(digits))
        })
    };
    let b = t.as_bytes();
    let mut ok = true;
    if !b.is_empty() && b.len() <= 19 {
        let v = word(b, &mut ok);
        if ok {
            return Ok(u128::from(v));
        }
    } else if (20..=38).contains(&b.len()) {
        // Up to 38 digits fit 128 bits: the last 19 as one word, the others as another.
        let (head, tail) = b.split_at(b.len() - 19);
        let v = u128::from(word(head, &mut ok)) * 10_000_000_000_000_000_000
            + u128::from(word(tail, &mut ok));
        if ok {
            return Ok(v);
        }
    }
    if t.is_empty() {
        return Err(malformed(orig, "empty"));
    }
    if let Some(pos) = t.bytes().position(|c| !c.is_ascii_digit()) {
        return Err(malformed(
            orig,
            format!(
                "character {:?} at position {pos} is not a decimal digit",
                t[pos..].chars().next().unwrap_or(' ')
            ),
        ));
    }
    t.parse::<u128>()
        .map_err(|_| malformed(orig, "the number is larger than 128 bits"))
}

fn parse_hex(t: &str, orig: &str) -> Result<u128, Error> {
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    // Whole words of 8 digits (ObjectId's 24, a 64- or 128-bit id's 16 or 32) at once.
    let b = digits.as_bytes();
    if !b.is_empty() && b.len() <= 32 && b.len() % 8 == 0 {
        let words = b.chunks_exact(8).try_fold(0u128, |v, w| {
            hex8([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]).map(|x| v << 32 | u128::from(x))
        });
        if let Some(v) = words {
            return Ok(v);
        }
    }
    if digits.is_empty() {
        return Err(malformed(orig, "no hex digits"));
    }
    if let Some(pos) = digits.bytes().position(|c| !c.is_ascii_hexdigit()) {
        return Err(malformed(
            orig,
            format!(
                "character {:?} is not a hex digit",
                digits[pos..].chars().next().unwrap_or(' ')
            ),
        ));
    }
    if digits.len() > 32 {
        return Err(malformed(
            orig,
            format!("{} hex digits is more than 128 bits", digits.len()),
        ));
    }
    u128::from_str_radix(digits, 16).map_err(|e| malformed(orig, e.to_string()))
}

fn parse_base32(t: &str, orig: &str, bits: u32) -> Result<u128, Error> {
    let width = base32_width(bits);
    if t.len() == width {
        if let Some(v) = fold_digits(t.as_bytes(), &BASE32_DIGITS) {
            // The first character holds the top bits: above them, the value would overflow
            // (and the shifts above would have dropped its high bits).
            let top = bits - 5 * (width as u32 - 1);
            if u32::from(BASE32_DIGITS[usize::from(t.as_bytes()[0])]) >> top == 0 {
                return Ok(v);
            }
        }
    }
    if t.len() != width {
        return Err(malformed(
            orig,
            format!(
                "base32 text of a {bits}-bit id has {width} characters, not {}",
                t.len()
            ),
        ));
    }
    let mut v: u128 = 0;
    for (i, c) in t.chars().enumerate() {
        let d = match c.to_ascii_uppercase() {
            c @ '0'..='9' => c as u32 - '0' as u32,
            'O' => 0,
            'I' | 'L' => 1,
            c => match CROCKFORD.iter().position(|&x| x as char == c) {
                Some(p) => p as u32,
                None => {
                    return Err(malformed(
                        orig,
                        format!("character {c:?} at position {i} is not Crockford base32"),
                    ))
                }
            },
        };
        if i == 0 && (d as u128) >> (bits - 5 * (width as u32 - 1)) != 0 {
            return Err(malformed(
                orig,
                format!("the first character {c:?} makes the value wider than {bits} bits"),
            ));
        }
        v = (v << 5) | d as u128;
    }
    Ok(v)
}

/// The value of a character in `alphabet` (32 ASCII characters), if it is one.
fn digit_in(alphabet: &[u8; 32], c: char) -> Option<u32> {
    u8::try_from(c)
        .ok()
        .and_then(|b| alphabet.iter().position(|&x| x == b))
        .map(|p| p as u32)
}

/// A 32-character alphabet as a table of each byte's digit value (0xFF for bytes outside it),
/// with lowercase letters too when `fold_case`, and `extra` look-alike bytes mapped to digits.
const fn digit_table(alphabet: &[u8; 32], fold_case: bool, extra: &[(u8, u8)]) -> [u8; 256] {
    let mut t = [0xFF; 256];
    let mut i = 0;
    while i < 32 {
        let c = alphabet[i];
        t[c as usize] = i as u8;
        if fold_case {
            t[c.to_ascii_lowercase() as usize] = i as u8;
        }
        i += 1;
    }
    let mut j = 0;
    while j < extra.len() {
        t[extra[j].0 as usize] = extra[j].1;
        j += 1;
    }
    t
}

static ULID_DIGITS: [u8; 256] = digit_table(CROCKFORD, true, &[]);
static BASE32_DIGITS: [u8; 256] = digit_table(
    CROCKFORD,
    true,
    &[
        (b'O', 0),
        (b'o', 0),
        (b'I', 1),
        (b'i', 1),
        (b'L', 1),
        (b'l', 1),
    ],
);
static XID_DIGITS: [u8; 256] = digit_table(BASE32HEX_LOWER, false, &[]);

/// The value of base-32 text through a digit table, or `None` if a byte is not a digit (the
/// character-by-character reading then says which). One table load per character: the
/// alphabet search it replaces was most of `inspect`'s time on ULID, xid and TSID text.
fn fold_digits(text: &[u8], table: &[u8; 256]) -> Option<u128> {
    // The common widths with the loop unrolled.
    if let Ok(t) = <&[u8; 26]>::try_from(text) {
        return fold_fixed(t, table);
    }
    if let Ok(t) = <&[u8; 13]>::try_from(text) {
        return fold_fixed(t, table);
    }
    fold_any(text, table)
}

/// [`fold_digits`] of `N` characters, known when compiling: the loop unrolled, its shifts
/// constant.
/// Runs of 12 characters (60 bits) are read in 64-bit arithmetic, the first run of the
/// `N % 12` left over, and joined in 128 bits once per run (a 128-bit shift per character
/// costs three or four instructions).
#[inline]
fn fold_fixed<const N: usize>(text: &[u8; N], table: &[u8; 256]) -> Option<u128> {
    let mut bad = 0u8;
    let mut run = |chars: &[u8]| {
        chars.iter().fold(0u64, |acc, &c| {
            let d = table[usize::from(c)];
            bad |= d;
            acc << 5 | u64::from(d & 0x1F)
        })
    };
    let first = N % 12;
    let mut v = u128::from(run(&text[..first]));
    for chars in text[first..].chunks_exact(12) {
        v = v << 60 | u128::from(run(chars));
    }
    (bad & 0xE0 == 0).then_some(v)
}

fn fold_any(text: &[u8], table: &[u8; 256]) -> Option<u128> {
    let mut v = 0u128;
    let mut bad = 0u8;
    for &c in text {
        let d = table[usize::from(c)];
        bad |= d;
        v = (v << 5) | u128::from(d & 0x1F);
    }
    (bad & 0xE0 == 0).then_some(v)
}

/// ULID text ([`Format::Ulid`]): case-insensitive Crockford base32 without look-alikes.
fn parse_ulid(t: &str, orig: &str, bits: u32) -> Result<u128, Error> {
    let width = base32_width(bits);
    if t.len() == width {
        if let Some(v) = fold_digits(t.as_bytes(), &ULID_DIGITS) {
            // The first character holds the top bits: above them, the value would overflow
            // (and the shifts above would have dropped its high bits).
            let top = bits - 5 * (width as u32 - 1);
            if u32::from(ULID_DIGITS[usize::from(t.as_bytes()[0])]) >> top == 0 {
                return Ok(v);
            }
        }
    }
    if t.chars().count() != width {
        return Err(malformed(
            orig,
            format!(
                "ULID text of a {bits}-bit id has {width} characters, not {}",
                t.chars().count()
            ),
        ));
    }
    let top = bits - 5 * (width as u32 - 1);
    let mut v: u128 = 0;
    for (i, c) in t.chars().enumerate() {
        let Some(d) = digit_in(CROCKFORD, c.to_ascii_uppercase()) else {
            return Err(malformed(
                orig,
                format!("character {c:?} at position {i} is not in ULID's alphabet (Crockford base32: 0-9 and A-Z without I, L, O and U)"),
            ));
        };
        if i == 0 && d >> top != 0 {
            return Err(malformed(
                orig,
                format!(
                    "the first character {c:?} is above {}: the value overflows {bits} bits (the largest ULID is 7ZZZZZZZZZZZZZZZZZZZZZZZZZ)",
                    (1u32 << top) - 1
                ),
            ));
        }
        v = (v << 5) | u128::from(d);
    }
    Ok(v)
}

/// xid text ([`Format::Xid`]): lowercase base32hex, zero padding bits at the end.
fn parse_xid(t: &str, orig: &str, bits: u32) -> Result<u128, Error> {
    let width = base32_width(bits);
    if t.len() == width {
        if let Some(v) = fold_digits(t.as_bytes(), &XID_DIGITS) {
            let pad = 5 * width as u32 - bits;
            if v & ((1 << pad) - 1) == 0 {
                return Ok(v >> pad);
            }
        }
    }
    if t.chars().count() != width {
        return Err(malformed(
            orig,
            format!(
                "xid text of a {bits}-bit id has {width} characters, not {}",
                t.chars().count()
            ),
        ));
    }
    let mut v: u128 = 0;
    for (i, c) in t.chars().enumerate() {
        let Some(d) = digit_in(BASE32HEX_LOWER, c) else {
            return Err(malformed(
                orig,
                format!("character {c:?} at position {i} is not in xid's alphabet (lowercase base32hex: 0-9 and a-v)"),
            ));
        };
        v = (v << 5) | u128::from(d);
    }
    let pad = 5 * width as u32 - bits;
    if v & ((1 << pad) - 1) != 0 {
        return Err(malformed(
            orig,
            format!(
                "the last character {:?} sets padding bits: it is not the text of a {bits}-bit id",
                t.chars().last().unwrap_or(' ')
            ),
        ));
    }
    Ok(v >> pad)
}

/// The longest TypeID prefix.
pub const TYPEID_PREFIX_MAX: usize = 63;

/// Checks a TypeID prefix against the spec (0.3.0): empty, or at most 63 characters of `a-z`
/// and `_` that start and end with a letter (`^([a-z]([a-z_]{0,61}[a-z])?)?$`).
///
/// # Errors
/// [`Error::MalformedId`] naming the rule broken; `orig` is the text echoed in the message.
///
/// ```
/// use idforge::text::check_typeid_prefix;
/// assert!(check_typeid_prefix("user", "").is_ok());
/// assert!(check_typeid_prefix("my__type", "").is_ok());
/// assert!(check_typeid_prefix("", "").is_ok());
/// assert!(check_typeid_prefix("User", "").is_err());
/// assert!(check_typeid_prefix("_user", "").is_err());
/// ```
pub fn check_typeid_prefix(prefix: &str, orig: &str) -> Result<(), Error> {
    if prefix.len() > TYPEID_PREFIX_MAX {
        return Err(malformed(
            orig,
            format!(
                "the TypeID prefix has {} characters; at most {TYPEID_PREFIX_MAX} are allowed",
                prefix.chars().count()
            ),
        ));
    }
    if let Some((i, c)) = prefix
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_lowercase() && *c != '_')
    {
        return Err(malformed(
            orig,
            format!("character {c:?} at position {i} of the TypeID prefix is not a lowercase letter a-z or '_'"),
        ));
    }
    if prefix.starts_with('_') || prefix.ends_with('_') {
        return Err(malformed(
            orig,
            "a TypeID prefix starts and ends with a letter, not '_'",
        ));
    }
    Ok(())
}

/// A TypeID prefix checked against the spec ([`check_typeid_prefix`]), kept on the stack so
/// that a text format holding it is `Copy` ([`crate::schemes::open::TextFormat::TypeId`]).
/// The empty prefix is allowed, as the spec allows it: its ids are the bare suffix.
///
/// ```
/// use idforge::text::TypeIdPrefix;
/// let p = TypeIdPrefix::new("user")?;
/// assert_eq!(p.encode(0x01890a5d_ac96_774b_bcce_b302099a8057).as_str(),
///            "user_01h455vb4pex5vsknk084sn02q");
/// assert_eq!(TypeIdPrefix::EMPTY.encode(1).as_str(), "00000000000000000000000001");
/// assert!(TypeIdPrefix::new("user1").is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeIdPrefix {
    buf: [u8; TYPEID_PREFIX_MAX],
    len: u8,
}

impl TypeIdPrefix {
    /// The empty prefix: ids are written as the bare suffix, without a separator.
    pub const EMPTY: TypeIdPrefix = TypeIdPrefix {
        buf: [0; TYPEID_PREFIX_MAX],
        len: 0,
    };

    /// A prefix, checked against the spec's rules.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] naming the rule the prefix breaks.
    ///
    /// ```
    /// use idforge::text::TypeIdPrefix;
    /// assert_eq!(TypeIdPrefix::new("user_account")?.as_str(), "user_account");
    /// let e = TypeIdPrefix::new("_user").unwrap_err();
    /// assert!(matches!(e, idforge::Error::InvalidFormat(_)));
    /// assert!(e.to_string().contains("is not a TypeID prefix"));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn new(prefix: &str) -> Result<TypeIdPrefix, Error> {
        check_typeid_prefix(prefix, prefix).map_err(|e| match e {
            Error::MalformedId { reason, .. } => Error::InvalidFormat(format!(
                "{prefix:?} is not a TypeID prefix: {reason} (the spec's prefixes match ^([a-z]([a-z_]{{0,61}}[a-z])?)?$)"
            )),
            e => e,
        })?;
        let mut p = TypeIdPrefix::EMPTY;
        p.buf[..prefix.len()].copy_from_slice(prefix.as_bytes());
        p.len = prefix.len() as u8;
        Ok(p)
    }

    /// The prefix.
    ///
    /// ```
    /// use idforge::text::TypeIdPrefix;
    /// assert_eq!(TypeIdPrefix::new("order")?.as_str(), "order");
    /// assert_eq!(TypeIdPrefix::EMPTY.as_str(), "");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or("")
    }

    /// Whether it is the empty prefix.
    ///
    /// ```
    /// use idforge::text::TypeIdPrefix;
    /// assert!(TypeIdPrefix::new("")?.is_empty());
    /// assert!(!TypeIdPrefix::new("user")?.is_empty());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The TypeID text of a 128-bit value: `prefix_` (nothing for the empty prefix) and the
    /// 26-character suffix, on the stack.
    ///
    /// ```
    /// use idforge::text::TypeIdPrefix;
    /// // The zero suffix after a prefix, and the largest suffix (first character at most 7).
    /// assert_eq!(TypeIdPrefix::new("prefix")?.encode(0).as_str(), "prefix_00000000000000000000000000");
    /// assert_eq!(TypeIdPrefix::EMPTY.encode(u128::MAX).as_str(), "7zzzzzzzzzzzzzzzzzzzzzzzzz");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn encode(&self, value: u128) -> TypeIdText {
        let mut t = TypeIdText {
            buf: [0; TYPEID_MAX],
            len: 0,
        };
        let mut at = self.len as usize;
        t.buf[..at].copy_from_slice(&self.buf[..at]);
        if at > 0 {
            t.buf[at] = b'_';
            at += 1;
        }
        let suffix = encode(value, 128, Format::TypeId);
        t.buf[at..at + 26].copy_from_slice(suffix.as_bytes());
        t.len = (at + 26) as u8;
        t
    }
}

impl fmt::Debug for TypeIdPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for TypeIdPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The longest TypeID text: a 63-character prefix, the separator and the 26-character suffix.
pub const TYPEID_MAX: usize = TYPEID_PREFIX_MAX + 1 + 26;

/// TypeID text on the stack ([`TypeIdPrefix::encode`]).
///
/// ```
/// use idforge::text::TypeIdPrefix;
/// let t = TypeIdPrefix::new("user")?.encode(1);
/// assert_eq!(format!("{t}"), "user_00000000000000000000000001");
/// assert_eq!(t.as_str().len(), 4 + 1 + 26);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct TypeIdText {
    buf: [u8; TYPEID_MAX],
    len: u8,
}

impl TypeIdText {
    /// The text.
    ///
    /// ```
    /// use idforge::text::TypeIdPrefix;
    /// assert_eq!(TypeIdPrefix::new("a")?.encode(2).as_str(), "a_00000000000000000000000002");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
    /// The text's bytes.
    ///
    /// ```
    /// use idforge::text::TypeIdPrefix;
    /// assert!(TypeIdPrefix::new("a")?.encode(2).as_bytes().starts_with(b"a_0"));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

impl fmt::Display for TypeIdText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TypeIdText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Parses TypeID text, `prefix_suffix` or a bare suffix (the empty prefix, no separator), into
/// its prefix and the 128-bit value of its suffix. The text is taken as given (not trimmed).
///
/// # Errors
/// [`Error::MalformedId`] for a bad prefix ([`check_typeid_prefix`]), a separator with an
/// empty prefix, or a suffix that is not 26 lowercase Crockford characters starting with 0-7.
///
/// ```
/// use idforge::text::parse_typeid;
/// // valid.yml's `valid-uuidv7`
/// let (p, v) = parse_typeid("prefix_01h455vb4pex5vsknk084sn02q", "").unwrap();
/// assert_eq!((p, v), ("prefix", 0x01890a5d_ac96_774b_bcce_b302099a8057));
/// assert!(parse_typeid("prefix_8zzzzzzzzzzzzzzzzzzzzzzzzz", "").is_err());
/// ```
pub fn parse_typeid<'a>(t: &'a str, orig: &str) -> Result<(&'a str, u128), Error> {
    if let Some(read) = typeid_fast(t) {
        return Ok(read);
    }
    let (prefix, suffix) = match t.rfind('_') {
        None => ("", t),
        Some(0) => {
            return Err(malformed(
                orig,
                "a TypeID with an empty prefix has no '_' separator",
            ))
        }
        Some(at) => (&t[..at], &t[at + 1..]),
    };
    check_typeid_prefix(prefix, orig)?;
    if suffix.chars().count() != 26 {
        return Err(malformed(
            orig,
            format!(
                "a TypeID suffix has 26 characters, not {}",
                suffix.chars().count()
            ),
        ));
    }
    let mut v: u128 = 0;
    for (i, c) in suffix.chars().enumerate() {
        let Some(d) = digit_in(CROCKFORD_LOWER, c) else {
            return Err(malformed(
                orig,
                format!("character {c:?} at position {i} of the TypeID suffix is not in its alphabet (lowercase Crockford base32: 0-9 and a-z without i, l, o and u)"),
            ));
        };
        if i == 0 && d > 7 {
            return Err(malformed(
                orig,
                format!("the suffix's first character {c:?} is above 7: the value overflows 128 bits (the largest suffix is 7zzzzzzzzzzzzzzzzzzzzzzzzz)"),
            ));
        }
        v = (v << 5) | u128::from(d);
    }
    Ok((prefix, v))
}

static TYPEID_DIGITS: [u8; 256] = digit_table(CROCKFORD_LOWER, false, &[]);

/// Valid TypeID text read with byte tables, or `None` (then the character-by-character
/// reading of [`parse_typeid`] says what is wrong, or reads what this does not try).
pub(crate) fn typeid_fast(t: &str) -> Option<(&str, u128)> {
    let b = t.as_bytes();
    let n = b.len();
    if n < 26 {
        return None;
    }
    let (prefix, suffix) = match n {
        26 => (&b[..0], b),
        _ if n >= 28 && b[n - 27] == b'_' => (&b[..n - 27], &b[n - 26..]),
        _ => return None,
    };
    let good_prefix = prefix.len() <= TYPEID_PREFIX_MAX
        && prefix.iter().all(|&c| c.is_ascii_lowercase() || c == b'_')
        && prefix.first().is_none_or(u8::is_ascii_lowercase)
        && prefix.last().is_none_or(u8::is_ascii_lowercase);
    if !good_prefix || suffix[0] > b'7' {
        return None;
    }
    let v = fold_digits(suffix, &TYPEID_DIGITS)?;
    // The prefix is ASCII, so byte n - 27 starts a character.
    Some((&t[..prefix.len()], v))
}

/// The value of 8 hex digits (either case), or `None` if a byte is not one. Eight bytes at
/// once (SWAR): each byte's high bit says, after one add, whether it is at least the low end
/// of a range or above its high end (bytes below 0x80, so no lane carries into the next);
/// digits are `c & 0xF`, letters 9 more; three shift-and-mask rounds pack the nibbles.
#[inline(always)]
fn hex8(b: [u8; 8]) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let x = u64::from_be_bytes(b);
    let at_least = |lo: u8| x.wrapping_add(ONES * u64::from(0x80 - lo));
    let above = |hi: u8| x.wrapping_add(ONES * u64::from(0x7F - hi));
    let digit = at_least(b'0') & !above(b'9');
    let letter = (at_least(b'a') & !above(b'f')) | (at_least(b'A') & !above(b'F'));
    if x & HIGH != 0 || (digit | letter) & HIGH != HIGH {
        return None;
    }
    let mut v = (x & (ONES * 0x0F)) + ((letter & HIGH) >> 7) * 9;
    v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
    v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
    v = (v | (v >> 16)) & 0xFFFF_FFFF;
    Some(v as u32)
}

/// The value of 36 characters of 8-4-4-4-12 UUID text, or `None` for anything else (then the
/// character-by-character reading says what is wrong). The 32 digits go through [`hex8`] in
/// four words: the digit-at-a-time 128-bit shift, then a table per digit, were most of
/// `inspect`'s time on UUIDs.
pub(crate) fn uuid_hex_fast(b: &[u8]) -> Option<u128> {
    let b: &[u8; 36] = b.try_into().ok()?;
    if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    let word = |a: &[u8], c: &[u8]| -> [u8; 8] {
        let mut w = [0u8; 8];
        w[..4].copy_from_slice(a);
        w[4..].copy_from_slice(c);
        w
    };
    let time_low = hex8([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])?;
    let mid_high = hex8(word(&b[9..13], &b[14..18]))?;
    let seq_node = hex8(word(&b[19..23], &b[24..28]))?;
    let node_low = hex8([b[28], b[29], b[30], b[31], b[32], b[33], b[34], b[35]])?;
    let hi = u64::from(time_low) << 32 | u64::from(mid_high);
    let lo = u64::from(seq_node) << 32 | u64::from(node_low);
    Some(u128::from(hi) << 64 | u128::from(lo))
}

/// Parses UUID text: canonical (hyphens at 8, 13, 18, 23; hex in either case), braced
/// (`{...}`) or a URN (`urn:uuid:...`).
///
/// # Errors
///
/// [`Error::MalformedId`] naming the length, the missing hyphen or brace, or the first
/// character that is not a hex digit; `orig` is the text echoed in the message.
///
/// ```
/// use idforge::text::parse_uuid;
/// let v = 0x017f_22e2_79b0_7cc3_98c4_dc0c_0c07_398fu128;
/// assert_eq!(parse_uuid("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", "").unwrap(), v);
/// assert_eq!(parse_uuid("{017F22E2-79B0-7CC3-98C4-DC0C0C07398F}", "").unwrap(), v);
/// assert_eq!(parse_uuid("urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f", "").unwrap(), v);
/// assert!(parse_uuid("017f22e2-79b0-7cc3-98c4-dc0c0c07398", "x").is_err()); // 35 characters
/// ```
pub fn parse_uuid(t: &str, orig: &str) -> Result<u128, Error> {
    let (inner, offset) = if let Some(rest) = t.strip_prefix('{') {
        match rest.strip_suffix('}') {
            Some(inner) => (inner, 1),
            None if rest.len() == 36 => return Err(malformed(orig, "a braced UUID ends with '}'")),
            // Not a braced UUID: the canonical form's errors say what is wrong.
            None => (t, 0),
        }
    } else if t.len() >= 9 && t.as_bytes()[..9].eq_ignore_ascii_case(b"urn:uuid:") {
        // The first 9 bytes are ASCII, so byte 9 starts a character.
        (&t[9..], 9)
    } else {
        (t, 0)
    };
    let b = inner.as_bytes();
    if b.len() != 36 {
        return Err(malformed(
            orig,
            format!(
                "a UUID has 36 characters (8-4-4-4-12 hex digits), this has {}",
                inner.chars().count()
            ),
        ));
    }
    if let Some(v) = uuid_hex_fast(b) {
        return Ok(v);
    }
    let mut v: u128 = 0;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return Err(malformed(
                    orig,
                    format!("expected '-' at position {}", i + offset),
                ));
            }
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => {
                return Err(malformed(
                    orig,
                    format!(
                        "character {:?} at position {} is not a hex digit",
                        inner.get(i..).and_then(|s| s.chars().next()).unwrap_or(' '),
                        i + offset
                    ),
                ))
            }
        };
        v = (v << 4) | d as u128;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimal_text_of_every_length_reads_as_std_reads_it() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = 1 + (x % 42) as usize;
            let mut y = x;
            let mut text: Vec<u8> = (0..len)
                .map(|_| {
                    y = y.rotate_left(7) ^ 0x5555;
                    b'0' + (y % 10) as u8
                })
                .collect();
            // Now and then one byte that is no digit, at any place: the bytes next to the
            // digits, and bytes whose sums carry between the 8 lanes.
            if x % 3 == 0 {
                let bad = [b'/', b':', b' ', b'a', 0x00, 0x2F, 0x3A, 0xFA, 0xFF, 0x80]
                    [(x >> 20) as usize % 10];
                text[(x >> 8) as usize % len] = bad;
            }
            let Ok(t) = std::str::from_utf8(&text) else {
                continue;
            };
            let std = t
                .parse::<u128>()
                .ok()
                .filter(|_| t.bytes().all(|c| c.is_ascii_digit()));
            assert_eq!(super::parse_dec(t, t).ok(), std, "{t:?}");
        }
        for v in [
            0u128,
            9,
            10,
            99_999_999,
            100_000_000,
            u128::from(u64::MAX),
            u128::MAX,
            10u128.pow(38) - 1,
        ] {
            assert_eq!(super::parse_dec(&v.to_string(), "").unwrap(), v);
        }
    }

    use super::*;
    use proptest::prelude::*;

    /// [`hex8`] against a digit-by-digit reading: every byte value at every position, among
    /// digits of both cases.
    #[test]
    fn eight_hex_digits_at_once_match_one_at_a_time() {
        let slow = |w: [u8; 8]| -> Option<u32> {
            w.iter()
                .try_fold(0u32, |v, &c| char::from(c).to_digit(16).map(|d| v << 4 | d))
        };
        let fills: [[u8; 8]; 3] = [*b"0123abcd", *b"ABCDEF98", *b"f0F9a5E7"];
        for fill in fills {
            assert_eq!(hex8(fill), slow(fill));
            for at in 0..8 {
                for c in 0..=255u8 {
                    let mut w = fill;
                    w[at] = c;
                    assert_eq!(hex8(w), slow(w), "{w:?}");
                }
            }
        }
        // Two bad bytes, one of them at or above 0x80 (a lane that could carry).
        for c in [0x80u8, 0xAF, 0xFF, b'/', b':', b'@', b'G', b'`', b'g'] {
            let mut w = *b"01234567";
            w[3] = c;
            w[4] = 0xFF;
            assert_eq!(hex8(w), None);
        }
    }

    #[test]
    fn small_ids_in_fixed_width_formats_read_back_when_unambiguous() {
        for v in [0u128, 10, 32, 0x12345] {
            for f in [Format::Hex, Format::Base32] {
                let t = encode(v, 64, f);
                assert_eq!(parse(t.as_str(), 64, Some(f)).unwrap(), v, "{f} {t}");
            }
        }
        // With a letter, the text can only be hex or base32.
        assert_eq!(parse("00000000000000ff", 64, None).unwrap(), 255);
        assert_eq!(parse("000000000007Z", 64, None).unwrap(), 255);
        // Only zeros: every reading gives 0.
        assert_eq!(parse("0000000000000000", 64, None).unwrap(), 0);
        // Zero-padded digits are decimal to some tools, base32 or hex to others.
        assert!(matches!(
            parse("0000000000010", 64, None),
            Err(Error::AmbiguousId { .. })
        ));
        assert_eq!(parse("10", 64, None).unwrap(), 10);
    }

    #[test]
    fn a_36_digit_decimal_is_not_taken_for_a_uuid() {
        // Found by the `inspect` fuzz target: a global-id-128 id whose decimal text has 36 digits.
        let v = 170_027_677_375_130_371_576_546_077_701_042_943u128;
        assert_eq!(detect(&v.to_string(), 128).unwrap(), Format::Dec);
        assert_eq!(parse(&v.to_string(), 128, None).unwrap(), v);
    }

    #[test]
    fn base32_sorts_like_numbers() {
        let a = encode(1 << 40, 64, Format::Base32);
        let b = encode((1 << 40) + 1, 64, Format::Base32);
        let c = encode(u64::MAX as u128, 64, Format::Base32);
        assert!(a.as_str() < b.as_str() && b.as_str() < c.as_str());
        assert_eq!(c.as_str(), "FZZZZZZZZZZZZ");
        assert!(parse("GZZZZZZZZZZZZ", 64, Some(Format::Base32)).is_err());
    }

    #[test]
    fn malformed_inputs_say_what_is_wrong() {
        let e = |s: &str, bits| parse(s, bits, None).unwrap_err().to_string();
        assert!(e("", 64).contains("not a recognisable id"));
        assert!(e("0xzz", 64).contains("not a hex digit"));
        assert!(e("18446744073709551616", 64).contains("does not fit in 64 bits"));
        assert!(e("0188e6f2-a1b2-7c3d-8e4f-5a6b7c8d9e0g", 128).contains("position 35"));
        assert!(e("0188e6f2+a1b2-7c3d-8e4f-5a6b7c8d9e0f", 128).contains("position 8"));
        assert!(e("0188e6f2-a1b2-7c3d", 128).contains("a UUID has 36 characters"));
        assert!(e("-5", 64).contains("not a recognisable id"));
    }

    #[test]
    fn digits_only_text_of_a_fixed_width_is_ambiguous_not_decimal() {
        // `idforge gen snowflake --node 0 --at 2024-10-11T09:40:25.767Z --format hex` prints
        // 1999999999800000: only digits, so it was read as decimal (a 2010 time, node 159).
        let e = parse("1999999999800000", 64, None).unwrap_err().to_string();
        assert!(
            e.contains("ambiguous") && e.contains("format `dec`") && e.contains("format `hex`"),
            "{e}"
        );
        assert!(matches!(
            detect("1999999999800000", 64),
            Err(Error::AmbiguousId { .. })
        ));
        assert_eq!(
            parse("1999999999800000", 64, Some(Format::Hex)).unwrap(),
            0x1999_9999_9980_0000
        );
        assert_eq!(
            parse("1999999999800000", 64, Some(Format::Dec)).unwrap(),
            1_999_999_999_800_000
        );
        // 13 digits: decimal, or base32 of a 64-bit id.
        let e = parse("1234567890123", 64, None).unwrap_err().to_string();
        assert!(e.contains("format `base32`"), "{e}");
        // 32 digits: decimal, or hex of a 128-bit id.
        let e = parse("12345678901234567890123456789012", 128, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("format `hex`"), "{e}");
        // Other lengths, and hex with a letter, are not ambiguous.
        assert_eq!(
            parse("123456789012345", 64, None).unwrap(),
            123_456_789_012_345
        );
        assert_eq!(
            parse("199999999980000a", 64, None).unwrap(),
            0x1999_9999_9980_000a
        );
    }

    #[test]
    fn invalid_widths_do_not_panic() {
        for bits in [0, 1, 3, 12, 60, 63, 65, 100, 127, 129, 200, u32::MAX] {
            for f in [Format::Dec, Format::Hex, Format::Base32, Format::Uuid] {
                let t = encode(u128::MAX, bits, f);
                let _ = parse(t.as_str(), bits, Some(f));
                let _ = parse(t.as_str(), bits, None);
            }
        }
        assert_eq!(
            encode(255, 200, Format::Hex).as_str(),
            encode(255, 128, Format::Hex).as_str()
        );
    }

    #[test]
    fn braced_and_urn_uuid_text_is_accepted() {
        let v = 0x017f_22e2_79b0_7cc3_98c4_dc0c_0c07_398fu128;
        for t in [
            "{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}",
            "urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
            "URN:UUID:017F22E2-79B0-7CC3-98C4-DC0C0C07398F",
        ] {
            assert_eq!(parse(t, 128, None).unwrap(), v, "{t}");
            assert_eq!(parse(t, 128, Some(Format::Uuid)).unwrap(), v, "{t}");
        }
        let e = parse("{017f22e2-79b0-7cc3-98c4-dc0c0c07398f", 128, None).unwrap_err();
        assert!(e.to_string().contains('}'), "{e}");
    }

    #[test]
    fn a_uuid_one_digit_short_is_told_its_length() {
        let e = parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398", 128, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a UUID has 36 characters"), "{e}");
    }

    proptest! {
        #[test]
        fn every_format_round_trips_64(v in any::<u64>()) {
            for f in [Format::Dec, Format::Hex, Format::Base32] {
                let t = encode(v as u128, 64, f);
                prop_assert_eq!(parse(t.as_str(), 64, Some(f)).unwrap(), v as u128);
            }
        }

        #[test]
        fn every_format_round_trips_128(v in any::<u128>()) {
            for f in [Format::Dec, Format::Hex, Format::Base32, Format::Uuid] {
                let t = encode(v, 128, f);
                prop_assert_eq!(parse(t.as_str(), 128, Some(f)).unwrap(), v);
            }
            let t = encode(v, 128, Format::Uuid);
            prop_assert_eq!(parse(&t.as_str().to_uppercase(), 128, None).unwrap(), v);
        }

        #[test]
        fn hex_and_uuid_text_are_the_standard_formatters(v in any::<u128>(), bits in 1u32..=128) {
            // std's `{:x}` is the reference for the digits; the UUID form puts hyphens after
            // digits 8, 12, 16 and 20.
            let masked = if bits == 128 { v } else { v & ((1u128 << bits) - 1) };
            let w = hex_width(bits);
            let t = encode(v, bits, Format::Hex);
            prop_assert_eq!(t.as_str(), format!("{masked:0w$x}"));
            let hex = format!("{v:032x}");
            let uuid = format!(
                "{}-{}-{}-{}-{}",
                &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]
            );
            let t = encode(v, 128, Format::Uuid);
            prop_assert_eq!(t.as_str(), uuid.as_str());
            prop_assert_eq!(t.as_bytes(), uuid.as_bytes());
            let (upper_uuid, upper_hex) = (uuid.to_uppercase(), hex.to_uppercase());
            prop_assert_eq!(&uuid_ascii(v, true)[..], upper_uuid.as_bytes());
            prop_assert_eq!(&hex32(v, true)[..], upper_hex.as_bytes());
        }

        #[test]
        fn parse_never_panics(s in ".{0,48}") {
            let _ = parse(&s, 64, None);
            let _ = parse(&s, 128, None);
        }
    }
}
