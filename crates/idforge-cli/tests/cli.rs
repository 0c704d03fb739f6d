//! The `idforge` command, run as a user runs it.

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn idforge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(args)
        .env_remove("IDFORGE_NODE")
        .output()
        .expect("run idforge")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn gen_uuid7_prints_count_increasing_v7_uuids() {
    let o = idforge(&["gen", "uuid7", "-n", "1000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(lines.len(), 1000);
    assert!(
        lines.windows(2).all(|w| w[0] < w[1]),
        "text sorts in issue order"
    );
    for l in &lines {
        assert_eq!(l.len(), 36);
        assert_eq!(&l[14..15], "7");
        assert!(matches!(&l[19..20], "8" | "9" | "a" | "b"));
    }
}

#[test]
fn gen_at_is_reproducible_and_inspect_reads_it_back() {
    let args = [
        "gen",
        "snowflake",
        "--node",
        "7",
        "--at",
        "2024-01-01T00:00:00Z",
        "-n",
        "5000",
    ];
    let a = idforge(&args);
    let b = idforge(&args);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b), "a fixed clock gives the same ids");
    let ids: Vec<u64> = stdout(&a).lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 5000);
    // 5000 ids at 4096 per ms: the counter carries into the next millisecond.
    let o = idforge(&[
        "inspect",
        "--scheme",
        "snowflake",
        "--json",
        &ids[0].to_string(),
        &ids[4999].to_string(),
    ]);
    let objs: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs[0]["unix_ms"], 1_704_067_200_000u64);
    assert_eq!(objs[0]["time"], "2024-01-01T00:00:00.000Z");
    assert_eq!(objs[0]["node"], 7);
    assert_eq!(objs[0]["counter"], 0);
    assert_eq!(objs[1]["unix_ms"], 1_704_067_200_001u64);
    assert_eq!(objs[1]["counter"], 5000 - 4096 - 1);
    assert!(objs[0]["id"].is_string(), "ids are strings in JSON");
}

#[test]
fn every_format_round_trips_through_inspect() {
    for (scheme, node, format) in [
        ("global-id", Some("18"), "hex"),
        ("global-id", Some("18"), "base32"),
        ("global-id-128", Some("999999"), "dec"),
        ("sonyflake", Some("65535"), "base32"),
        ("discord", Some("1023"), "dec"),
        ("instagram", Some("8191"), "dec"),
        ("uprotocol", None, "uuid"),
    ] {
        let mut args = vec!["gen", scheme, "-n", "3", "--format", format];
        if let Some(n) = node {
            args.extend(["--node", n]);
        }
        let o = idforge(&args);
        assert!(o.status.success(), "{scheme}: {}", stderr(&o));
        for id in stdout(&o).lines() {
            let o = idforge(&[
                "inspect", "--scheme", scheme, "--format", format, "--json", id,
            ]);
            assert!(o.status.success(), "{scheme} {id}: {}", stderr(&o));
            let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
            if let Some(n) = node {
                assert_eq!(v["node"].to_string(), n, "{scheme}");
            }
        }
    }
}

/// The named Snowflake presets read their published ids: Discord's API reference's snowflake
/// (2016-04-30 11:18:25.796 UTC, worker 1, process 0: node 32, increment 7) and the example id
/// of "Sharding & IDs at Instagram" (shard 1341, sequence 905, on 2011-09-09).
#[test]
fn discord_and_instagram_published_ids_inspect() {
    for (scheme, id, time, node, counter) in [
        (
            "discord",
            "175928847299117063",
            "2016-04-30T11:18:25.796Z",
            32,
            7,
        ),
        (
            "instagram",
            "11637205501278089",
            "2011-09-09T22:28:04.721Z",
            1341,
            905,
        ),
    ] {
        let o = idforge(&["inspect", "--scheme", scheme, "--json", id]);
        assert!(o.status.success(), "{scheme}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["time"], time, "{scheme}");
        assert_eq!(v["node"], node, "{scheme}");
        assert_eq!(v["counter"], counter, "{scheme}");
    }
    // A node outside the preset's field is refused with its range.
    let o = idforge(&["gen", "instagram", "--node", "8192"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("8191"), "{}", stderr(&o));
}

#[test]
fn inspect_reads_stdin_and_reports_versions() {
    let gen = idforge(&["gen", "uprotocol-v8", "-n", "3"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(["inspect", "--json", "--scheme", "uprotocol-v8", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&gen.stdout).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let objs: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), 3);
    for v in &objs {
        assert_eq!(v["scheme"], "uprotocol-v8");
        assert_eq!(v["version"], 8);
        assert_eq!(v["variant"], "0b10");
        assert_eq!(v["rand_b"], objs[0]["rand_b"], "one rand_b per process");
    }
}

#[test]
fn inspect_reads_lines_that_span_its_reads_of_stdin() {
    // 6,000 ids in lines of 1 to 31 bytes of padding and CRLF or LF ends (about 390 KB): lines
    // are split across the 64 KiB reads at every kind of place. Each is decoded, in order.
    let ids: Vec<u64> = (0..6_000u64)
        .map(|i| (1 << 62) + i * 4_194_304 + i % 7)
        .collect();
    let mut input = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        input.extend(std::iter::repeat_n(b' ', i % 31));
        input.extend_from_slice(id.to_string().as_bytes());
        input.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
    }
    // The last line without its end, and a line that is not UTF-8 after line 3,000 (the
    // read it is in is then read line by line).
    input.truncate(input.len() - 1);
    let at = input
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(2_999)
        .unwrap()
        .0;
    input.splice(at + 1..at + 1, b"\xff\xfe 1\n".iter().copied());
    let mut child = Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(["inspect", "--scheme", "snowflake"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("standard input line 3001: not UTF-8"),
        "{}",
        stderr(&o)
    );
    let out = stdout(&o);
    let firsts: Vec<&str> = out.lines().map(|l| l.split(' ').next().unwrap()).collect();
    let want: Vec<String> = ids.iter().map(u64::to_string).collect();
    assert_eq!(firsts, want);
}

#[test]
fn malformed_id_names_the_id_and_fails() {
    let o = idforge(&[
        "inspect",
        "017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
        "017f22e2-79b0-7cc3-98c4-dc0c0c07398z",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o).lines().count(),
        1,
        "the good id is still decoded"
    );
    let err = stderr(&o);
    // The bad id's message, and once, the good version 7 UUID's hint.
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.lines()
            .nth(1)
            .unwrap()
            .starts_with("idforge: hint: a version 7 UUID"),
        "{err}"
    );
    assert!(
        err.contains("017f22e2-79b0-7cc3-98c4-dc0c0c07398z") && err.contains("not a hex digit"),
        "{err}"
    );
}

#[test]
fn node_schemes_without_a_node_fail_with_advice() {
    let o = idforge(&["gen", "global-id"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--node N or IDFORGE_NODE"),
        "{}",
        stderr(&o)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(["gen", "global-id", "--format", "hex"])
        .env("IDFORGE_NODE", "1023")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        u64::from_str_radix(stdout(&o).trim(), 16).unwrap() >> 54,
        1023
    );
    let o = idforge(&["gen", "snowflake", "--node", "5000"]);
    assert!(stderr(&o).contains("from 0 to 1023"));
}

#[test]
fn bad_arguments_get_one_line_errors() {
    for (args, needle) in [
        (
            vec!["gen", "uuid9"],
            "unknown scheme \"uuid9\" (did you mean uuid7?)",
        ),
        (vec!["gen", "custom"], "needs a layout"),
        (
            vec!["gen", "snowflake", "--node", "1", "--format", "uuid"],
            "not UUIDs",
        ),
        (vec!["gen", "uuid7", "--at", "yesterday"], "invalid time"),
        (
            vec!["gen", "custom", "--layout", "node:10,counter:12"],
            "needs a time field",
        ),
        (
            vec!["gen", "uuid7", "--layout", "time:41"],
            "only applies to the custom scheme",
        ),
        (
            vec!["gen", "custom", "--layout", "counter:1,time:63"],
            "order=none",
        ),
    ] {
        let o = idforge(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains(needle), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    }
}

#[test]
fn at_beyond_a_layout_fails_naming_the_year_it_runs_out() {
    // Snowflake: 41 bits of ms from 2010-11-04T01:42:54.657Z, the last one 2080-07-10T17:30:30.208Z.
    // Sonyflake: 39 bits of 10 ms from 2014-09-01, out in 2188.
    for (scheme, at, year) in [
        ("snowflake", "2090-01-01T00:00:00Z", "2080"),
        ("snowflake", "2080-07-10T17:30:30.209Z", "2080"),
        ("sonyflake", "2200-01-01T00:00:00Z", "2188"),
    ] {
        let o = idforge(&["gen", scheme, "--node", "1", "--at", at]);
        assert_eq!(o.status.code(), Some(3), "{scheme} --at {at}");
        assert!(stdout(&o).is_empty(), "{scheme} --at {at}: no id");
        let e = stderr(&o);
        assert!(
            e.contains(scheme) && e.contains(&format!("ran out in the year {year}")),
            "{scheme} --at {at}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // The last millisecond is still in range: all 41 time bits set.
    let o = idforge(&[
        "gen",
        "snowflake",
        "--node",
        "1",
        "--at",
        "2080-07-10T17:30:30.208Z",
        "--format",
        "hex",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "7fffffffffc01000\n");
}

#[test]
fn at_near_the_end_with_a_count_crossing_it_fails_and_never_wraps() {
    // Two milliseconds before the end hold 2 x 4,096 ids; 10,000 asked for: the 8,192 that fit
    // are printed, then an error, never an id from a wrapped (early) time.
    let o = idforge(&[
        "gen",
        "snowflake",
        "--node",
        "1",
        "--at",
        "2080-07-10T17:30:30.207Z",
        "-n",
        "10000",
        "--format",
        "hex",
    ]);
    // Exit status 3: the generator refused to issue (documented in `idforge --help`).
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(e.contains("ran out in the year 2080"), "{e}");
    let ids: Vec<u64> = stdout(&o)
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    assert_eq!(ids.len(), 8192);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let last_ms = (1u64 << 41) - 1;
    assert!(
        ids.iter()
            .all(|id| id >> 22 >= last_ms - 1 && id >> 63 == 0),
        "every id in the last two milliseconds, the sign bit clear"
    );
    assert_eq!(*ids.last().unwrap(), 0x7fff_ffff_ffc0_1fff);
}

#[test]
fn custom_layout_generates_and_decodes() {
    let spec = "time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z";
    let o = idforge(&[
        "gen",
        "custom",
        "--layout",
        spec,
        "--node",
        "3",
        "--at",
        "2021-01-01T00:00:00.5Z",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    let o = idforge(&["inspect", "--layout", spec, "--json", &id]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["time"], "2021-01-01T00:00:00.500Z");
    assert_eq!(v["node"], 3);
}

#[test]
fn schemes_lists_every_preset_with_its_limits() {
    let o = idforge(&["schemes"]);
    let s = stdout(&o);
    for (name, year) in [
        ("uuid7", "10889"),
        ("uprotocol-v8", "10889"),
        ("global-id ", "6429"),
        ("global-id-128", "6429"),
        ("snowflake", "2080"),
        ("sonyflake", "2188"),
    ] {
        let line = s
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing"));
        assert!(line.contains(year), "{line}");
    }
    // The same facts as JSON: every scheme, computed end years (locality's 48-bit ms: 10889).
    let o = idforge(&["schemes", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for n in [
        "uuid7",
        "nanots-host",
        "nanots-host/3",
        "locality",
        "sonyflake",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let loc = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "locality")
        .unwrap();
    assert_eq!(loc["end_year"], 10889);
    let fits = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["fits_i64"]
            .clone()
    };
    assert_eq!(fits("global-id"), "node<512");
    assert_eq!(fits("snowflake"), "yes");
    assert_eq!(fits("nanots"), "to 2262");
    assert_eq!(fits("uuid7"), serde_json::Value::Null);
}

/// `global-id` with node 512 or more sets bit 63: PostgreSQL's `COPY` into a `bigint` column
/// failed with "out of range" and nothing had said so. `gen` warns; the ids are still written.
#[test]
fn gen_warns_when_a_node_makes_ids_that_do_not_fit_a_signed_64_bit_integer() {
    let o = idforge(&["gen", "global-id", "--node", "512", "-n", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("do not fit a signed 64-bit integer")
            && stderr(&o).contains("node below 512"),
        "{}",
        stderr(&o)
    );
    let id: u64 = stdout(&o).lines().next().unwrap().parse().unwrap();
    assert!(id > i64::MAX as u64);
    let o = idforge(&["gen", "global-id", "--node", "511", "-n", "3"]);
    assert!(
        o.status.success() && stderr(&o).is_empty(),
        "{}",
        stderr(&o)
    );
    let o = idforge(&["schemes"]);
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("global-id "))
        .unwrap()
        .to_string();
    assert!(line.contains("node<512"), "{line}");
}

/// RFC 9562's example of a version 8 UUID (appendix B.1) was read as uprotocol-v8, with a time
/// in the year 3243 and `unix_ns` wrapped modulo 2^64. A version 8 UUID does not say which
/// layout wrote it: without `--scheme`, its raw fields and no time.
#[test]
fn inspect_shows_a_version_8_uuid_as_its_raw_fields() {
    let rfc = "2489e9ad-2ee2-8e00-8ec9-32d5f69181c0";
    let o = idforge(&["inspect", "--json", rfc]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["scheme"], "uuid-v8");
    assert_eq!(v["custom_a"], "2489e9ad2ee2");
    assert_eq!(v["custom_b"], "e00");
    assert_eq!(v["custom_c"], "0ec932d5f69181c0");
    assert!(v.get("time").is_none() && v.get("unix_ns").is_none(), "{v}");
    assert!(
        v["hint"]
            .as_str()
            .unwrap()
            .contains("--scheme uprotocol-v8"),
        "{v}"
    );
    let line = stdout(&idforge(&["inspect", rfc]));
    assert!(!line.contains("time="), "{line}");
    // Named, it is read as the scheme; a time past 64 bits of nanoseconds is never wrapped.
    let o = idforge(&["inspect", "--json", "--scheme", "uprotocol-v8", rfc]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["scheme"], "uprotocol-v8");
    assert!(v["time"].as_str().unwrap().starts_with("3243-"), "{v}");
    assert!(v["unix_ns"].is_string(), "{v}");
    assert!(
        v["unix_ns"].as_str().unwrap().parse::<u128>().unwrap() > u128::from(u64::MAX),
        "{v}"
    );
}

#[test]
fn large_counts_stream_and_stay_unique() {
    let o = idforge(&["gen", "uuid7", "-n", "200000", "--format", "hex"]);
    assert!(o.status.success());
    let s = stdout(&o);
    let set: HashSet<&str> = s.lines().collect();
    assert_eq!(set.len(), 200_000);
}

/// `idforge` with IDFORGE_PID and IDFORGE_MAC set as given (and unset otherwise).
fn idforge_env(args: &[&str], pid: Option<&str>, mac: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_idforge"));
    c.args(args)
        .env_remove("IDFORGE_NODE")
        .env_remove("IDFORGE_PID")
        .env_remove("IDFORGE_MAC");
    if let Some(p) = pid {
        c.env("IDFORGE_PID", p);
    }
    if let Some(m) = mac {
        c.env("IDFORGE_MAC", m);
    }
    c.output().expect("run idforge")
}

#[test]
fn gen_locality_sequential_reproduces_the_article() {
    let args = [
        "gen",
        "locality",
        "--sequential",
        "--pid",
        "31359",
        "--mac",
        "00:1b:4d:53:7a:50",
        "--at",
        "2013-04-28T01:04:00.038Z",
        "-n",
        "9",
    ];
    let o = idforge_env(&args, None, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(lines[0], "f5166776-7a7f-bd53-7a50-013e4e2afc26");
    assert_eq!(lines[1], "f5166777-7a7f-bd53-7a50-013e4e2afc26");
    assert_eq!(lines[8], "f516677e-7a7f-bd53-7a50-013e4e2afc26");
    assert_eq!(
        stdout(&idforge_env(&args, None, None)),
        stdout(&o),
        "a fixed clock and seed reproduce"
    );
}

#[test]
fn gen_locality_variable_ids_are_distinct_and_spread() {
    let o = idforge_env(
        &[
            "gen", "locality", "-n", "20000", "--pid", "42", "--mac", "d537a50",
        ],
        None,
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(lines.iter().collect::<HashSet<_>>().len(), 20_000);
    assert!(
        lines
            .windows(2)
            .all(|w| w[0].as_bytes()[0] != w[1].as_bytes()[0]),
        "first character varies"
    );
    let firsts: HashSet<u8> = lines.iter().map(|l| l.as_bytes()[0]).collect();
    assert_eq!(firsts.len(), 16);
    for l in &lines {
        assert_eq!(&l[9..23], "002a-bd53-7a50", "{l}");
    }
}

#[test]
fn gen_locality_reads_pid_and_mac_from_the_environment() {
    let o = idforge_env(&["gen", "locality"], Some("7"), Some("02:42:ac:11:00:02"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&stdout(&o)[9..23], "0007-bc11-0002"); // MAC byte 2 is 0xac: its low nibble c
                                                      // Flags win over the environment.
    let o = idforge_env(
        &["gen", "locality", "--pid", "8", "--mac", "fffffff"],
        Some("7"),
        Some("02:42:ac:11:00:02"),
    );
    assert_eq!(&stdout(&o)[9..23], "0008-bfff-ffff");
    // Other schemes ignore them.
    let o = idforge_env(&["gen", "uuid7"], Some("not a pid"), Some("nor a mac"));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn inspect_decodes_locality_ids_by_version_or_by_name() {
    let article = "20be0ffc-314a-bd53-7a50-013a65ca76d2";
    for args in [
        vec!["inspect", "--json", article],
        vec!["inspect", "--json", "--scheme", "locality", article],
        vec![
            "inspect",
            "--json",
            "--scheme",
            "locality",
            "--format",
            "hex",
            "20be0ffc314abd537a50013a65ca76d2",
        ],
    ] {
        let o = idforge(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["scheme"], "locality");
        assert_eq!(v["counter"], 3_488_672_514u64);
        assert_eq!(v["pid"], 12_618);
        assert_eq!(v["mac"], "d537a50");
        assert_eq!(v["unix_ms"], 1_350_327_498_450u64);
        assert_eq!(v["time"], "2012-10-15T18:58:18.450Z");
        assert_eq!(v["version"], 11);
        assert!(v["id"].is_string());
    }
    let o = idforge(&["inspect", article]);
    let line = stdout(&o);
    assert!(
        line.starts_with(article) && line.contains("pid=12618 mac=d537a50 version=b"),
        "{line}"
    );
    // Generated ids read back.
    let g = idforge_env(
        &[
            "gen",
            "locality",
            "--pid",
            "65535",
            "--at",
            "2024-01-01T00:00:00Z",
        ],
        None,
        None,
    );
    let o = idforge(&["inspect", "--json", stdout(&g).trim()]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        (v["pid"].as_u64(), v["unix_ms"].as_u64()),
        (Some(65_535), Some(1_704_067_200_000))
    );
}

#[test]
fn inspect_as_locality_refuses_other_versions() {
    let o = idforge(&[
        "inspect",
        "--scheme",
        "locality",
        "017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("version 7 UUID, not the version b that locality requires"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn bad_locality_arguments_get_one_line_errors() {
    for (args, pid, mac, needle) in [
        (
            vec!["gen", "locality", "--pid", "abc"],
            None,
            None,
            "--pid \"abc\" is not a process id",
        ),
        (
            vec!["gen", "locality", "--pid", "65536"],
            None,
            None,
            "from 0 to 65535",
        ),
        (
            vec!["gen", "locality"],
            Some("-1"),
            None,
            "IDFORGE_PID \"-1\" is not a process id",
        ),
        (
            vec!["gen", "locality"],
            Some("70000"),
            None,
            "IDFORGE_PID: process id 70000",
        ),
        (
            vec!["gen", "locality", "--mac", "zz"],
            None,
            None,
            "write aa:bb:cc:dd:ee:ff",
        ),
        (
            vec!["gen", "locality", "--mac", "10000000"],
            None,
            None,
            "wider than the 28 bits",
        ),
        (
            vec!["gen", "locality"],
            None,
            Some("aa:bb:cc"),
            "IDFORGE_MAC: invalid MAC address",
        ),
        (
            vec!["gen", "locality", "--node", "1"],
            None,
            None,
            "locality takes no --node",
        ),
        (
            vec!["gen", "locality", "--at", "yesterday"],
            None,
            None,
            "invalid time",
        ),
        (
            vec!["gen", "uuid7", "--sequential"],
            None,
            None,
            "apply only to the locality scheme",
        ),
        (
            vec![
                "inspect", "--scheme", "locality", "--layout", "time:41", "x",
            ],
            None,
            None,
            "layout only applies",
        ),
    ] {
        let o = idforge_env(&args, pid, mac);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains(needle), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    }
}

#[test]
fn schemes_lists_locality() {
    let s = stdout(&idforge(&["schemes"]));
    let line = s
        .lines()
        .find(|l| l.starts_with("locality "))
        .expect("locality listed");
    assert!(line.contains("10889") && line.contains("ver=b"), "{line}");
    let after_presets = s.lines().position(|l| l.starts_with("locality "))
        > s.lines().position(|l| l.starts_with("sonyflake"));
    assert!(after_presets, "{s}");
}

fn idforge_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(args)
        .env_remove("IDFORGE_NODE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_hex_id_made_of_digits_is_not_read_as_decimal() {
    let g = idforge(&[
        "gen",
        "snowflake",
        "--node",
        "0",
        "--at",
        "2024-10-11T09:40:25.767Z",
        "--format",
        "hex",
    ]);
    assert_eq!(stdout(&g), "1999999999800000\n");
    // Before: "time=2010-11-09T14:10:11.815Z ... node=159 counter=704", exit 0.
    let o = idforge_stdin(&["inspect", "--scheme", "snowflake", "-"], &g.stdout);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(
        err.contains("ambiguous") && err.contains("--format hex") && err.contains("--format dec"),
        "{err}"
    );
    let o = idforge_stdin(
        &[
            "inspect",
            "--scheme",
            "snowflake",
            "--format",
            "hex",
            "--json",
        ],
        &g.stdout,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["time"], "2024-10-11T09:40:25.767Z");
    assert_eq!(v["node"], 0);
}

#[test]
fn a_v7_uuid_without_a_scheme_shows_no_counter() {
    let g = idforge(&[
        "gen",
        "uprotocol",
        "--at",
        "2024-10-11T09:40:25.767Z",
        "-n",
        "3",
    ]);
    assert!(g.status.success(), "{}", stderr(&g));
    let o = idforge_stdin(&["inspect", "--json"], &g.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    let objs: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), 3);
    for v in &objs {
        assert_ne!(v["scheme"], "uuid7", "{v}");
        assert!(v.get("counter").is_none(), "{v}");
        assert!(v["rand_a"].is_string() && v["rand_b"].is_string(), "{v}");
        assert_eq!(v["time"], "2024-10-11T09:40:25.767Z");
        assert_eq!(v["version"], 7);
        assert!(
            v["hint"].as_str().unwrap().contains("--scheme uprotocol"),
            "{v}"
        );
    }
    let line = idforge_stdin(&["inspect"], &g.stdout);
    let text = stdout(&line);
    assert!(!text.contains("counter="), "{text}");
    // The hint is said once, on standard error, not on each of the three lines.
    assert!(!text.contains("--scheme"), "{text}");
    let err = stderr(&line);
    assert_eq!(err.matches("--scheme uuid7").count(), 1, "{err}");
    assert!(
        err.starts_with("idforge: hint (for 3 of the ids): "),
        "{err}"
    );
    let o = idforge_stdin(&["inspect", "--scheme", "uprotocol", "--json"], &g.stdout);
    let counters: Vec<u64> = stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["counter"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        counters,
        [0, 1, 2],
        "uprotocol's counter, read as uprotocol"
    );
}

#[test]
fn uuid_forms_and_short_uuids_in_inspect() {
    for id in [
        "{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}",
        "urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
    ] {
        let o = idforge(&["inspect", "--scheme", "uuid7", id]);
        assert!(o.status.success(), "{id}: {}", stderr(&o));
        assert!(stdout(&o).starts_with("017f22e2-79b0-7cc3-98c4-dc0c0c07398f"));
    }
    let o = idforge(&["inspect", "017f22e2-79b0-7cc3-98c4-dc0c0c07398"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("a UUID has 36 characters"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn inspect_reports_bad_stdin_lines_by_number_and_goes_on() {
    let long = "x".repeat(5000);
    let input = format!(
        "017f22e2-79b0-7cc3-98c4-dc0c0c07398f\nnot an id\n\n{long}\n20be0ffc-314a-bd53-7a50-013a65ca76d2\n"
    );
    let o = idforge_stdin(&["inspect"], input.as_bytes());
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o).lines().count(), 2, "the good lines are decoded");
    let err = stderr(&o);
    // Two bad lines, then the v7 UUID's hint once.
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(
        err.lines().nth(2).unwrap().starts_with("idforge: hint: "),
        "{err}"
    );
    assert!(err.lines().next().unwrap().contains("line 2"), "{err}");
    assert!(err.lines().nth(1).unwrap().contains("line 4"), "{err}");
    assert!(
        err.len() < 1000,
        "long input is clipped: {} bytes",
        err.len()
    );
    // Invalid UTF-8 is one bad line, not the end of the input.
    let o = idforge_stdin(
        &["inspect", "-"],
        b"\xff\xfe\n017f22e2-79b0-7cc3-98c4-dc0c0c07398f\n",
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o).lines().count(), 1);
    assert!(stderr(&o).contains("line 1"), "{}", stderr(&o));
}

#[test]
fn ids_are_never_lost_silently_to_a_closed_stdout() {
    // Before: `idforge gen uuid7 -n 5 >&-` wrote nothing and exited 0.
    let o = Command::new("sh")
        .args([
            "-c",
            "exec \"$0\" gen uuid7 -n 5 >&-",
            env!("CARGO_BIN_EXE_idforge"),
        ])
        .output()
        .unwrap();
    // Exit status 5: output could not be written.
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("standard output"), "{}", stderr(&o));
    if std::path::Path::new("/dev/full").exists() {
        let o = Command::new("sh")
            .args([
                "-c",
                "exec \"$0\" gen uuid7 -n 5 >/dev/full",
                env!("CARGO_BIN_EXE_idforge"),
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    }
    // A reader that stops early (`| head -1`) is not an error.
    let o = Command::new("sh")
        .args([
            "-c",
            "\"$0\" gen uuid7 -n 1000000 | head -1 >/dev/null; echo ${PIPESTATUS:-0}",
            env!("CARGO_BIN_EXE_idforge"),
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
}

#[test]
fn every_clock_gives_unique_ids_near_the_real_time() {
    for clock in ["auto", "precise", "counter", "ticker"] {
        let o = idforge(&["gen", "uuid7", "-n", "20000", "--clock", clock]);
        assert!(o.status.success(), "{clock}: {}", stderr(&o));
        let ids: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
        assert_eq!(ids.len(), 20_000);
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{clock}: repeated ids");
        // The first id's millisecond is within a second of now.
        let ms = u64::from_str_radix(&ids[0].replace('-', "")[..12], 16).unwrap();
        let now_ms = std::time::SystemTime::UNIX_EPOCH
            .elapsed()
            .unwrap()
            .as_millis() as u64;
        assert!(
            now_ms.abs_diff(ms) < 1_000,
            "{clock}: id time {ms}, now {now_ms}"
        );
    }
    let o = idforge(&["gen", "uuid7", "--clock", "sundial"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bench_measures_every_named_scheme_and_writes_json() {
    let o = idforge(&[
        "bench",
        "--duration-ms",
        "20",
        "--json",
        "uuid7",
        "snowflake",
        "locality",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        for k in [
            "ns_per_id_1_thread",
            "ids_per_s_2_threads",
            "ids_per_s_batch",
            "clock_read_ns",
        ] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{k}: {r}");
        }
        // Millisecond layouts read the calibrated counter, within its bound (50 µs).
        assert_eq!(r["clock"], "counter", "{r}");
        assert!(r["clock_error_ns"].as_u64().unwrap() <= 50_000, "{r}");
    }
    // A layout-capped scheme never measures above its capacity (4,096 ids per ms).
    let sf = &rows[1];
    assert!(
        sf["ids_per_s_batch"].as_f64().unwrap() <= sf["capacity_ids_per_s"].as_f64().unwrap() * 1.3
    );
    let o = idforge(&["bench", "--duration-ms", "10", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    // With the ticker, its read cost and lag are measured and reported.
    let o = idforge(&[
        "bench",
        "--duration-ms",
        "20",
        "--json",
        "--clock",
        "ticker",
        "global-id",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["clock"], "ticker");
    assert!(v[0]["clock_read_ns"].as_f64().unwrap() > 0.0, "{v}");
}

#[test]
fn bench_threads_reports_fairness_and_latency_per_thread_count() {
    let o = idforge(&[
        "bench",
        "--duration-ms",
        "60",
        "--threads",
        "2,3",
        "--json",
        "snowflake",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let shared = v[0]["shared"].as_array().unwrap();
    assert_eq!(
        shared
            .iter()
            .map(|s| s["threads"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [2, 3]
    );
    for s in shared {
        assert!(s["ids_per_s"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["vs_1_thread"].as_f64().unwrap() > 0.0, "{s}");
        let worst = s["fairness_worst"].as_f64().unwrap();
        let median = s["fairness_median"].as_f64().unwrap();
        assert!(
            (0.0..=1.0).contains(&worst) && worst <= median && median <= 1.0,
            "{s}"
        );
        assert_eq!(s["windows"], 2, "{s}"); // 60 ms in 25 ms windows: two whole ones
        let l = &s["latency_ns"];
        let [p50, p99, p999, max] = ["p50", "p99", "p99_9", "max"].map(|k| l[k].as_u64().unwrap());
        assert!(
            0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max + max / 8,
            "{s}"
        );
        assert_eq!(s["errors"], 0, "{s}");
    }
    // The table names the columns; a count of 0 is refused.
    let o = idforge(&["bench", "--duration-ms", "30", "--threads", "2", "uuid7"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("fair:lo") && text.contains("p99.9"), "{text}");
    let o = idforge(&["bench", "--threads", "0", "uuid7"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--threads"), "{}", stderr(&o));
}

/// KSUIDs: 27 base62 characters, sorted, read back by `inspect` with and without the scheme;
/// the reference README's example decodes to its timestamp and payload.
#[test]
fn gen_ksuid_and_inspect_read_it_back() {
    let o = idforge(&["gen", "ksuid", "-n", "1000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(ids.len(), 1000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "sorted as text");
    assert!(ids.iter().all(|i| i.len() == 27));
    let o = idforge(&["inspect", "--scheme", "ksuid", "--json", &ids[999]]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["scheme"], "ksuid");
    assert!(v["counter"].is_u64(), "{v}");
    let o = idforge(&["inspect", "--json", "0ujtsYcgvSTl8PAuAdqWYSMnLOv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["timestamp"], 107_608_047);
    assert_eq!(v["payload"], "B5A1CD34B5F99D1154FB6853345C9735");
    assert_eq!(v["time"], "2017-10-10T04:00:47Z");
    assert_eq!(
        v["value"],
        "36617121174329980561920228151092777577967556405"
    );
    let o = idforge(&["gen", "ksuid", "--format", "hex"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("27 base62"), "{}", stderr(&o));
    let o = idforge(&["inspect", "aWgEPTl1tmebfsQzFP4bxwgy80W"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("largest KSUID"), "{}", stderr(&o));
}

#[test]
fn gen_typeid_takes_a_prefix_and_inspect_reads_it_back() {
    let o = idforge(&["gen", "typeid", "--prefix", "user", "-n", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ids: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for id in &ids {
        assert!(id.starts_with("user_") && id.len() == 31, "{id}");
        let o = idforge(&["inspect", "--json", id]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(
            (v["scheme"].as_str(), v["prefix"].as_str()),
            (Some("typeid"), Some("user"))
        );
        assert_eq!(v["version"], 7);
        assert!(v["unix_ms"].is_u64(), "{v}");
    }
    // No prefix: the bare suffix, read with the scheme named.
    let bare = stdout(&idforge(&["gen", "typeid"]));
    assert_eq!(bare.trim().len(), 26);
    let line = stdout(&idforge(&["inspect", "--scheme", "typeid", bare.trim()]));
    assert!(
        line.contains("scheme=typeid") && line.contains("time="),
        "{line}"
    );
    // A prefix the spec refuses, and one with another format.
    for args in [
        &["gen", "typeid", "--prefix", "User"][..],
        &["gen", "typeid", "--prefix", "user_"],
        &["gen", "typeid", "--prefix", "user", "--format", "uuid"],
        &["gen", "snowflake", "--node", "1", "--prefix", "user"],
    ] {
        let o = idforge(args);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains("prefix"), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    // The spec's overflow is refused by inspect.
    let o = idforge(&["inspect", "user_8zzzzzzzzzzzzzzzzzzzzzzzzz"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("above 7"), "{}", stderr(&o));
}

#[test]
fn inspect_reads_every_uuid_version() {
    // RFC 9562 Appendix A.1 (v1) and A.5 (v6): one time, clock sequence and node.
    for rfc in [
        "c232ab00-9414-11ec-b3c8-9f6bdeced846",
        "1ec9414c-232a-6b00-b3c8-9f6bdeced846",
    ] {
        let line = stdout(&idforge(&["inspect", rfc]));
        for part in [
            "time=2022-02-22T19:22:22.0000000Z",
            "clock_seq=13256",
            "node=9f6bdeced846",
        ] {
            assert!(line.contains(part), "{line}");
        }
    }
    // A.3 (v4) and A.4 (v5): what they are, no time.
    let line = stdout(&idforge(&[
        "inspect",
        "919108f7-52d1-4320-9bac-f847db4148a8",
    ]));
    assert!(
        line.contains("scheme=uuid-v4") && line.contains("random") && !line.contains("time="),
        "{line}"
    );
    let o = idforge(&["inspect", "--json", "2ed6657d-e927-568b-95e1-2665a8aea6a2"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["scheme"], "uuid-v5");
    assert!(v["note"].as_str().unwrap().contains("SHA-1"), "{v}");
    assert!(v.get("time").is_none(), "{v}");
    let line = stdout(&idforge(&[
        "inspect",
        "00000000-0000-0000-0000-000000000000",
    ]));
    assert!(line.contains("scheme=uuid-nil"), "{line}");
}

#[test]
fn gen_uuid4_is_random_and_takes_no_sequencer_setting() {
    let o = idforge(&["gen", "uuid4", "-n", "2000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let ids: HashSet<&str> = out.lines().collect();
    assert_eq!(ids.len(), 2000);
    assert!(ids
        .iter()
        .all(|u| u.len() == 36 && u.as_bytes()[14] == b'4'));
    let first = out.lines().next().unwrap();
    let line = stdout(&idforge(&["inspect", "--scheme", "uuid4", first]));
    assert!(
        line.contains("scheme=uuid4") && !line.contains("time="),
        "{line}"
    );
    for args in [
        &["gen", "uuid4", "--shared"][..],
        &["gen", "uuid4", "--node", "1"],
        &["gen", "uuid4", "--fast-random"],
        &["gen", "uuid4", "--run-ahead"],
        &["gen", "uuid4", "--at", "2024-01-01T00:00:00Z"],
    ] {
        let o = idforge(args);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains("uuid4"), "{args:?}: {}", stderr(&o));
    }
    let o = idforge(&["schemes", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let u4 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "uuid4")
        .unwrap();
    assert_eq!(
        (u4["order"].as_str(), u4["end_year"].is_null()),
        (Some("none"), true),
        "{u4}"
    );
    let u7 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "uuid7")
        .unwrap();
    assert_eq!(u7["order"], "time");
}

#[test]
fn completions_offer_scheme_names_and_no_internal_command() {
    for shell in ["bash", "zsh", "fish"] {
        let o = idforge(&["completions", shell]);
        assert!(o.status.success());
        let script = stdout(&o);
        assert!(
            !script.contains("torture-fork"),
            "{shell}: offers the internal command"
        );
        for name in ["snowflake", "nanots-host", "typeid", "locality"] {
            assert!(script.contains(name), "{shell}: no scheme {name}");
        }
    }
    // Offered to completion, but an unknown name still gets the library's message.
    let o = idforge(&["gen", "snowflak"]);
    assert!(
        stderr(&o).contains("did you mean snowflake?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn every_subcommand_has_its_man_page() {
    let top = stdout(&idforge(&["man"]));
    assert!(
        top.contains("idforge\\-gen(1)"),
        "the top page names idforge-gen(1)"
    );
    let gen = idforge(&["man", "gen"]);
    assert!(gen.status.success(), "{}", stderr(&gen));
    let page = stdout(&gen);
    assert!(
        page.contains(".TH idforge-gen 1"),
        "{}",
        &page[..200.min(page.len())]
    );
    assert!(
        page.contains("\\-\\-node"),
        "the gen page documents its options"
    );
    assert_eq!(idforge(&["man", "nope"]).status.code(), Some(2));

    let dir = std::env::temp_dir().join(format!("idforge-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = idforge(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for page in [
        "idforge.1",
        "idforge-gen.1",
        "idforge-inspect.1",
        "idforge-serve.1",
    ] {
        assert!(dir.join(page).is_file(), "{page}");
    }
    assert!(!dir.join("idforge-torture-fork.1").exists());
    // A second run would overwrite: refused, the pages as they were.
    std::fs::write(dir.join("idforge-gen.1"), "mine").unwrap();
    std::fs::remove_file(dir.join("idforge.1")).unwrap();
    let o = idforge(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not overwrite"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("idforge-gen.1")).unwrap(),
        "mine"
    );
    assert!(
        !dir.join("idforge.1").exists(),
        "nothing written when one page exists"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gen_help_states_the_counters_the_catalog_states() {
    let help = stdout(&idforge(&["gen", "--help"]));
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("uuid7 "))
        .unwrap();
    let bits = idforge::schemes::uuid7::COUNTER_BITS;
    assert!(line.contains(&format!("{bits}-bit counter")), "{line}");
}

#[test]
fn control_characters_in_a_bad_id_never_reach_the_terminal() {
    // An escape sequence (set the title, colour) and a bell in an id read from a file.
    let o = idforge_stdin(&["inspect"], b"\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m\n");
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("\\u{1b}"), "{err:?}");
    let o = idforge(&["inspect", "x\x1b[2Jy"]);
    assert!(!stderr(&o).contains('\u{1b}'), "{:?}", stderr(&o));
}
