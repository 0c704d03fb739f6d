//! Every id format next to its most used Rust crate, in one criterion run: per id, to the typed
//! value (`*_value`) and to text (`*_text`, a `String` per id on both sides), each with fresh
//! random bits where the format has them.
//!
//! | format | idforge | peer (features) |
//! |---|---|---|
//! | ULID | `Generator` of `ulid`, `Ulid` | `ulid` 1 (default: `std`, `rand`): `ulid::Generator::generate` (monotonic, `&mut`) |
//! | ObjectId | `objectid`, node 1, `ObjectId` | `bson` 2: `ObjectId::new` (a process-wide atomic counter) |
//! | KSUID | `ksuid`, `Ksuid::from_id` (4 bytes of the per-thread ChaCha12) | `svix-ksuid` 0.8: `Ksuid::new(None, None)` (16 bytes from `getrandom` per id) |
//! | xid | `xid`, node 1, `Xid` | `xid` 1: `xid::new` |
//! | TypeID | `typeid`, `TypeId::new("user", _)` | `mti` 1: `"user".create_type_id::<V7>()` |
//! | TSID | `tsid`, node 1, `Tsid` | `tsid` 0.3: `create_tsid` (a factory behind a mutex) |
//! | UUIDv4 | `uuid4::uuid4` (per-thread ChaCha12) | `uuid` 1 (`v4`, `fast-rng`): `Uuid::new_v4` |
//!
//! idforge's generators run with `OnExhausted::RunAhead` on the default clock, as in the
//! `generate` bench: the peers of ObjectId, xid and TSID never wait for the next tick (their
//! counters wrap or borrow the next millisecond), while idforge's default policy would wait at
//! 16,777,216 ObjectIds or xids per second and 4,096 TSIDs per millisecond, which these loops
//! reach: the figure would be the format's capacity, not the cost of an id. Every call still
//! reads the clock and takes its stamp with one compare-and-swap.
//!
//! Run: `cargo bench -p idforge-bench --bench formats -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use idforge::schemes::ksuid::Ksuid;
use idforge::schemes::objectid::ObjectId;
use idforge::schemes::tsid::Tsid;
use idforge::schemes::typeid::TypeId;
use idforge::schemes::ulid::Ulid;
use idforge::schemes::xid::Xid;
use idforge::text::{self, Format, TypeIdPrefix};
use idforge::{Generator, OnClockBehind, OnExhausted, Policy, Scheme, SystemClock};
use mti::prelude::{MagicTypeIdExt, V7};
use svix_ksuid::KsuidLike;

const RUN_AHEAD: Policy = Policy {
    on_exhausted: OnExhausted::RunAhead,
    max_lead: Duration::MAX,
    on_clock_behind: OnClockBehind::Fail,
};

/// A run-ahead generator of `scheme` on the default clock, node 1 where it takes one.
fn generator(scheme: &Scheme) -> Generator {
    let node = scheme.needs_node().then_some(1);
    let clock = SystemClock::for_tick(scheme.layout().timebase().tick_ns);
    Generator::with_clock(scheme, node, clock, RUN_AHEAD).unwrap()
}

fn formats(c: &mut Criterion) {
    let mut g = c.benchmark_group("formats");

    // ULID
    let gen = generator(&Scheme::Ulid);
    g.bench_function("ulid_value/idforge", |b| {
        b.iter(|| black_box(Ulid(gen.next().unwrap())))
    });
    g.bench_function("ulid_text/idforge", |b| {
        b.iter(|| black_box(Ulid(gen.next().unwrap()).to_string()))
    });
    let mut peer = ulid::Generator::new();
    g.bench_function("ulid_value/ulid", |b| {
        b.iter(|| black_box(peer.generate().unwrap()))
    });
    g.bench_function("ulid_text/ulid", |b| {
        b.iter(|| black_box(peer.generate().unwrap().to_string()))
    });

    // ObjectId
    let gen = generator(&Scheme::ObjectId);
    g.bench_function("objectid_value/idforge", |b| {
        b.iter(|| black_box(ObjectId(gen.next().unwrap())))
    });
    g.bench_function("objectid_text/idforge", |b| {
        b.iter(|| black_box(ObjectId(gen.next().unwrap()).to_string()))
    });
    g.bench_function("objectid_value/bson", |b| {
        b.iter(|| black_box(bson::oid::ObjectId::new()))
    });
    g.bench_function("objectid_text/bson", |b| {
        b.iter(|| black_box(bson::oid::ObjectId::new().to_hex()))
    });

    // KSUID
    let gen = generator(&Scheme::Ksuid);
    g.bench_function("ksuid_value/idforge", |b| {
        b.iter(|| black_box(Ksuid::from_id(gen.next().unwrap())))
    });
    g.bench_function("ksuid_text/idforge", |b| {
        b.iter(|| black_box(Ksuid::from_id(gen.next().unwrap()).to_string()))
    });
    g.bench_function("ksuid_value/svix_ksuid", |b| {
        b.iter(|| black_box(svix_ksuid::Ksuid::new(None, None)))
    });
    g.bench_function("ksuid_text/svix_ksuid", |b| {
        b.iter(|| black_box(svix_ksuid::Ksuid::new(None, None).to_string()))
    });

    // xid
    let gen = generator(&Scheme::Xid);
    g.bench_function("xid_value/idforge", |b| {
        b.iter(|| black_box(Xid(gen.next().unwrap())))
    });
    g.bench_function("xid_text/idforge", |b| {
        b.iter(|| black_box(Xid(gen.next().unwrap()).to_string()))
    });
    g.bench_function("xid_value/xid", |b| b.iter(|| black_box(xid::new())));
    g.bench_function("xid_text/xid", |b| {
        b.iter(|| black_box(xid::new().to_string()))
    });

    // TypeID
    let gen = generator(&Scheme::TypeId);
    g.bench_function("typeid_value/idforge", |b| {
        b.iter(|| black_box(TypeId::new("user", gen.next().unwrap()).unwrap()))
    });
    let prefix = TypeIdPrefix::new("user").unwrap();
    g.bench_function("typeid_text/idforge", |b| {
        b.iter(|| black_box(prefix.encode(gen.next().unwrap()).to_string()))
    });
    g.bench_function("typeid_value/mti", |b| {
        b.iter(|| black_box("user".create_type_id::<V7>()))
    });
    g.bench_function("typeid_text/mti", |b| {
        b.iter(|| black_box("user".create_type_id::<V7>().to_string()))
    });

    // TSID
    let gen = generator(&Scheme::Tsid);
    g.bench_function("tsid_value/idforge", |b| {
        b.iter(|| black_box(Tsid(gen.next_u64().unwrap())))
    });
    g.bench_function("tsid_text/idforge", |b| {
        b.iter(|| black_box(Tsid(gen.next_u64().unwrap()).to_string()))
    });
    g.bench_function("tsid_value/tsid", |b| {
        b.iter(|| black_box(tsid::create_tsid()))
    });
    g.bench_function("tsid_text/tsid", |b| {
        b.iter(|| black_box(tsid::create_tsid().to_string()))
    });

    // UUIDv4
    g.bench_function("uuid4_value/idforge", |b| {
        b.iter(|| black_box(idforge::schemes::uuid4::uuid4()))
    });
    g.bench_function("uuid4_text/idforge", |b| {
        b.iter(|| {
            black_box(text::encode(idforge::schemes::uuid4::uuid4(), 128, Format::Uuid).to_string())
        })
    });
    g.bench_function("uuid4_value/uuid", |b| {
        b.iter(|| black_box(uuid::Uuid::new_v4()))
    });
    g.bench_function("uuid4_text/uuid", |b| {
        b.iter(|| black_box(uuid::Uuid::new_v4().to_string()))
    });

    g.finish();
}

criterion_group!(benches, formats);
criterion_main!(benches);
