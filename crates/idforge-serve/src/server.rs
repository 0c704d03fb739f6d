//! Listening, serving and shutting down: an accept loop over hyper's HTTP/1 connections, with
//! the connections bounded in number ([`Config::max_connections`]) and in how long they may wait
//! for a request ([`Config::header_timeout`], [`Config::idle_timeout`]), and a shutdown bounded
//! by [`Config::shutdown_grace`].

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::app::App;
use crate::config::{Config, RESERVED_FILES};
use crate::conn::{serve_connection, Ended, Limits, Reaper, Registry, SHED_AFTER};
use crate::routes::router;

/// How [`serve_on`] stopped.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// When `shutdown` completed: the listener was closed then.
    pub signalled: Instant,
    /// The grace the requests in flight had ([`Config::shutdown_grace`]).
    pub grace: Duration,
    /// Connections still open at the end of the grace, closed with their requests unfinished
    /// (their batches stop within a chunk of ids).
    pub cut: usize,
    /// Connections closed at once, as they had not sent a whole request (a request head begun
    /// and never finished holds no shutdown open).
    pub without_request: usize,
}

impl Stopped {
    /// What the log says: `stopped after N ms; K connections closed unfinished ...`, the time
    /// counted from [`Stopped::signalled`] to now.
    pub fn summary(&self) -> String {
        let n = |k: usize| if k == 1 { "connection" } else { "connections" };
        let mut s = format!(
            "stopped after {} ms; {} {} closed unfinished",
            self.signalled.elapsed().as_millis(),
            self.cut,
            n(self.cut)
        );
        if self.cut > 0 {
            s.push_str(&format!(
                " (requests still in flight at the end of the {} ms grace, --shutdown-grace-ms)",
                self.grace.as_millis()
            ));
        }
        if self.without_request > 0 {
            s.push_str(&format!(
                "; {} {} without a whole request closed at once",
                self.without_request,
                n(self.without_request)
            ));
        }
        s
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then stops as on SIGTERM:
///
/// * at most [`Config::max_connections`] connections are open at once; past it new ones wait in
///   the listen backlog, and those that have waited over a second for a request (a request
///   head not sent whole, or nothing since their last response) are closed to make room;
/// * a client has [`Config::header_timeout`] to send a whole request head (from the
///   connection's start, then from the first byte of each later request), and a keep-alive
///   connection may wait [`Config::idle_timeout`] for its next request; past either the
///   connection is closed without a response;
/// * on `shutdown` the listener is closed, connections that have not sent a whole request are
///   closed at once, the others after the response of their request in flight; those still
///   open after [`Config::shutdown_grace`] are closed, their handlers dropped (which stops their
///   batches).
///
/// The open-file limit is the caller's: [`serve`] checks it ([`fit_open_files`]).
///
/// # Errors
/// None as yet: failures to accept a connection are retried (after 100 ms, as when the process
/// runs out of open files).
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Stopped> {
    let limits = Limits {
        header_timeout: app.config.header_timeout,
        idle_timeout: app.config.idle_timeout,
        write_timeout: app.config.timeout,
    };
    let max = app.config.max_connections;
    let grace = app.config.shutdown_grace;
    let router = router(app);
    let slots = Arc::new(Semaphore::new(max));
    let registry = Arc::new(Registry::default());
    let reaper = tokio::spawn(Reaper::run(registry.clone(), limits));
    let mut conns: JoinSet<Ended> = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut full_said = Quiet::default();
    let mut accept_said = Quiet::default();
    // Connections not served for want of a slot, closed at once on shutdown.
    let mut unserved = 0;
    'serving: loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // The client left before it was accepted.
                Err(e) if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) => continue,
                // Out of open files (EMFILE, ENFILE) or memory: wait for some to be freed.
                Err(e) => {
                    if accept_said.due(Duration::from_secs(10)) {
                        tracing::warn!("cannot accept a connection ({e}); retrying every 100 ms");
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                        _ = &mut shutdown => break 'serving,
                    }
                }
            },
            // Ended connections are collected as they end.
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            _ = &mut shutdown => break 'serving,
        };
        // A slot for it. Past the limit this one connection waits here, accepted, and the
        // others in the kernel's listen backlog; meanwhile the connections that have waited
        // over SHED_AFTER for a request are closed to make room.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if full_said.due(Duration::from_secs(60)) {
                    tracing::warn!("{max} connections open (--max-connections): new ones wait in the listen backlog; those waiting over {} s for a request are closed to make room", SHED_AFTER.as_secs());
                }
                loop {
                    registry.shed_idle();
                    tokio::select! {
                        slot = slots.clone().acquire_owned() => break slot.expect("the semaphore is never closed"),
                        // Connections may become closable meanwhile.
                        _ = tokio::time::sleep(SHED_AFTER / 4) => {}
                        Some(_) = conns.join_next(), if !conns.is_empty() => {}
                        _ = &mut shutdown => {
                            unserved += 1;
                            break 'serving;
                        }
                    }
                }
            }
        };
        conns.spawn(serve_connection(
            stream,
            router.clone(),
            registry.register(),
            limits,
            slot,
        ));
    }
    let signalled = Instant::now();
    drop(listener);
    registry.stop_all();
    let mut without_request = unserved;
    let drained = tokio::time::timeout_at((signalled + grace).into(), async {
        while let Some(ended) = conns.join_next().await {
            if let Ok(Ended::WithoutRequest) = ended {
                without_request += 1;
            }
        }
    })
    .await;
    let cut = if drained.is_err() { conns.len() } else { 0 };
    // Dropping a connection drops its handler, which stops its batch.
    conns.shutdown().await;
    reaper.abort();
    Ok(Stopped {
        signalled,
        grace,
        cut,
        without_request,
    })
}

/// Says a thing at most once per period.
#[derive(Default)]
struct Quiet(Option<Instant>);

impl Quiet {
    fn due(&mut self, period: Duration) -> bool {
        let due = self.0.is_none_or(|t| t.elapsed() >= period);
        if due {
            self.0 = Some(Instant::now());
        }
        due
    }
}

/// The process's open-file limit cannot hold [`Config::max_connections`] and the files the
/// service needs besides ([`RESERVED_FILES`]): the command line ends with exit code 2 for it.
#[derive(Debug)]
pub struct TooFewFiles {
    /// The connection limit asked for.
    pub max_connections: usize,
    /// The open files it needs.
    pub needed: u64,
    /// The most this process may open (its hard RLIMIT_NOFILE, or the soft one where it could
    /// not be raised).
    pub limit: u64,
}

impl std::fmt::Display for TooFewFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--max-connections {} needs {} open files ({RESERVED_FILES} more for the service's own), but this process may open at most {} (RLIMIT_NOFILE): raise the limit (systemd: LimitNOFILE={}; a shell: ulimit -n; Docker: --ulimit nofile={}) or set --max-connections {} or less",
            self.max_connections,
            self.needed,
            self.limit,
            self.needed,
            self.needed,
            self.limit.saturating_sub(RESERVED_FILES).max(1)
        )
    }
}

impl std::error::Error for TooFewFiles {}

/// Makes room for `max_connections` connections and the files the service needs besides
/// ([`RESERVED_FILES`]) under the process's open-file limit: a soft limit below that is raised
/// to the hard limit (the soft one is often 1,024 while the hard one is far higher). Returns
/// what it did, for the log.
///
/// # Errors
/// [`TooFewFiles`]: the hard limit is below what is needed (or the soft one could not be
/// raised).
// rlim_t is u64 on Linux, not on every Unix.
#[allow(clippy::unnecessary_cast)]
pub fn fit_open_files(max_connections: usize) -> Result<Option<String>, TooFewFiles> {
    let needed = max_connections as u64 + RESERVED_FILES;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the rlimit it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        // The limit is unknown: connections past it wait for files to be freed (accept retries).
        return Ok(None);
    }
    let unlimited = libc::RLIM_INFINITY;
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max);
    if soft == unlimited || soft as u64 >= needed {
        return Ok(None);
    }
    if hard != unlimited && (hard as u64) < needed {
        return Err(TooFewFiles {
            max_connections,
            needed,
            limit: hard as u64,
        });
    }
    // The hard limit, or what is needed when the hard limit is "unlimited" (Linux refuses a soft
    // limit over fs.nr_open).
    let wanted = needed as libc::rlim_t;
    let targets = if hard == unlimited {
        [wanted, wanted]
    } else {
        [hard, wanted]
    };
    for target in targets {
        let raised = libc::rlimit {
            rlim_cur: target,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the rlimit it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(Some(format!(
                "raised the open-file limit (RLIMIT_NOFILE) from {soft} to {target}: --max-connections {max_connections} needs {needed}"
            )));
        }
    }
    Err(TooFewFiles {
        max_connections,
        needed,
        limit: soft as u64,
    })
}

/// The configured address cannot be listened on (in use, or not permitted): the command line
/// ends with its own exit code for it.
#[derive(Debug)]
pub struct CannotListen {
    /// The address.
    pub addr: std::net::SocketAddr,
    /// Why.
    pub source: std::io::Error,
}

impl std::fmt::Display for CannotListen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hint = match self.source.kind() {
            std::io::ErrorKind::AddrInUse => {
                "another process listens there: stop it, or choose another address with --listen"
            }
            std::io::ErrorKind::PermissionDenied => {
                "ports below 1024 need privileges: choose a port from 1024 with --listen"
            }
            _ => "choose another address with --listen",
        };
        write!(
            f,
            "cannot listen on {}: {} ({hint})",
            self.addr, self.source
        )
    }
}

// The message already says the cause (the `source` field), so it is not given again as the
// error's source: a chain printed whole would repeat it.
impl std::error::Error for CannotListen {}

/// The listen backlog asked for: connections past `--max-connections` wait there (the kernel
/// caps it at `net.core.somaxconn`).
pub(crate) const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `addr` with a backlog of [`LISTEN_BACKLOG`] (tokio's `bind` asks for 128).
fn bind(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std's and tokio's own bind do on Unix: a restarted server binds again at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Opens the schemes, listens on the configured address and serves ([`serve_on`]) until SIGTERM
/// or SIGINT; then gives the leased node ids back and says how it stopped.
///
/// # Errors
/// [`TooFewFiles`] (checked first, by [`fit_open_files`]); those of [`App::open`]; an address
/// that cannot be bound ([`CannotListen`]).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    if let Some(note) = fit_open_files(config.max_connections)? {
        tracing::info!("{note}");
    }
    let listen = config.listen;
    let grace = config.shutdown_grace;
    if !listen.ip().is_loopback() && config.tokens.is_empty() {
        let warning = format!("listening on {listen}, beyond this machine, with no bearer tokens: anyone who can reach it can take ids; set --tokens-file or IDFORGE_TOKENS");
        // A program embedding the service may have set no subscriber: this one is not lost.
        if tracing::dispatcher::has_been_set() {
            tracing::warn!("{warning}");
        } else {
            eprintln!("idforge-serve: warning: {warning}");
        }
    }
    if let Some(w) = config.fleet.as_ref().and_then(|f| f.etcd.warning()) {
        tracing::warn!("{w}");
    }
    // Joining a fleet talks to etcd and may wait: off the async workers.
    let app = tokio::task::spawn_blocking(move || App::open(config))
        .await
        .context("opening the schemes panicked")??;
    let listener = bind(listen).map_err(|source| CannotListen {
        addr: listen,
        source,
    })?;
    let addr = listener.local_addr()?;
    tracing::info!(
        "listening on http://{addr}; schemes: {}; auth: {}",
        app.scheme_names().join(", "),
        if app.config.tokens.is_empty() {
            "none"
        } else {
            "bearer tokens"
        }
    );
    if let Some(note) = app.left_out_note() {
        tracing::info!("{note}");
    }
    for (scheme, path) in app.state_files() {
        tracing::info!("{scheme}: state file {}", path.display());
    }
    for (scheme, namespace, node, token) in app.leases() {
        tracing::info!("{scheme}: node {node} leased from etcd namespace {namespace:?} (fencing token {token})");
    }
    let watcher = (!app.leases().is_empty()).then(|| tokio::spawn(watch_leases(app.clone())));
    let served = serve_on(listener, app.clone(), shutdown_signal(grace)).await;
    if let Some(w) = watcher {
        w.abort();
    }
    let releasing = app.clone();
    let failed = tokio::task::spawn_blocking(move || releasing.release_leases())
        .await
        .unwrap_or_default();
    for (scheme, e) in failed {
        tracing::warn!("{scheme}: could not give the node id back ({e}); its lease expires on its own and the reservation stays as its mark");
    }
    // The etcd store owns a runtime of its own, which may not be dropped on an async worker.
    let _ = tokio::task::spawn_blocking(move || drop(app)).await;
    let stopped = served?;
    tracing::info!("{}", stopped.summary());
    Ok(())
}

/// Logs what happens to the leased node ids while the service runs: a scheme that stops issuing
/// (and why: the lease lost, renewals refused or failing), one that issues again, and the
/// store's errors as they start and end. Without it a service whose etcd turned authentication
/// off stopped issuing in silence.
async fn watch_leases(app: Arc<App>) {
    let mut seen: Vec<Option<(bool, Option<String>)>> = vec![None; app.schemes.len()];
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        for (s, last) in app.schemes.iter().zip(seen.iter_mut()) {
            let Some(st) = s.lease_status() else { continue };
            let name = s.gen.name();
            let (was_issuing, was_error) = last.clone().unwrap_or((true, None));
            if st.store_error != was_error {
                match &st.store_error {
                    Some(e) => tracing::warn!("{name}: node {}: etcd: {e}", st.node),
                    None => tracing::info!("{name}: node {}: etcd answers again", st.node),
                }
            }
            if st.issuing != was_issuing {
                if st.issuing {
                    tracing::info!("{name}: node {} issues again", st.node);
                } else {
                    tracing::warn!(
                        "{name}: node {} stopped issuing: {} (requests for {name} get 503 until it holds its node id again)",
                        st.node,
                        st.why_not_issuing()
                    );
                }
            }
            *last = Some((st.issuing, st.store_error.clone()));
        }
    }
}

/// How long [`run_blocking`] waits, once [`serve`] returned, for the blocking pool's tasks: the
/// batches of the connections closed at the end of the grace were told to stop and stop within a
/// chunk of ids (milliseconds), but no blocking task may keep the process alive.
const BLOCKING_WAIT: Duration = Duration::from_secs(1);

/// [`serve`] on a runtime of its own, for a command line.
///
/// # Errors
/// Those of [`serve`], and a runtime that cannot start.
pub fn run_blocking(config: Config) -> anyhow::Result<()> {
    // One worker per core (tokio's default): measured faster than one worker on 2 cores with
    // the load generator beside the server (docs/BENCHMARKS.md).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = rt.block_on(serve(config));
    // Dropping the runtime would wait for every blocking task, however long.
    rt.shutdown_timeout(BLOCKING_WAIT);
    served
}

pub(crate) async fn shutdown_signal(grace: Duration) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!(
        "shutting down: no new connections, finishing the requests in flight for at most {} ms (--shutdown-grace-ms)",
        grace.as_millis()
    );
}
