//! Ids as text: decimal, fixed-width hex, Crockford base32 and canonical UUID text.
//!
//! Every format except decimal has a fixed width for a given id width, so text sorts like the
//! number it encodes. Encoding writes into a stack buffer ([`Text`]): no allocation per id.
//! JSON output elsewhere in idforge always carries ids as strings, since JSON numbers lose
//! precision past 2^53.

use std::fmt;
use std::str::FromStr;

use crate::error::{malformed, Error};

/// A text format for ids.
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
}

impl Format {
    /// The format's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Dec => "dec",
            Format::Hex => "hex",
            Format::Base32 => "base32",
            Format::Uuid => "uuid",
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
            _ => Err(format!(
                "unknown format {s:?}; use dec, hex, base32 or uuid"
            )),
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The two lowercase hex digits of every byte: text is written a byte at a time.
const HEX_PAIRS: [[u8; 2]; 256] = {
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 0xF]];
        i += 1;
    }
    t
};
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Encoded id text on the stack (at most 40 bytes: a 128-bit decimal is 39 digits).
#[derive(Clone, Copy)]
pub struct Text {
    buf: [u8; 40],
    len: u8,
}

impl Text {
    /// The text.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever written into the buffer.
        std::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or("")
    }
    /// The text's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
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

/// Characters of the fixed-width base32 text of a `bits`-wide id.
pub const fn base32_width(bits: u32) -> usize {
    bits.div_ceil(5) as usize
}

/// Encodes a `bits`-wide (64 or 128) id. [`Format::Uuid`] needs 128 bits: check with
/// [`check_format`] first; a 64-bit id asked for as a UUID is written zero-extended.
///
/// ```
/// use idforge::text::{encode, Format};
/// assert_eq!(encode(255, 64, Format::Hex).as_str(), "00000000000000ff");
/// assert_eq!(encode(255, 64, Format::Dec).as_str(), "255");
/// assert_eq!(encode(32, 64, Format::Base32).as_str(), "0000000000010");
/// assert_eq!(encode(0x0188_0000_0000_7000_8000_0000_0000_0001, 128, Format::Uuid).as_str(),
///            "01880000-0000-7000-8000-000000000001");
/// ```
#[inline]
pub fn encode(value: u128, bits: u32, format: Format) -> Text {
    let mut t = Text {
        buf: [0; 40],
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
            t.buf[..s.len()].copy_from_slice(s.as_bytes());
            t.len = s.len() as u8;
        }
        Format::Hex => {
            let bytes = value.to_be_bytes();
            let skip = 16 - (bits / 8) as usize; // 64-bit ids: the low 8 bytes
            for (i, &b) in bytes[skip..].iter().enumerate() {
                t.buf[2 * i..2 * i + 2].copy_from_slice(&HEX_PAIRS[b as usize]);
            }
            t.len = (bits / 4) as u8;
        }
        Format::Base32 => {
            let n = base32_width(bits);
            for i in 0..n {
                t.buf[i] = CROCKFORD[((value >> (5 * (n - 1 - i))) & 0x1F) as usize];
            }
            t.len = n as u8;
        }
        Format::Uuid => {
            // Byte i of the UUID goes to text position 2i, plus one for each hyphen before it.
            const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
            let bytes = value.to_be_bytes();
            for (&b, &at) in bytes.iter().zip(AT.iter()) {
                t.buf[at..at + 2].copy_from_slice(&HEX_PAIRS[b as usize]);
            }
            for at in [8, 13, 18, 23] {
                t.buf[at] = b'-';
            }
            t.len = 36;
        }
    }
    t
}

/// Whether `format` can represent ids of `scheme`, `bits` wide.
pub fn check_format(format: Format, bits: u32, is_uuid: bool, scheme: &str) -> Result<(), Error> {
    if format == Format::Uuid && !is_uuid {
        return Err(Error::UnsupportedFormat {
            format: format.to_string(),
            scheme: scheme.into(),
            reason: format!("its ids are {bits}-bit integers, not UUIDs; use dec, hex or base32"),
        });
    }
    Ok(())
}

/// Guesses the format of id text: canonical UUID text (36 characters with hyphens), `0x` hex,
/// decimal digits, hex of exactly the id's width in digits, or base32 of exactly its width.
pub fn detect(text: &str, bits: u32) -> Option<Format> {
    let t = text.trim();
    let b = t.as_bytes();
    // A 36-digit decimal (a 128-bit id) is not a UUID: UUID text has hyphens.
    if b.len() == 36 && b.contains(&b'-') {
        Some(Format::Uuid)
    } else if t.starts_with("0x") || t.starts_with("0X") {
        Some(Format::Hex)
    } else if !t.is_empty() && b.iter().all(u8::is_ascii_digit) {
        // Decimal text is never zero-padded; a padded run of digits of exactly a fixed width is
        // the hex or base32 text of a small id.
        let padded = b.len() > 1 && b[0] == b'0';
        if padded && b.len() == (bits / 4) as usize {
            Some(Format::Hex)
        } else if padded && b.len() == base32_width(bits) {
            Some(Format::Base32)
        } else {
            Some(Format::Dec)
        }
    } else if b.len() == (bits / 4) as usize && b.iter().all(u8::is_ascii_hexdigit) {
        Some(Format::Hex)
    } else if b.len() == base32_width(bits) {
        Some(Format::Base32)
    } else if b.len() == 32 && b.iter().all(u8::is_ascii_hexdigit) {
        Some(Format::Hex)
    } else {
        None
    }
}

/// Parses id text of an id `bits` wide, in `format` or (with `None`) the detected one.
///
/// ```
/// use idforge::text::{parse, Format};
/// assert_eq!(parse("255", 64, None).unwrap(), 255);
/// assert_eq!(parse("0x00ff", 64, None).unwrap(), 255);
/// assert_eq!(parse("000000000007Z", 64, Some(Format::Base32)).unwrap(), 255);
/// assert!(parse("12x", 64, None).is_err());
/// ```
pub fn parse(text: &str, bits: u32, format: Option<Format>) -> Result<u128, Error> {
    let t = text.trim();
    let format = match format.or_else(|| detect(t, bits)) {
        Some(f) => f,
        None => {
            return Err(malformed(
                text,
                format!(
                    "not a recognisable id: expected decimal digits, {} hex digits, {} base32 characters, or a UUID (8-4-4-4-12 hex digits)",
                    bits / 4,
                    base32_width(bits)
                ),
            ))
        }
    };
    let value = match format {
        Format::Dec => parse_dec(t, text)?,
        Format::Hex => parse_hex(t, text)?,
        Format::Base32 => parse_base32(t, text, bits)?,
        Format::Uuid => parse_uuid(t, text)?,
    };
    if bits < 128 && value >> bits != 0 {
        return Err(malformed(
            text,
            format!("the value does not fit in {bits} bits"),
        ));
    }
    Ok(value)
}

fn parse_dec(t: &str, orig: &str) -> Result<u128, Error> {
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

/// Parses canonical UUID text (hyphens at 8, 13, 18, 23; hex in either case).
pub fn parse_uuid(t: &str, orig: &str) -> Result<u128, Error> {
    let b = t.as_bytes();
    if b.len() != 36 {
        return Err(malformed(
            orig,
            format!(
                "a UUID has 36 characters (8-4-4-4-12 hex digits), this has {}",
                t.chars().count()
            ),
        ));
    }
    let mut v: u128 = 0;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return Err(malformed(orig, format!("expected '-' at position {i}")));
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
                        "character {:?} at position {i} is not a hex digit",
                        t[i..].chars().next().unwrap_or(' ')
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
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_ids_in_fixed_width_formats_are_not_taken_for_decimal() {
        for v in [0u128, 10, 32, 0x12345] {
            for f in [Format::Hex, Format::Base32] {
                let t = encode(v, 64, f);
                assert_eq!(parse(t.as_str(), 64, None).unwrap(), v, "{f} {t}");
            }
        }
        assert_eq!(parse("0000000000010", 64, None).unwrap(), 32);
        assert_eq!(parse("10", 64, None).unwrap(), 10);
    }

    #[test]
    fn a_36_digit_decimal_is_not_taken_for_a_uuid() {
        // Found by the `inspect` fuzz target: a global-id-128 id whose decimal text has 36 digits.
        let v = 170_027_677_375_130_371_576_546_077_701_042_943u128;
        assert_eq!(detect(&v.to_string(), 128), Some(Format::Dec));
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
        assert!(e("0188e6f2-a1b2-7c3d", 128).contains("not a recognisable id"));
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
        fn parse_never_panics(s in ".{0,48}") {
            let _ = parse(&s, 64, None);
            let _ = parse(&s, 128, None);
        }
    }
}
