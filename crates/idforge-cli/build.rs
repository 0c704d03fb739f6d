//! Records the git commit the binary is built from, for `idforge --version`.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let text = match commit {
        Some(c) if dirty => format!("git {c}, modified"),
        Some(c) => format!("git {c}"),
        None => "not built from a git checkout".into(),
    };
    println!("cargo:rustc-env=IDFORGE_GIT_COMMIT={text}");
    // Rebuild when HEAD moves (the paths are relative to this crate).
    for p in ["../../.git/HEAD", "../../.git/index"] {
        if std::path::Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
