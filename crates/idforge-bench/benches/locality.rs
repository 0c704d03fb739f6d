//! Cost of a Locality UUID, next to `uuid::Uuid::now_v7()` measured in the same run:
//!
//! * `locality/next`: one id from a wall-clock generator in variable mode (one relaxed load, one
//!   `fetch_add`, one clock read);
//! * `locality/next_sequential`: the same in sequential mode;
//! * `locality/threads2`: two threads on one shared generator, time per id of the total
//!   throughput (the `fetch_add` contends on one cache line);
//! * `locality/uuid_now_v7`, `locality/uuid_now_v7_threads2`: the `uuid` crate's UUIDv7, the same
//!   two ways.
//!
//! Run: `cargo bench -p idforge-bench --bench locality`

use std::hint::black_box;

mod common;
use common::two_threads;

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
    g.bench_function("next", |b| b.iter(|| black_box(variable.next())));

    let sequential = LocalityGenerator::builder()
        .pid(1)
        .mac_fragment(1)
        .sequential(true)
        .build()
        .unwrap();
    g.bench_function("next_sequential", |b| {
        b.iter(|| black_box(sequential.next()))
    });

    g.bench_function("threads2", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                black_box(variable.next());
            })
        })
    });

    g.bench_function("uuid_now_v7", |b| {
        b.iter(|| black_box(uuid::Uuid::now_v7()))
    });
    g.bench_function("uuid_now_v7_threads2", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, &|| {
                black_box(uuid::Uuid::now_v7());
            })
        })
    });
    g.finish();
}

criterion_group!(benches, locality);
criterion_main!(benches);
