//! The protocol against a real etcd (feature `etcd`; run through `scripts/etcd test`, which
//! installs etcd, protoc and openssl when they are missing). Each test starts its own etcd
//! members on free loopback ports, with data (and, for TLS, certificates made with `openssl`)
//! under a temporary directory, and kills them when it ends.

use std::collections::HashSet;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idforge_fleet::etcd::EtcdStore;
use idforge_fleet::local::{LocalCluster as Cluster, Security};
use idforge_fleet::{EtcdOptions, Failure, FleetError, FleetOptions, Member, Password};

fn member_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fleet-member"))
}

/// A member process: `fleet-member ENDPOINTS NS SECONDS RATE MAX_NODE TTL_MS`.
fn spawn_member(c: &Cluster, ns: &str, secs: f64, rate: u64, max_node: u64, ttl_ms: u64) -> Child {
    member_bin()
        .args([
            c.endpoints().join(","),
            ns.to_string(),
            secs.to_string(),
            rate.to_string(),
            max_node.to_string(),
            ttl_ms.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a member process and returns (exit code, ids printed, stderr).
fn finish(mut child: Child) -> (Option<i32>, Vec<u64>, String) {
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    let ids = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().unwrap())
        .collect();
    (status.code(), ids, err)
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on a child we spawned and have not reaped.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn snowflake_opts(ns: &str, max_node: u64) -> FleetOptions {
    let kind = idforge::schemes::catalog::Kind::from_name("snowflake", None).unwrap();
    let mut o =
        FleetOptions::new(ns, &kind, &idforge::schemes::open::OpenOptions::default()).unwrap();
    o.max_node = max_node;
    o.ttl = Duration::from_secs(2);
    o.reserve_ahead = Duration::from_millis(400);
    o
}

/// A snowflake generator on a member's node id and leased cell.
fn snowflake_on(m: &Member) -> idforge::schemes::open::Opened {
    let kind = idforge::schemes::catalog::Kind::from_name("snowflake", None).unwrap();
    idforge::schemes::open::Opened::open(
        &kind,
        &idforge::schemes::open::OpenOptions {
            node: Some(m.node()),
            cell: Some(m.cell()),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn twenty_processes_claim_twenty_distinct_ids_and_a_21st_finds_the_namespace_full() {
    let c = Cluster::start(1);
    let kids: Vec<Child> = (0..20)
        .map(|_| spawn_member(&c, "twenty", 3.0, 1000, 19, 5000))
        .collect();
    // Wait until all twenty hold their ids, then a 21st finds none.
    let store = c.store();
    let start = Instant::now();
    while store.scan("twenty").unwrap().held.len() < 20 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the twenty did not all join"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let extra = finish(spawn_member(&c, "twenty", 0.1, 10, 19, 5000));
    assert_eq!(extra.0, Some(4), "{}", extra.2);
    assert!(extra.2.contains("is full"), "{}", extra.2);
    let mut nodes = HashSet::new();
    let mut all = HashSet::new();
    for k in kids {
        let (code, ids, err) = finish(k);
        assert_eq!(code, Some(0), "{err}");
        let node: u64 = err
            .split("node=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(nodes.insert(node), "node {node} twice");
        for id in ids {
            assert!(all.insert(id), "duplicate id {id}");
        }
    }
    assert_eq!(nodes.len(), 20);
}

#[test]
fn after_kill_9_the_id_is_free_only_when_the_lease_expires_and_the_successor_is_above() {
    let c = Cluster::start(1);
    let a = spawn_member(&c, "kill9", 30.0, 5000, 0, 2000);
    std::thread::sleep(Duration::from_millis(1200));
    signal(&a, libc::SIGKILL);
    let killed_at = Instant::now();
    let (_, a_ids, _) = finish(a);
    assert!(!a_ids.is_empty());
    // Right away, the only node id is still leased.
    let early = finish(spawn_member(&c, "kill9", 0.1, 10, 0, 2000));
    if killed_at.elapsed() < Duration::from_millis(1500) {
        assert_eq!(
            early.0,
            Some(4),
            "claimed before the lease expired: {}",
            early.2
        );
    }
    std::thread::sleep(Duration::from_millis(2500));
    let (code, b_ids, err) = finish(spawn_member(&c, "kill9", 1.0, 5000, 0, 2000));
    assert_eq!(code, Some(0), "{err}");
    let a_max = *a_ids.iter().max().unwrap();
    assert!(
        b_ids.iter().all(|b| *b > a_max),
        "successor ids above the dead holder's"
    );
}

/// A member process whose output is read as it goes (a full pipe would stall it).
struct Running {
    pid: i32,
    reader: std::thread::JoinHandle<(Option<i32>, Vec<u64>, String)>,
}

fn run_member(c: &Cluster, ns: &str, secs: f64, rate: u64, max_node: u64, ttl_ms: u64) -> Running {
    let child = spawn_member(c, ns, secs, rate, max_node, ttl_ms);
    Running {
        pid: child.id() as i32,
        reader: std::thread::spawn(move || finish(child)),
    }
}

fn signal_pid(pid: i32, sig: i32) {
    // SAFETY: kill(2) on a child we spawned and whose reader has not reaped it yet.
    unsafe { libc::kill(pid, sig) };
}

#[test]
fn a_holder_stopped_past_its_ttl_and_resumed_never_collides_with_its_successor() {
    let c = Cluster::start(1);
    let a = run_member(&c, "sigstop", 8.0, 20_000, 0, 2000);
    std::thread::sleep(Duration::from_millis(1000));
    signal_pid(a.pid, libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(3000)); // past the TTL: the lease expires
    let b = run_member(&c, "sigstop", 3.0, 20_000, 0, 2000);
    std::thread::sleep(Duration::from_millis(1000));
    signal_pid(a.pid, libc::SIGCONT); // A wakes while B holds its node id
    let (b_code, b_ids, b_err) = b.reader.join().unwrap();
    let (_, a_ids, a_err) = a.reader.join().unwrap();
    assert_eq!(b_code, Some(0), "{b_err}");
    assert!(!b_ids.is_empty() && !a_ids.is_empty());
    let (b_first, b_last) = (b_ids[0], *b_ids.last().unwrap());
    // A went on trying to issue all along after it woke (its output was read as it went); any
    // id it printed while B ran would show here.
    let a_during_b = a_ids
        .iter()
        .filter(|a| (b_first..=b_last).contains(*a))
        .count();
    let a_set: HashSet<u64> = a_ids.iter().copied().collect();
    let dup = b_ids.iter().filter(|b| a_set.contains(b)).count();
    assert_eq!(
        dup, 0,
        "{dup} ids issued by both ({a_during_b} of A's inside B's range); A: {a_err}"
    );
    assert!(a_err.contains("refused="), "{a_err}");
}

#[test]
fn etcd_down_past_the_ttl_stops_issuing_with_bounded_calls_and_recovers() {
    let mut c = Cluster::start(1);
    let store = c.store();
    let m = Member::join(store, snowflake_opts("down", 3)).unwrap();
    let g = snowflake_on(&m);
    g.next().unwrap();
    let calls_before = m.status().store_calls;
    c.kill(0);
    std::thread::sleep(Duration::from_millis(2500)); // past the 2 s TTL
    assert!(
        g.next().is_err(),
        "issued past the lease deadline with etcd down"
    );
    let calls = m.status().store_calls - calls_before;
    assert!(calls <= 15, "{calls} calls in 2.5 s while etcd was down");
    c.spawn(0); // the same data directory: the lease has expired by now
    c.wait_ready();
    let start = Instant::now();
    while g.next().is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "no recovery: {:?}",
            m.status()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_leader_killed_holders_keep_their_ids_and_keep_issuing() {
    let mut c = Cluster::start(3);
    let mut o = snowflake_opts("leader", 3);
    // Defaults nearer production's (10 s): an election plus the client finding a live member
    // takes longer than a 2 s lease's deadline on a loaded 2-core machine.
    o.ttl = Duration::from_secs(5);
    o.reserve_ahead = Duration::from_secs(2);
    let m = Member::join(c.store(), o).unwrap();
    let g = snowflake_on(&m);
    let token = m.status().token;
    let leader = c.leader();
    c.kill(leader);
    let start = Instant::now();
    let mut ok = 0u64;
    let mut failed = 0u64;
    while start.elapsed() < Duration::from_secs(4) {
        match g.next() {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = m.status();
    assert!(st.issuing && st.lost.is_none(), "{st:?}");
    assert_eq!(st.token, token, "the same claim throughout");
    assert!(ok > 1000 && failed == 0, "ok {ok}, failed {failed}");
}

#[test]
fn a_clock_behind_the_marks_is_refused_against_etcd_too() {
    let c = Cluster::start(1);
    let store = c.store();
    let future = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        + 3_600_000_000_000;
    let (lease, _) = store.grant(Duration::from_secs(5)).unwrap();
    let claim = store
        .try_claim("behind", 0, lease, "test")
        .unwrap()
        .unwrap();
    assert!(store.release("behind", 0, claim.token, future).unwrap());
    let e = Member::join(store, snowflake_opts("behind", 0)).unwrap_err();
    assert!(matches!(e, FleetError::ClockBehind { .. }), "{e}");
}

/// 16 member processes for `IDFORGE_CHURN_SECS` (default 30) against a 3-member cluster, killed
/// with `kill -9` at random and restarted; every id they printed is collected: no duplicates.
#[test]
fn churn_with_kill_9_and_restarts_never_repeats_an_id() {
    let secs: u64 = std::env::var("IDFORGE_CHURN_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let c = Cluster::start(3);
    // 16 node ids for 16 processes: a restarted process waits for a killed one's id (leased for
    // the 2 s TTL) and takes it over. Every other restart runs on a clock stepped back 3 s, past
    // the TTL: without the marks it would reissue the last second of the dead holder's ids.
    let mut round = 0u64;
    let mut spawn = || {
        round += 1;
        let offset = if round > 16 && round % 2 == 0 {
            "-3000"
        } else {
            "0"
        };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleet-member"));
        cmd.env("IDFORGE_CLOCK_OFFSET_MS", offset)
            .env("IDFORGE_WAIT_FOR_NODE", "1")
            .args([
                c.endpoints().join(","),
                "churn".into(),
                "1000".into(),
                "5000".into(),
                "15".into(),
                "2000".into(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut kids: Vec<Child> = (0..16).map(|_| spawn()).collect();
    let mut done: Vec<Child> = Vec::new();
    let start = Instant::now();
    let mut restarts = 0u64;
    let mut seed = std::process::id() as u64;
    while start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(300));
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let i = (seed % kids.len() as u64) as usize;
        signal(&kids[i], libc::SIGKILL);
        done.push(std::mem::replace(&mut kids[i], spawn()));
        restarts += 1;
    }
    for k in &kids {
        signal(k, libc::SIGKILL);
    }
    done.extend(kids);
    let mut all = HashSet::new();
    let mut total = 0u64;
    for k in done {
        let (_, ids, _) = finish(k);
        for id in ids {
            total += 1;
            assert!(all.insert(id), "duplicate id {id}");
        }
    }
    eprintln!("churn: {total} ids, {restarts} kill -9 restarts, {secs} s, 0 duplicates");
    assert!(total > 10_000 && restarts > 10);
}

#[test]
fn a_mark_written_by_hand_skips_its_node_id_instead_of_blocking_the_namespace() {
    let c = Cluster::start(1);
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &c.endpoints()[0],
            "put",
            "/idforge/garbage/hwm/0",
            "not-a-number",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = Member::join(c.store(), snowflake_opts("garbage", 1)).unwrap();
    assert_eq!(a.node(), 1, "node 0's mark is unreadable: it is skipped");
    let e = Member::join(c.store(), snowflake_opts("garbage", 1)).unwrap_err();
    assert!(matches!(e, FleetError::NamespaceFull { .. }), "{e}");
}

#[test]
fn a_node_key_deleted_by_an_operator_fences_its_holder_within_a_renewal() {
    let c = Cluster::start(1);
    let m = Member::join(c.store(), snowflake_opts("opdel", 0)).unwrap();
    let g = snowflake_on(&m);
    g.next().unwrap();
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &c.endpoints()[0],
            "del",
            "/idforge/opdel/node/0",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    std::thread::sleep(Duration::from_millis(400)); // renewals every 100 ms here
    let e = g.next().unwrap_err();
    assert!(e.to_string().contains("deleted or replaced"), "{e}");
}

/// A refused connection: its failure kind, its message, and how long it took (no retrying).
fn refused(o: &idforge_fleet::EtcdOptions) -> (Failure, String, Duration) {
    let start = Instant::now();
    let e = EtcdStore::connect_with(o).unwrap_err();
    (e.failure, e.to_string(), start.elapsed())
}

#[test]
fn over_tls_a_member_with_a_client_certificate_issues_and_bad_certificates_are_refused() {
    let c = Cluster::start_with(
        1,
        Security {
            tls: true,
            auth: false,
        },
    );
    let ep = c.endpoints()[0].clone();
    assert!(ep.starts_with("https://127.0.0.1:"), "{ep}");
    let m = Member::join(c.store(), snowflake_opts("tls", 3)).unwrap();
    let g = snowflake_on(&m);
    let ids: HashSet<u128> = (0..10_000).map(|_| g.next().unwrap()).collect();
    assert_eq!(ids.len(), 10_000);
    let node = m.node();
    m.shutdown().unwrap();
    let scan = c.store().scan("tls").unwrap();
    assert!(
        !scan.held.contains(&node) && scan.hwm.contains_key(&node),
        "{scan:?}"
    );

    // etcd's certificate checked against a CA that did not sign it.
    let mut o = c.options();
    o.ca_cert = Some(c.other_ca_cert());
    let (f, msg, took) = refused(&o);
    assert_eq!(f, Failure::Tls, "{msg}");
    assert!(
        msg.contains(&ep)
            && msg.contains("not signed by the CA certificate")
            && msg.contains("other-ca.pem")
            && msg.contains("UnknownIssuer"),
        "{msg}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}: {msg}");

    // No client certificate, to an etcd with --client-cert-auth.
    let mut o = c.options();
    o.client_cert = None;
    o.client_key = None;
    let (f, msg, took) = refused(&o);
    assert_eq!(f, Failure::ClientCertificate, "{msg}");
    assert!(
        msg.contains(&ep) && msg.contains("requires a client certificate"),
        "{msg}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}: {msg}");

    // A client certificate signed by a CA etcd does not trust.
    let mut o = c.options();
    let (cert, key) = c.stranger_cert();
    o.client_cert = Some(cert);
    o.client_key = Some(key);
    let (f, msg, _) = refused(&o);
    assert_eq!(f, Failure::ClientCertificate, "{msg}");
    assert!(
        msg.contains("did not accept this client's certificate"),
        "{msg}"
    );

    // Plain HTTP to the TLS port.
    let plain = idforge_fleet::EtcdOptions::new([ep.replace("https://", "http://")]);
    let (f, msg, took) = refused(&plain);
    assert_eq!(f, Failure::Tls, "{msg}");
    assert!(msg.contains("use https:// endpoints"), "{msg}");
    assert!(took < Duration::from_secs(5), "{took:?}: {msg}");
}

#[test]
fn the_least_privilege_role_is_enough_to_join_reserve_renew_and_release_over_tls() {
    let c = Cluster::start_with(
        1,
        Security {
            tls: true,
            auth: true,
        },
    );
    // As user idforge, whose role may read and write /idforge/ and nothing else.
    let store = c.store();
    let m = Member::join(store.clone(), snowflake_opts("rbac", 3)).unwrap();
    let g = snowflake_on(&m);
    let first = m.status();
    // 3 s, past the 2 s TTL: issuing goes on only if renewals and reservations succeed.
    let start = Instant::now();
    let (mut ok, mut failed) = (0u64, 0u64);
    while start.elapsed() < Duration::from_secs(3) {
        match g.next() {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = m.status();
    assert!(st.issuing && st.lost.is_none(), "{st:?}");
    assert_eq!(st.token, first.token, "the same claim throughout");
    assert!(
        st.reserved_ns >= first.reserved_ns + 2_000_000_000,
        "reservations were extended: {first:?} -> {st:?}"
    );
    assert!(st.store_calls >= first.store_calls + 20, "{st:?}");
    assert!(ok > 1000 && failed == 0, "ok {ok}, failed {failed}");
    let node = m.node();
    m.shutdown().unwrap();
    let scan = store.scan("rbac").unwrap();
    assert!(!scan.held.contains(&node), "released: {scan:?}");
    assert!(scan.hwm[&node] >= first.reserved_ns, "{scan:?}");

    let ep = c.endpoints()[0].clone();
    // A wrong password.
    let mut o = c.options();
    o.password = Some(Password::new("not-the-password"));
    let (f, msg, took) = refused(&o);
    assert_eq!(f, Failure::Auth, "{msg}");
    assert!(
        msg.contains(&ep)
            && msg.contains("refused user \"idforge\"")
            && msg.contains("wrong user name or password")
            && !msg.contains("not-the-password"),
        "{msg}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}: {msg}");
    // A user whose role does not cover /idforge/.
    let o = c.options_as(Some((
        idforge_fleet::local::OUTSIDER,
        idforge_fleet::local::OUTSIDER_PASSWORD,
    )));
    let (f, msg, _) = refused(&o);
    assert_eq!(f, Failure::Permission, "{msg}");
    assert!(
        msg.contains("denied user \"outsider\" access to /idforge/")
            && msg.contains("readwrite /idforge/"),
        "{msg}"
    );
    // No user and no password: etcd takes the client certificate's common name (idforge).
    let by_cert = Arc::new(EtcdStore::connect_with(&c.options_as(None)).unwrap());
    let m = Member::join(by_cert, snowflake_opts("rbac", 3)).unwrap();
    snowflake_on(&m).next().unwrap();
    m.shutdown().unwrap();
    // A role limited to one namespace (FLEET.md's least privilege) joins that namespace: the
    // connection check reads the namespace's prefix only (it used to read all of /idforge/,
    // which such a role may not, so every member needed rights on every team's keys).
    let team = c.options_as(Some((
        idforge_fleet::local::TEAM,
        idforge_fleet::local::TEAM_PASSWORD,
    )));
    let in_team = EtcdOptions {
        namespace: Some("team".into()),
        ..team.clone()
    };
    let store = Arc::new(EtcdStore::connect_with(&in_team).unwrap());
    let m = Member::join(store, snowflake_opts("team", 4)).unwrap();
    snowflake_on(&m).next().unwrap();
    m.shutdown().unwrap();
    // Without a namespace, or in another team's, it is refused, naming the prefix.
    let (f, msg, _) = refused(&team);
    assert_eq!(f, Failure::Permission, "{msg}");
    let elsewhere = EtcdOptions {
        namespace: Some("rbac".into()),
        ..team
    };
    let (f, msg, _) = refused(&elsewhere);
    assert_eq!(f, Failure::Permission, "{msg}");
    assert!(msg.contains("access to /idforge/rbac/"), "{msg}");
    // A user that may only read connects (the check reads), and its join is refused at once,
    // as denied: it used to be retried for the whole join timeout and reported "unavailable".
    let reader = c.options_as(Some((
        idforge_fleet::local::READER,
        idforge_fleet::local::READER_PASSWORD,
    )));
    let store = Arc::new(EtcdStore::connect_with(&reader).unwrap());
    let started = Instant::now();
    let e = Member::join(store, snowflake_opts("rbac", 3)).unwrap_err();
    let took = started.elapsed();
    match &e {
        FleetError::Store { source, .. } => assert!(
            matches!(source, idforge_fleet::StoreError::Denied(_)),
            "{e}"
        ),
        other => panic!("{other}"),
    }
    assert!(
        e.to_string().contains("needs readwrite, not only read"),
        "{e}"
    );
    // Not retried: far less than the join timeout's 10 s, even on a loaded machine.
    assert!(took < Duration::from_secs(5), "{took:?}: {e}");
}

/// Two custom layouts with the same widths in another order share no namespace: their ids
/// overlap (before: 2,926 of 6,000,000 ids issued twice). Refused naming both layouts.
#[test]
fn two_layouts_that_differ_only_in_field_order_are_refused_in_one_namespace() {
    let c = Cluster::start(1);
    let layout = |spec: &str| {
        let kind = idforge::schemes::catalog::Kind::from_name("custom", Some(spec)).unwrap();
        FleetOptions::new(
            "order",
            &kind,
            &idforge::schemes::open::OpenOptions::default(),
        )
        .unwrap()
    };
    let a = layout("time:41,node:10,counter:12");
    let b = layout("node:10,time:41,counter:12");
    let held = Member::join(c.store(), a).unwrap();
    let e = Member::join(c.store(), b).unwrap_err();
    assert!(matches!(e, FleetError::SpecMismatch { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("time[62..22] node[21..12] counter[11..0]")
            && text.contains("node[62..53] time[52..12] counter[11..0]"),
        "both layouts named: {text}"
    );
    held.shutdown().unwrap();
}

/// A reservation only ever raises the mark: a write that arrives after a higher one (a delayed
/// retry) leaves it as it is; a fenced one writes nothing.
#[test]
fn a_reservation_never_lowers_the_mark() {
    let c = Cluster::start(1);
    let store = c.store();
    let t = 1_800_000_000_000_000_000u64;
    let (lease, _) = store.grant(Duration::from_secs(5)).unwrap();
    let claim = store.try_claim("rises", 0, lease, "test").unwrap().unwrap();
    assert!(store
        .reserve("rises", 0, claim.token, t + 2_000_000_000)
        .unwrap());
    assert!(store
        .reserve("rises", 0, claim.token, t + 1_000_000_000)
        .unwrap());
    assert_eq!(
        store.scan("rises").unwrap().hwm.get(&0),
        Some(&(t + 2_000_000_000)),
        "a later, lower write lowered the mark"
    );
    assert!(store
        .reserve("rises", 0, claim.token, t + 3_000_000_000)
        .unwrap());
    assert!(!store
        .reserve("rises", 0, claim.token + 1, t + 4_000_000_000)
        .unwrap());
    assert_eq!(
        store.scan("rises").unwrap().hwm.get(&0),
        Some(&(t + 3_000_000_000))
    );
}

/// Before: with etcd down a member stopped issuing when its reservation (R) ran out, about
/// 2 s by default, not at `0.9 T` as documented, and each call then waited on etcd (6 s) before
/// its error. Now it issues until `0.9 T` after its last renewal, then refuses every call at once.
#[test]
fn etcd_down_the_member_issues_until_0_9_ttl_then_refuses_at_once() {
    let mut c = Cluster::start(1);
    let mut o = snowflake_opts("down-09", 0);
    o.ttl = Duration::from_secs(3); // deadline 2.7 s after the last renewal
    o.reserve_ahead = Duration::from_millis(400); // renewals every 100 ms
    let m = Member::join(c.store(), o).unwrap();
    let g = snowflake_on(&m);
    g.next().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    c.kill(0);
    let down = Instant::now();
    let (mut last_ok, mut first_refused, mut slowest) = (None, None, Duration::ZERO);
    while down.elapsed() < Duration::from_millis(3500) {
        let t = Instant::now();
        let r = g.next();
        slowest = slowest.max(t.elapsed());
        match r {
            Ok(_) => last_ok = Some(down.elapsed()),
            Err(_) => {
                first_refused.get_or_insert(down.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "etcd down: last id {last_ok:?}, first refusal {first_refused:?}, slowest call {slowest:?}"
    );
    let first_refused = first_refused.expect("refused once the deadline passed");
    // The last renewal was at most a renewal interval and a call before etcd went down.
    assert!(
        first_refused >= Duration::from_millis(2200),
        "stopped {first_refused:?} after etcd went down, before 0.9 T"
    );
    assert!(
        last_ok.unwrap() <= Duration::from_millis(2700),
        "issued past the deadline"
    );
    assert!(
        slowest < Duration::from_millis(150),
        "a call waited {slowest:?} on an etcd that is down"
    );
}
