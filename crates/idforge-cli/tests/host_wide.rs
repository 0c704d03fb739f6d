//! Host-wide generation with the real binary: several processes on one state file, kill -9 and
//! restart cycles, a restarted process whose clock is behind the file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("idforge-cli-hw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn idforge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_idforge"));
    c.env_remove("IDFORGE_NODE").env_remove("IDFORGE_STATE");
    c
}

/// Hex ids of `width` digits, one per line; a killed process may leave a partial last line.
fn parse_hex(out: &str, width: usize) -> Vec<u128> {
    out.lines()
        .filter(|l| l.len() == width)
        .map(|l| u128::from_str_radix(l, 16).unwrap())
        .collect()
}

#[test]
fn four_processes_on_one_state_file_never_collide() {
    let d = tmpdir("four");
    let state = d.join("uuid7.state");
    let children: Vec<_> = (0..4)
        .map(|_| {
            idforge()
                .args([
                    "gen", "uuid7", "--shared", "--format", "hex", "-n", "1000000", "--state",
                ])
                .arg(&state)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut all = HashSet::with_capacity(4_000_000);
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let ids = parse_hex(&String::from_utf8(o.stdout).unwrap(), 32);
        assert_eq!(ids.len(), 1_000_000);
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "each process's ids strictly increase"
        );
        for id in ids {
            assert!(all.insert(id), "duplicate across processes: {id:032x}");
        }
    }
    assert_eq!(all.len(), 4_000_000);
    std::fs::remove_dir_all(d).unwrap();
}

/// Runs `gen` into a file, kills it with SIGKILL after `ms`, returns the ids it printed.
fn run_and_kill(state: &Path, out: &Path, ms: u64) -> Vec<u128> {
    let f = std::fs::File::create(out).unwrap();
    let mut c = idforge()
        .args([
            "gen",
            "snowflake",
            "--node",
            "5",
            "--shared",
            "--format",
            "hex",
            "-n",
            "1000000000",
            "--state",
        ])
        .arg(state)
        .stdout(f)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(ms));
    c.kill().unwrap(); // SIGKILL
    c.wait().unwrap();
    parse_hex(&std::fs::read_to_string(out).unwrap(), 16)
}

#[test]
fn twenty_kill_9_cycles_on_one_state_file() {
    let d = tmpdir("kill");
    let state = d.join("snowflake.state");
    let mut all = HashSet::new();
    let mut previous_last = 0u128;
    // A pseudo-random kill moment per cycle (30..130 ms), reproducible.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut nonempty = 0;
    for cycle in 0..20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ids = run_and_kill(&state, &d.join(format!("out{cycle}")), 30 + x % 100);
        if ids.is_empty() {
            continue; // killed before its first buffered write: nothing to compare
        }
        nonempty += 1;
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(
            ids[0] > previous_last,
            "cycle {cycle}: first id not above the previous run's last"
        );
        previous_last = *ids.last().unwrap();
        for id in ids {
            assert!(all.insert(id), "cycle {cycle}: duplicate {id:016x}");
        }
    }
    assert!(
        nonempty >= 10,
        "most runs print ids before they are killed ({nonempty}/20)"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_process_whose_clock_is_behind_the_file_continues_above_it() {
    let d = tmpdir("behind");
    let state = d.join("g.state");
    let run = |at: &str| -> Vec<u64> {
        let o = idforge()
            .args([
                "gen",
                "global-id",
                "--node",
                "3",
                "--shared",
                "-n",
                "1000",
                "--at",
                at,
                "--state",
            ])
            .arg(&state)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    };
    let first = run("2030-01-01T00:00:00Z");
    let second = run("2029-01-01T00:00:00Z"); // a clock a year behind the file
    assert!(second[0] > *first.last().unwrap());
    // Without --state, a fixed clock is kept off the host's default file.
    let o = idforge()
        .args([
            "gen",
            "global-id",
            "--node",
            "3",
            "--shared",
            "--at",
            "2030-01-01T00:00:00Z",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs its own state file"));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_foreign_state_file_is_refused_with_advice() {
    let d = tmpdir("foreign");
    let state = d.join("not-ours.state");
    std::fs::write(&state, vec![b'x'; 4096]).unwrap();
    let o = idforge()
        .args(["gen", "uuid7", "--shared", "--state"])
        .arg(&state)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(
        e.contains("not an idforge state file") && e.contains(state.to_str().unwrap()),
        "{e}"
    );
    assert_eq!(
        std::fs::read(&state).unwrap(),
        vec![b'x'; 4096],
        "the file is left alone"
    );
    // The environment variable names the file too.
    let o = idforge()
        .args(["gen", "uuid7", "--shared"])
        .env("IDFORGE_STATE", &state)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(d).unwrap();
}
