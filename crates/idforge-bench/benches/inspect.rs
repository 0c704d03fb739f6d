//! Decoding: `idforge::inspect::Inspector` (what `idforge inspect` runs for each line) on 4,096
//! ids of every scheme in its default text, as a text line and as a JSON object, next to
//! `uuid::Uuid::parse_str` (parsing alone, no output) measured in the same run as the baseline.
//! Throughput is in ids: criterion's `elem/s` is the decode rate on one core.
//!
//! Run: `cargo bench -p idforge-bench --bench inspect` (`-- --quick` for a short run).

/// Keeps a value alive for the optimiser (the shared `common` helpers are for generation).
fn sink(n: u128) {
    std::hint::black_box(n);
}

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idforge::inspect::Inspector;
use idforge::schemes::catalog::{Kind, NAMES};
use idforge::schemes::open::{OpenOptions, Opened};

const IDS: usize = 4096;

fn ids_of(name: &str) -> (Kind, Vec<String>) {
    let layout = (name == "custom")
        .then_some("time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z");
    let kind = Kind::from_name(name, layout).unwrap();
    let mut opts = OpenOptions::default();
    if matches!(name, "nanots-host") {
        opts.node = Some(3);
    }
    let opened = Opened::open(&kind, &opts)
        .or_else(|_| {
            opts.node = Some(3);
            Opened::open(&kind, &opts)
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let format = opened.text_format(None).unwrap();
    let mut out = Vec::with_capacity(IDS);
    opened
        .take(IDS as u64, |id| out.push(opened.render(id, format)))
        .unwrap();
    (kind, out)
}

fn inspect(c: &mut Criterion) {
    let mut g = c.benchmark_group("inspect");
    g.throughput(Throughput::Elements(IDS as u64));
    for name in NAMES {
        if name == "uprotocol-v8" {
            // A process-wide singleton: made once per process, not per benchmark.
            continue;
        }
        let (kind, ids) = ids_of(name);
        for json in [false, true] {
            let mut ins = Inspector::new(Some(kind.clone()), None, None).unwrap();
            let mut line = Vec::with_capacity(512);
            let label = format!("{name}/{}", if json { "json" } else { "text" });
            g.bench_function(label, |b| {
                b.iter(|| {
                    for id in &ids {
                        line.clear();
                        ins.write(id, json, &mut line).unwrap();
                        sink(line.len() as u128);
                    }
                })
            });
        }
    }
    // No scheme named: UUIDs recognised by their version (the uuid7 ids: version 7, the hint).
    let (_, v7) = ids_of("uuid7");
    let mut ins = Inspector::new(None, None, None).unwrap();
    let mut line = Vec::with_capacity(512);
    g.bench_function("any-uuid7/text", |b| {
        b.iter(|| {
            for id in &v7 {
                line.clear();
                ins.write(id, false, &mut line).unwrap();
                sink(line.len() as u128);
            }
        })
    });
    g.bench_function("baseline/uuid_parse_str", |b| {
        b.iter(|| {
            for id in &v7 {
                sink(uuid::Uuid::parse_str(id).unwrap().as_u128());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, inspect);
criterion_main!(benches);
