//! The service's own cost per request, without the network: requests are handed to the router
//! in a loop on one thread (no TCP, no hyper), and the time per request is compared with a bare
//! axum router whose handler makes the same one-id JSON body.
//!
//! ```sh
//! cargo run --release -p idforge-serve --example stack -- 200000
//! ```
//! Argument: requests per round (default 200,000; at most 5,000,000). Prints, for each router, the
//! best of 5 rounds in nanoseconds per request: the bare router, the service's without a log
//! subscriber (its request log costs a disabled event), then with `tracing-subscriber`'s text and
//! JSON formats writing each line to /dev/null (one `write` per line, as to stderr).

use std::time::Instant;

use axum::body::Body;
use axum::extract::Path;
use axum::http::{header, HeaderValue, Request};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use tower::{Service, ServiceExt};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(200_000, |a| a.parse().expect("a number of requests"))
        .min(5_000_000);
    let app = idforge_serve::App::open(idforge_serve::Config {
        schemes: Some(vec!["uuid7".into()]),
        in_process: true,
        ..idforge_serve::Config::default()
    })
    .expect("uuid7 opens");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let bare = Router::new().route("/v1/ids/{scheme}", get(bare_ids));
    let full = idforge_serve::router(app);
    let best = |router: &Router| {
        (0..5)
            .map(|_| rt.block_on(round(router.clone(), n)))
            .fold(f64::MAX, f64::min)
    };
    let show = |name: &str, ns: f64| {
        println!("{name:>28}: {ns:7.0} ns per request (GET /v1/ids/uuid7, best of 5 x {n})");
    };
    show("bare axum", best(&bare));
    show("idforge-serve, no log", best(&full));
    let null = || {
        std::sync::Arc::new(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .unwrap(),
        )
    };
    let text = tracing_subscriber::fmt()
        .with_writer(null())
        .with_ansi(false)
        .finish();
    show(
        "idforge-serve, text log",
        tracing::subscriber::with_default(text, || best(&full)),
    );
    let json = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_writer(null())
        .finish();
    show(
        "idforge-serve, JSON log",
        tracing::subscriber::with_default(json, || best(&full)),
    );
}

async fn round(mut router: Router, n: u64) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let req = Request::get("/v1/ids/uuid7")
            .header(header::HOST, "localhost")
            .body(Body::empty())
            .unwrap();
        let res = ServiceExt::<Request<Body>>::ready(&mut router)
            .await
            .unwrap()
            .call(req)
            .await
            .unwrap();
        assert!(res.status().is_success());
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        std::hint::black_box(body);
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

async fn bare_ids(Path(scheme): Path<String>) -> Response {
    assert_eq!(scheme, "uuid7");
    let id = idforge::uuid7().unwrap();
    let text = idforge::text::encode(id, 128, idforge::text::Format::Uuid);
    let mut body = Vec::with_capacity(48);
    body.extend_from_slice(b"{\"ids\":[\"");
    body.extend_from_slice(text.as_bytes());
    body.extend_from_slice(b"\"]}");
    let mut res = Response::new(Body::from(body));
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}
