//! `idforge`: generate unique ids in any scheme, decode them, list the schemes.

use std::io::{self, BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

mod torture;

use clap::{Args, Parser, Subcommand, ValueEnum};
use idforge::inspect::{inspect_locality, inspect_nanots_host};
use idforge::schemes::catalog::{self, Kind};
use idforge::schemes::locality::{self, LocalityBuilder, LocalityGenerator};
use idforge::schemes::nanots;
use idforge::schemes::uprotocol_v8;
use idforge::text::{self, Format};
use idforge::{
    inspect, Clock, Decoded, Error, Generator, ManualClock, OnClockBehind, OnExhausted, Policy,
    ProcessStamp, RandomSource, Scheme, Sequencer, StampCell, StateOptions, WallClock,
};

/// Unique ids in every layout that matters: UUIDv7, uProtocol, GlobalId, Snowflake, Sonyflake,
/// Groupon's Locality UUID and custom layouts, from one lock-free engine.
#[derive(Parser, Debug)]
#[command(name = "idforge", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate ids, one per line.
    #[command(
        after_help = "Examples:\n  idforge gen uuid7 -n 5\n  idforge gen snowflake --node 7 -n 3 --format hex\n  idforge gen global-id --node 18 --at 2024-01-01T00:00:00Z -n 3\n  idforge gen custom --layout time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z --node 1\n  idforge gen locality -n 3\n  idforge gen locality --sequential --pid 7 --mac 02:42:ac:11:00:02 -n 3"
    )]
    Gen(GenArgs),
    /// Decode ids into their parts (time, node, counter, version).
    #[command(
        after_help = "Examples:\n  idforge inspect 017f22e2-79b0-7cc3-98c4-dc0c0c07398f\n  idforge inspect --scheme snowflake --json 1541815603606036480\n  idforge gen uuid7 -n 3 | idforge inspect -\n  idforge inspect --json 20be0ffc-314a-bd53-7a50-013a65ca76d2"
    )]
    Inspect(InspectArgs),
    /// List every scheme with its layout, capacity and the year it runs out.
    Schemes {
        /// One JSON object per scheme (an array).
        #[arg(long)]
        json: bool,
    },
    /// Run everything at once for a bounded time (processes killed and restarted on a shared
    /// state file, forks, oversubscribed threads, clock jumps) and print one summary.
    Torture(torture::TortureArgs),
    /// Internal: one fork round of `torture`.
    #[command(hide = true)]
    TortureFork {
        /// Ids per process after the fork.
        #[arg(long)]
        count: usize,
        /// Directory for the ids.
        #[arg(long)]
        out: std::path::PathBuf,
        /// The generator: uuid7, or snowflake running ahead of the clock.
        #[arg(long, value_enum, default_value = "uuid7")]
        scheme: torture::ForkScheme,
    },
}

#[derive(Args, Debug)]
struct GenArgs {
    /// The scheme: uuid7, uprotocol, uprotocol-v8, global-id, global-id-128, snowflake, sonyflake,
    /// locality, or custom (with --layout).
    scheme: String,
    /// How many ids to generate.
    #[arg(short = 'n', long = "count", default_value_t = 1)]
    count: u64,
    /// Node id for schemes with a node field (falls back to IDFORGE_NODE). Required there:
    /// idforge never picks a random node.
    #[arg(long)]
    node: Option<u64>,
    /// Output format: dec, hex, base32 or uuid (default: uuid for UUID schemes, dec otherwise);
    /// for nanots and nanots-host also `time` (2021-12-28T14:07:02.954100128).
    #[arg(long, short = 'f')]
    format: Option<String>,
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
    state: Option<std::path::PathBuf>,
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
    /// nanots-host: decimal digits for the host id: 2 (100 hosts, 100 ns resolution) or 3 (1000
    /// hosts, 1 us resolution).
    #[arg(long, default_value_t = 2)]
    host_digits: u32,
    /// Generate on a clock fixed at this RFC 3339 time (backfills, reproducible examples): the first
    /// id is at that time and the counter carries on into later ticks as needed.
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
    /// Show progress on stderr (default: when stderr is a terminal and COUNT >= 1,000,000).
    #[arg(long)]
    progress: bool,
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

#[derive(ValueEnum, Clone, Copy, Debug)]
enum BehindArg {
    Fail,
    Wait,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// Ids to decode; `-` reads ids from standard input, one per line, as does giving none when
    /// standard input is not a terminal.
    ids: Vec<String>,
    /// The scheme of the ids. Needed for integer ids; UUIDs are recognised by their version (8:
    /// uprotocol-v8, b: locality), except version 7: uuid7, uprotocol and other libraries use its
    /// bits differently, so without --scheme uuid7 or --scheme uprotocol only its time and raw
    /// rand_a/rand_b bits are shown.
    #[arg(long, short = 's')]
    scheme: Option<String>,
    /// Layout of the custom scheme (see `idforge gen --help`).
    #[arg(long)]
    layout: Option<String>,
    /// The ids' format: dec, hex, base32 or uuid (as `gen --format` writes them). Without it the
    /// format is detected, and text that could be two (16 digits: decimal or 64-bit hex) is
    /// refused with the choices.
    #[arg(long, short = 'f')]
    format: Option<Format>,
    /// Print one JSON object per id (ids as strings; unix_ms and unix_ns as integers).
    #[arg(long)]
    json: bool,
    /// nanots-host: decimal digits of the host id (2 or 3).
    #[arg(long, default_value_t = 2)]
    host_digits: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !stdout_is_open() {
        // Rust drops writes to a closed stdout without an error, and a file opened later would
        // take its descriptor: refuse before anything is made or opened.
        eprintln!("idforge: error: standard output is closed, so its output would be lost; redirect it (to /dev/null to discard it)");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Gen(a) => gen(a),
        Command::Inspect(a) => inspect_cmd(a),
        Command::Schemes { json } => schemes(json),
        Command::Torture(a) => torture::run(a),
        Command::TortureFork { count, out, scheme } => torture::fork_child(&out, count, scheme),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("idforge: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Whether file descriptor 1 was closed when the process started. The Rust runtime puts
/// /dev/null on a closed stdout before `main` runs (and drops writes to a closed one without an
/// error), so it is looked at earlier, by a constructor in `.init_array`.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
#[used]
#[link_section = ".init_array"]
static LOOK_AT_STDOUT: extern "C" fn() = {
    extern "C" fn look() {
        // SAFETY: F_GETFD only reads the descriptor's flags; no memory is passed.
        let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
        STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
    }
    look
};

/// Whether standard output was open when the process started.
fn stdout_is_open() -> bool {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    if STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        io::stdout().as_fd().try_clone_to_owned().is_ok()
    }
    #[cfg(not(unix))]
    true
}

/// A reader that went away (`| head`): not an error. Any other write error is.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<io::Error>()
        .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

/// The scheme named on the command line, with `--layout` for `custom`.
/// A bit-layout scheme by name (through the library's catalog).
fn resolve_scheme(name: &str, layout: Option<&str>) -> Result<Scheme, Error> {
    match Kind::from_name(name, layout)? {
        Kind::Layout(s) => Ok(s),
        other => Err(Error::UnknownScheme(format!(
            "{:?} here (it is not a bit layout)",
            other.name()
        ))),
    }
}

fn env_node() -> anyhow::Result<Option<u64>> {
    match std::env::var("IDFORGE_NODE") {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map(Some).map_err(|_| {
            anyhow::anyhow!("IDFORGE_NODE={v:?} is not a node id: set it to a non-negative integer")
        }),
        _ => Ok(None),
    }
}

fn gen(a: GenArgs) -> anyhow::Result<ExitCode> {
    let scheme = match Kind::from_name(&a.scheme, a.layout.as_deref())? {
        Kind::Locality => return gen_locality(a),
        kind if a.sequential || a.pid.is_some() || a.mac.is_some() => anyhow::bail!(
            "--sequential, --pid and --mac apply only to the locality scheme, not {}",
            kind.name()
        ),
        Kind::NanoTsHost => return gen_nanots_host(a),
        Kind::Layout(scheme) => scheme,
    };
    if a.host.is_some() {
        anyhow::bail!("--host applies only to nanots-host, not {}", scheme.name());
    }
    let (format, time_text) = output_format(a.format.as_deref(), &scheme)?;
    let layout = scheme.layout();
    text::check_format(
        format,
        layout.bits,
        scheme.uuid_version().is_some(),
        scheme.name(),
    )?;
    // --node is taken as given; IDFORGE_NODE only where the scheme has a node field, so a
    // machine-wide setting does not break `gen uuid7`.
    let node = match a.node {
        Some(n) => Some(n),
        None if scheme.needs_node() => env_node()?,
        None => None,
    };
    let policy = policy_from(&a, scheme.default_policy());
    let random = if a.fast_random {
        RandomSource::Fast
    } else {
        RandomSource::Secure
    };
    let out = Output {
        count: a.count,
        format,
        bits: layout.bits,
        progress: a.progress || (a.count >= 1_000_000 && io::stderr().is_terminal()),
        time_text,
    };
    if scheme == Scheme::UProtocolV8 {
        if a.at.is_some() {
            anyhow::bail!("uprotocol-v8 is a process-wide singleton on the wall clock, so --at cannot be used with it; use uprotocol (UUIDv7) for backfills");
        }
        if node.is_some() {
            anyhow::bail!("uprotocol-v8 draws its rand_b once per process; it takes no --node");
        }
        if a.shared || a.state.is_some() {
            anyhow::bail!("uprotocol-v8 is a per-process singleton and cannot be host-wide; use uprotocol (UUIDv7) with --shared");
        }
        return out.write(uprotocol_v8::generator());
    }
    let state = state_options(&a, || {
        let n = scheme
            .needs_node()
            .then(|| scheme.resolve_node(node).ok())
            .flatten();
        idforge::default_state_path(scheme.name(), &layout.spec(), n).map_err(Into::into)
    })?;
    if let Some(code) = print_state_path(&a, state.as_ref()) {
        return Ok(code);
    }
    match at_time(&a)? {
        // A fixed clock never moves: let the counter carry into later ticks without bound.
        Some(t) => gen_on(
            &out,
            random,
            &scheme,
            node,
            ManualClock::new(t),
            Policy::UNBOUNDED,
            state,
        ),
        None => gen_on(&out, random, &scheme, node, WallClock, policy, state),
    }
}

/// Generates on `clock`, in-process or host-wide.
fn gen_on<C: Clock>(
    out: &Output,
    random: RandomSource,
    scheme: &Scheme,
    node: Option<u64>,
    clock: C,
    policy: Policy,
    state: Option<StateOptions>,
) -> anyhow::Result<ExitCode> {
    match state {
        Some(st) => {
            out.write(&Generator::host_wide(scheme, node, clock, policy, &st)?.with_random(random))
        }
        None => out.write(&Generator::with_clock(scheme, node, clock, policy)?.with_random(random)),
    }
}

fn at_time(a: &GenArgs) -> anyhow::Result<Option<u64>> {
    Ok(match &a.at {
        Some(at) => Some(idforge::time::parse_rfc3339(at)?),
        None => None,
    })
}

/// The policy: the scheme's default with the command line's changes.
fn policy_from(a: &GenArgs, mut policy: Policy) -> Policy {
    if a.run_ahead {
        policy.on_exhausted = OnExhausted::RunAhead;
    }
    if let Some(ms) = a.max_lead {
        policy.max_lead = Duration::from_millis(ms);
    }
    if let Some(b) = a.on_clock_behind {
        policy.on_clock_behind = match b {
            BehindArg::Fail => OnClockBehind::Fail,
            BehindArg::Wait => OnClockBehind::Wait,
        };
    }
    policy
}

/// The text format, and whether it is nanots's timestamp text (`--format time`).
fn output_format(format: Option<&str>, scheme: &Scheme) -> anyhow::Result<(Format, bool)> {
    match format {
        Some("time") if *scheme == Scheme::NanoTs => Ok((Format::Dec, true)),
        Some("time") => anyhow::bail!(
            "--format time applies only to nanots and nanots-host, not {}",
            scheme.name()
        ),
        Some(f) => Ok((f.parse::<Format>().map_err(anyhow::Error::msg)?, false)),
        None => Ok((scheme.default_format(), false)),
    }
}

/// The state file options, when --shared, --state or --durable ask for a host-wide generator.
fn state_options(
    a: &GenArgs,
    default_path: impl FnOnce() -> anyhow::Result<std::path::PathBuf>,
) -> anyhow::Result<Option<StateOptions>> {
    if !(a.shared || a.state.is_some()) {
        if a.durable || a.state_mode.is_some() || a.state_path {
            anyhow::bail!(
                "--durable, --state-mode and --state-path apply to host-wide generation: add --shared"
            );
        }
        return Ok(None);
    }
    if a.at.is_some() && a.state.is_none() {
        // A fixed clock may be far from the wall clock: on the default file it would leave a
        // stamp that blocks (or is blocked by) the wall-clock runs of this host.
        anyhow::bail!("--at with --shared needs its own state file: add --state PATH (not the file wall-clock runs use)");
    }
    let path = match &a.state {
        Some(p) => p.clone(),
        None => match std::env::var_os("IDFORGE_STATE").filter(|v| !v.is_empty()) {
            Some(p) => p.into(),
            None => default_path()?,
        },
    };
    let mut opts = StateOptions::new(path);
    if let Some(m) = &a.state_mode {
        let mode = u32::from_str_radix(m.trim_start_matches("0o"), 8)
            .ok()
            .filter(|m| *m <= 0o777)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--state-mode {m:?} is not permission bits: use octal, e.g. 600 or 660"
                )
            })?;
        opts = opts.shared_mode(mode);
    }
    opts.durable = a.durable;
    Ok(Some(opts))
}

/// `--state-path`: prints the state file's path instead of generating.
fn print_state_path(a: &GenArgs, state: Option<&StateOptions>) -> Option<ExitCode> {
    let st = state.filter(|_| a.state_path)?;
    println!("{}", st.path.display());
    Some(ExitCode::SUCCESS)
}

fn gen_nanots_host(a: GenArgs) -> anyhow::Result<ExitCode> {
    if a.node.is_some() || a.layout.is_some() {
        anyhow::bail!("nanots-host takes --host (and --host-digits), not --node or --layout");
    }
    let host = match a.host {
        Some(h) => h,
        None => match std::env::var("IDFORGE_HOST") {
            Ok(v) if !v.trim().is_empty() => v.trim().parse().map_err(|_| {
                anyhow::anyhow!("IDFORGE_HOST={v:?} is not a host id: set it to an integer from 0 to 99")
            })?,
            _ => anyhow::bail!(
                "nanots-host needs a host id: pass --host N (0-99, or 0-999 with --host-digits 3) or set IDFORGE_HOST"
            ),
        },
    };
    let digits = nanots::HostDigits::new(host, a.host_digits)?;
    let time_text = match a.format.as_deref() {
        None | Some("dec") => false,
        Some("time") => true,
        Some(f) => anyhow::bail!("nanots-host prints dec or time, not {f}"),
    };
    let out = Output {
        count: a.count,
        format: Format::Dec,
        bits: 64,
        progress: a.progress || (a.count >= 1_000_000 && io::stderr().is_terminal()),
        time_text,
    };
    let state = state_options(&a, || {
        idforge::default_state_path(&format!("nanots-host{}", a.host_digits), "", Some(host))
            .map_err(Into::into)
    })?;
    if let Some(code) = print_state_path(&a, state.as_ref()) {
        return Ok(code);
    }
    let policy = policy_from(&a, nanots::POLICY);
    match (at_time(&a)?, state) {
        (Some(t), state) => host_gen(
            &out,
            digits,
            ManualClock::new(t),
            Policy::UNBOUNDED,
            state.as_ref(),
        ),
        (None, state) => host_gen(&out, digits, WallClock, policy, state.as_ref()),
    }
}

fn host_gen<C: Clock>(
    out: &Output,
    digits: nanots::HostDigits,
    clock: C,
    policy: Policy,
    state: Option<&StateOptions>,
) -> anyhow::Result<ExitCode> {
    let tb = digits.timebase();
    match state {
        Some(st) => out.write_host(&nanots::HostGenerator::host_wide(
            digits, clock, policy, st,
        )?),
        None => {
            let seq = Sequencer::with_cell(clock, ProcessStamp::new()?, tb, policy)?;
            out.write_host(&nanots::HostGenerator::with_sequencer(digits, seq)?)
        }
    }
}

/// A `--pid`/`--mac` value from its flag, else from its environment variable, with its source
/// for error messages.
fn flag_or_env(
    flag: Option<String>,
    flag_name: &'static str,
    var: &'static str,
) -> Option<(String, String)> {
    match flag {
        Some(v) => Some((v, flag_name.to_string())),
        None => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Some((v, var.to_string())),
            _ => None,
        },
    }
}

/// Applies `--pid`, `--mac` (or IDFORGE_PID, IDFORGE_MAC) and `--sequential` to a builder.
fn configure_locality<C: Clock>(
    mut b: LocalityBuilder<C>,
    pid: &Option<(String, String)>,
    mac: &Option<(String, String)>,
    sequential: bool,
) -> anyhow::Result<LocalityBuilder<C>> {
    if let Some((v, source)) = pid {
        let p: u64 = v.trim().parse().map_err(|_| {
            anyhow::anyhow!("{source} {v:?} is not a process id: use an integer from 0 to 65535")
        })?;
        if p > u64::from(u16::MAX) {
            anyhow::bail!("{source}: {}", Error::PidOutOfRange { pid: p });
        }
        b = b.pid(p);
    }
    if let Some((v, source)) = mac {
        let t = v.trim();
        b = if t.contains(':') || t.contains('-') {
            b.mac(locality::parse_mac(t).map_err(|e| anyhow::anyhow!("{source}: {e}"))?)
        } else {
            let f = u64::from_str_radix(t, 16).map_err(|_| {
                anyhow::anyhow!("{source} {v:?} is not a MAC address: write aa:bb:cc:dd:ee:ff, or the 28-bit fragment as up to 7 hex digits (d537a50)")
            })?;
            if f > u64::from(locality::MAX_MAC_FRAGMENT) {
                anyhow::bail!("{source}: {}", Error::MacFragmentOutOfRange { fragment: f });
            }
            b.mac_fragment(f)
        };
    }
    Ok(b.sequential(sequential))
}

fn gen_locality(a: GenArgs) -> anyhow::Result<ExitCode> {
    if a.node.is_some()
        || a.layout.is_some()
        || a.run_ahead
        || a.max_lead.is_some()
        || a.on_clock_behind.is_some()
        || a.host.is_some()
    {
        anyhow::bail!("locality takes no --node, --layout, --host, --run-ahead, --max-lead or --on-clock-behind: its ids are kept apart by --pid, --mac and a 32-bit counter per millisecond");
    }
    if a.shared || a.state.is_some() || a.durable {
        anyhow::bail!("locality is not sequencer-based and cannot be host-wide (--shared); it relies on --pid and --mac");
    }
    let format = match a.format.as_deref() {
        Some(f) => f.parse::<Format>().map_err(anyhow::Error::msg)?,
        None => Format::Uuid,
    };
    let pid = flag_or_env(a.pid, "--pid", "IDFORGE_PID");
    let mac = flag_or_env(a.mac, "--mac", "IDFORGE_MAC");
    let out = Output {
        count: a.count,
        format,
        bits: 128,
        progress: a.progress || (a.count >= 1_000_000 && io::stderr().is_terminal()),
        time_text: false,
    };
    match a.at {
        Some(at) => {
            let t = idforge::time::parse_rfc3339(&at)?;
            let b = LocalityGenerator::builder().clock(ManualClock::new(t));
            out.write_locality(&configure_locality(b, &pid, &mac, a.sequential)?.build()?)
        }
        None => {
            let b = LocalityGenerator::builder();
            out.write_locality(&configure_locality(b, &pid, &mac, a.sequential)?.build()?)
        }
    }
}

struct Output {
    count: u64,
    format: Format,
    bits: u32,
    progress: bool,
    /// Print nanots values as timestamp text.
    time_text: bool,
}

impl Output {
    fn write<C: Clock, S: StampCell>(&self, g: &Generator<C, S>) -> anyhow::Result<ExitCode> {
        // Take ids in batches: one CAS per batch, never more than one tick's counter.
        let chunk = (g.layout().ids_per_tick().min(64)) as u64;
        self.write_from(chunk, |n, emit| {
            for id in g.reserve(n)? {
                emit(id)?;
            }
            Ok(())
        })
    }

    fn write_host<C: Clock, S: StampCell>(
        &self,
        g: &nanots::HostGenerator<C, S>,
    ) -> anyhow::Result<ExitCode> {
        self.write_from(64, |n, emit| {
            for _ in 0..n {
                emit(g.next()? as u128)?;
            }
            Ok(())
        })
    }

    fn write_locality<C: Clock>(&self, g: &LocalityGenerator<C>) -> anyhow::Result<ExitCode> {
        self.write_from(64, |n, emit| {
            for _ in 0..n {
                emit(g.next().as_u128())?;
            }
            Ok(())
        })
    }

    /// Writes `count` ids, taking them `chunk` at a time from `take(n, emit)`.
    fn write_from(
        &self,
        chunk: u64,
        mut take: impl FnMut(u64, &mut dyn FnMut(u128) -> io::Result<()>) -> anyhow::Result<()>,
    ) -> anyhow::Result<ExitCode> {
        let stdout = io::stdout();
        let mut w = io::BufWriter::with_capacity(1 << 16, stdout.lock());
        let start = Instant::now();
        let mut last_report = start;
        let mut done = 0u64;
        while done < self.count {
            let n = chunk.min(self.count - done);
            take(n, &mut |id| {
                if self.time_text {
                    w.write_all(nanots::format(id as u64).as_bytes())?;
                } else {
                    let t = text::encode(id, self.bits, self.format);
                    w.write_all(t.as_bytes())?;
                }
                w.write_all(b"\n")
            })?;
            done += n;
            if self.progress && done % (1 << 16) < n {
                let now = Instant::now();
                if now.duration_since(last_report) >= Duration::from_millis(500) {
                    last_report = now;
                    let secs = now.duration_since(start).as_secs_f64();
                    eprint!(
                        "\ridforge: {done}/{} ids ({:.0}%), {:.1} M ids/s   ",
                        self.count,
                        done as f64 * 100.0 / self.count as f64,
                        done as f64 / secs / 1e6
                    );
                }
            }
        }
        w.flush()?;
        if self.progress {
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "\ridforge: {done} ids in {secs:.2} s ({:.1} M ids/s)            ",
                done as f64 / secs.max(1e-9) / 1e6
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn inspect_cmd(a: InspectArgs) -> anyhow::Result<ExitCode> {
    let as_locality = a.scheme.as_deref() == Some(locality::NAME);
    let as_nanots_host = a.scheme.as_deref() == Some("nanots-host");
    if as_nanots_host && (a.layout.is_some() || a.format.is_some()) {
        anyhow::bail!("nanots-host ids are read as integers or timestamp text; --layout and --format do not apply");
    }
    if as_locality && a.layout.is_some() {
        anyhow::bail!("--layout only applies to the custom scheme, not locality");
    }
    let scheme = match &a.scheme {
        Some(_) if as_locality || as_nanots_host => None,
        Some(name) => Some(resolve_scheme(name, a.layout.as_deref())?),
        None if a.layout.is_some() => Some(resolve_scheme("custom", a.layout.as_deref())?),
        None => None,
    };
    let from_stdin = a.ids.is_empty();
    if from_stdin && io::stdin().is_terminal() {
        anyhow::bail!("give the ids to decode as arguments, or on standard input (`-`, or no ids when it is not a terminal)");
    }
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut failures = 0u64;
    // `place` says where a bad id came from: "" for an argument, "line N: " for standard input.
    // Returns whether the id was bad.
    let one = |id: &str, place: &str, out: &mut dyn Write| -> io::Result<bool> {
        let decoded = if as_locality {
            inspect_locality(id, a.format)
        } else if as_nanots_host {
            inspect_nanots_host(id, a.host_digits)
        } else {
            inspect(id, scheme.as_ref(), a.format)
        };
        match decoded {
            Ok(d) => {
                if a.json {
                    writeln!(out, "{}", to_json(&d))?;
                } else {
                    writeln!(out, "{}", to_line(&d))?;
                }
                Ok(false)
            }
            Err(e) => {
                out.flush()?;
                eprintln!("idforge: {place}{}: {e}", clip_input(id.trim()));
                Ok(true)
            }
        }
    };
    let stdin_args = if from_stdin { 1 } else { 0 };
    for arg in a
        .ids
        .iter()
        .map(String::as_str)
        .chain(std::iter::repeat_n("-", stdin_args))
    {
        if arg != "-" {
            failures += u64::from(one(arg, "", &mut out)?);
            continue;
        }
        let mut input = io::stdin().lock();
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            if input.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
            line_no += 1;
            let place = format!("standard input line {line_no}: ");
            match std::str::from_utf8(&buf) {
                Ok(line) if line.trim().is_empty() => {}
                Ok(line) => failures += u64::from(one(line, &place, &mut out)?),
                Err(_) => {
                    failures += 1;
                    out.flush()?;
                    eprintln!("idforge: {place}not UTF-8 text, so not an id");
                }
            }
        }
    }
    out.flush()?;
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Input echoed in a message: at most 80 characters.
fn clip_input(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(77).collect();
        c.push_str("...");
        c
    }
}

/// Whether a number is exact as a JSON number in every reader (doubles hold integers to 2^53).
fn json_safe(n: u128) -> bool {
    n <= (1u128 << 53)
}

fn to_json(d: &Decoded) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let mut m = Map::new();
    m.insert("id".into(), json!(d.input));
    m.insert("scheme".into(), json!(d.scheme));
    m.insert(
        "value".into(),
        json!(text::encode(d.value, d.bits, Format::Dec).to_string()),
    );
    m.insert("unix_ms".into(), json!(d.unix_ms() as u64));
    m.insert("unix_ns".into(), json!(d.unix_ns as u64));
    m.insert("time".into(), json!(d.time));
    let num = |n: u128| -> Value {
        if json_safe(n) {
            json!(n as u64)
        } else {
            json!(n.to_string())
        }
    };
    if let Some(node) = d.node {
        if d.scheme == "uprotocol-v8" {
            m.insert("rand_b".into(), json!(format!("{node:016x}")));
        } else if d.scheme == "nanots-host" {
            m.insert("host".into(), num(node));
        } else if d.scheme == "nanots" {
            m.insert("tag".into(), num(node));
        } else {
            m.insert("node".into(), num(node));
        }
    }
    if let Some(c) = d.counter {
        m.insert("counter".into(), num(c));
    }
    if let Some(pid) = d.pid {
        m.insert("pid".into(), json!(pid));
    }
    if let Some(mac) = &d.mac {
        m.insert("mac".into(), json!(mac));
    }
    if let Some(r) = d.random {
        m.insert("random".into(), json!(format!("{r:x}")));
    }
    if let Some(r) = d.rand_a {
        m.insert("rand_a".into(), json!(format!("{r:03x}")));
    }
    if let Some(r) = d.rand_b {
        m.insert("rand_b".into(), json!(format!("{r:016x}")));
    }
    if let Some(v) = d.version {
        m.insert("version".into(), json!(v));
    }
    if let Some(v) = d.variant {
        m.insert("variant".into(), json!(format!("0b{v:02b}")));
    }
    if !d.layouts.is_empty() {
        m.insert("layouts".into(), json!(d.layouts));
    }
    if let Some(h) = d.hint() {
        m.insert("hint".into(), json!(h));
    }
    Value::Object(m)
}

fn to_line(d: &Decoded) -> String {
    let mut s = format!(
        "{}  scheme={} time={} unix_ms={}",
        d.canonical,
        d.scheme,
        d.time,
        d.unix_ms()
    );
    if let Some(node) = d.node {
        if d.scheme == "uprotocol-v8" {
            s.push_str(&format!(" rand_b={node:016x}"));
        } else if d.scheme == "nanots-host" {
            s.push_str(&format!(" host={node}"));
        } else if d.scheme == "nanots" {
            s.push_str(&format!(" tag={node}"));
        } else {
            s.push_str(&format!(" node={node}"));
        }
    }
    if let Some(c) = d.counter {
        s.push_str(&format!(" counter={c}"));
    }
    if let Some(pid) = d.pid {
        s.push_str(&format!(" pid={pid}"));
    }
    if let Some(mac) = &d.mac {
        s.push_str(&format!(" mac={mac}"));
    }
    if let Some(r) = d.rand_a {
        s.push_str(&format!(" rand_a={r:03x}"));
    }
    if let Some(r) = d.rand_b {
        s.push_str(&format!(" rand_b={r:016x}"));
    }
    if let Some(v) = d.version {
        s.push_str(&format!(" version={v:x}"));
    }
    if let Some(v) = d.variant {
        s.push_str(&format!(" variant=0b{v:02b}"));
    }
    if let Some(h) = d.hint() {
        s.push_str(&format!("  ({h})"));
    }
    s
}

fn schemes(json: bool) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    let all = catalog::facts();
    if json {
        let list: Vec<serde_json::Value> = all
            .iter()
            .map(|f| {
                serde_json::json!({
                    "name": f.name,
                    "bits": f.bits,
                    "ids_per_tick": f.ids_per_tick.to_string(),
                    "ids_per_second": f.ids_per_second,
                    "nodes": f.nodes.map(|n| n.to_string()),
                    "end_year": f.end_year,
                    "tick_ns": f.tick_ns,
                    "epoch": f.epoch,
                    "layout": f.diagram,
                    "summary": f.summary,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<14} {:>4}  {:>10} {:>14} {:>9} {:>9}  layout (most significant bit first)",
        "scheme", "bits", "ids/tick", "ids/s/node", "nodes", "runs out"
    )?;
    for f in &all {
        writeln!(
            out,
            "{:<14} {:>4}  {:>10} {:>14} {:>9} {:>9}  {}",
            f.name,
            f.bits,
            f.ids_per_tick,
            format!("{:.0}", f.ids_per_second),
            f.nodes.map_or("-".to_string(), |n| n.to_string()),
            f.end_year,
            f.diagram
        )?;
        writeln!(
            out,
            "{:<14}       tick {}, epoch {}; {}",
            "",
            tick_text(f.tick_ns),
            f.epoch,
            f.summary
        )?;
    }
    writeln!(
        out,
        "custom         --layout time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z (fields from the most significant bit; order=none for a counter above time)"
    )?;
    Ok(ExitCode::SUCCESS)
}

fn tick_text(ns: u64) -> String {
    match ns {
        n if n % 1_000_000_000 == 0 => format!("{} s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{} ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{} us", n / 1_000),
        n => format!("{n} ns"),
    }
}
