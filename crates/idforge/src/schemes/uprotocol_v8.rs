//! `uprotocol-v8`: the legacy uProtocol UUIDv8 (uProtocol 1.5.7), exactly as seed `000` draws it.
//!
//! ```text
//!  unix_ts_ms(48) | ver=8(4) | counter(12) | var=0b10(2) | rand_b(62)
//! ```
//!
//! `rand_b` identifies the uEntity: it is drawn once per process and every id of the process
//! carries it. As in the article, the builder is a process-wide singleton so that no one can make
//! a second builder with a different `rand_b` (which would let two builders issue the same
//! `unix_ts_ms | counter` pair): [`generator`] is the only way to reach it, and
//! `Generator::new(&Scheme::UProtocolV8, ..)` is refused with
//! [`Error::SingletonTaken`](crate::Error::SingletonTaken).
//!
//! The counter resets every millisecond and, at 4,095, the builder waits for the next millisecond,
//! as the original's CAS loop does. Changed from the article: the original compared the clock
//! with the stored millisecond for *equality*, so a clock that stepped back restarted the counter
//! at 0 in an earlier millisecond and could repeat ids. Here the stamp only moves forward:
//! `max(now << 12, last + 1)`.
//!
//! ```
//! use idforge::schemes::uprotocol_v8;
//! let a = uprotocol_v8::next().unwrap();
//! let b = uprotocol_v8::next().unwrap();
//! assert!(b > a);
//! assert_eq!(a & ((1 << 62) - 1), b & ((1 << 62) - 1)); // same rand_b
//! ```

use std::sync::OnceLock;

use crate::clock::SystemClock;
use crate::error::Error;
use crate::generator::{random_u128, Generator, RandomSource};
use crate::layout::{Field, Layout};
use crate::schemes::Scheme;
use crate::sequencer::Sequencer;
use crate::shm::ProcessStamp;

/// The legacy uProtocol UUIDv8 layout; `rand_b` is the layout's node field.
///
/// ```
/// let l = idforge::schemes::uprotocol_v8::layout();
/// assert_eq!(l.diagram(), "time(48) | ver=8 | counter(12) | var=10 | node(62)");
/// ```
pub fn layout() -> Layout {
    Layout::builder("uprotocol-v8", 128)
        .time(Field::at(80, 48))
        .fixed(76, 4, 8)
        .counter(Field::at(64, 12))
        .fixed(62, 2, 0b10)
        .node(Field::at(0, 62))
        .build()
        .unwrap_or_else(|e| unreachable!("the uprotocol-v8 preset is valid: {e}"))
}

/// A new builder with a fresh `rand_b`. Crate-private: users reach the singleton only.
pub(crate) fn new_builder() -> Generator {
    let scheme = Scheme::UProtocolV8;
    let rand_b = (random_u128(RandomSource::Secure) as u64) & ((1 << 62) - 1);
    let cell = ProcessStamp::new()
        .unwrap_or_else(|e| panic!("cannot map one page for the uprotocol-v8 stamp: {e}"));
    let seq = Sequencer::with_cell(
        SystemClock::fast(),
        cell,
        layout().timebase(),
        scheme.default_policy(),
    )
    .unwrap_or_else(|e| unreachable!("the uprotocol-v8 time base is valid: {e}"));
    Generator::build(&scheme, rand_b, seq)
        .unwrap_or_else(|e| unreachable!("the uprotocol-v8 preset builds on the wall clock: {e}"))
}

/// The process-wide builder.
///
/// # Panics
/// On first use, if one page of shared memory for its stamp cannot be mapped (the system is out
/// of memory or of mappings).
///
/// ```
/// let g = idforge::schemes::uprotocol_v8::generator();
/// assert!(std::ptr::eq(g, idforge::schemes::uprotocol_v8::generator())); // one per process
/// ```
pub fn generator() -> &'static Generator {
    static BUILDER: OnceLock<Generator> = OnceLock::new();
    BUILDER.get_or_init(new_builder)
}

/// The next id from the process-wide builder.
///
/// # Errors
/// As [`Generator::next`]: [`Error::TimeOutOfRange`] past the 48-bit millisecond field (the year
/// 10889), [`Error::ClockBehind`] when the wall clock stepped back by more than the default
/// policy's `max_lead` (1 s).
///
/// # Panics
/// As [`generator`], on first use.
///
/// ```
/// let a = idforge::schemes::uprotocol_v8::next()?;
/// let b = idforge::schemes::uprotocol_v8::next()?;
/// assert!(b > a);
/// assert_eq!(a as u64 & ((1 << 62) - 1), idforge::schemes::uprotocol_v8::rand_b());
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn next() -> Result<u128, Error> {
    generator().next()
}

/// This process's `rand_b`.
///
/// ```
/// use idforge::schemes::uprotocol_v8::{next, rand_b};
/// let id = next()?;
/// assert_eq!(id as u64 & ((1 << 62) - 1), rand_b()); // the same in every id of the process
/// assert_eq!(rand_b() >> 62, 0);
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn rand_b() -> u64 {
    generator().layout().node.extract(generator().encode(0)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_builder_cannot_be_made_publicly() {
        let e = Generator::new(&Scheme::UProtocolV8, None).unwrap_err();
        assert_eq!(e, Error::SingletonTaken("uprotocol-v8"));
        assert!(e.to_string().contains("singleton"));
    }

    #[test]
    fn every_id_carries_the_process_rand_b() {
        let rb = rand_b();
        for _ in 0..100 {
            let id = next().unwrap();
            assert_eq!(id as u64 & ((1 << 62) - 1), rb);
            assert_eq!((id >> 76) & 0xF, 8);
            assert_eq!((id >> 62) & 0b11, 0b10);
        }
    }
}
