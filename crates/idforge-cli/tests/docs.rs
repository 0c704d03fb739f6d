//! The command-line examples of the README and docs/ run as they are written, so that their
//! shown output cannot drift from what idforge prints.
//!
//! Every ```` ```console ```` block is read as a session: a line `$ idforge ...` is a command (run
//! by `sh -c`, so pipes, redirections and `# comments` work as in a shell, with this build's
//! `idforge` first on `PATH`, standard error after standard output), and the lines after it, up
//! to the next command or blank line, are its output. Ids, times and counters differ from run
//! to run, so a shown line and a printed line are compared by their shape: every run of hex
//! digits stands for any run of hex digits, the rest (field names, words, punctuation, the
//! number of lines) must be equal. An example that shows no output must succeed. Commands that
//! cannot run inside a test (a server) are listed in [`NOT_RUN`] with
//! the reason, and the test fails if one of them is no longer in the docs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Commands shown in the docs that this test does not run, each with why.
const NOT_RUN: &[(&str, &str)] = &[(
    "idforge serve",
    "a server: tests/serve.rs starts it and checks its lines",
)];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Example {
    file: String,
    line: usize,
    command: String,
    output: Vec<String>,
}

fn examples(file: &str) -> Vec<Example> {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let mut out: Vec<Example> = Vec::new();
    let mut in_console = false;
    let mut current: Option<Example> = None;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_console = line.trim() == "```console";
            out.extend(current.take());
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.extend(current.take());
            current = Some(Example {
                file: file.to_string(),
                line: i + 1,
                command: cmd.to_string(),
                output: Vec::new(),
            });
        } else if line.trim().is_empty() || line.starts_with('#') {
            out.extend(current.take());
        } else if let Some(e) = &mut current {
            e.output.push(line.to_string());
        }
    }
    out
}

/// A line's shape: each run of hex digits as `#`.
fn shape(line: &str) -> String {
    let mut s = String::new();
    let mut in_hex = false;
    for c in line.trim_end().chars() {
        if c.is_ascii_hexdigit() {
            if !in_hex {
                s.push('#');
            }
            in_hex = true;
        } else {
            s.push(c);
            in_hex = false;
        }
    }
    s
}

#[test]
fn every_console_example_prints_what_the_docs_show() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_idforge"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // `--shared` examples keep their state files here, not in the user's own state directory.
    let home = std::env::temp_dir().join(format!("idforge-docs-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let files = [
        "README.md",
        "docs/LOCALITY.md",
        "docs/SERVICE.md",
        "docs/GUARANTEES.md",
        "docs/FLEET.md",
    ];
    let mut ran = 0;
    let mut skipped = vec![false; NOT_RUN.len()];
    let mut failures = Vec::new();
    for e in files.iter().flat_map(|f| examples(f)) {
        let cmd = e.command.split(" #").next().unwrap().trim().to_string();
        if let Some(i) = NOT_RUN.iter().position(|(c, _)| cmd.starts_with(c)) {
            skipped[i] = true;
            continue;
        }
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("{cmd} 2>&1"))
            .env("PATH", &path)
            .env("HOME", &home)
            .env("XDG_STATE_HOME", home.join("state"))
            // The command line takes the home directory from the password database, not HOME:
            // without this the examples' `--shared` ids went into the user's own state files.
            .env("IDFORGE_STATE_DIR", home.join("state").join("idforge"))
            .env_remove("IDFORGE_NODE")
            .env_remove("IDFORGE_LOG")
            .output()
            .unwrap();
        ran += 1;
        let printed = String::from_utf8_lossy(&o.stdout).to_string();
        let where_ = format!("{}:{}: `{}`", e.file, e.line, e.command);
        if !o.status.success() {
            failures.push(format!("{where_} failed ({}):\n{printed}", o.status));
            continue;
        }
        if e.output.is_empty() {
            continue;
        }
        let shown: Vec<String> = e.output.iter().map(|l| shape(l)).collect();
        let got: Vec<String> = printed.lines().map(shape).collect();
        if shown != got {
            failures.push(format!(
                "{where_}: the docs show\n{}\nbut idforge printed\n{printed}",
                e.output.join("\n")
            ));
        }
    }
    std::fs::remove_dir_all(&home).ok();
    for (i, (c, why)) in NOT_RUN.iter().enumerate() {
        assert!(
            skipped[i],
            "`{c}` ({why}) is no longer in the docs: take it off NOT_RUN"
        );
    }
    assert!(
        ran >= 15,
        "only {ran} examples found: did the docs' console blocks move?"
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} examples drifted:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn shapes_tell_a_changed_field_from_a_changed_value() {
    assert_eq!(
        shape("01a2-7000 time=2026-11-26T11:38:21.341Z counter=12"),
        shape("ffff-7001 time=2024-01-01T00:00:00.000Z counter=0")
    );
    assert_ne!(shape("counter=12 node=1"), shape("counter=12 tag=1"));
    assert_ne!(shape("a  (hint)"), shape("a"));
}

/// The line of `file` (from the repository root) that contains `needle`, with its number; the
/// test fails if there is not exactly one.
fn doc_line(file: &str, needle: &str) -> (usize, String) {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let hits: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "{file}: expected one line with {needle:?}, found {hits:?}"
    );
    (hits[0].0 + 1, hits[0].1.to_string())
}

/// The decimal number right after `prefix` in `line`.
fn number_after(line: &str, prefix: &str) -> String {
    let rest = &line[line
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?} not in {line:?}"))
        + prefix.len()..];
    rest.chars().take_while(char::is_ascii_digit).collect()
}

/// `idforge inspect --scheme SCHEME --json ID`, as JSON.
fn inspect_json(scheme: &str, id: &str) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(["inspect", "--scheme", scheme, "--json", id])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "inspect {id}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Sample output the docs show outside console blocks, because producing it needs a server or
/// etcd: each is checked against what it claims, by decoding it or against the code that prints
/// it. (Console blocks are run by `every_console_example_prints_what_the_docs_show`.)
#[test]
fn samples_outside_console_blocks_say_what_the_code_does() {
    // docs/SERVICE.md: the id `serve --node 1` answers, then inspected by the same server.
    let (n, serve) = doc_line("docs/SERVICE.md", "-- serve --node 1 --host 1");
    assert!(serve.contains("serve --node 1 "), "docs/SERVICE.md:{n}");
    let (n, line) = doc_line(
        "docs/SERVICE.md",
        "curl -s localhost:7470/v1/ids/snowflake ",
    );
    let id = number_after(&line, "# {\"ids\":[\"");
    assert!(
        line.trim_end()
            .ends_with(&format!("# {{\"ids\":[\"{id}\"]}}")),
        "docs/SERVICE.md:{n}: {line}"
    );
    let (m, line) = doc_line("docs/SERVICE.md", "localhost:7470/v1/inspect/");
    assert_eq!(
        number_after(&line, "/v1/inspect/"),
        id,
        "docs/SERVICE.md:{m} inspects another id than line {n} shows"
    );
    let d = inspect_json("snowflake", &id);
    assert_eq!(
        d["node"], 1,
        "docs/SERVICE.md:{n}: {id} is not from node 1: {d}"
    );
    let ms = d["unix_ms"].as_u64().unwrap();
    // Made while the docs were written (2024 to 2027), not a made-up number.
    assert!(
        (1_704_067_200_000..1_830_297_600_000).contains(&ms),
        "docs/SERVICE.md:{n}: {d}"
    );

    // docs/SERVICE.md: the restart check's two ids, the later one above the earlier.
    let (n, line) = doc_line("docs/SERVICE.md", "its first snowflake id (");
    let after = number_after(&line, "its first snowflake id (");
    let (_, line) = doc_line("docs/SERVICE.md", "  restart (");
    let before = number_after(&line, "  restart (");
    let (a, b) = (
        inspect_json("snowflake", &after),
        inspect_json("snowflake", &before),
    );
    assert!(
        after.parse::<u64>().unwrap() > before.parse::<u64>().unwrap()
            && a["node"] == b["node"]
            && a["unix_ms"].as_u64() > b["unix_ms"].as_u64(),
        "docs/SERVICE.md:{n}: {after} is not a later id of the same node than {before}: {a} {b}"
    );

    // docs/FLEET.md: the line `gen --etcd` prints when it leases a node, against the format
    // string that prints it (values may differ, the words may not; the time is shown as `...`).
    let (n, sample) = doc_line("docs/FLEET.md", "# idforge: node ");
    let sample = sample.trim_start().trim_start_matches("# ");
    let fleet_rs = literals("crates/idforge-cli/src/fleet.rs");
    let format = fleet_rs
        .iter()
        .find(|l| l.starts_with("idforge: node {} leased"))
        .expect("the lease line's format string in crates/idforge-cli/src/fleet.rs");
    assert!(
        follows(sample, &pieces(format)),
        "docs/FLEET.md:{n}: {sample:?} does not follow the format {format:?}"
    );
    assert!(
        sample.contains("namespace \"snowflake\""),
        "docs/FLEET.md:{n}: the example runs gen snowflake"
    );
}

/// The string literals of a source file (from the repository root), one per line at most: the
/// text between the first `"` of a line and the last, escapes `\"` and `\\` undone.
fn literals(file: &str) -> Vec<String> {
    std::fs::read_to_string(root().join(file))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (a, b) = (l.find('"')?, l.rfind('"')?);
            (b > a).then(|| l[a + 1..b].replace("\\\"", "\"").replace("\\\\", "\\"))
        })
        .collect()
}

/// A format string cut at its placeholders (`{}`, `{eps}`, `{:?}`, ...).
fn pieces(format: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut in_placeholder = false;
    for c in format.chars() {
        match (c, in_placeholder) {
            ('{', false) => in_placeholder = true,
            ('}', true) => {
                in_placeholder = false;
                out.push(String::new());
            }
            (_, true) => {}
            (c, false) => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// Whether `text` is the pieces with a non-empty value between each two (a value may be shown
/// as `...`).
fn follows(text: &str, pieces: &[String]) -> bool {
    let Some(rest) = text.strip_prefix(pieces[0].as_str()) else {
        return false;
    };
    if pieces.len() == 1 {
        return rest.is_empty();
    }
    // Every way of ending the value before the next piece.
    (1..=rest.len())
        .filter(|&end| rest.is_char_boundary(end))
        .any(|end| follows(&rest[end..], &pieces[1..]))
}

#[test]
fn follows_takes_values_but_not_other_words() {
    let p = pieces("node {} of {:?} in {:.1} ms");
    assert_eq!(p, ["node ", " of ", " in ", " ms"]);
    assert!(follows("node 3 of \"a b\" in 4.2 ms", &p));
    assert!(!follows("node 3 of \"a\" in 4.2 ms!", &p));
    assert!(!follows("node 3 off \"a\" in 4.2 ms", &p));
    // A value may not be empty.
    assert!(!follows("node of \"a\" in 4.2 ms", &p));
}

/// docs/FLEET.md's sample messages for failed connections to etcd: each is one of the messages
/// of crates/idforge-fleet/src/etcd.rs, word for word (values free), followed by the settings
/// to check of crates/idforge-fleet/src/access.rs, as `gen` and `serve` print them.
#[test]
fn the_etcd_error_samples_are_the_messages_the_code_prints() {
    let etcd = literals("crates/idforge-fleet/src/etcd.rs");
    let mut formats: Vec<String> = Vec::new();
    for f in etcd.iter().filter(|l| l.contains("etcd at {eps}")) {
        if f.contains("{what}") {
            // `what` is one of the literals without placeholders.
            formats.extend(
                etcd.iter()
                    .filter(|w| !w.contains('{') && w.len() > 20)
                    .map(|w| f.replace("{what}", w)),
            );
        } else {
            formats.push(f.clone());
        }
    }
    let access = literals("crates/idforge-fleet/src/access.rs");
    let settings: Vec<&String> = access
        .iter()
        .filter(|l| l.starts_with("--etcd") || l.starts_with("the user's role"))
        .collect();
    assert!(
        formats.len() >= 8 && settings.len() >= 4,
        "{formats:?} {settings:?}"
    );
    let text = std::fs::read_to_string(root().join("docs/FLEET.md")).unwrap();
    let mut checked = 0;
    for (i, line) in text.lines().enumerate() {
        let Some(message) = line.strip_prefix("idforge: error: ") else {
            continue;
        };
        let hint = settings
            .iter()
            .find(|s| message.ends_with(&format!(" ({s})")))
            .unwrap_or_else(|| {
                panic!(
                    "docs/FLEET.md:{}: no settings hint the code gives ends {line:?}",
                    i + 1
                )
            });
        let message = &message[..message.len() - hint.len() - 3];
        assert!(
            formats.iter().any(|f| follows(message, &pieces(f))),
            "docs/FLEET.md:{}: {message:?} is none of the messages of crates/idforge-fleet/src/etcd.rs",
            i + 1
        );
        checked += 1;
    }
    assert_eq!(checked, 4, "docs/FLEET.md shows four etcd errors");
}

/// `idforge ARGS`: (success, standard output, standard error).
fn idforge(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_idforge"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// 3488672514 as "3,488,672,514", as the docs write numbers in prose.
fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Ids and messages the docs quote in their prose and tables, decoded or produced again.
#[test]
fn prose_samples_decode_to_what_they_say() {
    // docs/LOCALITY.md: the article's example and the fields the paragraph gives for it.
    let text = std::fs::read_to_string(root().join("docs/LOCALITY.md")).unwrap();
    let start = text.find("The article's example, `").unwrap();
    let para = text[start..start + text[start..].find("\n\n").unwrap()].replace('\n', " ");
    let id = para.split('`').nth(1).unwrap();
    let d = inspect_json("locality", id);
    for expected in [
        format!("is counter {}", with_commas(d["counter"].as_u64().unwrap())),
        format!(
            "(`{:#x}`, written nibble-reversed)",
            d["counter"].as_u64().unwrap()
        ),
        format!("pid {}", with_commas(d["pid"].as_u64().unwrap())),
        format!("MAC fragment `{}`", d["mac"].as_str().unwrap()),
        format!(
            "time {} ms ({})",
            with_commas(d["unix_ms"].as_u64().unwrap()),
            d["time"].as_str().unwrap()
        ),
    ] {
        assert!(
            para.contains(&expected),
            "docs/LOCALITY.md: {para:?} lacks {expected:?} ({d})"
        );
    }

    // docs/GUARANTEES.md: the churn run's duplicate, a Snowflake id of the day it says.
    let (n, line) = doc_line(
        "docs/GUARANTEES.md",
        "the churn run fails with `duplicate id ",
    );
    let (_, dated) = doc_line("docs/GUARANTEES.md", "Broken on purpose (");
    let day = &dated[dated.find("Broken on purpose (").unwrap() + 19..][..10];
    let dup = number_after(&line, "`duplicate id ");
    let d = inspect_json("snowflake", &dup);
    assert!(
        d["time"].as_str().unwrap().starts_with(day),
        "docs/GUARANTEES.md:{n}: {dup} was not made on {day}: {d}"
    );

    // docs/GUARANTEES.md: the message for hex text made of digits, as inspect prints it.
    let (n, line) = doc_line("docs/GUARANTEES.md", "is ambiguous: it reads as decimal");
    let (ok, _, err) = idforge(&["inspect", "--scheme", "snowflake", "1999999999800000"]);
    let message = err
        .trim_end()
        .strip_prefix("idforge: 1999999999800000: ")
        .unwrap_or(&err);
    assert!(
        !ok && line.contains(&format!("| {message} |")),
        "docs/GUARANTEES.md:{n}: inspect says {err:?}"
    );

    // docs/POSTGRES.md: the UUIDv7 `uuid7()` returns (version 7, a time while the docs were
    // written; its random bits cannot be checked).
    let (n, line) = doc_line("docs/POSTGRES.md", "SELECT idforge.uuid7();");
    let id = line.split("-- ").nth(1).unwrap().trim();
    let d = inspect_json("uuid7", id);
    let ms = d["unix_ms"].as_u64().unwrap();
    assert!(
        d["version"] == 7 && (1_704_067_200_000..1_830_297_600_000).contains(&ms),
        "docs/POSTGRES.md:{n}: {d}"
    );

    // docs/SERVICE.md: the line `serve --etcd` logs when it leases a node, against the format
    // in crates/idforge-serve/src/server.rs, in the namespace its --namespace-prefix gives.
    let (n, line) = doc_line("docs/SERVICE.md", "# idforge serve: snowflake: node ");
    let (_, command) = doc_line(
        "docs/SERVICE.md",
        "--etcd-key client.key --namespace-prefix ",
    );
    let prefix = command
        .split("--namespace-prefix ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let sample = line.trim_start().trim_start_matches("# idforge serve: ");
    let server = literals("crates/idforge-serve/src/server.rs");
    let format = server
        .iter()
        .find(|l| l.starts_with("{scheme}: node {node} leased from etcd namespace"))
        .expect("the lease log line's format in crates/idforge-serve/src/server.rs");
    assert!(
        follows(sample, &pieces(format))
            && sample.contains(&format!("namespace \"{prefix}snowflake\"")),
        "docs/SERVICE.md:{n}: {sample:?} is not {format:?} in namespace {prefix}snowflake"
    );

    // README.md: an integer id in JSON with `serde`, as a string.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("(JSON: `{\"id\":").unwrap() + 8;
    let shown: String = readme[start..start + readme[start..].find('`').unwrap()]
        .split_whitespace()
        .collect();
    let value: u64 = number_after(&shown, "{\"id\":\"").parse().unwrap();
    let row = serde_json::json!({ "id": idforge::Id64::from(value) });
    assert_eq!(serde_json::to_string(&row).unwrap(), shown, "README.md");
}
