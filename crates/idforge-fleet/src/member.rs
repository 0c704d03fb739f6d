//! A fleet member: a process holding one node id under a lease, with time reserved ahead.
//! See the crate documentation for the protocol and why it keeps ids unique.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::OpenOptions;
use idforge::{Error, StampCell, Timebase};

use crate::store::{Store, StoreError};

/// How a member joins and keeps its node id.
#[derive(Clone)]
pub struct FleetOptions {
    /// The id space: one namespace per scheme, layout and fleet (ids of two namespaces may
    /// collide; ids within one never do).
    pub namespace: String,
    /// The lease's time to live (default 10 s): how long a crashed holder's node id stays
    /// unavailable, and how long a member may go without reaching the store before it stops.
    pub ttl: Duration,
    /// How far ahead of the clock time is reserved (default 2 s); a reservation is extended when
    /// less than half of it is left, so the store sees about one write per second per member.
    pub reserve_ahead: Duration,
    /// How long to wait at start when the clock is behind the node id's high-water mark (default
    /// 3 s: the reservation a crashed holder may have left, plus a second); further behind, the
    /// id is given back and another tried.
    pub max_clock_wait: Duration,
    /// How long joining may retry an unavailable store (default 10 s).
    pub join_timeout: Duration,
    /// The largest node id of the scheme (the layout's node field).
    pub max_node: u64,
    /// The scheme's time base: converts reservations (Unix ns) to stamps.
    pub timebase: Timebase,
    /// The id layout's canonical description ([`crate::layout_description`]): every field's
    /// position and width, the fixed bits, the epoch and the tick. The namespace is bound to it.
    pub layout: String,
    /// Written into the node key, for operators (default: host name and process id).
    pub holder: String,
    /// The clock compared with the marks and used for reservations: the wall clock unless set
    /// (it must be the clock the scheme's generator reads; tests give both a clock that is off).
    pub clock: Option<Arc<dyn idforge::Clock>>,
}

impl std::fmt::Debug for FleetOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetOptions")
            .field("namespace", &self.namespace)
            .field("ttl", &self.ttl)
            .field("reserve_ahead", &self.reserve_ahead)
            .field("max_clock_wait", &self.max_clock_wait)
            .field("join_timeout", &self.join_timeout)
            .field("max_node", &self.max_node)
            .field("timebase", &self.timebase)
            .field("layout", &self.layout)
            .field("holder", &self.holder)
            .field("clock", &self.clock.as_ref().map(|c| c.now_ns()))
            .finish()
    }
}

impl FleetOptions {
    /// Defaults for the ids of `kind` opened with `opts` (its host digits, for nanots-host): the
    /// node range, time base and layout are the scheme's.
    ///
    /// # Errors
    /// [`Error::NotApplicable`] for a kind without a node id to lease (uuid7, locality, ...);
    /// bad host digits for nanots-host.
    pub fn new(
        namespace: impl Into<String>,
        kind: &Kind,
        opts: &OpenOptions,
    ) -> Result<Self, Error> {
        let (Some(timebase), Some(max_node), true) = (
            kind.timebase(opts)?,
            kind.max_node(opts)?,
            kind.leases_node(),
        ) else {
            return Err(Error::NotApplicable {
                scheme: kind.name().to_string(),
                setting: "a node id leased from a fleet".into(),
                why: "it has no node id (the fleet leases node ids of global-id, global-id-128, snowflake, sonyflake, nanots-host and custom layouts with a node field)".into(),
            });
        };
        Ok(FleetOptions {
            namespace: namespace.into(),
            ttl: Duration::from_secs(10),
            reserve_ahead: Duration::from_secs(2),
            // A successor of a crashed holder finds its mark up to `reserve_ahead` ahead of the
            // clock: wait that out, plus a second for clocks that differ a little.
            max_clock_wait: Duration::from_secs(3),
            join_timeout: Duration::from_secs(10),
            max_node,
            timebase,
            layout: crate::space::layout_description(kind, opts)?,
            holder: default_holder(),
            clock: None,
        })
    }
}

fn default_holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown-host".into());
    format!("{host}:{}", std::process::id())
}

/// Why joining failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetError {
    /// Every node id of the namespace is held.
    #[error("namespace {namespace:?} is full: all {size} node ids are held by live processes; stop one, use another namespace, or a layout with more node bits")]
    NamespaceFull {
        /// The namespace.
        namespace: String,
        /// How many node ids it has.
        size: u64,
    },
    /// The clock is behind the high-water mark of every free node id by more than the wait.
    #[error("the high-water mark of every free node id in namespace {namespace:?} is ahead of this host's clock, the nearest by {behind:?} (at most {max_wait:?} is waited): ids issued now could repeat earlier ones. Either a holder reserved time up to then and stopped moments ago (retry in a few seconds), or this clock is behind (fix it: NTP)")]
    ClockBehind {
        /// The namespace.
        namespace: String,
        /// The smallest lag found.
        behind: Duration,
        /// The wait allowed.
        max_wait: Duration,
    },
    /// The store could not be reached for longer than the join timeout.
    #[error("could not join namespace {namespace:?}: {source} (retried for {waited:?})")]
    Store {
        /// The namespace.
        namespace: String,
        /// The last error.
        source: StoreError,
        /// How long it retried.
        waited: Duration,
    },
    /// The namespace is bound to another id space.
    #[error("namespace {namespace:?} is bound to another id layout: it holds {found:?}, and this process's is {expected:?}. Node ids shared by two layouts would hand out the same ids: use a namespace per layout (--namespace)")]
    SpecMismatch {
        /// The namespace.
        namespace: String,
        /// Its spec.
        found: String,
        /// This process's spec.
        expected: String,
    },
    /// The namespace was bound by an idforge that recorded only the fields' widths, not their
    /// positions: whether this layout is the one its processes use cannot be told.
    #[error("namespace {namespace:?} was bound by an older idforge to {found:?}, which does not say where the fields sit, so this process's layout ({expected:?}) cannot be checked against it. Use a new namespace (--namespace), or stop every process of this one and bind it anew: etcdctl put /idforge/{namespace}/spec '{expected}'")]
    LegacySpec {
        /// The namespace.
        namespace: String,
        /// Its spec, in the old form.
        found: String,
        /// This process's spec.
        expected: String,
    },
    /// The handler that tells a forked child from its parent could not be registered.
    #[error("cannot register the fork handler (pthread_atfork failed: out of memory): a forked child could not tell that it shares no lease and would issue its parent's ids, so no node id is leased")]
    ForksUndetectable,
    /// The lease expired before the first reservation was written.
    #[error("the lease expired while joining namespace {0:?}; try again")]
    LeaseExpired(String),
}

/// Monotonic nanoseconds since the first call in this process (`CLOCK_MONOTONIC`: it keeps
/// counting while a process is stopped, so a `SIGSTOP`ped member sees its deadline pass).
fn mono_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

fn system_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl FleetOptions {
    /// The id space a namespace is bound to: the layout's canonical description (every field's
    /// position and width, fixed bits, epoch, tick), the stamps' time base and the node range.
    /// A process with any other spec is refused in that namespace, so two layouts never share
    /// node ids (two custom layouts with the same widths in another order, or `nanots-host` with
    /// 2 and 3 host digits, would hand out the same ids).
    pub fn spec(&self) -> String {
        let tb = &self.timebase;
        format!(
            "layout={} stamps=epoch_ns:{},tick_ns:{},time_bits:{},counter_bits:{} nodes=0-{}",
            self.layout, tb.epoch_ns, tb.tick_ns, tb.time_bits, tb.counter_bits, self.max_node
        )
    }

    /// The time the protocol compares with marks: [`FleetOptions::clock`], else the wall clock.
    fn now_ns(&self) -> u64 {
        self.clock.as_ref().map_or_else(system_ns, |c| c.now_ns())
    }
}

/// The largest stamp whose time (the start of its tick) is at or before `ns`.
fn last_stamp_at(tb: &Timebase, ns: u64) -> u64 {
    if ns < tb.epoch_ns {
        return 0;
    }
    let tick = (ns - tb.epoch_ns) / tb.tick_ns;
    ((tick + 1) << tb.counter_bits).saturating_sub(1)
}

/// The time (Unix ns, start of its tick) of a stamp.
fn time_of(tb: &Timebase, stamp: u64) -> u64 {
    tb.epoch_ns + (stamp >> tb.counter_bits) * tb.tick_ns
}

/// What a member holds, for logs, status and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The namespace.
    pub namespace: String,
    /// The node id.
    pub node: u64,
    /// The fencing token (the store revision of the claim).
    pub token: i64,
    /// The reservation: ids are issued up to this time (Unix ns).
    pub reserved_ns: u64,
    /// Whether the member may issue now.
    pub issuing: bool,
    /// Why it may not, if it may not.
    pub lost: Option<String>,
    /// Calls made to the store since joining.
    pub store_calls: u64,
    /// The last error of the store, while renewals or reservations fail (cleared by the next
    /// renewal that succeeds): why the lease may be lost soon, or was (etcd down, a role
    /// revoked, authentication turned off).
    pub store_error: Option<String>,
}

struct Shared {
    store: Arc<dyn Store>,
    opts: FleetOptions,
    node: u64,
    /// The process that joined, and the fork count it saw ([`idforge::shm::fork_generation`]): in a
    /// forked child, whose copies of the lease, token, stamp and reservation are not its own
    /// (and whose renewal thread does not exist), every id is refused.
    pid: u32,
    fork_generation: u64,
    /// The lease's time to live as granted (whole seconds, at most the one asked for).
    ttl_ns: AtomicU64,
    lease: AtomicI64,
    token: AtomicI64,
    /// The high-water mark read when the node id was claimed: the final mark never goes below it.
    claimed_hwm: AtomicU64,
    stamp: AtomicU64,
    ceiling: AtomicU64,
    reserved_ns: AtomicU64,
    /// Monotonic ns until which the lease is surely held.
    deadline: AtomicU64,
    lost: AtomicBool,
    lost_reason: Mutex<Option<String>>,
    stop: AtomicBool,
    /// Test hook: renewals and reservations stop, as in a process that is frozen or cut off.
    frozen: AtomicBool,
    /// Monotonic ns before which the hot path does not call a failing store.
    backoff_until: AtomicU64,
    /// Whether the last call to the store answered: while it does not, a caller that needs time
    /// reserved is refused at once instead of waiting on the store.
    store_ok: AtomicBool,
    /// The last store error of the worker ([`Status::store_error`]).
    store_error: Mutex<Option<String>>,
    calls: AtomicU64,
    raise: Mutex<()>,
}

impl Shared {
    /// Whether this process is a forked copy of the one that joined: one relaxed load, for
    /// every id.
    #[inline]
    fn forked(&self) -> bool {
        idforge::shm::fork_generation() != self.fork_generation
    }

    /// [`Shared::forked`], or another process id (a child made without `fork()`'s handlers):
    /// for the paths that are not per id.
    fn forked_or_other_pid(&self) -> bool {
        self.forked() || std::process::id() != self.pid
    }

    /// The refusal in a forked child. Takes no lock: a lock held by one of the parent's threads
    /// at the fork stays held forever in the child.
    fn forked_error(&self) -> Error {
        Error::LeaseLost {
            node: self.node,
            reason: self.forked_reason(),
        }
    }

    fn forked_reason(&self) -> String {
        format!(
            "this process (pid {}) was forked from the holder of the lease (pid {}); a child shares neither the lease nor the stamp, so nothing is issued under them: join the fleet again in the child for a node id of its own",
            std::process::id(),
            self.pid
        )
    }

    /// Records the outcome of a store call of the worker: the error, or none after a success.
    fn note_store(&self, error: Option<&StoreError>) {
        *self.store_error.lock().unwrap_or_else(|e| e.into_inner()) = error.map(|e| e.to_string());
    }

    fn lose(&self, reason: impl Into<String>) {
        let mut r = self.lost_reason.lock().unwrap_or_else(|e| e.into_inner());
        if r.is_none() {
            *r = Some(reason.into());
        }
        self.lost.store(true, SeqCst);
    }

    fn lost_error(&self) -> Error {
        Error::LeaseLost {
            node: self.node,
            reason: self
                .lost_reason
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_else(|| "the lease was lost".into()),
        }
    }

    fn call<T>(
        &self,
        f: impl FnOnce(&dyn Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.calls.fetch_add(1, SeqCst);
        let r = f(self.store.as_ref());
        // IDFORGE_FLEET_TRACE=1 prints every store call and its outcome on stderr (read once).
        static TRACE: OnceLock<bool> = OnceLock::new();
        if *TRACE.get_or_init(|| std::env::var_os("IDFORGE_FLEET_TRACE").is_some()) {
            eprintln!(
                "fleet call at {} ms on {:?}: {}",
                mono_ns() / 1_000_000,
                std::thread::current().name(),
                r.as_ref().err().map_or("ok".to_string(), |e| e.to_string())
            );
        }
        r
    }

    /// The wall-clock time (the protocol's clock) of the lease's safe end: what a reservation
    /// must cover, so that a member cut off from the store issues until that deadline, never
    /// stopping sooner for want of reserved time.
    fn deadline_wall_ns(&self) -> u64 {
        let left = self.deadline.load(SeqCst).saturating_sub(mono_ns());
        self.opts.now_ns().saturating_add(left)
    }

    /// How far ahead of the lease's safe end time is reserved.
    fn ahead_ns(&self) -> u64 {
        self.opts.reserve_ahead.as_nanos() as u64
    }

    /// The lease's safe end: renewal sent at `sent` + TTL, less a tenth for clock-rate error.
    fn safe_deadline(&self, sent: u64) -> u64 {
        let ttl = self.ttl_ns.load(SeqCst);
        sent + ttl - ttl / 10
    }

    /// Notes the time to live a store granted: never more than asked, in whole seconds (etcd
    /// truncates), so the local deadline never outlives the lease.
    fn granted(&self, ttl: Duration) {
        let asked = Duration::from_secs(self.opts.ttl.as_secs().max(1));
        self.ttl_ns.store(ttl.min(asked).as_nanos() as u64, SeqCst);
    }

    /// Writes a reservation up to `ns` (only ever raising it). `Ok(false)`: fenced.
    fn reserve_to(&self, ns: u64) -> Result<bool, StoreError> {
        let _g = self.raise.lock().unwrap_or_else(|e| e.into_inner());
        self.reserve_to_locked(ns)
    }

    /// [`Shared::reserve_to`] with the `raise` lock held.
    fn reserve_to_locked(&self, ns: u64) -> Result<bool, StoreError> {
        if self.reserved_ns.load(SeqCst) >= ns {
            return Ok(true);
        }
        let token = self.token.load(SeqCst);
        let ok = self.call(|s| s.reserve(&self.opts.namespace, self.node, token, ns))?;
        if ok {
            self.reserved_ns.store(ns, SeqCst);
            self.ceiling
                .store(last_stamp_at(&self.opts.timebase, ns), SeqCst);
        } else {
            self.lose("another process holds the node id now (the lease expired)");
        }
        Ok(ok)
    }
}

/// The stamp cell of a member: its stamp in this process, its ceiling the reservation, and every
/// id refused once the lease may have expired.
struct LeasedCell(Arc<Shared>);

impl StampCell for LeasedCell {
    #[inline]
    fn load(&self) -> u64 {
        self.0.stamp.load(SeqCst)
    }

    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.0
            .stamp
            .compare_exchange_weak(current, new, SeqCst, SeqCst)
    }

    #[inline]
    fn ceiling(&self) -> u64 {
        self.0.ceiling.load(SeqCst)
    }

    fn raise_ceiling(&self, needed: u64) -> Result<u64, Error> {
        let s = &self.0;
        let unavailable = |why: &str| Error::LeaseLost {
            node: s.node,
            reason: format!(
                "no time could be reserved past {} ({why}); the store is retried in the background",
                idforge::time::format_unix_ns(i128::from(s.reserved_ns.load(SeqCst)), 3)
            ),
        };
        let refused = || {
            if s.forked_or_other_pid() {
                return Some(s.forked_error());
            }
            if s.lost.load(SeqCst) {
                return Some(s.lost_error());
            }
            if mono_ns() > s.deadline.load(SeqCst) {
                return Some(Error::LeaseLost {
                    node: s.node,
                    reason: "the lease could not be renewed before its deadline".into(),
                });
            }
            // While the store is failing, callers are refused at once, without a call each: no
            // caller waits on a store that does not answer, and no storm against it.
            if !s.store_ok.load(SeqCst) || mono_ns() < s.backoff_until.load(SeqCst) {
                return Some(unavailable("the coordination store is not answering"));
            }
            None
        };
        if let Some(e) = refused() {
            return Err(e);
        }
        // One attempt, one caller at a time. Callers that waited for the lock look again
        // before calling: another may have raised the ceiling meanwhile, or found the store
        // failing, and then they are refused at once instead of each making a call of its own
        // (an attack review: 8 threads on a stopped etcd waited one 2 s call each in turn, up
        // to 14 s). The worker keeps retrying in the background.
        let _g = s.raise.lock().unwrap_or_else(|e| e.into_inner());
        let ceiling = s.ceiling.load(SeqCst);
        if ceiling >= needed {
            return Ok(ceiling);
        }
        if let Some(e) = refused() {
            return Err(e);
        }
        let want = time_of(&s.opts.timebase, needed).max(s.deadline_wall_ns()) + s.ahead_ns();
        match s.reserve_to_locked(want) {
            Ok(true) => Ok(s.ceiling.load(SeqCst)),
            Ok(false) => Err(s.lost_error()),
            Err(e) => {
                s.store_ok.store(false, SeqCst);
                s.backoff_until.store(mono_ns() + 200_000_000, SeqCst);
                Err(unavailable(&e.to_string()))
            }
        }
    }

    #[inline]
    fn check_issued(&self, _now_ns: u64, _stamp: u64) -> Result<(), Error> {
        let s = &self.0;
        if s.forked() {
            return Err(s.forked_error());
        }
        if s.lost.load(SeqCst) {
            return Err(s.lost_error());
        }
        if mono_ns() > s.deadline.load(SeqCst) {
            return Err(Error::LeaseLost {
                node: s.node,
                reason: "the lease could not be renewed before its deadline".into(),
            });
        }
        Ok(())
    }
}

/// A process's membership: the node id it holds, the cell to open its scheme with, and a worker
/// thread that renews the lease and extends the reservation. Dropping it shuts down cleanly
/// ([`Member::shutdown`]).
///
/// The lease is the joining process's own. In a child made by `fork()`, every id of the leased
/// cell is refused ([`Error::LeaseLost`]: "this process … was forked from the holder of the
/// lease …; join the fleet again in the child"), [`Member::status`] says so, and shutting the
/// copy down or dropping it does nothing: the parent keeps its node id and goes on issuing.
pub struct Member {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("status", &self.status())
            .finish()
    }
}

/// Retries `f` with exponential backoff (50 ms doubling to 1 s) until `limit` has passed.
fn retry<T>(
    limit: Duration,
    mut f: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, (StoreError, Duration)> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        match f() {
            Ok(v) => return Ok(v),
            // A permission refused stays refused: say so now, not after the join timeout.
            Err(e @ StoreError::Denied(_)) => return Err((e, start.elapsed())),
            Err(e) if start.elapsed() + pause > limit => return Err((e, start.elapsed())),
            Err(_) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

impl Member {
    /// Joins the fleet: grants a lease, claims a free node id (never-used ids first, then the
    /// least recently used), waits a little if the clock is behind its high-water mark, and
    /// reserves time before anything is issued.
    ///
    /// # Errors
    /// [`FleetError::NamespaceFull`], [`FleetError::ClockBehind`], [`FleetError::Store`] when
    /// the store stays unreachable, [`FleetError::LeaseExpired`].
    pub fn join(store: Arc<dyn Store>, opts: FleetOptions) -> Result<Member, FleetError> {
        let ns = opts.namespace.clone();
        let limit = opts.join_timeout;
        let fail = |(source, waited): (StoreError, Duration)| FleetError::Store {
            namespace: ns.clone(),
            source,
            waited,
        };
        if let Some(found) = retry(limit, || store.bind_spec(&ns, &opts.spec())).map_err(fail)? {
            // Specs of idforge before the layout was recorded began with the epoch.
            return Err(if found.starts_with("epoch_ns=") {
                FleetError::LegacySpec {
                    namespace: ns,
                    found,
                    expected: opts.spec(),
                }
            } else {
                FleetError::SpecMismatch {
                    namespace: ns,
                    found,
                    expected: opts.spec(),
                }
            });
        }
        if !idforge::shm::watch_forks() {
            return Err(FleetError::ForksUndetectable);
        }
        let sent = mono_ns();
        let (lease, granted) = retry(limit, || store.grant(opts.ttl)).map_err(fail)?;
        let shared = Arc::new(Shared {
            store: store.clone(),
            node: 0,
            pid: std::process::id(),
            fork_generation: idforge::shm::fork_generation(),
            ttl_ns: AtomicU64::new(0),
            lease: AtomicI64::new(lease),
            token: AtomicI64::new(0),
            claimed_hwm: AtomicU64::new(0),
            stamp: AtomicU64::new(0),
            ceiling: AtomicU64::new(0),
            reserved_ns: AtomicU64::new(0),
            deadline: AtomicU64::new(0),
            lost: AtomicBool::new(false),
            lost_reason: Mutex::new(None),
            stop: AtomicBool::new(false),
            frozen: AtomicBool::new(false),
            backoff_until: AtomicU64::new(0),
            store_ok: AtomicBool::new(true),
            store_error: Mutex::new(None),
            calls: AtomicU64::new(1),
            raise: Mutex::new(()),
            opts: opts.clone(),
        });
        shared.granted(granted);
        shared.deadline.store(shared.safe_deadline(sent), SeqCst);
        let result = Self::claim(&shared, lease);
        let (node, claimed) = match result {
            Ok(c) => c,
            Err(e) => {
                let _ = store.revoke(lease);
                return Err(e);
            }
        };
        let mut shared = shared;
        // The node is fixed from here on.
        Arc::get_mut(&mut shared).expect("not shared yet").node = node;
        let tb = &opts.timebase;
        let hwm = claimed.hwm_ns.unwrap_or(0);
        shared.claimed_hwm.store(hwm, SeqCst);
        shared.token.store(claimed.token, SeqCst);
        // Every stamp whose time is at or before the mark counts as used.
        shared.stamp.store(last_stamp_at(tb, hwm), SeqCst);
        let first = shared.deadline_wall_ns().max(hwm) + shared.ahead_ns();
        match retry(limit, || shared.reserve_to(first)) {
            Ok(true) => {}
            Ok(false) => {
                let _ = store.revoke(lease);
                return Err(FleetError::LeaseExpired(ns));
            }
            Err(e) => {
                let _ = store.revoke(lease);
                return Err(fail(e));
            }
        }
        let worker_shared = shared.clone();
        let worker = std::thread::Builder::new()
            .name(format!("idforge-fleet-{node}"))
            .spawn(move || worker(&worker_shared))
            .expect("spawning the lease thread");
        Ok(Member {
            shared,
            worker: Some(worker),
        })
    }

    /// Claims a node id for `lease`: candidates in order, the clock checked against each one's
    /// high-water mark.
    fn claim(s: &Shared, lease: i64) -> Result<(u64, crate::store::Claimed), FleetError> {
        let opts = &s.opts;
        let ns = &opts.namespace;
        let fail = |(source, waited): (StoreError, Duration)| FleetError::Store {
            namespace: ns.clone(),
            source,
            waited,
        };
        let mut skipped = std::collections::BTreeSet::new();
        let mut least_behind: Option<Duration> = None;
        loop {
            let scan = retry(opts.join_timeout, || s.call(|st| st.scan(ns))).map_err(fail)?;
            let mut never: Vec<u64> = Vec::new();
            let mut used: Vec<(u64, u64)> = Vec::new();
            for n in 0..=opts.max_node {
                if scan.held.contains(&n) || skipped.contains(&n) || scan.corrupt.contains(&n) {
                    continue;
                }
                match scan.hwm.get(&n) {
                    None => never.push(n),
                    Some(h) => used.push((*h, n)),
                }
                if never.len() >= 64 {
                    break; // enough never-used candidates: no need to list a huge id space
                }
            }
            used.sort_unstable();
            // Members starting together begin at different never-used ids, so they do not all
            // race for the same one (a fleet-wide restart would cost claims quadratic in size).
            if !never.is_empty() {
                let spread = (std::process::id() as usize)
                    .wrapping_mul(31)
                    .wrapping_add(mono_ns() as usize);
                let k = spread % never.len();
                never.rotate_left(k);
            }
            let candidates: Vec<u64> = never
                .into_iter()
                .chain(used.into_iter().map(|(_, n)| n))
                .collect();
            if candidates.is_empty() {
                return Err(match least_behind {
                    Some(behind) => FleetError::ClockBehind {
                        namespace: ns.clone(),
                        behind,
                        max_wait: opts.max_clock_wait,
                    },
                    None => FleetError::NamespaceFull {
                        namespace: ns.clone(),
                        size: opts.max_node + 1,
                    },
                });
            }
            let mut lost_race = false;
            for n in candidates {
                let got = match retry(opts.join_timeout, || {
                    match s.call(|st| st.try_claim(ns, n, lease, &opts.holder)) {
                        // A mark that is not a number: this id is skipped, not retried.
                        Err(StoreError::Corrupt { .. }) => Ok(None),
                        other => other,
                    }
                }) {
                    Ok(g) => g,
                    Err(e) => return Err(fail(e)),
                };
                let Some(c) = got else {
                    lost_race = true;
                    continue; // taken since the scan: the next candidate
                };
                let hwm = c.hwm_ns.unwrap_or(0);
                let now = opts.now_ns();
                if now >= hwm {
                    return Ok((n, c));
                }
                let behind = Duration::from_nanos(hwm - now);
                if behind <= opts.max_clock_wait {
                    wait_for_clock(s, lease, hwm)?;
                    return Ok((n, c));
                }
                // Too far behind this id's mark: give it back (mark unchanged), try another.
                least_behind = Some(least_behind.map_or(behind, |b| b.min(behind)));
                skipped.insert(n);
                let _ = retry(opts.join_timeout, || {
                    s.call(|st| st.release(ns, n, c.token, hwm))
                });
            }
            // Every candidate was taken since the scan or given back: scan again (the held and
            // skipped ids drop out, so this ends with a claim or an error).
            let _ = lost_race;
        }
    }

    /// The cell to open the scheme with (`OpenOptions::cell`); its stamps are in the time base
    /// given in [`FleetOptions::timebase`].
    pub fn cell(&self) -> Arc<dyn StampCell> {
        Arc::new(LeasedCell(self.shared.clone()))
    }

    /// The node id held.
    pub fn node(&self) -> u64 {
        self.shared.node
    }

    /// Test hook: stops (or resumes) renewals and reservations, as if the worker were frozen or
    /// cut off from the store; issuing threads are not stopped.
    #[doc(hidden)]
    pub fn freeze_renewals(&self, on: bool) {
        self.shared.frozen.store(on, SeqCst);
        if let Some(w) = &self.worker {
            w.thread().unpark();
        }
    }

    /// What the member holds now.
    pub fn status(&self) -> Status {
        let s = &self.shared;
        if s.forked_or_other_pid() {
            return Status {
                namespace: s.opts.namespace.clone(),
                node: s.node,
                token: s.token.load(SeqCst),
                reserved_ns: s.reserved_ns.load(SeqCst),
                issuing: false,
                lost: Some(s.forked_reason()),
                store_calls: s.calls.load(SeqCst),
                store_error: None,
            };
        }
        let lost = s
            .lost_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Status {
            namespace: s.opts.namespace.clone(),
            node: s.node,
            token: s.token.load(SeqCst),
            reserved_ns: s.reserved_ns.load(SeqCst),
            issuing: lost.is_none() && mono_ns() <= s.deadline.load(SeqCst),
            lost,
            store_calls: s.calls.load(SeqCst),
            store_error: s
                .store_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    /// Stops issuing, records the time of the last stamp issued as the node id's high-water mark
    /// (never below the mark it was claimed with), and gives the node id back.
    ///
    /// # Errors
    /// [`StoreError`] when the final write fails: the reservation stays as the mark, which is
    /// safe (the next holder starts above it), and the lease expires on its own.
    pub fn shutdown(mut self) -> Result<(), StoreError> {
        self.stop_now()
    }

    fn stop_now(&mut self) -> Result<(), StoreError> {
        let s = &self.shared;
        if s.forked_or_other_pid() {
            // A forked child's copy: the lease is the parent's, which goes on issuing under it.
            // Giving it back would fence the parent; the renewal thread exists only in the
            // parent (joining it here would wait forever). Nothing to do.
            s.stop.store(true, SeqCst);
            std::mem::forget(self.worker.take());
            return Ok(());
        }
        if s.stop.swap(true, SeqCst) {
            return Ok(());
        }
        if let Some(w) = self.worker.take() {
            w.thread().unpark();
            let _ = w.join();
        }
        // After the worker is gone (a rejoin could otherwise clear it): no id passes from here.
        s.lose("the member was shut down");
        // Any issue that passed its check did so before `lost` was set, so its stamp is in the
        // cell now (sequentially consistent): the mark covers it.
        let last = time_of(&s.opts.timebase, s.stamp.load(SeqCst));
        let mark = last.max(s.claimed_hwm.load(SeqCst));
        let token = s.token.load(SeqCst);
        let ns = &s.opts.namespace;
        let lease = s.lease.load(SeqCst);
        let r = retry(Duration::from_secs(2), || {
            s.call(|st| st.release(ns, s.node, token, mark))
        });
        let _ = s.call(|st| st.revoke(lease));
        r.map(|_| ()).map_err(|(e, _)| e)
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.stop_now();
    }
}

/// How often the lease is renewed: `min(T/3, R/4)`, at least 20 ms.
fn renew_interval(opts: &FleetOptions) -> Duration {
    (opts.ttl / 3)
        .min(opts.reserve_ahead / 4)
        .max(Duration::from_millis(20))
}

/// Waits until the clock is past `hwm` (a mark a crashed holder reserved ahead, or a clock a
/// little behind), renewing the lease meanwhile: the wait may be longer than a short lease (up
/// to 3 s against 2 s), which would otherwise expire before the first reservation.
fn wait_for_clock(s: &Shared, lease: i64, hwm: u64) -> Result<(), FleetError> {
    let step = renew_interval(&s.opts);
    loop {
        let now = s.opts.now_ns();
        if now > hwm {
            return Ok(());
        }
        std::thread::sleep(Duration::from_nanos(hwm - now + 1_000_000).min(step));
        if s.opts.now_ns() > hwm {
            return Ok(());
        }
        let sent = mono_ns();
        match s.call(|st| st.keep_alive(lease)) {
            Ok(true) => s.deadline.store(s.safe_deadline(sent), SeqCst),
            Ok(false) => return Err(FleetError::LeaseExpired(s.opts.namespace.clone())),
            // The deadline decides: past it, nothing is issued until a renewal.
            Err(_) => {}
        }
    }
}

/// Renews the lease and extends the reservation until stopped; after a lost lease, claims the
/// same node id again if it is free (its mark, written by this member or a later holder, puts
/// the stamp above every id issued under it).
fn worker(s: &Shared) {
    let ttl = s.opts.ttl;
    let interval = renew_interval(&s.opts);
    let mut pause = interval;
    while !s.stop.load(SeqCst) {
        // Parking can return early (an unpark left by a scoped thread the store used, or a
        // spurious wake-up): sleep until the instant, woken only by `stop`.
        let until = Instant::now() + pause;
        while !s.stop.load(SeqCst) {
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::park_timeout(until - now);
        }
        if s.stop.load(SeqCst) {
            break;
        }
        if s.frozen.load(SeqCst) {
            continue;
        }
        let lease = s.lease.load(SeqCst);
        let sent = mono_ns();
        let renewed = s.call(|st| st.keep_alive(lease));
        s.store_ok.store(renewed.is_ok(), SeqCst);
        s.note_store(renewed.as_ref().err());
        match renewed {
            Ok(true) => {
                // The lease lives; is the node key still ours? An operator's `etcdctl del`
                // removes it under a live lease: stop at once, not at the next reservation.
                match s.call(|st| st.check_owner(&s.opts.namespace, s.node, s.token.load(SeqCst))) {
                    Ok(false) => {
                        s.lose("the node key was deleted or replaced in the store (by an operator?) while this process held it");
                        pause = interval;
                        continue;
                    }
                    Ok(true) => s.deadline.store(s.safe_deadline(sent), SeqCst),
                    Err(e) => {
                        s.store_ok.store(false, SeqCst);
                        s.note_store(Some(&e));
                    }
                }
                pause = interval;
            }
            Ok(false) => {
                s.lose("the lease expired");
                if !rejoin(s) {
                    pause = (pause * 2).min(ttl);
                    continue;
                }
                pause = interval;
            }
            Err(_) => {
                // Bounded exponential backoff: no storm against a store that is down.
                pause = (pause * 2).min(Duration::from_secs(2)).min(ttl / 2);
                continue;
            }
        }
        if s.lost.load(SeqCst) {
            continue;
        }
        // The reservation covers the lease's safe end and `R` beyond: cut off from the store,
        // the member issues until the deadline (0.9 T after its last renewal), not only until
        // its reservation runs out. Extended when less than `R/2` beyond the end is left.
        let cover = s.deadline_wall_ns();
        let ahead = s.ahead_ns();
        if s.reserved_ns.load(SeqCst) < cover + ahead / 2 {
            if let Err(e) = s.reserve_to(cover + ahead) {
                s.store_ok.store(false, SeqCst);
                s.note_store(Some(&e));
            }
        }
    }
}

/// After the lease was lost: a new lease, the same node id if nobody took it, the stamp raised
/// above its mark, a new reservation. Returns whether the member issues again.
fn rejoin(s: &Shared) -> bool {
    if s.stop.load(SeqCst) {
        return false;
    }
    let ns = &s.opts.namespace;
    let sent = mono_ns();
    let Ok((lease, granted)) = s.call(|st| st.grant(s.opts.ttl)) else {
        return false;
    };
    s.granted(granted);
    let claimed = match s.call(|st| st.try_claim(ns, s.node, lease, &s.opts.holder)) {
        Ok(Some(c)) => c,
        _ => {
            let _ = s.call(|st| st.revoke(lease));
            s.lose("another process took the node id after the lease expired");
            return false;
        }
    };
    let tb = &s.opts.timebase;
    let hwm = claimed.hwm_ns.unwrap_or(0);
    s.stamp.fetch_max(last_stamp_at(tb, hwm), SeqCst);
    s.claimed_hwm.fetch_max(hwm, SeqCst);
    s.lease.store(lease, SeqCst);
    s.token.store(claimed.token, SeqCst);
    s.deadline.store(s.safe_deadline(sent), SeqCst);
    let want = s.deadline_wall_ns().max(hwm) + s.ahead_ns();
    {
        // The old reservation belonged to the old token: write the new one under the new token
        // (above the mark read with the claim, so it raises it).
        let _g = s.raise.lock().unwrap_or_else(|e| e.into_inner());
        match s.call(|st| st.reserve(ns, s.node, claimed.token, want)) {
            Ok(true) => {
                s.reserved_ns.store(want, SeqCst);
                s.ceiling.store(last_stamp_at(tb, want), SeqCst);
            }
            _ => return false,
        }
    }
    *s.lost_reason.lock().unwrap_or_else(|e| e.into_inner()) = None;
    s.lost.store(false, SeqCst);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_and_times_convert_at_tick_boundaries() {
        let tb = Timebase {
            epoch_ns: 1_000,
            tick_ns: 1_000_000,
            time_bits: 41,
            counter_bits: 12,
        };
        assert_eq!(last_stamp_at(&tb, 999), 0);
        assert_eq!(last_stamp_at(&tb, 1_000), 4095);
        assert_eq!(time_of(&tb, 4095), 1_000);
        assert_eq!(time_of(&tb, 4096), 1_001_000);
        // The stamp after the last one at `ns` has a later time.
        for ns in [1_000, 5_000_000, 123_456_789] {
            assert!(time_of(&tb, last_stamp_at(&tb, ns)) <= ns);
            assert!(time_of(&tb, last_stamp_at(&tb, ns) + 1) > ns);
        }
    }
}
