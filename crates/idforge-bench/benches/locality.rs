//! Cost of a Locality UUID, next to `uuid::Uuid::now_v7()` measured in the same run:
//!
//! * `locality/next`: one id from a wall-clock generator in variable mode (one relaxed load, one
//!   `fetch_add`, one clock read);
//! * `locality/next_sequential`: the same in sequential mode;
//! * `locality/threads2`: two threads on one shared generator, time per id of the total
//!   throughput (the `fetch_add` contends on one cache line);
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

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idforge::schemes::locality::LocalityGenerator;

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
