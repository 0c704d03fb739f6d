//! Slow and hostile clients, the connection limit and a bounded shutdown: connections that never
//! finish their request heads (slowloris), idle keep-alive connections, connections past
//! `max_connections`, and shutdown with a request head unfinished or batches in flight.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{config, get, start};
use idforge_serve::{App, Config, Stopped};

/// A partial request head: the blank line that ends it never comes.
const PARTIAL: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n";

fn connect(addr: SocketAddr) -> TcpStream {
    let c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c
}

/// One request on a keep-alive connection; the status and body of its response.
fn ask(c: &mut TcpStream, path: &str) -> (u16, String) {
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        let n = c.read(&mut byte).unwrap();
        assert_eq!(n, 1, "closed before a response head: {raw:?}");
        raw.push(byte[0]);
    }
    let head = String::from_utf8(raw).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .expect("a content-length");
    let mut body = vec![0; len];
    c.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

/// Whether the server closed `c` (end of stream or reset); panics on data.
fn closed(c: &mut TcpStream) -> bool {
    c.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    let r = match c.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => panic!("unexpected data: {:?}", String::from_utf8_lossy(&buf[..n])),
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(_) => true,
    };
    c.set_nonblocking(false).unwrap();
    r
}

/// Polls `c` until the server closes it (at most `within`); when it did.
fn wait_closed(c: &mut TcpStream, within: Duration) -> Option<Instant> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if closed(c) {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn limits(base: Config) -> Config {
    Config {
        in_process: true,
        ..base
    }
}

#[test]
fn slowloris_heads_are_closed_after_the_header_timeout_and_healthz_still_answers() {
    let header = Duration::from_secs(1);
    let s = start(limits(Config {
        header_timeout: header,
        ..config(&["uuid7"])
    }));
    // 400 connections that send part of a request head and nothing more (the default limit is
    // 512 connections).
    let mut held: Vec<(TcpStream, Instant, Option<Instant>)> = (0..400)
        .map(|_| {
            let at = Instant::now();
            let mut c = connect(s.addr);
            c.write_all(PARTIAL).unwrap();
            (c, at, None)
        })
        .collect();
    let t = Instant::now();
    assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "/healthz took {:?} beside 400 unfinished heads",
        t.elapsed()
    );
    // The server closes every one once its header timeout (counted from its start) is over.
    let end = Instant::now() + header + Duration::from_secs(8);
    while Instant::now() < end && held.iter().any(|h| h.2.is_none()) {
        for (c, _, at) in held.iter_mut().filter(|h| h.2.is_none()) {
            if closed(c) {
                *at = Some(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let open = held.iter().filter(|h| h.2.is_none()).count();
    assert_eq!(
        open,
        0,
        "{open} of 400 unfinished request heads still open after {:?}",
        header + Duration::from_secs(8)
    );
    for (_, began, at) in &held {
        let after = at.unwrap() - *began;
        assert!(
            after >= header,
            "closed after {after:?}, before the timeout"
        );
    }
    assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
}

#[test]
fn past_max_connections_new_ones_wait_for_a_slot_and_idle_ones_make_room() {
    let s = start(limits(Config {
        max_connections: 4,
        max_count: 20_000,
        timeout: Duration::from_secs(60),
        header_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(30),
        ..config(&["sonyflake", "uuid7"])
    }));
    // Four connections hold the four slots, each answered once (so it was accepted).
    let mut busy: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = connect(s.addr);
            assert_eq!(ask(&mut c, "/healthz").0, 200);
            c
        })
        .collect();
    // Each now asks for 15,000 Sonyflake ids: 256 per 10 ms tick, so each spans 59 ticks and
    // takes at least 580 ms however the four share them; then its connection closes.
    let sent = Instant::now();
    for c in &mut busy {
        c.write_all(
            b"GET /v1/ids/sonyflake?count=15000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
    }
    let batches: Vec<_> = busy
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                let mut out = Vec::new();
                c.read_to_end(&mut out).unwrap();
                assert!(out.starts_with(b"HTTP/1.1 200"));
            })
        })
        .collect();
    // A fifth connection is served only once one of them is done.
    let r = get(s.addr, "/healthz", &[]);
    let waited = sent.elapsed();
    assert_eq!(r.status, 200);
    assert!(
        waited >= Duration::from_millis(580),
        "served after {waited:?}, while the four slots were taken"
    );
    for b in batches {
        b.join().unwrap();
    }

    // Four idle keep-alive connections hold the slots: they are closed to make room for a
    // new one once they have waited a second, long before their idle timeout (30 s).
    let mut idle: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = connect(s.addr);
            assert_eq!(ask(&mut c, "/healthz").0, 200);
            c
        })
        .collect();
    let t = Instant::now();
    assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let end = Instant::now() + Duration::from_secs(2);
    while !idle.iter_mut().any(closed) {
        assert!(
            Instant::now() < end,
            "no idle connection was closed to make room"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // And the server keeps serving.
    assert_eq!(get(s.addr, "/v1/ids/uuid7?count=3", &[]).ids().len(), 3);
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout_not_the_header_timeout() {
    let (header, idle) = (Duration::from_millis(400), Duration::from_secs(3));
    let s = start(limits(Config {
        header_timeout: header,
        idle_timeout: idle,
        ..config(&["uuid7"])
    }));
    let addr = s.addr;
    // A request head begun on a keep-alive connection has the header timeout from its first
    // byte, not the idle timeout.
    let partial = std::thread::spawn(move || {
        let mut c = connect(addr);
        assert_eq!(ask(&mut c, "/healthz").0, 200);
        std::thread::sleep(Duration::from_millis(200));
        // Taken before the bytes leave: the server's timer starts when they arrive, later, so
        // the time measured from here is never shorter than the server's timeout (measured from
        // after the write, a loaded machine saw it 0.4 ms short).
        let began = Instant::now();
        c.write_all(PARTIAL).unwrap();
        let at = wait_closed(&mut c, Duration::from_secs(8)).expect("the unfinished head closed");
        at - began
    });
    let mut c = connect(s.addr);
    assert_eq!(ask(&mut c, "/healthz").0, 200);
    // Idle past the header timeout: still open (hyper's own header timer alone would close it
    // after 400 ms).
    std::thread::sleep(Duration::from_secs(1));
    // From before the request: the server's idle timer starts once it has written the answer,
    // after this instant, so the close is never measured short of the timeout (measured from
    // after the answer was read, the first cold `cargo test` saw "closed after 2.9996s" at
    // load 5.6).
    let asked = Instant::now();
    assert_eq!(ask(&mut c, "/healthz").0, 200);
    let at = wait_closed(&mut c, idle + Duration::from_secs(5))
        .expect("the idle connection closed after the idle timeout");
    let after = at - asked;
    assert!(after >= idle, "closed after {after:?}");
    let partial = partial.join().unwrap();
    assert!(
        partial >= header && partial < Duration::from_millis(2500),
        "an unfinished head on a keep-alive connection closed after {partial:?}"
    );
}

/// A server whose shutdown the test triggers, and how `serve_on` ended.
struct Stoppable {
    addr: SocketAddr,
    rt: tokio::runtime::Runtime,
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<anyhow::Result<Stopped>>,
}

fn stoppable(app: Arc<App>) -> Stoppable {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let served = rt.spawn(idforge_serve::serve_on(listener, app, async {
        let _ = rx.await;
    }));
    Stoppable {
        addr,
        rt,
        stop,
        served,
    }
}

impl Stoppable {
    /// Triggers the shutdown; how `serve_on` ended and how long it took (`None`: still serving
    /// after `within`).
    fn stop(self, within: Duration) -> Option<(Stopped, Duration)> {
        let t = Instant::now();
        self.stop.send(()).unwrap();
        let served = self.served;
        let r = self
            .rt
            .block_on(async { tokio::time::timeout(within, served).await });
        let took = t.elapsed();
        self.rt.shutdown_background();
        r.ok().map(|r| (r.unwrap().unwrap(), took))
    }
}

#[test]
fn shutdown_closes_a_connection_with_an_unfinished_request_head_at_once() {
    common::state_dir();
    let app = App::open(limits(Config {
        shutdown_grace: Duration::from_secs(5),
        ..config(&["uuid7"])
    }))
    .unwrap();
    let s = stoppable(app);
    let mut head = connect(s.addr);
    head.write_all(PARTIAL).unwrap();
    let mut silent = connect(s.addr);
    let mut idle = connect(s.addr);
    assert_eq!(ask(&mut idle, "/healthz").0, 200);
    // Connections are accepted in turn: once a later one is served, these three are open.
    assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
    let (stopped, took) = s.stop(Duration::from_secs(10)).expect(
        "serve_on still serving 10 s after the shutdown, held by an unfinished request head",
    );
    assert!(
        took < Duration::from_millis(2500),
        "took {took:?} of a 5 s grace with no request in flight"
    );
    assert_eq!(stopped.cut, 0, "{stopped:?}");
    // The unfinished head and the silent connection; the idle one, after a request, is closed
    // by hyper's own graceful shutdown.
    assert_eq!(stopped.without_request, 2, "{stopped:?}");
    for c in [&mut head, &mut silent, &mut idle] {
        assert!(wait_closed(c, Duration::from_secs(2)).is_some());
    }
    assert!(
        stopped
            .summary()
            .contains("0 connections closed unfinished"),
        "{}",
        stopped.summary()
    );
}

#[test]
fn shutdown_closes_the_batches_in_flight_at_the_end_of_the_grace_and_stops_them() {
    common::state_dir();
    let grace = Duration::from_millis(500);
    let app = App::open(limits(Config {
        max_count: 20_000,
        timeout: Duration::from_secs(60),
        shutdown_grace: grace,
        ..config(&["sonyflake"])
    }))
    .unwrap();
    let s = stoppable(app.clone());
    // Eight batches of 20,000 Sonyflake ids: 256 per 10 ms tick, 6.25 s for the eight.
    let batches: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut c = connect(s.addr);
            c.write_all(b"GET /v1/ids/sonyflake?count=20000 HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            c
        })
        .collect();
    let end = Instant::now() + Duration::from_secs(20);
    while app.batches_in_flight() < 8 {
        assert!(Instant::now() < end, "the batches never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (stopped, took) = s
        .stop(Duration::from_secs(10))
        .expect("serve_on still serving 10 s after the shutdown, with batches in flight");
    assert!(took >= grace, "returned after {took:?}, before the grace");
    assert!(
        took < grace + Duration::from_secs(2),
        "returned after {took:?}, for a grace of {grace:?}"
    );
    assert_eq!(stopped.cut, 8, "{stopped:?}");
    assert!(
        stopped
            .summary()
            .contains("8 connections closed unfinished (requests still in flight at the end of the 500 ms grace"),
        "{}",
        stopped.summary()
    );
    for mut c in batches {
        // A streamed batch has sent its head and first ids: its body ends without the final
        // chunk, which clients report as incomplete.
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        assert!(
            !out.ends_with(b"\r\n0\r\n\r\n"),
            "a cut batch's body was complete"
        );
    }
    // The batches stopped (within a chunk of 256 ids): their places are free again, where
    // they would hold them about 6 s.
    let end = Instant::now() + Duration::from_secs(2);
    while app.batches_in_flight() > 0 {
        assert!(
            Instant::now() < end,
            "the cut batches still hold {} places",
            app.batches_in_flight()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
