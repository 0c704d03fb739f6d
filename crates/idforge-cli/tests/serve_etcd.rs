//! `idforge serve --etcd` against a real etcd (feature `etcd`; run through scripts/etcd test):
//! two servers lease different node ids and never serve the same id; a graceful stop gives the
//! node id back; a server cut off from etcd for longer than its lease is not ready and refuses
//! ids with 503.

mod common;
#[path = "../../idforge-serve/tests/common/http.rs"]
mod http;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{cmd, spawn, Proc, TempDir};
use http::get;
use idforge_fleet::local::{LocalCluster, Security, PASSWORD};

fn serve(state: &Path, etcd: &str) -> Proc {
    let mut c = cmd(state);
    c.args(["--listen", "127.0.0.1:0", "--schemes", "snowflake,uuid7"])
        .args(["--etcd", etcd, "--lease-ttl", "2"]);
    spawn(c)
}

/// The value of a metric line `name{scheme="snowflake"} V`.
fn gauge(addr: SocketAddr, name: &str) -> f64 {
    let m = get(addr, "/metrics", &[]).text();
    let prefix = format!("{name}{{scheme=\"snowflake\"}} ");
    m.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{m}"))
        .parse()
        .unwrap()
}

fn node_of(id: &str) -> u64 {
    idforge::inspect(id, Some(&idforge::Scheme::Snowflake), None)
        .unwrap()
        .node
        .unwrap() as u64
}

#[test]
fn two_servers_lease_two_node_ids_never_collide_and_stop_serving_without_etcd() {
    let mut cluster = LocalCluster::start(1);
    let eps = cluster.endpoints().join(",");
    let d = TempDir::new("two");
    let a = serve(&d.0, &eps);
    let mut b = serve(&d.0, &eps);
    let (na, nb) = (
        gauge(a.addr, "idforge_node_id") as u64,
        gauge(b.addr, "idforge_node_id") as u64,
    );
    assert_ne!(na, nb, "the two servers lease different node ids");
    for p in [&a, &b] {
        assert_eq!(get(p.addr, "/readyz", &[]).status, 200);
        assert_eq!(gauge(p.addr, "idforge_lease_held"), 1.0);
        assert!(gauge(p.addr, "idforge_fencing_token") > 0.0);
        assert!(gauge(p.addr, "idforge_reservation_ahead_seconds") > 0.0);
        let log = p.stderr.lock().unwrap().clone();
        assert!(
            log.contains("snowflake: node ")
                && log.contains("leased from etcd namespace \"snowflake\" (fencing token "),
            "{log}"
        );
    }

    // Both at once, from two client threads each: every id distinct, each with its server's node.
    let mut all = HashSet::new();
    let takers: Vec<_> = [(a.addr, na), (b.addr, nb), (a.addr, na), (b.addr, nb)]
        .into_iter()
        .map(|(addr, node)| {
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..40 {
                    ids.extend(get(addr, "/v1/ids/snowflake?count=2000", &[]).ids());
                }
                (ids, node)
            })
        })
        .collect();
    for t in takers {
        let (ids, node) = t.join().unwrap();
        for id in ids {
            assert_eq!(node_of(&id), node, "{id} is of its server's node");
            assert!(all.insert(id.clone()), "duplicate {id}");
        }
    }
    assert_eq!(all.len(), 4 * 40 * 2000);

    // A graceful stop gives b's node id back, with its last time as the mark.
    // SAFETY: kill sends a signal to our own child.
    assert_eq!(
        unsafe { libc::kill(b.child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let code = b.child.wait().unwrap().code();
    std::thread::sleep(Duration::from_millis(50));
    let log = b.stderr.lock().unwrap().clone();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains("stopped") && !log.contains("could not give"),
        "{log}"
    );
    let scan = idforge_fleet::Store::scan(cluster.store().as_ref(), "snowflake").unwrap();
    assert!(!scan.held.contains(&nb), "{scan:?}");
    assert!(scan.held.contains(&na), "{scan:?}");
    assert!(scan.hwm.contains_key(&nb), "{scan:?}");

    // etcd gone for longer than the 2 s lease: a is not ready, and refuses snowflake ids.
    cluster.kill(0);
    let gone = Instant::now();
    let r = loop {
        let r = get(a.addr, "/readyz", &[]);
        if r.status != 200 {
            break r;
        }
        assert!(
            gone.elapsed() < Duration::from_secs(10),
            "still ready 10 s after etcd died"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(r.status, 503);
    assert!(r.error().contains("snowflake: node"), "{}", r.error());
    let r = get(a.addr, "/v1/ids/snowflake", &[]);
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.error().contains("no longer held"), "{}", r.error());
    assert_eq!(gauge(a.addr, "idforge_lease_held"), 0.0);
    assert!(get(a.addr, "/metrics", &[])
        .text()
        .contains("idforge_ready 0"));
    // Schemes without a node id still issue.
    assert_eq!(get(a.addr, "/v1/ids/uuid7", &[]).status, 200);
    // Still unready well past the TTL.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(get(a.addr, "/readyz", &[]).status, 503);
}

#[test]
fn serve_etcd_is_refused_with_node_and_names_a_bad_endpoint() {
    let d = TempDir::new("bad");
    let out = Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--etcd",
            "http://127.0.0.1:1",
            "--node",
            "3",
        ])
        .env("IDFORGE_STATE_DIR", &d.0)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("leave out --node"), "{err}");
}

#[test]
fn serve_over_tls_as_the_least_privilege_user_from_the_config_file_and_the_environment() {
    let cluster = LocalCluster::start_with(
        1,
        Security {
            tls: true,
            auth: true,
        },
    );
    let d = TempDir::new("tls");
    let config = d.0.join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "etcd = \"{}\"\netcd_cacert = {:?}\netcd_cert = {:?}\netcd_key = {:?}\netcd_user = \"idforge\"\nlease_ttl = 2\n",
            cluster.endpoints()[0],
            cluster.ca_cert(),
            cluster.client_cert(),
            cluster.client_key(),
        ),
    )
    .unwrap();
    let mut c = cmd(&d.0);
    c.args(["--listen", "127.0.0.1:0", "--schemes", "snowflake"])
        .arg("--config")
        .arg(&config)
        .env("IDFORGE_ETCD_PASSWORD", PASSWORD);
    let p = spawn(c);
    assert_eq!(get(p.addr, "/readyz", &[]).status, 200);
    assert_eq!(gauge(p.addr, "idforge_lease_held"), 1.0);
    let r = get(p.addr, "/v1/ids/snowflake?count=100", &[]);
    assert_eq!(r.ids().len(), 100);
    let metrics = get(p.addr, "/metrics", &[]).text();
    assert!(!metrics.contains(PASSWORD), "{metrics}");
    std::thread::sleep(Duration::from_millis(2500)); // past the TTL: renewals went through
    assert_eq!(get(p.addr, "/readyz", &[]).status, 200);
    let log = p.stderr.lock().unwrap().clone();
    assert!(log.contains("leased from etcd namespace"), "{log}");
    assert!(!log.contains(PASSWORD) && !log.contains("warning"), "{log}");

    // The same file with a wrong password from the environment: refused, saying why.
    let out = cmd(&d.0)
        .args(["--listen", "127.0.0.1:0", "--schemes", "snowflake"])
        .arg("--config")
        .arg(&config)
        .env("IDFORGE_ETCD_PASSWORD", "not-the-password")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("snowflake: etcd at https://127.0.0.1:")
            && err.contains("refused user \"idforge\": wrong user name or password")
            && err.contains("IDFORGE_ETCD_PASSWORD")
            && !err.contains("not-the-password"),
        "{err}"
    );
}
