//! The etcd settings' checks, which need no etcd (and no `etcd` feature): secrets never reach
//! `--help`, and settings that do not go together are refused before anything connects.

use std::process::Command;

fn idforge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_idforge"));
    for v in [
        "IDFORGE_ETCD",
        "IDFORGE_ETCD_CACERT",
        "IDFORGE_ETCD_CERT",
        "IDFORGE_ETCD_KEY",
        "IDFORGE_ETCD_USER",
        "IDFORGE_ETCD_PASSWORD_FILE",
        "IDFORGE_NODE",
    ] {
        c.env_remove(v);
    }
    c
}

const SECRET: &str = "s3cret-in-the-environment";

#[test]
fn help_never_shows_the_password_from_the_environment() {
    for cmd in ["gen", "serve", "fleet"] {
        let o = idforge()
            .args([cmd, "--help"])
            .env("IDFORGE_ETCD_PASSWORD", SECRET)
            .env("IDFORGE_ETCD_USER", "idforge")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success());
        assert!(out.contains("--etcd-password-file"), "{cmd}: {out}");
        assert!(out.contains("--etcd-cacert"), "{cmd}: {out}");
        assert!(
            !out.contains(SECRET),
            "{cmd} --help shows the password:\n{out}"
        );
    }
}

#[test]
fn etcd_settings_that_do_not_go_together_exit_2_without_echoing_a_password() {
    let run = |args: &[&str]| {
        let o = idforge()
            .args(["gen", "snowflake", "-n", "1"])
            .args(args)
            .env("IDFORGE_ETCD_PASSWORD", SECRET)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!err.contains(SECRET), "{err}");
        (o.status.code(), err)
    };
    // A user named with its password, as etcdctl allows: refused, the password not repeated.
    let (code, err) = run(&[
        "--etcd",
        "https://127.0.0.1:1",
        "--etcd-cacert",
        "/dev/null",
        "--etcd-user",
        "root:hunter2",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("never on the command line") && !err.contains("hunter2"),
        "{err}"
    );
    // https:// without a CA.
    let (code, err) = run(&["--etcd", "https://127.0.0.1:1", "--etcd-user", "idforge"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("need the CA certificate"), "{err}");
    // A certificate without its key.
    let (code, err) = run(&[
        "--etcd",
        "https://127.0.0.1:1",
        "--etcd-cacert",
        "/dev/null",
        "--etcd-cert",
        "/dev/null",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("give both"), "{err}");
    // TLS files with an http:// endpoint.
    let (code, err) = run(&["--etcd", "http://127.0.0.1:1", "--etcd-cacert", "/dev/null"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("write https://"), "{err}");
    // An --etcd-* flag without --etcd.
    let (code, err) = run(&["--node", "1", "--etcd-user", "idforge"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("go with --etcd"), "{err}");
    // A password file that does not exist.
    let (code, err) = run(&[
        "--etcd",
        "http://127.0.0.1:1",
        "--etcd-user",
        "idforge",
        "--etcd-password-file",
        "/nonexistent/pw",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("cannot read the etcd password file /nonexistent/pw"),
        "{err}"
    );
}
