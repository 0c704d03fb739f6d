//! The generator: a [`Sequencer`] plus a [`Layout`], a node id and random bits. Every scheme
//! generates through this one type.

use std::cell::RefCell;

mod blocks;
pub use blocks::Blocks;

use rand::rngs::{SmallRng, StdRng};
use rand::{Rng, SeedableRng};

use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::ids::{Id128, Id64, IdFamily, NanoTs, TypedId, UuidId};
use crate::layout::Layout;
use crate::sequencer::{Policy, Sequencer, StampCell, StampRange};
use crate::shm::ProcessStamp;
#[cfg(feature = "host-wide")]
use crate::shm::{fingerprint, fresh_stamp, HostStamp, StateOptions};

/// Where the random bits of ids (`uuid7`'s and `uprotocol`'s) come from.
///
/// ```
/// use idforge::{Generator, RandomSource, Scheme};
/// let g = Generator::new(&Scheme::Uuid7, None)?;
/// assert_eq!(g.random_source(), RandomSource::Secure); // the default
/// let fast = Generator::new(&Scheme::Uuid7, None)?.with_random(RandomSource::Fast);
/// assert!(fast.next()? < fast.next()?); // order and uniqueness come from the stamp either way
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RandomSource {
    /// A cryptographically secure generator (ChaCha12, `rand`'s `StdRng`) per thread, seeded from
    /// the operating system and reseeded after `fork()`: random bits cannot be predicted from
    /// earlier ids (RFC 9562 §6.9). The default.
    #[default]
    Secure,
    /// A fast generator (xoshiro, `rand`'s `SmallRng`) per thread, seeded from the operating
    /// system and reseeded after `fork()`: unpredictable across processes and restarts, but
    /// someone who sees enough ids can predict the next ones' random bits. Uniqueness never
    /// depends on random bits either way.
    Fast,
}

thread_local! {
    // Per-thread generators seeded from the OS. The fork generation each was seeded in is kept
    // with it: a forked child must not reuse its parent's sequence of random bits.
    static SECURE: RefCell<(u64, StdRng)> = {
        let _ = crate::shm::watch_forks(); // checked by every generator's constructor
        RefCell::new((crate::shm::fork_generation(), os_seeded()))
    };
    static FAST: RefCell<(u64, SmallRng)> = {
        let _ = crate::shm::watch_forks(); // checked by every generator's constructor
        RefCell::new((crate::shm::fork_generation(), os_seeded()))
    };
}

fn os_seeded<R: SeedableRng>() -> R {
    R::try_from_rng(&mut rand::rngs::SysRng).unwrap_or_else(|_| R::from_rng(&mut rand::rng()))
}

/// Runs `f` on one of the calling thread's generators, reseeding it first after a fork.
#[inline]
fn with_thread_rng<R: SeedableRng + 'static, T>(
    key: &'static std::thread::LocalKey<RefCell<(u64, R)>>,
    f: impl FnOnce(&mut R) -> T,
) -> T {
    key.with(|r| {
        let mut r = r.borrow_mut();
        let generation = crate::shm::fork_generation();
        if r.0 != generation {
            reseed(&mut r, generation);
        }
        f(&mut r.1)
    })
}

/// Reseeds a thread's generator in a forked child (out of line: the hot path is the check).
#[cold]
#[inline(never)]
fn reseed<R: SeedableRng>(r: &mut (u64, R), generation: u64) {
    *r = (generation, os_seeded());
}

/// Runs `f` on the calling thread's secure generator.
#[inline]
fn with_secure<T>(f: impl FnOnce(&mut StdRng) -> T) -> T {
    with_thread_rng(&SECURE, f)
}

/// Runs `f` on the calling thread's fast generator.
#[inline]
fn with_fast<T>(f: impl FnOnce(&mut SmallRng) -> T) -> T {
    with_thread_rng(&FAST, f)
}

/// 64 random bits from the calling thread's generator of `source`.
#[inline]
fn random_u64(source: RandomSource) -> u64 {
    match source {
        RandomSource::Secure => with_secure(|r| r.next_u64()),
        RandomSource::Fast => with_fast(|r| r.next_u64()),
    }
}

/// 128 random bits: both halves in one visit to the thread's generator (one thread-local
/// access, one borrow and one fork check, not two).
#[inline]
pub(crate) fn random_u128(source: RandomSource) -> u128 {
    #[inline]
    fn two<R: Rng>(r: &mut R) -> u128 {
        ((r.next_u64() as u128) << 64) | r.next_u64() as u128
    }
    match source {
        RandomSource::Secure => with_secure(two),
        RandomSource::Fast => with_fast(two),
    }
}

/// 32 random bits from the calling thread's generator of `source`.
#[inline]
pub(crate) fn random_u32(source: RandomSource) -> u32 {
    match source {
        RandomSource::Secure => with_secure(|r| r.next_u32()),
        RandomSource::Fast => with_fast(|r| r.next_u32()),
    }
}

/// A batch's own random generator, seeded once from the thread's.
enum BatchRng {
    Secure(Box<StdRng>),
    Fast(SmallRng),
}

impl BatchRng {
    fn new(source: RandomSource) -> BatchRng {
        match source {
            RandomSource::Secure => BatchRng::Secure(Box::new(with_secure(StdRng::from_rng))),
            RandomSource::Fast => BatchRng::Fast(with_fast(SmallRng::from_rng)),
        }
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        match self {
            BatchRng::Secure(r) => r.next_u64(),
            BatchRng::Fast(r) => r.next_u64(),
        }
    }
}

/// What a generator needs to know of a scheme: its name, layout, default policy and node rules.
/// [`crate::Scheme`] implements it; the generator (and everything below it) does not know the
/// schemes, so a new layout never touches the sequencer or the generator.
///
/// ```
/// use idforge::generator::SchemeSpec;
/// use idforge::{Error, Field, Generator, Layout, Policy};
/// // A scheme of one's own: 48 bits of milliseconds, a 16-bit counter, no node.
/// struct Tickets;
/// impl SchemeSpec for Tickets {
///     fn name(&self) -> &str { "tickets" }
///     fn layout(&self) -> Layout {
///         Layout::builder("tickets", 64).time(Field::at(16, 48)).counter(Field::at(0, 16)).build().unwrap()
///     }
///     fn default_policy(&self) -> Policy { Policy::DEFAULT }
///     fn resolve_node(&self, node: Option<u64>) -> Result<u64, Error> {
///         match node {
///             None => Ok(0),
///             Some(_) => Err(Error::NotApplicable { scheme: "tickets".into(), setting: "a node id".into(), why: "it has no node field".into() }),
///         }
///     }
/// }
/// let g = Generator::new(&Tickets, None)?;
/// assert!(g.next()? < g.next()?);
/// assert!(Generator::new(&Tickets, Some(1)).is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
pub trait SchemeSpec {
    /// The name, for messages and state files.
    ///
    /// ```
    /// use idforge::generator::SchemeSpec;
    /// assert_eq!(SchemeSpec::name(&idforge::Scheme::GlobalId), "global-id");
    /// ```
    fn name(&self) -> &str;
    /// The layout.
    ///
    /// ```
    /// use idforge::generator::SchemeSpec;
    /// assert_eq!(SchemeSpec::layout(&idforge::Scheme::Snowflake).bits, 64);
    /// ```
    fn layout(&self) -> Layout;
    /// The policy a generator uses unless told otherwise.
    ///
    /// ```
    /// use idforge::generator::SchemeSpec;
    /// assert_eq!(SchemeSpec::default_policy(&idforge::Scheme::Snowflake), idforge::Policy::DEFAULT);
    /// ```
    fn default_policy(&self) -> Policy;
    /// Checks a caller's node id (required, refused, or in range) and returns the node to write.
    ///
    /// # Errors
    /// When the node is missing, out of range, or not allowed.
    ///
    /// ```
    /// use idforge::generator::SchemeSpec;
    /// use idforge::{Error, Scheme};
    /// assert_eq!(Scheme::Snowflake.resolve_node(Some(7))?, 7);
    /// assert!(matches!(Scheme::Snowflake.resolve_node(None), Err(Error::NodeRequired { .. })));
    /// assert!(matches!(Scheme::Snowflake.resolve_node(Some(1024)), Err(Error::NodeOutOfRange { .. })));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    fn resolve_node(&self, node: Option<u64>) -> Result<u64, Error>;
    /// The node a host-wide state file is bound to (default: the node).
    ///
    /// ```
    /// use idforge::generator::SchemeSpec;
    /// assert_eq!(idforge::Scheme::Snowflake.state_node(7), 7); // one state file per node
    /// ```
    fn state_node(&self, node: u64) -> u64 {
        node
    }
    /// The family of the scheme's ids (default: by the layout's width).
    ///
    /// ```
    /// use idforge::generator::SchemeSpec;
    /// use idforge::{IdFamily, Scheme};
    /// assert_eq!(SchemeSpec::family(&Scheme::Snowflake), IdFamily::Id64);
    /// assert_eq!(SchemeSpec::family(&Scheme::Uuid7), IdFamily::Uuid);
    /// ```
    fn family(&self) -> IdFamily {
        if self.layout().bits <= 64 {
            IdFamily::Id64
        } else {
            IdFamily::Id128
        }
    }
}

#[cfg(feature = "host-wide")]
/// A sequencer whose stamp is in a state file: the one place that binds a file to a scheme
/// (`name`, `layout_spec`, time base, `node`, durable mode and policy: the fingerprint), starts a
/// new file above every id a deleted predecessor could still issue ([`fresh_stamp`], after the
/// creator waited [`FRESH_MARGIN`](crate::shm::FRESH_MARGIN) under the directory's lock) and,
/// after opening, waits (at most about a second and a half) while the stamp is further ahead of
/// the clock than the policy lets a process issue (a new file started ahead of the clock, a
/// durable recovery raised it).
pub(crate) fn host_wide_sequencer<C: Clock>(
    name: &str,
    layout_spec: &str,
    tb: crate::sequencer::Timebase,
    node: u64,
    clock: C,
    policy: Policy,
    state: &StateOptions,
) -> Result<Sequencer<C, HostStamp>, Error> {
    use std::time::Duration;
    let fp = fingerprint(name, layout_spec, &tb, node, state.durable, &policy);
    // Processes on a deleted file at the path may have issued up to this far ahead of their
    // readings, which may be up to the cheapest system clock's error ahead of the real time.
    let lead = crate::shm::fresh_lead(&policy, state.durable);
    let error = clock
        .max_error_ns()
        .max(crate::clock::SystemClock::MAX_ERROR.as_nanos() as u64);
    let lead_ns = u64::try_from(lead.as_nanos())
        .unwrap_or(u64::MAX)
        .saturating_add(error);
    // The first stamp of a new file comes from the precise reading: a cheap one may lag (a
    // ticker whose thread was not scheduled while the creator waited) and start the new file
    // below ids the processes on the deleted one issued.
    let first = || fresh_stamp(&tb, clock.now_precise_ns(), lead_ns);
    let cell = HostStamp::open_fresh(state, &fp, &tb, crate::shm::FRESH_MARGIN, &first)?;
    let seq = Sequencer::with_cell(clock, cell, tb, policy)?;
    let allowed = crate::shm::policy_lead(&policy);
    let start = std::time::Instant::now();
    // At most about a second and a half: past it the stamp leads by no more than `max_lead`
    // (plus the clock's error), which the sequencer issues from, so a long durable `max_lead`
    // costs ids stamped ahead of the clock rather than a wait of that length.
    let limit = Duration::from_millis(1_500) + allowed;
    while seq.lead() > allowed && start.elapsed() < limit {
        let before = seq.clock().now_ns();
        std::thread::sleep((seq.lead() - allowed).min(Duration::from_millis(10)));
        if seq.clock().now_ns() == before {
            break; // a fixed clock (`--at`) never catches up
        }
    }
    Ok(seq)
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
pub struct Generator<C: Clock = SystemClock, S: StampCell = ProcessStamp> {
    seq: Sequencer<C, S>,
    name: String,
    layout: Layout,
    /// Fixed bits and node bits, the same in every id.
    base: u128,
    encoder: Encoder,
    random: RandomBits,
    source: RandomSource,
    counter_bits: u32,
    counter_mask: u64,
    /// The family of the scheme's ids, checked by the typed `next_*` methods.
    family: IdFamily,
}

/// Where a segment of a field lands: which 64-bit half of the id (as a mask: all ones for the
/// high half, so placing is branch-free ALU work), and the shift within it.
#[derive(Debug, Clone, Copy, Default)]
struct Place {
    high: u64,
    shift: u32,
}

impl Place {
    /// Adds `v << shift` to the half it belongs to.
    #[inline(always)]
    fn put(self, v: u64, hi: &mut u64, lo: &mut u64) {
        let x = v << self.shift;
        *hi |= x & self.high;
        *lo |= x & !self.high;
    }
}

/// How a stamp becomes the time and counter bits of an id, chosen once per generator so the hot
/// path is a few shifts on `u64`s.
#[derive(Debug, Clone, Copy)]
enum Encoder {
    /// Time sits directly above the counter, each one run: the stamp, shifted.
    Adjacent { shift: u32 },
    /// A 64-bit id with time and counter each in one run, not adjacent (Snowflake, with the node
    /// between time and sequence): two shifts on a `u64`.
    Pair64 { time_shift: u32, counter_shift: u32 },
    /// Time in one run, the counter in one or two runs, no run crossing bit 64 (UUID layouts).
    Halves {
        time: Place,
        counter_hi: Place,
        counter_lo: Place,
        lo_width: u32,
    },
    /// Anything else: the layout's own deposit.
    General,
}

/// How random bits are drawn.
#[derive(Debug, Clone, Copy)]
enum RandomBits {
    None,
    /// One `u64` shifted right into a run at bit 0 of at most 64 bits.
    Low64 {
        rshift: u32,
    },
    /// Anything else.
    General,
}

fn place(seg: crate::layout::Segment) -> Option<Place> {
    if seg.width == 0 {
        return Some(Place::default());
    }
    let high = if seg.shift >= 64 { u64::MAX } else { 0 };
    (seg.shift % 64 + seg.width <= 64).then_some(Place {
        high,
        shift: seg.shift % 64,
    })
}

/// Time and counter bits of a stamp for [`Encoder::Pair64`].
#[inline(always)]
fn pair64(
    stamp: u64,
    counter_bits: u32,
    counter_mask: u64,
    time_shift: u32,
    counter_shift: u32,
) -> u128 {
    (((stamp >> counter_bits) << time_shift) | ((stamp & counter_mask) << counter_shift)) as u128
}

/// Time and counter bits of a stamp for [`Encoder::Halves`].
#[inline(always)]
fn halves(
    stamp: u64,
    counter_bits: u32,
    counter_mask: u64,
    time: Place,
    counter_hi: Place,
    counter_lo: Place,
    lo_width: u32,
) -> u128 {
    let t = stamp >> counter_bits;
    let c = stamp & counter_mask;
    let (mut hi, mut lo) = (0u64, 0u64);
    time.put(t, &mut hi, &mut lo);
    counter_hi.put(c >> lo_width, &mut hi, &mut lo);
    counter_lo.put(c & ((1u64 << lo_width) - 1), &mut hi, &mut lo);
    ((hi as u128) << 64) | lo as u128
}

fn encoder_for(layout: &Layout) -> Encoder {
    let (t, c) = (layout.time, layout.counter);
    if t.lo.width == 0 && c.lo.width == 0 && t.hi.shift == c.hi.shift + c.hi.width {
        return Encoder::Adjacent { shift: c.hi.shift };
    }
    if t.lo.width != 0 {
        return Encoder::General;
    }
    if layout.bits == 64 && c.lo.width == 0 {
        return Encoder::Pair64 {
            time_shift: t.hi.shift,
            counter_shift: c.hi.shift,
        };
    }
    match (place(t.hi), place(c.hi), place(c.lo)) {
        (Some(time), Some(counter_hi), Some(counter_lo)) => Encoder::Halves {
            time,
            counter_hi,
            counter_lo,
            lo_width: c.lo.width,
        },
        _ => Encoder::General,
    }
}

impl<C: Clock + std::fmt::Debug, S: StampCell> std::fmt::Debug for Generator<C, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("scheme", &self.name)
            .field("sequencer", &self.seq)
            .finish()
    }
}

impl Generator<SystemClock, ProcessStamp> {
    /// A generator on the system clock ([`SystemClock::for_tick`] of the layout's tick: the
    /// calibrated counter for millisecond layouts) with the scheme's default policy.
    ///
    /// # Errors
    /// As [`with_clock`](Generator::with_clock): for a [`Scheme`](crate::Scheme),
    /// [`Error::NodeRequired`] when the scheme has a node field and `node` is `None`,
    /// [`Error::NodeOutOfRange`] when `node` does not fit it, [`Error::InvalidLayout`] when a node
    /// is given to a scheme without one, [`Error::SingletonTaken`] for `uprotocol-v8` (use
    /// `schemes::uprotocol_v8::generator()`), and [`Error::EpochInFuture`] when the layout's
    /// epoch is later than the wall clock.
    ///
    /// ```
    /// use idforge::{Error, Generator, Scheme};
    /// let g = Generator::new(&Scheme::Snowflake, Some(7))?;
    /// assert!(g.next()? > 0);
    /// assert!(matches!(
    ///     Generator::new(&Scheme::Snowflake, None),
    ///     Err(Error::NodeRequired { .. })
    /// ));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn new(scheme: &impl SchemeSpec, node: Option<u64>) -> Result<Self, Error> {
        Generator::builder(scheme).node_opt(node).build()
    }

    /// The one way to make a generator, every setting named: the scheme, then its node, clock,
    /// policy, random source, and a state file for a host-wide stamp. Unset settings take the
    /// scheme's defaults (the system clock for its tick, its default policy, the secure random
    /// source, a stamp in this process). [`Generator::new`], [`Generator::with_clock`] and
    /// [`Generator::host_wide`] are shorthands for it.
    ///
    /// ```
    /// use idforge::{Generator, ManualClock, Policy, RandomSource, Scheme};
    /// // The common path: a scheme and its node.
    /// let g = Generator::builder(&Scheme::Snowflake).node(7).build()?;
    /// assert_eq!(g.next_id64()?.decode(&Scheme::Snowflake)?.node, Some(7));
    /// // Every setting: a frozen clock for a backfill, a policy, the fast random source.
    /// let clock = ManualClock::new(1_700_000_000_000_000_000);
    /// let g = Generator::builder(&Scheme::Uuid7)
    ///     .clock(clock)
    ///     .policy(Policy::UNBOUNDED)
    ///     .random(RandomSource::Fast)
    ///     .build()?;
    /// assert_eq!(g.next_uuid()?.unix_ms(), Some(1_700_000_000_000));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn builder<Sp: SchemeSpec>(scheme: &Sp) -> GeneratorBuilder<'_, Sp, SystemClock> {
        GeneratorBuilder {
            clock: SystemClock::for_tick(scheme.layout().timebase().tick_ns),
            scheme,
            node: None,
            policy: None,
            random: RandomSource::default(),
        }
    }
}

/// The settings of a generator to make ([`Generator::builder`]).
#[must_use = "a builder makes nothing until `build`"]
#[derive(Debug, Clone)]
pub struct GeneratorBuilder<'a, Sp: SchemeSpec, C: Clock> {
    scheme: &'a Sp,
    node: Option<u64>,
    clock: C,
    policy: Option<Policy>,
    random: RandomSource,
}

impl<'a, Sp: SchemeSpec, C: Clock> GeneratorBuilder<'a, Sp, C> {
    /// The node id, for schemes with a node field (required there, refused elsewhere).
    ///
    /// ```
    /// use idforge::{Error, Generator, Scheme};
    /// assert!(matches!(Generator::builder(&Scheme::Snowflake).build(), Err(Error::NodeRequired { .. })));
    /// assert!(Generator::builder(&Scheme::Snowflake).node(1023).build().is_ok());
    /// ```
    pub fn node(self, node: u64) -> Self {
        self.node_opt(Some(node))
    }

    /// The node id, or none (as [`GeneratorBuilder::node`], for callers that hold an `Option`).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let from_config: Option<u64> = Some(12);
    /// let g = Generator::builder(&Scheme::Snowflake).node_opt(from_config).build()?;
    /// assert_eq!(g.next_id64()?.decode(&Scheme::Snowflake)?.node, Some(12));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn node_opt(mut self, node: Option<u64>) -> Self {
        self.node = node;
        self
    }

    /// The clock (default: the system clock for the scheme's tick, [`SystemClock::for_tick`]).
    ///
    /// ```
    /// use idforge::{Generator, ManualClock, Scheme};
    /// let g = Generator::builder(&Scheme::GlobalId).node(1).clock(ManualClock::new(1_700_000_000_000_000_000)).build()?;
    /// assert_eq!(g.next_id64()?.timestamp(&Scheme::GlobalId)?.as_second(), 1_700_000_000);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn clock<D: Clock>(self, clock: D) -> GeneratorBuilder<'a, Sp, D> {
        GeneratorBuilder {
            scheme: self.scheme,
            node: self.node,
            clock,
            policy: self.policy,
            random: self.random,
        }
    }

    /// What to do when a tick's counter runs out or the clock steps back (default: the
    /// scheme's [`SchemeSpec::default_policy`]).
    ///
    /// ```
    /// use idforge::{Generator, Policy, Scheme};
    /// let g = Generator::builder(&Scheme::Sonyflake).node(1).policy(Policy::UNBOUNDED).build()?;
    /// assert!(g.next()? > 0);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Where random bits come from (default: [`RandomSource::Secure`]).
    ///
    /// ```
    /// use idforge::{Generator, RandomSource, Scheme};
    /// let g = Generator::builder(&Scheme::Uuid7).random(RandomSource::Fast).build()?;
    /// assert_eq!(g.random_source(), RandomSource::Fast);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn random(mut self, source: RandomSource) -> Self {
        self.random = source;
        self
    }

    /// A generator whose stamp is in this process (in a page a forked child shares, so parent
    /// and child never issue the same id).
    ///
    /// # Errors
    /// As [`Generator::with_clock`].
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::builder(&Scheme::Ulid).build()?;
    /// let (a, b) = (g.next()?, g.next()?);
    /// assert!(b > a);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn build(self) -> Result<Generator<C, ProcessStamp>, Error> {
        let policy = self.policy.unwrap_or_else(|| self.scheme.default_policy());
        let layout = self.scheme.layout();
        let seq =
            Sequencer::with_cell(self.clock, ProcessStamp::new()?, layout.timebase(), policy)?;
        Ok(Generator::with_sequencer(self.scheme, self.node, seq)?.with_random(self.random))
    }

    /// A host-wide generator: its stamp is in the state file of `state`, shared by every process
    /// of the host that opens it (see [`Generator::host_wide`]).
    ///
    /// # Errors
    /// As [`Generator::host_wide`].
    ///
    /// ```
    /// use idforge::{Generator, Scheme, StateOptions};
    /// let dir = std::env::temp_dir().join(format!("idforge-doc-builder-{}", std::process::id()));
    /// let state = StateOptions::new(dir.join("snowflake.state"));
    /// let a = Generator::builder(&Scheme::Snowflake).node(3).build_host_wide(&state)?;
    /// let b = Generator::builder(&Scheme::Snowflake).node(3).build_host_wide(&state)?;
    /// let first = a.next()?;
    /// assert!(b.next()? > first); // one stamp for both
    /// # std::fs::remove_dir_all(dir).ok();
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[cfg(feature = "host-wide")]
    pub fn build_host_wide(self, state: &StateOptions) -> Result<Generator<C, HostStamp>, Error> {
        let policy = self.policy.unwrap_or_else(|| self.scheme.default_policy());
        let layout = self.scheme.layout();
        let node_value = self.scheme.resolve_node(self.node)?;
        let seq = host_wide_sequencer(
            self.scheme.name(),
            &layout.spec(),
            layout.timebase(),
            self.scheme.state_node(node_value),
            self.clock,
            policy,
            state,
        )?;
        Ok(Generator::build(self.scheme, node_value, seq)?.with_random(self.random))
    }
}

impl<C: Clock> Generator<C, ProcessStamp> {
    /// A generator on a given clock (a [`ManualClock`](crate::ManualClock) for tests and
    /// backfills) with a given policy. Its stamp is in-process, in a page a forked child shares,
    /// so parent and child never issue the same id.
    ///
    /// # Errors
    /// [`Error::StateFile`] ([`StateFileError::Io`](crate::StateFileError::Io)) when the shared
    /// page for the stamp cannot be mapped; [`Error::InvalidLayout`] when the layout's time base
    /// is unsound (a custom [`Layout`] not checked by [`Layout::validate`]); otherwise as
    /// [`with_sequencer`](Generator::with_sequencer): the node errors of the scheme's
    /// [`SchemeSpec::resolve_node`] and [`Error::EpochInFuture`] when the epoch is later than
    /// `clock`.
    ///
    /// ```
    /// use idforge::{Generator, ManualClock, Policy, Scheme};
    /// let clock = ManualClock::new(1_700_000_000_000_000_000); // frozen, in Unix ns
    /// let g = Generator::with_clock(&Scheme::GlobalId, Some(3), clock.clone(), Policy::DEFAULT)?;
    /// let a = g.next()?;
    /// clock.advance(1_000_000);
    /// assert!(g.next()? > a);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn with_clock(
        scheme: &impl SchemeSpec,
        node: Option<u64>,
        clock: C,
        policy: Policy,
    ) -> Result<Self, Error> {
        Generator::builder(scheme)
            .node_opt(node)
            .clock(clock)
            .policy(policy)
            .build()
    }
}

#[cfg(feature = "host-wide")]
impl<C: Clock> Generator<C, HostStamp> {
    /// A host-wide generator: its stamp is in the state file `state.path`, shared by every
    /// process of the host that opens the same file, so their ids are unique and ordered together
    /// and a restarted process continues after the last id issued. The file's fingerprint binds
    /// it to this scheme, layout and node.
    ///
    /// # Errors
    /// The node errors of [`SchemeSpec::resolve_node`] (see [`Generator::new`]);
    /// [`Error::StateFile`] when the state file cannot be used: every
    /// [`StateFileError`](crate::StateFileError) but `Lost` (`Io` when it cannot be created,
    /// opened, locked, mapped or synced; `Untrusted` when another user could write it or its
    /// directory; `Truncated`, `Foreign`, `Version`, `Corrupt` for a damaged or foreign file;
    /// `Mismatch` and `PolicyMismatch` when it belongs to another scheme, layout, node or
    /// policy); [`Error::EpochInFuture`] when the layout's epoch is later than `clock`.
    ///
    /// ```
    /// use idforge::{Generator, Scheme, StateOptions, WallClock};
    /// let dir = std::env::temp_dir().join(format!("idforge-doc-{}", std::process::id()));
    /// let state = StateOptions::new(dir.join("uuid7.state"));
    /// let a = Generator::host_wide(&Scheme::Uuid7, None, WallClock, Scheme::Uuid7.default_policy(), &state)?;
    /// let b = Generator::host_wide(&Scheme::Uuid7, None, WallClock, Scheme::Uuid7.default_policy(), &state)?;
    /// let first = a.next()?;
    /// assert!(b.next()? > first); // one stamp for both
    /// # std::fs::remove_dir_all(dir).ok();
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn host_wide(
        scheme: &impl SchemeSpec,
        node: Option<u64>,
        clock: C,
        policy: Policy,
        state: &StateOptions,
    ) -> Result<Self, Error> {
        Generator::builder(scheme)
            .node_opt(node)
            .clock(clock)
            .policy(policy)
            .build_host_wide(state)
    }
}

impl<C: Clock, S: StampCell> Generator<C, S> {
    /// A generator over an existing sequencer (for instance one whose stamp is in shared memory).
    /// The sequencer's time base must be the scheme layout's.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] when the sequencer's time base is not the layout's; the node
    /// errors of [`SchemeSpec::resolve_node`] (see [`Generator::new`]);
    /// [`Error::EpochInFuture`] when the layout's epoch is later than the sequencer's clock.
    ///
    /// ```
    /// use idforge::{Generator, ManualClock, Policy, Scheme, Sequencer};
    /// let tb = Scheme::Snowflake.layout().timebase();
    /// let seq = Sequencer::new(ManualClock::new(1_700_000_000_000_000_000), tb, Policy::DEFAULT)?;
    /// let g = Generator::with_sequencer(&Scheme::Snowflake, Some(1), seq)?;
    /// assert_eq!(g.layout().decode(g.next()?).node, 1);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn with_sequencer(
        scheme: &impl SchemeSpec,
        node: Option<u64>,
        seq: Sequencer<C, S>,
    ) -> Result<Self, Error> {
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
    pub(crate) fn build(
        scheme: &impl SchemeSpec,
        node: u64,
        seq: Sequencer<C, S>,
    ) -> Result<Self, Error> {
        // Batches and random generators notice a fork through the fork generation.
        if !crate::shm::watch_forks() {
            return Err(Error::InvalidLayout(
                "cannot register the fork handler (pthread_atfork failed: out of memory); a forked child could repeat a batch of its parent's ids, so no generator is made".into(),
            ));
        }
        let layout = scheme.layout();
        layout.check_epoch(seq.clock().now_ns())?;
        let base = layout.fixed_value | layout.node.deposit(node as u128);
        let r = layout.random;
        let random = if r.width() == 0 {
            RandomBits::None
        } else if r.lo.width == 0 && r.hi.shift == 0 && r.hi.width <= 64 {
            RandomBits::Low64 {
                rshift: 64 - r.hi.width,
            }
        } else {
            RandomBits::General
        };
        Ok(Generator {
            counter_bits: layout.counter.width(),
            counter_mask: (1u64 << layout.counter.width()) - 1,
            family: scheme.family(),
            encoder: encoder_for(&layout),
            seq,
            name: scheme.name().to_string(),
            base,
            random,
            source: RandomSource::default(),
            layout,
        })
    }

    /// The same generator with its stamp cell wrapped by `f` (for instance into
    /// [`AnyCell`](crate::schemes::open::AnyCell)); the stamp stays where it is.
    ///
    /// ```
    /// use idforge::schemes::open::AnyCell;
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Uuid7, None)?;
    /// let first = g.next()?;
    /// let g = g.map_cell(AnyCell::Process); // the same stamp, in the enum of cells
    /// assert!(g.next()? > first);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn map_cell<T: StampCell>(self, f: impl FnOnce(S) -> T) -> Generator<C, T> {
        Generator {
            seq: self.seq.map_cell(f),
            name: self.name,
            layout: self.layout,
            base: self.base,
            encoder: self.encoder,
            random: self.random,
            source: self.source,
            counter_bits: self.counter_bits,
            counter_mask: self.counter_mask,
            family: self.family,
        }
    }

    /// Where random bits come from: [`RandomSource::Secure`] (the default) or
    /// [`RandomSource::Fast`]. Schemes without random bits ignore it.
    ///
    /// ```
    /// use idforge::{Generator, RandomSource, Scheme};
    /// let g = Generator::new(&Scheme::Uuid7, None)?.with_random(RandomSource::Fast);
    /// assert_eq!(g.random_source(), RandomSource::Fast);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[must_use]
    pub fn with_random(mut self, source: RandomSource) -> Self {
        self.source = source;
        self
    }

    /// Where random bits come from.
    ///
    /// ```
    /// use idforge::{Generator, RandomSource, Scheme};
    /// assert_eq!(Generator::new(&Scheme::Ulid, None)?.random_source(), RandomSource::Secure);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn random_source(&self) -> RandomSource {
        self.source
    }

    /// The next id (64-bit ids in the low bits).
    ///
    /// # Errors
    /// As [`Sequencer::next`]: [`Error::BeforeEpoch`] when the clock reads a time before the
    /// layout's epoch; [`Error::TimeOutOfRange`] (naming the scheme) when the time, or the next
    /// stamp, no longer fits the layout's time field; [`Error::ClockBehind`] when the clock is
    /// further behind the last id than the policy's `max_lead` and the policy says
    /// `OnClockBehind::Fail`; and for a host-wide generator [`Error::StateFile`]:
    /// [`StateFileError::Lost`](crate::StateFileError::Lost) once the state file was truncated,
    /// deleted, replaced or rewound, `Io` when the durable ceiling cannot be synced. Nothing is
    /// issued on an error.
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Uuid7, None)?;
    /// let (a, b) = (g.next()?, g.next()?);
    /// assert!(b > a);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline(always)]
    pub fn next(&self) -> Result<u128, Error> {
        // The sequencer's fast path inline, everything else in a call: no stack frame on the
        // way of the common case (see `Sequencer::take_fast`).
        match self.seq.take_fast(1) {
            Ok(stamp) => Ok(self.encode(stamp)),
            Err(retry) => self.next_retry(retry),
        }
    }

    /// `next` past the sequencer's fast path.
    #[inline(never)]
    fn next_retry(&self, retry: crate::sequencer::Retry) -> Result<u128, Error> {
        let stamp = self
            .seq
            .take_retry(1, retry)
            .map_err(|e| self.name_error(e))?;
        Ok(self.encode(stamp))
    }

    /// The next id of a 64-bit scheme.
    ///
    /// # Errors
    /// [`Error::UnsupportedFormat`] when the scheme's ids are 128 bits wide (nothing is issued);
    /// otherwise as [`next`](Self::next).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Snowflake, Some(7))?;
    /// let id: u64 = g.next_u64()?;
    /// assert!(id > 0);
    /// assert!(Generator::new(&Scheme::Uuid7, None)?.next_u64().is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next_u64(&self) -> Result<u64, Error> {
        if self.layout.bits != 64 {
            return Err(Error::UnsupportedFormat {
                format: "u64".into(),
                scheme: self.name.clone(),
                reason: format!("its ids are {} bits wide; use next()", self.layout.bits),
            });
        }
        self.next().map(|id| id as u64)
    }

    /// The next id as a typed id `T` ([`UuidId`], [`Id64`], [`Id128`] or [`NanoTs`]), which must
    /// be the type of the scheme's [family](crate::Scheme::family).
    ///
    /// # Errors
    /// [`Error::WrongIdType`] when the scheme's ids are of another family (nothing is issued);
    /// otherwise as [`next`](Self::next).
    ///
    /// ```
    /// use idforge::{Generator, Id128, Scheme, UuidId};
    /// let g = Generator::new(&Scheme::GlobalId128, Some(3))?;
    /// let a = g.next_id::<Id128>()?;
    /// assert!(g.next_id::<Id128>()? > a);
    /// assert!(g.next_id::<UuidId>().is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next_id<T: TypedId>(&self) -> Result<T, Error> {
        if self.family != T::FAMILY {
            return Err(self.wrong_family(T::FAMILY));
        }
        self.next().map(T::from_generated)
    }

    /// The next id of a UUID scheme (`uuid7`, `uprotocol`, `uprotocol-v8`) as a [`UuidId`].
    ///
    /// # Errors
    /// [`Error::WrongIdType`] for a scheme whose ids are not UUIDs; otherwise as
    /// [`next`](Self::next).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::UProtocol, None)?;
    /// let id = g.next_uuid()?;
    /// assert_eq!(id.version(), 7);
    /// println!("{id}"); // 0190a0b1-7c3d-7e4f-8a6b-7c8d9e0f1a2b
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next_uuid(&self) -> Result<UuidId, Error> {
        self.next_id()
    }

    /// The next id of a 64-bit integer scheme (`global-id`, `snowflake`, `sonyflake`, 64-bit
    /// custom layouts) as an [`Id64`].
    ///
    /// # Errors
    /// [`Error::WrongIdType`] for a scheme of another family (`nanots` has
    /// [`next_nanots`](Self::next_nanots)); otherwise as [`next`](Self::next).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::GlobalId, Some(3))?;
    /// let id = g.next_id64()?;
    /// assert_eq!(g.layout().decode(id.as_u64().into()).node, 3);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next_id64(&self) -> Result<Id64, Error> {
        self.next_id()
    }

    /// The next id of a 128-bit integer scheme that is not a UUID (`global-id-128`, 128-bit
    /// custom layouts) as an [`Id128`].
    ///
    /// # Errors
    /// [`Error::WrongIdType`] for a scheme of another family; otherwise as [`next`](Self::next).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::GlobalId128, Some(3))?;
    /// let id = g.next_id128()?;
    /// assert_eq!(id.to_string(), id.as_u128().to_string());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next_id128(&self) -> Result<Id128, Error> {
        self.next_id()
    }

    /// The next `nanots` value as a [`NanoTs`].
    ///
    /// # Errors
    /// [`Error::WrongIdType`] for a scheme other than `nanots`; otherwise as
    /// [`next`](Self::next).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::NanoTs, Some(7))?;
    /// let ts = g.next_nanots()?;
    /// assert_eq!(ts.as_u64() & 31, 7); // the tag
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn next_nanots(&self) -> Result<NanoTs, Error> {
        self.next_id()
    }

    #[cold]
    fn wrong_family(&self, requested: IdFamily) -> Error {
        Error::WrongIdType {
            scheme: self.name.clone(),
            requested,
            found: self.family,
        }
    }

    /// `n` ids taken in one atomic step: consecutive stamps, increasing ids.
    ///
    /// # Errors
    /// [`Error::ReserveTooLarge`] when `n` is more than one tick's counter holds
    /// (`1 << counter_bits`); otherwise as [`next`](Self::next).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Uuid7, None)?;
    /// let ids: Vec<u128> = g.reserve(64)?.collect();
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn reserve(&self, n: u64) -> Result<Batch<'_, C, S>, Error> {
        let stamps = self.seq.reserve(n).map_err(|e| self.name_error(e))?;
        // A batch draws its random bits from its own generator, seeded once from the thread's:
        // no thread-local access per id.
        Ok(Batch {
            generator: self,
            stamps,
            rng: self.batch_rng(),
            buf: [0; BATCH_BUF],
            pos: 0,
            len: 0,
            fork_generation: crate::shm::fork_generation(),
        })
    }

    /// Fills `out` with fresh ids taken in one atomic step per tick's worth (one CAS for up to
    /// `ids_per_tick` ids): the fastest way to take many ids at once.
    ///
    /// # Errors
    /// As [`next`](Self::next). On an error, the ids of the chunks taken before it are in
    /// `out` (issued) and the rest of `out` is unchanged.
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::GlobalId, Some(3))?;
    /// let mut ids = [0u128; 64];
    /// g.fill(&mut ids)?;
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn fill(&self, out: &mut [u128]) -> Result<(), Error> {
        let cap = 1usize << self.counter_bits.min(usize::BITS - 1);
        let mut rng = self.batch_rng();
        for chunk in out.chunks_mut(cap) {
            let range = self
                .seq
                .reserve(chunk.len() as u64)
                .map_err(|e| self.name_error(e))?;
            self.encode_run(range.start, chunk, rng.as_mut());
        }
        Ok(())
    }

    fn batch_rng(&self) -> Option<BatchRng> {
        match self.random {
            RandomBits::None => None,
            _ => Some(BatchRng::new(self.source)),
        }
    }

    /// Encodes consecutive stamps from `first` into `out`; the encoder is chosen once per run.
    fn encode_run(&self, first: u64, out: &mut [u128], rng: Option<&mut BatchRng>) {
        match self.encoder {
            Encoder::Adjacent { shift } => self.run_with(first, out, rng, |s| (s as u128) << shift),
            Encoder::Halves {
                time,
                counter_hi,
                counter_lo,
                lo_width,
            } => {
                let (cb, cm) = (self.counter_bits, self.counter_mask);
                self.run_with(first, out, rng, move |s| {
                    halves(s, cb, cm, time, counter_hi, counter_lo, lo_width)
                })
            }
            Encoder::Pair64 {
                time_shift,
                counter_shift,
            } => {
                let (cb, cm) = (self.counter_bits, self.counter_mask);
                self.run_with(first, out, rng, move |s| {
                    pair64(s, cb, cm, time_shift, counter_shift)
                })
            }
            Encoder::General => self.run_with(first, out, rng, |s| self.time_counter(s)),
        }
    }

    #[inline(always)]
    fn run_with(
        &self,
        first: u64,
        out: &mut [u128],
        rng: Option<&mut BatchRng>,
        tc: impl Fn(u64) -> u128,
    ) {
        let mut stamp = first;
        match (self.random, rng) {
            (RandomBits::Low64 { rshift }, Some(rng)) => match rng {
                BatchRng::Secure(r) => self.low64_run(first, out, r, rshift, tc),
                BatchRng::Fast(r) => self.low64_run(first, out, r, rshift, tc),
            },
            (RandomBits::General, Some(rng)) => {
                for slot in out {
                    *slot = self.base | tc(stamp) | self.batch_random(rng);
                    stamp = stamp.wrapping_add(1); // past the last stamp (u64::MAX) after the last slot
                }
            }
            _ => {
                for slot in out {
                    *slot = self.base | tc(stamp);
                    stamp = stamp.wrapping_add(1);
                }
            }
        }
    }

    #[inline(always)]
    fn low64_run<R: Rng>(
        &self,
        first: u64,
        out: &mut [u128],
        rng: &mut R,
        rshift: u32,
        tc: impl Fn(u64) -> u128,
    ) {
        // Not `(first..).zip(out)`: a range from `first` overflows when the last stamp is u64::MAX.
        let mut stamp = first;
        for slot in out {
            *slot = self.base | tc(stamp) | (rng.next_u64() >> rshift) as u128;
            stamp = stamp.wrapping_add(1);
        }
    }

    /// Encodes a stamp issued by this generator's sequencer into an id, drawing random bits
    /// from the calling thread's generator.
    ///
    /// ```
    /// use idforge::{Generator, ManualClock, Scheme};
    /// let g = Generator::with_clock(&Scheme::Snowflake, Some(3), ManualClock::at_wall_time(), Scheme::Snowflake.default_policy())?;
    /// // Stamp = ticks << 12 | counter; the generator adds the node.
    /// assert_eq!(g.encode((100 << 12) | 5), (100 << 22) | (3 << 12) | 5);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn encode(&self, stamp: u64) -> u128 {
        self.encode_with(stamp, self.random_bits())
    }

    /// The random bits of one id, in place, from the calling thread's generator.
    #[inline(always)]
    fn random_bits(&self) -> u128 {
        match self.random {
            RandomBits::None => 0,
            _ => self.draw_random_bits(),
        }
    }

    /// `random_bits` for a scheme that has some: a call, so that `next` of the schemes without
    /// (Snowflake and family) keeps no stack frame.
    #[inline(never)]
    fn draw_random_bits(&self) -> u128 {
        match self.random {
            RandomBits::None => 0,
            RandomBits::Low64 { rshift } => (random_u64(self.source) >> rshift) as u128,
            RandomBits::General => self.general_random(random_u128(self.source)),
        }
    }

    /// Encodes a stamp with random bits already in place.
    #[inline(always)]
    fn encode_with(&self, stamp: u64, random: u128) -> u128 {
        self.base | self.time_counter(stamp) | random
    }

    /// The time and counter bits of a stamp.
    #[inline(always)]
    fn time_counter(&self, stamp: u64) -> u128 {
        match self.encoder {
            Encoder::Adjacent { shift } => (stamp as u128) << shift,
            Encoder::Pair64 {
                time_shift,
                counter_shift,
            } => pair64(
                stamp,
                self.counter_bits,
                self.counter_mask,
                time_shift,
                counter_shift,
            ),
            Encoder::Halves {
                time,
                counter_hi,
                counter_lo,
                lo_width,
            } => halves(
                stamp,
                self.counter_bits,
                self.counter_mask,
                time,
                counter_hi,
                counter_lo,
                lo_width,
            ),
            Encoder::General => {
                self.layout
                    .time
                    .deposit((stamp >> self.counter_bits) as u128)
                    | self
                        .layout
                        .counter
                        .deposit((stamp & self.counter_mask) as u128)
            }
        }
    }

    #[inline]
    fn general_random(&self, bits: u128) -> u128 {
        self.layout.random.deposit(bits & self.layout.random.max())
    }

    /// Random bits for one id from a batch's own generator.
    #[inline]
    fn batch_random(&self, rng: &mut BatchRng) -> u128 {
        match self.random {
            RandomBits::None => 0,
            RandomBits::Low64 { rshift } => (rng.next_u64() >> rshift) as u128,
            RandomBits::General => {
                self.general_random(((rng.next_u64() as u128) << 64) | rng.next_u64() as u128)
            }
        }
    }

    /// The scheme's name.
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// assert_eq!(Generator::new(&Scheme::Snowflake, Some(1))?.scheme_name(), "snowflake");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn scheme_name(&self) -> &str {
        &self.name
    }

    /// The layout.
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Snowflake, Some(1))?;
    /// assert_eq!(g.layout().decode(g.next()?).node, 1);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The sequencer (for [`Sequencer::lead`] and the clock).
    ///
    /// ```
    /// use idforge::{Generator, Scheme};
    /// let g = Generator::new(&Scheme::Snowflake, Some(1))?;
    /// let id = g.next()?;
    /// assert_eq!(g.sequencer().last_stamp(), g.layout().decode(id).ticks as u64 * 4096 + g.layout().decode(id).counter as u64);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn sequencer(&self) -> &Sequencer<C, S> {
        &self.seq
    }

    #[cold]
    fn name_error(&self, e: Error) -> Error {
        match e {
            Error::TimeOutOfRange { time, year, .. } => Error::TimeOutOfRange {
                scheme: self.name.clone(),
                time,
                year,
            },
            e => e,
        }
    }
}

/// Ids reserved by [`Generator::reserve`]; encoding happens as the batch is iterated.
///
/// ```
/// use idforge::{Generator, Scheme};
/// let g = Generator::new(&Scheme::Uuid7, None)?;
/// let batch = g.reserve(100)?; // one compare-and-swap for all 100
/// assert_eq!(batch.len(), 100);
/// let ids: Vec<u128> = batch.collect();
/// assert!(ids.windows(2).all(|w| w[0] < w[1]));
/// # Ok::<(), idforge::Error>(())
/// ```
pub struct Batch<'a, C: Clock, S: StampCell> {
    generator: &'a Generator<C, S>,
    /// Stamps not yet encoded.
    stamps: StampRange,
    rng: Option<BatchRng>,
    /// Ids encoded ahead, `buf[pos..len]`, so encoding runs in tight loops of up to 64.
    buf: [u128; BATCH_BUF],
    pos: usize,
    len: usize,
    /// The fork generation the stamps were reserved in.
    fork_generation: u64,
}

const BATCH_BUF: usize = 64;

impl<C: Clock, S: StampCell> Batch<'_, C, S> {
    /// After a `fork()`, parent and child each hold a copy of this batch: the child must not issue
    /// the parent's stamps (nor the ids already encoded from them). It drops them and reserves as
    /// many fresh stamps from the (fork-shared) sequencer, with new random bits; if that fails the
    /// batch ends early.
    #[cold]
    fn renew_after_fork(&mut self, generation: u64) {
        self.fork_generation = generation;
        let remaining = self.stamps.len + (self.len - self.pos) as u64;
        self.pos = 0;
        self.len = 0;
        self.rng = self.generator.batch_rng();
        self.stamps = match self.generator.seq.reserve(remaining) {
            Ok(r) => r,
            Err(_) => StampRange { start: 0, len: 0 },
        };
    }
}

impl<C: Clock, S: StampCell> Iterator for Batch<'_, C, S> {
    type Item = u128;
    #[inline]
    fn next(&mut self) -> Option<u128> {
        let generation = crate::shm::fork_generation();
        if generation != self.fork_generation {
            self.renew_after_fork(generation);
        }
        if self.pos == self.len {
            let k = (self.stamps.len as usize).min(BATCH_BUF);
            if k == 0 {
                return None;
            }
            self.generator
                .encode_run(self.stamps.start, &mut self.buf[..k], self.rng.as_mut());
            self.stamps.start = self.stamps.start.wrapping_add(k as u64);
            self.stamps.len -= k as u64;
            self.pos = 0;
            self.len = k;
        }
        let id = self.buf[self.pos];
        self.pos += 1;
        Some(id)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.stamps.len as usize + (self.len - self.pos);
        (n, Some(n))
    }
}

impl<C: Clock, S: StampCell> ExactSizeIterator for Batch<'_, C, S> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::schemes::Scheme;
    use proptest::prelude::*;

    fn generators() -> Vec<Generator<ManualClock>> {
        let mut schemes: Vec<Scheme> = Scheme::PRESETS
            .iter()
            .filter(|s| **s != Scheme::UProtocolV8)
            .cloned()
            .collect();
        for spec in [
            "counter:12,time:41,node:10,order=none",
            "time:30,node:3,counter:20",
            "node:20,time:90,counter:17",
        ] {
            schemes.push(Scheme::Custom(
                Layout::parse_spec(spec).unwrap_or_else(|e| panic!("{e}")),
            ));
        }
        schemes
            .iter()
            .map(|s| {
                let node = s.needs_node().then_some(5);
                Generator::with_clock(s, node, ManualClock::new(1 << 62), Policy::DEFAULT).unwrap()
            })
            .collect()
    }

    #[test]
    fn encoders_are_chosen_as_expected() {
        let kinds: Vec<String> = generators()
            .iter()
            .map(|g| {
                format!("{}:{:?}", g.scheme_name(), g.encoder)
                    .split(' ')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        assert!(
            kinds.contains(&"global-id:Adjacent".to_string()),
            "{kinds:?}"
        );
        assert!(kinds.contains(&"uuid7:Halves".to_string()), "{kinds:?}");
        assert!(kinds.contains(&"snowflake:Pair64".to_string()), "{kinds:?}");
    }

    proptest! {
        /// The fast encoders agree with the layout's own encode for every stamp the sequencer can
        /// issue (guarantee 3 holds for generated ids, not just for `Layout::encode`).
        #[test]
        fn fast_encoders_agree_with_the_layout(stamp in any::<u64>(), random in any::<u128>()) {
            for g in generators() {
                let stamp = stamp & g.seq.timebase().max_stamp();
                let l = g.layout();
                let r = l.random.deposit(random & l.random.max());
                let node = l.node.extract(g.base); // 5 where the scheme takes a node, else 0
                prop_assert!(node == 5 || node == 0);
                let expected = l.encode(node, (stamp >> g.counter_bits) as u128, (stamp & g.counter_mask) as u128, random);
                prop_assert_eq!(g.encode_with(stamp, r), expected, "{}", g.scheme_name());
            }
        }
    }
}
