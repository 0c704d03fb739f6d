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
        err.contains("cannot read the etcd password file") && !err.contains("/nonexistent/pw"),
        "{err}"
    );
    // An attack review: the password given where its file's path goes was printed back, and so
    // was a password in the endpoint's URL.
    let (code, err) = run(&[
        "--etcd",
        "http://127.0.0.1:1",
        "--etcd-user",
        "idforge",
        "--etcd-password-file",
        "Idf0rge-S3cret-PW",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("S3cret"), "{err}");
    let (code, err) = run(&["--etcd", "https://idforge:Idf0rge-S3cret-PW@127.0.0.1:1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        !err.contains("S3cret") && err.contains("--etcd-password-file"),
        "{err}"
    );
}

/// An attack review: `etcd_password = "..."` in serve's config file (a key it does not take)
/// was refused with toml's message, which quotes the line, password and all.
#[test]
fn a_config_file_line_that_may_hold_a_secret_is_never_quoted() {
    let dir = std::env::temp_dir().join(format!("idforge-secret-toml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("serve.toml");
    for text in [
        "etcd = [\"http://127.0.0.1:1\"]\netcd_password = \"Idf0rge-S3cret-PW\"\n",
        "password = \"Idf0rge-S3cret-PW\"\n",
        "etcd_password_file = [\"Idf0rge-S3cret-PW\"]\n",
    ] {
        std::fs::write(&file, text).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_idforge"))
            .args(["serve", "--config"])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(!err.contains("S3cret"), "{text}: {err}");
        assert!(err.contains("line "), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
