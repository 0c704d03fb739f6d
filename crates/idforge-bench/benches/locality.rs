//! Cost of a Locality UUID, next to `uuid::Uuid::now_v7()` measured in the same run:
//!
//! * `locality/next`: one id from a wall-clock generator in variable mode (a thread alone takes
//!   one position per id with a `fetch_add` of the shared word, which gives the position and the
//!   mode together; one clock read);
//! * `locality/next_sequential`: the same in sequential mode;
//! * `locality/threads2`: two threads on one shared generator (each then takes blocks of
//!   positions), time per id of the total throughput;
//! * `locality/add_per_id`, `locality/add_per_id_threads2`: the step before blocks, in the same
//!   run: one `fetch_add` of one shared word per id, the same clock read and id assembly;
//! * `locality/word_per_id`, `locality/word_per_id_threads2`: the step before that: a relaxed
//!   load (to choose the step from the mode) and a `fetch_add` of one shared word per id;
//! * `locality/uuid_now_v7_fast_rng`, `locality/uuid_now_v7_fast_rng_threads2`: the `uuid` crate's
//!   UUIDv7, the same two ways, with `uuid`'s `fast-rng` feature (random bits from `rand`'s
//!   thread-local generator);
//! * `locality/uuid_v7_getrandom`, `locality/uuid_v7_getrandom_threads2`: `now_v7` as `uuid`
//!   builds it without `fast-rng` (a `getrandom` call per id), emulated through `uuid`'s public API
//!   by `common::uuid_v7_getrandom` (see there).
//!
//! Run: `cargo bench -p idforge-bench --bench locality`

mod common;
use common::{sink, two_threads, uuid_v7_getrandom};

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idforge::schemes::locality::{reverse_nibbles, LocalityGenerator, PRIME};
use idforge::{Clock, SystemClock};

/// A shared word on a cache line of its own.
#[repr(align(128))]
struct Word(AtomicU64);

/// An id as the generator made it with one shared word per id: read the mode to choose the step,
/// `fetch_add` it, read the clock, assemble (pid and MAC fragment 1, as the benches' generator).
#[inline(always)]
fn word_per_id(word: &AtomicU64, clock: &SystemClock) -> u128 {
    let seen = word.load(Ordering::Relaxed);
    let step = if seen & 1 == 0 { PRIME } else { 1 };
    let before = word.fetch_add(u64::from(step) << 32, Ordering::Relaxed);
    let counter = ((before >> 32) as u32).wrapping_add(step);
    let unix_ms = clock.now_ns() / 1_000_000;
    (u128::from(reverse_nibbles(counter)) << 96)
        | (1 << 80)
        | (0xb << 76)
        | (1 << 48)
        | u128::from(unix_ms & ((1 << 48) - 1))
}

/// An id as the generator made it with one `fetch_add` per id (position and mode together; the
/// counter is the position times PRIME), the same clock read and assembly.
#[inline(always)]
fn add_per_id(word: &AtomicU64, clock: &SystemClock) -> u128 {
    let before = word.fetch_add(1 << 32, Ordering::Relaxed);
    let counter = ((before >> 32) as u32).wrapping_add(1).wrapping_mul(PRIME);
    let unix_ms = clock.now_ns() / 1_000_000;
    (u128::from(reverse_nibbles(counter)) << 96)
        | (1 << 80)
        | (0xb << 76)
        | (1 << 48)
        | u128::from(unix_ms & ((1 << 48) - 1))
}

fn locality(c: &mut Criterion) {
    let mut g = c.benchmark_group("locality");
    g.throughput(Throughput::Elements(1));

    let variable = LocalityGenerator::builder()
        .pid(1)
        .mac_fragment(1)
        .build()
        .unwrap();
    g.bench_function("next", |b| b.iter(|| sink(variable.next().as_u128())));

    let sequential = LocalityGenerator::builder()
        .pid(1)
        .mac_fragment(1)
        .sequential(true)
        .build()
        .unwrap();
    g.bench_function("next_sequential", |b| {
        b.iter(|| sink(sequential.next().as_u128()))
    });

    g.bench_function("threads2", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                sink(variable.next().as_u128());
            })
        })
    });

    let word = Word(AtomicU64::new(0));
    let clock = SystemClock::fast();
    g.bench_function("add_per_id", |b| {
        b.iter(|| sink(add_per_id(&word.0, &clock)))
    });
    g.bench_function("add_per_id_threads2", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                sink(add_per_id(&word.0, &clock));
            })
        })
    });
    g.bench_function("word_per_id", |b| {
        b.iter(|| sink(word_per_id(&word.0, &clock)))
    });
    g.bench_function("word_per_id_threads2", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                sink(word_per_id(&word.0, &clock));
            })
        })
    });

    g.bench_function("uuid_now_v7_fast_rng", |b| {
        b.iter(|| sink(uuid::Uuid::now_v7().as_u128()))
    });
    g.bench_function("uuid_now_v7_fast_rng_threads2", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                sink(uuid::Uuid::now_v7().as_u128());
            })
        })
    });
    g.bench_function("uuid_v7_getrandom", |b| {
        b.iter(|| sink(uuid_v7_getrandom().as_u128()))
    });
    g.bench_function("uuid_v7_getrandom_threads2", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                sink(uuid_v7_getrandom().as_u128());
            })
        })
    });
    g.finish();
}

criterion_group!(benches, locality);
criterion_main!(benches);
