//! `idforge torture` and its working directory: it refuses a directory that is not empty, removes
//! only what it created, and winds down on SIGTERM.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("idforge-cli-torture-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn idforge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_idforge"));
    c.env_remove("IDFORGE_NODE").env_remove("IDFORGE_STATE");
    c
}

#[test]
fn a_directory_that_is_not_empty_is_refused_and_left_alone() {
    let d = tmpdir("full");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("keep.txt"), "mine").unwrap();
    let o = idforge()
        .args(["torture", "--duration", "1s", "--dir"])
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(
        e.contains(d.to_str().unwrap()) && e.contains("not empty") && e.contains("empty or new"),
        "{e}"
    );
    assert!(o.stdout.is_empty(), "nothing ran");
    assert_eq!(std::fs::read_to_string(d.join("keep.txt")).unwrap(), "mine");
    assert!(d.join("sub").is_dir());
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_short_run_passes_and_leaves_an_existing_empty_directory_empty() {
    let d = tmpdir("empty");
    std::fs::create_dir_all(&d).unwrap();
    let o = idforge()
        .args(["torture", "--duration", "3s", "--dir"])
        .arg(&d)
        .output()
        .unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("result: passed"), "{out}");
    assert!(
        out.contains("snowflake/node 3 (fork rounds, RunAhead)"),
        "{out}"
    );
    // The fleet's fork rounds ran and issued (a round whose child issued under its parent's
    // lease fails the run instead).
    let fleet = out
        .lines()
        .find(|l| l.contains("snowflake/fleet lease (fork rounds)"))
        .unwrap_or_else(|| panic!("no fleet fork rounds: {out}"));
    assert!(
        fleet.contains(" 0 duplicates") && !fleet.contains(" 0 ids"),
        "{fleet}"
    );
    assert!(d.is_dir(), "the directory it was given stays");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "and is empty");
    std::fs::remove_dir(d).unwrap();
}

#[test]
fn sigterm_winds_down_cleans_up_and_exits_143() {
    let d = tmpdir("sigterm");
    let child = idforge()
        .args(["torture", "--duration", "60s", "--dir"])
        .arg(&d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    // SAFETY: kill(2) on our own child, which has not been reaped.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(143), "{out}");
    assert!(
        out.contains("idforge torture summary") && out.contains("stopped by SIGTERM"),
        "{out}"
    );
    assert!(!d.exists(), "the directory torture created is removed");
}
