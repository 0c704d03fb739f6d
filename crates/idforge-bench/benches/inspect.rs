//! Decoding: `idforge::inspect::Inspector` (what `idforge inspect` runs for each line) on 4,096
//! ids of every scheme in its default text, of two schemes in another format (decimal, hex),
//! and of every kind of id read without a scheme (UUIDs of each version, nil and max, Locality
//! UUIDs, KSUID and TypeID text), each as a text line and as a JSON object, next to
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
use idforge::text::{self, Format};

const IDS: usize = 4096;

/// 2024-01-01T00:00:00Z in 100 ns ticks since 1582-10-15 (UUID versions 1 and 6).
const GREGORIAN_2024: u64 = idforge::inspect::GREGORIAN_TO_UNIX_100NS + 1_704_067_200 * 10_000_000;

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

/// Runs `ids` through an inspector of `kind` (or none) as text and as JSON, one benchmark each.
fn rows(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    label: &str,
    kind: Option<Kind>,
    format: Option<Format>,
    ids: &[String],
) {
    for json in [false, true] {
        let mut ins = Inspector::new(kind.clone(), format, None).unwrap();
        let mut line = Vec::with_capacity(512);
        // Every id must decode: a benchmark of error paths would measure the wrong thing.
        for id in ids {
            line.clear();
            ins.write(id, json, &mut line)
                .unwrap_or_else(|e| panic!("{label}: {id}: {e}"));
        }
        let name = format!("{label}/{}", if json { "json" } else { "text" });
        g.bench_function(name, |b| {
            b.iter(|| {
                for id in ids {
                    line.clear();
                    ins.write(id, json, &mut line).unwrap();
                    sink(line.len() as u128);
                }
            })
        });
    }
}

/// `IDS` UUIDs of `version` (RFC 9562's variant) with bits from a fixed xorshift sequence.
fn uuids_of_version(version: u128) -> Vec<String> {
    let mut x = 0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C834u128;
    (0..IDS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x & !(0xF << 76) & !(0b11 << 62)) | (version << 76) | (0b10 << 62);
            text::encode(v, 128, Format::Uuid).to_string()
        })
        .collect()
}

fn inspect(c: &mut Criterion) {
    let mut g = c.benchmark_group("inspect");
    g.throughput(Throughput::Elements(IDS as u64));
    // Every scheme named, its ids in their default text.
    for name in NAMES {
        let (kind, ids) = ids_of(name);
        rows(&mut g, name, Some(kind), None, &ids);
    }
    // Layout schemes' ids given in another format than their default (decimal, hex).
    for (name, format) in [("uuid7", Format::Dec), ("snowflake", Format::Hex)] {
        let (kind, ids) = ids_of(name);
        let layout = idforge::Scheme::from_name(name).unwrap().layout();
        let shown = ids
            .iter()
            .map(|id| {
                let v = idforge::inspect::inspect_as(id, Some(&kind), None, None)
                    .unwrap()
                    .value;
                text::encode(v, layout.bits, format).to_string()
            })
            .collect::<Vec<_>>();
        rows(
            &mut g,
            &format!("{name}-as-{}", format.name()),
            Some(kind),
            Some(format),
            &shown,
        );
    }
    // No scheme named: ids whose text says what they are.
    for name in ["uuid7", "locality", "ksuid", "typeid"] {
        let (_, mut ids) = ids_of(name);
        if name == "typeid" {
            // A bare suffix reads as a ULID: TypeID text says what it is by its prefix.
            ids = ids.iter().map(|id| format!("user_{id}")).collect();
        }
        rows(&mut g, &format!("any-{name}"), None, None, &ids);
    }
    // Versions 1 and 6 as a generator writes them: times 1 µs apart from 2024-01-01.
    for (label, version) in [("any-uuid-v1", 1u8), ("any-uuid-v6", 6)] {
        let ids = uuids_of_version(u128::from(version))
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let ticks = GREGORIAN_2024 + 10 * i as u64;
                let v = uuid::Uuid::parse_str(id).unwrap().as_u128();
                let time = if version == 1 {
                    // time_low | time_mid | ver | time_high
                    u128::from(ticks & 0xFFFF_FFFF) << 96
                        | u128::from((ticks >> 32) & 0xFFFF) << 80
                        | u128::from(ticks >> 48) << 64
                } else {
                    // time_high | time_mid | ver | time_low
                    u128::from(ticks >> 12) << 80 | u128::from(ticks & 0xFFF) << 64
                };
                let v = (v & !(0xFFFF_FFFF_FFFF_0FFFu128 << 64)) | time;
                text::encode(v, 128, Format::Uuid).to_string()
            })
            .collect::<Vec<_>>();
        rows(&mut g, label, None, None, &ids);
    }
    for (label, version) in [("any-uuid-v4", 4), ("any-uuid-v8", 8)] {
        rows(&mut g, label, None, None, &uuids_of_version(version));
    }
    let edges = (0..IDS)
        .map(|i| {
            text::encode(if i % 2 == 0 { 0 } else { u128::MAX }, 128, Format::Uuid).to_string()
        })
        .collect::<Vec<_>>();
    rows(&mut g, "any-uuid-nil-max", None, None, &edges);
    // The baseline, in the same run: parsing alone, no output.
    let (_, v7) = ids_of("uuid7");
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
