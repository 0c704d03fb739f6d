//! A tiny blocking HTTP/1.1 client: one request per connection, read to the end.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A response.
#[derive(Debug)]
pub struct Res {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Whether the body arrived whole: its final chunk, or all of its `Content-Length`.
    pub complete: bool,
}

impl Res {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The `error` of a JSON error body (panics on another body).
    pub fn error(&self) -> String {
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{self:?}"
        );
        self.json()["error"].as_str().unwrap().to_string()
    }

    /// The ids of a JSON `{"ids": [...]}` body.
    pub fn ids(&self) -> Vec<String> {
        assert_eq!(self.status, 200, "{}", String::from_utf8_lossy(&self.body));
        assert!(self.complete, "the body was cut short");
        self.json()["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }
}

/// `GET path` with extra headers.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Res {
    request(addr, "GET", path, headers)
}

/// One request on a new connection (`Connection: close`), read to the end.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Res {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    // A body cut short may end in a reset: what arrived is kept (and `complete` says so).
    let _ = s.read_to_end(&mut raw);
    parse(&raw)
}

fn parse(raw: &[u8]) -> Res {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let mut complete = true;
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        complete = false;
        while let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap().trim(), 16)
                .unwrap();
            if size == 0 {
                complete = true;
                break;
            }
            if rest.len() < nl + 2 + size + 2 {
                out.extend_from_slice(&rest[nl + 2..]);
                break;
            }
            out.extend_from_slice(&rest[nl + 2..nl + 2 + size]);
            rest = &rest[nl + 2 + size + 2..];
        }
        body = out;
    } else if let Some((_, n)) = headers.iter().find(|(k, _)| k == "content-length") {
        complete = n.parse::<usize>().ok() == Some(body.len());
    }
    Res {
        status,
        headers,
        body,
        complete,
    }
}

/// A request whose client reads the status line of the answer and then nothing, holding the
/// connection open (a stalled reader of a large batch).
pub fn stalled(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    c.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "{}", String::from_utf8_lossy(&head));
    c
}

/// The server's `idforge_ids_issued_total` of `scheme` once it stops moving (polled every
/// 200 ms, for at most 10 s).
pub fn issued_settled(addr: SocketAddr, scheme: &str) -> u64 {
    let read = || {
        let m = get(addr, "/metrics", &[]).text();
        let key = format!("idforge_ids_issued_total{{scheme=\"{scheme}\"}} ");
        m.lines()
            .find_map(|l| l.strip_prefix(&key))
            .unwrap_or_else(|| panic!("no {key} in {m}"))
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    let mut last = read();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(200));
        let now = read();
        if now == last && now > 0 {
            return now;
        }
        last = now;
    }
    panic!("{scheme}'s issued count still moves: {last}");
}
