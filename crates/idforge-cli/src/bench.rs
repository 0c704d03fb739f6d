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
use idforge::{Clock, SystemClock};

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
    /// Read CLOCK_REALTIME for every id, as `gen --precise-clock` does.
    #[arg(long)]
    precise_clock: bool,
}

/// One scheme's figures.
#[derive(Debug, Clone)]
struct Row {
    scheme: String,
    ns_per_id: f64,
    two_threads_per_s: f64,
    batch_per_s: f64,
    capacity_per_s: Option<f64>,
    /// Whether the scheme's ids took their time from the calibrated counter.
    fast_clock: bool,
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
    let clocks = measure_clocks(d);
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
        let g = open(&kind, a.precise_clock)?;
        let tick = kind
            .timebase(&OpenOptions::default())?
            .map_or(1_000_000, |t| t.tick_ns);
        let fast = !a.precise_clock && !SystemClock::for_tick(tick).is_precise();
        rows.push(Row {
            scheme: kind.name().to_string(),
            ns_per_id: one_thread(&g, d)?,
            two_threads_per_s: two_threads(&g, d)?,
            batch_per_s: batch(&g, d)?,
            capacity_per_s: capacity(&kind),
            fast_clock: fast,
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
                    "clock": if r.fast_clock { "counter" } else { "CLOCK_REALTIME" },
                    "clock_read_ns": if r.fast_clock { clocks.fast_ns } else { clocks.precise_ns },
                    "clock_error_ns": if r.fast_clock { clocks.worst_error_ns } else { 0 },
                    "clock_error_p99_ns": if r.fast_clock { clocks.p99_error_ns } else { 0 },
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "clocks: CLOCK_REALTIME {:.1} ns a read; calibrated counter {:.1} ns a read, off \
         CLOCK_REALTIME by at most {} ns (99% within {} ns) in {} bracketed readings",
        clocks.precise_ns,
        clocks.fast_ns,
        clocks.worst_error_ns,
        clocks.p99_error_ns,
        clocks.samples
    )?;
    writeln!(
        out,
        "{:<14} {:>10} {:>16} {:>16} {:>14}  clock",
        "scheme", "ns/id", "2 threads ids/s", "batch ids/s", "capacity/s"
    )?;
    for r in &rows {
        writeln!(
            out,
            "{:<14} {:>10.1} {:>16} {:>16} {:>14}  {}",
            r.scheme,
            r.ns_per_id,
            si(r.two_threads_per_s),
            si(r.batch_per_s),
            r.capacity_per_s.map_or("-".into(), si),
            if r.fast_clock {
                "counter"
            } else {
                "CLOCK_REALTIME"
            }
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
fn open(kind: &Kind, precise_clock: bool) -> anyhow::Result<Opened> {
    let node = match kind.identity() {
        Identity::Node { .. } | Identity::Host => Some(1),
        _ => None,
    };
    Ok(Opened::open(
        kind,
        &OpenOptions {
            node,
            precise_clock,
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

/// What the two readings of the system clock cost, and how far the fast one is off.
struct Clocks {
    precise_ns: f64,
    fast_ns: f64,
    worst_error_ns: u64,
    p99_error_ns: u64,
    samples: usize,
}

/// Times both readings, then compares the fast one with CLOCK_REALTIME: each fast reading
/// bracketed by two precise ones at most 2 µs apart counts, its error being its distance from
/// the bracket.
fn measure_clocks(d: Duration) -> Clocks {
    let precise_ns = read_cost(&SystemClock::precise(), d / 8);
    let fast_ns = read_cost(&SystemClock::fast(), d / 8);
    let (fast, wall) = (SystemClock::fast(), idforge::WallClock);
    let mut errors = Vec::new();
    let start = Instant::now();
    while start.elapsed() < d / 4 && errors.len() < 1_000_000 {
        let w1 = wall.now_ns();
        let f = fast.now_ns();
        let w2 = wall.now_ns();
        if w2 >= w1 && w2 - w1 <= 2_000 {
            errors.push(w1.saturating_sub(f).max(f.saturating_sub(w2)));
        }
    }
    errors.sort_unstable();
    let at = |q: f64| {
        errors
            .get(((errors.len() as f64 * q) as usize).min(errors.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Clocks {
        precise_ns,
        fast_ns,
        worst_error_ns: errors.last().copied().unwrap_or(0),
        p99_error_ns: at(0.99),
        samples: errors.len(),
    }
}

/// The cost of one read of `c`.
fn read_cost(c: &impl Clock, d: Duration) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    let mut sink = 0u64;
    while start.elapsed() < d {
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
