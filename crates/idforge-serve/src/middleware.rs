//! What every request passes through: limits, authentication, the timeout, panics caught,
//! JSON errors and the metrics.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::auth::authorize;
use crate::config::MAX_URI_BYTES;
use crate::errors::{error, json_errors};

/// Every request passes here: the URL length, the bearer token, the timeout, a panic caught,
/// non-JSON errors made JSON, and the metrics.
pub(crate) async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
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

pub(crate) async fn guarded(app: &Arc<App>, req: Request, next: Next) -> Response {
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
pub(crate) struct CatchPanic<F>(std::pin::Pin<Box<F>>);

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
#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use axum::middleware;
    use axum::routing::get;
    use axum::Router;

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
}
