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
