//! `idforge bench`: every scheme on this machine, measured through the same `Opened` generator
//! the command line and the service use: one thread's time per id, two threads' throughput on
//! one shared generator, batch throughput, and the clock's cost. The criterion benchmarks
//! (`cargo bench -p idforge-bench`) stay the reference, with the peers in the same run.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use idforge::schemes::catalog::{Identity, Kind, NAMES};
use idforge::schemes::open::{OpenOptions, Opened};
use idforge::Clock;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Only these schemes (default: every scheme but custom).
    schemes: Vec<String>,
    /// How long each measurement runs, in milliseconds.
    #[arg(long, default_value_t = 300, value_name = "MS")]
    duration_ms: u64,
    /// One JSON object per scheme (an array).
    #[arg(long)]
    json: bool,
}

/// One scheme's figures.
#[derive(Debug, Clone)]
struct Row {
    scheme: String,
    ns_per_id: f64,
    two_threads_per_s: f64,
    batch_per_s: f64,
    capacity_per_s: Option<f64>,
}

/// Runs `idforge bench`.
pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = if a.schemes.is_empty() {
        NAMES
            .iter()
            .filter(|n| **n != "custom")
            .map(|n| n.to_string())
            .collect()
    } else {
        a.schemes.clone()
    };
    let d = Duration::from_millis(a.duration_ms.max(10));
    let progress = std::io::stderr().is_terminal();
    let clock_ns = clock_cost(d);
    let mut rows = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let kind = Kind::from_name(name, None)?;
        if progress {
            eprint!(
                "\ridforge bench: {name} ({}/{})            ",
                i + 1,
                names.len()
            );
        }
        let g = open(&kind)?;
        rows.push(Row {
            scheme: kind.name().to_string(),
            ns_per_id: one_thread(&g, d)?,
            two_threads_per_s: two_threads(&g, d)?,
            batch_per_s: batch(&g, d)?,
            capacity_per_s: capacity(&kind),
        });
    }
    if progress {
        eprintln!("\ridforge bench: done                          ");
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "scheme": r.scheme,
                    "ns_per_id_1_thread": r.ns_per_id,
                    "ids_per_s_2_threads": r.two_threads_per_s,
                    "ids_per_s_batch": r.batch_per_s,
                    "capacity_ids_per_s": r.capacity_per_s,
                    "clock": "CLOCK_REALTIME",
                    "clock_read_ns": clock_ns,
                    "clock_error_ns": 0,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "clock: CLOCK_REALTIME (the wall clock; its error against itself is 0), {clock_ns:.1} ns a read"
    )?;
    writeln!(
        out,
        "{:<14} {:>10} {:>16} {:>16} {:>14}",
        "scheme", "ns/id", "2 threads ids/s", "batch ids/s", "capacity/s"
    )?;
    for r in &rows {
        writeln!(
            out,
            "{:<14} {:>10.1} {:>16} {:>16} {:>14}",
            r.scheme,
            r.ns_per_id,
            si(r.two_threads_per_s),
            si(r.batch_per_s),
            r.capacity_per_s.map_or("-".into(), si)
        )?;
    }
    writeln!(
        out,
        "(one generator per scheme, in this process, through the command line's generator type; \
         a scheme whose layout caps it per tick waits at its capacity)"
    )?;
    Ok(ExitCode::SUCCESS)
}

fn si(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 1e3 => format!("{:.1} k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// A generator of `kind` in this process, with a node (or host) id where it needs one.
fn open(kind: &Kind) -> anyhow::Result<Opened> {
    let node = match kind.identity() {
        Identity::Node { .. } | Identity::Host => Some(1),
        _ => None,
    };
    Ok(Opened::open(
        kind,
        &OpenOptions {
            node,
            ..OpenOptions::default()
        },
    )?)
}

/// Ids per second a scheme's layout allows one generator.
fn capacity(kind: &Kind) -> Option<f64> {
    idforge::schemes::catalog::facts()
        .into_iter()
        .find(|f| f.name == kind.name())
        .map(|f| f.ids_per_second)
}

/// The cost of one wall-clock read.
fn clock_cost(d: Duration) -> f64 {
    let c = idforge::WallClock;
    let start = Instant::now();
    let mut n = 0u64;
    let mut sink = 0u64;
    while start.elapsed() < d / 4 {
        for _ in 0..1000 {
            sink = sink.wrapping_add(c.now_ns());
        }
        n += 1000;
    }
    std::hint::black_box(sink);
    start.elapsed().as_nanos() as f64 / n as f64
}

/// One thread calling `next()`: nanoseconds per id.
fn one_thread(g: &Opened, d: Duration) -> anyhow::Result<f64> {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < d {
        for _ in 0..256 {
            std::hint::black_box(g.next()?);
        }
        n += 256;
    }
    Ok(start.elapsed().as_nanos() as f64 / n as f64)
}

/// Two threads calling `next()` on one generator: ids per second together.
fn two_threads(g: &Opened, d: Duration) -> anyhow::Result<f64> {
    let start = Instant::now();
    let counts = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| -> Result<u64, idforge::Error> {
                    let mut n = 0u64;
                    while start.elapsed() < d {
                        for _ in 0..256 {
                            std::hint::black_box(g.next()?);
                        }
                        n += 256;
                    }
                    Ok(n)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("a bench thread panicked"))
            .collect::<Result<Vec<u64>, _>>()
    })?;
    Ok(counts.iter().sum::<u64>() as f64 / start.elapsed().as_secs_f64())
}

/// `take` in batches of 4096: ids per second.
fn batch(g: &Opened, d: Duration) -> anyhow::Result<f64> {
    let start = Instant::now();
    let mut n = 0u64;
    let mut sink = 0u128;
    while start.elapsed() < d {
        g.take(4096, |id| sink = sink.wrapping_add(id))?;
        n += 4096;
    }
    std::hint::black_box(sink);
    Ok(n as f64 / start.elapsed().as_secs_f64())
}
