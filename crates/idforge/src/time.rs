//! Time as text: RFC 3339 in UTC at a chosen precision, and parsing of RFC 3339 input.
//!
//! Parsing uses `jiff`. Formatting is done here because id layouts reach past jiff's range (years
//! -9999..=9999): a 48-bit millisecond field runs to the year 10889. The civil-date arithmetic is
//! Howard Hinnant's `civil_from_days`, exact for every day a `u128` of nanoseconds can name.

use crate::error::Error;

const NS_PER_S: i128 = 1_000_000_000;

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(z: i128) -> (i128, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// [`civil_from_days`] in 64-bit arithmetic, for a day count of a time that fits 64 bits of
/// nanoseconds (the caller's range: at most ±106,752 days, far inside `i64`).
fn civil_from_days_64(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// RFC 3339 UTC text of a Unix time in nanoseconds, with exactly `digits` (0..=9) fraction digits
/// (truncated, never rounded up into the next second).
///
/// ```
/// assert_eq!(idforge::time::format_unix_ns(1_645_557_742_000_000_000, 3), "2022-02-22T19:22:22.000Z");
/// assert_eq!(idforge::time::format_unix_ns(1, 9), "1970-01-01T00:00:00.000000001Z");
/// assert_eq!(idforge::time::format_unix_ns(0, 0), "1970-01-01T00:00:00Z");
/// ```
pub fn format_unix_ns(ns: i128, digits: u32) -> String {
    let mut out = Vec::with_capacity(32);
    write_unix_ns(&mut out, ns, digits);
    // Only ASCII digits, signs and separators were written.
    String::from_utf8(out).unwrap_or_default()
}

/// Appends [`format_unix_ns`]'s text to `out`, without allocating (the fast path of
/// [`crate::inspect::Inspector`]).
///
/// ```
/// let mut out = b"time=".to_vec();
/// idforge::time::write_unix_ns(&mut out, 1_645_557_742_000_000_000, 3);
/// assert_eq!(out, b"time=2022-02-22T19:22:22.000Z");
/// ```
pub fn write_unix_ns(out: &mut Vec<u8>, ns: i128, digits: u32) {
    let digits = digits.min(9);
    // 64-bit division where the time fits 64 bits (to the year 2262): 128-bit division is a
    // library call, several times slower, and this runs for every id `inspect` reads.
    let (frac, sod, (y, m, d)) = match i64::try_from(ns) {
        Ok(ns) => {
            let secs = ns.div_euclid(NS_PER_S as i64);
            let days = secs.div_euclid(86_400);
            let (y, m, d) = civil_from_days_64(days);
            (
                ns.rem_euclid(NS_PER_S as i64) as i128,
                secs.rem_euclid(86_400) as u32,
                (i128::from(y), m, d),
            )
        }
        Err(_) => {
            let secs = ns.div_euclid(NS_PER_S);
            (
                ns.rem_euclid(NS_PER_S),
                secs.rem_euclid(86_400) as u32,
                civil_from_days(secs.div_euclid(86_400)),
            )
        }
    };
    if (0..=9999).contains(&y) {
        push_digits(out, y as u64, 4);
    } else {
        out.push(if y < 0 { b'-' } else { b'+' });
        out.extend_from_slice(itoa::Buffer::new().format(y.unsigned_abs()).as_bytes());
    }
    out.push(b'-');
    push_digits(out, u64::from(m), 2);
    out.push(b'-');
    push_digits(out, u64::from(d), 2);
    out.push(b'T');
    push_digits(out, u64::from(sod / 3600), 2);
    out.push(b':');
    push_digits(out, u64::from((sod / 60) % 60), 2);
    out.push(b':');
    push_digits(out, u64::from(sod % 60), 2);
    if digits > 0 {
        out.push(b'.');
        push_digits(out, (frac as u64) / 10u64.pow(9 - digits), digits as usize);
    }
    out.push(b'Z');
}

/// Appends `n` in decimal, zero-padded to at least `width` digits.
fn push_digits(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(n);
    out.extend(std::iter::repeat_n(b'0', width.saturating_sub(s.len())));
    out.extend_from_slice(s.as_bytes());
}

/// 100-nanosecond intervals from 1582-10-15T00:00:00Z (the Gregorian epoch of UUID versions 1
/// and 6) to the Unix epoch: 12,219,292,800 seconds.
pub const GREGORIAN_TO_UNIX_100NS: u64 = 12_219_292_800 * 10_000_000;

/// The 60-bit timestamp of a version 1 or 6 UUID (`version` says which field order): 100 ns
/// intervals since 1582-10-15 (RFC 9562 sections 5.1 and 5.6).
///
/// ```text
///  v1: time_low(32) | time_mid(16) | ver(4) | time_high(12) | var(2) | clock_seq(14) | node(48)
///  v6: time_high(32) | time_mid(16) | ver(4) | time_low(12) | var(2) | clock_seq(14) | node(48)
/// ```
///
/// ```
/// // RFC 9562, Appendix A.1 (v1) and A.5 (v6): the same time.
/// let v1 = 0xC232AB00_9414_11EC_B3C8_9F6BDECED846u128;
/// let v6 = 0x1EC9414C_232A_6B00_B3C8_9F6BDECED846u128;
/// assert_eq!(idforge::time::gregorian_ticks(v1, 1), 0x1EC9414C232AB00);
/// assert_eq!(idforge::time::gregorian_ticks(v6, 6), 0x1EC9414C232AB00);
/// ```
pub fn gregorian_ticks(value: u128, version: u8) -> u64 {
    let hi = (value >> 64) as u64;
    if version == 1 {
        let time_low = hi >> 32;
        let time_mid = (hi >> 16) & 0xFFFF;
        let time_high = hi & 0x0FFF;
        time_high << 48 | time_mid << 32 | time_low
    } else {
        let time_high = hi >> 32;
        let time_mid = (hi >> 16) & 0xFFFF;
        let time_low = hi & 0x0FFF;
        time_high << 28 | time_mid << 12 | time_low
    }
}

/// The calendar year (UTC) of a Unix time in nanoseconds.
///
/// ```
/// assert_eq!(idforge::time::year_of_unix_ns(0), 1970);
/// ```
pub fn year_of_unix_ns(ns: u128) -> i32 {
    let days = (ns / NS_PER_S as u128 / 86_400) as i128;
    i32::try_from(civil_from_days(days).0).unwrap_or(i32::MAX)
}

/// Fraction digits needed to show one tick of `tick_ns` nanoseconds (ms: 3, 10 ms: 2, ns: 9).
///
/// ```
/// use idforge::time::digits_for_tick;
/// assert_eq!(digits_for_tick(1_000_000), 3); // ms
/// assert_eq!(digits_for_tick(10_000_000), 2); // Sonyflake's 10 ms
/// assert_eq!(digits_for_tick(32), 9);
/// ```
pub fn digits_for_tick(tick_ns: u64) -> u32 {
    let mut digits = 9;
    let mut t = tick_ns;
    while digits > 0 && t % 10 == 0 {
        t /= 10;
        digits -= 1;
    }
    digits
}

/// Parses RFC 3339 text (`2024-05-01T12:00:00Z`, `2024-05-01T14:00:00.5+02:00`) into Unix
/// nanoseconds. Times before 1970 are refused: no id layout here can hold them.
///
/// # Errors
/// [`Error::InvalidTime`] (naming the input and the problem) when the text (trimmed) is not
/// RFC 3339, or is before 1970-01-01T00:00:00Z or after 2554-07-21T23:34:33Z (the last time a
/// `u64` of nanoseconds holds).
///
/// ```
/// assert_eq!(idforge::time::parse_rfc3339("1970-01-01T00:00:01.5Z")?, 1_500_000_000);
/// assert!(idforge::time::parse_rfc3339("yesterday").is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn parse_rfc3339(text: &str) -> Result<u64, Error> {
    let ts: jiff::Timestamp = text.trim().parse().map_err(|e| Error::InvalidTime {
        input: crate::error::clip(text),
        reason: format!("{e}"),
    })?;
    let ns = ts.as_nanosecond();
    u64::try_from(ns).map_err(|_| Error::InvalidTime {
        input: crate::error::clip(text),
        reason: if ns < 0 {
            "it is before 1970-01-01T00:00:00Z".into()
        } else {
            "it is after 2554-07-21T23:34:33Z, the last time 64 bits of nanoseconds hold".into()
        },
    })
}

/// The text form of nanosecond timestamps (`nanots`, `nanots-host`): `2021-12-28T14:07:02.954100128`.
/// A foundation module (ids and schemes both use it); re-exported as
/// [`schemes::nanots::format`](crate::schemes::nanots::format) and its siblings.
pub mod nanots_text {
    use super::format_unix_ns;
    use crate::error::{clip, malformed, Error};

    const NS_PER_S: u64 = 1_000_000_000;

    /// The text of a value: `2021-12-28T14:07:02.954100128`, UTC with no zone suffix, trailing zeros
    /// of the fraction dropped (no dot when it is zero), as Chronicle prints it.
    ///
    /// ```
    /// use idforge::schemes::nanots::format;
    /// assert_eq!(format(1_640_700_422_954_100_128), "2021-12-28T14:07:02.954100128");
    /// assert_eq!(format(1_500_000_000), "1970-01-01T00:00:01.5");
    /// assert_eq!(format(0), "1970-01-01T00:00:00");
    /// assert_eq!(format(u64::MAX), "2554-07-21T23:34:33.709551615");
    /// ```
    pub fn format(ns: u64) -> String {
        let mut out = format_unix_ns((ns / NS_PER_S * NS_PER_S) as i128, 0);
        // `format_unix_ns` always ends in `Z`; this form has no zone suffix.
        out.pop();
        let frac = ns % NS_PER_S;
        if frac != 0 {
            let digits = format!("{frac:09}");
            out.push('.');
            out.push_str(digits.trim_end_matches('0'));
        }
        out
    }

    /// The shape [`parse`] accepts, for its error messages.
    const SHAPE: &str = "YYYY-MM-DDTHH:MM:SS";

    /// Parses the text of a value: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9 digits, then
    /// nothing (UTC), `Z`, or an offset `+HH:MM`/`-HH:MM`, which is honoured (the original ignores
    /// it). Surrounding whitespace is trimmed.
    ///
    /// # Errors
    /// [`Error::InvalidTime`] naming the input and the problem for any other text, and for a
    /// time before 1970 or after 2554-07-21T23:34:33.709551615.
    ///
    /// ```
    /// use idforge::schemes::nanots::parse;
    /// let utc = parse("2021-12-28T14:07:02.954100128")?;
    /// assert_eq!(utc, 1_640_700_422_954_100_128);
    /// assert_eq!(parse("2021-12-28T16:07:02.954100128+02:00")?, utc);
    /// assert_eq!(parse(" 2021-12-28T14:07:02.954100128Z\n")?, utc);
    /// assert!(parse("2021-12-28 14:07:02").is_err());
    /// assert!(parse("1969-12-31T23:59:59").is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<u64, Error> {
        let bad = |reason: String| Error::InvalidTime {
            input: clip(text),
            reason,
        };
        let s = text.trim();
        if s.is_empty() {
            return Err(bad(format!(
                "it is empty; expected {SHAPE} with an optional fraction and offset"
            )));
        }
        // The fixed part, character by character: a digit where the shape has a letter.
        let bytes = s.as_bytes();
        for (i, want) in SHAPE.bytes().enumerate() {
            let found = match s.get(i..).and_then(|r| r.chars().next()) {
                Some(c) => c,
                None => {
                    return Err(bad(format!(
                        "it ends after {} characters; expected {SHAPE}",
                        s.chars().count()
                    )))
                }
            };
            let ok = if want.is_ascii_uppercase() && want != b'T' {
                found.is_ascii_digit()
            } else {
                found == want as char
            };
            if !ok {
                let what = if want.is_ascii_uppercase() && want != b'T' {
                    "a digit".to_string()
                } else {
                    format!("{:?}", want as char)
                };
                return Err(bad(format!(
                    "character {} is {found:?} where {SHAPE} has {what}",
                    i + 1
                )));
            }
        }
        let num = |from: usize, to: usize| -> i32 {
            bytes[from..to]
                .iter()
                .fold(0, |n, b| n * 10 + i32::from(b - b'0'))
        };
        // Every byte of the fixed part is ASCII, so index 19 is a character boundary.
        let mut rest = &s[SHAPE.len()..];
        let mut nanos = 0i32;
        if let Some(after_dot) = rest.strip_prefix('.') {
            let n = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 {
                return Err(bad(
                    "the '.' must be followed by 1 to 9 fraction digits".into()
                ));
            }
            if n > 9 {
                return Err(bad(format!(
                    "the fraction has {n} digits; at most 9 (nanoseconds)"
                )));
            }
            let frac = after_dot[..n]
                .bytes()
                .fold(0i32, |f, b| f * 10 + i32::from(b - b'0'));
            nanos = frac * 10i32.pow(9 - n as u32);
            rest = &after_dot[n..];
        }
        let offset_s = match rest.as_bytes() {
            [] | [b'Z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
                if [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()) =>
            {
                let hours = i32::from((h1 - b'0') * 10 + (h2 - b'0'));
                let minutes = i32::from((m1 - b'0') * 10 + (m2 - b'0'));
                if hours > 23 || minutes > 59 {
                    return Err(bad(format!(
                        "the offset {rest} is not a valid offset: hours 00 to 23, minutes 00 to 59"
                    )));
                }
                let secs = hours * 3600 + minutes * 60;
                if *sign == b'-' {
                    -secs
                } else {
                    secs
                }
            }
            _ => {
                return Err(bad(format!(
                    "unexpected {rest:?} after the seconds; expected a fraction of 1 to 9 digits \
                     (.954100128), then nothing (UTC), Z, or an offset like +02:00"
                )))
            }
        };
        // Checked field by field by jiff: month 1..=12, the day within its month, no leap second.
        // The casts cannot truncate: every field has at most 4 digits, a year at most 9999.
        let dt = jiff::civil::DateTime::new(
            num(0, 4) as i16,
            num(5, 7) as i8,
            num(8, 10) as i8,
            num(11, 13) as i8,
            num(14, 16) as i8,
            num(17, 19) as i8,
            nanos,
        )
        .map_err(|e| bad(format!("{e}")))?;
        let ts = jiff::tz::Offset::from_seconds(offset_s)
            .and_then(|o| o.to_timestamp(dt))
            .map_err(|e| bad(format!("{e}")))?;
        let ns = ts.as_nanosecond();
        u64::try_from(ns).map_err(|_| {
            bad(if ns < 0 {
                "it is before 1970-01-01T00:00:00 UTC; a nanots value counts nanoseconds since then"
                    .into()
            } else {
                format!(
                    "it is after {}, the last time a u64 of nanoseconds holds",
                    format(u64::MAX)
                )
            })
        })
    }

    /// A value given either as a decimal integer (`1640700422954100128`) or as text
    /// (`2021-12-28T14:07:02.954100128`, see [`parse`]), for `idforge inspect`.
    ///
    /// # Errors
    /// [`Error::MalformedId`] when the input (trimmed) is empty, is all digits but above
    /// `u64::MAX`, or is neither digits nor text starting with a 4-digit year and a dash;
    /// [`Error::InvalidTime`] as [`parse`] for text that starts like a time.
    ///
    /// ```
    /// use idforge::schemes::nanots::decode_text_or_int;
    /// assert_eq!(decode_text_or_int("1640700422954100128")?, 1_640_700_422_954_100_128);
    /// assert_eq!(decode_text_or_int("2021-12-28T14:07:02.954100128")?, 1_640_700_422_954_100_128);
    /// assert!(decode_text_or_int("18446744073709551616").is_err()); // 2^64
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn decode_text_or_int(input: &str) -> Result<u64, Error> {
        let s = input.trim();
        if s.is_empty() {
            return Err(malformed(
                input,
                "it is empty; give a nanots value as a decimal integer or as text like \
                 2021-12-28T14:07:02.954100128",
            ));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse().map_err(|_| {
                malformed(
                    input,
                    "as a decimal integer it does not fit in 64 bits (the largest is \
                     18446744073709551615)",
                )
            });
        }
        // Text starts with a 4-digit year and a dash; anything else is neither form.
        let looks_like_time = s.len() >= 5
            && s.as_bytes()[..4].iter().all(u8::is_ascii_digit)
            && s.as_bytes()[4] == b'-';
        if looks_like_time {
            parse(s)
        } else {
            Err(malformed(
                input,
                "it is neither a decimal integer nor a timestamp like 2021-12-28T14:07:02.954100128",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_64_bit_calendar_agrees_with_the_128_bit_one() {
        // Every day a 64-bit count of nanoseconds reaches (±106,752 days), and beyond.
        for z in -120_000i64..=120_000 {
            let (y, m, d) = civil_from_days_64(z);
            assert_eq!(
                (i128::from(y), m, d),
                civil_from_days(i128::from(z)),
                "day {z}"
            );
        }
        // Either side of the 64-bit edge, where write_unix_ns switches arithmetic.
        for ns in [
            i64::MAX as i128,
            i64::MAX as i128 + 1,
            i64::MIN as i128,
            i64::MIN as i128 - 1,
        ] {
            let mut fast = Vec::new();
            write_unix_ns(&mut fast, ns, 9);
            let secs = ns.div_euclid(NS_PER_S);
            let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
            let sod = secs.rem_euclid(86_400);
            let year = if (0..=9999).contains(&y) {
                format!("{y:04}")
            } else {
                format!("{y:+}")
            };
            let expected = format!(
                "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
                sod / 3600,
                (sod / 60) % 60,
                sod % 60,
                ns.rem_euclid(NS_PER_S)
            );
            assert_eq!(String::from_utf8(fast).unwrap(), expected);
        }
    }

    #[test]
    fn formats_known_dates() {
        assert_eq!(
            format_unix_ns(951_782_400 * NS_PER_S, 0),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            format_unix_ns(1_288_834_974_657_000_000, 3),
            "2010-11-04T01:42:54.657Z"
        );
        assert_eq!(format_unix_ns(-1, 9), "1969-12-31T23:59:59.999999999Z");
        // 2^48 ms: the end of UUIDv7's time field.
        assert_eq!(year_of_unix_ns((1u128 << 48) * 1_000_000), 10889);
    }

    #[test]
    fn agrees_with_jiff_in_its_range() {
        for secs in [
            0i64,
            1,
            86_399,
            86_400,
            951_868_799,
            4_102_444_800,
            253_402_200_000,
        ] {
            let ns = secs as i128 * NS_PER_S + 123_456_789;
            let ours = format_unix_ns(ns, 9);
            let theirs = jiff::Timestamp::from_nanosecond(ns).unwrap();
            assert_eq!(ours.parse::<jiff::Timestamp>().unwrap(), theirs, "{ours}");
        }
    }

    #[test]
    fn digits() {
        assert_eq!(digits_for_tick(1_000_000), 3);
        assert_eq!(digits_for_tick(10_000_000), 2);
        assert_eq!(digits_for_tick(1), 9);
        assert_eq!(digits_for_tick(1_000_000_000), 0);
        assert_eq!(digits_for_tick(7_000_000), 3);
    }

    #[test]
    fn parse_honours_offsets() {
        assert_eq!(parse_rfc3339("1970-01-01T02:00:00+02:00").unwrap(), 0);
        assert!(matches!(
            parse_rfc3339("1969-12-31T23:00:00Z"),
            Err(Error::InvalidTime { .. })
        ));
    }
}
