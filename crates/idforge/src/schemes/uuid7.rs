//! `uuid7`: RFC 9562 UUIDv7 (section 5.7), monotonic within and across the threads of a process.
//!
//! ```text
//!  unix_ts_ms(48) | ver=7(4) | counter_hi(12) | var=0b10(2) | counter_lo(4) | random(58)
//! ```
//!
//! Monotonicity follows RFC 9562 section 6.2, **Method 1** (fixed bit-length dedicated counter):
//! a 16-bit counter, its high 12 bits in `rand_a` and its low 4 bits in the leftmost bits of
//! `rand_b`, reset to zero at every new millisecond. The counter is the low part of the shared
//! sequencer stamp, so ids from all threads are unique and strictly increasing in issue order.
//! One millisecond holds 65,536 ids (65.5 million per second); at exhaustion the generator waits
//! for the next millisecond (section 6.2 allows waiting or running ahead; run-ahead is available
//! through [`Policy`](crate::Policy) with [`OnExhausted::RunAhead`](crate::OnExhausted)).
//!
//! The remaining 58 bits are random for every id, from a per-thread xoshiro generator seeded
//! from the operating system (section 6.9: unguessability is not a goal of these bits; use
//! UUIDv4 for secrets). Uniqueness does not depend on them within a process.
//!
//! The 48-bit millisecond field runs out in the year 10889.
//!
//! ```
//! let id = idforge::uuid7().unwrap();
//! assert_eq!(id.version(), 7);
//! assert_eq!((id.as_u128() >> 62) & 0b11, 0b10);      // variant
//! ```

use std::sync::OnceLock;

use crate::error::Error;
use crate::generator::Generator;
use crate::layout::{Field, Layout, Segment};
use crate::schemes::Scheme;

/// Width of the millisecond timestamp.
pub const TIME_BITS: u32 = 48;
/// Width of the monotonic counter (12 in `rand_a`, 4 in `rand_b`).
pub const COUNTER_BITS: u32 = 16;

/// The UUIDv7 layout with a 16-bit counter.
///
/// ```
/// let l = idforge::schemes::uuid7::layout();
/// assert_eq!(l.ids_per_tick(), 65_536); // a 16-bit counter per millisecond
/// assert!(l.is_time_ordered());
/// ```
pub fn layout() -> Layout {
    Layout::builder("uuid7", 128)
        .time(Field::at(80, TIME_BITS))
        .fixed(76, 4, 7)
        .counter(Field::split(Segment::new(64, 12), Segment::new(58, 4)))
        .fixed(62, 2, 0b10)
        .random(Field::at(0, 58))
        .build()
        .unwrap_or_else(|e| unreachable!("the uuid7 preset is valid: {e}"))
}

/// A monotonic UUIDv7 from the process-wide generator.
///
/// # Errors
/// [`Error::StateFile`] ([`StateFileError::Io`](crate::StateFileError::Io)) on first use when the
/// generator's shared page cannot be mapped (the system is out of memory or of mappings; a later
/// call tries again); otherwise as [`Generator::next`]: [`Error::TimeOutOfRange`] past the
/// 48-bit millisecond field (the year 10889), [`Error::ClockBehind`] when the wall clock stepped
/// back by more than the default policy's `max_lead` (1 s).
///
/// ```
/// let (a, b) = (idforge::uuid7()?, idforge::uuid7()?);
/// assert!(b > a);
/// assert_eq!(a.to_string().as_bytes()[14], b'7'); // the version
/// assert!(a.timestamp().is_some());
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn uuid7() -> Result<crate::UuidId, Error> {
    static GEN: OnceLock<Generator> = OnceLock::new();
    let g = match GEN.get() {
        Some(g) => g,
        // Racing first calls may each build one; only the generator stored issues ids.
        None => {
            let g = Generator::new(&Scheme::Uuid7, None)?;
            GEN.get_or_init(|| g)
        }
    };
    g.next_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{parse, Format};

    #[test]
    fn rfc9562_appendix_a6_vector_decodes_to_its_timestamp() {
        // RFC 9562, Appendix A.6: 017F22E2-79B0-7CC3-98C4-DC0C0C07398F,
        // unix_ts_ms 0x017F22E279B0 = 1645557742000 = 2022-02-22T19:22:22.000Z.
        let id = parse(
            "017F22E2-79B0-7CC3-98C4-DC0C0C07398F",
            128,
            Some(Format::Uuid),
        )
        .unwrap();
        let l = layout();
        let p = l.decode(id);
        assert_eq!(p.ticks, 0x017F_22E2_79B0);
        assert_eq!(l.unix_ns_of(p.ticks), 1_645_557_742_000_000_000);
        assert!(p.fixed_ok, "version 7 and variant 0b10");
        assert_eq!(
            crate::time::format_unix_ns(l.unix_ns_of(p.ticks) as i128, 3),
            "2022-02-22T19:22:22.000Z"
        );
    }

    #[test]
    fn layout_runs_out_in_10889() {
        assert_eq!(layout().end_year(), 10889);
    }
}
