//! Generation cost, next to baselines measured in the same run:
//!
//! * `baseline/wall_clock`: one wall-clock read (`WallClock::now_ns`);
//! * `baseline/clock_plus_cas`: one wall-clock read plus one uncontended compare-and-swap, the
//!   floor for any sequencer-based generator;
//! * `baseline/uuid_now_v7`, `baseline/uuid_new_v4`: the `uuid` crate;
//! * `baseline/ulid_generator`: `ulid::Generator` (monotonic ULIDs).
//!
//! Per scheme: `next/*` (one id), `reserve64/*` (ids from `reserve(64)`, reported per id), and
//! `threads2/*` (two threads on one shared generator, time per id of the total throughput).
//!
//! Layouts with small per-tick capacity (Snowflake: 4,096 per ms; GlobalId: 128) would spend the
//! benchmark waiting for the next tick, measuring their capacity rather than the cost of a call.
//! The per-scheme benches therefore run with `OnExhausted::RunAhead` and an unbounded lead: every
//! call still reads the clock and performs the CAS. `uuid7` (65,536 per ms) is also measured with
//! its default policy.
//!
//! Run: `cargo bench -p idforge-bench --bench generate` (ratios: `scripts/bench-ratios`).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod common;
use common::two_threads;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idforge::{
    Clock, Generator, OnClockBehind, OnExhausted, Policy, Scheme, StateOptions, WallClock,
};

const RUN_AHEAD: Policy = Policy {
    on_exhausted: OnExhausted::RunAhead,
    max_lead: Duration::MAX,
    on_clock_behind: OnClockBehind::Fail,
};

fn generator(scheme: &Scheme) -> Generator {
    let node = scheme.needs_node().then_some(1);
    Generator::with_clock(scheme, node, WallClock, RUN_AHEAD).unwrap()
}

fn baselines(c: &mut Criterion) {
    let mut g = c.benchmark_group("baseline");
    g.throughput(Throughput::Elements(1));
    g.bench_function("wall_clock", |b| b.iter(|| black_box(WallClock.now_ns())));
    let cell = AtomicU64::new(0);
    g.bench_function("clock_plus_cas", |b| {
        b.iter(|| {
            let now = WallClock.now_ns();
            let last = cell.load(Ordering::Relaxed);
            let _ = black_box(cell.compare_exchange_weak(
                last,
                now.max(last + 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ));
        })
    });
    g.bench_function("uuid_now_v7", |b| {
        b.iter(|| black_box(uuid::Uuid::now_v7()))
    });
    g.bench_function("uuid_new_v4", |b| {
        b.iter(|| black_box(uuid::Uuid::new_v4()))
    });
    let mut ulid = ulid::Generator::new();
    g.bench_function("ulid_generator", |b| {
        b.iter(|| black_box(ulid.generate().unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("threads2");
    g.throughput(Throughput::Elements(1));
    g.bench_function("uuid_now_v7", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                black_box(uuid::Uuid::now_v7());
            })
        })
    });
    let shared_ulid = Mutex::new(ulid::Generator::new());
    g.bench_function("ulid_generator_mutex", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                black_box(shared_ulid.lock().unwrap().generate().unwrap());
            })
        })
    });
    g.finish();
}

fn schemes(c: &mut Criterion) {
    let mut g = c.benchmark_group("next");
    g.throughput(Throughput::Elements(1));
    let uuid7_default = Generator::new(&Scheme::Uuid7, None).unwrap();
    g.bench_function("uuid7_default_policy", |b| {
        b.iter(|| black_box(uuid7_default.next().unwrap()))
    });
    // The default random bits are ChaCha12; the opt-in fast source is xoshiro.
    let uuid7_fast = Generator::new(&Scheme::Uuid7, None)
        .unwrap()
        .with_random(idforge::RandomSource::Fast);
    g.bench_function("uuid7_default_policy_fast_random", |b| {
        b.iter(|| black_box(uuid7_fast.next().unwrap()))
    });
    for scheme in Scheme::PRESETS
        .iter()
        .filter(|s| **s != Scheme::UProtocolV8)
    {
        let gen = generator(scheme);
        g.bench_function(scheme.name(), |b| b.iter(|| black_box(gen.next().unwrap())));
    }
    g.finish();

    // The same generators with their stamp in a state file shared by the processes of the host.
    let mut g = c.benchmark_group("next_host_wide");
    g.throughput(Throughput::Elements(1));
    for scheme in [Scheme::NanoTs, Scheme::Uuid7, Scheme::Snowflake] {
        let path = std::env::temp_dir().join(format!(
            "idforge-bench-{}-{}.state",
            scheme.name(),
            std::process::id()
        ));
        let node = scheme.needs_node().then_some(1);
        let gen = Generator::host_wide(
            &scheme,
            node,
            WallClock,
            RUN_AHEAD,
            &StateOptions::new(&path),
        )
        .unwrap();
        g.bench_function(scheme.name(), |b| b.iter(|| black_box(gen.next().unwrap())));
        let _ = std::fs::remove_file(&path);
    }
    g.finish();

    let mut g = c.benchmark_group("fill64");
    g.throughput(Throughput::Elements(64));
    for scheme in [Scheme::Uuid7, Scheme::Snowflake, Scheme::GlobalId] {
        let gen = generator(&scheme);
        let mut buf = [0u128; 64];
        g.bench_function(scheme.name(), |b| {
            b.iter(|| {
                gen.fill(&mut buf).unwrap();
                black_box(&buf);
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("reserve64");
    g.throughput(Throughput::Elements(64));
    for scheme in [Scheme::Uuid7, Scheme::Snowflake, Scheme::GlobalId] {
        let gen = generator(&scheme);
        g.bench_function(scheme.name(), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    for id in gen.reserve(64).unwrap() {
                        black_box(id);
                    }
                }
                start.elapsed()
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("threads2");
    g.throughput(Throughput::Elements(1));
    let shared = Generator::new(&Scheme::Uuid7, None).unwrap();
    g.bench_function("uuid7_default_policy", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                black_box(shared.next().unwrap());
            })
        })
    });
    for scheme in [Scheme::Snowflake, Scheme::GlobalId] {
        let gen = generator(&scheme);
        g.bench_function(scheme.name(), |b| {
            b.iter_custom(|iters| {
                two_threads(iters, &|| {
                    black_box(gen.next().unwrap());
                })
            })
        });
    }
    let batched = generator(&Scheme::Uuid7);
    g.bench_function("uuid7_reserve64", |b| {
        b.iter_custom(|iters| {
            // iters ids in all: iters / 64 batches over the two threads.
            two_threads(iters / 64 + 1, &|| {
                for id in batched.reserve(64).unwrap() {
                    black_box(id);
                }
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = baselines, schemes
}
criterion_main!(benches);
