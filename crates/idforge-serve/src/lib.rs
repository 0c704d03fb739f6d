//! `idforge serve`: ids of every scheme over HTTP. Every scheme is opened once, at start, through
//! the library's `schemes::open` (host-wide state files by default, so processes of one host
//! never collide and a restart continues after the last id), and shared by all requests.
//!
//! Routes: `GET /v1/ids/{scheme}`, `/v1/inspect/{id}`, `/v1/schemes`, `/healthz`, `/readyz`,
//! `/metrics`, `/openapi.json`; see docs/SERVICE.md and [`OPENAPI`].
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! let config = idforge_serve::Settings::default().finish()?;
//! idforge_serve::serve(config).await
//! # }
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use axum::body::Body;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use idforge::inspect::inspect_as;
use idforge::schemes::catalog::{Identity, Kind, NAMES};
use idforge::schemes::open::{OpenOptions, Opened};
use idforge::text::Format;
use idforge::StateOptions;

mod config;
mod fleet;
pub mod json;
mod metrics;

pub use config::{
    Config, Fleet, Settings, DEFAULT_LEASE_TTL, DEFAULT_LISTEN, DEFAULT_MAX_COUNT, DEFAULT_TIMEOUT,
    ENVIRONMENT, MAX_COUNT_CEILING, MAX_URI_BYTES,
};
use fleet::{Lease, LeaseStatus};
use metrics::{LeaseGauges, Metrics, SchemeGauges};

/// The OpenAPI 3 document of the service, as served at `/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// One scheme the service issues.
struct Served {
    gen: Opened,
    /// The node (or host) id it issues with, for the metrics.
    node: Option<u64>,
    issued: AtomicU64,
    /// Why it can no longer issue (a lost state file), once that happened.
    broken: Mutex<Option<String>>,
    /// Its node id's lease, with `--etcd`.
    lease: Option<Lease>,
}

impl Served {
    fn lease_status(&self) -> Option<LeaseStatus> {
        self.lease.as_ref().and_then(Lease::status)
    }
}

/// The service: its configuration and the schemes it opened.
pub struct App {
    config: Config,
    schemes: Vec<Served>,
    /// The schemes of the catalog not served for want of a node id, with the flag that gives one.
    left_out: Vec<(String, &'static str)>,
    /// The custom scheme of the configured layout.
    custom: Option<Kind>,
    /// Ids of the batches in flight on the blocking pool: at most [`IN_FLIGHT_BATCHES`] times
    /// the max count, so concurrent large requests cannot exhaust memory.
    in_flight: Arc<tokio::sync::Semaphore>,
    metrics: Metrics,
}

/// The ids of the large batches in flight are at most this many times `--max-count`; past that a
/// request for a large batch gets 503 with `Retry-After: 1`.
pub const IN_FLIGHT_BATCHES: u64 = 8;

impl App {
    /// Opens every scheme of `config` (all of the catalog by default; custom only with a
    /// layout), so that a scheme that cannot be opened stops the service at start. A scheme with
    /// a node (or host) id is served only with one: from `config.node`, `config.host`,
    /// `config.nodes` or leased with `config.fleet`; serving the whole catalog, the others are
    /// left out ([`App::left_out`]).
    ///
    /// # Errors
    /// An unknown scheme, a scheme named in `config.schemes` (or custom, by its layout) that
    /// needs a node id none was given for, a layout that does not parse, a `max_count` over
    /// [`MAX_COUNT_CEILING`], a node that does not fit a scheme's layout, a state file that
    /// cannot be used, with the scheme named.
    pub fn open(config: Config) -> anyhow::Result<Arc<App>> {
        if config.max_count > MAX_COUNT_CEILING {
            anyhow::bail!(
                "max count {} is over the ceiling of {MAX_COUNT_CEILING} ids per request: set at most that (--max-count)",
                config.max_count
            );
        }
        // The layout is parsed whether or not custom is asked for: a setting the service cannot
        // use stops it, with the reason `idforge gen --layout` gives.
        let custom = match config.layout.as_deref() {
            Some(spec) => Some(
                Kind::from_name("custom", Some(spec))
                    .context("the custom scheme's layout (--layout) does not parse")?,
            ),
            None => None,
        };
        for name in config.nodes.keys() {
            let kind = resolve(name, custom.as_ref()).with_context(|| {
                format!("[nodes] in the config file names {name:?}, not a scheme")
            })?;
            if !matches!(kind.identity(), Identity::Node { .. } | Identity::Host) {
                anyhow::bail!(
                    "[nodes] in the config file gives {} a node id, but it has no node field",
                    kind.name()
                );
            }
        }
        let explicit = config.schemes.is_some();
        let names: Vec<String> = config
            .schemes
            .clone()
            .unwrap_or_else(|| NAMES.iter().map(|n| n.to_string()).collect());
        let mut schemes = Vec::new();
        let mut left_out = Vec::new();
        for name in &names {
            let kind = match resolve(name, custom.as_ref()) {
                Ok(k) => k,
                // Serving the whole catalog: custom without a layout (and schemes this build
                // leaves out) are skipped.
                Err(_) if !explicit => continue,
                Err(e) => return Err(e).context("cannot serve the schemes asked for (--schemes)"),
            };
            if schemes.iter().any(|s: &Served| s.gen.kind() == &kind) {
                continue;
            }
            let own = config.nodes.get(kind.name()).copied();
            let (node, needs) = match kind.identity() {
                Identity::Node { .. } => (own.or(config.node), Some("--node N")),
                Identity::Host => (own.or(config.host), Some("--host N")),
                Identity::Tag { .. } | Identity::None | Identity::PidAndMac => (None, None),
            };
            // idforge never picks a node id: a scheme with one is served only with a node id
            // given for it, or leased from etcd.
            if let (None, Some(flag), None) = (node, needs, &config.fleet) {
                // custom is asked for by its layout.
                if explicit || matches!(kind, Kind::Layout(idforge::Scheme::Custom(_))) {
                    anyhow::bail!(
                        "{} needs a node id, and idforge never picks one: give {flag} (or \
                         {} = N under [nodes] in the config file, or --etcd), or leave {} out of --schemes",
                        kind.name(),
                        kind.name(),
                        kind.name()
                    );
                }
                left_out.push((kind.name().to_string(), flag));
                continue;
            }
            let mut opts = OpenOptions {
                node,
                clock: config.clock,
                ..OpenOptions::default()
            };
            // With --etcd the node id is leased, and the member's cell keeps the stamp (with
            // time reserved in etcd) instead of a state file.
            let lease = match &config.fleet {
                Some(f) if kind.leases_node() => Some(Lease::join(f, &kind, &mut opts)?),
                _ => None,
            };
            let node = opts.node;
            if lease.is_none() && !config.in_process && kind.host_wide() {
                let path = kind.default_state_path(&opts).with_context(|| {
                    format!("{}: no default state file (set IDFORGE_STATE_DIR, or serve with --in-process)", kind.name())
                })?;
                opts.state = Some(StateOptions::new(path));
            }
            let gen = Opened::open(&kind, &opts).with_context(|| {
                format!(
                    "cannot open {} (pick the schemes to serve with --schemes)",
                    kind.name()
                )
            })?;
            schemes.push(Served {
                gen,
                node,
                issued: AtomicU64::new(0),
                broken: Mutex::new(None),
                lease,
            });
        }
        if schemes.is_empty() {
            anyhow::bail!("no scheme to serve: name some with --schemes");
        }
        Ok(Arc::new(App {
            schemes,
            left_out,
            custom,
            in_flight: Arc::new(tokio::sync::Semaphore::new(
                (IN_FLIGHT_BATCHES * config.max_count) as usize,
            )),
            config,
            metrics: Metrics::default(),
        }))
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The names of the schemes served, in catalog order.
    pub fn scheme_names(&self) -> Vec<String> {
        self.schemes
            .iter()
            .map(|s| s.gen.name().to_string())
            .collect()
    }

    /// The schemes of the catalog left out because no node id was given for them (served with
    /// `--node`, `--host`, `[nodes]` in the config file or `--etcd`).
    pub fn left_out(&self) -> Vec<String> {
        self.left_out.iter().map(|(n, _)| n.clone()).collect()
    }

    /// What the log says at start about the schemes left out, if any.
    pub fn left_out_note(&self) -> Option<String> {
        if self.left_out.is_empty() {
            return None;
        }
        let mut flags: Vec<&str> = self.left_out.iter().map(|(_, f)| *f).collect();
        flags.sort_unstable_by(|a, b| b.cmp(a));
        flags.dedup();
        Some(format!(
            "not serving {}: they need a node id, and idforge never picks one; serve them with {} (each server its own), --etcd, or a node id per scheme under [nodes] in the config file",
            self.left_out().join(", "),
            flags.join(" / ")
        ))
    }

    /// The state files in use, by scheme.
    pub fn state_files(&self) -> Vec<(String, std::path::PathBuf)> {
        self.schemes
            .iter()
            .filter_map(|s| Some((s.gen.name().to_string(), s.gen.state_path()?.to_path_buf())))
            .collect()
    }

    /// The leases held, by scheme: (scheme, namespace, node id, fencing token).
    pub fn leases(&self) -> Vec<(String, String, u64, i64)> {
        self.schemes
            .iter()
            .filter_map(|s| {
                let st = s.lease_status()?;
                Some((s.gen.name().to_string(), st.namespace, st.node, st.token))
            })
            .collect()
    }

    /// Gives every leased node id back (recording the last time issued as its mark); after this
    /// the leased schemes issue nothing. Returns the failures, by scheme.
    pub fn release_leases(&self) -> Vec<(String, String)> {
        self.schemes
            .iter()
            .filter_map(|s| {
                let e = s.lease.as_ref()?.shutdown().err()?;
                Some((s.gen.name().to_string(), e))
            })
            .collect()
    }

    fn find(&self, name: &str) -> Result<usize, ApiError> {
        // The usual request names a served scheme exactly.
        if let Some(i) = self.schemes.iter().position(|s| s.gen.name() == name) {
            return Ok(i);
        }
        let not_served = |name: &str| {
            fail(
                StatusCode::BAD_REQUEST,
                format!(
                    "{name} is not served here; served: {} (see /v1/schemes for the catalog)",
                    self.scheme_names().join(", ")
                ),
            )
        };
        let kind = match resolve(name, self.custom.as_ref()) {
            Ok(kind) => kind,
            Err(_) if name.trim().eq_ignore_ascii_case("custom") => {
                return Err(not_served("custom"))
            }
            Err(e) => {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    query_words(&format!("{e:#}")),
                ))
            }
        };
        self.schemes
            .iter()
            .position(|s| s.gen.kind() == &kind)
            .ok_or_else(|| not_served(kind.name()))
    }
}

/// The kind of a scheme name: a catalog name, or `custom` with the configured layout.
fn resolve(name: &str, custom: Option<&Kind>) -> anyhow::Result<Kind> {
    match (Kind::from_name(name, None), custom) {
        (Ok(k), _) => Ok(k),
        (Err(_), Some(c)) if name.trim().eq_ignore_ascii_case("custom") => Ok(c.clone()),
        (Err(e), _) => Err(e.into()),
    }
}

/// The service's routes over `app`, with authentication, limits, metrics and JSON errors.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/v1/ids/{scheme}", get(ids))
        .route("/v1/inspect/{id}", get(inspect))
        .route("/v1/schemes", get(schemes))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/openapi.json", get(openapi))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Serves `app` on `listener` until `shutdown` completes, then finishes the requests in flight.
///
/// # Errors
/// An error of the listener.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown)
        .await
        .context("the server failed")
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

impl std::error::Error for CannotListen {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Opens the schemes, listens on the configured address and serves until SIGTERM or SIGINT.
///
/// # Errors
/// Those of [`App::open`]; an address that cannot be bound ([`CannotListen`]).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let listen = config.listen;
    if !listen.ip().is_loopback() && config.tokens.is_empty() {
        eprintln!("idforge serve: warning: listening on {listen}, beyond this machine, with no bearer tokens: anyone who can reach it can take ids; set --tokens-file or IDFORGE_TOKENS");
    }
    if let Some(w) = config.fleet.as_ref().and_then(|f| f.etcd.warning()) {
        eprintln!("idforge serve: warning: {w}");
    }
    // Joining a fleet talks to etcd and may wait: off the async workers.
    let app = tokio::task::spawn_blocking(move || App::open(config))
        .await
        .context("opening the schemes panicked")??;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| CannotListen {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr()?;
    eprintln!(
        "idforge serve: listening on http://{addr}; schemes: {}; auth: {}",
        app.scheme_names().join(", "),
        if app.config.tokens.is_empty() {
            "none"
        } else {
            "bearer tokens"
        }
    );
    if let Some(note) = app.left_out_note() {
        eprintln!("idforge serve: {note}");
    }
    for (scheme, path) in app.state_files() {
        eprintln!("idforge serve: {scheme}: state file {}", path.display());
    }
    for (scheme, namespace, node, token) in app.leases() {
        eprintln!("idforge serve: {scheme}: node {node} leased from etcd namespace {namespace:?} (fencing token {token})");
    }
    let served = serve_on(listener, app.clone(), shutdown_signal()).await;
    let releasing = app.clone();
    let failed = tokio::task::spawn_blocking(move || releasing.release_leases())
        .await
        .unwrap_or_default();
    for (scheme, e) in failed {
        eprintln!("idforge serve: {scheme}: could not give the node id back ({e}); its lease expires on its own and the reservation stays as its mark");
    }
    // The etcd store owns a runtime of its own, which may not be dropped on an async worker.
    let _ = tokio::task::spawn_blocking(move || drop(app)).await;
    served?;
    eprintln!("idforge serve: stopped");
    Ok(())
}

/// [`serve`] on a runtime of its own, for a command line.
///
/// # Errors
/// Those of [`serve`], and a runtime that cannot start.
pub fn run_blocking(config: Config) -> anyhow::Result<()> {
    // One worker per core (tokio's default): measured faster than one worker on 2 cores with
    // the load generator beside the server (docs/BENCHMARKS.md).
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(serve(config))
}

async fn shutdown_signal() {
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
    eprintln!("idforge serve: shutting down: no new connections, finishing requests in flight");
}

/// A JSON error response: `{"error": "..."}`.
fn error(status: StatusCode, msg: &str) -> Response {
    let body = serde_json::json!({ "error": msg }).to_string();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// An error answer: a status and a message, sent as `{"error": message}` (401 adds
/// `WWW-Authenticate: Bearer`).
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    msg: String,
}

fn fail(status: StatusCode, msg: impl Into<String>) -> ApiError {
    ApiError {
        status,
        msg: msg.into(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = error(self.status, &self.msg);
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"idforge\""),
            );
        }
        r
    }
}

/// A 200 response with a JSON body.
fn json_ok(v: &serde_json::Value) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        v.to_string(),
    )
        .into_response()
}

/// Every request passes here: the URL length, the bearer token, the timeout, a panic caught,
/// non-JSON errors made JSON, and the metrics.
async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let res = guarded(&app, req, next).await;
    app.metrics.record(
        route.as_ref().map_or("unmatched", |m| m.as_str()),
        res.status().as_u16(),
        start.elapsed(),
    );
    res
}

async fn guarded(app: &Arc<App>, req: Request, next: Next) -> Response {
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return error(
            StatusCode::URI_TOO_LONG,
            &format!("the request target is {uri_len} bytes; the limit is {MAX_URI_BYTES}"),
        );
    }
    if !app.config.tokens.is_empty() && req.uri().path() != "/healthz" {
        if let Err(e) = authorize(&app.config.tokens, req.headers()) {
            return e.into_response();
        }
    }
    // HEAD is answered as GET without the body, except where a GET issues ids: a HEAD must not
    // take ids only to throw them away.
    if req.method() == axum::http::Method::HEAD && req.uri().path().starts_with("/v1/ids/") {
        let mut r = error(
            StatusCode::METHOD_NOT_ALLOWED,
            "HEAD would issue ids only to throw them away: use GET",
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    // A panic is caught here, so it is a 500 and not a dropped connection; on the timeout the
    // handler is dropped.
    let handler = CatchPanic(Box::pin(next.run(req)));
    let res = match tokio::time::timeout(app.config.timeout, handler).await {
        Ok(Ok(res)) => res,
        Ok(Err(())) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: the request handler panicked (a bug: please report it)",
            )
        }
        Err(_) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "the request took longer than {} ms (--timeout-ms); ask for fewer ids",
                    app.config.timeout.as_millis()
                ),
            );
        }
    };
    json_errors(res).await
}

/// A future whose panic is caught and answered as `Err(())` (the handler is then dropped).
struct CatchPanic<F>(std::pin::Pin<Box<F>>);

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, ()>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let fut = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(std::task::Poll::Ready(v)) => std::task::Poll::Ready(Ok(v)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(_) => std::task::Poll::Ready(Err(())),
        }
    }
}

/// Error responses that are not JSON yet (the router's own: 405, bad path text) made JSON.
async fn json_errors(res: Response) -> Response {
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return res;
    }
    let (parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let msg = if text.trim().is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text.trim().to_string()
    };
    let mut out = error(status, &msg);
    for (k, v) in &parts.headers {
        if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
            out.headers_mut().insert(k, v.clone());
        }
    }
    out
}

/// Checks the bearer token: 401 without one, 403 with a wrong one.
fn authorize(tokens: &[String], headers: &HeaderMap) -> Result<(), ApiError> {
    let unauthorized = |msg: &str| fail(StatusCode::UNAUTHORIZED, msg);
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(unauthorized(
            "this service needs a bearer token: send `Authorization: Bearer TOKEN`",
        ));
    };
    let value = value.as_bytes();
    let given = match value.get(..7) {
        Some(p) if p.eq_ignore_ascii_case(b"bearer ") => value[7..].trim_ascii(),
        _ => {
            return Err(unauthorized(
                "the Authorization header is not `Bearer TOKEN`",
            ))
        }
    };
    // Every token is compared, each in time that depends only on the length of the given one.
    let mut any = false;
    for t in tokens {
        any |= constant_time_eq(given, t.as_bytes());
    }
    if any {
        Ok(())
    } else {
        Err(fail(
            StatusCode::FORBIDDEN,
            "the bearer token is not one of this service's tokens",
        ))
    }
}

/// Whether `given` equals `secret`, in time that depends only on `given`'s length.
fn constant_time_eq(given: &[u8], secret: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let mut diff = u64::from(given.len() != secret.len());
    for (i, b) in given.iter().enumerate() {
        diff |= u64::from(b ^ secret[i % secret.len()]);
    }
    std::hint::black_box(diff) == 0
}

async fn not_found(req: Request) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!(
            "no route {}: see /openapi.json for the routes",
            req.uri().path()
        ),
    )
}

type Params = Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>;

/// The query parameters, refusing any not in `known`.
fn params(q: Params, known: &[&str]) -> Result<HashMap<String, String>, ApiError> {
    let Query(map) = q.map_err(|e| fail(StatusCode::BAD_REQUEST, e.body_text()))?;
    if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown parameter {k:?}: this route takes {}",
                known.join(", ")
            ),
        ));
    }
    Ok(map)
}

/// The representation a request accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body3 {
    Json,
    Text,
    Octets,
}

/// The best representation the `Accept` header allows (JSON without one).
fn negotiate(headers: &HeaderMap) -> Result<Body3, ApiError> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(Body3::Json);
    };
    let mut ranges: Vec<(f32, usize, Body3)> = Vec::new();
    for (i, range) in accept.split(',').enumerate() {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let body = match media.as_str() {
            "application/json" | "application/*" | "*/*" => Body3::Json,
            "text/plain" | "text/*" => Body3::Text,
            "application/octet-stream" => Body3::Octets,
            _ => continue,
        };
        if q > 0.0 {
            ranges.push((q, i, body));
        }
    }
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges.first().map(|r| r.2).ok_or_else(|| {
        fail(
            StatusCode::NOT_ACCEPTABLE,
            format!("cannot answer in {accept:?}: accept application/json, text/plain or application/octet-stream"),
        )
    })
}

/// The HTTP status of a generator's refusal.
fn refusal(e: &idforge::Error) -> StatusCode {
    use idforge::Error as E;
    match e {
        E::StateFile(_)
        | E::LeaseLost { .. }
        | E::ClockBehind { .. }
        | E::TimeOutOfRange { .. }
        | E::BeforeEpoch { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn ids(
    State(app): State<Arc<App>>,
    scheme: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
    req: Request,
) -> Response {
    ids_inner(app, scheme, query, req.headers())
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn ids_inner(
    app: Arc<App>,
    scheme: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let Path(scheme) = scheme.map_err(|e| fail(StatusCode::BAD_REQUEST, e.body_text()))?;
    let p = params(query, &["count", "format"])?;
    let i = app.find(&scheme)?;
    let max = app.config.max_count;
    let count = match p.get("count") {
        None => 1,
        Some(c) => match c.trim().parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "count {c:?} is not a number from 1 to {max} (the service's --max-count)"
                    ),
                ))
            }
        },
    };
    let body = negotiate(headers)?;
    let s = &app.schemes[i];
    let format = s
        .gen
        .text_format(p.get("format").map(String::as_str))
        .map_err(|e| fail(StatusCode::BAD_REQUEST, query_words(&e.to_string())))?;
    // Small batches are made here; a large one (the sequencer may sleep until the next tick
    // when one runs out) on the blocking pool, off the async workers.
    let made = if count <= INLINE_COUNT {
        issue(s, count, body, format, &AtomicBool::new(false))
    } else {
        // count <= max_count <= MAX_COUNT_CEILING: it fits a u32. The permit goes with the
        // batch, so it is held until the batch is made, even past the request's timeout.
        let Ok(permit) = app.in_flight.clone().try_acquire_many_owned(count as u32) else {
            let mut r = fail(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "too many ids in flight (at most {} in large batches at once): retry in a second",
                    IN_FLIGHT_BATCHES * max
                ),
            )
            .into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return Ok(r);
        };
        let worker = app.clone();
        // A request that timed out (503) or whose client left drops this future, and with it
        // the guard: the batch stops within a chunk instead of taking every id it was asked
        // for (40 timed-out Sonyflake batches tied the scheme up for about 156 s).
        let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
        let cancelled = cancel.0.clone();
        tokio::task::spawn_blocking(move || {
            let made = issue(&worker.schemes[i], count, body, format, &cancelled);
            drop(permit);
            made
        })
        .await
        .map_err(|_| {
            fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: id generation panicked (a bug: please report it)",
            )
        })?
    };
    let bytes = match made {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(fail(
                StatusCode::SERVICE_UNAVAILABLE,
                "the batch was stopped: its request is gone",
            ))
        }
        Err(e) => {
            if matches!(e, idforge::Error::StateFile(_)) {
                *s.broken.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
            return Err(fail(
                refusal(&e),
                format!("{} refused to issue: {e}", s.gen.name()),
            ));
        }
    };
    s.issued.fetch_add(count, Ordering::Relaxed);
    let content_type = match body {
        Body3::Json => "application/json",
        Body3::Text => "text/plain; charset=utf-8",
        Body3::Octets => "application/octet-stream",
    };
    let mut res = Response::new(Body::from(bytes));
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

/// Batches up to this many ids are made on the async worker: at most one tick's wait.
const INLINE_COUNT: u64 = 64;

/// Ids are taken this many at a time, and a batch whose request is gone (timed out, or its
/// client left) stops between two of them: one Sonyflake tick's worth, 10 ms (several batches
/// share one scheme's ticks, so a chunk of 4,096 took over a second with 8 batches).
const CHUNK: u64 = 256;

/// `count` ids of `s`, written straight into the body (no id is kept apart from its text);
/// `None` when `cancelled` was set before the batch was complete (its request is gone, and the
/// rest of its ids are not taken).
fn issue(
    s: &Served,
    count: u64,
    body: Body3,
    format: idforge::schemes::open::TextFormat,
    cancelled: &AtomicBool,
) -> Result<Option<Vec<u8>>, idforge::Error> {
    use idforge::schemes::open::TextFormat;
    let bits = s.gen.bits();
    let n = count as usize;
    // Id text is digits, letters, `-`, `:` and `.`: nothing to escape in JSON.
    let put = |out: &mut Vec<u8>, id: u128| match format {
        TextFormat::Plain(f) => {
            out.extend_from_slice(idforge::text::encode(id, bits, f).as_bytes())
        }
        TextFormat::Time => out.extend_from_slice(s.gen.render(id, format).as_bytes()),
    };
    let width = match format {
        TextFormat::Plain(idforge::text::Format::Uuid) => 36,
        TextFormat::Plain(idforge::text::Format::Hex) => idforge::text::hex_width(bits),
        TextFormat::Plain(idforge::text::Format::Base32) => idforge::text::base32_width(bits),
        TextFormat::Plain(idforge::text::Format::Dec) if bits <= 64 => 20,
        _ => 40,
    };
    let per_id = match body {
        Body3::Json => width + 3,
        Body3::Text => width + 1,
        Body3::Octets if bits > 64 => 16,
        Body3::Octets => 8,
    };
    let mut out = Vec::with_capacity(n * per_id + 10);
    if body == Body3::Json {
        out.extend_from_slice(b"{\"ids\":[");
    }
    let mut first = true;
    let mut left = count;
    while left > 0 {
        if cancelled.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let k = left.min(CHUNK);
        s.gen.take(k, |id| match body {
            Body3::Json => {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.push(b'"');
                put(&mut out, id);
                out.push(b'"');
            }
            Body3::Text => {
                put(&mut out, id);
                out.push(b'\n');
            }
            Body3::Octets if bits > 64 => out.extend_from_slice(&id.to_be_bytes()),
            Body3::Octets => out.extend_from_slice(&(id as u64).to_be_bytes()),
        })?;
        left -= k;
    }
    if body == Body3::Json {
        out.extend_from_slice(b"]}");
    }
    Ok(Some(out))
}

/// Sets its flag when dropped: a handler holds one while its batch is made elsewhere, and the
/// handler's future is dropped when the request times out or its client leaves.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A library message in the service's words: ``format `hex` `` as `format=hex`, the command
/// that lists the schemes as the route that does.
fn query_words(msg: &str) -> String {
    let mut s = msg.replace(
        "run `idforge schemes` for the list",
        "see /v1/schemes for the list",
    );
    for word in ["format", "scheme"] {
        let pat = format!("{word} `");
        while let Some(i) = s.find(&pat) {
            let after = i + pat.len();
            match s[after..].find('`') {
                Some(j) if !s[after..after + j].contains(' ') => {
                    let v = s[after..after + j].to_string();
                    s.replace_range(i..after + j + 1, &format!("{word}={v}"));
                }
                _ => break,
            }
        }
    }
    s
}

async fn inspect(
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
) -> Response {
    let res = (|| -> Result<Response, ApiError> {
        let Path(id) = id.map_err(|e| fail(StatusCode::BAD_REQUEST, e.body_text()))?;
        let p = params(query, &["scheme", "layout", "format", "host_digits"])?;
        let bad = |m: String| fail(StatusCode::BAD_REQUEST, query_words(&m));
        let kind = match (p.get("scheme"), p.get("layout")) {
            (Some(name), layout) => Some(
                Kind::from_name(name, layout.map(String::as_str))
                    .map_err(|e| bad(e.to_string()))?,
            ),
            (None, Some(layout)) => {
                Some(Kind::from_name("custom", Some(layout)).map_err(|e| bad(e.to_string()))?)
            }
            (None, None) => None,
        };
        let timestamps = matches!(
            kind,
            Some(Kind::NanoTsHost) | Some(Kind::Layout(idforge::Scheme::NanoTs))
        );
        let format = match p.get("format").map(|f| f.trim()) {
            None => None,
            Some("time") if timestamps => None,
            Some("time") => {
                return Err(bad(
                    "format=time applies only to nanots and nanots-host ids: add scheme=".into(),
                ))
            }
            Some(f) => Some(f.parse::<Format>().map_err(bad)?),
        };
        let host_digits = p
            .get("host_digits")
            .map(|d| {
                d.trim()
                    .parse::<u32>()
                    .map_err(|_| bad(format!("host_digits {d:?} is not 2 or 3")))
            })
            .transpose()?;
        let d =
            inspect_as(&id, kind.as_ref(), format, host_digits).map_err(|e| bad(e.to_string()))?;
        Ok(json_ok(&json::decoded(&d, query_words)))
    })();
    res.unwrap_or_else(IntoResponse::into_response)
}

async fn schemes() -> Response {
    json_ok(&json::schemes())
}

async fn healthz() -> Response {
    json_ok(&serde_json::json!({ "status": "ok" }))
}

/// Ready when every scheme can issue: each issues one id now (ids are cheap, and this is the
/// only test that covers every way of failing: a lost state file, a clock behind).
async fn readyz(State(app): State<Arc<App>>) -> Response {
    let probe = app.clone();
    let problems = tokio::task::spawn_blocking(move || {
        let mut problems = Vec::new();
        for s in &probe.schemes {
            let broken = s.broken.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(why) = broken {
                problems.push(format!("{}: {why}", s.gen.name()));
                continue;
            }
            if let Some(lease) = &s.lease {
                match lease.status() {
                    Some(st) if st.issuing => {}
                    Some(st) => {
                        problems.push(format!(
                            "{}: node {} is not held ({})",
                            s.gen.name(),
                            st.node,
                            st.lost
                                .as_deref()
                                .unwrap_or("the lease could not be renewed in time")
                        ));
                        continue;
                    }
                    None => {
                        problems.push(format!("{}: the node id was given back", s.gen.name()));
                        continue;
                    }
                }
            }
            if let Err(e) = s.gen.next() {
                if matches!(e, idforge::Error::StateFile(_)) {
                    *s.broken.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
                problems.push(format!("{}: {e}", s.gen.name()));
            }
        }
        problems
    })
    .await
    .unwrap_or_else(|_| vec!["the readiness check panicked".into()]);
    if problems.is_empty() {
        json_ok(&serde_json::json!({ "status": "ready" }))
    } else {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("not ready: {}", problems.join("; ")),
        )
    }
}

async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    let leases: Vec<Option<LeaseStatus>> = app.schemes.iter().map(Served::lease_status).collect();
    let ready = app.schemes.iter().zip(&leases).all(|(s, l)| {
        s.broken.lock().unwrap_or_else(|p| p.into_inner()).is_none()
            && (s.lease.is_none() || l.as_ref().is_some_and(|l| l.issuing))
    });
    let gauges = app.schemes.iter().zip(&leases).map(|(s, l)| SchemeGauges {
        name: s.gen.name(),
        issued: &s.issued,
        lead: s.gen.lead(),
        node: l.as_ref().map(|l| l.node).or(s.node),
        lease: s.lease.as_ref().map(|_| LeaseGauges {
            held: l.as_ref().is_some_and(|l| l.issuing),
            token: l.as_ref().map_or(0, |l| l.token),
            ahead_secs: l.as_ref().map_or(0.0, |l| l.ahead_secs),
        }),
    });
    let text = app.metrics.render(gauges, ready);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

async fn openapi() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        OPENAPI,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secre", b"secret"));
        assert!(!constant_time_eq(b"secretsecret", b"secret"));
        assert!(!constant_time_eq(b"secreT", b"secret"));
        assert!(!constant_time_eq(b"", b"secret"));
        assert!(!constant_time_eq(b"", b""));
    }

    #[test]
    fn accept_picks_the_best_representation() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            negotiate(&m)
        };
        assert_eq!(negotiate(&HeaderMap::new()).unwrap(), Body3::Json);
        assert_eq!(h("text/plain").unwrap(), Body3::Text);
        assert_eq!(h("application/octet-stream").unwrap(), Body3::Octets);
        assert_eq!(
            h("application/json;q=0.5, text/plain").unwrap(),
            Body3::Text
        );
        assert_eq!(h("image/png, */*;q=0.1").unwrap(), Body3::Json);
        assert!(h("image/png").is_err());
        assert!(h("text/plain;q=0").is_err());
    }

    #[test]
    fn a_panicking_handler_is_a_json_500_not_a_dropped_connection() {
        use std::io::{Read, Write};
        let app = App::open(Config {
            schemes: Some(vec!["uuid7".into()]),
            in_process: true,
            ..Config::default()
        })
        .unwrap();
        let boom = Router::new()
            .route(
                "/boom",
                get(|| async {
                    if std::hint::black_box(true) {
                        panic!("a bug in a handler");
                    }
                    "unreachable"
                }),
            )
            .layer(middleware::from_fn_with_state(app.clone(), guard))
            .with_state(app.clone());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(async move { axum::serve(listener, boom).await });
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /boom HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 500"), "{out}");
        assert!(
            out.contains("{\"error\":\"internal error: the request handler panicked"),
            "{out}"
        );
        assert!(app
            .metrics
            .render(std::iter::empty(), true)
            .contains("route=\"/boom\",status=\"500\"} 1"));
        rt.shutdown_background();
    }

    #[cfg(not(feature = "etcd"))]
    #[test]
    fn etcd_without_the_feature_says_how_to_build_it() {
        let config = Settings {
            etcd: Some("http://127.0.0.1:2379".into()),
            schemes: Some(vec!["uuid7".into(), "snowflake".into()]),
            in_process: Some(true),
            ..Settings::default()
        }
        .finish()
        .unwrap();
        let e = format!("{:#}", App::open(config).err().expect("refused"));
        assert!(e.contains("built without etcd support"), "{e}");
        assert!(e.contains("--features etcd"), "{e}");
        // Schemes without a node id do not need etcd.
        let config = Settings {
            etcd: Some("http://127.0.0.1:2379".into()),
            schemes: Some(vec!["uuid7".into()]),
            in_process: Some(true),
            ..Settings::default()
        }
        .finish()
        .unwrap();
        assert!(App::open(config).is_ok());
    }

    #[test]
    fn library_words_become_query_words() {
        assert_eq!(
            query_words("name the scheme (scheme `uuid7` or scheme `uprotocol`)"),
            "name the scheme (scheme=uuid7 or scheme=uprotocol)"
        );
    }
}
