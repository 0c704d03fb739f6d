//! Listening, serving and shutting down.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;

use crate::app::App;
use crate::config::Config;
use crate::routes::router;

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
        tracing::warn!("listening on {listen}, beyond this machine, with no bearer tokens: anyone who can reach it can take ids; set --tokens-file or IDFORGE_TOKENS");
    }
    if let Some(w) = config.fleet.as_ref().and_then(|f| f.etcd.warning()) {
        tracing::warn!("{w}");
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
    let served = serve_on(listener, app.clone(), shutdown_signal()).await;
    let releasing = app.clone();
    let failed = tokio::task::spawn_blocking(move || releasing.release_leases())
        .await
        .unwrap_or_default();
    for (scheme, e) in failed {
        tracing::warn!("{scheme}: could not give the node id back ({e}); its lease expires on its own and the reservation stays as its mark");
    }
    // The etcd store owns a runtime of its own, which may not be dropped on an async worker.
    let _ = tokio::task::spawn_blocking(move || drop(app)).await;
    served?;
    tracing::info!("stopped");
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

pub(crate) async fn shutdown_signal() {
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
    tracing::info!("shutting down: no new connections, finishing requests in flight");
}
