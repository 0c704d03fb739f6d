//! `uuid4`: RFC 9562 UUIDv4 (section 5.4), 122 random bits from a cryptographically secure
//! generator.
//!
//! ```text
//!  random_a(48) | ver=4(4) | random_b(12) | var=0b10(2) | random_c(62)
//! ```
//!
//! The 122 bits come from the calling thread's ChaCha12 (`rand`'s `StdRng`), seeded from the
//! operating system (`getrandom`) and seeded again in a forked child, as RFC 9562 section 6.9
//! asks of unguessable UUIDs ([`RandomSource::Secure`], the only source this scheme takes).
//!
//! **What idforge guarantees for it: nothing beyond the 122 random bits.** There is no time, no
//! counter and no node: no sequencer, no state file and no policy apply, ids are in no order,
//! and uniqueness is by chance only (two of 2^61 ids collide with probability about 1 in 2^3;
//! of a billion, about 1 in 10^19). Use it where ids must reveal nothing (no creation time, no
//! order); use `uuid7` where uniqueness must not rest on chance.
//!
//! ```
//! let id = idforge::schemes::uuid4::uuid4();
//! assert_eq!((id >> 76) & 0xF, 4);          // version
//! assert_eq!((id >> 62) & 0b11, 0b10);      // variant
//! assert_ne!(id, idforge::schemes::uuid4::uuid4());
//! ```

use crate::generator::{random_u128, RandomSource};

/// The layout's diagram, most significant bit first (`idforge schemes`).
pub const DIAGRAM: &str = "random_a(48) | ver=4 | random_b(12) | var=10 | random_c(62)";

/// A UUIDv4 of 128 random bits: the version and variant written over 6 of them.
///
/// ```
/// use idforge::schemes::uuid4::from_random;
/// assert_eq!(from_random(u128::MAX), 0xffffffff_ffff_4fff_bfff_ffffffffffff);
/// assert_eq!(from_random(0), 0x00000000_0000_4000_8000_000000000000);
/// ```
pub fn from_random(bits: u128) -> u128 {
    let v = bits & !(0xF << 76) | 4 << 76;
    v & !(0b11 << 62) | 0b10 << 62
}

/// A new UUIDv4 from the calling thread's secure generator.
///
/// ```
/// use idforge::schemes::uuid4::uuid4;
/// let (a, b) = (uuid4(), uuid4());
/// assert_ne!(a, b);
/// assert_eq!((a >> 76) & 0xF, 4);
/// assert_eq!((a >> 62) & 0b11, 0b10);
/// ```
pub fn uuid4() -> u128 {
    from_random(random_u128(RandomSource::Secure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_variant_are_written_over_random_bits() {
        assert_eq!(from_random(0), 0x0000_0000_0000_4000_8000_0000_0000_0000);
        assert_eq!(
            from_random(u128::MAX),
            0xffff_ffff_ffff_4fff_bfff_ffff_ffff_ffff
        );
        // RFC 9562 Appendix A.3 has its version and variant already.
        let a3 = 0x919108f7_52d1_4320_9bac_f847db4148a8u128;
        assert_eq!(from_random(a3), a3);
    }

    #[test]
    fn the_other_122_bits_vary() {
        let ids: Vec<u128> = (0..64).map(|_| uuid4()).collect();
        let mask = !(0xF << 76 | 0b11 << 62);
        let or = ids.iter().fold(0, |a, id| a | id) & mask;
        let and = ids.iter().fold(u128::MAX, |a, id| a & id) & mask;
        assert_eq!(
            (or, and),
            (mask, 0),
            "every random bit took both values in 64 ids"
        );
    }
}
