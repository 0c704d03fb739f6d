//! What every request passes through: a request id (tower-http's `SetRequestId` and
//! `PropagateRequestId`, made with idforge's own uuid7), limits, authentication, the timeout,
//! panics caught (tower-http's `CatchPanic`, answered with a JSON 500), non-JSON errors made
//! JSON, the metrics and one log line per request.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::{Layer, Service, ServiceBuilder};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};

use crate::app::App;
use crate::auth::authorize;
use crate::config::MAX_URI_BYTES;
use crate::errors::{error, json_errors, needs_json};

/// The header of the request id.
pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id kept from a client.
pub(crate) const MAX_REQUEST_ID: usize = 128;

/// The target of the request log's events (`IDFORGE_LOG=idforge_serve::request=off` silences
/// it).
pub const REQUEST_LOG: &str = "idforge_serve::request";

/// A request's line in the log: what the `tracing` event of target [`REQUEST_LOG`] holds.
#[derive(Debug, Clone, Copy)]
pub struct RequestLine<'a> {
    /// The method, `GET`.
    pub method: &'a str,
    /// The matched route (`/v1/ids/{scheme}`) or `unmatched`.
    pub route: &'a str,
    /// The answer's status.
    pub status: u16,
    /// From the request reaching the routes to its answer, in whole microseconds.
    pub micros: u64,
    /// The request id (the client's, or one made here).
    pub request_id: Option<&'a str>,
    /// The scheme of the ids issued.
    pub scheme: Option<&'a str>,
    /// How many ids were issued.
    pub count: Option<u64>,
}

/// A writer of request lines, set by [`set_request_writer`].
type RequestWriter = Box<dyn Fn(&RequestLine<'_>) + Send + Sync>;

static REQUEST_WRITER: std::sync::OnceLock<RequestWriter> = std::sync::OnceLock::new();

/// Has `write` write the request lines, instead of a `tracing` event each: for a program that
/// writes them faster than its `tracing` subscriber would (the `idforge` command, for its text
/// format). Every request's line goes to `write`, unfiltered: set it only where an info event
/// of target [`REQUEST_LOG`] is enabled, once the subscriber is set (`tracing::enabled!`), so the
/// filter is not asked again per request. Set once per process; returns whether this call set
/// it.
pub fn set_request_writer(write: RequestWriter) -> bool {
    REQUEST_WRITER.set(write).is_ok()
}

/// What the ids route issued, left on its response for the request log.
#[derive(Clone, Copy)]
pub(crate) struct Issued {
    /// The scheme's index in [`App::schemes`].
    pub(crate) scheme: usize,
    pub(crate) count: u64,
}

/// `routes` with every layer a request passes: the request id outermost, then [`Guard`], then
/// panics caught around the handler.
pub(crate) fn layers(routes: Router<Arc<App>>, app: &Arc<App>) -> Router<Arc<App>> {
    // One `Router::layer` of a stack: each layer given to the router separately would box the
    // service and its future once more per request.
    routes.layer(
        ServiceBuilder::new()
            .map_request(drop_unfit_request_id)
            .layer(SetRequestIdLayer::new(REQUEST_ID, Uuid7Ids))
            .layer(PropagateRequestIdLayer::new(REQUEST_ID))
            .layer(GuardLayer(app.clone()))
            .layer(CatchPanicLayer::custom(panicked)),
    )
}

/// Whether a client's request id is kept: 1 to [`MAX_REQUEST_ID`] characters among letters,
/// digits and `-_.:/+=@` (a UUID, a ULID, a trace id), nothing a log line could be forged with.
pub(crate) fn fit_request_id(v: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID).contains(&v.len())
        && v.iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/+=@".contains(b))
}

/// A request id that is not fit to keep is dropped, so that one is made instead.
fn drop_unfit_request_id(mut req: Request) -> Request {
    let headers = req.headers_mut();
    let fit = {
        let mut given = headers.get_all(&REQUEST_ID).iter();
        match (given.next(), given.next()) {
            (None, _) => true,
            (Some(v), None) => fit_request_id(v.as_bytes()),
            // Two ids: keep neither.
            (Some(_), Some(_)) => false,
        }
    };
    if !fit {
        headers.remove(&REQUEST_ID);
    }
    req
}

/// Makes request ids: uuid7, from idforge's in-process generator.
#[derive(Clone, Copy)]
pub(crate) struct Uuid7Ids;

impl MakeRequestId for Uuid7Ids {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let id = idforge::uuid7().ok()?;
        let text = idforge::text::encode(id.as_u128(), 128, idforge::text::Format::Uuid);
        HeaderValue::from_str(text.as_str())
            .ok()
            .map(RequestId::new)
    }
}

/// The answer to a handler that panicked: a JSON 500 (the connection stays), and an error in the
/// log.
fn panicked(err: Box<dyn Any + Send + 'static>) -> Response<Body> {
    let what = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    tracing::error!(
        panic = what,
        "a request handler panicked (a bug: please report it)"
    );
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal error: the request handler panicked (a bug: please report it)",
    )
}

/// [`Guard`] around a service.
#[derive(Clone)]
pub(crate) struct GuardLayer(Arc<App>);

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;
    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            app: self.0.clone(),
        }
    }
}

/// Every request passes here: the URL length, the bearer token, the timeout, non-JSON errors
/// made JSON, the metrics and the request log. A tower service of its own rather than
/// `axum::middleware::from_fn`, which clones the inner service and boxes two futures per
/// request: this boxes none.
#[derive(Clone)]
pub(crate) struct Guard<S> {
    inner: S,
    app: Arc<App>,
}

impl<S, B> Service<Request> for Guard<S>
where
    S: Service<Request, Response = axum::http::Response<B>, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Guarded<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Guarded<S::Future> {
        let start = Instant::now();
        let app = self.app.clone();
        let seen = Seen::of(&req);
        let (handler, refused) = match admit(&app, &mut req) {
            Some(refused) => {
                finish(&app, &seen, start, &refused);
                (None, Some(refused))
            }
            // Called after `poll_ready` on this service, which asked the inner one.
            None => (Some(self.inner.call(req)), None),
        };
        Guarded {
            handler,
            refused,
            app,
            seen,
            start,
            timer: None,
            rewrite: None,
        }
    }
}

pin_project_lite::pin_project! {
    /// A request admitted by [`Guard`], on its way through the handler: the timeout, a non-JSON
    /// error made JSON, then the metrics and the log line.
    ///
    /// A future of its own rather than a boxed `async` block: the block's state held the
    /// handler's future twice (captured, then pinned) besides the state of every await, 1.6 KB
    /// in all, past glibc's small bins, allocated for every request. This one is the handler's
    /// future and a few words, kept in place in the router's future; the rare paths (the timer,
    /// the rewrite of an error body) are boxed.
    pub(crate) struct Guarded<F> {
        // None for a request refused before its handler (`refused`).
        #[pin]
        handler: Option<F>,
        refused: Option<Response>,
        app: Arc<App>,
        seen: Seen,
        start: Instant,
        // Armed when the handler did not answer when first polled. Most answer then (one id):
        // a timer costs a runtime handle and an entry in the timer wheel.
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
        // An error answer whose body is not JSON, being rewritten as JSON.
        rewrite: Option<Pin<Box<dyn Future<Output = Response> + Send>>>,
    }
}

impl<F, B> Future for Guarded<F>
where
    F: Future<Output = Result<axum::http::Response<B>, Infallible>>,
    B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Some(refused) = this.refused.take() {
            // Its metrics and log line were written when it was refused.
            return Poll::Ready(Ok(refused));
        }
        let Some(handler) = this.handler.as_pin_mut() else {
            panic!("a guarded request's answer is polled after it was given");
        };
        let res = if let Some(rewrite) = this.rewrite {
            std::task::ready!(rewrite.as_mut().poll(cx))
        } else {
            // The handler first: an answer that is there when the deadline passes is taken.
            match handler.poll(cx) {
                Poll::Ready(Ok(res)) => {
                    let res = res.map(Body::new);
                    if needs_json(&res) {
                        let mut rewrite = Box::pin(json_errors(res));
                        match rewrite.as_mut().poll(cx) {
                            Poll::Ready(res) => res,
                            Poll::Pending => {
                                *this.rewrite = Some(rewrite);
                                return Poll::Pending;
                            }
                        }
                    } else {
                        res
                    }
                }
                Poll::Ready(Err(never)) => match never {},
                Poll::Pending => {
                    let deadline = *this.start + this.app.config.timeout;
                    let timer = this
                        .timer
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
                    std::task::ready!(timer.as_mut().poll(cx));
                    // On the timeout the handler is dropped with this future (tower-http's
                    // `TimeoutLayer` answers with an empty body: this answer says what to do).
                    // A panic is caught inside, by `CatchPanic`.
                    error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &format!(
                            "the request took longer than {} ms (--timeout-ms); ask for fewer ids",
                            this.app.config.timeout.as_millis()
                        ),
                    )
                }
            }
        };
        finish(this.app, this.seen, *this.start, &res);
        Poll::Ready(Ok(res))
    }
}

/// What the request log needs of a request, taken before the request goes to its handler.
struct Seen {
    route: Option<MatchedPath>,
    method: Method,
    id: Option<HeaderValue>,
}

impl Seen {
    fn of(req: &Request) -> Seen {
        Seen {
            route: req.extensions().get::<MatchedPath>().cloned(),
            method: req.method().clone(),
            id: req
                .extensions()
                .get::<RequestId>()
                .map(|i| i.header_value().clone()),
        }
    }
}

/// The metrics and the log line of a finished request.
fn finish(app: &App, seen: &Seen, start: Instant, res: &Response) {
    let took = start.elapsed();
    let route = seen.route.as_ref().map_or("unmatched", |m| m.as_str());
    let status = res.status().as_u16();
    app.metrics.record(route, status, took);
    let issued = res.extensions().get::<Issued>().copied();
    let micros = took.as_micros() as u64;
    if let Some(write) = REQUEST_WRITER.get() {
        write(&RequestLine {
            method: seen.method.as_str(),
            route,
            status,
            micros,
            request_id: seen.id.as_ref().and_then(|i| i.to_str().ok()),
            scheme: issued.and_then(|i| Some(app.schemes.get(i.scheme)?.gen.name())),
            count: issued.map(|i| i.count),
        });
        return;
    }
    // Text fields as `&str`, which a subscriber takes as it is (`record_str`), without a
    // formatter call per field.
    tracing::info!(
        target: REQUEST_LOG,
        method = seen.method.as_str(),
        route,
        status,
        latency_ms = micros as f64 / 1000.0,
        request_id = seen.id.as_ref().and_then(|i| i.to_str().ok()),
        scheme = issued.and_then(|i| Some(app.schemes.get(i.scheme)?.gen.name())),
        count = issued.map(|i| i.count),
        "request"
    );
}

/// Marks a request to `/readyz` made without a token on a service with tokens: it is answered
/// without the reasons of a 503.
#[derive(Clone, Copy)]
pub(crate) struct Anonymous;

/// What is checked before a request goes to its handler: the URL length, the bearer token, and
/// HEAD on a route that issues ids. `Some` is the answer to a request refused.
fn admit(app: &App, req: &mut Request) -> Option<Response> {
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return Some(error(
            StatusCode::URI_TOO_LONG,
            &format!("the request target is {uri_len} bytes; the limit is {MAX_URI_BYTES}"),
        ));
    }
    if !app.tokens.is_empty() && req.uri().path() != "/healthz" {
        // /readyz without a token (a kubelet's httpGet probe, a load balancer's health check)
        // says ready or not, without the reasons; a token that is sent must be right.
        if req.uri().path() == "/readyz" && !req.headers().contains_key(header::AUTHORIZATION) {
            req.extensions_mut().insert(Anonymous);
        } else if let Err(e) = authorize(&app.tokens, req.headers()) {
            return Some(e.into_response());
        }
    }
    // HEAD is answered as GET without the body, except where a GET issues ids: a HEAD must not
    // take ids only to throw them away.
    if req.method() == Method::HEAD && req.uri().path().starts_with("/v1/ids/") {
        let mut r = error(
            StatusCode::METHOD_NOT_ALLOWED,
            "HEAD would issue ids only to throw them away: use GET",
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return Some(r);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use axum::routing::get;

    /// A service of uuid7 with `timeout`.
    fn app(timeout: std::time::Duration) -> Arc<App> {
        App::open(Config {
            schemes: Some(vec!["uuid7".into()]),
            in_process: true,
            timeout,
            ..Config::default()
        })
        .unwrap()
    }

    /// The answer to `GET path` from `routes` behind [`layers`] of `app`.
    fn answer(app: &Arc<App>, routes: Router<Arc<App>>, path: &str) -> String {
        use std::io::{Read, Write};
        let routes = layers(routes, app).with_state(app.clone());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(async move { axum::serve(listener, routes).await });
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        // A future that never finishes fails the test rather than hanging it.
        s.set_read_timeout(Some(std::time::Duration::from_secs(120)))
            .unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        rt.shutdown_background();
        out
    }

    #[test]
    fn a_handler_past_the_timeout_is_a_json_503_and_is_dropped() {
        struct Dropped(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = dropped.clone();
        let slow = Router::new().route(
            "/slow",
            get(move || {
                let guard = Dropped(flag.clone());
                async move {
                    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                    drop(guard);
                    "unreachable"
                }
            }),
        );
        let out = answer(&app(std::time::Duration::from_millis(200)), slow, "/slow");
        assert!(out.starts_with("HTTP/1.1 503"), "{out}");
        assert!(
            out.contains("{\"error\":\"the request took longer than 200 ms (--timeout-ms)"),
            "{out}"
        );
        // The handler was dropped, not left running: the answer is sent once the guard's
        // future returned, and hyper drops that future as it writes the answer.
        let t = std::time::Instant::now();
        while !dropped.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(60),
                "the handler still runs"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn error_bodies_that_are_not_json_are_made_json_whether_ready_or_not() {
        use axum::http::StatusCode;
        // A plain-text error, whole when the handler answers.
        let plain = Router::new().route(
            "/plain",
            get(|| async { (StatusCode::IM_A_TEAPOT, "short and stout") }),
        );
        let out = answer(&app(std::time::Duration::from_secs(10)), plain, "/plain");
        assert!(out.starts_with("HTTP/1.1 418"), "{out}");
        assert!(out.contains("{\"error\":\"short and stout\"}"), "{out}");
        // A plain-text error whose body comes later: its rewrite waits for it.
        let late = Router::new().route(
            "/late",
            get(|| async {
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                tokio::spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    let _ = tx.send(());
                });
                let body = futures_util::stream::once(async move {
                    let _ = rx.await;
                    Ok::<_, std::convert::Infallible>(axum::body::Bytes::from_static(b"came late"))
                });
                (StatusCode::BAD_GATEWAY, Body::from_stream(body))
            }),
        );
        let out = answer(&app(std::time::Duration::from_secs(10)), late, "/late");
        assert!(out.starts_with("HTTP/1.1 502"), "{out}");
        assert!(out.contains("{\"error\":\"came late\"}"), "{out}");
        // A success is left as it is.
        let ok = Router::new().route("/ok", get(|| async { "plain and fine" }));
        let out = answer(&app(std::time::Duration::from_secs(10)), ok, "/ok");
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        assert!(out.ends_with("plain and fine"), "{out}");
    }

    #[test]
    fn a_panicking_handler_is_a_json_500_not_a_dropped_connection() {
        let app = app(std::time::Duration::from_secs(10));
        let boom = Router::new().route(
            "/boom",
            get(|| async {
                if std::hint::black_box(true) {
                    panic!("a bug in a handler");
                }
                "unreachable"
            }),
        );
        let out = answer(&app, boom, "/boom");
        assert!(out.starts_with("HTTP/1.1 500"), "{out}");
        assert!(
            out.contains("{\"error\":\"internal error: the request handler panicked"),
            "{out}"
        );
        assert!(app
            .metrics
            .render(std::iter::empty(), true)
            .contains("route=\"/boom\",status=\"500\"} 1"));
    }
}
