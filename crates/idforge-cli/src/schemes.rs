//! `idforge schemes`: every scheme with its layout, capacity and the year it runs out, from the
//! library's catalog.

use std::io::{self, Write};
use std::process::ExitCode;

use idforge::schemes::catalog;

/// Runs `idforge schemes`.
pub fn schemes(json: bool) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    let all = catalog::facts();
    if json {
        let list = idforge_serve::json::schemes();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<14} {:>4}  {:>10} {:>14} {:>9} {:>9} {:>9}  layout (most significant bit first)",
        "scheme", "bits", "ids/tick", "ids/s/node", "nodes", "runs out", "fits i64"
    )?;
    for f in &all {
        // uuid4 has no tick and no time field: no rate, no end.
        let untimed = f.tick_ns == 0;
        writeln!(
            out,
            "{:<14} {:>4}  {:>10} {:>14} {:>9} {:>9} {:>9}  {}",
            f.name,
            f.bits,
            if untimed {
                "-".to_string()
            } else {
                f.ids_per_tick.to_string()
            },
            if untimed {
                "-".to_string()
            } else {
                format!("{:.0}", f.ids_per_second)
            },
            f.nodes.map_or("-".to_string(), |n| n.to_string()),
            if f.end_year == catalog::NEVER {
                "never".to_string()
            } else {
                f.end_year.to_string()
            },
            f.signed64.to_string(),
            f.diagram
        )?;
        if untimed {
            writeln!(
                out,
                "{:<14}       no time, order {}; {}",
                "", f.order, f.summary
            )?;
        } else {
            writeln!(
                out,
                "{:<14}       tick {}, epoch {}, order {}; {}",
                "",
                tick_text(f.tick_ns),
                f.epoch,
                f.order,
                f.summary
            )?;
        }
    }
    writeln!(
        out,
        "fits i64: whether ids fit a signed 64-bit integer (PostgreSQL bigint, Java long, MySQL BIGINT): yes, only below a node, until a year, or - for 128-bit ids"
    )?;
    writeln!(
        out,
        "custom         --layout time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z (fields from the most significant bit; order=none for a counter above time)"
    )?;
    Ok(ExitCode::SUCCESS)
}

fn tick_text(ns: u64) -> String {
    match ns {
        n if n % 1_000_000_000 == 0 => format!("{} s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{} ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{} us", n / 1_000),
        n => format!("{n} ns"),
    }
}
