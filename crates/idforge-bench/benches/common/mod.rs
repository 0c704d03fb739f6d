//! Helpers shared by the benchmarks.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// Runs `iters` calls of `f` split over two threads; returns the wall time of the whole, so that
/// criterion reports the time per call of the total throughput. Generic over `f`, so that the
/// call inlines as it does in the one-thread benches (through `&dyn Fn` each id paid an indirect
/// call the one-thread figure did not).
pub fn two_threads<F: Fn() + Sync>(iters: u64, f: &F) -> Duration {
    let half = iters / 2 + 1;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..half {
                    f();
                }
            });
        }
    });
    start.elapsed()
}

/// Like [`two_threads`], with per-thread state: each thread makes its own with `init` (a
/// generator's `Blocks`, which is not `Sync`) and calls `f` on it.
#[allow(dead_code)] // not every bench uses it
pub fn two_threads_each<S, I: Fn() -> S + Sync, F: Fn(&mut S) + Sync>(
    iters: u64,
    init: &I,
    f: &F,
) -> Duration {
    let half = iters / 2 + 1;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut state = init();
                for _ in 0..half {
                    f(&mut state);
                }
            });
        }
    });
    start.elapsed()
}

/// `uuid`'s context for version 7 UUIDs, as its `now_v7` keeps it (a static `Mutex<ContextV7>`).
static V7_CONTEXT: Mutex<uuid::ContextV7> = Mutex::new(uuid::ContextV7::new());

/// `uuid::Uuid::now_v7()` as `uuid` 1 builds it without `fast-rng`: `getrandom` for the random
/// bits of every id (the emulation's one difference is noted below).
///
/// The bench crate's `uuid` has `fast-rng`, and features are unified across a build, so that
/// `now_v7` cannot be called here; this repeats its steps through `uuid`'s public API: one
/// `SystemTime` read, the shared `Mutex<ContextV7>` locked twice (`generate_timestamp_sequence`,
/// then `usable_bits`, as `Timestamp::now` does), 16 bytes from `getrandom::fill` (the major
/// version `uuid` uses) for the random bits, the counter placed as `Uuid::new_v7` places it, and
/// `Builder::from_unix_timestamp_millis`. One difference remains: when the millisecond changes,
/// `ContextV7` reseeds its counter from `rand` here (`fast-rng`), not from `getrandom`: one 8-byte
/// draw per millisecond, against one 16-byte `getrandom` call per id.
pub fn uuid_v7_getrandom() -> uuid::Uuid {
    use uuid::ClockSequence;
    // `Timestamp::now`: a `SystemTime` read, then the context (locked once for the counter, and
    // once more for the number of its bits).
    let now = SystemTime::UNIX_EPOCH.elapsed().unwrap();
    let (counter, secs, nanos) =
        V7_CONTEXT.generate_timestamp_sequence(now.as_secs(), now.subsec_nanos());
    let counter_bits = V7_CONTEXT.usable_bits() as u32;
    // `Uuid::new_v7`: the counter right below the version nibble, shifted over the variant
    // bits, the rest of the 74 bits random.
    let millis = secs
        .saturating_mul(1000)
        .saturating_add(u64::from(nanos) / 1_000_000);
    const RAND_A_BITS: u32 = 12;
    const PAYLOAD_BITS: u32 = RAND_A_BITS + 62;
    let mut counter = u128::from(counter);
    let mut counter_bits = counter_bits.min(128);
    if counter_bits > PAYLOAD_BITS {
        counter >>= counter_bits - PAYLOAD_BITS;
        counter_bits = PAYLOAD_BITS;
    }
    if counter_bits > RAND_A_BITS {
        let mask = u128::MAX << (counter_bits - RAND_A_BITS);
        counter = (counter & !mask) | ((counter & mask) << 2);
        counter_bits += 2;
    }
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).unwrap();
    let random = u128::from_ne_bytes(bytes);
    let counter_and_random = if counter_bits == 0 {
        random
    } else {
        let shift = 124 - counter_bits;
        (random & (u128::MAX >> (128 - shift))) | (counter << shift)
    };
    uuid::Builder::from_unix_timestamp_millis(
        millis,
        &counter_and_random.to_be_bytes()[..10].try_into().unwrap(),
    )
    .into_uuid()
}

/// Keeps an id from being optimised away, as `std::hint::black_box` does, but as two 64-bit
/// halves. Every bench hands its ids (idforge's and the peers' alike) to this: `black_box` of a
/// 128-bit value in criterion's loop stores it as two 8-byte halves and reloads it as one 16-byte
/// value, a store-forwarding stall that, next to a CAS, measured about 10 ns per call on this
/// machine (a ticker Snowflake: 21 ns through `black_box(u128)`, 9.8 ns through this or as a
/// `u64`), more than the generator being measured.
#[inline(always)]
pub fn sink(id: u128) {
    std::hint::black_box(id as u64);
    std::hint::black_box((id >> 64) as u64);
}
