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

/// Starts `n` processes of `idforge gen ARGS --state STATE` at once and returns each one's
/// output lines, after checking that it succeeded.
fn run_together(n: usize, args: &[&str], state: &Path) -> Vec<String> {
    let children: Vec<_> = (0..n)
        .map(|_| {
            idforge()
                .arg("gen")
                .args(args)
                .arg("--state")
                .arg(state)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8(o.stdout).unwrap()
        })
        .collect()
}

/// Checks that each process's ids strictly increase and that no id was issued twice; returns all.
fn unique_across(per_process: &[Vec<u128>], what: &str) -> HashSet<u128> {
    let mut all = HashSet::new();
    let mut duplicates = 0;
    for ids in per_process {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "each process's ids strictly increase"
        );
        duplicates += ids.iter().filter(|&&id| !all.insert(id)).count();
    }
    let total: usize = per_process.iter().map(Vec::len).sum();
    assert_eq!(
        duplicates, 0,
        "{what}: {duplicates} of {total} ids were issued by two processes: the state file's stamp is not shared"
    );
    all
}

/// The 12-bit counter and 10-bit node below Snowflake's millisecond.
fn snowflake_ms(id: u128) -> u128 {
    id >> 22
}

#[test]
fn four_processes_on_one_state_file_never_collide() {
    // Snowflake has no random bits: two processes issue the same id whenever they take the same
    // counter value in the same millisecond. Four processes × 1,000,000 ids, running ahead of the
    // clock (up to 2 s) when 4,096 per ms is not enough, run through the same milliseconds; on
    // private copies of the stamp each would start every millisecond at counter 0.
    let d = tmpdir("four");
    let state = d.join("snowflake.state");
    let args = [
        "snowflake",
        "--node",
        "6",
        "--shared",
        "--run-ahead",
        "--max-lead",
        "2000",
        "--format",
        "hex",
        "-n",
        "1000000",
    ];
    let per: Vec<Vec<u128>> = run_together(4, &args, &state)
        .iter()
        .map(|o| parse_hex(o, 16))
        .collect();
    assert!(per.iter().all(|ids| ids.len() == 1_000_000));
    let all = unique_across(&per, "4 processes x 1,000,000 snowflake ids");
    assert_eq!(all.len(), 4_000_000);
    // The test has teeth only if the processes shared milliseconds.
    let ms: Vec<HashSet<u128>> = per
        .iter()
        .map(|ids| ids.iter().map(|&id| snowflake_ms(id)).collect())
        .collect();
    let shared = (0..4)
        .flat_map(|i| (i + 1..4).map(move |j| (i, j)))
        .map(|(i, j)| ms[i].intersection(&ms[j]).count())
        .sum::<usize>();
    assert!(
        shared > 0,
        "the processes never ran in the same millisecond"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn nanots_host_processes_on_one_state_file_never_collide() {
    // nanots-host with 3 host digits: one value per microsecond, no counter, no random bits.
    // Each process asks for far more than one per microsecond and runs up to 1 ms ahead; on
    // private copies of the stamp four processes would issue the same values.
    let d = tmpdir("nanots-host");
    let state = d.join("nanots-host.state");
    let args = [
        "nanots-host",
        "--host",
        "42",
        "--host-digits",
        "3",
        "--shared",
        "-n",
        "100000",
    ];
    let per: Vec<Vec<u128>> = run_together(4, &args, &state)
        .iter()
        .map(|o| o.lines().map(|l| l.parse().unwrap()).collect())
        .collect();
    assert!(per.iter().all(|ids| ids.len() == 100_000));
    assert!(
        per.iter().flatten().all(|v| v % 1000 == 42),
        "host id in the last 3 digits"
    );
    let all = unique_across(&per, "4 processes x 100,000 nanots-host values");
    assert_eq!(all.len(), 400_000);
    // The test has teeth only if the processes ran in the same microseconds (their ranges
    // overlap): on private stamps they would then have issued the same values.
    let ranges: Vec<_> = per.iter().map(|v| (v[0], *v.last().unwrap())).collect();
    let overlapping = (0..4)
        .flat_map(|i| (i + 1..4).map(move |j| (i, j)))
        .filter(|&(i, j)| ranges[i].0 <= ranges[j].1 && ranges[j].0 <= ranges[i].1)
        .count();
    assert!(overlapping > 0, "the processes never ran at the same time");
    std::fs::remove_dir_all(d).unwrap();
}

/// Runs `gen` into a file, kills it with SIGKILL after `ms`, returns the ids it printed.
fn run_and_kill(state: &Path, out: &Path, ms: u64) -> Vec<u128> {
    let f = std::fs::File::create(out).unwrap();
    let mut c = idforge()
        .args([
            "gen",
            "global-id",
            "--node",
            "5",
            "--shared",
            "--run-ahead",
            "--max-lead",
            "2000",
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
    // GlobalId issues 128 ids per ms; each run asks for a billion and runs up to 2 s ahead of the
    // clock within milliseconds, so when it is killed its last ids are far in the future. The
    // next run starts within those 2 s: only the stamp kept in the shared file makes it continue
    // above them (a fresh stamp would start at the clock and re-issue them).
    let d = tmpdir("kill");
    let state = d.join("global-id.state");
    let mut all = HashSet::new();
    let mut previous_last: u128;
    let mut ahead = 0;
    // A pseudo-random kill moment per cycle (30..130 ms), reproducible.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut nonempty = 0;
    // Create the file first (its creator waits out the 2 s lead a deleted predecessor could have
    // had; a run killed during that wait would print nothing).
    let create = idforge()
        .args(["gen", "global-id", "--node", "5", "--shared", "--run-ahead"])
        .args([
            "--max-lead",
            "2000",
            "-n",
            "1",
            "--format",
            "hex",
            "--state",
        ])
        .arg(&state)
        .output()
        .unwrap();
    assert!(create.status.success());
    let first = parse_hex(&String::from_utf8_lossy(&create.stdout), 16);
    assert_eq!(first.len(), 1);
    previous_last = first[0];
    all.insert(first[0]);
    for cycle in 0..20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ids = run_and_kill(&state, &d.join(format!("out{cycle}")), 30 + x % 100);
        let killed_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        if ids.is_empty() {
            continue; // killed before its first buffered write: nothing to compare
        }
        nonempty += 1;
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(
            ids[0] > previous_last,
            "cycle {cycle}: first id {:016x} not above the previous run's last {previous_last:016x}",
            ids[0]
        );
        previous_last = *ids.last().unwrap();
        // GlobalId: node(10) | ms(47) | counter(7).
        if (previous_last >> 7) & ((1 << 47) - 1) > killed_at + 100 {
            ahead += 1;
        }
        let before = all.len();
        all.extend(ids.iter().copied());
        assert_eq!(
            all.len() - before,
            ids.len(),
            "cycle {cycle}: ids issued by an earlier run"
        );
    }
    assert!(
        nonempty >= 10,
        "most runs print ids before they are killed ({nonempty}/20)"
    );
    assert!(
        ahead >= nonempty / 2,
        "runs must end ahead of the clock for the test to mean anything ({ahead}/{nonempty})"
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
    assert_eq!(o.status.code(), Some(4));
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
    assert_eq!(o.status.code(), Some(4));
    std::fs::remove_dir_all(d).unwrap();
}
