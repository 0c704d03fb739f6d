//! # idforge
//!
//! Unique identifiers in every layout that matters, from one lock-free engine:
//!
//! ```text
//!  Clock ──now──▶ Sequencer ──stamp──▶ Layout ──bits──▶ id ──▶ text
//!  (wall ns)      last = max(tick(now) << c, last + 1), one CAS on a u64
//! ```
//!
//! * [`Clock`]: [`WallClock`], or [`ManualClock`] for tests and backfills.
//! * [`Sequencer`]: the single source of uniqueness, with explicit [`Policy`] for counter
//!   exhaustion and a clock that steps back.
//! * [`Layout`]: where node, time, counter, random and fixed bits sit; exact encode/decode.
//! * [`Scheme`]: the presets ([`schemes`]: UUIDv7, uProtocol, GlobalId, Snowflake, Sonyflake)
//!   and custom layouts; [`Generator`] makes ids of any of them.
//! * [`text`]: decimal, hex, Crockford base32 and UUID text; [`inspect()`] decodes any id.
//! * [`ids`]: typed ids ([`UuidId`], [`Id64`], [`Id128`], [`NanoTs`]) from
//!   [`Generator::next_uuid`] and its siblings, with `serde` and `uuid` support behind features.
//!
//! ```
//! use idforge::{Generator, Scheme, text::{encode, Format}};
//! let g = Generator::new(&Scheme::Uuid7, None)?;
//! let id = g.next()?;
//! println!("{}", encode(id, 128, Format::Uuid));
//! # Ok::<(), idforge::Error>(())
//! ```
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! | --- | --- | --- |
//! | `host-wide` | on | state-file stamps shared by the processes of a host: [`HostStamp`], `Generator::host_wide`, `nanots::HostGenerator::host_wide` (needs `memmap2`) |
//! | `locality` | on | the Locality UUID scheme, `schemes::locality` (needs `md-5`) |
//! | `fast-clock` | on | `SystemClock::fast()`: the real-time clock read through the CPU's time-stamp counter, calibrated against `CLOCK_REALTIME` every 200 µs (needs `quanta`); without it every `SystemClock` reads `CLOCK_REALTIME` |
//! | `serde` | off | `Serialize`/`Deserialize` for the typed ids ([`ids`]) |
//! | `uuid` | off | conversions between [`UuidId`] (and `LocalityUuid`) and `uuid::Uuid` |
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

pub mod clock;
pub mod contention;
pub mod error;
mod family;
pub mod generator;
pub mod ids;
pub mod inspect;
pub mod layout;
pub mod schemes;
pub mod sequencer;
pub mod shm;
pub mod text;
pub mod ticker;
pub mod time;

pub use clock::{Clock, ManualClock, SystemClock, WallClock};
pub use error::{Error, StateFileError};
pub use generator::{Batch, Blocks, Generator, GeneratorBuilder, RandomSource, SchemeSpec};
pub use ids::{Id128, Id64, IdFamily, NanoTs, TypedId, UuidId};
pub use inspect::{inspect, Decoded};
pub use layout::{Field, Layout, LayoutBuilder, Parts, Segment, Signed64};
pub use schemes::catalog::Kind;
pub use schemes::uuid7::uuid7;
pub use schemes::Scheme;
pub use sequencer::{
    OnClockBehind, OnExhausted, Policy, Sequencer, StampCell, StampRange, Timebase,
};
#[cfg(feature = "host-wide")]
pub use shm::HostStamp;
pub use shm::{default_state_dir, default_state_path, ProcessStamp, SharedWords, StateOptions};

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
