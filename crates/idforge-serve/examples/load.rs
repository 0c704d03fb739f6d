//! A small closed-loop load generator for `idforge serve`: C keep-alive connections, each sending
//! one GET after another for a bounded time; prints requests/s, ids/s and latency percentiles.
//!
//! ```sh
//! cargo run --release -p idforge-cli -- serve --in-process --node 1 &
//! cargo run --release -p idforge-serve --features bench-examples --example load -- 127.0.0.1:7470 '/v1/ids/snowflake?count=1' 4 10
//! ```
//! Arguments: address, path, connections (default 4), seconds (default 10, at most 300). The ids
//! per request are read from the path's `count` (default 1).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: load ADDR PATH [CONNECTIONS] [SECONDS]";
    let addr = args.first().expect(usage).clone();
    let path = args.get(1).expect(usage).clone();
    let conns: usize = args.get(2).map_or(4, |c| c.parse().expect(usage));
    let secs: u64 = args.get(3).map_or(10, |s| s.parse().expect(usage)).min(300);
    let per_request: u64 = path
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("count="))
        .map_or(1, |c| c.parse().expect("a numeric count"));
    let end = Instant::now() + Duration::from_secs(secs);
    let workers: Vec<_> = (0..conns)
        .map(|_| {
            let (addr, path) = (addr.clone(), path.clone());
            std::thread::spawn(move || run(&addr, &path, end))
        })
        .collect();
    let mut lat: Vec<Duration> = Vec::new();
    let mut errors = 0u64;
    for w in workers {
        let (l, e) = w.join().unwrap();
        lat.extend(l);
        errors += e;
    }
    lat.sort();
    let n = lat.len() as f64;
    let pct = |p: f64| {
        lat.get(((n * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
    };
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    println!(
        "{path}: {conns} connections, {secs} s: {} requests ({errors} failed), {:.0} requests/s, {:.0} ids/s, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        lat.len(),
        n / secs as f64,
        n * per_request as f64 / secs as f64,
        ms(pct(0.50)),
        ms(pct(0.99)),
        ms(lat.last().copied()),
    );
}

/// One connection's loop: the latency of each successful request, and the failures.
fn run(addr: &str, path: &str, end: Instant) -> (Vec<Duration>, u64) {
    let mut lat = Vec::new();
    let mut errors = 0;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut conn: Option<BufReader<TcpStream>> = None;
    while Instant::now() < end {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match TcpStream::connect(addr) {
                Ok(s) => {
                    s.set_nodelay(true).ok();
                    conn.insert(BufReader::new(s))
                }
                Err(_) => {
                    errors += 1;
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            },
        };
        let t = Instant::now();
        match one(c, &req) {
            Ok(200) => lat.push(t.elapsed()),
            Ok(_) => errors += 1,
            Err(_) => {
                errors += 1;
                conn = None;
            }
        }
    }
    (lat, errors)
}

/// Sends one request and reads its response (Content-Length bodies); returns the status.
fn one(c: &mut BufReader<TcpStream>, req: &str) -> std::io::Result<u16> {
    c.get_mut().write_all(req.as_bytes())?;
    let mut line = String::new();
    c.read_line(&mut line)?;
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("not an HTTP response"))?;
    let mut len = 0usize;
    loop {
        line.clear();
        if c.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("closed"));
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; len];
    c.read_exact(&mut body)?;
    Ok(status)
}
