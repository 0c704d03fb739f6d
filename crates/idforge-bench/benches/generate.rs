//! Generation cost, next to baselines and peers measured in the same run.
//!
//! Floors:
//!
//! * `baseline/wall_clock`: one wall-clock read (`WallClock::now_ns`);
//! * `baseline/clock_plus_cas`: one wall-clock read plus one uncontended compare-and-swap, the
//!   floor for any sequencer-based generator.
//!
//! Peers, single thread in `baseline/*`, two threads in `threads2/*` (time per id of the total
//! throughput):
//!
//! * `uuid` (features `v4`, `v7`, `fast-rng`): `uuid_now_v7_fast_rng` (`Uuid::now_v7`) and
//!   `uuid_new_v4_fast_rng` (`Uuid::new_v4`, single thread only), both drawing their random bits
//!   from `rand`'s thread-local generator, as `fast-rng` makes them do;
//! * `uuid_v7_getrandom`: what `Uuid::now_v7` costs without `fast-rng`, as a build of `uuid` with
//!   only `v7` gets it: one `getrandom` call (a system call on Linux) for the random bits of
//!   every id. Features are unified across a build, so that `now_v7` cannot be called here:
//!   `common::uuid_v7_getrandom` repeats its steps through `uuid`'s public API (`ContextV7`
//!   behind a static mutex, locked twice as `Timestamp::now` does, `getrandom::fill`, the counter
//!   placed as `new_v7` places it, `Builder`). It differs in one respect: the counter's reseed,
//!   once per millisecond, draws from `rand`, not `getrandom`;
//! * `ulid` (no features): `ulid_generator` (`ulid::Generator`, `&mut`, single thread) and
//!   `ulid_generator_mutex` (one `Mutex<Generator>`, two threads);
//! * `ferroid` 2 (features `std`, `alloc`, `snowflake`, `ulid`, `atomic`, `lock`, `thread-local`,
//!   plus `cache-padded` and `parking-lot`, with which ferroid's own benchmarks are run), every
//!   generator on its default clock, `MonotonicClock` (1 ms ticks, read from an atomic that a
//!   background thread advances every millisecond: no clock read on the caller's side), and
//!   `ThreadRandom` (`rand`'s thread-local generator) for random bits. A `Pending` result (tick
//!   exhausted, lost CAS, clock behind) is retried after `std::hint::spin_loop()`, so every
//!   figure is the time per id actually issued:
//!   * `ferroid_atomic_snowflake`: `AtomicSnowflakeGenerator<SnowflakeTwitterId, _>` (41-bit
//!     millisecond timestamp from `TWITTER_EPOCH`, 10-bit machine id, 12-bit sequence), one
//!     generator shared by both threads in `threads2`. 4,096 ids per millisecond is its capacity:
//!     past it, the generator waits for the next tick, so this figure is bounded below by
//!     1 ms / 4,096 = 244 ns per id; compare it with `snowflake_default_policy`, idforge's
//!     Snowflake under its default policy, which also waits for the next tick (yielding or
//!     sleeping rather than spinning);
//!   * `ferroid_atomic_snowflake_seq22`: the same generator on a layout with the machine id's
//!     bits given to the sequence (1 reserved, 41 timestamp, 22 sequence bits: 4,194,304 ids per
//!     millisecond), so that it never runs out within a tick: the cost of a call, to compare with
//!     idforge's run-ahead `next/snowflake`;
//!   * `ferroid_lock_mono_ulid`: `LockMonoUlidGenerator<ULID, _, ThreadRandom>` (monotonic ULIDs
//!     behind a `parking_lot` mutex), one generator shared by both threads in `threads2`;
//!   * `ferroid_thread_local_mono_ulid`: `ferroid::generator::thread_local::Ulid::new_ulid_mono`,
//!     monotonic ULIDs from a generator per thread: in `threads2` each thread uses its own, so
//!     the figure is the throughput of two independent generators, not of a shared one.
//!
//! Per scheme: `next/*` (one id, on the default clock: the calibrated counter for millisecond
//! layouts; `*_precise_clock` on CLOCK_REALTIME), `blocks/*` (per-thread block mode,
//! `Generator::blocks(64)`), `reserve64/*` (ids from `reserve(64)`, reported per id), and
//! `threads2/*` (two threads on one shared generator, time per id of the total throughput;
//! `*_blocks64`: each thread its own `Blocks` on the shared generator).
//!
//! `threads2/nanots_counter` and `threads2/nanots_default_policy`: `nanots` on its own policy
//! (1 ms of lead), so bounded by its capacity (32 ns per id), on the counter clock and on its
//! default clock (CLOCK_REALTIME).
//!
//! `*_ticker`: the same on `TickerClock` (`--clock ticker`), a value a thread refreshes every
//! 100 µs, the kind of clock ferroid reads.
//!
//! Floors: `baseline/fast_clock` (one read of the calibrated counter, `SystemClock::fast`) and
//! `baseline/fast_clock_plus_cas`, next to the CLOCK_REALTIME ones.
//!
//! Layouts with small per-tick capacity (Snowflake: 4,096 per ms; GlobalId: 128) would spend the
//! benchmark waiting for the next tick, measuring their capacity rather than the cost of a call.
//! The per-scheme benches therefore run with `OnExhausted::RunAhead` and an unbounded lead: every
//! call still reads the clock and performs the CAS. `uuid7` (65,536 per ms) is also measured with
//! its default policy, and so is `snowflake` (`snowflake_default_policy`), which then waits for
//! the next tick at exhaustion as `ferroid_atomic_snowflake` does.
//!
//! Run: `cargo bench -p idforge-bench --bench generate` (ratios: `scripts/bench-ratios`; chart
//! and table: `scripts/bench-chart`).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod common;
use common::{sink, two_threads, two_threads_each, uuid_v7_getrandom};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ferroid::generator::thread_local::Ulid as ThreadLocalUlid;
use ferroid::generator::{AtomicSnowflakeGenerator, LockMonoUlidGenerator};
use ferroid::id::{SnowflakeId, SnowflakeTwitterId, ULID};
use ferroid::rand::ThreadRandom;
use ferroid::time::{MonotonicClock, TWITTER_EPOCH, UNIX_EPOCH};
use idforge::ticker::TickerClock;
use idforge::{
    Clock, Generator, OnClockBehind, OnExhausted, Policy, Scheme, StateOptions, SystemClock,
    WallClock,
};

const RUN_AHEAD: Policy = Policy {
    on_exhausted: OnExhausted::RunAhead,
    max_lead: Duration::MAX,
    on_clock_behind: OnClockBehind::Fail,
};

/// A run-ahead generator on the default clock (`SystemClock::for_tick`: the calibrated counter
/// for millisecond layouts, CLOCK_REALTIME for nanots).
fn generator(scheme: &Scheme) -> Generator {
    let node = scheme.needs_node().then_some(1);
    let clock = SystemClock::for_tick(scheme.layout().timebase().tick_ns);
    Generator::with_clock(scheme, node, clock, RUN_AHEAD).unwrap()
}

/// The same on the ticker clock (`--clock ticker`: a value refreshed every 100 µs, as ferroid's
/// clock is).
fn generator_ticker(scheme: &Scheme) -> Generator<TickerClock> {
    let node = scheme.needs_node().then_some(1);
    Generator::with_clock(scheme, node, TickerClock::start().unwrap(), RUN_AHEAD).unwrap()
}

/// The same on CLOCK_REALTIME for every id (`--clock precise`).
fn generator_precise(scheme: &Scheme) -> Generator<WallClock> {
    let node = scheme.needs_node().then_some(1);
    Generator::with_clock(scheme, node, WallClock, RUN_AHEAD).unwrap()
}

ferroid::define_snowflake_id!(
    /// Twitter's layout with the machine id's 10 bits given to the sequence (22 bits): a
    /// generator that does not run out of sequence within a millisecond.
    Seq22Snowflake, u64,
    reserved: 1,
    timestamp: 41,
    machine_id: 0,
    sequence: 22
);

type FerroidSnowflake<Id> = AtomicSnowflakeGenerator<Id, MonotonicClock>;
type FerroidUlid = LockMonoUlidGenerator<ULID, MonotonicClock, ThreadRandom>;

/// What ferroid's generators are told to do on `Pending`: spin, then poll again.
fn spin<T>(_yield_for: T) {
    std::hint::spin_loop();
}

fn new_ferroid_snowflake<Id: SnowflakeId<Ty = u64>>() -> FerroidSnowflake<Id> {
    AtomicSnowflakeGenerator::new(1, MonotonicClock::with_epoch(TWITTER_EPOCH))
}

fn new_ferroid_ulid() -> FerroidUlid {
    LockMonoUlidGenerator::new(MonotonicClock::with_epoch(UNIX_EPOCH), ThreadRandom)
}

/// Two threads calling `f` (on one shared generator), as the time per call of their total.
fn shared2<F: Fn() + Sync>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, f: &F) {
    g.bench_function(name, |b| b.iter_custom(|iters| two_threads(iters, f)));
}

/// The floor of a sequencer: one clock read and one uncontended CAS.
#[inline(always)]
fn clock_plus_cas(clock: &impl Clock, cell: &AtomicU64) {
    let now = clock.now_ns();
    let last = cell.load(Ordering::Relaxed);
    let _ = black_box(cell.compare_exchange_weak(
        last,
        now.max(last + 1),
        Ordering::Relaxed,
        Ordering::Relaxed,
    ));
}

fn baselines(c: &mut Criterion) {
    let mut g = c.benchmark_group("baseline");
    g.throughput(Throughput::Elements(1));
    g.bench_function("wall_clock", |b| b.iter(|| black_box(WallClock.now_ns())));
    let fast = SystemClock::fast();
    g.bench_function("fast_clock", |b| b.iter(|| black_box(fast.now_ns())));
    let cell = AtomicU64::new(0);
    g.bench_function("fast_clock_plus_cas", |b| {
        b.iter(|| clock_plus_cas(&fast, &cell))
    });
    g.bench_function("clock_plus_cas", |b| {
        b.iter(|| clock_plus_cas(&WallClock, &cell))
    });
    g.bench_function("uuid_now_v7_fast_rng", |b| {
        b.iter(|| sink(uuid::Uuid::now_v7().as_u128()))
    });
    g.bench_function("uuid_v7_getrandom", |b| {
        b.iter(|| sink(uuid_v7_getrandom().as_u128()))
    });
    g.bench_function("uuid_new_v4_fast_rng", |b| {
        b.iter(|| sink(uuid::Uuid::new_v4().as_u128()))
    });
    let mut ulid = ulid::Generator::new();
    g.bench_function("ulid_generator", |b| {
        b.iter(|| sink(ulid.generate().unwrap().0))
    });
    let snowflake = new_ferroid_snowflake::<SnowflakeTwitterId>();
    g.bench_function("ferroid_atomic_snowflake", |b| {
        b.iter(|| sink(snowflake.next_id(spin).to_raw().into()))
    });
    let snowflake22 = new_ferroid_snowflake::<Seq22Snowflake>();
    g.bench_function("ferroid_atomic_snowflake_seq22", |b| {
        b.iter(|| sink(snowflake22.next_id(spin).to_raw().into()))
    });
    let ferroid_ulid = new_ferroid_ulid();
    g.bench_function("ferroid_lock_mono_ulid", |b| {
        b.iter(|| sink(ferroid_ulid.next_id(spin).to_raw()))
    });
    g.bench_function("ferroid_thread_local_mono_ulid", |b| {
        b.iter(|| sink(ThreadLocalUlid::new_ulid_mono(spin).to_raw()))
    });
    g.finish();

    let mut g = c.benchmark_group("threads2");
    g.throughput(Throughput::Elements(1));
    shared2(&mut g, "uuid_now_v7_fast_rng", &|| {
        sink(uuid::Uuid::now_v7().as_u128());
    });
    shared2(&mut g, "uuid_v7_getrandom", &|| {
        sink(uuid_v7_getrandom().as_u128());
    });
    let shared_ulid = Mutex::new(ulid::Generator::new());
    shared2(&mut g, "ulid_generator_mutex", &|| {
        sink(shared_ulid.lock().unwrap().generate().unwrap().0);
    });
    let snowflake = new_ferroid_snowflake::<SnowflakeTwitterId>();
    shared2(&mut g, "ferroid_atomic_snowflake", &|| {
        sink(snowflake.next_id(spin).to_raw().into());
    });
    let snowflake22 = new_ferroid_snowflake::<Seq22Snowflake>();
    shared2(&mut g, "ferroid_atomic_snowflake_seq22", &|| {
        sink(snowflake22.next_id(spin).to_raw().into());
    });
    let ferroid_ulid = new_ferroid_ulid();
    shared2(&mut g, "ferroid_lock_mono_ulid", &|| {
        sink(ferroid_ulid.next_id(spin).to_raw());
    });
    // Not one shared generator: each thread draws from its own thread-local one.
    shared2(&mut g, "ferroid_thread_local_mono_ulid", &|| {
        sink(ThreadLocalUlid::new_ulid_mono(spin).to_raw());
    });
    g.finish();
}

fn schemes(c: &mut Criterion) {
    let mut g = c.benchmark_group("next");
    g.throughput(Throughput::Elements(1));
    let uuid7_default = Generator::new(&Scheme::Uuid7, None).unwrap();
    g.bench_function("uuid7_default_policy", |b| {
        b.iter(|| sink(uuid7_default.next().unwrap()))
    });
    // The default random bits are ChaCha12; the opt-in fast source is xoshiro.
    let uuid7_fast = Generator::new(&Scheme::Uuid7, None)
        .unwrap()
        .with_random(idforge::RandomSource::Fast);
    g.bench_function("uuid7_default_policy_fast_random", |b| {
        b.iter(|| sink(uuid7_fast.next().unwrap()))
    });
    // Waits for the next tick at exhaustion (4,096 ids per ms), as ferroid's Snowflake does.
    let snowflake_default = Generator::new(&Scheme::Snowflake, Some(1)).unwrap();
    g.bench_function("snowflake_default_policy", |b| {
        b.iter(|| sink(snowflake_default.next().unwrap()))
    });
    for scheme in Scheme::PRESETS
        .iter()
        .filter(|s| **s != Scheme::UProtocolV8)
    {
        let gen = generator(scheme);
        g.bench_function(scheme.name(), |b| b.iter(|| sink(gen.next().unwrap())));
    }
    // CLOCK_REALTIME for every id (`--precise-clock`): what the default was before the counter.
    let uuid7_precise =
        Generator::with_clock(&Scheme::Uuid7, None, WallClock, Policy::DEFAULT).unwrap();
    g.bench_function("uuid7_default_policy_precise_clock", |b| {
        b.iter(|| sink(uuid7_precise.next().unwrap()))
    });
    let snowflake_precise = generator_precise(&Scheme::Snowflake);
    g.bench_function("snowflake_precise_clock", |b| {
        b.iter(|| sink(snowflake_precise.next().unwrap()))
    });
    let uuid7_ticker = Generator::with_clock(
        &Scheme::Uuid7,
        None,
        TickerClock::start().unwrap(),
        Policy::DEFAULT,
    )
    .unwrap();
    g.bench_function("uuid7_default_policy_ticker", |b| {
        b.iter(|| sink(uuid7_ticker.next().unwrap()))
    });
    let snowflake_ticker = generator_ticker(&Scheme::Snowflake);
    g.bench_function("snowflake_ticker", |b| {
        b.iter(|| sink(snowflake_ticker.next().unwrap()))
    });
    g.finish();

    // Per-thread block mode (`Generator::blocks(64)`): one CAS per 64 ids, a clock read per id.
    let mut g = c.benchmark_group("blocks");
    g.throughput(Throughput::Elements(1));
    let uuid7_blocks = Generator::new(&Scheme::Uuid7, None).unwrap();
    g.bench_function("uuid7_default_policy", |b| {
        let mut ids = uuid7_blocks.blocks(64);
        b.iter(|| sink(ids.next().unwrap()))
    });
    let snowflake_blocks = generator(&Scheme::Snowflake);
    g.bench_function("snowflake", |b| {
        let mut ids = snowflake_blocks.blocks(64);
        b.iter(|| sink(ids.next().unwrap()))
    });
    let uuid7_blocks_ticker = Generator::with_clock(
        &Scheme::Uuid7,
        None,
        TickerClock::start().unwrap(),
        Policy::DEFAULT,
    )
    .unwrap();
    g.bench_function("uuid7_default_policy_ticker", |b| {
        let mut ids = uuid7_blocks_ticker.blocks(64);
        b.iter(|| sink(ids.next().unwrap()))
    });
    let snowflake_blocks_ticker = generator_ticker(&Scheme::Snowflake);
    g.bench_function("snowflake_ticker", |b| {
        let mut ids = snowflake_blocks_ticker.blocks(64);
        b.iter(|| sink(ids.next().unwrap()))
    });
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
        g.bench_function(scheme.name(), |b| b.iter(|| sink(gen.next().unwrap())));
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
                        sink(id);
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
    shared2(&mut g, "uuid7_default_policy", &|| {
        sink(shared.next().unwrap());
    });
    let snowflake_default = Generator::new(&Scheme::Snowflake, Some(1)).unwrap();
    shared2(&mut g, "snowflake_default_policy", &|| {
        sink(snowflake_default.next().unwrap());
    });
    for scheme in [Scheme::Snowflake, Scheme::GlobalId] {
        let gen = generator(&scheme);
        shared2(&mut g, scheme.name(), &|| {
            sink(gen.next().unwrap());
        });
    }
    let uuid7_precise =
        Generator::with_clock(&Scheme::Uuid7, None, WallClock, Policy::DEFAULT).unwrap();
    shared2(&mut g, "uuid7_default_policy_precise_clock", &|| {
        sink(uuid7_precise.next().unwrap());
    });
    // Per-thread block mode: each thread its own `Blocks` on one shared generator.
    let uuid7_blocks = Generator::new(&Scheme::Uuid7, None).unwrap();
    g.bench_function("uuid7_blocks64", |b| {
        b.iter_custom(|iters| {
            two_threads_each(iters, &|| uuid7_blocks.blocks(64), &|ids| {
                sink(ids.next().unwrap());
            })
        })
    });
    let snowflake_blocks = generator(&Scheme::Snowflake);
    g.bench_function("snowflake_blocks64", |b| {
        b.iter_custom(|iters| {
            two_threads_each(iters, &|| snowflake_blocks.blocks(64), &|ids| {
                sink(ids.next().unwrap());
            })
        })
    });
    // nanots on its default policy (1 ms of lead) with two threads: bounded by its capacity,
    // 32 ns per id, on the counter clock (`--clock counter`) and on its default, CLOCK_REALTIME.
    let nanots_policy = Scheme::NanoTs.default_policy();
    let nanots_counter =
        Generator::with_clock(&Scheme::NanoTs, None, SystemClock::fast(), nanots_policy).unwrap();
    shared2(&mut g, "nanots_counter", &|| {
        sink(nanots_counter.next().unwrap());
    });
    let nanots_default = Generator::new(&Scheme::NanoTs, None).unwrap();
    shared2(&mut g, "nanots_default_policy", &|| {
        sink(nanots_default.next().unwrap());
    });
    let snowflake_ticker = generator_ticker(&Scheme::Snowflake);
    shared2(&mut g, "snowflake_ticker", &|| {
        sink(snowflake_ticker.next().unwrap());
    });
    g.bench_function("snowflake_blocks64_ticker", |b| {
        b.iter_custom(|iters| {
            two_threads_each(iters, &|| snowflake_ticker.blocks(64), &|ids| {
                sink(ids.next().unwrap());
            })
        })
    });
    let batched = generator(&Scheme::Uuid7);
    g.bench_function("uuid7_reserve64", |b| {
        b.iter_custom(|iters| {
            // iters ids in all: iters / 64 batches over the two threads.
            two_threads(iters / 64 + 1, &|| {
                for id in batched.reserve(64).unwrap() {
                    sink(id);
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
