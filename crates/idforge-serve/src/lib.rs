//! `idforge serve`: ids of every scheme over HTTP. Every scheme is opened once, at start, through
//! the library's `schemes::open` (host-wide state files by default, so processes of one host
//! never collide and a restart continues after the last id), and shared by all requests.
//!
//! Routes: `GET /v1/ids/{scheme}`, `/v1/inspect/{id}`, `/v1/schemes`, `/healthz`, `/readyz`,
//! `/metrics`, `/openapi.json`; see docs/SERVICE.md and [`OPENAPI`].
//!
//! The service logs through `tracing` events and sets up no subscriber: the program that runs it
//! does (the `idforge` command writes them as text or JSON lines, [`LogFormat`]). Its start and
//! stop messages have the target `idforge_serve::server`, the line per request (method, route,
//! status, latency, request id, scheme and count) `idforge_serve::request`.
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
mod errors;
mod fleet;
mod ids;
pub mod json;
mod metrics;
mod middleware;
mod negotiate;
mod routes;
mod server;

pub use app::{App, IN_FLIGHT_BATCHES};
pub use config::{
    Config, Fleet, LogFormat, Settings, DEFAULT_LEASE_TTL, DEFAULT_LISTEN, DEFAULT_MAX_COUNT,
    DEFAULT_TIMEOUT, ENVIRONMENT, MAX_COUNT_CEILING, MAX_URI_BYTES,
};
pub use routes::router;
pub use server::{run_blocking, serve, serve_on, CannotListen};

/// The OpenAPI 3 document of the service, as served at `/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");
