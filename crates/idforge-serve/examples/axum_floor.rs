//! The floor `scripts/serve-bench` measures `idforge serve` against: a minimal axum handler that
//! answers a constant string, on the same axum, hyper and tokio versions and the same runtime
//! (one worker per core) as the service. What it serves per second is what this machine's HTTP
//! stack can do with no work in the handler at all.
//!
//! ```sh
//! cargo run --release -p idforge-serve --features bench-examples --example axum_floor -- 127.0.0.1:7471
//! ```

use axum::routing::get;
use axum::Router;

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7471".into());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let app = Router::new().route(
                "/v1/ids/{scheme}",
                get(|| async { "{\"ids\":[\"1861455063470215168\"]}" }),
            );
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .unwrap_or_else(|e| panic!("cannot listen on {addr}: {e}"));
            eprintln!("axum floor: listening on http://{addr}");
            axum::serve(listener, app).await.expect("serve");
        });
}
