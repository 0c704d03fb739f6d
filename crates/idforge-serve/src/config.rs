//! The service's configuration, in layers: flags over environment variables over a TOML file
//! over defaults. Each layer is a [`Settings`] (every field optional); [`Settings::or`] puts one
//! over another and [`Settings::finish`] fills in the defaults and checks the result.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use idforge::schemes::open::ClockChoice;
use idforge_fleet::{EtcdOptions, Password};
use serde::Deserialize;

/// The default address: loopback only, so a service started by hand is not reachable from
/// other machines until it is told to be.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7470";
/// The default largest `count` of one request.
pub const DEFAULT_MAX_COUNT: u64 = 100_000;
/// The largest `--max-count` accepted: one request's body stays below about 45 MB.
pub const MAX_COUNT_CEILING: u64 = 1_000_000;
/// The default largest number of large batches (over 64 ids, streamed) in flight at once.
pub const DEFAULT_MAX_BATCHES: usize = 64;
/// The largest `--max-batches` accepted (tokio's semaphore holds at most this many permits,
/// and at about 256 KB a batch it is already 1 GB).
pub const MAX_BATCHES_CEILING: usize = 4096;
/// The default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest request target (path and query) accepted, in bytes; longer ones get 414.
pub const MAX_URI_BYTES: usize = 2048;
/// The default time a client has to send a whole request head: from the connection's start for
/// its first request, from the first byte of each later one. Generous for any real client (a
/// request head is one packet), short enough that connections which never finish their heads
/// (slowloris) are closed long before they pile up.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The default time a keep-alive connection may wait for its next request. Longer than the 60 s
/// idle timeout of the usual load balancers (AWS's, nginx's upstream pools), so that the balancer
/// and not the service closes an idle connection: a server closing first races the balancer's
/// next request on it, which the balancer then answers 502.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(75);
/// The default largest number of connections open at once: with the files the service needs
/// besides ([`RESERVED_FILES`]) it fits systemd's default of 1,024 open files without raising
/// anything.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The default time the requests in flight have to finish on SIGTERM or SIGINT: the default
/// request timeout, so that a request in flight ends on its own (answered, or 503 at its
/// timeout), and well below Kubernetes' 30 s `terminationGracePeriodSeconds` with the node ids
/// still to give back.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The open files the service keeps for itself besides its connections (standard streams, the
/// listener, the runtime's, the state files, etcd's connections), counted against the open-file
/// limit with `max_connections`.
pub const RESERVED_FILES: u64 = 64;
/// The largest `--max-connections` accepted.
pub const MAX_CONNECTIONS_CEILING: usize = 1_000_000;

/// The environment variables the service reads, with what each sets.
pub const ENVIRONMENT: &str = "Environment (below flags, above the --config file):
  IDFORGE_LISTEN       address to listen on (--listen)
  IDFORGE_SCHEMES      schemes to serve, comma separated (--schemes)
  IDFORGE_NODE         node id of schemes with a node field, served only with one (--node)
  IDFORGE_HOST         nanots-host's host id, served only with one (--host)
  IDFORGE_LAYOUT       layout of the custom scheme, which is served only with one (--layout)
  IDFORGE_IN_PROCESS   1/true: keep stamps in the process, not in state files (--in-process)
  IDFORGE_STATE_MODE   share the state files on purpose: their mode in octal, e.g. 660
                       (--state-mode)
  IDFORGE_MAX_COUNT    largest count of one request, at most 1000000 (--max-count)
  IDFORGE_MAX_BATCHES  large batches (over 64 ids, streamed) in flight at once (--max-batches)
  IDFORGE_TIMEOUT_MS   request timeout in milliseconds (--timeout-ms)
  IDFORGE_HEADER_TIMEOUT_MS  time to send a whole request head, in milliseconds
                       (--header-timeout-ms)
  IDFORGE_IDLE_TIMEOUT_MS  time a keep-alive connection may wait for its next request, in
                       milliseconds (--idle-timeout-ms)
  IDFORGE_MAX_CONNECTIONS  connections open at once (--max-connections)
  IDFORGE_SHUTDOWN_GRACE_MS  on SIGTERM, time the requests in flight have to finish, in
                       milliseconds (--shutdown-grace-ms)
  IDFORGE_TOKENS_FILE  bearer tokens, one per line (--tokens-file)
  IDFORGE_TOKENS       more bearer tokens, comma separated (added to the file's; set, it must
                       hold one)
  IDFORGE_ETCD         etcd endpoints, comma separated: lease node ids from etcd (--etcd)
  IDFORGE_ETCD_CACERT  PEM CA certificate that signed etcd's server certificate (--etcd-cacert)
  IDFORGE_ETCD_CERT    PEM client certificate for etcd (--etcd-cert)
  IDFORGE_ETCD_KEY     PEM key of the client certificate (--etcd-key)
  IDFORGE_ETCD_USER    etcd user (--etcd-user)
  IDFORGE_ETCD_PASSWORD  the etcd user's password (never printed)
  IDFORGE_ETCD_PASSWORD_FILE  a file holding it (--etcd-password-file)
  IDFORGE_NAMESPACE_PREFIX  prefix of each scheme's etcd namespace (--namespace-prefix)
  IDFORGE_LEASE_TTL    the etcd lease's time to live in seconds (--lease-ttl)
  IDFORGE_CLOCK        auto, precise, counter or ticker: where ids take their time from (--clock)
  IDFORGE_STATE_DIR    directory of the host-wide state files (default ~/.local/state/idforge)
  IDFORGE_LOG_FORMAT   text or json: the format of the log on stderr (--log-format)
  IDFORGE_LOG          what is logged, as RUST_LOG: a level or target=level directives,
                       comma separated (default info; idforge_serve::request=off drops the
                       line per request); over RUST_LOG, which is read when it is unset";

/// The text of the tokens file, refused if someone other than its owner (this user or root)
/// could add a token to it, or anyone at all could read it: the file itself (a regular file, never
/// a FIFO or device), and the directory that names it, which must not let others replace it
/// (writable by its group or others only with the sticky bit). A symbolic link is followed (a
/// Kubernetes Secret's file is one), with the link's own directory checked. A leading UTF-8
/// byte-order mark is dropped.
fn read_secret_file(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dmeta = std::fs::metadata(&dir)
        .with_context(|| format!("cannot read the tokens file's directory {}", dir.display()))?;
    let dmode = dmeta.mode() & 0o7777;
    if dmode & 0o022 != 0 && dmode & 0o1000 == 0 {
        bail!(
            "the tokens file {} is in {}, a directory writable by {} (mode {dmode:04o}) without the sticky bit: anyone who can write there can replace the file; move it to a directory only its owner can write",
            path.display(),
            dir.display(),
            if dmode & 0o002 != 0 { "everyone" } else { "its group" }
        );
    }
    // O_NONBLOCK: a FIFO put in its place is refused below rather than hanging the start.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
    if !meta.file_type().is_file() {
        bail!(
            "the tokens file {} is not a regular file: write the tokens, one per line, into a file",
            path.display()
        );
    }
    let mode = meta.mode() & 0o7777;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        bail!(
            "the tokens file {} belongs to uid {}, not to this user ({me}) or root: whoever owns it can add a token; chown it",
            path.display(),
            meta.uid()
        );
    }
    if mode & 0o022 != 0 {
        bail!(
            "the tokens file {} is writable by {} (mode {mode:04o}): anyone who can write it can add a token; chmod 600 {}",
            path.display(),
            if mode & 0o002 != 0 { "everyone" } else { "its group" },
            path.display()
        );
    }
    if mode & 0o004 != 0 {
        bail!(
            "the tokens file {} is readable by everyone (mode {mode:04o}): chmod 600 {} (or 640 for a group of readers)",
            path.display(),
            path.display()
        );
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
    Ok(text
        .strip_prefix('\u{feff}')
        .map(str::to_string)
        .unwrap_or(text))
}

/// The default etcd lease TTL.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// One layer of settings: each field is set or left to the layer below.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The address to listen on.
    pub listen: Option<String>,
    /// The schemes to serve (default: every scheme of the catalog; custom only with a layout,
    /// schemes with a node id only with one).
    pub schemes: Option<Vec<String>>,
    /// The node id of schemes with a node field (none by default: those schemes are then not
    /// served).
    pub node: Option<u64>,
    /// nanots-host's host id (none by default: nanots-host is then not served).
    pub host: Option<u64>,
    /// A node id per scheme (`[nodes]` in the TOML file: `snowflake = 7`, `nanots-host = 3`),
    /// over `node` and `host` for that scheme.
    pub nodes: Option<BTreeMap<String, u64>>,
    /// The custom scheme's layout.
    pub layout: Option<String>,
    /// Keep stamps in the process instead of host-wide state files.
    pub in_process: Option<bool>,
    /// Share the state files on purpose: their mode, in octal (`"660"`).
    pub state_mode: Option<String>,
    /// The largest count of one request.
    pub max_count: Option<u64>,
    /// The most large batches (over 64 ids, streamed) in flight at once.
    pub max_batches: Option<usize>,
    /// The request timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The time a client has to send a whole request head, in milliseconds.
    pub header_timeout_ms: Option<u64>,
    /// The time a keep-alive connection may wait for its next request, in milliseconds.
    pub idle_timeout_ms: Option<u64>,
    /// The largest number of connections open at once.
    pub max_connections: Option<u64>,
    /// On SIGTERM or SIGINT, the time the requests in flight have to finish, in milliseconds.
    pub shutdown_grace_ms: Option<u64>,
    /// A file of bearer tokens, one per line.
    pub tokens_file: Option<PathBuf>,
    /// Bearer tokens given directly (IDFORGE_TOKENS; not read from the TOML file, which should
    /// name a tokens file instead).
    #[serde(skip)]
    pub tokens: Option<Vec<String>>,
    /// etcd endpoints, comma separated: every node-based scheme leases its node id from etcd.
    pub etcd: Option<String>,
    /// PEM file of the CA certificate that signed etcd's server certificate (https endpoints).
    pub etcd_cacert: Option<PathBuf>,
    /// PEM file of the client certificate for etcd.
    pub etcd_cert: Option<PathBuf>,
    /// PEM file of the client certificate's key.
    pub etcd_key: Option<PathBuf>,
    /// The etcd user.
    pub etcd_user: Option<String>,
    /// A file holding the etcd user's password.
    pub etcd_password_file: Option<PathBuf>,
    /// The etcd user's password itself (IDFORGE_ETCD_PASSWORD; not read from the TOML file,
    /// which should name a password file instead). Never printed.
    #[serde(skip)]
    pub etcd_password: Option<Password>,
    /// The prefix of each scheme's etcd namespace (the namespace is prefix + scheme name).
    pub namespace_prefix: Option<String>,
    /// The etcd lease's time to live in seconds.
    pub lease_ttl: Option<u64>,
    /// Where ids take their time from: `auto`, `precise`, `counter` or `ticker` (as `idforge gen --clock`).
    pub clock: Option<String>,
    /// The log's format: `text` or `json`.
    pub log_format: Option<String>,
}

/// Where node ids are leased: how to reach etcd, the namespaces' prefix and the lease's TTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// The etcd endpoints, TLS files, user and password (its `Debug` hides the password).
    pub etcd: EtcdOptions,
    /// Each scheme's namespace is this prefix and the scheme's name (`snowflake`, ...).
    pub namespace_prefix: String,
    /// The lease's time to live.
    pub lease_ttl: Duration,
}

/// The service's configuration, complete.
#[derive(Debug, Clone)]
pub struct Config {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The schemes to serve, by name (`None`: every scheme of the catalog).
    pub schemes: Option<Vec<String>>,
    /// The node id of schemes with a node field; `None`: those schemes are served only with a
    /// node id of their own in `nodes`, or with `fleet`.
    pub node: Option<u64>,
    /// nanots-host's host id; `None`: as `node`.
    pub host: Option<u64>,
    /// A node (or host) id per scheme name, over `node` and `host` for that scheme.
    pub nodes: BTreeMap<String, u64>,
    /// The custom scheme's layout; custom is served only with one.
    pub layout: Option<String>,
    /// Keep stamps in the process instead of host-wide state files.
    pub in_process: bool,
    /// The state files shared on purpose with this mode (`StateOptions::shared_mode`): new
    /// ones are made with it, and existing ones (and their directory) writable by the group or
    /// others, or owned by another user, are accepted as far as it grants that access. `None`:
    /// private files, and any other refused.
    pub state_mode: Option<u32>,
    /// The largest count of one request.
    pub max_count: u64,
    /// The request timeout: a small batch's whole answer, a large one's last byte.
    pub timeout: Duration,
    /// The most large batches (over 64 ids, streamed) in flight at once; past it a request for
    /// one is answered 503 with `Retry-After: 1`. Each holds about 256 KB besides hyper's write buffer.
    pub max_batches: usize,
    /// The time a client has to send a whole request head: from the connection's start for its
    /// first request, from the request's first byte for the later ones. Past it the connection
    /// is closed, without a response.
    pub header_timeout: Duration,
    /// The time a keep-alive connection may wait for its next request before it is closed.
    pub idle_timeout: Duration,
    /// The largest number of connections open at once; past it new connections wait in the
    /// listen backlog.
    pub max_connections: usize,
    /// On SIGTERM or SIGINT, the time the requests in flight have to finish; then the
    /// connections still open are closed and their batches stopped.
    pub shutdown_grace: Duration,
    /// Bearer tokens; empty: no authentication.
    pub tokens: Vec<String>,
    /// Node ids leased from etcd instead of `node` and `host`.
    pub fleet: Option<Fleet>,
    /// Where ids take their time from.
    pub clock: ClockChoice,
    /// The log's format (the binary sets up the log; the service only emits `tracing` events).
    pub log_format: LogFormat,
}

/// The format of the log: the service emits `tracing` events, and the binary that sets up the
/// subscriber writes them in this format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// A line of text per event, for a person.
    #[default]
    Text,
    /// A JSON object per line, for a log collector.
    Json,
}

impl Default for Config {
    fn default() -> Self {
        Settings::default()
            .finish()
            .expect("the defaults are valid")
    }
}

impl Settings {
    /// `self` over `lower`: each field from `self` where set, else from `lower`.
    pub fn or(self, lower: Settings) -> Settings {
        // The password and the password file are one setting: the upper layer's, if it gives
        // either.
        let (etcd_password, etcd_password_file) =
            if self.etcd_password.is_some() || self.etcd_password_file.is_some() {
                (self.etcd_password, self.etcd_password_file)
            } else {
                (lower.etcd_password, lower.etcd_password_file)
            };
        Settings {
            listen: self.listen.or(lower.listen),
            schemes: self.schemes.or(lower.schemes),
            node: self.node.or(lower.node),
            host: self.host.or(lower.host),
            nodes: self.nodes.or(lower.nodes),
            layout: self.layout.or(lower.layout),
            in_process: self.in_process.or(lower.in_process),
            state_mode: self.state_mode.or(lower.state_mode),
            max_count: self.max_count.or(lower.max_count),
            max_batches: self.max_batches.or(lower.max_batches),
            timeout_ms: self.timeout_ms.or(lower.timeout_ms),
            header_timeout_ms: self.header_timeout_ms.or(lower.header_timeout_ms),
            idle_timeout_ms: self.idle_timeout_ms.or(lower.idle_timeout_ms),
            max_connections: self.max_connections.or(lower.max_connections),
            shutdown_grace_ms: self.shutdown_grace_ms.or(lower.shutdown_grace_ms),
            tokens_file: self.tokens_file.or(lower.tokens_file),
            tokens: self.tokens.or(lower.tokens),
            etcd: self.etcd.or(lower.etcd),
            etcd_cacert: self.etcd_cacert.or(lower.etcd_cacert),
            etcd_cert: self.etcd_cert.or(lower.etcd_cert),
            etcd_key: self.etcd_key.or(lower.etcd_key),
            etcd_user: self.etcd_user.or(lower.etcd_user),
            etcd_password_file,
            etcd_password,
            namespace_prefix: self.namespace_prefix.or(lower.namespace_prefix),
            lease_ttl: self.lease_ttl.or(lower.lease_ttl),
            clock: self.clock.or(lower.clock),
            log_format: self.log_format.or(lower.log_format),
        }
    }

    /// The settings of a TOML file (keys as the fields of [`Settings`]: `listen`, `schemes`,
    /// `node`, `host`, `nodes`, `layout`, `in_process`, `state_mode`, `max_count`, `max_batches`, `timeout_ms`,
    /// `header_timeout_ms`, `idle_timeout_ms`, `max_connections`, `shutdown_grace_ms`,
    /// `tokens_file`, `etcd`,
    /// `etcd_cacert`, `etcd_cert`, `etcd_key`, `etcd_user`, `etcd_password_file`,
    /// `namespace_prefix`, `lease_ttl`, `clock`, `log_format`).
    ///
    /// # Errors
    /// A file that cannot be read, is not TOML, or has an unknown key.
    pub fn from_file(path: &Path) -> anyhow::Result<Settings> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        Settings::from_toml(&text).with_context(|| format!("config file {}", path.display()))
    }

    /// The settings of TOML text.
    ///
    /// # Errors
    /// Text that is not TOML or has an unknown key.
    pub fn from_toml(text: &str) -> anyhow::Result<Settings> {
        toml::from_str(text).map_err(|e| {
            // toml's message quotes the offending line: never one that may hold a secret (an
            // attack review: `etcd_password = "..."`, a key the file does not take, came back
            // in the error with the password in it).
            let secret = e.span().is_some_and(|span| {
                let start = text[..span.start.min(text.len())]
                    .rfind('\n')
                    .map_or(0, |i| i + 1);
                let end = text[span.end.min(text.len())..]
                    .find('\n')
                    .map_or(text.len(), |i| span.end.min(text.len()) + i);
                let line = text[start..end].to_ascii_lowercase();
                ["password", "secret", "token"].iter().any(|w| line.contains(w))
            });
            if secret {
                let at = e
                    .span()
                    .map(|sp| text[..sp.start.min(text.len())].matches('\n').count() + 1)
                    .unwrap_or(0);
                anyhow::anyhow!(
                    "line {at}: {} (the line is not shown: it may hold a secret; the etcd password comes from etcd_password_file or IDFORGE_ETCD_PASSWORD, never from this file)",
                    e.message()
                )
            } else {
                anyhow::Error::new(e)
            }
        })
    }

    /// The settings of the environment variables in [`ENVIRONMENT`].
    ///
    /// # Errors
    /// A variable that is set to a value of the wrong kind.
    pub fn from_env() -> anyhow::Result<Settings> {
        Settings::from_vars(|k| std::env::var(k).ok())
    }

    /// The settings of variables looked up by `var` (for tests: [`Settings::from_env`]).
    ///
    /// # Errors
    /// As [`Settings::from_env`].
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Settings> {
        let get = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        // An empty name of the tokens file (`IDFORGE_TOKENS_FILE=$UNSET_PATH`) must not turn
        // authentication off, as an empty IDFORGE_TOKENS does not.
        if var("IDFORGE_TOKENS_FILE").is_some_and(|v| v.trim().is_empty()) {
            bail!("IDFORGE_TOKENS_FILE is set but empty: name the tokens file, or unset it to serve without authentication");
        }
        let num = |k: &str| -> anyhow::Result<Option<u64>> {
            get(k)
                .map(|v| {
                    v.trim().parse::<u64>().map_err(|_| {
                        anyhow::anyhow!("{k}={v:?} is not a number: set a non-negative integer")
                    })
                })
                .transpose()
        };
        let list = |k: &str| {
            get(k).map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
            })
        };
        let in_process = match get("IDFORGE_IN_PROCESS") {
            None => None,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" => Some(true),
                "0" | "false" | "no" => Some(false),
                _ => bail!("IDFORGE_IN_PROCESS={v:?}: set 1 or true, 0 or false"),
            },
        };
        Ok(Settings {
            listen: get("IDFORGE_LISTEN"),
            schemes: list("IDFORGE_SCHEMES"),
            node: num("IDFORGE_NODE")?,
            host: num("IDFORGE_HOST")?,
            nodes: None,
            layout: get("IDFORGE_LAYOUT"),
            in_process,
            state_mode: get("IDFORGE_STATE_MODE"),
            max_count: num("IDFORGE_MAX_COUNT")?,
            max_batches: num("IDFORGE_MAX_BATCHES")?.map(|n| n as usize),
            timeout_ms: num("IDFORGE_TIMEOUT_MS")?,
            header_timeout_ms: num("IDFORGE_HEADER_TIMEOUT_MS")?,
            idle_timeout_ms: num("IDFORGE_IDLE_TIMEOUT_MS")?,
            max_connections: num("IDFORGE_MAX_CONNECTIONS")?,
            shutdown_grace_ms: num("IDFORGE_SHUTDOWN_GRACE_MS")?,
            tokens_file: get("IDFORGE_TOKENS_FILE").map(PathBuf::from),
            // Set at all, even to "" or ",", it must hold a token: an unset secret behind
            // IDFORGE_TOKENS=$SECRET must not turn authentication off.
            tokens: var("IDFORGE_TOKENS").map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            }),
            etcd: get("IDFORGE_ETCD"),
            etcd_cacert: get("IDFORGE_ETCD_CACERT").map(PathBuf::from),
            etcd_cert: get("IDFORGE_ETCD_CERT").map(PathBuf::from),
            etcd_key: get("IDFORGE_ETCD_KEY").map(PathBuf::from),
            etcd_user: get("IDFORGE_ETCD_USER"),
            // The password itself over a file named in the environment.
            etcd_password_file: get("IDFORGE_ETCD_PASSWORD_FILE")
                .filter(|_| get("IDFORGE_ETCD_PASSWORD").is_none())
                .map(PathBuf::from),
            etcd_password: get("IDFORGE_ETCD_PASSWORD").map(Password::new),
            namespace_prefix: get("IDFORGE_NAMESPACE_PREFIX"),
            lease_ttl: num("IDFORGE_LEASE_TTL")?,
            clock: get("IDFORGE_CLOCK"),
            log_format: get("IDFORGE_LOG_FORMAT"),
        })
    }

    /// The configuration: these settings with the defaults for the rest, checked; the tokens
    /// file is read here.
    ///
    /// # Errors
    /// An address that does not parse, a count, timeout, connection limit or grace of zero, a
    /// count over [`MAX_COUNT_CEILING`], a header timeout under 100 ms or over 5 minutes, an
    /// idle timeout or grace over an hour, a connection limit over [`MAX_CONNECTIONS_CEILING`],
    /// a tokens file that cannot be read or holds no token, tokens given
    /// as an empty list (`IDFORGE_TOKENS=","`).
    pub fn finish(self) -> anyhow::Result<Config> {
        let listen = self.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let listen: SocketAddr = listen.trim().parse().map_err(|_| {
            anyhow::anyhow!(
                "listen address {listen:?} is not IP:PORT (e.g. 127.0.0.1:7470 or 0.0.0.0:7470)"
            )
        })?;
        let state_mode = match self.state_mode.as_deref() {
            None => None,
            Some(m) => {
                let digits = m.strip_prefix("0o").unwrap_or(m);
                let mode = u32::from_str_radix(digits, 8)
                    .ok()
                    .filter(|&mode| {
                        (1..=4).contains(&digits.len())
                            && digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
                            && mode <= 0o777
                    })
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "state mode {m:?} is not permission bits: use octal, e.g. 600 or 660"
                        )
                    })?;
                if mode & 0o600 != 0o600 {
                    bail!("state mode {m:?} does not let this user read and write its own state files: give the owner rw, e.g. 600 or 660");
                }
                if mode & 0o002 != 0 {
                    bail!("state mode {m:?} lets every user write the state files, and anyone who can write them can make this service issue duplicate ids: share them with a group instead (660)");
                }
                if self.in_process == Some(true) {
                    bail!("state mode {m:?} applies to state files, which --in-process does not use: leave one of them out");
                }
                Some(mode)
            }
        };
        let max_count = self.max_count.unwrap_or(DEFAULT_MAX_COUNT);
        if max_count == 0 {
            bail!("max count 0 would refuse every request: set at least 1");
        }
        if max_count > MAX_COUNT_CEILING {
            bail!("max count {max_count} is over the ceiling of {MAX_COUNT_CEILING} ids per request: set at most that (ask for more ids in several requests)");
        }
        let max_batches = self.max_batches.unwrap_or(DEFAULT_MAX_BATCHES);
        if !(1..=MAX_BATCHES_CEILING).contains(&max_batches) {
            bail!("max batches {max_batches} is not from 1 to {MAX_BATCHES_CEILING}: set how many large batches may be in flight at once (--max-batches; each holds about 256 KB)");
        }
        let timeout = match self.timeout_ms {
            Some(0) => bail!("timeout 0 ms would fail every request: set at least 1"),
            Some(ms) => Duration::from_millis(ms),
            None => DEFAULT_TIMEOUT,
        };
        let header_timeout = match self.header_timeout_ms {
            None => DEFAULT_HEADER_TIMEOUT,
            Some(ms @ 100..=300_000) => Duration::from_millis(ms),
            Some(ms) => bail!("--header-timeout-ms (IDFORGE_HEADER_TIMEOUT_MS, header_timeout_ms in the config file) is {ms}: set from 100 (a client beyond this machine needs that much to send a request head) to 300000 (5 minutes; a longer wait lets connections that never finish their heads pile up)"),
        };
        let idle_timeout = match self.idle_timeout_ms {
            None => DEFAULT_IDLE_TIMEOUT,
            Some(ms @ 1..=3_600_000) => Duration::from_millis(ms),
            Some(ms) => bail!("--idle-timeout-ms (IDFORGE_IDLE_TIMEOUT_MS, idle_timeout_ms in the config file) is {ms}: set from 1 to 3600000 (an hour)"),
        };
        let max_connections = match self.max_connections {
            None => DEFAULT_MAX_CONNECTIONS,
            Some(n) if (1..=MAX_CONNECTIONS_CEILING as u64).contains(&n) => n as usize,
            Some(n) => bail!("--max-connections (IDFORGE_MAX_CONNECTIONS, max_connections in the config file) is {n}: set from 1 to {MAX_CONNECTIONS_CEILING} (each connection takes an open file; see the open-file limit, ulimit -n)"),
        };
        let shutdown_grace = match self.shutdown_grace_ms {
            None => DEFAULT_SHUTDOWN_GRACE,
            Some(ms @ 1..=3_600_000) => Duration::from_millis(ms),
            Some(ms) => bail!("--shutdown-grace-ms (IDFORGE_SHUTDOWN_GRACE_MS, shutdown_grace_ms in the config file) is {ms}: set from 1 to 3600000 (an hour; supervisors kill sooner: Kubernetes after 30 s, systemd after 90 s by default)"),
        };
        let mut tokens = Vec::new();
        if let Some(path) = &self.tokens_file {
            let text = read_secret_file(path)?;
            let from_file: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from)
                .collect();
            if from_file.is_empty() {
                bail!(
                    "the tokens file {} holds no token: write one token per line (lines starting with # are comments)",
                    path.display()
                );
            }
            tokens.extend(from_file);
        }
        if let Some(given) = self.tokens {
            if given.is_empty() {
                bail!("IDFORGE_TOKENS is set but holds no token: set one or more tokens, comma separated, or unset it to serve without authentication");
            }
            tokens.extend(given);
        }
        if let Some(t) = tokens.iter().find(|t| t.chars().any(char::is_whitespace)) {
            bail!(
                "a bearer token holds whitespace ({} characters long): tokens are single words",
                t.len()
            );
        }
        let clock = match self.clock.as_deref().map(|c| c.trim().to_ascii_lowercase()) {
            None => ClockChoice::Auto,
            Some(c) => match c.as_str() {
                "auto" => ClockChoice::Auto,
                "precise" => ClockChoice::Precise,
                "counter" => ClockChoice::Counter,
                "ticker" => ClockChoice::Ticker,
                _ => bail!("clock {c:?}: use auto, precise, counter or ticker"),
            },
        };
        let log_format = match self
            .log_format
            .as_deref()
            .map(|f| f.trim().to_ascii_lowercase())
        {
            None => LogFormat::Text,
            Some(f) => match f.as_str() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => bail!("log format {f:?}: use text or json"),
            },
        };
        let fleet = match self.etcd.as_deref() {
            None => {
                let access = self.etcd_cacert.is_some()
                    || self.etcd_cert.is_some()
                    || self.etcd_key.is_some()
                    || self.etcd_user.is_some()
                    || self.etcd_password.is_some()
                    || self.etcd_password_file.is_some();
                if self.namespace_prefix.is_some() || self.lease_ttl.is_some() || access {
                    bail!("--namespace-prefix, --lease-ttl and the --etcd-* settings go with --etcd (IDFORGE_ETCD): name the etcd endpoints");
                }
                None
            }
            Some(eps) => {
                let endpoints: Vec<String> = eps
                    .split(',')
                    .map(|e| e.trim().to_string())
                    .filter(|e| !e.is_empty())
                    .collect();
                if endpoints.is_empty() {
                    bail!("--etcd needs at least one endpoint, e.g. https://10.0.0.5:2379");
                }
                let password = match (self.etcd_password, &self.etcd_password_file) {
                    (Some(p), _) => Some(p),
                    (None, Some(f)) => Some(
                        Password::from_file(f)
                            .map_err(|e| anyhow::anyhow!("{e} ({})", e.failure.settings()))?,
                    ),
                    (None, None) => None,
                };
                let etcd = EtcdOptions {
                    endpoints,
                    ca_cert: self.etcd_cacert,
                    client_cert: self.etcd_cert,
                    client_key: self.etcd_key,
                    user: self.etcd_user,
                    password,
                    // Set per scheme when each joins its namespace.
                    namespace: None,
                };
                if let Err(e) = etcd.check() {
                    bail!("{e} ({}; etcd_* in the config file)", e.failure.settings());
                }
                if self.node.is_some() || self.host.is_some() || self.nodes.is_some() {
                    bail!("--etcd leases the node ids: leave out --node and --host (IDFORGE_NODE, IDFORGE_HOST, the file's node, host and [nodes])");
                }
                let namespace_prefix = self.namespace_prefix.unwrap_or_default();
                if namespace_prefix.contains('/') {
                    bail!("--namespace-prefix {namespace_prefix:?}: use a name without '/'");
                }
                let lease_ttl = self
                    .lease_ttl
                    .map_or(DEFAULT_LEASE_TTL, Duration::from_secs);
                if lease_ttl < Duration::from_secs(2) {
                    bail!("--lease-ttl must be at least 2 seconds");
                }
                Some(Fleet {
                    etcd,
                    namespace_prefix,
                    lease_ttl,
                })
            }
        };
        Ok(Config {
            listen,
            schemes: self.schemes,
            node: self.node,
            host: self.host,
            nodes: self.nodes.unwrap_or_default(),
            layout: self.layout,
            in_process: self.in_process.unwrap_or(false),
            state_mode,
            max_count,
            timeout,
            max_batches,
            header_timeout,
            idle_timeout,
            max_connections,
            shutdown_grace,
            tokens,
            fleet,
            clock,
            log_format,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_over_env_over_file_over_defaults() {
        let file =
            Settings::from_toml("listen = \"127.0.0.1:1\"\nnode = 3\nmax_count = 10\n").unwrap();
        let env = Settings::from_vars(|k| match k {
            "IDFORGE_NODE" => Some("4".into()),
            "IDFORGE_TOKENS" => Some("a, b,".into()),
            _ => None,
        })
        .unwrap();
        let flags = Settings {
            listen: Some("127.0.0.1:2".into()),
            ..Settings::default()
        };
        let c = flags.or(env).or(file).finish().unwrap();
        assert_eq!(c.listen.port(), 2);
        assert_eq!(c.node, Some(4));
        assert_eq!(c.max_count, 10);
        assert_eq!(c.host, None);
        assert_eq!(c.tokens, ["a", "b"]);
        assert_eq!(c.timeout, DEFAULT_TIMEOUT);
        assert_eq!(Config::default().listen.to_string(), DEFAULT_LISTEN);
    }

    #[test]
    fn connection_limits_and_the_grace_in_layers_with_their_bounds() {
        let d = Config::default();
        assert_eq!(d.header_timeout, DEFAULT_HEADER_TIMEOUT);
        assert_eq!(d.idle_timeout, DEFAULT_IDLE_TIMEOUT);
        assert_eq!(d.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert_eq!(d.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
        // The defaults fit systemd's default of 1,024 open files.
        assert!(DEFAULT_MAX_CONNECTIONS as u64 + RESERVED_FILES <= 1024);
        let file = Settings::from_toml(
            "header_timeout_ms = 2000\nidle_timeout_ms = 30000\nmax_connections = 100\nshutdown_grace_ms = 20000\n",
        )
        .unwrap();
        let env = Settings::from_vars(|k| match k {
            "IDFORGE_MAX_CONNECTIONS" => Some("200".into()),
            "IDFORGE_SHUTDOWN_GRACE_MS" => Some("3000".into()),
            _ => None,
        })
        .unwrap();
        let flags = Settings {
            shutdown_grace_ms: Some(4000),
            ..Settings::default()
        };
        let c = flags.or(env).or(file).finish().unwrap();
        assert_eq!(c.header_timeout, Duration::from_secs(2));
        assert_eq!(c.idle_timeout, Duration::from_secs(30));
        assert_eq!(c.max_connections, 200);
        assert_eq!(c.shutdown_grace, Duration::from_secs(4));
        for (s, says) in [
            (
                "header_timeout_ms = 0",
                "--header-timeout-ms (IDFORGE_HEADER_TIMEOUT_MS, header_timeout_ms in the config file) is 0: set from 100",
            ),
            ("header_timeout_ms = 99", "is 99: set from 100"),
            ("header_timeout_ms = 300001", "to 300000"),
            ("idle_timeout_ms = 0", "--idle-timeout-ms"),
            ("idle_timeout_ms = 3600001", "to 3600000"),
            ("max_connections = 0", "--max-connections"),
            ("max_connections = 1000001", "from 1 to 1000000"),
            ("shutdown_grace_ms = 0", "--shutdown-grace-ms"),
            ("shutdown_grace_ms = 86400000", "to 3600000"),
        ] {
            let e = Settings::from_toml(s).unwrap().finish().unwrap_err();
            assert!(e.to_string().contains(says), "{s}: {e}");
        }
        let e = Settings::from_vars(|k| (k == "IDFORGE_MAX_CONNECTIONS").then(|| "-1".into()));
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("IDFORGE_MAX_CONNECTIONS"));
    }

    #[test]
    fn an_empty_token_list_from_any_source_is_refused() {
        for v in ["", ",", " , ,", "  "] {
            let env = Settings::from_vars(|k| (k == "IDFORGE_TOKENS").then(|| v.into())).unwrap();
            let e = env.finish().expect_err(v).to_string();
            assert!(
                e.contains("IDFORGE_TOKENS is set but holds no token"),
                "{v:?}: {e}"
            );
        }
        let empty = Settings {
            tokens: Some(vec![]),
            ..Settings::default()
        };
        assert!(empty.finish().is_err());
        let dir = std::env::temp_dir().join(format!("idforge-serve-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens");
        std::fs::write(&file, "# no token\n\n").unwrap();
        let mode = |m: u32| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(m)).unwrap();
        };
        mode(0o600);
        let from_file = Settings {
            tokens_file: Some(file.clone()),
            ..Settings::default()
        };
        let e = from_file.clone().finish().unwrap_err().to_string();
        assert!(e.contains("holds no token"), "{e}");
        // A tokens file others could add a token to, or anyone could read, is refused.
        std::fs::write(&file, "alpha\n").unwrap();
        for (m, says) in [
            (0o620, "writable by its group (mode 0620)"),
            (0o602, "writable by everyone"),
            (0o644, "readable by everyone (mode 0644)"),
        ] {
            mode(m);
            let e = from_file.clone().finish().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("chmod 600"), "{m:o}: {e}");
        }
        mode(0o640);
        assert_eq!(from_file.clone().finish().unwrap().tokens, ["alpha"]);
        // A byte-order mark is not part of the first token.
        std::fs::write(&file, "\u{feff}alpha\n").unwrap();
        assert_eq!(from_file.clone().finish().unwrap().tokens, ["alpha"]);
        // In a directory others can write (without the sticky bit), the file could be replaced,
        // for instance by a link to a file of guessable text the service can read.
        let set = |p: &std::path::Path, m: u32| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        };
        set(&dir, 0o777);
        let e = from_file.clone().finish().unwrap_err().to_string();
        assert!(e.contains("without the sticky bit"), "{e}");
        set(&dir, 0o1777);
        assert_eq!(from_file.clone().finish().unwrap().tokens, ["alpha"]);
        set(&dir, 0o700);
        // Not a regular file: refused, not read (a FIFO would hang the start).
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Settings {
            tokens_file: Some(fifo),
            ..Settings::default()
        }
        .finish()
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        // Named by an empty variable (an unset path in a template): refused, not "no tokens".
        let e = Settings::from_vars(|k| (k == "IDFORGE_TOKENS_FILE").then(String::new))
            .unwrap_err()
            .to_string();
        assert!(e.contains("IDFORGE_TOKENS_FILE is set but empty"), "{e}");
        // Unset: no authentication.
        let none = Settings::from_vars(|_| None).unwrap().finish().unwrap();
        assert!(none.tokens.is_empty());
    }

    #[test]
    fn max_count_has_a_ceiling() {
        let at = Settings {
            max_count: Some(MAX_COUNT_CEILING),
            ..Settings::default()
        };
        assert_eq!(at.finish().unwrap().max_count, MAX_COUNT_CEILING);
        let over = Settings {
            max_count: Some(39_000_000_000_000),
            ..Settings::default()
        };
        let e = over.finish().unwrap_err().to_string();
        assert!(e.contains("ceiling of 1000000"), "{e}");
    }

    #[test]
    fn bad_settings_are_refused_with_the_fix() {
        let e = Settings::from_toml("nod = 3").unwrap_err();
        assert!(format!("{e:#}").contains("unknown field"), "{e:#}");
        let e = Settings::from_vars(|k| (k == "IDFORGE_NODE").then(|| "x".into())).unwrap_err();
        assert!(e.to_string().contains("IDFORGE_NODE"), "{e}");
        let bad = Settings {
            listen: Some("localhost".into()),
            ..Settings::default()
        };
        assert!(bad.finish().unwrap_err().to_string().contains("IP:PORT"));
        let zero = Settings {
            max_count: Some(0),
            ..Settings::default()
        };
        assert!(zero.finish().is_err());
        let both = Settings {
            etcd: Some("http://127.0.0.1:2379".into()),
            node: Some(3),
            ..Settings::default()
        };
        assert!(format!("{:#}", both.finish().unwrap_err()).contains("leave out --node"));
        let ttl = Settings {
            etcd: Some("http://127.0.0.1:2379".into()),
            lease_ttl: Some(1),
            ..Settings::default()
        };
        assert!(ttl.finish().unwrap_err().to_string().contains("at least 2"));
        let alone = Settings {
            lease_ttl: Some(5),
            ..Settings::default()
        };
        assert!(alone.finish().unwrap_err().to_string().contains("--etcd"));
    }

    #[test]
    fn the_clock_from_a_flag_the_environment_or_the_file() {
        assert_eq!(
            Settings::default().finish().unwrap().clock,
            ClockChoice::Auto
        );
        let file = Settings::from_toml("clock = \"precise\"").unwrap();
        assert_eq!(file.clone().finish().unwrap().clock, ClockChoice::Precise);
        let env = Settings::from_vars(|k| (k == "IDFORGE_CLOCK").then(|| "Ticker".into())).unwrap();
        assert_eq!(
            env.or(file.clone()).finish().unwrap().clock,
            ClockChoice::Ticker
        );
        let bad = Settings {
            clock: Some("sundial".into()),
            ..Settings::default()
        };
        let e = bad.or(file).finish().unwrap_err().to_string();
        assert!(e.contains("auto, precise, counter or ticker"), "{e}");
        let counter = Settings::from_toml("clock = \"counter\"").unwrap();
        assert_eq!(counter.finish().unwrap().clock, ClockChoice::Counter);
    }

    #[test]
    fn the_log_format_from_a_flag_the_environment_or_the_file() {
        assert_eq!(Config::default().log_format, LogFormat::Text);
        let file = Settings::from_toml("log_format = \"json\"").unwrap();
        assert_eq!(file.clone().finish().unwrap().log_format, LogFormat::Json);
        let env =
            Settings::from_vars(|k| (k == "IDFORGE_LOG_FORMAT").then(|| " Text ".into())).unwrap();
        assert_eq!(
            env.or(file.clone()).finish().unwrap().log_format,
            LogFormat::Text
        );
        let flag = Settings {
            log_format: Some("logfmt".into()),
            ..Settings::default()
        };
        let e = flag.or(file).finish().unwrap_err().to_string();
        assert!(e.contains("use text or json"), "{e}");
    }

    #[test]
    fn etcd_from_the_file_and_the_environment() {
        let file = Settings::from_toml(
            "etcd = \"http://a:2379, http://b:2379\"\nnamespace_prefix = \"prod-\"\n",
        )
        .unwrap();
        let env = Settings::from_vars(|k| (k == "IDFORGE_LEASE_TTL").then(|| "4".into())).unwrap();
        let c = env.or(file).finish().unwrap();
        let f = c.fleet.unwrap();
        assert_eq!(f.etcd.endpoints, ["http://a:2379", "http://b:2379"]);
        assert_eq!(f.namespace_prefix, "prod-");
        assert_eq!(f.lease_ttl, Duration::from_secs(4));
        assert!(Config::default().fleet.is_none());
    }

    #[test]
    fn etcd_tls_and_user_from_the_file_and_the_environment_with_the_password_hidden() {
        let dir = std::env::temp_dir().join(format!("idforge-serve-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pw_file = dir.join("pw");
        std::fs::write(&pw_file, "from-the-file\n").unwrap();
        // A secret: a password file everyone can read is refused.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&pw_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let file = Settings::from_toml(&format!(
            "etcd = \"https://a:2379\"\netcd_cacert = \"/ca.pem\"\netcd_cert = \"/c.pem\"\netcd_key = \"/c.key\"\netcd_user = \"idforge\"\netcd_password_file = {pw_file:?}\n"
        ))
        .unwrap();
        let c = file.clone().finish().unwrap();
        let e = &c.fleet.as_ref().unwrap().etcd;
        assert_eq!(e.ca_cert.as_deref(), Some(Path::new("/ca.pem")));
        assert_eq!(e.client_key.as_deref(), Some(Path::new("/c.key")));
        assert_eq!(e.user.as_deref(), Some("idforge"));
        assert_eq!(e.password.as_ref().unwrap().expose(), "from-the-file");
        assert!(!format!("{c:?}").contains("from-the-file"), "{c:?}");
        // The environment's password is over the file's password file.
        let env = Settings::from_vars(|k| {
            (k == "IDFORGE_ETCD_PASSWORD").then(|| "from-the-env".to_string())
        })
        .unwrap();
        assert!(!format!("{env:?}").contains("from-the-env"));
        let c = env.or(file.clone()).finish().unwrap();
        let e = &c.fleet.as_ref().unwrap().etcd;
        assert_eq!(e.password.as_ref().unwrap().expose(), "from-the-env");
        // A flag's password file is over the environment's password.
        let flags = Settings {
            etcd_password_file: Some(pw_file.clone()),
            ..Settings::default()
        };
        let env = Settings::from_vars(|k| (k == "IDFORGE_ETCD_PASSWORD").then(|| "x".into()));
        let c = flags.or(env.unwrap()).or(file).finish().unwrap();
        let e = c.fleet.unwrap().etcd;
        assert_eq!(e.password.unwrap().expose(), "from-the-file");
        // Never the password itself in the file.
        let e = Settings::from_toml("etcd_password = \"x\"").unwrap_err();
        assert!(format!("{e:#}").contains("unknown field"), "{e:#}");
        // https without a CA, and TLS settings without --etcd.
        let e = Settings::from_toml("etcd = \"https://a:2379\"")
            .unwrap()
            .finish()
            .unwrap_err();
        assert!(e.to_string().contains("need the CA certificate"), "{e}");
        let e = Settings::from_toml("etcd_user = \"idforge\"")
            .unwrap()
            .finish()
            .unwrap_err();
        assert!(e.to_string().contains("go with --etcd"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
