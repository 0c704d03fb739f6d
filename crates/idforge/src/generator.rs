//! The generator: a [`Sequencer`] plus a [`Layout`], a node id and random bits. Every scheme
//! generates through this one type.

use std::cell::RefCell;
use std::sync::atomic::AtomicU64;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::clock::{Clock, WallClock};
use crate::error::Error;
use crate::layout::Layout;
use crate::schemes::Scheme;
use crate::sequencer::{Policy, Sequencer, StampCell, StampRange};

thread_local! {
    // A fast per-thread generator (xoshiro) seeded from the OS: random id bits need
    // unpredictability between processes and restarts, not cryptographic strength.
    static RNG: RefCell<SmallRng> = RefCell::new(SmallRng::from_rng(&mut rand::rng()));
}

/// Random bits for an id, drawn from the calling thread's generator.
#[inline]
pub(crate) fn random_u128() -> u128 {
    RNG.with(|r| {
        let mut r = r.borrow_mut();
        ((r.next_u64() as u128) << 64) | r.next_u64() as u128
    })
}

#[inline]
fn random_u64() -> u64 {
    RNG.with(|r| r.borrow_mut().next_u64())
}

/// Generates ids of one scheme for one node. Share it between threads (`&Generator` or `Arc`):
/// all state is in the sequencer's atomic stamp.
///
/// ```
/// use idforge::{Generator, Scheme};
/// let snowflake = Generator::new(&Scheme::Snowflake, Some(7)).unwrap();
/// let a = snowflake.next().unwrap();
/// let b = snowflake.next().unwrap();
/// assert!(b > a);
/// assert_eq!(snowflake.layout().decode(a).node, 7);
/// ```
pub struct Generator<C: Clock = WallClock, S: StampCell = AtomicU64> {
    seq: Sequencer<C, S>,
    scheme: Scheme,
    layout: Layout,
    /// Fixed bits and node bits, the same in every id.
    base: u128,
    /// `Some(shift)` when time sits directly above the counter in single runs: then the id's
    /// time and counter bits are the stamp shifted, one instruction.
    stamp_shift: Option<u32>,
    counter_mask: u64,
    random_bits: u32,
    random_is_low: bool,
}

impl<C: Clock + std::fmt::Debug, S: StampCell> std::fmt::Debug for Generator<C, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("scheme", &self.scheme.name())
            .field("sequencer", &self.seq)
            .finish()
    }
}

impl Generator<WallClock, AtomicU64> {
    /// A generator on the wall clock with the scheme's default policy.
    pub fn new(scheme: &Scheme, node: Option<u64>) -> Result<Self, Error> {
        Self::with_clock(scheme, node, WallClock, scheme.default_policy())
    }
}

impl<C: Clock> Generator<C, AtomicU64> {
    /// A generator on a given clock (a [`ManualClock`](crate::ManualClock) for tests and
    /// backfills) with a given policy.
    pub fn with_clock(scheme: &Scheme, node: Option<u64>, clock: C, policy: Policy) -> Result<Self, Error> {
        let layout = scheme.layout();
        let seq = Sequencer::new(clock, layout.timebase(), policy)?;
        Self::with_sequencer(scheme, node, seq)
    }
}

impl<C: Clock, S: StampCell> Generator<C, S> {
    /// A generator over an existing sequencer (for instance one whose stamp is in shared memory).
    /// The sequencer's time base must be the scheme layout's.
    pub fn with_sequencer(scheme: &Scheme, node: Option<u64>, seq: Sequencer<C, S>) -> Result<Self, Error> {
        let layout = scheme.layout();
        if *seq.timebase() != layout.timebase() {
            return Err(Error::InvalidLayout(format!(
                "the sequencer's time base {:?} is not the layout's {:?}",
                seq.timebase(),
                layout.timebase()
            )));
        }
        let node = scheme.resolve_node(node)?;
        Self::build(scheme, node, seq)
    }

    /// Builds without the public checks on the node (the uProtocol v8 singleton uses this).
    pub(crate) fn build(scheme: &Scheme, node: u64, seq: Sequencer<C, S>) -> Result<Self, Error> {
        let layout = scheme.layout();
        layout.check_epoch(seq.clock().now_ns())?;
        let base = layout.fixed_value | layout.node.deposit(node as u128);
        let stamp_shift = (layout.time.lo.width == 0
            && layout.counter.lo.width == 0
            && layout.time.hi.shift == layout.counter.hi.shift + layout.counter.hi.width)
            .then_some(layout.counter.hi.shift);
        let random_bits = layout.random.width();
        let random_is_low = layout.random.lo.width == 0 && layout.random.hi.shift == 0;
        Ok(Generator {
            counter_mask: (1u64 << layout.counter.width()) - 1,
            seq,
            scheme: scheme.clone(),
            base,
            stamp_shift,
            random_bits,
            random_is_low,
            layout,
        })
    }

    /// The next id (64-bit ids in the low bits).
    #[inline]
    pub fn next(&self) -> Result<u128, Error> {
        let stamp = self.seq.next().map_err(|e| self.name_error(e))?;
        Ok(self.encode(stamp))
    }

    /// The next id of a 64-bit scheme.
    #[inline]
    pub fn next_u64(&self) -> Result<u64, Error> {
        self.next().map(|id| id as u64)
    }

    /// `n` ids taken in one atomic step: consecutive stamps, increasing ids.
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Uuid7, None).unwrap();
    /// let ids: Vec<u128> = g.reserve(64).unwrap().collect();
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// ```
    pub fn reserve(&self, n: u64) -> Result<Batch<'_, C, S>, Error> {
        let stamps = self.seq.reserve(n).map_err(|e| self.name_error(e))?;
        Ok(Batch { gen: self, stamps })
    }

    /// Encodes a stamp issued by this generator's sequencer into an id.
    #[inline]
    pub fn encode(&self, stamp: u64) -> u128 {
        let tc = match self.stamp_shift {
            Some(shift) => (stamp as u128) << shift,
            None => {
                let cb = self.layout.counter.width();
                self.layout.time.deposit((stamp >> cb) as u128)
                    | self.layout.counter.deposit((stamp & self.counter_mask) as u128)
            }
        };
        let random = match self.random_bits {
            0 => 0,
            b if b <= 64 && self.random_is_low => (random_u64() >> (64 - b)) as u128,
            _ => self.layout.random.deposit(random_u128() & self.layout.random.max()),
        };
        self.base | tc | random
    }

    /// The scheme.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The sequencer (for [`Sequencer::lead`] and the clock).
    pub fn sequencer(&self) -> &Sequencer<C, S> {
        &self.seq
    }

    #[cold]
    fn name_error(&self, e: Error) -> Error {
        match e {
            Error::TimeOutOfRange { time, year, .. } => Error::TimeOutOfRange {
                scheme: self.scheme.name().to_string(),
                time,
                year,
            },
            e => e,
        }
    }
}

/// Ids reserved by [`Generator::reserve`]; encoding happens as the batch is iterated.
pub struct Batch<'a, C: Clock, S: StampCell> {
    gen: &'a Generator<C, S>,
    stamps: StampRange,
}

impl<C: Clock, S: StampCell> Iterator for Batch<'_, C, S> {
    type Item = u128;
    #[inline]
    fn next(&mut self) -> Option<u128> {
        self.stamps.next().map(|s| self.gen.encode(s))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.stamps.size_hint()
    }
}

impl<C: Clock, S: StampCell> ExactSizeIterator for Batch<'_, C, S> {}
