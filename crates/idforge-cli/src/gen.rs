//! `idforge gen`: arguments → a checked plan → ids. Every scheme opens through the library's
//! `schemes::open`; this module only turns flags and environment variables into its options.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Args, ValueEnum};
use idforge::schemes::catalog::{Identity, Kind};
use idforge::schemes::locality;
use idforge::schemes::open::{OpenOptions, Opened};
use idforge::{OnClockBehind, OnExhausted, Policy, RandomSource, StateOptions};

use crate::usage;

#[derive(Args, Debug)]
pub struct GenArgs {
    /// The scheme (see the list below).
    #[arg(value_parser = crate::names::SchemeName, hide_possible_values = true)]
    scheme: String,
    /// How many ids to generate.
    #[arg(short = 'n', long = "count", default_value_t = 1)]
    count: u64,
    /// Node id for schemes with a node field, the tag for nanots (falls back to IDFORGE_NODE).
    /// Required where the scheme has a node: idforge never picks a random node.
    #[arg(long)]
    node: Option<u64>,
    /// Output format: dec, hex, base32, uuid, ulid, xid or typeid (default: the format's own text
    /// for ulid, tsid (base32), objectid (hex), xid and typeid, uuid for UUID schemes, dec
    /// otherwise); for
    /// nanots and nanots-host also `time` (2021-12-28T14:07:02.954100128); ksuid ids are 160
    /// bits, written only as KSUID text (27 base62 characters, format `ksuid`).
    #[arg(long, short = 'f')]
    format: Option<String>,
    /// typeid (or --format typeid): the TypeID prefix, e.g. `user` for user_01h455vb4pex5vsknk084sn02q;
    /// empty or up to 63 of a-z and `_`, starting and ending with a letter. Without it, the
    /// bare 26-character suffix.
    #[arg(long)]
    prefix: Option<String>,
    /// Layout of the custom scheme: fields from the most significant bit down, then options.
    /// Example: time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z
    #[arg(long)]
    layout: Option<String>,
    /// Host-wide: keep the sequencer's stamp in a state file shared by every process of this
    /// host that uses the same file, so their ids never collide and a restart continues after the
    /// last id. The file is --state, else IDFORGE_STATE, else the default location:
    /// $IDFORGE_STATE_DIR, else ~/.local/state/idforge with the home directory from the password
    /// database. XDG_STATE_HOME and HOME are not followed: two shells with different values would
    /// use two files for one scheme and node, and their ids would collide. The file and its
    /// directory must be yours and not writable by others (see --state-mode).
    #[arg(long)]
    shared: bool,
    /// Print the path of the state file this command would use (with --shared), and exit.
    #[arg(long)]
    state_path: bool,
    /// The state file for --shared (implies --shared; falls back to IDFORGE_STATE).
    #[arg(long, value_name = "PATH")]
    state: Option<PathBuf>,
    /// With --shared: before issuing past a persisted mark, sync a new mark one second ahead to
    /// disk, so that even after a power loss and a clock stepped back no id repeats.
    #[arg(long)]
    durable: bool,
    /// Share the state file on purpose: permission bits of a newly created file, in octal (e.g.
    /// 660 for a group). An existing file or directory writable by group or others, or owned by
    /// another user, is then accepted as far as this mode allows; without it such files are
    /// refused (default: 600, only this user).
    #[arg(long, value_name = "OCTAL")]
    state_mode: Option<String>,
    /// nanots-host: this host's id, 0-99 (or 0-999 with --host-digits 3); falls back to
    /// IDFORGE_HOST.
    #[arg(long)]
    host: Option<u64>,
    /// nanots-host: decimal digits for the host id: 2 (100 hosts, 100 ns resolution; the
    /// default) or 3 (1000 hosts, 1 us resolution).
    #[arg(long)]
    host_digits: Option<u32>,
    /// Generate on a clock fixed at this RFC 3339 time (backfills, reproducible examples): the first
    /// id is at that time and the counter carries on into later ticks as needed. With --shared it
    /// needs its own --state file, and a state file starts in the tick after the one it was made
    /// in (a new file never reissues that tick's ids), so its first id is one tick after this time.
    #[arg(long)]
    at: Option<String>,
    /// When a tick's counter runs out, run ahead of the wall clock (up to --max-lead) instead of
    /// waiting for the next tick.
    #[arg(long)]
    run_ahead: bool,
    /// How far ids may run ahead of the wall clock, in milliseconds (default 1000). Every process
    /// sharing a state file must use the same --run-ahead, --max-lead and --on-clock-behind.
    #[arg(long, value_name = "MS")]
    max_lead: Option<u64>,
    /// When the clock is further behind the last id than --max-lead: fail (default) or wait.
    #[arg(long, value_enum)]
    on_clock_behind: Option<BehindArg>,
    /// uuid7, uprotocol: draw random bits from a fast non-cryptographic generator (xoshiro)
    /// instead of the default ChaCha12, as RFC 9562 §6.9 recommends. Uniqueness does not depend
    /// on it; predictability of the random bits does.
    #[arg(long)]
    fast_random: bool,
    /// Where ids take their time from: auto (the default: the time-stamp counter calibrated
    /// against CLOCK_REALTIME every 200 us for millisecond layouts, off by at most 50 us, a
    /// step of the system clock showing within 200 us; CLOCK_REALTIME for nanots), precise
    /// (CLOCK_REALTIME for every id), counter (the calibrated counter for every scheme, nanots
    /// included: nanots then reaches its capacity, its times within 50 us of CLOCK_REALTIME) or
    /// ticker (a value a background thread refreshes every 100 us: the cheapest, lagging without
    /// bound on an overloaded machine). Uniqueness never depends on the clock.
    #[arg(long, value_enum, default_value_t = ClockArg::Auto)]
    clock: ClockArg,
    /// Show progress on stderr (default: when stderr is a terminal and COUNT >= 1,000,000).
    #[arg(long)]
    progress: bool,
    /// Lease the node id (or nanots-host host id) from etcd instead of --node: ENDPOINTS is a
    /// comma-separated list of client URLs, https:// with TLS (falls back to IDFORGE_ETCD). The process holds the id
    /// under a lease while it runs, reserves time ahead in etcd, and gives the id back at the end
    /// (docs/FLEET.md). Needs a build with the `etcd` feature.
    #[arg(long, value_name = "ENDPOINTS")]
    etcd: Option<String>,
    #[command(flatten)]
    etcd_access: crate::fleet::EtcdAccess,
    /// With --etcd: the id space's name (default: the scheme's name). Every process generating
    /// ids that must not collide uses the same namespace; two namespaces are two id spaces.
    #[arg(long, value_name = "NAME")]
    namespace: Option<String>,
    /// With --etcd: the lease's time to live in seconds (default 10): how long a crashed
    /// process's node id stays unavailable; without reaching etcd a process issues for 0.9 of it
    /// after its last renewal, then fails.
    #[arg(long, value_name = "SECS")]
    lease_ttl: Option<u64>,
    /// Take the node id from this host's name, as a Kubernetes StatefulSet names its pods
    /// (`orders-3` → 3).
    #[arg(long)]
    node_from_hostname: bool,
    /// locality: sequential mode, so ids made in the same 10 minutes on any machine share their
    /// first characters (one shard); the default variable mode spreads them over all shards.
    #[arg(long)]
    sequential: bool,
    /// locality: the process id to write, 0 to 65535 (falls back to IDFORGE_PID, then this
    /// process's id modulo 65536). Set it in containers, where every process may be PID 1.
    #[arg(long, value_name = "N")]
    pid: Option<String>,
    /// locality: the MAC address whose last 28 bits to write, aa:bb:cc:dd:ee:ff, or the 28-bit
    /// fragment as up to 7 hex digits as `inspect` prints it (falls back to IDFORGE_MAC, then the
    /// machine's first non-loopback MAC).
    #[arg(long, value_name = "MAC")]
    mac: Option<String>,
}

/// `--clock`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockArg {
    Auto,
    Precise,
    Counter,
    Ticker,
}

impl From<ClockArg> for idforge::schemes::open::ClockChoice {
    fn from(c: ClockArg) -> Self {
        use idforge::schemes::open::ClockChoice;
        match c {
            ClockArg::Auto => ClockChoice::Auto,
            ClockArg::Precise => ClockChoice::Precise,
            ClockArg::Counter => ClockChoice::Counter,
            ClockArg::Ticker => ClockChoice::Ticker,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum BehindArg {
    Fail,
    Wait,
}

/// What `gen` will do, checked before anything is opened.
struct Plan {
    /// etcd endpoints, namespace and lease TTL, when the node id is leased.
    fleet: Option<crate::fleet::FleetPlan>,
    kind: Kind,
    opts: OpenOptions,
    count: u64,
    format: Option<String>,
    prefix: Option<String>,
    progress: bool,
    print_state_path: bool,
}

/// Runs `idforge gen`.
pub fn run(a: GenArgs) -> anyhow::Result<ExitCode> {
    let plan = plan(a)?;
    if plan.print_state_path {
        let st = plan.opts.state.as_ref().expect("checked by plan");
        println!("{}", st.path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut opts = plan.opts;
    let held = match &plan.fleet {
        Some(f) => {
            let held = Arc::new(Mutex::new(None));
            // Held while joining: a SIGTERM or SIGINT that comes meanwhile is handled once the
            // node id is held (or joining failed).
            let mut slot = lock(&held);
            release_on_signal(held.clone(), crate::fleet::leave)?;
            *slot = Some(crate::fleet::join(f, &plan.kind, &mut opts)?);
            drop(slot);
            Some(held)
        }
        None => None,
    };
    let written = (|| {
        let g = Opened::open(&plan.kind, &opts)?;
        warn_if_not_signed64(&plan.kind, opts.node);
        let format = g.text_format_prefixed(plan.format.as_deref(), plan.prefix.as_deref())?;
        crate::output::write_ids(&g, plan.count, format, plan.progress)
    })();
    if let Some(held) = held {
        // Held while giving the node id back: a signal now waits for it, then ends the process.
        let mut slot = lock(&held);
        if let Some(m) = slot.take() {
            crate::fleet::leave(m)?;
        }
    }
    written?;
    Ok(ExitCode::SUCCESS)
}

/// Says so on standard error when the node makes ids that do not fit a signed 64-bit integer
/// (`global-id` from node 512): PostgreSQL `bigint`, Java `long` and MySQL `BIGINT` refuse them.
fn warn_if_not_signed64(kind: &Kind, node: Option<u64>) {
    if let (Kind::Layout(scheme), Some(node)) = (kind, node) {
        if let idforge::Signed64::NodesBelow(limit) = scheme.layout().signed64() {
            if u128::from(node) >= limit {
                eprintln!(
                    "idforge: warning: {} ids of node {node} set bit 63: they do not fit a signed 64-bit integer (PostgreSQL bigint, Java long, MySQL BIGINT); store them unsigned or as text, or use a node below {limit}",
                    scheme.name()
                );
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// With a node id leased from etcd: SIGTERM and SIGINT stop issuing and give the node id back
/// (the last id's time as its mark, the node key deleted, the lease revoked) instead of leaving
/// it taken until the lease expires; then the process ends by the signal, as without a handler
/// (exit status 143 or 130 in a shell).
///
/// The two signals are blocked in this thread and so in every thread started after it (the
/// member's renewal thread among them); a thread of its own waits for them with `sigwait`, so a
/// main thread blocked writing to a full pipe does not delay the release.
fn release_on_signal<M: Send + 'static>(
    held: Arc<Mutex<Option<M>>>,
    leave: fn(M) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    // SAFETY: a zeroed sigset_t is a valid argument to sigemptyset, which initialises it; the
    // calls get valid pointers to locals.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            anyhow::bail!(
                "cannot block SIGTERM and SIGINT to give the node id back on them: {}",
                io::Error::from_raw_os_error(rc)
            );
        }
        set
    };
    std::thread::Builder::new()
        .name("idforge-signals".into())
        .spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: waits for one of the signals of `set`, blocked in every thread.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                return;
            }
            // Whoever holds the membership gives it back: this thread, or the main thread
            // already doing so (then this waits for it).
            if let Some(m) = lock(&held).take() {
                if let Err(e) = leave(m) {
                    eprintln!("idforge: error: {e:#}");
                }
            }
            // SAFETY: the default action for `sig`, unblocked in this thread, then raised in
            // it: the process ends by the signal.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, sig);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::raise(sig);
            }
            std::process::exit(128 + sig);
        })?;
    Ok(())
}

fn plan(a: GenArgs) -> anyhow::Result<Plan> {
    let kind = Kind::from_name(&a.scheme, a.layout.as_deref())?;
    let identity = kind.identity();
    if identity != Identity::PidAndMac && (a.sequential || a.pid.is_some() || a.mac.is_some()) {
        usage!(
            "--sequential, --pid and --mac apply only to the locality scheme, not {}",
            kind.name()
        );
    }
    if identity != Identity::Host && (a.host.is_some() || a.host_digits.is_some()) {
        usage!(
            "--host and --host-digits apply only to nanots-host, not {}",
            kind.name()
        );
    }
    let node = match identity {
        Identity::Host => {
            if a.node.is_some() {
                usage!("nanots-host takes --host (and --host-digits), not --node");
            }
            a.host.map_or_else(|| env_u64("IDFORGE_HOST", "a host id"), |h| Ok(Some(h)))?
        }
        // IDFORGE_NODE only where the scheme has a node field, so a machine-wide setting does
        // not break `gen uuid7`; --node is taken as given (and refused where it does not apply).
        Identity::Node { .. } if a.node_from_hostname => {
            if a.node.is_some() {
                usage!("--node and --node-from-hostname name the node twice: give one");
            }
            let host = idforge_fleet::node::hostname().unwrap_or_default();
            match idforge_fleet::node::statefulset_ordinal(&host) {
                Some(n) => Some(n),
                None => usage!("--node-from-hostname: the host name {host:?} does not end in a StatefulSet ordinal (name-3)"),
            }
        }
        Identity::Node { .. } | Identity::Tag { .. } => a
            .node
            .map_or_else(|| env_u64("IDFORGE_NODE", "a node id"), |n| Ok(Some(n)))?,
        Identity::PidAndMac if a.node.is_some() => usage!(
            "locality takes no --node: its ids are kept apart by --pid, --mac and a 32-bit counter per millisecond"
        ),
        Identity::None | Identity::PidAndMac => a.node,
    };
    let at_ns =
        a.at.as_deref()
            .map(idforge::time::parse_rfc3339)
            .transpose()?;
    let mut opts = OpenOptions {
        node,
        host_digits: a.host_digits,
        sequential: a.sequential,
        at_ns,
        clock: a.clock.into(),
        random: if a.fast_random {
            RandomSource::Fast
        } else {
            RandomSource::Secure
        },
        ..OpenOptions::default()
    };
    opts.policy = policy(&a, &kind)?;
    if identity == Identity::PidAndMac {
        opts.pid = pid(a.pid.clone())?;
        opts.mac_fragment = mac(a.mac.clone())?;
    }
    let fleet = crate::fleet::plan(
        a.etcd.clone(),
        a.etcd_access.clone(),
        a.namespace.clone(),
        a.lease_ttl,
        &kind,
        opts.node.is_some() || a.node_from_hostname,
        a.host_digits,
    )?;
    if fleet.is_some() && (a.shared || a.state.is_some() || a.at.is_some()) {
        usage!("--etcd leases the node id and keeps the stamp in this process: --shared, --state and --at do not go with it");
    }
    opts.state = state(&a, &kind, &opts)?;
    Ok(Plan {
        fleet,
        kind,
        opts,
        count: a.count,
        format: a.format,
        prefix: a.prefix,
        progress: a.progress || (a.count >= 1_000_000 && io::stderr().is_terminal()),
        print_state_path: a.state_path,
    })
}

/// The policy: the scheme's default with the command line's changes (`None`: no change).
fn policy(a: &GenArgs, kind: &Kind) -> anyhow::Result<Option<Policy>> {
    if !(a.run_ahead || a.max_lead.is_some() || a.on_clock_behind.is_some()) {
        return Ok(None);
    }
    let mut p = match kind {
        Kind::Layout(s) => s.default_policy(),
        Kind::NanoTsHost => idforge::schemes::nanots::POLICY,
        Kind::Locality => usage!("locality takes no --run-ahead, --max-lead or --on-clock-behind: its ids are kept apart by --pid, --mac and a 32-bit counter per millisecond"),
        Kind::Uuid4 => usage!("uuid4 takes no --run-ahead, --max-lead or --on-clock-behind: its ids are 122 random bits, with no time or counter"),
    };
    if a.at.is_some() {
        usage!("--at runs on a fixed clock with no bound on the lead; --run-ahead, --max-lead and --on-clock-behind do not apply");
    }
    if a.run_ahead {
        p.on_exhausted = OnExhausted::RunAhead;
    }
    if let Some(ms) = a.max_lead {
        p.max_lead = Duration::from_millis(ms);
    }
    if let Some(b) = a.on_clock_behind {
        p.on_clock_behind = match b {
            BehindArg::Fail => OnClockBehind::Fail,
            BehindArg::Wait => OnClockBehind::Wait,
        };
    }
    Ok(Some(p))
}

/// The state file options, when --shared or --state ask for a host-wide generator.
fn state(a: &GenArgs, kind: &Kind, opts: &OpenOptions) -> anyhow::Result<Option<StateOptions>> {
    if !(a.shared || a.state.is_some()) {
        if a.durable || a.state_mode.is_some() || a.state_path {
            usage!("--durable, --state-mode and --state-path apply to host-wide generation: add --shared");
        }
        return Ok(None);
    }
    if !kind.host_wide() {
        usage!(
            "{} cannot be host-wide (--shared, --state): {}",
            kind.name(),
            match kind {
                Kind::Locality => "its ids are kept apart by --pid and --mac, not a shared stamp",
                Kind::Uuid4 => "its ids are 122 random bits, with no stamp to share",
                _ => "it is a per-process singleton; use uprotocol (UUIDv7) with --shared",
            }
        );
    }
    let own_policy = a.run_ahead || a.max_lead.is_some() || a.on_clock_behind.is_some();
    if (own_policy || a.durable)
        && a.state.is_none()
        && std::env::var_os("IDFORGE_STATE").is_none_or(|v| v.is_empty())
    {
        // The fingerprint of the file's first user stays in it: on the scheme's default file a
        // policy of its own refused every default generator of the host (the Python and Node.js
        // packages' too) until the file was deleted.
        usage!(
            "--run-ahead, --max-lead, --on-clock-behind and --durable with --shared need a state \
             file of their own: add --state PATH (every process with these settings uses it); on \
             the scheme's default file, which every default generator of the host uses, they \
             would refuse them (or be refused by them)"
        );
    }
    if a.at.is_some() && a.state.is_none() {
        // A fixed clock may be far from the wall clock: on the default file it would leave a
        // stamp that blocks (or is blocked by) the wall-clock runs of this host.
        usage!("--at with --shared needs its own state file: add --state PATH (not the file wall-clock runs use)");
    }
    let path = match &a.state {
        Some(p) => p.clone(),
        // The file the language packages' generators use too (one rule for all).
        None => idforge::schemes::placement::env_state_path(kind, opts)?,
    };
    let mut st = StateOptions::new(path);
    if let Some(m) = &a.state_mode {
        let Some(mode) = u32::from_str_radix(m.trim_start_matches("0o"), 8)
            .ok()
            .filter(|m| *m <= 0o777)
        else {
            usage!("--state-mode {m:?} is not permission bits: use octal, e.g. 600 or 660");
        };
        st = st.shared_mode(mode);
    }
    st.durable = a.durable;
    Ok(Some(st))
}

/// A non-negative integer from an environment variable, if set.
fn env_u64(var: &str, what: &str) -> anyhow::Result<Option<u64>> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => match v.trim().parse() {
            Ok(n) => Ok(Some(n)),
            Err(_) => usage!("{var}={v:?} is not {what}: set it to a non-negative integer"),
        },
        _ => Ok(None),
    }
}

/// A flag's value, else its environment variable's, with where it came from.
fn flag_or_env(flag: Option<String>, name: &str, var: &str) -> Option<(String, String)> {
    flag.map(|v| (v, name.to_string())).or_else(|| {
        std::env::var(var)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (v, var.to_string()))
    })
}

fn pid(flag: Option<String>) -> anyhow::Result<Option<u64>> {
    let Some((v, source)) = flag_or_env(flag, "--pid", "IDFORGE_PID") else {
        return Ok(None);
    };
    match v.trim().parse::<u64>() {
        Ok(p) if p <= u64::from(u16::MAX) => Ok(Some(p)),
        Ok(p) => usage!("{source}: {}", idforge::Error::PidOutOfRange { pid: p }),
        Err(_) => usage!("{source} {v:?} is not a process id: use an integer from 0 to 65535"),
    }
}

fn mac(flag: Option<String>) -> anyhow::Result<Option<u64>> {
    let Some((v, source)) = flag_or_env(flag, "--mac", "IDFORGE_MAC") else {
        return Ok(None);
    };
    let t = v.trim();
    if t.contains(':') || t.contains('-') {
        return match locality::parse_mac(t) {
            Ok(m) => Ok(Some(u64::from(locality::mac_fragment(m)))),
            Err(e) => usage!("{source}: {e}"),
        };
    }
    match u64::from_str_radix(t, 16) {
        Ok(f) if f <= u64::from(locality::MAX_MAC_FRAGMENT) => Ok(Some(f)),
        Ok(f) => usage!("{source}: {}", idforge::Error::MacFragmentOutOfRange { fragment: f }),
        Err(_) => usage!("{source} {v:?} is not a MAC address: write aa:bb:cc:dd:ee:ff, or the 28-bit fragment as up to 7 hex digits (d537a50)"),
    }
}
