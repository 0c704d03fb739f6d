//! The service's own cost per request, without the network: requests are handed to the router
//! in a loop on one thread (no TCP, no hyper), and the time per request is compared with a bare
//! axum router whose handler makes the same one-id JSON body.
//!
//! ```sh
//! cargo run --release -p idforge-serve --features bench-examples --example stack -- 200000
//! ```
//! Argument: requests per round (default 200,000; at most 5,000,000). Prints, for each router, the
//! best of 5 rounds in nanoseconds per request: the bare router, the service's without a log
//! subscriber (its request log costs a disabled event), then with `tracing-subscriber`'s text and
//! JSON formats writing each line to /dev/null (one `write` per line, as to stderr).
//!
//! Over HTTP, with the load generator `examples/load.rs` beside it:
//! ```sh
//! cargo run --release -p idforge-serve --features bench-examples --example stack -- serve bare 127.0.0.1:7481 30 &
//! cargo run --release -p idforge-serve --features bench-examples --example load -- 127.0.0.1:7481 /v1/ids/uuid7 4 5
//! ```
//! `serve KIND ADDR SECONDS` serves `bare` (the bare router), `full` (the service's, no log) or
//! `text` (the service's, text log to /dev/null) on a runtime of one worker per core, for at most
//! SECONDS (at most 300).

use std::time::Instant;

use axum::body::Body;
use axum::extract::Path;
use axum::http::{header, HeaderValue, Request};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use tower::{Service, ServiceExt};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        return serve(&args[1..]);
    }
    let n: u64 = args
        .first()
        .map_or(200_000, |a| a.parse().expect("a number of requests"))
        .min(5_000_000);
    let app = open_uuid7();
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
    // Two threads on one router, as a runtime's two workers: what its shared state (locks,
    // counters, reference counts written by both) costs when two cores take requests at once.
    let best2 = |router: &Router| {
        (0..5)
            .map(|_| {
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..2 {
                        let r = router.clone();
                        s.spawn(move || {
                            tokio::runtime::Builder::new_current_thread()
                                .enable_all()
                                .build()
                                .unwrap()
                                .block_on(round(r, n))
                        });
                    }
                });
                start.elapsed().as_nanos() as f64 / (2 * n) as f64
            })
            .fold(f64::MAX, f64::min)
    };
    show("bare axum, 2 threads", best2(&bare));
    show("idforge-serve, 2 threads", best2(&full));
    let null = null_writer;
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

/// /dev/null, as a log's writer: one `write` per line.
fn null_writer() -> std::sync::Arc<std::fs::File> {
    std::sync::Arc::new(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap(),
    )
}

fn open_uuid7() -> std::sync::Arc<idforge_serve::App> {
    idforge_serve::App::open(idforge_serve::Config {
        schemes: Some(vec!["uuid7".into()]),
        in_process: true,
        ..idforge_serve::Config::default()
    })
    .expect("uuid7 opens")
}

/// `serve KIND ADDR SECONDS`.
fn serve(args: &[String]) {
    let usage = "usage: stack serve bare|full|text ADDR SECONDS";
    let kind = args.first().expect(usage).as_str();
    let addr = args.get(1).expect(usage).clone();
    let secs: u64 = args.get(2).map_or(30, |s| s.parse().expect(usage)).min(300);
    let router = match kind {
        "bare" => Router::new().route("/v1/ids/{scheme}", get(bare_ids)),
        "full" | "text" => idforge_serve::router(open_uuid7()),
        _ => panic!("{usage}"),
    };
    if kind == "text" {
        let sub = tracing_subscriber::fmt()
            .with_writer(null_writer())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(sub).unwrap();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await.unwrap();
        let stop = tokio::time::sleep(std::time::Duration::from_secs(secs));
        axum::serve(listener, router)
            .with_graceful_shutdown(stop)
            .await
            .unwrap();
    });
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
    let text = idforge::text::encode(id.as_u128(), 128, idforge::text::Format::Uuid);
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
