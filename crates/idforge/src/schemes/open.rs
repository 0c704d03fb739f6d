//! Opening any scheme by name: the one way the command line, the service and the fleet make a
//! generator. [`Kind`] says what a scheme is; [`Opened::open`] turns it and an [`OpenOptions`]
//! (identity, clock, policy, where the stamp lives) into a generator of that scheme, whatever
//! its kind: a bit layout on the sequencer, Chronicle's decimal host ids, the Locality UUID, or
//! the uProtocol v8 singleton.
//!
//! ```
//! use idforge::schemes::catalog::Kind;
//! use idforge::schemes::open::{OpenOptions, Opened};
//! use idforge::text::Format;
//!
//! let kind = Kind::from_name("snowflake", None)?;
//! let g = Opened::open(&kind, &OpenOptions { node: Some(7), ..OpenOptions::default() })?;
//! let mut ids = Vec::new();
//! g.take(3, |id| ids.push(id))?;
//! assert!(ids.windows(2).all(|w| w[0] < w[1]));
//! assert_eq!(g.render(ids[0], g.text_format(None)?).len(), 19); // decimal
//! # Ok::<(), idforge::Error>(())
//! ```

use std::path::PathBuf;
use std::time::Duration;

use crate::clock::{Clock, ManualClock, SystemClock};
use crate::error::Error;
use crate::generator::{Generator, RandomSource};
use crate::ids::IdFamily;
use crate::schemes::catalog::Kind;
use crate::schemes::nanots;
use crate::schemes::{uprotocol_v8, Scheme};
use crate::sequencer::{Policy, Sequencer, StampCell};
#[cfg(feature = "host-wide")]
use crate::shm::HostStamp;
use crate::shm::{ProcessStamp, StateOptions};
use crate::text::{self, Format};
use crate::ticker::TickerClock;

/// Which clock an opened scheme reads.
///
/// ```
/// use idforge::schemes::open::{ClockChoice, OpenOptions, Opened};
/// let opts = OpenOptions { clock: ClockChoice::Precise, ..OpenOptions::default() };
/// let g = Opened::open_name("uuid7", None, &opts)?;
/// let (a, b) = (g.next()?, g.next()?);
/// assert!(a < b);
/// assert_eq!(ClockChoice::default(), ClockChoice::Auto);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockChoice {
    /// [`SystemClock::for_tick`] of the scheme's tick: the calibrated counter for millisecond
    /// layouts (within 50 µs of `CLOCK_REALTIME`), `CLOCK_REALTIME` for nanots' finer ticks.
    #[default]
    Auto,
    /// `CLOCK_REALTIME` for every id ([`SystemClock::precise`]).
    Precise,
    /// The calibrated counter ([`SystemClock::fast`]) for every scheme, `nanots` included: a
    /// read of about a quarter of `CLOCK_REALTIME`'s, within [`SystemClock::MAX_ERROR`] of it
    /// (tens of nanoseconds where measured), which for `nanots` is coarser than its tick.
    Counter,
    /// [`TickerClock`]: a value a background thread refreshes every 100 µs; the cheapest read,
    /// with a lag that has no bound on an overloaded machine.
    Ticker,
}

/// The system clock, the ticker, or a clock fixed at a time (backfills, reproducible examples).
///
/// ```
/// use idforge::schemes::open::AnyClock;
/// use idforge::{Clock, ManualClock, SystemClock};
/// let fixed = AnyClock::Manual(ManualClock::new(1_000));
/// assert_eq!(fixed.now_ns(), 1_000);
/// let system = AnyClock::System(SystemClock::precise());
/// assert!(system.now_ns() > 1_600_000_000_000_000_000);
/// ```
#[derive(Debug, Clone)]
pub enum AnyClock {
    /// [`SystemClock`]: fast or precise.
    System(SystemClock),
    /// [`TickerClock`].
    Ticker(TickerClock),
    /// A [`ManualClock`], fixed unless moved.
    Manual(ManualClock),
}

impl Clock for AnyClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        match self {
            AnyClock::System(c) => c.now_ns(),
            AnyClock::Ticker(c) => c.now_ns(),
            AnyClock::Manual(c) => c.now_ns(),
        }
    }

    fn now_precise_ns(&self) -> u64 {
        match self {
            AnyClock::System(c) => c.now_precise_ns(),
            AnyClock::Ticker(c) => c.now_precise_ns(),
            AnyClock::Manual(c) => c.now_precise_ns(),
        }
    }

    fn max_error_ns(&self) -> u64 {
        match self {
            AnyClock::System(c) => c.max_error_ns(),
            AnyClock::Ticker(c) => c.max_error_ns(),
            AnyClock::Manual(c) => c.max_error_ns(),
        }
    }

    fn pause(&self, ns: u64) {
        match self {
            AnyClock::System(c) => c.pause(ns),
            AnyClock::Ticker(c) => c.pause(ns),
            AnyClock::Manual(c) => c.pause(ns),
        }
    }
}

/// A stamp in this process (shared with forked children), or in a host-wide state file.
///
/// ```
/// use idforge::schemes::open::AnyCell;
/// use idforge::{ProcessStamp, StampCell};
/// let cell = AnyCell::Process(ProcessStamp::new()?);
/// assert_eq!(cell.load(), 0);
/// while cell.compare_exchange_weak(0, 9).is_err() {}
/// assert_eq!(cell.load(), 9);
/// # Ok::<(), idforge::Error>(())
/// ```
pub enum AnyCell {
    /// [`ProcessStamp`].
    Process(ProcessStamp),
    /// [`HostStamp`].
    #[cfg(feature = "host-wide")]
    Host(HostStamp),
    /// A cell from outside the library: a fleet member's stamp, whose ceiling is the time it has
    /// reserved under its node-id lease (the `idforge-fleet` crate).
    External(std::sync::Arc<dyn StampCell>),
}

impl std::fmt::Debug for AnyCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnyCell::Process(c) => c.fmt(f),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.fmt(f),
            AnyCell::External(_) => f.write_str("External"),
        }
    }
}

impl StampCell for AnyCell {
    #[inline]
    fn load(&self) -> u64 {
        match self {
            AnyCell::Process(c) => c.load(),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.load(),
            AnyCell::External(c) => c.load(),
        }
    }

    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        match self {
            AnyCell::Process(c) => c.compare_exchange_weak(current, new),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.compare_exchange_weak(current, new),
            AnyCell::External(c) => c.compare_exchange_weak(current, new),
        }
    }

    #[inline]
    fn ceiling(&self) -> u64 {
        match self {
            AnyCell::Process(c) => c.ceiling(),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.ceiling(),
            AnyCell::External(c) => c.ceiling(),
        }
    }

    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        match self {
            AnyCell::Process(c) => c.raise_ceiling(needed),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.raise_ceiling(needed),
            AnyCell::External(c) => c.raise_ceiling(needed),
        }
    }

    #[inline]
    fn check_issued(&self, now_ns: u64, stamp: u64) -> Result<(), Error> {
        match self {
            AnyCell::Process(c) => c.check_issued(now_ns, stamp),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.check_issued(now_ns, stamp),
            AnyCell::External(c) => c.check_issued(now_ns, stamp),
        }
    }
    #[inline]
    fn before_swap(&self) -> u64 {
        match self {
            AnyCell::Process(c) => c.before_swap(),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.before_swap(),
            AnyCell::External(c) => c.before_swap(),
        }
    }

    #[inline]
    fn check_replaced(&self, before: u64, replaced: u64) -> Result<(), Error> {
        match self {
            AnyCell::Process(c) => c.check_replaced(before, replaced),
            #[cfg(feature = "host-wide")]
            AnyCell::Host(c) => c.check_replaced(before, replaced),
            AnyCell::External(c) => c.check_replaced(before, replaced),
        }
    }
}

/// Everything a scheme may be opened with. Each kind takes the fields that apply to it and
/// refuses the others ([`Error::NotApplicable`]), so a setting is never silently ignored.
///
/// ```
/// use idforge::schemes::open::{OpenOptions, Opened};
/// // A fixed clock at 2024-01-01T00:00:00Z and node 3: reproducible ids.
/// let opts = OpenOptions { node: Some(3), at_ns: Some(1_704_067_200_000_000_000), ..OpenOptions::default() };
/// let g = Opened::open_name("snowflake", None, &opts)?;
/// let first = g.next()?;
/// assert_eq!(first, ((1_704_067_200_000 - 1_288_834_974_657) << 22) | (3 << 12));
/// assert_eq!(g.next()?, first + 1);
/// // A setting the scheme does not take is refused, not ignored.
/// let e = Opened::open_name("locality", None, &opts).unwrap_err();
/// assert!(matches!(e, idforge::Error::NotApplicable { .. }));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct OpenOptions {
    /// The node id (layouts with a node field), the tag (nanots) or the host id (nanots-host).
    pub node: Option<u64>,
    /// nanots-host: decimal digits of the host id, 2 (the default) or 3.
    pub host_digits: Option<u32>,
    /// locality: the process id to write (default: this process's id modulo 65536).
    pub pid: Option<u64>,
    /// locality: the 28-bit MAC fragment to write (default: the machine's first MAC).
    pub mac_fragment: Option<u64>,
    /// locality: sequential mode.
    pub sequential: bool,
    /// A fixed clock at this time, in Unix nanoseconds, instead of the wall clock. The counter
    /// then carries on into later ticks without bound ([`Policy::UNBOUNDED`]).
    pub at_ns: Option<u64>,
    /// The policy, if not the scheme's default.
    pub policy: Option<Policy>,
    /// Which clock ids take their time from (ignored with `at_ns`).
    pub clock: ClockChoice,
    /// Where random bits come from (uuid7, uprotocol).
    pub random: RandomSource,
    /// A host-wide state file for the stamp; `None` keeps it in this process.
    pub state: Option<StateOptions>,
    /// A stamp cell to use instead (a fleet member's leased cell); excludes `state`. Its stamp
    /// must be in the scheme's time base ([`Kind::timebase`]).
    pub cell: Option<std::sync::Arc<dyn StampCell>>,
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("node", &self.node)
            .field("host_digits", &self.host_digits)
            .field("pid", &self.pid)
            .field("mac_fragment", &self.mac_fragment)
            .field("sequential", &self.sequential)
            .field("at_ns", &self.at_ns)
            .field("policy", &self.policy)
            .field("clock", &self.clock)
            .field("random", &self.random)
            .field("state", &self.state)
            .field("cell", &self.cell.as_ref().map(|_| "external"))
            .finish()
    }
}

/// A generator of any scheme, opened by [`Opened::open`].
///
/// ```
/// use idforge::schemes::open::{OpenOptions, Opened};
/// let g = Opened::open_name("ulid", None, &OpenOptions::default())?;
/// let text = g.render(g.next()?, g.text_format(None)?);
/// assert_eq!(text.len(), 26); // Crockford base32
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug)]
pub struct Opened {
    kind: Kind,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    /// A layout on the system clock with its stamp in this process.
    Process(Box<Generator<SystemClock, ProcessStamp>>),
    /// A layout on the system clock with its stamp in a state file.
    #[cfg(feature = "host-wide")]
    Host(Box<Generator<SystemClock, HostStamp>>),
    /// Any other clock or cell.
    Layout(Box<Generator<AnyClock, AnyCell>>),
    /// The process-wide uProtocol v8 singleton.
    V8(&'static Generator),
    NanoTsHost(Box<nanots::HostGenerator<AnyClock, AnyCell>>),
    #[cfg(feature = "locality")]
    Locality(Box<super::locality::LocalityGenerator<AnyClock>>),
    /// UUIDv4: the secure generator, nothing else.
    Uuid4,
}

/// How ids are written as text: one of [`Format`], TypeID text with its prefix, or nanots's
/// timestamp text.
///
/// ```
/// use idforge::schemes::open::{OpenOptions, Opened, TextFormat};
/// use idforge::text::Format;
/// let g = Opened::open_name("nanots", None, &OpenOptions { at_ns: Some(1_640_700_422_954_100_128), ..OpenOptions::default() })?;
/// assert_eq!(g.text_format(None)?, TextFormat::Plain(Format::Dec));
/// assert_eq!(g.text_format(Some("time"))?, TextFormat::Time);
/// assert!(g.render(g.next()?, TextFormat::Time).starts_with("2021-12-28T14:07:02.9541"));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// A [`Format`] ([`Format::TypeId`] is always [`TextFormat::TypeId`]).
    Plain(Format),
    /// TypeID text: `prefix_` and the 26-character suffix ([`text::TypeIdPrefix::encode`]), the
    /// bare suffix for the empty prefix.
    TypeId(text::TypeIdPrefix),
    /// `2021-12-28T14:07:02.954100128` (nanots, nanots-host).
    Time,
    /// KSUID text (the `ksuid` scheme): the sequencer's 128 bits and 32 random bits drawn as the
    /// id is written ([`super::ksuid::Ksuid::from_id`]), in 27 base62 characters.
    Ksuid,
}

impl Kind {
    /// The time base of the scheme's sequencer (its stamps' epoch, tick and counter width), for
    /// a cell kept outside the library; `None` for kinds that have no sequencer (locality,
    /// uprotocol-v8's singleton).
    ///
    /// # Errors
    /// Bad host digits for nanots-host.
    ///
    /// ```
    /// use idforge::schemes::catalog::Kind;
    /// use idforge::schemes::open::OpenOptions;
    /// let tb = Kind::from_name("snowflake", None)?.timebase(&OpenOptions::default())?.unwrap();
    /// assert_eq!((tb.tick_ns, tb.counter_bits), (1_000_000, 12));
    /// assert_eq!(Kind::Locality.timebase(&OpenOptions::default())?, None); // no sequencer
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timebase(
        &self,
        opts: &OpenOptions,
    ) -> Result<Option<crate::sequencer::Timebase>, Error> {
        Ok(match self {
            Kind::Layout(Scheme::UProtocolV8) | Kind::Locality | Kind::Uuid4 => None,
            Kind::Layout(s) => Some(s.layout().timebase()),
            Kind::NanoTsHost => Some(
                nanots::HostDigits::new(opts.node.unwrap_or(0), opts.host_digits.unwrap_or(2))?
                    .timebase(),
            ),
        })
    }

    /// Whether the scheme has a node id (or nanots-host host id) a fleet can lease.
    ///
    /// ```
    /// use idforge::schemes::catalog::Kind;
    /// assert!(Kind::from_name("snowflake", None)?.leases_node());
    /// assert!(Kind::NanoTsHost.leases_node());
    /// assert!(!Kind::from_name("uuid7", None)?.leases_node());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn leases_node(&self) -> bool {
        matches!(
            self.identity(),
            crate::schemes::catalog::Identity::Node { .. }
                | crate::schemes::catalog::Identity::Host
        )
    }

    /// The largest node id (or host id) of the scheme, for kinds that have one.
    ///
    /// # Errors
    /// Bad host digits for nanots-host.
    ///
    /// ```
    /// use idforge::schemes::catalog::Kind;
    /// use idforge::schemes::open::OpenOptions;
    /// assert_eq!(Kind::from_name("snowflake", None)?.max_node(&OpenOptions::default())?, Some(1023));
    /// let three = OpenOptions { host_digits: Some(3), ..OpenOptions::default() };
    /// assert_eq!(Kind::NanoTsHost.max_node(&three)?, Some(999));
    /// assert_eq!(Kind::Uuid4.max_node(&three)?, None);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn max_node(&self, opts: &OpenOptions) -> Result<Option<u64>, Error> {
        Ok(match self.identity() {
            crate::schemes::catalog::Identity::Node { max } => Some(max),
            crate::schemes::catalog::Identity::Host => {
                Some(10u64.pow(opts.host_digits.unwrap_or(2)) - 1)
            }
            _ => None,
        })
    }

    /// The default state file of this scheme for a node (or host id): the one place that names
    /// state files ([`crate::default_state_path`] under [`crate::default_state_dir`]).
    ///
    /// # Errors
    /// [`Error::NotApplicable`] for a kind that cannot be host-wide, and the errors of
    /// [`crate::default_state_dir`].
    ///
    /// ```
    /// use idforge::schemes::catalog::Kind;
    /// use idforge::schemes::open::OpenOptions;
    /// let kind = Kind::from_name("snowflake", None)?;
    /// if let Ok(path) = kind.default_state_path(&OpenOptions { node: Some(7), ..OpenOptions::default() }) {
    ///     assert!(path.ends_with("snowflake-node7.state"));
    /// }
    /// assert!(matches!(Kind::Locality.default_state_path(&OpenOptions::default()),
    ///                  Err(idforge::Error::NotApplicable { .. })));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn default_state_path(&self, opts: &OpenOptions) -> Result<PathBuf, Error> {
        let name = self.state_file_name(opts)?;
        Ok(crate::shm::default_state_dir()?.join(name))
    }

    /// The name of this scheme and node's state file, for a state directory other than
    /// [`crate::default_state_dir`]: the file [`Kind::default_state_path`] names, in `dir`.
    ///
    /// ```
    /// use idforge::schemes::catalog::Kind;
    /// use idforge::schemes::open::OpenOptions;
    /// let kind = Kind::from_name("snowflake", None)?;
    /// let opts = OpenOptions { node: Some(3), ..OpenOptions::default() };
    /// assert_eq!(kind.state_file_name(&opts)?, "snowflake-node3.state");
    /// assert!(Kind::from_name("uuid4", None)?.state_file_name(&opts).is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotApplicable`] for a kind that cannot be host-wide.
    pub fn state_file_name(&self, opts: &OpenOptions) -> Result<String, Error> {
        match self {
            Kind::Layout(s) if self.host_wide() => {
                let node = s
                    .needs_node()
                    .then(|| s.resolve_node(opts.node).ok())
                    .flatten();
                Ok(crate::shm::state_file_name(
                    s.name(),
                    &s.layout().spec(),
                    node,
                ))
            }
            Kind::NanoTsHost => {
                let digits = opts.host_digits.unwrap_or(2);
                Ok(crate::shm::state_file_name(
                    &format!("nanots-host{digits}"),
                    "",
                    opts.node,
                ))
            }
            _ => Err(not_applicable(self, "a host-wide state file")),
        }
    }
}

/// The kinds that take no sequencer settings (locality, uuid4) refuse a node id, a state file or
/// a leased cell, and a policy, each by name.
fn refuse_sequencer_options(kind: &Kind, opts: &OpenOptions) -> Result<(), Error> {
    if opts.node.is_some() {
        return Err(not_applicable(kind, "a node id"));
    }
    if opts.state.is_some() || opts.cell.is_some() {
        return Err(not_applicable(
            kind,
            "a host-wide state file or a leased cell",
        ));
    }
    if opts.policy.is_some() {
        return Err(not_applicable(kind, "a policy"));
    }
    Ok(())
}

fn not_applicable(kind: &Kind, setting: &str) -> Error {
    let why = match kind {
        Kind::Locality => "its ids are kept apart by the pid, the MAC and a 32-bit counter per millisecond, not by a shared stamp",
        Kind::Layout(Scheme::UProtocolV8) => "it is a process-wide singleton on the wall clock",
        Kind::NanoTsHost => "its ids are kept apart by the host id",
        Kind::Uuid4 => "its ids are 122 random bits from the secure generator: no time, no counter, no node",
        Kind::Layout(_) => "its layout has no such field",
    };
    Error::NotApplicable {
        scheme: kind.name().to_string(),
        setting: setting.to_string(),
        why: why.to_string(),
    }
}

impl Opened {
    /// Opens a generator of `kind` with `opts`.
    ///
    /// # Errors
    /// [`Error::NotApplicable`] for a setting the kind does not take (a node for locality, a
    /// state file for uprotocol-v8, ...); the errors of the kind's constructor (a missing or
    /// out-of-range node, an epoch after the clock, a state file that cannot be trusted, ...).
    ///
    /// ```
    /// use idforge::schemes::catalog::Kind;
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let kind = Kind::from_name("snowflake", None)?;
    /// let g = Opened::open(&kind, &OpenOptions { node: Some(7), ..OpenOptions::default() })?;
    /// assert_eq!((g.next()? >> 12) & 1023, 7);
    /// // Snowflake needs a node id, and idforge never picks one for you.
    /// let e = Opened::open(&kind, &OpenOptions::default()).unwrap_err();
    /// assert!(matches!(e, idforge::Error::NodeRequired { max: 1023, .. }));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn open(kind: &Kind, opts: &OpenOptions) -> Result<Opened, Error> {
        let clock = match opts.at_ns {
            Some(t) => AnyClock::Manual(ManualClock::new(t)),
            None => match opts.clock {
                ClockChoice::Precise => AnyClock::System(SystemClock::precise()),
                ClockChoice::Counter => AnyClock::System(SystemClock::fast()),
                ClockChoice::Ticker => AnyClock::Ticker(TickerClock::start()?),
                // Locality and uprotocol-v8 count milliseconds.
                ClockChoice::Auto => AnyClock::System(SystemClock::for_tick(
                    kind.timebase(opts)?.map_or(1_000_000, |tb| tb.tick_ns),
                )),
            },
        };
        let policy = |default: Policy| match (opts.at_ns, opts.policy) {
            (_, Some(p)) => p,
            (Some(_), None) => Policy::UNBOUNDED,
            (None, None) => default,
        };
        // A fixed clock never moves: a bounded lead, or waiting for the clock, would wait for
        // ever as soon as the stamp (a state file's, from earlier runs) is ahead of it.
        if opts.at_ns.is_some() && opts.policy.is_some_and(|p| p != Policy::UNBOUNDED) {
            return Err(Error::NotApplicable {
                scheme: kind.name().to_string(),
                setting: "a policy with a fixed clock (`at`)".into(),
                why: "a fixed clock never moves, so a bounded lead or a wait for the clock would wait for ever; it runs with no bound on the lead (Policy::UNBOUNDED)".into(),
            });
        }
        let locality_only = opts.pid.is_some() || opts.mac_fragment.is_some() || opts.sequential;
        if locality_only && *kind != Kind::Locality {
            return Err(not_applicable(kind, "a pid, a MAC or sequential mode"));
        }
        if opts.host_digits.is_some() && *kind != Kind::NanoTsHost {
            return Err(not_applicable(kind, "host digits"));
        }
        let inner = match kind {
            Kind::Layout(Scheme::UProtocolV8) => {
                if opts.at_ns.is_some() {
                    return Err(not_applicable(kind, "a fixed clock"));
                }
                refuse_sequencer_options(kind, opts)?;
                Inner::V8(uprotocol_v8::generator())
            }
            Kind::Layout(s) => {
                let policy = policy(s.default_policy());
                // The common cases (the system clock, a stamp in this process or in a state
                // file) get generators of their own concrete types: no dispatch on the clock or
                // the cell per id.
                let g = match (&opts.state, &opts.cell, clock) {
                    (Some(_), Some(_), _) => {
                        return Err(not_applicable(kind, "both a state file and a cell"))
                    }
                    (None, Some(c), clock) => {
                        let seq = Sequencer::with_cell(
                            clock,
                            AnyCell::External(c.clone()),
                            s.layout().timebase(),
                            policy,
                        )?;
                        Generator::with_sequencer(s, opts.node, seq)?
                    }
                    (None, None, AnyClock::System(sc)) => {
                        let g = Generator::builder(s)
                            .node_opt(opts.node)
                            .clock(sc)
                            .policy(policy)
                            .random(opts.random)
                            .build()?;
                        return Ok(Opened {
                            kind: kind.clone(),
                            inner: Inner::Process(Box::new(g)),
                        });
                    }
                    #[cfg(feature = "host-wide")]
                    (Some(st), None, AnyClock::System(sc)) => {
                        let g = Generator::builder(s)
                            .node_opt(opts.node)
                            .clock(sc)
                            .policy(policy)
                            .random(opts.random)
                            .build_host_wide(st)?;
                        return Ok(Opened {
                            kind: kind.clone(),
                            inner: Inner::Host(Box::new(g)),
                        });
                    }
                    (None, None, clock) => Generator::with_clock(s, opts.node, clock, policy)?
                        .map_cell(AnyCell::Process),
                    (Some(st), None, clock) => host_wide_layout(s, opts.node, clock, policy, st)?,
                };
                Inner::Layout(Box::new(g.with_random(opts.random)))
            }
            Kind::NanoTsHost => {
                let host = opts.node.ok_or(Error::HostRequired)?;
                let digits = nanots::HostDigits::new(host, opts.host_digits.unwrap_or(2))?;
                let policy = policy(nanots::POLICY);
                let seq = match (&opts.state, &opts.cell) {
                    (Some(_), Some(_)) => {
                        return Err(not_applicable(kind, "both a state file and a cell"))
                    }
                    (None, Some(c)) => Sequencer::with_cell(
                        clock,
                        AnyCell::External(c.clone()),
                        digits.timebase(),
                        policy,
                    )?,
                    (None, None) => Sequencer::with_cell(
                        clock,
                        AnyCell::Process(ProcessStamp::new()?),
                        digits.timebase(),
                        policy,
                    )?,
                    (Some(st), None) => host_wide_nanots(digits, clock, policy, st)?,
                };
                Inner::NanoTsHost(Box::new(nanots::HostGenerator::with_sequencer(
                    digits, seq,
                )?))
            }
            #[cfg(feature = "locality")]
            Kind::Locality => {
                refuse_sequencer_options(kind, opts)?;
                let mut b = super::locality::LocalityGenerator::builder()
                    .clock(clock)
                    .sequential(opts.sequential);
                if let Some(p) = opts.pid {
                    b = b.pid(p);
                }
                if let Some(m) = opts.mac_fragment {
                    b = b.mac_fragment(m);
                }
                Inner::Locality(Box::new(b.build()?))
            }
            #[cfg(not(feature = "locality"))]
            Kind::Locality => return Err(Error::UnknownScheme("locality".into())),
            Kind::Uuid4 => {
                refuse_sequencer_options(kind, opts)?;
                if opts.at_ns.is_some() {
                    return Err(not_applicable(kind, "a fixed clock"));
                }
                if opts.random != RandomSource::Secure {
                    return Err(not_applicable(kind, "the fast random source (its random bits are all it has: they come from the secure generator)"));
                }
                Inner::Uuid4
            }
        };
        Ok(Opened {
            kind: kind.clone(),
            inner,
        })
    }

    /// Opens the scheme called `name` (with `layout` for `custom`): [`Kind::from_name`], then
    /// [`Opened::open`].
    ///
    /// # Errors
    /// Those of [`Kind::from_name`] and [`Opened::open`].
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let g = Opened::open_name("custom", Some("time:48,counter:16"), &OpenOptions::default())?;
    /// assert_eq!(g.bits(), 64);
    /// assert!(Opened::open_name("snowflak", None, &OpenOptions::default()).is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn open_name(
        name: &str,
        layout: Option<&str>,
        opts: &OpenOptions,
    ) -> Result<Opened, Error> {
        Opened::open(&Kind::from_name(name, layout)?, opts)
    }

    /// The scheme's kind.
    ///
    /// ```
    /// use idforge::schemes::catalog::Kind;
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let g = Opened::open_name("locality", None, &OpenOptions::default())?;
    /// assert_eq!(g.kind(), &Kind::Locality);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The scheme's name.
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// assert_eq!(Opened::open_name("UUID7", None, &OpenOptions::default())?.name(), "uuid7");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        self.kind.name()
    }

    /// Width of an id in bits.
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let o = OpenOptions::default();
    /// assert_eq!(Opened::open_name("objectid", None, &OpenOptions { node: Some(1), ..o.clone() })?.bits(), 96);
    /// assert_eq!(Opened::open_name("uuid4", None, &o)?.bits(), 128);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn bits(&self) -> u32 {
        match &self.inner {
            Inner::Process(g) => g.layout().bits,
            #[cfg(feature = "host-wide")]
            Inner::Host(g) => g.layout().bits,
            Inner::Layout(g) => g.layout().bits,
            Inner::V8(g) => g.layout().bits,
            Inner::NanoTsHost(_) => 64,
            #[cfg(feature = "locality")]
            Inner::Locality(_) => 128,
            Inner::Uuid4 => 128,
        }
    }

    /// Whether ids are UUIDs (have a version and variant).
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let o = OpenOptions::default();
    /// assert!(Opened::open_name("uuid7", None, &o)?.is_uuid());
    /// assert!(!Opened::open_name("ulid", None, &o)?.is_uuid()); // 128 bits, no version field
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn is_uuid(&self) -> bool {
        match &self.kind {
            Kind::Layout(s) => s.uuid_version().is_some(),
            Kind::NanoTsHost => false,
            Kind::Locality | Kind::Uuid4 => true,
        }
    }

    /// The family of the ids (which typed id holds them).
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// use idforge::IdFamily;
    /// let o = OpenOptions { node: Some(1), ..OpenOptions::default() };
    /// assert_eq!(Opened::open_name("uuid7", None, &OpenOptions::default())?.family(), IdFamily::Uuid);
    /// assert_eq!(Opened::open_name("snowflake", None, &o)?.family(), IdFamily::Id64);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn family(&self) -> IdFamily {
        match &self.kind {
            Kind::Layout(s) => crate::generator::SchemeSpec::family(s),
            Kind::NanoTsHost => IdFamily::NanoTs,
            Kind::Locality | Kind::Uuid4 => IdFamily::Uuid,
        }
    }

    /// The next id.
    ///
    /// # Errors
    /// The generator's: the clock behind the last id, the time field run out, a lost state file.
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let g = Opened::open_name("uuid7", None, &OpenOptions::default())?;
    /// let (a, b) = (g.next()?, g.next()?);
    /// assert!(a < b);
    /// assert_eq!((a >> 76) & 0xF, 7); // the version
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn next(&self) -> Result<u128, Error> {
        match &self.inner {
            Inner::Process(g) => g.next(),
            #[cfg(feature = "host-wide")]
            Inner::Host(g) => g.next(),
            Inner::Layout(g) => g.next(),
            Inner::V8(g) => g.next(),
            Inner::NanoTsHost(g) => g.next().map(u128::from),
            #[cfg(feature = "locality")]
            Inner::Locality(g) => Ok(g.next().as_u128()),
            Inner::Uuid4 => Ok(super::uuid4::uuid4()),
        }
    }

    /// `n` ids, in increasing order for time-ordered schemes, passed to `emit`; sequencer schemes
    /// take them one reservation (one compare-and-swap) per tick's worth, at most 1024 at a time.
    ///
    /// # Errors
    /// As [`Opened::next`]; ids emitted before an error were issued and are unique.
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let g = Opened::open_name("tsid", None, &OpenOptions { node: Some(1), ..OpenOptions::default() })?;
    /// let mut ids = Vec::new();
    /// g.take(2_000, |id| ids.push(id))?;
    /// assert_eq!(ids.len(), 2_000);
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn take(&self, n: u64, emit: impl FnMut(u128)) -> Result<(), Error> {
        // A few ids (a service's usual request) are not worth zeroing 16 KB for.
        if n <= 64 {
            self.take_in(&mut [0u128; 64], n, emit)
        } else {
            self.take_in(&mut [0u128; 1024], n, emit)
        }
    }

    fn take_in(&self, buf: &mut [u128], n: u64, mut emit: impl FnMut(u128)) -> Result<(), Error> {
        let mut left = n;
        while left > 0 {
            let k = left.min(buf.len() as u64) as usize;
            match &self.inner {
                Inner::Process(g) => g.fill(&mut buf[..k])?,
                #[cfg(feature = "host-wide")]
                Inner::Host(g) => g.fill(&mut buf[..k])?,
                Inner::Layout(g) => g.fill(&mut buf[..k])?,
                Inner::V8(g) => g.fill(&mut buf[..k])?,
                _ => {
                    for slot in &mut buf[..k] {
                        *slot = self.next()?;
                    }
                }
            }
            buf[..k].iter().for_each(|id| emit(*id));
            left -= k as u64;
        }
        Ok(())
    }

    /// How far the last id is ahead of the wall clock (zero for locality and uuid4).
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let g = Opened::open_name("uuid4", None, &OpenOptions::default())?;
    /// g.next()?;
    /// assert_eq!(g.lead(), std::time::Duration::ZERO); // no clock, nothing to lead
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn lead(&self) -> Duration {
        match &self.inner {
            Inner::Process(g) => g.sequencer().lead(),
            #[cfg(feature = "host-wide")]
            Inner::Host(g) => g.sequencer().lead(),
            Inner::Layout(g) => g.sequencer().lead(),
            Inner::V8(g) => g.sequencer().lead(),
            Inner::NanoTsHost(g) => g.sequencer().lead(),
            #[cfg(feature = "locality")]
            Inner::Locality(_) => Duration::ZERO,
            Inner::Uuid4 => Duration::ZERO,
        }
    }

    /// The state file the stamp is in, for host-wide generators.
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// use idforge::StateOptions;
    /// static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    /// let dir = std::env::temp_dir().join(format!(
    ///     "idforge-doc-state-path-{}-{}", std::process::id(),
    ///     N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    /// let path = dir.join("uuid7.state");
    /// let opts = OpenOptions { state: Some(StateOptions::new(&path)), ..OpenOptions::default() };
    /// let g = Opened::open_name("uuid7", None, &opts)?;
    /// assert_eq!(g.state_path(), Some(path.as_path()));
    /// assert_eq!(Opened::open_name("uuid7", None, &OpenOptions::default())?.state_path(), None);
    /// # drop(g);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn state_path(&self) -> Option<&std::path::Path> {
        #[cfg(feature = "host-wide")]
        {
            let cell = match &self.inner {
                Inner::Host(g) => return Some(g.sequencer().cell().path()),
                Inner::Layout(g) => g.sequencer().cell(),
                Inner::NanoTsHost(g) => g.sequencer().cell(),
                _ => return None,
            };
            match cell {
                AnyCell::Host(h) => Some(h.path()),
                AnyCell::Process(_) | AnyCell::External(_) => None,
            }
        }
        #[cfg(not(feature = "host-wide"))]
        None
    }

    /// The text format for a requested name (`dec`, `hex`, `base32`, `uuid`, `time`), or the
    /// scheme's default for `None`.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] for an unknown name or one this scheme's ids cannot be written in
    /// (a 64-bit id as a UUID, `time` for a scheme whose ids are not timestamps).
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened, TextFormat};
    /// use idforge::text::Format;
    /// let g = Opened::open_name("snowflake", None, &OpenOptions { node: Some(1), ..OpenOptions::default() })?;
    /// assert_eq!(g.text_format(None)?, TextFormat::Plain(Format::Dec));
    /// assert_eq!(g.text_format(Some("HEX"))?, TextFormat::Plain(Format::Hex));
    /// assert!(g.text_format(Some("uuid")).is_err()); // a 64-bit id is not a UUID
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn text_format(&self, requested: Option<&str>) -> Result<TextFormat, Error> {
        self.text_format_prefixed(requested, None)
    }

    /// As [`Opened::text_format`], with a TypeID prefix for TypeID text (the `typeid` scheme's
    /// default, or `typeid` requested for another 128-bit scheme); `None` is the empty prefix.
    ///
    /// # Errors
    /// Those of [`Opened::text_format`]; [`Error::InvalidFormat`] for a prefix the TypeID spec
    /// does not allow, or a prefix with another format (it would be ignored).
    ///
    /// ```
    /// use idforge::schemes::open::{Opened, OpenOptions};
    /// let g = Opened::open_name("typeid", None, &OpenOptions::default())?;
    /// let f = g.text_format_prefixed(None, Some("user"))?;
    /// assert!(g.render(g.next()?, f).starts_with("user_0"));
    /// assert!(g.text_format_prefixed(None, Some("User")).is_err());
    /// assert!(g.text_format_prefixed(Some("uuid"), Some("user")).is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn text_format_prefixed(
        &self,
        requested: Option<&str>,
        prefix: Option<&str>,
    ) -> Result<TextFormat, Error> {
        let f = self.text_format_unprefixed(requested)?;
        match (f, prefix) {
            (TextFormat::TypeId(_), Some(p)) => Ok(TextFormat::TypeId(text::TypeIdPrefix::new(p)?)),
            (f, None) => Ok(f),
            (_, Some(_)) => Err(Error::InvalidFormat(format!(
                "a prefix applies only to TypeID text (the typeid scheme, or format typeid), not to {} ids in another format",
                self.name()
            ))),
        }
    }

    fn text_format_unprefixed(&self, requested: Option<&str>) -> Result<TextFormat, Error> {
        let timestamps = matches!(self.kind, Kind::NanoTsHost | Kind::Layout(Scheme::NanoTs));
        if self.kind == Kind::Layout(Scheme::Ksuid) {
            return match requested.map(|r| r.trim().to_ascii_lowercase()) {
                None => Ok(TextFormat::Ksuid),
                Some(t) if t == "ksuid" => Ok(TextFormat::Ksuid),
                Some(t) => Err(Error::UnsupportedFormat {
                    format: t,
                    scheme: "ksuid".into(),
                    reason: "a KSUID is 160 bits, written only as its 27 base62 characters (format `ksuid`)".into(),
                }),
            };
        }
        let f = match requested.map(|r| r.trim().to_ascii_lowercase()) {
            None => match &self.kind {
                Kind::Layout(s) => s.default_format(),
                Kind::NanoTsHost => Format::Dec,
                Kind::Locality | Kind::Uuid4 => Format::Uuid,
            },
            Some(t) if t == "time" && timestamps => return Ok(TextFormat::Time),
            Some(t) if t == "time" => {
                return Err(Error::InvalidFormat(format!(
                    "`time` applies only to nanots and nanots-host, whose ids are timestamps, not to {}",
                    self.name()
                )))
            }
            Some(t) => t.parse::<Format>().map_err(Error::InvalidFormat)?,
        };
        if self.kind == Kind::NanoTsHost && f != Format::Dec {
            return Err(Error::InvalidFormat(format!(
                "nanots-host ids are decimal: their last digits are the host id; write them as `dec` or `time`, not `{}`",
                f.name()
            )));
        }
        text::check_format(f, self.bits(), self.is_uuid(), self.name())?;
        Ok(match f {
            Format::TypeId => TextFormat::TypeId(text::TypeIdPrefix::EMPTY),
            f => TextFormat::Plain(f),
        })
    }

    /// An id as text.
    ///
    /// ```
    /// use idforge::schemes::open::{OpenOptions, Opened};
    /// let g = Opened::open_name("uuid7", None, &OpenOptions::default())?;
    /// let id = 0x0190_1234_5678_7abc_8def_0123_4567_89ab;
    /// assert_eq!(g.render(id, g.text_format(None)?), "01901234-5678-7abc-8def-0123456789ab");
    /// assert_eq!(g.render(id, g.text_format(Some("hex"))?), "0190123456787abc8def0123456789ab");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn render(&self, id: u128, format: TextFormat) -> String {
        match format {
            TextFormat::Time => nanots::format(id as u64),
            TextFormat::TypeId(p) => p.encode(id).to_string(),
            TextFormat::Ksuid => super::ksuid::Ksuid::from_id(id).to_string(),
            TextFormat::Plain(f) => text::encode(id, self.bits(), f).to_string(),
        }
    }
}

#[cfg(feature = "host-wide")]
fn host_wide_layout(
    s: &Scheme,
    node: Option<u64>,
    clock: AnyClock,
    policy: Policy,
    st: &StateOptions,
) -> Result<Generator<AnyClock, AnyCell>, Error> {
    // Opened host-wide through the one place that binds a file to a scheme, then moved into
    // the common cell type.
    let g = Generator::host_wide(s, node, clock, policy, st)?;
    Ok(g.map_cell(AnyCell::Host))
}

#[cfg(not(feature = "host-wide"))]
fn host_wide_layout(
    s: &Scheme,
    _node: Option<u64>,
    _clock: AnyClock,
    _policy: Policy,
    _st: &StateOptions,
) -> Result<Generator<AnyClock, AnyCell>, Error> {
    Err(Error::NotApplicable {
        scheme: s.name().to_string(),
        setting: "a host-wide state file".into(),
        why: "this build of idforge has no `host-wide` feature".into(),
    })
}

#[cfg(feature = "host-wide")]
fn host_wide_nanots(
    digits: nanots::HostDigits,
    clock: AnyClock,
    policy: Policy,
    st: &StateOptions,
) -> Result<Sequencer<AnyClock, AnyCell>, Error> {
    let g = nanots::HostGenerator::host_wide(digits, clock, policy, st)?;
    Ok(g.into_sequencer().map_cell(AnyCell::Host))
}

#[cfg(not(feature = "host-wide"))]
fn host_wide_nanots(
    _digits: nanots::HostDigits,
    _clock: AnyClock,
    _policy: Policy,
    _st: &StateOptions,
) -> Result<Sequencer<AnyClock, AnyCell>, Error> {
    Err(Error::NotApplicable {
        scheme: "nanots-host".into(),
        setting: "a host-wide state file".into(),
        why: "this build of idforge has no `host-wide` feature".into(),
    })
}
