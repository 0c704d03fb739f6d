//! The axum floor (`examples/axum_floor.rs`: a handler that answers a constant string) with the
//! per-request work every production service built from the ecosystem's libraries does, and
//! nothing of idforge's: a bearer token compared in constant time (`subtle`, on SHA-256 digests),
//! tower-http's request ids (`SetRequestId` with a UUIDv7 maker, `PropagateRequestId`) and
//! `CatchPanic`, a request timeout, and prometheus-client's request counter and latency histogram.
//! `scripts/serve-bench` runs it beside the floor and `idforge serve`: the gap from the floor to
//! it is what those libraries cost per request on this machine; the gap from it to `idforge
//! serve` is idforge's own.
//!
//! ```sh
//! cargo run --release -p idforge-serve --features bench-examples --example axum_layers -- 127.0.0.1:7472 TOKEN
//! ```

use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteStatus {
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    route: String,
}

#[derive(Clone)]
struct Shared {
    token: [u8; 32],
    requests: Family<RouteStatus, Counter>,
    latency: Family<Route, Histogram, fn() -> Histogram>,
}

#[derive(Clone, Copy)]
struct Uuid7Ids;

impl MakeRequestId for Uuid7Ids {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let id = idforge::uuid7().ok()?;
        HeaderValue::from_str(&id.to_string())
            .ok()
            .map(RequestId::new)
    }
}

async fn guard(
    axum::extract::State(s): axum::extract::State<Shared>,
    req: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let given = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .map(|t| <[u8; 32]>::from(Sha256::digest(t)));
    if !given.is_some_and(|g| bool::from(g.ct_eq(&s.token))) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let res = match tokio::time::timeout(Duration::from_secs(10), next.run(req)).await {
        Ok(res) => res,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    };
    let route = "/v1/ids/{scheme}".to_string();
    s.requests
        .get_or_create(&RouteStatus {
            route: route.clone(),
            status: res.status().as_u16(),
        })
        .inc();
    s.latency
        .get_or_create(&Route { route })
        .observe(start.elapsed().as_secs_f64());
    res
}

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:7472".into());
    let token = args.next().unwrap_or_else(|| "token".into());
    let shared = Shared {
        token: Sha256::digest(token.trim().as_bytes()).into(),
        requests: Family::default(),
        latency: Family::new_with_constructor(|| {
            Histogram::new([
                0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0,
                10.0,
            ])
        }),
    };
    let request_id = HeaderName::from_static("x-request-id");
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let app = Router::new()
                .route(
                    "/v1/ids/{scheme}",
                    get(|| async { "{\"ids\":[\"1861455063470215168\"]}" }),
                )
                .layer(
                    ServiceBuilder::new()
                        .layer(SetRequestIdLayer::new(request_id.clone(), Uuid7Ids))
                        .layer(PropagateRequestIdLayer::new(request_id))
                        .layer(middleware::from_fn_with_state(shared, guard))
                        .layer(CatchPanicLayer::new()),
                );
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .unwrap_or_else(|e| panic!("cannot listen on {addr}: {e}"));
            eprintln!("axum with layers: listening on http://{addr}");
            axum::serve(listener, app).await.expect("serve");
        });
}
