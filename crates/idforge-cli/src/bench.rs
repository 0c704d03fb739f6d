//! `idforge bench`: every scheme on this machine, measured through the same `Opened` generator
//! the command line and the service use: one thread's time per id, two threads' throughput on
//! one shared generator, batch throughput, and the clock's cost. The criterion benchmarks
//! (`cargo bench -p idforge-bench`) stay the reference, with the peers in the same run.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use idforge::contention::{measure, Options, Report};
use idforge::schemes::catalog::{Identity, Kind, NAMES};
use idforge::schemes::open::{OpenOptions, Opened};
use idforge::ticker::TickerClock;
use idforge::{Clock, SystemClock};

use crate::gen::ClockArg;

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
    /// The clock ids take their time from, as `gen --clock`.
    #[arg(long, value_enum, default_value_t = ClockArg::Auto)]
    clock: ClockArg,
    /// Also share each generator among these numbers of threads (a comma-separated list, e.g.
    /// `--threads 2,4,8,16`) and report, per count: ids per second, that as a ratio of one
    /// thread's rate measured the same way, fairness (the fewest ids a thread made in a 25 ms
    /// window divided by the most; worst and median window) and per-call latency (p50, p99,
    /// p99.9, max). Threads are pinned to distinct CPUs when there are enough.
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
}

/// One scheme shared by `threads` threads.
#[derive(Debug, Clone)]
struct Shared {
    threads: usize,
    report: Report,
    /// The same measurement with one thread: ids per second.
    one_per_s: f64,
}

impl Shared {
    /// Ids per second as a ratio of one thread's (0 when one thread made none).
    fn vs_one(&self) -> f64 {
        if self.one_per_s > 0.0 {
            self.report.per_second() / self.one_per_s
        } else {
            0.0
        }
    }
}

/// One scheme's figures.
#[derive(Debug, Clone)]
struct Row {
    scheme: String,
    ns_per_id: f64,
    two_threads_per_s: f64,
    batch_per_s: f64,
    capacity_per_s: Option<f64>,
    /// Where the scheme's ids took their time from.
    clock: ReadBy,
    /// `--threads`: one entry per count.
    shared: Vec<Shared>,
}

/// A clock `bench` reports on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadBy {
    Realtime,
    Counter,
    Ticker,
}

impl ReadBy {
    fn name(self) -> &'static str {
        match self {
            ReadBy::Realtime => "CLOCK_REALTIME",
            ReadBy::Counter => "counter",
            ReadBy::Ticker => "ticker",
        }
    }
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
    let clocks = measure_clocks(d, a.clock == ClockArg::Ticker)?;
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
        let g = open(&kind, a.clock)?;
        let tick = kind
            .timebase(&OpenOptions::default())?
            .map_or(1_000_000, |t| t.tick_ns);
        let clock = match a.clock {
            ClockArg::Precise => ReadBy::Realtime,
            ClockArg::Counter => ReadBy::Counter,
            ClockArg::Ticker => ReadBy::Ticker,
            ClockArg::Auto if SystemClock::for_tick(tick).is_precise() => ReadBy::Realtime,
            ClockArg::Auto => ReadBy::Counter,
        };
        rows.push(Row {
            scheme: kind.name().to_string(),
            ns_per_id: one_thread(&g, d)?,
            two_threads_per_s: two_threads(&g, d)?,
            batch_per_s: batch(&g, d)?,
            capacity_per_s: capacity(&kind),
            clock,
            shared: shared(&g, d, &a.threads),
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
                    "clock": r.clock.name(),
                    "clock_read_ns": clocks.read_ns(r.clock),
                    "clock_error_ns": clocks.worst(r.clock),
                    "clock_error_p99_ns": clocks.p99(r.clock),
                    "shared": r.shared.iter().map(|s| serde_json::json!({
                        "threads": s.threads,
                        "ids_per_s": s.report.per_second(),
                        "vs_1_thread": s.vs_one(),
                        "fairness_worst": s.report.fairness_worst,
                        "fairness_median": s.report.fairness_median,
                        "windows": s.report.windows,
                        "latency_ns": {
                            "p50": s.report.latency.p50_ns,
                            "p99": s.report.latency.p99_ns,
                            "p99_9": s.report.latency.p999_ns,
                            "max": s.report.latency.max_ns,
                        },
                        "errors": s.report.errors,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "clocks: CLOCK_REALTIME {:.1} ns a read; calibrated counter {:.1} ns a read, {}",
        clocks.precise_ns,
        clocks.fast_ns,
        error_words(
            "off",
            clocks.fast.worst_ns,
            clocks.fast.p99_ns,
            clocks.fast.samples
        ),
    )?;
    if let Some((ns, e)) = &clocks.ticker {
        writeln!(
            out,
            "        ticker {ns:.1} ns a read, {}",
            error_words("behind", e.worst_ns, e.p99_ns, e.samples)
        )?;
    }
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
            r.clock.name()
        )?;
    }
    writeln!(
        out,
        "(one generator per scheme, in this process, through the command line's generator type; \
         a scheme whose layout caps it per tick waits at its capacity)"
    )?;
    if !a.threads.is_empty() {
        write_shared(&mut out, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--threads` table.
fn write_shared(out: &mut impl Write, rows: &[Row]) -> anyhow::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{:<14} {:>7} {:>10} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9} {:>11}",
        "shared by",
        "threads",
        "ids/s",
        "vs 1 thr",
        "fair:lo",
        "median",
        "p50",
        "p99",
        "p99.9",
        "max"
    )?;
    for r in rows {
        for s in &r.shared {
            let l = &s.report.latency;
            writeln!(
                out,
                "{:<14} {:>7} {:>10} {:>8.2}x {:>7.2} {:>7.2} {:>9} {:>9} {:>9} {:>11}{}",
                r.scheme,
                s.threads,
                si(s.report.per_second()),
                s.vs_one(),
                s.report.fairness_worst,
                s.report.fairness_median,
                duration_words(l.p50_ns),
                duration_words(l.p99_ns),
                duration_words(l.p999_ns),
                duration_words(l.max_ns),
                if s.report.errors > 0 {
                    format!("  {} errors", s.report.errors)
                } else {
                    String::new()
                }
            )?;
        }
    }
    writeln!(
        out,
        "(each generator shared by that many threads calling next() at once; fairness: the \
         fewest ids a thread made in a 25 ms window divided by the most, 1.00 = even, 0 = a \
         thread made none; latency: every call, one clock read per call included, also in the \
         one-thread rate the ratio compares with)"
    )?;
    Ok(())
}

/// Nanoseconds as a short duration: `850 ns`, `12.3 µs`, `4.1 ms`.
fn duration_words(ns: u64) -> String {
    match ns {
        ns if ns >= 1_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        ns if ns >= 10_000 => format!("{:.1} µs", ns as f64 / 1e3),
        ns => format!("{ns} ns"),
    }
}

/// `--threads`: the generator shared by each count of threads, and by one for the ratio.
fn shared(g: &Opened, d: Duration, threads: &[u16]) -> Vec<Shared> {
    if threads.is_empty() {
        return Vec::new();
    }
    let opts = |threads: usize| Options {
        threads,
        duration: d,
        ..Options::default()
    };
    let call = || std::hint::black_box(g.next()).is_ok();
    let one_per_s = measure(&opts(1), call).per_second();
    threads
        .iter()
        .map(|&t| Shared {
            threads: usize::from(t),
            report: measure(&opts(usize::from(t)), call),
            one_per_s,
        })
        .collect()
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
fn open(kind: &Kind, clock: ClockArg) -> anyhow::Result<Opened> {
    let node = match kind.identity() {
        Identity::Node { .. } | Identity::Host => Some(1),
        _ => None,
    };
    Ok(Opened::open(
        kind,
        &OpenOptions {
            node,
            clock: clock.into(),
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

/// What the clock readings cost, and how far the fast ones are off CLOCK_REALTIME.
struct Clocks {
    precise_ns: f64,
    fast_ns: f64,
    fast: Errors,
    /// The ticker's figures, when `--clock ticker` asked for it.
    ticker: Option<(f64, Errors)>,
}

/// Errors against CLOCK_REALTIME: the worst, the 99th percentile, and from how many readings.
#[derive(Default, Clone, Copy)]
struct Errors {
    worst_ns: u64,
    p99_ns: u64,
    samples: usize,
}

impl Clocks {
    fn read_ns(&self, by: ReadBy) -> f64 {
        match (by, &self.ticker) {
            (ReadBy::Realtime, _) => self.precise_ns,
            (ReadBy::Counter, _) => self.fast_ns,
            (ReadBy::Ticker, Some((ns, _))) => *ns,
            (ReadBy::Ticker, None) => 0.0,
        }
    }
    fn errors(&self, by: ReadBy) -> Errors {
        match (by, &self.ticker) {
            (ReadBy::Realtime, _) => Errors::default(),
            (ReadBy::Counter, _) => self.fast,
            (ReadBy::Ticker, Some((_, e))) => *e,
            (ReadBy::Ticker, None) => Errors::default(),
        }
    }
    fn worst(&self, by: ReadBy) -> u64 {
        self.errors(by).worst_ns
    }
    fn p99(&self, by: ReadBy) -> u64 {
        self.errors(by).p99_ns
    }
}

/// Times the readings, then compares the fast ones with CLOCK_REALTIME: each reading bracketed
/// by two precise ones at most 2 µs apart counts, its error being its distance from the bracket.
fn measure_clocks(d: Duration, ticker: bool) -> anyhow::Result<Clocks> {
    let precise_ns = read_cost(&SystemClock::precise(), d / 8);
    let fast_ns = read_cost(&SystemClock::fast(), d / 8);
    let fast = errors(&SystemClock::fast(), d / 4);
    let ticker = if ticker {
        let t = TickerClock::start()?;
        Some((read_cost(&t, d / 8), errors(&t, d / 4)))
    } else {
        None
    };
    Ok(Clocks {
        precise_ns,
        fast_ns,
        fast,
        ticker,
    })
}

fn errors(c: &impl Clock, d: Duration) -> Errors {
    let wall = idforge::WallClock;
    let mut errors = Vec::new();
    let start = Instant::now();
    while start.elapsed() < d && errors.len() < 1_000_000 {
        let w1 = wall.now_ns();
        let f = c.now_ns();
        let w2 = wall.now_ns();
        if w2 >= w1 && w2 - w1 <= 2_000 {
            errors.push(w1.saturating_sub(f).max(f.saturating_sub(w2)));
        }
    }
    errors.sort_unstable();
    let p99 = errors
        .get((errors.len() * 99 / 100).min(errors.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0);
    Errors {
        worst_ns: errors.last().copied().unwrap_or(0),
        p99_ns: p99,
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

/// How far a clock was from `CLOCK_REALTIME`: "at most 0 ns" would read as a claim of no error
/// at all, when it means every reading fell between the two `CLOCK_REALTIME` reads around it.
pub(crate) fn error_words(how: &str, worst_ns: u64, p99_ns: u64, samples: usize) -> String {
    if worst_ns == 0 {
        format!(
            "within the bracketing CLOCK_REALTIME reads in all {samples} readings (no error beyond \
             the bracket's width could be seen)"
        )
    } else {
        format!(
            "{how} CLOCK_REALTIME by at most {worst_ns} ns (99% within {p99_ns} ns) in {samples} \
             bracketed readings"
        )
    }
}
