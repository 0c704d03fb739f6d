//! `idforge serve` as a process: graceful shutdown, configuration precedence, two servers on one
//! state file, and `kill -9` mid-load then a restart on the same state file.

mod common;
#[path = "../../idforge-serve/tests/common/http.rs"]
mod http;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{cmd, spawn, TempDir};
use http::get;

fn values(ids: Vec<String>) -> Vec<u64> {
    ids.iter().map(|s| s.parse().unwrap()).collect()
}

#[test]
fn sigterm_finishes_the_requests_in_flight_and_exits_zero() {
    let d = TempDir::new("term");
    let mut c = cmd(&d.0);
    c.args([
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "snowflake,sonyflake",
        "--node",
        "1",
    ]);
    let mut p = spawn(c);
    assert_eq!(get(p.addr, "/v1/ids/snowflake?count=3", &[]).ids().len(), 3);
    // Sonyflake issues 256 ids per 10 ms: 20000 take about 0.8 s, so this one is in flight
    // when the signal comes.
    let addr = p.addr;
    let slow = std::thread::spawn(move || get(addr, "/v1/ids/sonyflake?count=20000", &[]));
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill sends a signal to our own child.
    let rc = unsafe { libc::kill(p.child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let r = slow.join().unwrap();
    assert_eq!(r.ids().len(), 20000, "the request in flight was finished");
    let status = p.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", p.stderr.lock().unwrap());
    std::thread::sleep(Duration::from_millis(50));
    let log = p.stderr.lock().unwrap().clone();
    assert!(
        log.contains("shutting down") && log.contains("stopped"),
        "{log}"
    );
    // No new connections once it stopped.
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn flags_over_environment_over_config_file() {
    let d = TempDir::new("precedence");
    let file = d.0.join("serve.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:0\"\nschemes = [\"snowflake\"]\nnode = 9\nmax_count = 3\n",
    )
    .unwrap();
    let mut c = cmd(&d.0);
    c.arg("--config").arg(&file);
    c.env("IDFORGE_MAX_COUNT", "5").args(["--max-count", "7"]);
    let p = spawn(c);
    assert_eq!(get(p.addr, "/v1/ids/snowflake?count=7", &[]).ids().len(), 7);
    let r = get(p.addr, "/v1/ids/snowflake?count=8", &[]);
    assert_eq!(r.status, 400);
    let m = get(p.addr, "/metrics", &[]).text();
    assert!(m.contains("idforge_node_id{scheme=\"snowflake\"} 9"), "{m}");

    // The environment over the file.
    let mut c = cmd(&d.0);
    c.arg("--config").arg(&file).env("IDFORGE_MAX_COUNT", "5");
    let p = spawn(c);
    assert_eq!(get(p.addr, "/v1/ids/snowflake?count=5", &[]).ids().len(), 5);
    assert_eq!(get(p.addr, "/v1/ids/snowflake?count=6", &[]).status, 400);

    // A bad file is refused at start, naming the key.
    std::fs::write(&file, "lissen = \"x\"\n").unwrap();
    let out = cmd(&d.0).arg("--config").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lissen"), "{err}");
}

#[test]
fn tokens_from_a_file_and_a_warning_beyond_loopback() {
    let d = TempDir::new("tokens");
    let tokens = d.0.join("tokens");
    std::fs::write(&tokens, "# ops\nalpha-123\n\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut c = cmd(&d.0);
    c.args([
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "uuid7",
        "--tokens-file",
    ])
    .arg(&tokens)
    .env("IDFORGE_TOKENS", "beta-456");
    let p = spawn(c);
    assert_eq!(get(p.addr, "/v1/ids/uuid7", &[]).status, 401);
    for t in ["alpha-123", "beta-456"] {
        let auth = format!("Bearer {t}");
        assert_eq!(
            get(p.addr, "/v1/ids/uuid7", &[("Authorization", &auth)]).status,
            200
        );
    }

    let mut c = cmd(&d.0);
    c.args(["--listen", "0.0.0.0:0", "--schemes", "uuid7"]);
    let p = spawn(c);
    let log = p.stderr.lock().unwrap().clone();
    assert!(
        log.contains("warning") && log.contains("no bearer tokens"),
        "{log}"
    );
}

#[test]
fn the_json_log_has_a_line_per_request_with_its_id_and_no_secret() {
    let d = TempDir::new("jsonlog");
    let mut c = cmd(&d.0);
    c.args(["--listen", "127.0.0.1:0", "--schemes", "uuid7"])
        .env("IDFORGE_LOG_FORMAT", "json")
        .env("IDFORGE_TOKENS", "tok-789");
    let p = spawn(c);
    let r = get(
        p.addr,
        "/v1/ids/uuid7?count=2&secret=hunter2",
        &[
            ("Authorization", "Bearer tok-789"),
            ("X-Request-Id", "req-42"),
        ],
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.header("x-request-id"), Some("req-42"));
    let r = get(
        p.addr,
        "/v1/ids/uuid7?count=2",
        &[("Authorization", "Bearer tok-789")],
    );
    assert_eq!(r.ids().len(), 2);
    let made = r.header("x-request-id").unwrap().to_string();
    std::thread::sleep(Duration::from_millis(100));
    let log = p.stderr.lock().unwrap().clone();
    assert!(
        !log.contains("tok-789") && !log.contains("hunter2"),
        "{log}"
    );
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(lines[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("listening on http://"));
    let requests: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["message"] == "request").collect();
    assert_eq!(requests.len(), 2, "{log}");
    for (l, status, id) in [
        (requests[0], 400, "req-42"),
        (requests[1], 200, made.as_str()),
    ] {
        assert_eq!(l["route"], "/v1/ids/{scheme}", "{l}");
        assert_eq!(l["status"], status, "{l}");
        assert_eq!(l["request_id"], id, "{l}");
    }
    assert_eq!(requests[1]["scheme"], "uuid7");
    assert_eq!(requests[1]["count"], 2);
}

#[test]
fn the_text_log_has_a_line_per_request_unless_its_target_is_off() {
    for (filter, lines) in [("", 2), ("info,idforge_serve::request=off", 0)] {
        let d = TempDir::new("textlog");
        let mut c = cmd(&d.0);
        c.args(["--listen", "127.0.0.1:0", "--schemes", "uuid7"])
            .env("IDFORGE_LOG", filter)
            .env("IDFORGE_TOKENS", "tok-789");
        let p = spawn(c);
        let r = get(
            p.addr,
            "/v1/ids/uuid7?count=2",
            &[
                ("Authorization", "Bearer tok-789"),
                ("X-Request-Id", "req-42"),
            ],
        );
        assert_eq!(r.ids().len(), 2);
        let r = get(p.addr, "/nowhere?secret=hunter2", &[]);
        assert_eq!(r.status, 401);
        let made = r.header("x-request-id").unwrap().to_string();
        // Lines are written a few milliseconds after they are made.
        std::thread::sleep(Duration::from_millis(200));
        let log = p.stderr.lock().unwrap().clone();
        assert!(
            log.contains(" idforge serve: listening on http://"),
            "{log}"
        );
        assert!(
            !log.contains("hunter2") && !log.contains("tok-789"),
            "{log}"
        );
        let requests: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(" idforge serve: request "))
            .collect();
        assert_eq!(requests.len(), lines, "{log}");
        if lines == 0 {
            continue;
        }
        let untimed: Vec<&str> = requests
            .iter()
            .map(|l| l.split_once(" latency_ms=").unwrap().1)
            .collect();
        assert!(
            requests[0].contains(
                " idforge serve: request method=GET route=/v1/ids/{scheme} status=200 latency_ms="
            ) && untimed[0].ends_with(" request_id=req-42 scheme=uuid7 count=2"),
            "{log}"
        );
        assert!(
            requests[1].contains(" request method=GET route=unmatched status=401 latency_ms=")
                && untimed[1].ends_with(&format!(" request_id={made}")),
            "{log}"
        );
        let ms = untimed[0].split(' ').next().unwrap();
        assert!(ms.parse::<f64>().is_ok() && ms.contains('.'), "{ms}");
    }
}

/// Clients fetching snowflake ids in batches until told to stop; the ids fully received.
fn load(addr: SocketAddr, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let mut got = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match std::panic::catch_unwind(|| get(addr, "/v1/ids/snowflake?count=1000", &[])) {
                // A body cut short by the kill ends the load (its ids are not counted).
                Ok(r) if r.status == 200 && r.complete => got.extend(values(r.ids())),
                _ => break,
            }
        }
        got
    })
}

#[test]
fn two_server_processes_on_one_state_file_never_repeat() {
    let d = TempDir::new("two");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "snowflake",
        "--node",
        "4",
    ];
    let mut a = cmd(&d.0);
    a.args(args);
    let mut b = cmd(&d.0);
    b.args(args);
    let (a, b) = (spawn(a), spawn(b));
    let stop = Arc::new(AtomicBool::new(false));
    let loads: Vec<_> = [a.addr, b.addr, a.addr, b.addr]
        .into_iter()
        .map(|addr| load(addr, stop.clone()))
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    stop.store(true, Ordering::Relaxed);
    let mut all = HashSet::new();
    let mut n = 0;
    for l in loads {
        let ids = l.join().unwrap();
        n += ids.len();
        all.extend(ids);
    }
    assert!(n >= 4000, "too few ids to mean anything: {n}");
    assert_eq!(all.len(), n, "an id was served by both servers");
}

#[test]
fn kill_9_mid_load_then_restart_never_repeats() {
    let d = TempDir::new("kill9");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "snowflake",
        "--node",
        "5",
    ];
    let mut c = cmd(&d.0);
    c.args(args);
    let mut first = spawn(c);
    let stop = Arc::new(AtomicBool::new(false));
    let loads: Vec<_> = (0..3).map(|_| load(first.addr, stop.clone())).collect();
    std::thread::sleep(Duration::from_millis(300));
    first.child.kill().unwrap(); // SIGKILL, while requests are in flight
    first.child.wait().unwrap();
    let before: Vec<u64> = loads.into_iter().flat_map(|l| l.join().unwrap()).collect();
    assert!(
        before.len() >= 1000,
        "the load did not run: {}",
        before.len()
    );

    let mut c = cmd(&d.0);
    c.args(args);
    let second = spawn(c);
    let after = values(get(second.addr, "/v1/ids/snowflake?count=5000", &[]).ids());
    let seen: HashSet<u64> = before.iter().copied().collect();
    assert_eq!(seen.len(), before.len(), "repeated before the kill");
    assert!(
        after.iter().all(|id| !seen.contains(id)),
        "an id served twice across the restart"
    );
    // Stronger: the restart continues after every id issued before (served or not).
    assert!(after[0] > *before.iter().max().unwrap());
}

/// `idforge serve ARGS` that must stop at start: its exit code (`None`: still running after
/// 20 s, then killed) and its log.
fn refused(d: &TempDir, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut c = cmd(&d.0);
    if !args.contains(&"--listen") {
        c.args(["--listen", "127.0.0.1:0"]);
    }
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    stops(c)
}

/// Runs `c`, which must stop at start: its exit code (`None`: still running after 20 s, then
/// killed) and its log.
fn stops(mut c: std::process::Command) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = c.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (code, err)
}

#[test]
fn without_a_node_the_node_schemes_are_left_out_and_the_log_says_so_once() {
    let d = TempDir::new("nonode");
    let mut c = cmd(&d.0);
    c.args(["--listen", "127.0.0.1:0"]);
    let p = spawn(c);
    assert_eq!(get(p.addr, "/v1/ids/uuid7", &[]).ids().len(), 1);
    let e = get(p.addr, "/v1/ids/snowflake", &[]);
    assert_eq!(e.status, 400);
    assert!(e.error().contains("not served here"), "{}", e.error());
    std::thread::sleep(Duration::from_millis(100));
    let log = p.stderr.lock().unwrap().clone();
    let note = "not serving global-id, global-id-128, snowflake, sonyflake, discord, instagram, tsid, objectid, xid, nanots-host";
    assert_eq!(log.matches(note).count(), 1, "{log}");
    assert!(log.contains("--node N / --host N"), "{log}");
    let listening = log.lines().find(|l| l.contains("listening on")).unwrap();
    assert!(!listening.contains("snowflake"), "{listening}");

    // Named without a node: exit 2, saying how to give one.
    for scheme in ["snowflake", "uuid7,nanots-host"] {
        let (code, err) = refused(&d, &["--schemes", scheme], &[]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("needs a node id"), "{err}");
    }
    // With a node from the environment, served.
    let mut c = cmd(&d.0);
    c.args(["--listen", "127.0.0.1:0", "--schemes", "snowflake"])
        .env("IDFORGE_NODE", "6");
    let p = spawn(c);
    let m = get(p.addr, "/metrics", &[]).text();
    assert!(m.contains("idforge_node_id{scheme=\"snowflake\"} 6"), "{m}");
}

#[test]
fn a_layout_that_does_not_parse_stops_the_server_with_gens_reason() {
    let d = TempDir::new("badlayout");
    let gen = std::process::Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(["gen", "custom", "--layout", "41t.10n.12s", "--node", "1"])
        .output()
        .unwrap();
    let gen_err = String::from_utf8_lossy(&gen.stderr);
    let reason = gen_err.trim().trim_start_matches("idforge: error: ");
    for args in [
        &["--layout", "41t.10n.12s", "--node", "1"][..],
        &[
            "--layout",
            "41t.10n.12s",
            "--node",
            "1",
            "--schemes",
            "custom",
        ][..],
    ] {
        let (code, err) = refused(&d, args, &[]);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(reason), "{args:?}: {err}\ngen: {reason}");
        assert!(!err.contains("listening"), "{err}");
    }
}

#[test]
fn a_state_file_shared_on_purpose_is_served_with_state_mode_and_refused_without() {
    use std::os::unix::fs::PermissionsExt;
    let d = TempDir::new("statemode");
    // Made by `gen` for a group, as a user sharing one file with the service would.
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(["gen", "uuid7", "--shared", "--state-mode", "660", "-n", "3"])
        .env("IDFORGE_STATE_DIR", &d.0)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let file = d.0.join("uuid7.state");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660);
    // Without --state-mode the group-writable file is refused, with advice the serve command
    // can follow.
    let (code, err) = refused(&d, &["--schemes", "uuid7"], &[]);
    assert_ne!(code, None, "{err}");
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("writable by its group") && err.contains("--state-mode"),
        "{err}"
    );
    // With it, served from that file.
    let mut c = cmd(&d.0);
    c.args([
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "uuid7",
        "--state-mode",
        "660",
    ]);
    let p = spawn(c);
    assert_eq!(get(p.addr, "/v1/ids/uuid7?count=2", &[]).ids().len(), 2);
    drop(p);
    // Not octal, or beside --in-process: refused at start with the reason.
    let (code, err) = refused(
        &d,
        &["--schemes", "uuid7"],
        &[("IDFORGE_STATE_MODE", "rw-rw----")],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not permission bits"), "{err}");
    for (mode, says) in [
        ("+660", "is not permission bits"),
        ("6600", "is not permission bits"),
        ("000", "read and write its own"),
        ("460", "read and write its own"),
        ("666", "every user write"),
    ] {
        let (code, err) = refused(&d, &["--schemes", "uuid7", "--state-mode", mode], &[]);
        assert_eq!(code, Some(2), "{mode}: {err}");
        assert!(err.contains(says), "{mode}: {err}");
    }
    let (code, err) = refused(
        &d,
        &["--schemes", "uuid7", "--in-process", "--state-mode", "660"],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--in-process does not use"), "{err}");
}

/// A server stopped (SIGSTOP) for longer than the header timeout, while its clients finished
/// their request heads on time: after SIGCONT every request is answered. (Before, the reaper's
/// first sweep after the pause judged the connections on what it knew before it and closed
/// about half of them, their requests unread in their sockets.)
#[test]
fn requests_sent_on_time_while_the_server_was_stopped_are_answered_after_it_resumes() {
    use std::io::{Read, Write};
    let d = TempDir::new("paused");
    let mut c = cmd(&d.0);
    c.args([
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "uuid7",
        "--in-process",
        "--header-timeout-ms",
        "1000",
        "--idle-timeout-ms",
        "3000",
    ]);
    let p = spawn(c);
    let pid = p.child.id() as libc::pid_t;
    // Half new connections, half keep-alive ones that had a request answered already.
    let mut conns: Vec<std::net::TcpStream> = (0..20)
        .map(|i| {
            let mut s = std::net::TcpStream::connect(p.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    .unwrap();
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).unwrap();
                assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
            }
            s
        })
        .collect();
    for s in &mut conns {
        s.write_all(b"GET /v1/ids/uuid7 HTTP/1.1\r\nHo").unwrap();
    }
    // SAFETY: signals to our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    for s in &mut conns {
        s.write_all(b"st: x\r\n\r\n").unwrap();
    }
    std::thread::sleep(Duration::from_millis(2200));
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let mut answered = 0;
    for s in &mut conns {
        let mut buf = [0u8; 4096];
        if matches!(s.read(&mut buf), Ok(n) if buf[..n].starts_with(b"HTTP/1.1 200")) {
            answered += 1;
        }
    }
    assert_eq!(answered, conns.len(), "requests unanswered after the pause");
}

#[test]
fn an_address_in_use_exits_7_as_the_help_says() {
    let d = TempDir::new("inuse");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = refused(&d, &["--schemes", "uuid7", "--listen", &addr], &[]);
    assert_eq!(code, Some(7), "{err}");
    assert!(
        err.contains(&format!("cannot listen on {addr}")) && err.contains("--listen"),
        "{err}"
    );
    // The cause is said once, not again as the error's source.
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("7  the address cannot be listened on"),
        "{help}"
    );
    assert!(help.contains("IDFORGE_TOKENS"), "{help}");
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_idforge"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("7  serve: the address cannot be listened on"),
        "{help}"
    );
}

#[test]
fn settings_the_server_cannot_use_exit_2() {
    let d = TempDir::new("unusable");
    for (args, env, says) in [
        (
            &["--schemes", "uuid7"][..],
            &[("IDFORGE_TOKENS", ",")][..],
            "IDFORGE_TOKENS is set but holds no token",
        ),
        (
            &["--schemes", "uuid7"],
            &[("IDFORGE_TOKENS", "")],
            "holds no token",
        ),
        (
            &["--schemes", "uuid7", "--max-count", "39000000000000"],
            &[],
            "ceiling of 1000000",
        ),
        (
            &["--schemes", "uuid7", "--tokens-file", "/nonexistent/tokens"],
            &[],
            "cannot read the tokens file",
        ),
        (
            &["--schemes", "uuid7", "--header-timeout-ms", "0"],
            &[],
            "--header-timeout-ms (IDFORGE_HEADER_TIMEOUT_MS, header_timeout_ms in the config file) is 0: set from 100",
        ),
        (
            &["--schemes", "uuid7", "--max-connections", "0"],
            &[],
            "--max-connections (IDFORGE_MAX_CONNECTIONS",
        ),
        (
            &["--schemes", "uuid7"],
            &[("IDFORGE_SHUTDOWN_GRACE_MS", "0")],
            "--shutdown-grace-ms (IDFORGE_SHUTDOWN_GRACE_MS",
        ),
        (
            &["--schemes", "uuid7"],
            &[("IDFORGE_IDLE_TIMEOUT_MS", "86400000")],
            "--idle-timeout-ms (IDFORGE_IDLE_TIMEOUT_MS, idle_timeout_ms in the config file) is 86400000",
        ),
    ] {
        let (code, err) = refused(&d, args, env);
        assert_eq!(code, Some(2), "{args:?} {env:?}: {err}");
        assert!(err.contains(says), "{args:?} {env:?}: {err}");
    }
}

/// Sets the open-file limit of the child `c` starts.
fn with_open_files(c: &mut std::process::Command, soft: libc::rlim_t, hard: libc::rlim_t) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn the_open_file_limit_is_raised_for_max_connections_or_the_server_refuses_to_start() {
    let d = TempDir::new("nofile");
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the rlimit it is given.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    let hard = lim.rlim_max.min(4096);
    // A soft limit of 256 under a higher hard one: raised to the hard one for the default 512
    // connections.
    if hard >= 600 {
        let mut c = cmd(&d.0);
        c.args(["--listen", "127.0.0.1:0", "--schemes", "uuid7"]);
        with_open_files(&mut c, 256, hard);
        let p = spawn(c);
        let log = p.stderr.lock().unwrap().clone();
        assert!(
            log.contains(&format!(
                "raised the open-file limit (RLIMIT_NOFILE) from 256 to {hard}: --max-connections 512 needs 576"
            )),
            "{log}"
        );
        assert_eq!(get(p.addr, "/healthz", &[]).status, 200);
    }
    // A hard limit of 256: 512 connections cannot fit, and the server says what to do.
    let mut c = cmd(&d.0);
    c.args(["--listen", "127.0.0.1:0", "--schemes", "uuid7"]);
    with_open_files(&mut c, 256, 256);
    let (code, err) = stops(c);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--max-connections 512 needs 576 open files")
            && err.contains("LimitNOFILE=576")
            && err.contains("--max-connections 192 or less"),
        "{err}"
    );
    assert!(!err.contains("listening"), "{err}");
    // ... and fits with fewer.
    let mut c = cmd(&d.0);
    c.args([
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "uuid7",
        "--max-connections",
        "192",
    ]);
    with_open_files(&mut c, 256, 256);
    let p = spawn(c);
    assert_eq!(get(p.addr, "/healthz", &[]).status, 200);
}

/// The issue: one unfinished request head held the graceful shutdown open (24 s and more), and
/// timed-out batches kept the process alive after it printed "stopped". Now the connection
/// without a whole request is closed at once, and the batch in flight is cut at the end of the
/// grace.
#[test]
fn sigterm_with_an_unfinished_head_and_a_batch_in_flight_exits_within_the_grace() {
    use std::io::{Read, Write};
    let d = TempDir::new("grace");
    let mut c = cmd(&d.0);
    c.args([
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "sonyflake",
        "--node",
        "2",
        "--max-count",
        "100000",
        "--timeout-ms",
        "60000",
        "--shutdown-grace-ms",
        "1000",
    ]);
    let mut p = spawn(c);
    let mut head = std::net::TcpStream::connect(p.addr).unwrap();
    head.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // Sonyflake issues 256 ids per 10 ms: 100,000 take about 3.9 s.
    let mut batch = std::net::TcpStream::connect(p.addr).unwrap();
    batch
        .write_all(b"GET /v1/ids/sonyflake?count=100000 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let batch = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = batch.read_to_end(&mut out);
        out
    });
    // Connections are accepted in turn: the batch's is served by the time this one is
    // answered, and its request, sent before, is read well within the 300 ms that follow.
    assert_eq!(get(p.addr, "/healthz", &[]).status, 200);
    std::thread::sleep(Duration::from_millis(300));
    let t = std::time::Instant::now();
    // SAFETY: kill sends a signal to our own child.
    let rc = unsafe { libc::kill(p.child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = loop {
        if let Some(status) = p.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGTERM, with a grace of 1 s:\n{}",
            p.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t.elapsed();
    assert_eq!(status.code(), Some(0), "{}", p.stderr.lock().unwrap());
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(4),
        "exited {took:?} after SIGTERM, with a grace of 1 s"
    );
    // The batch is streamed: its head and first ids went out, and its body ends without the
    // final chunk (clients report it as incomplete).
    let out = batch.join().unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out[..out.len().min(200)])
    );
    assert!(
        !out.ends_with(b"\r\n0\r\n\r\n"),
        "the cut batch's body was complete"
    );
    std::thread::sleep(Duration::from_millis(50));
    let log = p.stderr.lock().unwrap().clone();
    assert!(
        log.contains("at most 1000 ms (--shutdown-grace-ms)")
            && log.contains("stopped after")
            && log.contains("; 1 connection closed unfinished (requests still in flight at the end of the 1000 ms grace")
            && log.contains("; 1 connection without a whole request closed at once"),
        "{log}"
    );
    let mut rest = Vec::new();
    let _ = head.read_to_end(&mut rest);
    assert!(rest.is_empty());
}

/// The process's peak resident memory, in KB.
fn peak_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// Before: every batch was made whole in memory before its first byte was sent (one request
/// for a million UUIDs held 39 MB; 8 of them were allowed at once), so clients that asked for
/// large batches and read slowly made the server's memory grow with their counts. Batches are
/// streamed now: four stalled clients of a million ids each cost the server a few MB.
#[test]
fn clients_of_large_batches_that_read_nothing_cost_the_server_little_memory() {
    let d = TempDir::new("memory");
    let mut c = cmd(&d.0);
    c.args([
        "--listen",
        "127.0.0.1:0",
        "--schemes",
        "uuid7",
        "--in-process",
        "--max-count",
        "1000000",
        "--timeout-ms",
        "60000",
    ]);
    let p = spawn(c);
    assert_eq!(
        get(p.addr, "/v1/ids/uuid7?count=5000", &[]).ids().len(),
        5000
    );
    let before = peak_kb(p.child.id());
    let stalled: Vec<_> = (0..4)
        .map(|_| http::stalled(p.addr, "/v1/ids/uuid7?count=1000000", &[]))
        .collect();
    // Wait until the server stops issuing (its frames queue up behind the full sockets).
    let last = http::issued_settled(p.addr, "uuid7");
    let grew_mb = (peak_kb(p.child.id()) - before) / 1024;
    // Made whole, the four bodies alone would be 4 x 37 MB.
    assert!(
        grew_mb < 40,
        "the server's peak memory grew {grew_mb} MB for 4 stalled clients ({last} ids issued)"
    );
    assert!(last < 4_000_000, "{last}");
    drop(stalled);
}

#[test]
fn the_service_refuses_to_start_when_idforge_state_names_one_file() {
    // `idforge gen --shared` and the language packages use the one file IDFORGE_STATE names;
    // the service, one file per scheme in the state directory: in one environment the two drew
    // from different sequences and could repeat each other's ids.
    let d = TempDir::new("envstate");
    let one = d.0.join("one.state");
    let (code, err) = refused(&d, &[], &[("IDFORGE_STATE", one.to_str().unwrap())]);
    assert!(code.is_some_and(|c| c != 0), "{code:?}: {err}");
    assert!(
        err.contains("IDFORGE_STATE is set") && err.contains("unset IDFORGE_STATE"),
        "{err}"
    );
    assert!(!one.exists());
}
