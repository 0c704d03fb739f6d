//! `global-id` and `global-id-128`: the Elixir GlobalId (seed `004`).
//!
//! ```text
//!  64-bit:  node(10) | time(47) | counter(7)     1024 nodes, 128 ids per ms per node
//! 128-bit:  0(20) | node(20) | time(71) | counter(17)    a million nodes, 131,072 ids per ms per node
//! ```
//!
//! The article's 128-bit split adds up to 108 bits. As the Elixir bitstring
//! `<<node::20, time::71, counter::17>>` read as an integer, it sits in the low 108 bits of the
//! `u128`; the top 20 bits are zero.
//!
//! The node is in the high bits, as in the article. Changed from the article, and why:
//! * **time in milliseconds since the Unix epoch.** The article's code used microseconds, which
//!   overflow a 47-bit field every 4.5 years; 47 bits of milliseconds last until the year 6429.
//! * **the counter resets every tick.** The article's counter never resets, so it wraps every 128
//!   ids and repeats an id whenever 129 requests share a microsecond. Here the counter is the
//!   low part of the sequencer stamp: at 128 ids in one millisecond the generator waits for the
//!   next (or runs ahead, by policy), and the clock stepping back never repeats an id.
//! * **the 128-bit variant's time.** The sequencer's stamp is one `u64` (so that one CAS covers it,
//!   in memory or in a shared file); with a 17-bit counter it holds 47 bits of milliseconds. The
//!   71-bit field is written in full, but the layout runs out in 6429, not in a trillion years.
//!
//! **Signed 64-bit integers.** The node is in the top 10 bits, so nodes 512 to 1023 set bit 63:
//! such ids do not fit PostgreSQL `bigint`, Java `long` or MySQL's signed `BIGINT` (store them
//! unsigned or as text, or use nodes below 512; `idforge gen` warns,
//! [`Layout::signed64`](crate::Layout::signed64) says it for every layout).
//!
//! Node ids come from the caller: `--node`, `IDFORGE_NODE`, or the library call. A GlobalId
//! generator without a node id is an error, never a random node.
//!
//! ```
//! use idforge::{Generator, Scheme};
//! let g = Generator::new(&Scheme::GlobalId, Some(18)).unwrap();
//! let id = g.next_u64().unwrap();
//! assert_eq!(id >> 54, 18);
//! ```

use crate::layout::{Field, Layout};

/// The 64-bit GlobalId layout: `node(10) | time(47) | counter(7)`.
///
/// ```
/// let l = idforge::schemes::global_id::layout_64();
/// assert_eq!(l.diagram(), "node(10) | time(47) | counter(7)");
/// assert_eq!(l.ids_per_tick(), 128);
/// ```
pub fn layout_64() -> Layout {
    Layout::builder("global-id", 64)
        .node(Field::at(54, 10))
        .time(Field::at(7, 47))
        .counter(Field::at(0, 7))
        .build()
        .unwrap_or_else(|e| unreachable!("the global-id preset is valid: {e}"))
}

/// The 128-bit GlobalId layout: `node(20) | time(71) | counter(17)`.
///
/// ```
/// let l = idforge::schemes::global_id::layout_128();
/// assert_eq!(l.diagram(), "0(20) | node(20) | time(71) | counter(17)"); // 108 of 128 bits
/// assert_eq!(l.node_count(), 1 << 20); // a million nodes
/// ```
pub fn layout_128() -> Layout {
    Layout::builder("global-id-128", 128)
        .node(Field::at(88, 20))
        .time(Field::at(17, 71))
        .counter(Field::at(0, 17))
        .build()
        .unwrap_or_else(|e| unreachable!("the global-id-128 preset is valid: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(layout_64().end_year(), 6429);
        assert_eq!(layout_128().end_year(), 6429);
        assert_eq!(layout_64().ids_per_tick(), 128);
        assert_eq!(layout_128().node_count(), 1 << 20);
    }
}
