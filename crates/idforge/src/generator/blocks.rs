//! Per-thread block mode: a thread takes a block of stamps with one compare-and-swap and issues
//! ids from it without touching the shared stamp again, so threads stop competing for one cache
//! line.
//!
//! What it keeps and what it gives up:
//!
//! * **Unique**: a block's stamps were reserved from the generator's sequencer (in-process,
//!   host-wide or leased), so no other block, batch or `next()` call of any thread or process
//!   sharing that sequencer holds them. After a `fork()` the child drops the block it inherited
//!   (its parent keeps issuing from it) and reserves a new one.
//! * **Ordered per thread**: each `Blocks` issues strictly increasing ids. Ids of *different*
//!   threads within one tick are not in issue order (a shared [`Generator::next`] is).
//! * **On time**: every id reads the clock, and a block is dropped as soon as the clock has left
//!   the tick of the block's first stamp, so an id's time is never behind the clock by more than
//!   the clock's own error; nor is it further ahead than the policy's `max_lead` (a clock that
//!   steps back further drops the block, and the next reservation applies the policy). The
//!   stamps of a dropped block are never issued (capacity, not uniqueness, is what is lost).

use std::marker::PhantomData;

use crate::clock::Clock;
use crate::error::Error;
use crate::generator::{BatchRng, Generator};
use crate::sequencer::StampCell;

/// Issues ids from per-thread blocks of stamps; made by [`Generator::blocks`]. One per thread:
/// it is `Send` but not `Sync`.
///
/// ```
/// use idforge::{Generator, Scheme};
/// let g = Generator::new(&Scheme::Uuid7, None)?;
/// std::thread::scope(|s| {
///     for _ in 0..2 {
///         s.spawn(|| {
///             let mut ids = g.blocks(64);
///             let (a, b) = (ids.next().unwrap(), ids.next().unwrap());
///             assert!(b > a); // ordered within the thread
///         });
///     }
/// });
/// # Ok::<(), idforge::Error>(())
/// ```
pub struct Blocks<'a, C: Clock, S: StampCell> {
    generator: &'a Generator<C, S>,
    size: u64,
    /// The next stamp to issue, and the end (exclusive) of the block.
    next: u64,
    end: u64,
    /// The block is used while the clock reads `valid_from_ns..valid_from_ns + valid_span_ns`:
    /// from `max_lead` before the tick of its last stamp to the end of its first stamp's tick.
    valid_from_ns: u64,
    valid_span_ns: u64,
    fork_generation: u64,
    rng: Option<BatchRng>,
    /// Not `Sync`: one thread issues from a block.
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl<C: Clock, S: StampCell> Generator<C, S> {
    /// Per-thread block mode: an issuer that reserves `block` stamps at a time (capped at one
    /// tick's counter capacity, at least 1) and issues ids from them. See [`Blocks`] for what it
    /// guarantees; make one per thread.
    ///
    /// A block is dropped when the clock leaves its tick, so a block larger than the ids a thread
    /// issues in one tick wastes counter capacity: layouts with a small counter (GlobalId's 128
    /// per millisecond) want small blocks, or the shared [`Generator::next`].
    pub fn blocks(&self, block: u64) -> Blocks<'_, C, S> {
        let cap = 1u64 << self.counter_bits;
        Blocks {
            generator: self,
            size: block.clamp(1, cap),
            next: 0,
            end: 0,
            valid_from_ns: 0,
            valid_span_ns: 0,
            fork_generation: crate::shm::fork_generation(),
            rng: self.batch_rng(),
            _not_sync: PhantomData,
        }
    }
}

impl<C: Clock, S: StampCell> Blocks<'_, C, S> {
    /// The next id.
    ///
    /// # Errors
    /// As [`Generator::next`] when a new block is needed (the block is reserved through the same
    /// sequencer); nothing is issued on an error.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)] // named as `Generator::next`; a `Result` per call
    pub fn next(&mut self) -> Result<u128, Error> {
        let now = self.generator.seq.clock().now_ns();
        if self.next == self.end
            || now.wrapping_sub(self.valid_from_ns) >= self.valid_span_ns
            || crate::shm::fork_generation() != self.fork_generation
        {
            return self.refill_and_issue();
        }
        Ok(self.issue())
    }

    /// The next id of the block.
    #[inline(always)]
    fn issue(&mut self) -> u128 {
        let stamp = self.next;
        // Wrapping, as `end`: a block may end at stamp u64::MAX.
        self.next = self.next.wrapping_add(1);
        let random = match self.rng.as_mut() {
            Some(r) => self.generator.batch_random(r),
            None => 0,
        };
        self.generator.encode_with(stamp, random)
    }

    /// `next` when the block is used up, stale or inherited: a call, so that `next` inlines
    /// into the caller's loop with no stack frame (on 2 cores that took a ticker Snowflake's
    /// block mode from 10 to 6 ns per id in a standalone loop).
    #[inline(never)]
    fn refill_and_issue(&mut self) -> Result<u128, Error> {
        self.refill()?;
        Ok(self.issue())
    }

    /// The block size.
    pub fn block_size(&self) -> u64 {
        self.size
    }

    #[cold]
    fn refill(&mut self) -> Result<(), Error> {
        let generation = crate::shm::fork_generation();
        if generation != self.fork_generation {
            // A forked child: the parent owns the inherited block and the random sequence.
            self.fork_generation = generation;
            self.next = self.end;
            self.rng = self.generator.batch_rng();
        }
        let range = self
            .generator
            .seq
            .reserve(self.size)
            .map_err(|e| self.generator.name_error(e))?;
        self.next = range.start;
        self.end = range.start.wrapping_add(range.len); // 0 for a block ending at u64::MAX
        let seq = &self.generator.seq;
        let tick_start = |stamp: u64| seq.stamp_unix_ns(stamp);
        // Used until the clock leaves the first stamp's tick, and only while the clock is at
        // most `max_lead` behind the *last* stamp's tick (a block that runs into the next tick
        // must not lead by more than the policy allows).
        let lead = seq.policy().max_lead.as_nanos();
        let from = tick_start(range.start + (range.len - 1)).saturating_sub(lead);
        let tick_ns = u128::from(seq.timebase().tick_ns);
        let until = (tick_start(range.start) + tick_ns).min(u64::MAX as u128);
        self.valid_from_ns = u64::try_from(from).unwrap_or(u64::MAX);
        self.valid_span_ns = u64::try_from(until.saturating_sub(from)).unwrap_or(u64::MAX);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::schemes::Scheme;
    use crate::sequencer::Policy;
    use std::collections::HashSet;

    const T0: u64 = 1_700_000_000_000_000_000;

    #[test]
    fn threads_with_blocks_and_shared_calls_never_repeat_and_each_thread_is_ordered() {
        let g = Generator::new(&Scheme::Snowflake, Some(3)).unwrap();
        let all: Vec<Vec<u128>> = std::thread::scope(|s| {
            let mut hs: Vec<_> = (0..3)
                .map(|i| {
                    let g = &g;
                    s.spawn(move || {
                        let mut b = g.blocks(1 + i * 40);
                        (0..20_000).map(|_| b.next().unwrap()).collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.push(s.spawn(|| (0..20_000).map(|_| g.next().unwrap()).collect()));
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ids in &all {
            assert!(
                ids.windows(2).all(|w| w[1] > w[0]),
                "a thread's ids go down"
            );
        }
        let n: usize = all.iter().map(Vec::len).sum();
        let distinct = all.iter().flatten().collect::<HashSet<_>>().len();
        assert_eq!(distinct, n, "{} ids repeated", n - distinct);
    }

    #[test]
    fn a_block_is_dropped_when_the_clock_leaves_its_tick() {
        let clock = ManualClock::new(T0);
        let g = Generator::with_clock(&Scheme::Snowflake, Some(1), clock.clone(), Policy::DEFAULT)
            .unwrap();
        let tick_of = |id: u128| g.layout().decode(id).ticks;
        let mut b = g.blocks(64);
        let first = b.next().unwrap();
        assert_eq!(b.next().unwrap(), first + 1, "from the block");
        // Another thread's shared call comes after the block.
        let shared = g.next().unwrap();
        assert!(shared > first + 63);
        clock.advance(1_000_000);
        let later = b.next().unwrap();
        assert_eq!(
            tick_of(later),
            tick_of(first) + 1,
            "the stale block was dropped"
        );
        assert!(later > shared);
    }

    #[test]
    fn blocks_are_capped_at_a_ticks_capacity_and_errors_pass_through() {
        let clock = ManualClock::new(T0);
        let g = Generator::with_clock(&Scheme::GlobalId, Some(1), clock.clone(), Policy::DEFAULT)
            .unwrap();
        assert_eq!(g.blocks(1_000_000).block_size(), 128);
        assert_eq!(g.blocks(0).block_size(), 1);
        let mut b = g.blocks(8);
        let first = b.next().unwrap();
        // Within max_lead (1 s) the block goes on.
        clock.step_back(500_000_000);
        assert_eq!(b.next().unwrap(), first + 1);
        // Further back the block is not used, and the policy refuses a new one: nothing is
        // issued.
        clock.step_back(10_000_000_000);
        assert!(matches!(b.next(), Err(Error::ClockBehind { .. })));
        // The block was never given up: with the clock back, it goes on where it stopped.
        clock.advance(10_500_000_000);
        assert_eq!(b.next().unwrap(), first + 2);
    }
}
