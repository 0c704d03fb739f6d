//! One connection: hyper's HTTP/1 over it, with the time a client has to send a request head
//! and the time a keep-alive connection may wait for its next request bounded, and what the
//! connection is doing, for the connection limit and for shutdown.
//!
//! Nothing here costs a timer, a lock or a write to memory another connection shares per
//! request: a connection keeps what it is doing in its own [`Conn`] (a few atomics its own task
//! writes), and one task per server, the [`Reaper`], looks at every connection a few times a
//! second and closes those past their deadline. hyper's own `header_read_timeout` would arm a
//! timer in tokio's timer wheel for every request (and count a keep-alive connection's wait for
//! its next request against the header timeout, not the idle timeout); the connection limit's
//! and shutdown's signals reach a connection through its own [`Notify`], not one shared by all.
//!
//! The deadlines, checked every [`Reaper::period`]:
//! * a new connection has the header timeout, from its start, to send its first request head;
//! * after a response, a keep-alive connection may wait the idle timeout for its next request;
//!   from the first byte of that request on, it has the header timeout to send the rest of the
//!   head;
//! * while a request is in progress no head deadline runs (a write the client does not read is
//!   bounded by the write timeout, [`Limits::write_timeout`]).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::{TowerToHyperService, TowerToHyperServiceFuture};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit};

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

/// Signals to a connection's task (bits of [`Conn::signal`]).
const STOP: u8 = 1;
const SHED: u8 = 2;
const EXPIRED: u8 = 4;

/// No first byte of a next request yet ([`Conn::begun_at`]).
const NOT_BEGUN: u64 = u64::MAX;

/// What a connection is doing, shared by its reader, its service, its task and the [`Reaper`].
#[derive(Debug)]
pub(crate) struct Conn {
    /// Requests whose head was read whole (their handler was called).
    started: AtomicU64,
    /// Requests whose response was not yet handed to hyper to its end.
    open: AtomicUsize,
    /// When it began to wait for its next request: accepted, or its last response handed over
    /// (milliseconds since [`epoch`]).
    waiting_since: AtomicU64,
    /// When the first byte came after the last request head was read whole ([`NOT_BEGUN`]
    /// before): a next request begun.
    begun_at: AtomicU64,
    /// [`STOP`], [`SHED`], [`EXPIRED`], set by others, taken by the connection's task.
    signal: AtomicU8,
    /// Wakes the connection's task for a signal.
    wake: Notify,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

impl Conn {
    pub(crate) fn new() -> Conn {
        Conn {
            started: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            waiting_since: AtomicU64::new(now_ms()),
            begun_at: AtomicU64::new(NOT_BEGUN),
            signal: AtomicU8::new(0),
            wake: Notify::new(),
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

    /// Whether, at `now` (ms since [`epoch`]), it is past the deadline of its wait for a
    /// request head (see the module's documentation).
    fn expired(&self, now: u64, limits: &Limits) -> bool {
        if self.open.load(Ordering::Acquire) > 0 {
            return false;
        }
        let since = self.waiting_since.load(Ordering::Acquire);
        let begun = self.begun_at.load(Ordering::Acquire);
        let ms = |d: Duration| d.as_millis().min(u128::from(u64::MAX / 2)) as u64;
        let deadline = if self.started() == 0 {
            since.saturating_add(ms(limits.header_timeout))
        } else if begun != NOT_BEGUN {
            begun.saturating_add(ms(limits.header_timeout))
        } else {
            since.saturating_add(ms(limits.idle_timeout))
        };
        now >= deadline
    }

    /// Sets `bit` and wakes the connection's task.
    fn signal(&self, bit: u8) {
        self.signal.fetch_or(bit, Ordering::AcqRel);
        self.wake.notify_one();
    }
}

/// Every open connection of a server, for the [`Reaper`], for making room and for shutdown. A
/// lock taken when a connection is accepted and a few times a second, never per request.
#[derive(Default)]
pub(crate) struct Registry {
    conns: Mutex<Vec<Weak<Conn>>>,
}

impl Registry {
    /// A new connection, registered.
    pub(crate) fn register(&self) -> Arc<Conn> {
        let conn = Arc::new(Conn::new());
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        // Ended connections are swept as new ones come, so the list stays as long as the
        // connections open even when the reaper is not running.
        if conns.len() >= 64 && conns.len().is_power_of_two() {
            conns.retain(|c| c.strong_count() > 0);
        }
        conns.push(Arc::downgrade(&conn));
        conn
    }

    /// Calls `f` on every open connection, forgetting those that ended.
    fn each(&self, mut f: impl FnMut(&Conn)) {
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        conns.retain(|c| match c.upgrade() {
            Some(c) => {
                f(&c);
                true
            }
            None => false,
        });
    }

    /// Tells every connection the server stops.
    pub(crate) fn stop_all(&self) {
        self.each(|c| c.signal(STOP));
    }

    /// Asks the connections that have waited [`SHED_AFTER`] for a request to close, to make
    /// room.
    pub(crate) fn shed_idle(&self) {
        self.each(|c| {
            if c.waiting_for(SHED_AFTER) {
                c.signal(SHED);
            }
        });
    }
}

/// Closes the connections past the deadline of their wait for a request head, looking at every
/// one each [`Reaper::period`].
pub(crate) struct Reaper;

impl Reaper {
    /// How often it looks: a tenth of the shorter timeout, from 10 ms to 250 ms. A connection
    /// is closed at most this late.
    pub(crate) fn period(limits: &Limits) -> Duration {
        (limits.header_timeout.min(limits.idle_timeout) / 10)
            .clamp(Duration::from_millis(10), Duration::from_millis(250))
    }

    /// Runs until the task is aborted.
    ///
    /// A sweep that comes late (the process was stopped, or starved of CPU) is skipped once: its
    /// connections may have requests waiting unread in their sockets, which their tasks, woken at
    /// the same moment, have not read yet; judged on what was known before the pause, they
    /// would be closed with their requests on time. The next sweep, a period later, sees them.
    pub(crate) async fn run(registry: Arc<Registry>, limits: Limits) {
        let period = Self::period(&limits);
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let late = 2 * period.as_millis() as u64 + 50;
        let mut last = now_ms();
        let mut skipped = false;
        loop {
            tick.tick().await;
            let now = now_ms();
            let was_late = now.saturating_sub(last) > late;
            last = now;
            if was_late && !skipped {
                skipped = true;
                continue;
            }
            skipped = false;
            registry.each(|c| {
                if c.expired(now, &limits) {
                    c.signal(EXPIRED);
                }
            });
        }
    }
}

/// Serves one accepted connection until it ends, is closed on shutdown ([`Registry::stop_all`])
/// or to make room ([`Registry::shed_idle`], with every slot taken), or is past the deadline of
/// its wait for a request ([`Reaper`]). Holds its slot (`_slot`) until then.
pub(crate) async fn serve_connection(
    stream: TcpStream,
    router: Router,
    conn: Arc<Conn>,
    limits: Limits,
    _slot: OwnedSemaphorePermit,
) -> Ended {
    // Responses are written whole: no reason to hold small ones back.
    let _ = stream.set_nodelay(true);
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
    // No timer for hyper: the head deadlines are the reaper's.
    let mut builder = http1::Builder::new();
    builder.header_read_timeout(None);
    let mut http = std::pin::pin!(builder.serve_connection(io, service));
    let mut stopping = false;
    let mut closing = false;
    loop {
        tokio::select! {
            // An error is the client's (gone, or a timeout): nothing to do but close.
            _ = http.as_mut() => return Ended::Closed,
            _ = conn.wake.notified() => {
                let signal = conn.signal.swap(0, Ordering::AcqRel);
                // Judged again now: a request may have come since the reaper looked.
                if signal & EXPIRED != 0 && conn.expired(now_ms(), &limits) {
                    // Closed without a response, as hyper's own header timeout does.
                    return Ended::Closed;
                }
                if signal & STOP != 0 && !stopping {
                    stopping = true;
                    // hyper's graceful shutdown waits for a request head begun to come whole,
                    // which a client may never send: such a connection, on which nothing was
                    // ever answered, is closed here at once.
                    if conn.started() == 0 {
                        return Ended::WithoutRequest;
                    }
                    // Else hyper closes it at once if it waits for its next request, or after
                    // the response of the one in progress.
                    if !closing {
                        http.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
                if signal & SHED != 0 && !closing && conn.waiting_for(SHED_AFTER) {
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
    type Future = Answering;

    fn call(&self, req: hyper::Request<Incoming>) -> Answering {
        Answering {
            open: Some(Open::new(&self.conn)),
            inner: self.router.call(req),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's answer on its way, holding the request's [`Open`] mark, which its response
    /// body then keeps. A future type of its own, not boxed: hyper keeps a connection's future
    /// in place, so no allocation is made for it per request.
    pub(crate) struct Answering {
        #[pin]
        inner: TowerToHyperServiceFuture<Router, hyper::Request<Incoming>>,
        open: Option<Open>,
    }
}

impl Future for Answering {
    type Output = Result<hyper::Response<Tracked<axum::body::Body>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let res = std::task::ready!(this.inner.poll(cx))?;
        let open = this
            .open
            .take()
            .expect("a request's answer is polled after it was given");
        Poll::Ready(Ok(res.map(|inner| Tracked { inner, _open: open })))
    }
}

/// A request in progress on its connection: from its head read whole until its response's body
/// was handed to hyper to its end (or the request was dropped).
struct Open(Arc<Conn>);

impl Open {
    fn new(conn: &Arc<Conn>) -> Open {
        conn.open.fetch_add(1, Ordering::AcqRel);
        conn.begun_at.store(NOT_BEGUN, Ordering::Release);
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

/// The connection's socket, marking when the first byte of a next request came (it starts that
/// request's header timeout), and failing a write that has waited [`Limits::write_timeout`] for the
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
            if buf.filled().len() > before
                && self.conn.begun_at.load(Ordering::Relaxed) == NOT_BEGUN
            {
                self.conn.begun_at.store(now_ms(), Ordering::Release);
            }
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
