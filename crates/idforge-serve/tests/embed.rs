//! A program embedding the service with no `tracing` subscriber still sees the warning that it
//! serves beyond this machine without tokens.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "IDFORGE_SERVE_EMBED_CHILD";

/// Run as a child: serves uuid7 on all interfaces with no tokens and no subscriber.
#[test]
fn child_serves_beyond_loopback_without_a_subscriber() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let config = idforge_serve::Config {
        listen: "0.0.0.0:0".parse().unwrap(),
        schemes: Some(vec!["uuid7".into()]),
        in_process: true,
        ..idforge_serve::Config::default()
    };
    idforge_serve::run_blocking(config).unwrap();
}

#[test]
fn the_beyond_loopback_warning_reaches_stderr_without_a_subscriber() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_serves_beyond_loopback_without_a_subscriber",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    let found = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.contains("beyond this machine, with no bearer tokens") => break true,
            Ok(line) => seen.push(line),
            Err(_) if Instant::now() > deadline => break false,
            Err(_) => {}
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(found, "no warning on stderr; it said:\n{}", seen.join("\n"));
}
