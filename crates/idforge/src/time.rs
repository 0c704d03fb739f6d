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

/// RFC 3339 UTC text of a Unix time in nanoseconds, with exactly `digits` (0..=9) fraction digits
/// (truncated, never rounded up into the next second).
///
/// ```
/// assert_eq!(idforge::time::format_unix_ns(1_645_557_742_000_000_000, 3), "2022-02-22T19:22:22.000Z");
/// assert_eq!(idforge::time::format_unix_ns(1, 9), "1970-01-01T00:00:00.000000001Z");
/// assert_eq!(idforge::time::format_unix_ns(0, 0), "1970-01-01T00:00:00Z");
/// ```
pub fn format_unix_ns(ns: i128, digits: u32) -> String {
    let digits = digits.min(9);
    let secs = ns.div_euclid(NS_PER_S);
    let frac = ns.rem_euclid(NS_PER_S);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else {
        format!("{y:+}")
    };
    let mut out = format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    );
    if digits > 0 {
        let f = frac / 10i128.pow(9 - digits);
        out.push_str(&format!(".{f:0width$}", width = digits as usize));
    }
    out.push('Z');
    out
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
/// ```
/// assert_eq!(idforge::time::parse_rfc3339("1970-01-01T00:00:01.5Z").unwrap(), 1_500_000_000);
/// assert!(idforge::time::parse_rfc3339("yesterday").is_err());
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

#[cfg(test)]
mod tests {
    use super::*;

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
