//! `idforge gen --etcd` and `idforge fleet` against a real etcd (feature `etcd`; run through
//! scripts/etcd test).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use idforge_fleet::local::{LocalCluster, Security, PASSWORD};

fn idforge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_idforge"))
}

#[test]
fn two_gen_processes_lease_two_node_ids_and_never_collide_then_status_shows_the_marks() {
    let c = LocalCluster::start(1);
    let eps = c.endpoints().join(",");
    // Both at once: each leases its own node id.
    let kids: Vec<_> = (0..2)
        .map(|_| {
            idforge()
                .args(["gen", "snowflake", "--etcd", &eps, "-n", "200000"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let kids: Vec<_> = kids
        .into_iter()
        .map(|k| k.wait_with_output().unwrap())
        .collect();
    let mut all = std::collections::HashSet::new();
    let mut nodes = std::collections::HashSet::new();
    for o in &kids {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(
            err.contains("leased from etcd namespace \"snowflake\""),
            "{err}"
        );
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            assert!(all.insert(l.to_string()), "duplicate {l}");
            let d = idforge::inspect(l, Some(&idforge::Scheme::Snowflake), None).unwrap();
            nodes.insert(d.node.unwrap());
        }
    }
    assert_eq!(all.len(), 400_000);
    let o = idforge()
        .args(["fleet", "--etcd", &eps, "--namespace", "snowflake"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    // Both gave their ids back, with their last times as the marks.
    assert!(text.contains("0 node ids held, 2 used"), "{text}");
    assert_eq!(text.matches("  free  mark 20").count(), 2, "{text}");
    assert_eq!(nodes.len(), 2);
}

#[test]
fn etcd_errors_exit_6_and_flags_are_checked() {
    let o = idforge()
        .args([
            "gen",
            "snowflake",
            "--etcd",
            "http://127.0.0.1:1",
            "-n",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = idforge()
        .args(["gen", "uuid7", "--etcd", "http://127.0.0.1:2379"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no node id to lease"));
    let o = idforge()
        .args([
            "gen",
            "snowflake",
            "--node",
            "1",
            "--etcd",
            "http://127.0.0.1:2379",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn nanots_host_with_two_and_three_digits_lease_in_separate_namespaces() {
    let c = LocalCluster::start(1);
    let eps = c.endpoints().join(",");
    for digits in ["2", "3"] {
        let o = idforge()
            .args([
                "gen",
                "nanots-host",
                "--host-digits",
                digits,
                "--etcd",
                &eps,
                "-n",
                "10",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(
            err.contains(&format!("namespace \"nanots-host{digits}\"")),
            "{err}"
        );
    }
    // The same namespace named by hand for both is refused: the layouts differ.
    let run = |digits: &str| {
        idforge()
            .args([
                "gen",
                "nanots-host",
                "--host-digits",
                digits,
                "--etcd",
                &eps,
            ])
            .args(["--namespace", "mixed", "-n", "1"])
            .output()
            .unwrap()
    };
    assert!(run("2").status.success());
    let o = run("3");
    assert_eq!(o.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&o.stderr).contains("namespace per layout"));
}

/// `--etcd-user idforge --etcd-password-file PW`.
fn user(pw: &Path) -> Vec<OsString> {
    vec![
        "--etcd-user".into(),
        "idforge".into(),
        "--etcd-password-file".into(),
        pw.into(),
    ]
}

/// `--etcd-cacert CA` and the cluster's client certificate and key.
fn certs(c: &LocalCluster, ca: &Path) -> Vec<OsString> {
    vec![
        "--etcd-cacert".into(),
        ca.into(),
        "--etcd-cert".into(),
        c.client_cert().into(),
        "--etcd-key".into(),
        c.client_key().into(),
    ]
}

fn secure() -> LocalCluster {
    LocalCluster::start_with(
        1,
        Security {
            tls: true,
            auth: true,
        },
    )
}

/// `gen snowflake --etcd` over TLS as user idforge, with `args` added; the environment's
/// IDFORGE_ETCD_* variables cleared.
fn gen_secure(c: &LocalCluster, args: &[OsString]) -> std::process::Output {
    let mut cmd = idforge();
    for v in [
        "IDFORGE_ETCD",
        "IDFORGE_ETCD_CACERT",
        "IDFORGE_ETCD_CERT",
        "IDFORGE_ETCD_KEY",
        "IDFORGE_ETCD_USER",
        "IDFORGE_ETCD_PASSWORD",
        "IDFORGE_ETCD_PASSWORD_FILE",
    ] {
        cmd.env_remove(v);
    }
    cmd.args([
        "gen",
        "snowflake",
        "-n",
        "1000",
        "--etcd",
        &c.endpoints()[0],
    ])
    .args(args)
    .output()
    .unwrap()
}

#[test]
fn gen_over_tls_with_a_user_and_a_password_file_then_fleet_status_from_the_environment() {
    let c = secure();
    let o = gen_secure(
        &c,
        &[certs(&c, &c.ca_cert()), user(&c.password_file())].concat(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("leased from etcd namespace"), "{err}");
    assert!(!err.contains(PASSWORD) && !err.contains("warning"), "{err}");
    let ids: std::collections::HashSet<_> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(ids.len(), 1000);
    // The same settings from the environment, the password itself in IDFORGE_ETCD_PASSWORD.
    let o = idforge()
        .args(["fleet", "--namespace", "snowflake"])
        .env("IDFORGE_ETCD", &c.endpoints()[0])
        .env("IDFORGE_ETCD_CACERT", c.ca_cert())
        .env("IDFORGE_ETCD_CERT", c.client_cert())
        .env("IDFORGE_ETCD_KEY", c.client_key())
        .env("IDFORGE_ETCD_USER", "idforge")
        .env("IDFORGE_ETCD_PASSWORD", PASSWORD)
        .env_remove("IDFORGE_ETCD_PASSWORD_FILE")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("0 node ids held, 1 used"), "{text}");
}

#[test]
fn a_wrong_password_an_untrusted_certificate_and_no_client_certificate_exit_6_with_what_to_check() {
    let c = secure();
    let ep = c.endpoints()[0].clone();
    let dir = c.dir().to_path_buf();
    let wrong = dir.join("wrong.password");
    std::fs::write(&wrong, "not-the-password\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let ca = c.ca_cert();
    let other = c.other_ca_cert();
    let cases: Vec<(&str, Vec<OsString>, &[&str])> = vec![
        (
            "wrong password",
            [certs(&c, &ca), user(&wrong)].concat(),
            &[
                "refused user \"idforge\": wrong user name or password",
                "--etcd-user and --etcd-password-file",
            ],
        ),
        (
            "untrusted server certificate",
            [certs(&c, &other), user(&c.password_file())].concat(),
            &[
                "the server's certificate is not signed by the CA certificate",
                "other-ca.pem",
                "--etcd-cacert",
            ],
        ),
        (
            "no client certificate",
            [
                vec!["--etcd-cacert".into(), ca.clone().into()],
                user(&c.password_file()),
            ]
            .concat(),
            &[
                "requires a client certificate",
                "--etcd-cert and --etcd-key",
            ],
        ),
    ];
    for (what, args, says) in cases {
        let start = std::time::Instant::now();
        let o = gen_secure(&c, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        eprintln!("{what} ({:?}): {err}", start.elapsed());
        assert_eq!(o.status.code(), Some(6), "{what}: {err}");
        assert!(err.contains(&ep), "{what}: {err}");
        for s in says {
            assert!(err.contains(s), "{what}: no {s:?} in {err}");
        }
        assert!(
            !err.contains("not-the-password") && !err.contains(PASSWORD),
            "{err}"
        );
        assert!(o.stdout.is_empty(), "{what}");
    }
}

/// Before: `gen --etcd` ended by SIGTERM left its node id taken until the lease expired. Now
/// SIGTERM and SIGINT give it back (mark written, node key deleted, lease revoked) and the
/// process still ends by the signal. Its output is never read here: the main thread is blocked
/// writing to a full pipe when the signal comes.
#[test]
fn sigterm_and_sigint_give_the_node_id_back_at_once_and_end_by_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    let c = LocalCluster::start(1);
    let eps = c.endpoints().join(",");
    let store = c.store();
    for (sig, ns) in [(libc::SIGTERM, "sigterm"), (libc::SIGINT, "sigint")] {
        let mut child = idforge()
            .args(["gen", "snowflake", "--etcd", &eps, "--namespace", ns])
            .args(["--lease-ttl", "30", "-n", "1000000000"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while store.scan(ns).unwrap().held.is_empty() {
            assert!(start.elapsed() < Duration::from_secs(20), "never joined");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300)); // issuing, its pipe full
                                                        // SAFETY: kill(2) on our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let signalled = Instant::now();
        let status = child.wait().unwrap();
        let scan = store.scan(ns).unwrap();
        let took = signalled.elapsed();
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert_eq!(status.signal(), Some(sig), "{status}: {err}");
        assert!(
            scan.held.is_empty(),
            "the node id is still taken {took:?} after the signal (the lease's TTL is 30 s): {err}"
        );
        assert_eq!(scan.hwm.len(), 1, "its mark was written");
        assert!(took < Duration::from_secs(5), "{took:?}");
        eprintln!("{ns}: node id given back, process ended {took:?} after the signal");
    }
}
