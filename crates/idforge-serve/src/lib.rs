//! `idforge serve`: ids of every scheme over HTTP. Every scheme is opened once, at start, through
//! the library's `schemes::open` (host-wide state files by default, so processes of one host
//! never collide and a restart continues after the last id), and shared by all requests.
//!
//! Routes: `GET /v1/ids/{scheme}`, `/v1/inspect/{id}`, `/v1/schemes`, `/healthz`, `/readyz`,
//! `/metrics`, `/openapi.json`; see docs/SERVICE.md and [`openapi()`], the OpenAPI document
//! generated from the route code.
//!
//! Connections are bounded ([`serve_on`]): a client has [`Config::header_timeout`] (5 s) to send
//! a request head, a keep-alive connection waits [`Config::idle_timeout`] (75 s) for its next
//! request, at most [`Config::max_connections`] (512) are open at once, and on SIGTERM the
//! requests in flight have [`Config::shutdown_grace`] (10 s) to finish before their connections
//! are closed and their batches stopped.
//!
//! The service logs through `tracing` events and sets up no subscriber: the program that runs it
//! does (the `idforge` command writes them as text or JSON lines, [`LogFormat`]). Its start and
//! stop messages have the target `idforge_serve::server`, the line per request (method, route,
//! status, latency, request id, scheme and count) `idforge_serve::request`. A program may write
//! the request lines itself, faster than through a subscriber ([`set_request_writer`]; the
//! `idforge` command does for its text format): they still pass the subscriber's filter.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! let config = idforge_serve::Settings::default().finish()?;
//! idforge_serve::serve(config).await
//! # }
//! ```

mod app;
mod auth;
mod config;
mod conn;
mod errors;
mod fleet;
mod ids;
pub mod json;
mod metrics;
mod middleware;
mod negotiate;
mod openapi;
mod routes;
mod server;

pub use app::App;
pub use config::{
    Config, Fleet, LogFormat, Settings, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_LEASE_TTL, DEFAULT_LISTEN, DEFAULT_MAX_BATCHES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_COUNT, DEFAULT_SHUTDOWN_GRACE, DEFAULT_TIMEOUT, ENVIRONMENT,
    MAX_CONNECTIONS_CEILING, MAX_COUNT_CEILING, MAX_URI_BYTES, RESERVED_FILES,
};
pub use middleware::{set_request_writer, RequestLine, REQUEST_LOG};
pub use openapi::{openapi, openapi_json};
pub use routes::router;
pub use server::{
    fit_open_files, run_blocking, serve, serve_on, CannotListen, Stopped, TooFewFiles,
};
