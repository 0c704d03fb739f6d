//! The library's modules form layers without cycles (docs/ARCHITECTURE.md, "Layers"): every
//! `crate::` path in a module's code (tests and comments aside) names a module lower in [`ORDER`],
//! or the module itself. Names the crate root re-exports (`crate::Generator`) count as the module
//! that defines them. A new import that points up a layer fails here with the file and the line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The modules from the bottom up: foundations, then the sequencer and layouts, the stamp cells,
/// the typed ids and the generator, the schemes, the decoder, and the contention measurement on top.
const ORDER: [&str; 14] = [
    "family",
    "error",
    "time",
    "clock",
    "sequencer",
    "layout",
    "shm",
    // Above shm: its text buffer is shm's ASCII type (the crate's unsafe code stays in shm/sys.rs).
    "text",
    "ticker",
    "ids",
    "generator",
    "schemes",
    "inspect",
    // Measures generators shared by threads; pins threads through shm/sys.rs.
    "contention",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file belongs to (`schemes/nanots.rs` → `schemes`).
fn module_of(path: &Path) -> String {
    let rel = path.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The names `lib.rs` re-exports, with the module each comes from.
fn reexports() -> HashMap<String, String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut map = HashMap::new();
    for stmt in lib.split(';') {
        let s = stmt.trim();
        let Some(path) = s.split("pub use ").nth(1) else {
            continue;
        };
        let module = path.split("::").next().unwrap().trim().to_string();
        let names = path.rsplit("::").next().unwrap();
        for n in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let n = n.split(" as ").last().unwrap().trim();
            if !n.is_empty() {
                map.insert(n.to_string(), module.clone());
            }
        }
    }
    map
}

/// The code of a file without its `#[cfg(test)]` tests module and without comments.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end]
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.split(" // ").next().unwrap().to_string()))
        .collect()
}

/// The first path segments after each `crate::` in `code` (a braced group gives each member's).
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Members up to the matching brace, split at top-level commas.
            let mut depth = 1;
            let mut member = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (c == ',' && depth == 1) {
                    out.push(first_segment(&member));
                    member.clear();
                    if depth == 0 {
                        break;
                    }
                } else {
                    member.push(c);
                }
            }
        } else {
            out.push(first_segment(rest));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn first_segment(s: &str) -> String {
    s.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every import edge `(from, to, file, line)` between two different top-level modules.
fn edges() -> Vec<(String, String, String, usize)> {
    let re = reexports();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut out = Vec::new();
    for f in files {
        let from = module_of(&f);
        if from == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // A multi-line `use crate::{...}` is read as one statement.
        let lines = code_lines(&text);
        let joined: Vec<(usize, String)> = {
            let mut v: Vec<(usize, String)> = Vec::new();
            let mut open: Option<(usize, String)> = None;
            for (n, l) in lines {
                match open.take() {
                    Some((n0, mut acc)) => {
                        acc.push_str(&l);
                        if l.contains(';') {
                            v.push((n0, acc));
                        } else {
                            open = Some((n0, acc));
                        }
                    }
                    None if l.trim_start().starts_with("use crate::")
                        || l.trim_start().starts_with("pub use crate::")
                        || l.trim_start().starts_with("pub(crate) use crate::") =>
                    {
                        if l.contains(';') {
                            v.push((n, l));
                        } else {
                            open = Some((n, l));
                        }
                    }
                    None => v.push((n, l)),
                }
            }
            v
        };
        for (n, l) in joined {
            for seg in crate_paths(&l) {
                let to = if ORDER.contains(&seg.as_str()) {
                    seg
                } else if let Some(m) = re.get(&seg) {
                    m.clone()
                } else {
                    panic!(
                        "{}:{n}: crate::{seg} is neither a module nor a name lib.rs re-exports",
                        f.display()
                    );
                };
                if to != from {
                    out.push((from.clone(), to, f.display().to_string(), n));
                }
            }
        }
    }
    out
}

#[test]
fn every_import_points_down_a_layer() {
    let rank = |m: &str| {
        ORDER
            .iter()
            .position(|o| *o == m)
            .unwrap_or_else(|| panic!("module {m} is not in ORDER: place it in a layer"))
    };
    let all = edges();
    assert!(
        all.iter()
            .any(|(f, t, _, _)| f == "generator" && t == "sequencer"),
        "the scan found no generator -> sequencer import: the parser is broken"
    );
    let up: Vec<String> = all
        .iter()
        .filter(|(from, to, _, _)| rank(to) > rank(from))
        .map(|(from, to, file, line)| format!("{file}:{line}: {from} imports {to}, a higher layer"))
        .collect();
    assert!(up.is_empty(), "imports that point up:\n{}", up.join("\n"));
}

#[test]
fn the_parser_sees_grouped_and_reexported_imports() {
    assert_eq!(
        crate_paths("use crate::{error::Error, Generator};"),
        ["error", "Generator"]
    );
    assert_eq!(crate_paths("x = crate::time::now();"), ["time"]);
    assert_eq!(
        reexports().get("Generator").map(String::as_str),
        Some("generator")
    );
    assert_eq!(reexports().get("IdFamily").map(String::as_str), Some("ids"));
}
