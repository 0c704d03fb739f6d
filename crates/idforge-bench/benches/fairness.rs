//! Generators shared by threads: throughput, fairness and tail latency, next to a plain CAS cell
//! and ferroid's atomic generator measured in the same run.
//!
//! `cargo bench -p idforge-bench --bench fairness [-- THREADS... [--ms N] [--json]]`
//! (threads default: 1 2 4 8 16, capped at twice the CPUs; 400 ms a run).
//!
//! For each generator and thread count it prints, from [`idforge::contention::measure`]:
//! ids per second, that rate as a ratio of the same generator on one thread, fairness (the
//! fewest ids a thread made in a 25 ms window divided by the most, worst and median over the
//! windows), and per-call latency p50 / p99 / p99.9 / max. Threads are pinned to distinct CPUs
//! when there are enough of them.
//!
//! The generators:
//! * `cas_cell`: the floor of every sequencer, one `CLOCK_REALTIME` read (ns) and a
//!   `max(now, last + 1)` CAS loop on an `AtomicU64`, no backoff;
//! * `ferroid_atomic`: ferroid's `AtomicSnowflakeGenerator` (Twitter layout, its monotonic
//!   clock), spinning on `Pending` as its own benchmarks do;
//! * idforge: `uuid7` and `snowflake` on their default policy and clock, `snowflake_run_ahead`
//!   (RunAhead, unbounded lead), `nanots`, `uuid7_ticker` (the ticker clock), and
//!   `uuid7_host_wide` (a state file in a temporary directory, removed afterwards).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferroid::generator::AtomicSnowflakeGenerator;
use ferroid::id::SnowflakeTwitterId;
use ferroid::time::{MonotonicClock, TWITTER_EPOCH};
use idforge::contention::{measure, Options, Report};
use idforge::ticker::TickerClock;
use idforge::{
    Clock, Generator, OnClockBehind, OnExhausted, Policy, Scheme, StateOptions, WallClock,
};

const RUN_AHEAD: Policy = Policy {
    on_exhausted: OnExhausted::RunAhead,
    max_lead: Duration::MAX,
    on_clock_behind: OnClockBehind::Fail,
};

struct Args {
    threads: Vec<usize>,
    ms: u64,
    json: bool,
}

fn args() -> Args {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut a = Args {
        threads: Vec::new(),
        ms: 400,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--bench" => {}
            "--json" => a.json = true,
            "--ms" => a.ms = it.next().and_then(|v| v.parse().ok()).expect("--ms N"),
            // Anything else that is not a number (cargo's own arguments, filters) is ignored.
            n => {
                if let Ok(n) = n.parse() {
                    a.threads.push(n);
                }
            }
        }
    }
    if a.threads.is_empty() {
        a.threads = [1, 2, 4, 8, 16]
            .into_iter()
            .filter(|&n| n <= 2 * cpus)
            .collect();
    }
    a
}

fn row(name: &str, threads: usize, r: &Report, one: f64, json: bool) {
    let l = &r.latency;
    if json {
        println!(
            "{{\"generator\":\"{name}\",\"threads\":{threads},\"ids_per_s\":{:.0},\"vs_1_thread\":{:.3},\"fairness_worst\":{:.3},\"fairness_median\":{:.3},\"p50_ns\":{},\"p99_ns\":{},\"p999_ns\":{},\"max_ns\":{},\"errors\":{}}}",
            r.per_second(),
            r.per_second() / one,
            r.fairness_worst,
            r.fairness_median,
            l.p50_ns,
            l.p99_ns,
            l.p999_ns,
            l.max_ns,
            r.errors
        );
    } else {
        println!(
            "{name:<22} {threads:>3} {:>9.2} {:>6.2}x {:>6.2} {:>6.2} {:>8} {:>8} {:>9} {:>10}{}",
            r.per_second() / 1e6,
            r.per_second() / one,
            r.fairness_worst,
            r.fairness_median,
            l.p50_ns,
            l.p99_ns,
            l.p999_ns,
            l.max_ns,
            if r.errors > 0 {
                format!("  {} errors", r.errors)
            } else {
                String::new()
            }
        );
    }
}

fn run(a: &Args, name: &str, f: &(dyn Fn() -> bool + Sync)) {
    let opts = |threads| Options {
        threads,
        duration: Duration::from_millis(a.ms),
        ..Options::default()
    };
    let one = measure(&opts(1), f).per_second();
    for &t in &a.threads {
        let r = measure(&opts(t), f);
        row(name, t, &r, one, a.json);
    }
}

fn main() {
    let a = args();
    if !a.json {
        println!(
            "{:<22} {:>3} {:>9} {:>7} {:>6} {:>6} {:>8} {:>8} {:>9} {:>10}",
            "generator",
            "thr",
            "M ids/s",
            "vs 1",
            "worst",
            "median",
            "p50 ns",
            "p99 ns",
            "p99.9 ns",
            "max ns"
        );
    }
    let cell = AtomicU64::new(0);
    run(&a, "cas_cell", &|| {
        let now = WallClock.now_ns();
        let mut last = cell.load(Ordering::Relaxed);
        loop {
            match cell.compare_exchange_weak(
                last,
                now.max(last + 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => last = actual,
            }
        }
    });
    let ferroid: AtomicSnowflakeGenerator<SnowflakeTwitterId, MonotonicClock> =
        AtomicSnowflakeGenerator::new(1, MonotonicClock::with_epoch(TWITTER_EPOCH));
    run(&a, "ferroid_atomic", &|| {
        std::hint::black_box(ferroid.next_id(|_| std::hint::spin_loop()));
        true
    });
    let uuid7 = Generator::new(&Scheme::Uuid7, None).unwrap();
    run(&a, "uuid7", &|| std::hint::black_box(uuid7.next()).is_ok());
    let snowflake = Generator::new(&Scheme::Snowflake, Some(1)).unwrap();
    run(&a, "snowflake", &|| {
        std::hint::black_box(snowflake.next()).is_ok()
    });
    let snowflake_ra = Generator::with_clock(
        &Scheme::Snowflake,
        Some(1),
        idforge::SystemClock::for_tick(1_000_000),
        RUN_AHEAD,
    )
    .unwrap();
    run(&a, "snowflake_run_ahead", &|| {
        std::hint::black_box(snowflake_ra.next()).is_ok()
    });
    let nanots = Generator::new(&Scheme::NanoTs, None).unwrap();
    run(&a, "nanots", &|| {
        std::hint::black_box(nanots.next()).is_ok()
    });
    let ticker = Generator::with_clock(
        &Scheme::Uuid7,
        None,
        TickerClock::start().unwrap(),
        Scheme::Uuid7.default_policy(),
    )
    .unwrap();
    run(&a, "uuid7_ticker", &|| {
        std::hint::black_box(ticker.next()).is_ok()
    });
    let dir = std::env::temp_dir().join(format!("idforge-fairness-{}", std::process::id()));
    let host = Generator::host_wide(
        &Scheme::Uuid7,
        None,
        idforge::SystemClock::for_tick(1_000_000),
        Scheme::Uuid7.default_policy(),
        &StateOptions::new(dir.join("uuid7.state")),
    )
    .unwrap();
    run(&a, "uuid7_host_wide", &|| {
        std::hint::black_box(host.next()).is_ok()
    });
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}
