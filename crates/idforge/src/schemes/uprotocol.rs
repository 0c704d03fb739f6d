//! `uprotocol`: the current Eclipse uProtocol UUID, a UUIDv7 (seed `000`, "The next uProtocol UUID
//! spec"; RFC 9562 section 5.7).
//!
//! ```text
//!  unix_ts_ms(48) | ver=7(4) | counter(12) | var=0b10(2) | rand_b(62)
//! ```
//!
//! uProtocol validates a UUID by its version (7) and variant (`0b10`) and reads the creation time
//! from `unix_ts_ms`. The article's move to UUIDv7 dropped the counter and the per-process `rand_b`
//! in favour of random bits per id; we keep the 12-bit counter in `rand_a` (RFC 9562 section 6.2,
//! Method 1) so ids stay unique by construction and monotonic across threads, and draw `rand_b`
//! fresh for every id as the current spec does. At 4,096 ids in one millisecond the generator
//! waits for the next, as the original builder did.
//!
//! uProtocol messages carry a UUID as two `u64` halves (`msb`, `lsb`): see [`to_msb_lsb`] and
//! [`from_msb_lsb`]. [`is_expired`] is the message-expiry rule.
//!
//! ```
//! use idforge::schemes::uprotocol;
//! let g = idforge::Generator::new(&idforge::Scheme::UProtocol, None).unwrap();
//! let id = g.next().unwrap();
//! let (msb, lsb) = uprotocol::to_msb_lsb(id);
//! assert!(uprotocol::is_valid(uprotocol::from_msb_lsb(msb, lsb)));
//! ```

use crate::layout::{Field, Layout};

/// The uProtocol UUIDv7 layout.
///
/// ```
/// let l = idforge::schemes::uprotocol::layout();
/// assert_eq!(l.ids_per_tick(), 4096); // a 12-bit counter per millisecond
/// assert_eq!(l.diagram(), "time(48) | ver=7 | counter(12) | var=10 | random(62)");
/// ```
pub fn layout() -> Layout {
    Layout::builder("uprotocol", 128)
        .time(Field::at(80, 48))
        .fixed(76, 4, 7)
        .counter(Field::at(64, 12))
        .fixed(62, 2, 0b10)
        .random(Field::at(0, 62))
        .build()
        .unwrap_or_else(|e| unreachable!("the uprotocol preset is valid: {e}"))
}

/// Splits a UUID into the most and least significant 64 bits, as uProtocol messages carry it.
///
/// ```
/// use idforge::schemes::uprotocol::to_msb_lsb;
/// assert_eq!(to_msb_lsb(0x0190_1234_5678_7abc_8def_0123_4567_89ab),
///            (0x0190_1234_5678_7abc, 0x8def_0123_4567_89ab));
/// ```
pub fn to_msb_lsb(id: u128) -> (u64, u64) {
    ((id >> 64) as u64, id as u64)
}

/// Joins uProtocol's `msb`/`lsb` pair into a UUID.
///
/// ```
/// use idforge::schemes::uprotocol::{from_msb_lsb, to_msb_lsb};
/// let id = 0x0190_1234_5678_7abc_8def_0123_4567_89ab;
/// let (msb, lsb) = to_msb_lsb(id);
/// assert_eq!(from_msb_lsb(msb, lsb), id);
/// ```
pub fn from_msb_lsb(msb: u64, lsb: u64) -> u128 {
    ((msb as u128) << 64) | lsb as u128
}

/// Whether a UUID is a valid uProtocol UUID: version 7 and variant `0b10`.
///
/// ```
/// use idforge::schemes::uprotocol::is_valid;
/// assert!(is_valid(0x0190_1234_5678_7abc_8def_0123_4567_89ab)); // version 7, variant 10
/// assert!(!is_valid(0x0190_1234_5678_4abc_8def_0123_4567_89ab)); // version 4
/// ```
pub fn is_valid(id: u128) -> bool {
    (id >> 76) & 0xF == 7 && (id >> 62) & 0b11 == 0b10
}

/// The creation time in milliseconds since the Unix epoch, if the UUID is valid.
///
/// ```
/// use idforge::schemes::uprotocol::time_ms;
/// assert_eq!(time_ms(0x0190_1234_5678_7abc_8def_0123_4567_89ab), Some(0x0190_1234_5678));
/// assert_eq!(time_ms(0), None);
/// ```
pub fn time_ms(id: u128) -> Option<u64> {
    is_valid(id).then_some((id >> 80) as u64)
}

/// uProtocol's message-expiry rule: a message with time-to-live `ttl_ms` created at the UUID's time
/// is expired at `now_ms` iff `ttl_ms > 0` and `time + ttl_ms <= now_ms` (the sum saturating, so a
/// huge ttl never wraps into the past). An invalid UUID has no time and is never expired by this
/// rule.
///
/// ```
/// use idforge::schemes::uprotocol::{from_msb_lsb, is_expired};
/// let id = from_msb_lsb((1_000u64 << 16) | 0x7000, 0x8000_0000_0000_0000);
/// assert!(!is_expired(id, 0, 5_000));          // ttl 0: never expires
/// assert!(!is_expired(id, 100, 1_099));
/// assert!(is_expired(id, 100, 1_100));         // time + ttl <= now
/// ```
pub fn is_expired(id: u128, ttl_ms: u32, now_ms: u64) -> bool {
    match time_ms(id) {
        Some(t) if ttl_ms > 0 => t.saturating_add(ttl_ms as u64) <= now_ms,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msb_lsb_round_trip_and_validity() {
        let id = 0x0190_1234_5678_7abc_8def_0123_4567_89abu128;
        let (m, l) = to_msb_lsb(id);
        assert_eq!(m, 0x0190_1234_5678_7abc);
        assert_eq!(l, 0x8def_0123_4567_89ab);
        assert_eq!(from_msb_lsb(m, l), id);
        assert!(is_valid(id));
        assert!(
            !is_valid(id & !(0xF << 76) | (8 << 76)),
            "version 8 is not valid"
        );
        assert!(!is_valid(id & !(0b11 << 62)), "variant 0b00 is not valid");
        assert_eq!(time_ms(id), Some(0x0190_1234_5678));
    }

    #[test]
    fn expiry_saturates() {
        let id = from_msb_lsb((u64::MAX >> 16 << 16) | 0x7000, 0x8000_0000_0000_0000);
        // time is the largest 48-bit value; time + ttl saturates instead of wrapping.
        assert!(!is_expired(id, 10, 5));
        assert!(is_expired(id, 10, u64::MAX));
    }
}
