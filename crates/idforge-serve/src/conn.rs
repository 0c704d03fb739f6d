//! One connection: hyper's HTTP/1 over it, with the time a client has to send a request head
//! and the time a keep-alive connection may wait for its next request bounded, and what the
//! connection is doing, for the connection limit and for shutdown.
//!
//! hyper's own `header_read_timeout` (hyper 1.12) starts its timer as soon as hyper waits for a
//! request head, and that includes a keep-alive connection waiting for its next request: alone,
//! it would close idle keep-alive connections after the header timeout (5 s) instead of the idle
//! timeout. The connection's [`HeadTimer`] gives hyper that timer: for the first request it is
//! the header timeout from the connection's start; for a later one the idle timeout, and from
//! the first byte of the request on, the header timeout.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify, OwnedSemaphorePermit};

/// With every connection slot taken, a connection that has waited this long for a request (a
/// request head not sent whole, or nothing sent since its last response) is closed to make room.
/// A real client sends its request head in one packet, so this closes the connections of a
/// client that holds them without asking (slowloris), and idle keep-alive connections, which
/// their clients reopen when they need them.
pub(crate) const SHED_AFTER: Duration = Duration::from_secs(1);

/// The bounds of one connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    /// The longest a write may wait for the client to read (the request timeout): past it the
    /// connection is closed, so a client that stops reading a streamed batch cannot hold its
    /// connection, nor the batch's place, for ever.
    pub(crate) write_timeout: Duration,
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Closed by either side, by a timeout, or after its last response on shutdown.
    Closed,
    /// Closed at once on shutdown, or to make room: it had not sent a whole request.
    WithoutRequest,
}

/// What a connection is doing, shared by its reader, its service and its timer.
#[derive(Debug)]
pub(crate) struct Conn {
    /// Bytes read from the client.
    read: AtomicU64,
    /// Requests whose head was read whole (their handler was called).
    started: AtomicU64,
    /// Requests whose response was not yet handed to hyper to its end.
    open: AtomicUsize,
    /// When it began to wait for its next request: accepted, or its last response handed over
    /// (milliseconds since [`epoch`]).
    waiting_since: AtomicU64,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

impl Conn {
    fn new() -> Conn {
        Conn {
            read: AtomicU64::new(0),
            started: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            waiting_since: AtomicU64::new(now_ms()),
        }
    }

    fn started(&self) -> u64 {
        self.started.load(Ordering::Acquire)
    }

    /// No request in progress, and none for `at_least`.
    fn waiting_for(&self, at_least: Duration) -> bool {
        self.open.load(Ordering::Acquire) == 0
            && now_ms().saturating_sub(self.waiting_since.load(Ordering::Acquire))
                >= at_least.as_millis() as u64
    }
}

/// Serves one accepted connection until it ends, is closed on shutdown (`stop`), or is closed
/// to make room (`shed`, with every slot taken). Holds its slot (`_slot`) until then.
pub(crate) async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<()>,
    shed: Arc<Notify>,
    _slot: OwnedSemaphorePermit,
) -> Ended {
    // Responses are written whole: no reason to hold small ones back.
    let _ = stream.set_nodelay(true);
    let conn = Arc::new(Conn::new());
    let io = TokioIo::new(Counted {
        io: stream,
        conn: conn.clone(),
        write_timeout: limits.write_timeout,
        stalled: None,
    });
    let service = Counting {
        router: TowerToHyperService::new(router),
        conn: conn.clone(),
    };
    let mut builder = http1::Builder::new();
    builder
        .timer(HeadTimer {
            conn: conn.clone(),
            limits,
        })
        .header_read_timeout(limits.header_timeout);
    let mut http = std::pin::pin!(builder.serve_connection(io, service));
    let mut stopping = false;
    let mut closing = false;
    loop {
        let shed_now = shed.notified();
        tokio::select! {
            // An error is the client's (gone, or a timeout): nothing to do but close.
            _ = http.as_mut() => return Ended::Closed,
            _ = stop.changed(), if !stopping => {
                stopping = true;
                // hyper's graceful shutdown waits for a request head begun to come whole, which
                // a client may never send: such a connection, on which nothing was ever
                // answered, is closed here at once.
                if conn.started() == 0 {
                    return Ended::WithoutRequest;
                }
                // Else hyper closes it at once if it waits for its next request, or after the
                // response of the one in progress.
                if !closing {
                    http.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
            _ = shed_now, if !closing => {
                if conn.waiting_for(SHED_AFTER) {
                    if conn.started() == 0 {
                        return Ended::WithoutRequest;
                    }
                    http.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    }
}

/// The router, counting the connection's requests and marking their responses.
#[derive(Clone)]
struct Counting {
    router: TowerToHyperService<Router>,
    conn: Arc<Conn>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Counting {
    type Response = hyper::Response<Tracked<axum::body::Body>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, req: hyper::Request<Incoming>) -> Self::Future {
        let open = Open::new(&self.conn);
        let res = self.router.call(req);
        Box::pin(async move {
            let res = res.await?;
            Ok(res.map(|inner| Tracked { inner, _open: open }))
        })
    }
}

/// A request in progress on its connection: from its head read whole until its response's body
/// was handed to hyper to its end (or the request was dropped).
struct Open(Arc<Conn>);

impl Open {
    fn new(conn: &Arc<Conn>) -> Open {
        conn.open.fetch_add(1, Ordering::AcqRel);
        conn.started.fetch_add(1, Ordering::AcqRel);
        Open(conn.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.waiting_since.store(now_ms(), Ordering::Release);
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body holding its request's [`Open`] mark.
pub(crate) struct Tracked<B> {
    inner: B,
    _open: Open,
}

impl<B: http_body::Body + Unpin> http_body::Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The connection's socket, counting the bytes read (the first byte of a request head starts
/// its header timeout), and failing a write that has waited [`Limits::write_timeout`] for the
/// client to read (hyper then closes the connection).
struct Counted {
    io: TcpStream,
    conn: Arc<Conn>,
    write_timeout: Duration,
    /// Since when writes wait: set by the first write that found the socket full.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Counted {
    /// `r`, a write's result, unless the writes have waited past the write timeout.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let timeout = self.write_timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if stalled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client read nothing for the request timeout",
            )));
        }
        Poll::Pending
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let n = (buf.filled().len() - before) as u64;
            self.conn.read.fetch_add(n, Ordering::AcqRel);
        }
        r
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.bounded(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.bounded(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.bounded(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The timer hyper's HTTP/1 server asks for when it begins to wait for a request head (its only
/// use of a timer on a server connection), with the deadline `now + header timeout`; when it
/// fires, hyper closes the connection, without a response.
#[derive(Clone)]
struct HeadTimer {
    conn: Arc<Conn>,
    limits: Limits,
}

impl hyper::rt::Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HeadWait::until(Instant::now() + duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        // The first request: the header timeout from the connection's start.
        if self.conn.started() == 0 {
            return Box::pin(HeadWait::until(deadline));
        }
        // A later one: the idle timeout, until the request's first byte comes.
        let mut wait = HeadWait::until(Instant::now() + self.limits.idle_timeout);
        wait.idle = Some(Idle {
            conn: self.conn.clone(),
            read: self.conn.read.load(Ordering::Acquire),
            header_timeout: self.limits.header_timeout,
        });
        Box::pin(wait)
    }
}

/// A keep-alive connection waiting for its next request: the bytes read when it began.
struct Idle {
    conn: Arc<Conn>,
    read: u64,
    header_timeout: Duration,
}

/// A wait for a request head. hyper polls it each time it finds the head still incomplete, so
/// also right after each read.
struct HeadWait {
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// While no byte of the request came: the deadline is the idle timeout's.
    idle: Option<Idle>,
}

impl HeadWait {
    fn until(deadline: Instant) -> HeadWait {
        HeadWait {
            sleep: Box::pin(tokio::time::sleep_until(deadline.into())),
            idle: None,
        }
    }
}

impl Future for HeadWait {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let begun = self
            .idle
            .as_ref()
            .filter(|i| i.conn.read.load(Ordering::Acquire) != i.read)
            .map(|i| i.header_timeout);
        if let Some(header_timeout) = begun {
            // The request's first bytes came: from now, the header timeout.
            self.idle = None;
            let deadline = tokio::time::Instant::now() + header_timeout;
            self.sleep.as_mut().reset(deadline);
        }
        self.sleep.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for HeadWait {}
