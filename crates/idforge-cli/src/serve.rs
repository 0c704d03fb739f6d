//! `idforge serve`: the HTTP id service. This module only turns flags into the service's
//! settings; the service is the `idforge-serve` crate.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use idforge_serve::Settings;

/// Settings come from flags, then the environment (IDFORGE_*), then the --config file, then the
/// defaults: the first that sets a value wins.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// A TOML file of settings (keys: listen, schemes, node, host, nodes, layout, in_process, state_mode,
    /// max_count, max_batches, timeout_ms, header_timeout_ms, idle_timeout_ms, max_connections,
    /// shutdown_grace_ms, tokens_file, etcd, etcd_cacert, etcd_cert, etcd_key, etcd_user,
    /// etcd_password_file, namespace_prefix, lease_ttl, clock, log_format), below flags and
    /// environment variables.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:7470]. Beyond loopback, set bearer tokens.
    #[arg(long, value_name = "IP:PORT")]
    listen: Option<String>,
    /// The schemes to serve, comma separated [default: every scheme of the catalog; custom
    /// only with --layout, the schemes with a node id only with one].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    schemes: Option<Vec<String>>,
    /// Node id of the schemes with a node field (global-id, global-id-128, snowflake,
    /// sonyflake, custom with a node field). idforge never picks one: without --node, --etcd or
    /// a node id per scheme under [nodes] in the --config file, those schemes are not served
    /// (and naming one in --schemes is an error). Every server issuing the same scheme needs its
    /// own node id (or shares one host's state files).
    #[arg(long)]
    node: Option<u64>,
    /// nanots-host: this host's id, 0-99; without it (or --etcd, or [nodes] in the config
    /// file) nanots-host is not served.
    #[arg(long)]
    host: Option<u64>,
    /// Layout of the custom scheme (see `idforge gen --help`); custom is served only with one,
    /// and a layout that does not parse stops the server.
    #[arg(long)]
    layout: Option<String>,
    /// Keep the stamps in this process instead of the host-wide state files. Without state
    /// files two servers on one host, or a restarted server, can issue the same ids.
    #[arg(long)]
    in_process: bool,
    /// Share the state files on purpose, with this mode in octal (e.g. 660: the group may use
    /// them too, as `idforge gen --shared --state-mode 660` does). Everyone who can write them can
    /// make every process using them issue duplicates. Default: private files (600), and a file
    /// or directory others can write is refused.
    #[arg(long, value_name = "OCTAL")]
    state_mode: Option<String>,
    /// Largest `count` of one request [default: 100000; at most 1000000].
    #[arg(long, value_name = "N")]
    max_count: Option<u64>,
    /// Large batches (over 64 ids) in flight at once [default: 64]; past it a request for one
    /// gets 503 with Retry-After. A large batch is streamed and holds about 256 KB whatever its
    /// count.
    #[arg(long, value_name = "N")]
    max_batches: Option<usize>,
    /// Request timeout in milliseconds [default: 10000]: a small batch's answer, a large
    /// batch's last byte (a batch the scheme cannot issue within it is refused at once; one
    /// that outlives it is cut short).
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// Time a client has to send a whole request head, in milliseconds, from the connection's
    /// start (then from the first byte of each later request); past it the connection is
    /// closed without a response [default: 5000; from 100 to 300000].
    #[arg(long, value_name = "MS")]
    header_timeout_ms: Option<u64>,
    /// Time a keep-alive connection may wait for its next request, in milliseconds
    /// [default: 75000, above the 60 s idle timeout of the usual load balancers].
    #[arg(long, value_name = "MS")]
    idle_timeout_ms: Option<u64>,
    /// Connections open at once [default: 512]. Past it new connections wait in the listen
    /// backlog, and those waiting over a second for a request are closed to make room. The
    /// soft open-file limit is raised to fit it (up to the hard limit, else the server does not
    /// start).
    #[arg(long, value_name = "N")]
    max_connections: Option<u64>,
    /// On SIGTERM or SIGINT, time the requests in flight have to finish, in milliseconds; then
    /// the connections left are closed and their batches stopped [default: 10000].
    /// Connections that have not sent a whole request are closed at once.
    #[arg(long, value_name = "MS")]
    shutdown_grace_ms: Option<u64>,
    /// Bearer tokens, one per line (# starts a comment). With tokens, every route but /healthz
    /// (and /readyz without an Authorization header, which then says ready or not, not why)
    /// needs `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "FILE")]
    tokens_file: Option<PathBuf>,
    /// Lease the node id of every scheme with one (global-id, global-id-128, snowflake,
    /// sonyflake, nanots-host, custom with a node field) from etcd instead of --node and --host:
    /// ENDPOINTS is a comma-separated list such as https://10.0.0.1:2379 (TLS with
    /// --etcd-cacert). Each scheme holds its own
    /// node id in the namespace PREFIX + scheme name, under a lease, with time reserved ahead;
    /// /readyz answers 503 while one is not held (docs/FLEET.md). Needs a build with the `etcd`
    /// feature.
    #[arg(long, value_name = "ENDPOINTS")]
    etcd: Option<String>,
    #[command(flatten)]
    etcd_access: crate::fleet::EtcdAccess,
    /// With --etcd: the prefix of each scheme's namespace [default: none, so snowflake's
    /// namespace is `snowflake`, shared with `idforge gen snowflake --etcd`].
    #[arg(long, value_name = "PREFIX")]
    namespace_prefix: Option<String>,
    /// With --etcd: the lease's time to live in seconds [default: 10]: how long a crashed
    /// server's node ids stay taken; without reaching etcd it issues for 0.9 of it after its
    /// last renewal, then answers 503 at once.
    #[arg(long, value_name = "SECS")]
    lease_ttl: Option<u64>,
    /// Where ids take their time from, as `gen --clock`: auto [the default: the calibrated
    /// time-stamp counter for millisecond layouts], precise (CLOCK_REALTIME per id), counter
    /// (the calibrated counter for every scheme, nanots included) or ticker.
    #[arg(long, value_enum)]
    clock: Option<crate::gen::ClockArg>,
    /// The log on stderr: text (a line per event, for a person) or json (an object per line)
    /// [default: text]. Both give one line per request (method, route, status, latency, request
    /// id, scheme and count of ids) and the start and stop messages; IDFORGE_LOG or RUST_LOG
    /// choose what is logged [default: info].
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"])]
    log_format: Option<String>,
}

/// The exit codes of `idforge serve`.
pub const EXIT_CODES: &str = "Exit status:
  0  stopped by SIGTERM or SIGINT, after the requests in flight (or at the end of
     --shutdown-grace-ms)
  2  a setting the server cannot use: an unknown scheme or key, a scheme with a node id named
     without one, a layout that does not parse, --max-count over 1000000, a timeout, grace or
     --max-connections of 0 or out of range, --max-connections over the open-file limit, an
     empty token list, a config or tokens file that cannot be read, a log filter (IDFORGE_LOG,
     RUST_LOG) that does not parse
  4  a state file cannot be used (another user's, damaged, replaced, or for another scheme)
  7  the address cannot be listened on (in use, or not permitted)";

/// What `idforge serve --help` ends with: the environment variables and the exit codes.
pub fn after_help() -> String {
    format!("{}\n\n{EXIT_CODES}", idforge_serve::ENVIRONMENT)
}

/// Runs `idforge serve` until SIGTERM or SIGINT.
pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    crate::failure::serving();
    let flags = Settings {
        listen: a.listen,
        schemes: a.schemes,
        node: a.node,
        host: a.host,
        nodes: None,
        layout: a.layout,
        in_process: a.in_process.then_some(true),
        state_mode: a.state_mode,
        max_count: a.max_count,
        max_batches: a.max_batches,
        timeout_ms: a.timeout_ms,
        header_timeout_ms: a.header_timeout_ms,
        idle_timeout_ms: a.idle_timeout_ms,
        max_connections: a.max_connections,
        shutdown_grace_ms: a.shutdown_grace_ms,
        tokens_file: a.tokens_file,
        tokens: None,
        etcd: a.etcd,
        etcd_cacert: a.etcd_access.etcd_cacert,
        etcd_cert: a.etcd_access.etcd_cert,
        etcd_key: a.etcd_access.etcd_key,
        etcd_user: a.etcd_access.etcd_user,
        etcd_password_file: a.etcd_access.etcd_password_file,
        etcd_password: None,
        namespace_prefix: a.namespace_prefix,
        lease_ttl: a.lease_ttl,
        clock: a.clock.map(|c| {
            clap::ValueEnum::to_possible_value(&c)
                .map_or_else(String::new, |v| v.get_name().to_string())
        }),
        log_format: a.log_format,
    };
    // Every failure here is a setting the server cannot use (exit 2), also a file that cannot
    // be read (not exit 5, which is for output).
    let settings = || -> anyhow::Result<idforge_serve::Config> {
        let file = match &a.config {
            Some(path) => Settings::from_file(path)?,
            None => Settings::default(),
        };
        flags.or(Settings::from_env()?).or(file).finish()
    };
    let config = settings().map_err(|e| crate::failure::Usage(format!("{e:#}")))?;
    // Held to the end: dropping it writes the log's last lines.
    let _log =
        crate::log::init(config.log_format).map_err(|e| crate::failure::Usage(format!("{e:#}")))?;
    // An open-file limit too low for --max-connections is a setting the server cannot use.
    idforge_serve::run_blocking(config).map_err(|e| {
        match e.downcast::<idforge_serve::TooFewFiles>() {
            Ok(few) => anyhow::Error::new(crate::failure::Usage(few.to_string())),
            Err(e) => e,
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
