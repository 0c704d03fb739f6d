//! How a million ids fall into 16 range partitions (by their first hex character, the top 4
//! bits): `locality` in variable mode, `locality` in sequential mode, and `uuid7`.
//!
//! Prints a Markdown table of the counts and writes the histogram to `docs/locality-spread.svg`
//! (or the path given as the first argument).
//!
//! Run: `cargo run --release -p idforge --example locality_spread`

use std::fmt::Write as _;
use std::path::PathBuf;

use idforge::schemes::locality::LocalityGenerator;
use idforge::{Generator, ManualClock, Scheme};

const N: usize = 1_000_000;
/// 2013-04-28T01:04:00.038Z, the moment of the article's sequential examples (seed 0xf5166775).
const SEQ_NS: u64 = 1_367_111_040_038_000_000;

fn partitions(ids: impl Iterator<Item = u128>) -> [u64; 16] {
    let mut counts = [0u64; 16];
    for id in ids {
        counts[(id >> 124) as usize] += 1;
    }
    counts
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let variable = LocalityGenerator::builder()
        .pid(1)
        .mac_fragment(1)
        .build()?;
    let sequential = LocalityGenerator::builder()
        .clock(ManualClock::new(SEQ_NS))
        .pid(1)
        .mac_fragment(1)
        .sequential(true)
        .build()?;
    let uuid7 = Generator::new(&Scheme::Uuid7, None)?;
    let panels = [
        (
            "locality, variable mode",
            partitions((0..N).map(|_| variable.next().as_u128())),
        ),
        (
            "locality, sequential mode",
            partitions((0..N).map(|_| sequential.next().as_u128())),
        ),
        (
            "uuid7",
            partitions((0..N).map(|_| uuid7.next().unwrap_or(0))),
        ),
    ];

    println!("| partition | {} |", panels.map(|p| p.0).join(" | "));
    println!("|---|---:|---:|---:|");
    for p in 0..16 {
        println!(
            "| `{p:x}` | {} |",
            panels.map(|(_, c)| c[p].to_string()).join(" | ")
        );
    }

    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/locality-spread.svg")
        });
    std::fs::write(&path, svg(&panels))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Three panels side by side, 16 bars each, on one linear scale (0 to N ids).
fn svg(panels: &[(&str, [u64; 16]); 3]) -> String {
    const PW: f64 = 300.0; // panel width
    const PH: f64 = 220.0; // plot height
    const TOP: f64 = 50.0;
    const LEFT: f64 = 70.0;
    const GAP: f64 = 40.0;
    let width = LEFT + 3.0 * PW + 2.0 * GAP + 20.0;
    let height = TOP + PH + 75.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="20" font-size="14" text-anchor="middle">1,000,000 ids in 16 range partitions (first hex character)</text>"#,
        width / 2.0
    );
    for (i, (title, counts)) in panels.iter().enumerate() {
        let x0 = LEFT + i as f64 * (PW + GAP);
        let y0 = TOP + PH;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{title}</text>"#,
            x0 + PW / 2.0,
            TOP - 10.0
        );
        // Gridlines at 0, 250k, 500k, 750k, 1M; the uniform share (62,500) dashed, over the bars.
        for k in 0..=4 {
            let y = y0 - PH * k as f64 / 4.0;
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/>"##,
                x0 + PW
            );
            if i == 0 {
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{}" text-anchor="end">{}k</text>"#,
                    x0 - 6.0,
                    y + 4.0,
                    k * 250
                );
            }
        }
        let bw = PW / 16.0;
        for (p, &c) in counts.iter().enumerate() {
            let h = PH * c as f64 / N as f64;
            let x = x0 + p as f64 * bw;
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#3a6ea5"><title>{p:x}: {c}</title></rect>"##,
                x + 1.0,
                y0 - h,
                bw - 2.0
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle" font-family="monospace">{p:x}</text>"#,
                x + bw / 2.0,
                y0 + 14.0
            );
        }
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{y0}" x2="{}" y2="{y0}" stroke="#333"/>"##,
            x0 + PW
        );
        let uy = y0 - PH * (N as f64 / 16.0) / N as f64;
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{uy}" x2="{}" y2="{uy}" stroke="#c33" stroke-dasharray="4 3"/>"##,
            x0 + PW
        );
        let max = counts.iter().copied().max().unwrap_or(0);
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#555">largest partition: {:.1}%</text>"##,
            x0 + PW / 2.0,
            y0 + 34.0,
            max as f64 * 100.0 / N as f64
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="{}" fill="#c33">dashed: a uniform share, 62,500 ids per partition</text>"##,
        height - 8.0
    );
    s.push_str("</svg>\n");
    s
}
