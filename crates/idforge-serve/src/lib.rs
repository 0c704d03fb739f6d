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
use std::sync::atomic::{AtomicU64, Ordering};
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
pub mod json;
mod metrics;

pub use config::{
    Config, Settings, DEFAULT_LISTEN, DEFAULT_MAX_COUNT, DEFAULT_TIMEOUT, ENVIRONMENT,
    MAX_URI_BYTES,
};
use metrics::{Metrics, SchemeGauges};

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
}

/// The service: its configuration and the schemes it opened.
pub struct App {
    config: Config,
    schemes: Vec<Served>,
    metrics: Metrics,
}

impl App {
    /// Opens every scheme of `config` (all of the catalog by default; custom only with a
    /// layout), so that a scheme that cannot be opened stops the service at start.
    ///
    /// # Errors
    /// An unknown scheme, a node that does not fit a scheme's layout, a state file that cannot be
    /// used, with the scheme named.
    pub fn open(config: Config) -> anyhow::Result<Arc<App>> {
        let explicit = config.schemes.is_some();
        let names: Vec<String> = config
            .schemes
            .clone()
            .unwrap_or_else(|| NAMES.iter().map(|n| n.to_string()).collect());
        let mut schemes = Vec::new();
        for name in &names {
            let kind = match resolve(name, config.layout.as_deref()) {
                Ok(k) => k,
                // Serving the whole catalog: custom without a layout (and schemes this build
                // leaves out) are skipped.
                Err(_) if !explicit => continue,
                Err(e) => return Err(e).context("cannot serve the schemes asked for (--schemes)"),
            };
            if schemes.iter().any(|s: &Served| s.gen.kind() == &kind) {
                continue;
            }
            let node = match kind.identity() {
                Identity::Node { .. } => Some(config.node),
                Identity::Host => Some(config.host),
                Identity::Tag { .. } | Identity::None | Identity::PidAndMac => None,
            };
            let mut opts = OpenOptions {
                node,
                ..OpenOptions::default()
            };
            if !config.in_process && kind.host_wide() {
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
            });
        }
        if schemes.is_empty() {
            anyhow::bail!("no scheme to serve: name some with --schemes");
        }
        Ok(Arc::new(App {
            config,
            schemes,
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

    /// The state files in use, by scheme.
    pub fn state_files(&self) -> Vec<(String, std::path::PathBuf)> {
        self.schemes
            .iter()
            .filter_map(|s| Some((s.gen.name().to_string(), s.gen.state_path()?.to_path_buf())))
            .collect()
    }

    fn find(&self, name: &str) -> Result<usize, ApiError> {
        let kind = resolve(name, self.config.layout.as_deref())
            .map_err(|e| fail(StatusCode::BAD_REQUEST, query_words(&format!("{e:#}"))))?;
        self.schemes
            .iter()
            .position(|s| s.gen.kind() == &kind)
            .ok_or_else(|| {
                fail(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "{} is not served here; served: {} (see /v1/schemes for the catalog)",
                        kind.name(),
                        self.scheme_names().join(", ")
                    ),
                )
            })
    }
}

/// The kind of a scheme name: a catalog name, or `custom` with the configured layout.
fn resolve(name: &str, layout: Option<&str>) -> anyhow::Result<Kind> {
    match Kind::from_name(name, None) {
        Ok(k) => Ok(k),
        Err(e) => match layout.and_then(|l| Kind::from_name(name, Some(l)).ok()) {
            Some(k) => Ok(k),
            None => Err(e.into()),
        },
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

/// Opens the schemes, listens on the configured address and serves until SIGTERM or SIGINT.
///
/// # Errors
/// Those of [`App::open`]; an address that cannot be bound.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let listen = config.listen;
    if !listen.ip().is_loopback() && config.tokens.is_empty() {
        eprintln!("idforge serve: warning: listening on {listen}, beyond this machine, with no bearer tokens: anyone who can reach it can take ids; set --tokens-file or IDFORGE_TOKENS");
    }
    let app = App::open(config)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen} (choose another with --listen)"))?;
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
    for (scheme, path) in app.state_files() {
        eprintln!("idforge serve: {scheme}: state file {}", path.display());
    }
    serve_on(listener, app, shutdown_signal()).await?;
    eprintln!("idforge serve: stopped");
    Ok(())
}

/// [`serve`] on a runtime of its own, for a command line.
///
/// # Errors
/// Those of [`serve`], and a runtime that cannot start.
pub fn run_blocking(config: Config) -> anyhow::Result<()> {
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
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_string();
    let res = guarded(&app, req, next).await;
    app.metrics
        .record(&route, res.status().as_u16(), start.elapsed());
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
    // A task of its own, so a panic is a 500 here and not a dropped connection.
    let task = tokio::spawn(next.run(req));
    let abort = task.abort_handle();
    let res = match tokio::time::timeout(app.config.timeout, task).await {
        Ok(Ok(res)) => res,
        Ok(Err(e)) if e.is_panic() => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: the request handler panicked (a bug: please report it)",
            )
        }
        Ok(Err(_)) => return error(StatusCode::SERVICE_UNAVAILABLE, "the request was cancelled"),
        Err(_) => {
            abort.abort();
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
    headers: HeaderMap,
) -> Response {
    ids_inner(app, scheme, query, headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn ids_inner(
    app: Arc<App>,
    scheme: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
    headers: HeaderMap,
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
    let body = negotiate(&headers)?;
    let s = &app.schemes[i];
    let format = s
        .gen
        .text_format(p.get("format").map(String::as_str))
        .map_err(|e| fail(StatusCode::BAD_REQUEST, query_words(&e.to_string())))?;
    // The sequencer may sleep until the next tick when one runs out: off the async workers.
    let worker = app.clone();
    let made = tokio::task::spawn_blocking(move || {
        let s = &worker.schemes[i];
        let mut ids = Vec::with_capacity(count as usize);
        s.gen.take(count, |id| ids.push(id)).map(|()| ids)
    })
    .await
    .map_err(|_| {
        fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error: id generation panicked (a bug: please report it)",
        )
    })?;
    let ids = match made {
        Ok(ids) => ids,
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
    s.issued.fetch_add(ids.len() as u64, Ordering::Relaxed);
    let (content_type, bytes) = match body {
        Body3::Json => {
            let mut out = String::with_capacity(ids.len() * 40 + 12);
            out.push_str("{\"ids\":[");
            for (n, id) in ids.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                // Id text is digits, letters, `-`, `:` and `.`: nothing to escape.
                out.push('"');
                out.push_str(&s.gen.render(*id, format));
                out.push('"');
            }
            out.push_str("]}");
            ("application/json", out.into_bytes())
        }
        Body3::Text => {
            let mut out = String::with_capacity(ids.len() * 40);
            for id in &ids {
                out.push_str(&s.gen.render(*id, format));
                out.push('\n');
            }
            ("text/plain; charset=utf-8", out.into_bytes())
        }
        Body3::Octets => {
            let wide = s.gen.bits() > 64;
            let mut out = Vec::with_capacity(ids.len() * if wide { 16 } else { 8 });
            for id in &ids {
                if wide {
                    out.extend_from_slice(&id.to_be_bytes());
                } else {
                    out.extend_from_slice(&(*id as u64).to_be_bytes());
                }
            }
            ("application/octet-stream", out)
        }
    };
    Ok(Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from(bytes))
        .unwrap_or_else(|_| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot build the response",
            )
        }))
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
    let ready = app
        .schemes
        .iter()
        .all(|s| s.broken.lock().unwrap_or_else(|p| p.into_inner()).is_none());
    let gauges = app.schemes.iter().map(|s| SchemeGauges {
        name: s.gen.name(),
        issued: &s.issued,
        lead: s.gen.lead(),
        node: s.node,
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

    #[test]
    fn library_words_become_query_words() {
        assert_eq!(
            query_words("name the scheme (scheme `uuid7` or scheme `uprotocol`)"),
            "name the scheme (scheme=uuid7 or scheme=uprotocol)"
        );
    }
}
