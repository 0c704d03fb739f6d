//! The `locality` scheme (Groupon's Locality UUID, version b): the article's examples, uniqueness
//! under threads, the counter's period, round trips, every error, and the locality claim itself,
//! measured over range partitions.

use std::collections::HashSet;
use std::sync::Arc;

use idforge::inspect::inspect_locality;
use idforge::schemes::locality::{
    parse_mac, sequential_seed, CounterMode, LocalityGenerator, LocalityUuid, MAX_MAC_FRAGMENT,
    PRIME,
};
use idforge::text::Format;
use idforge::{inspect, Clock, Error, Generator, ManualClock, Scheme};
use proptest::prelude::*;

const MS: u64 = 1_000_000;
/// 2013-04-28T01:04:00.038Z: the time of the article's sequential examples.
const ARTICLE_SEQ_MS: u64 = 1_367_111_040_038;
/// 2013-04-28T01:00:00.000Z, the start of its 10-minute bucket "20130428010".
const BUCKET_START_MS: u64 = 1_367_110_800_000;

fn generator(clock: ManualClock, sequential: bool) -> LocalityGenerator<ManualClock> {
    LocalityGenerator::builder()
        .clock(clock)
        .pid(0x7a7f)
        .mac_fragment(0xd53_7a50)
        .sequential(sequential)
        .build()
        .unwrap()
}

#[test]
fn article_example_decodes_to_its_fields() {
    let id: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse().unwrap();
    assert_eq!(id.counter_reversed().unwrap(), 3_488_672_514);
    assert_eq!(id.pid().unwrap(), 12_618);
    assert_eq!(format!("{:07x}", id.mac().unwrap()), "d537a50");
    assert_eq!(id.unix_ms().unwrap(), 1_350_327_498_450);
    assert_eq!(id.version(), 0xb);
    let d = inspect("20be0ffc-314a-bd53-7a50-013a65ca76d2", None, None).unwrap();
    assert_eq!(d.time.as_deref(), Some("2012-10-15T18:58:18.450Z"));
}

#[test]
fn article_sequential_examples_from_a_manual_clock() {
    // Anywhere in 01:00:00.000 .. 01:09:59.999 the seed is 0xf5166775, so the first id is f5166776.
    for ms in [BUCKET_START_MS, ARTICLE_SEQ_MS, BUCKET_START_MS + 599_999] {
        assert_eq!(sequential_seed(ms), 0xf516_6775);
        let g = generator(ManualClock::new(ms * MS), true);
        assert_eq!(&g.next().to_string()[..8], "f5166776");
        assert_eq!(&g.next().to_string()[..8], "f5166777");
    }
    assert_ne!(sequential_seed(BUCKET_START_MS + 600_000), 0xf516_6775);
    // At the article's exact moment, pid and MAC, the ids are the article's, character for character.
    let g = generator(ManualClock::new(ARTICLE_SEQ_MS * MS), true);
    g.next(); // f5166776, which the article's list starts after
    for expected in [
        "f5166777-7a7f-bd53-7a50-013e4e2afc26",
        "f5166778-7a7f-bd53-7a50-013e4e2afc26",
        "f5166779-7a7f-bd53-7a50-013e4e2afc26",
        "f516677a-7a7f-bd53-7a50-013e4e2afc26",
        "f516677b-7a7f-bd53-7a50-013e4e2afc26",
        "f516677c-7a7f-bd53-7a50-013e4e2afc26",
        "f516677d-7a7f-bd53-7a50-013e4e2afc26",
        "f516677e-7a7f-bd53-7a50-013e4e2afc26",
    ] {
        assert_eq!(g.next().to_string(), expected);
    }
}

#[test]
fn eight_threads_make_two_million_distinct_ids() {
    for sequential in [false, true] {
        let g = Arc::new(
            LocalityGenerator::builder()
                .pid(1)
                .mac_fragment(2)
                .sequential(sequential)
                .build()
                .unwrap(),
        );
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let g = Arc::clone(&g);
                std::thread::spawn(move || {
                    (0..250_000).map(|_| g.next().as_u128()).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = HashSet::with_capacity(2_000_000);
        for h in handles {
            for id in h.join().unwrap() {
                assert!(all.insert(id), "duplicate {}", LocalityUuid::from_u128(id));
            }
        }
        assert_eq!(all.len(), 2_000_000, "sequential: {sequential}");
    }
}

/// The inverse of PRIME modulo 2^32 (Newton's iteration, as in `counter_period_is_two_to_the_32`).
fn prime_inverse() -> u32 {
    let mut inv: u32 = PRIME;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(PRIME.wrapping_mul(inv)));
    }
    assert_eq!(PRIME.wrapping_mul(inv), 1);
    inv
}

/// Ids from `threads` threads sharing `g`, `per_thread` each (not a multiple of the 64-id
/// block), while one more thread switches the mode `switches` times; asserts that no id repeats
/// within a mode.
///
/// A variable-mode id and a sequential-mode id can be equal by the format's nature (the module
/// docs: about one chance in 2^32 per pair, so about one such pair among 90,000 ids of one
/// millisecond split between modes). Such a repeat is allowed only when it is provably that: read
/// as a variable-mode id it is at most `SPAN` steps of PRIME past the start counter `var_start`,
/// and read as a sequential-mode id at most `SPAN` past the seed `seq_seed`. A repeat within one
/// mode passes that test with probability `SPAN / 2^32` (1 in 2,000).
fn distinct_across_threads(
    g: LocalityGenerator<ManualClock>,
    threads: usize,
    per_thread: usize,
    switches: usize,
    var_start: u32,
    seq_seed: u32,
) {
    const SPAN: u32 = 1 << 21;
    let g = Arc::new(g);
    let switcher = {
        let g = Arc::clone(&g);
        std::thread::spawn(move || {
            for i in 0..switches {
                if i % 2 == 0 {
                    g.use_sequential();
                } else {
                    g.use_variable();
                }
                std::thread::yield_now();
            }
        })
    };
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || {
                (0..per_thread)
                    .map(|_| g.next().as_u128())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let inverse = prime_inverse();
    let mut all = HashSet::with_capacity(threads * per_thread);
    let mut cross_mode = 0;
    for h in handles {
        for id in h.join().unwrap() {
            if !all.insert(id) {
                let id = LocalityUuid::from_u128(id);
                let k = id
                    .counter_reversed()
                    .unwrap()
                    .wrapping_sub(var_start)
                    .wrapping_mul(inverse);
                let s = id.counter_sequential().unwrap().wrapping_sub(seq_seed);
                assert!(
                    switches > 0 && (1..=SPAN).contains(&k) && (1..=SPAN).contains(&s),
                    "duplicate {id} within one mode"
                );
                cross_mode += 1;
            }
        }
    }
    switcher.join().unwrap();
    assert!(
        cross_mode <= 8,
        "{cross_mode} variable/sequential coincidences"
    );
    assert_eq!(all.len() + cross_mode, threads * per_thread);
}

#[test]
fn threads_in_one_frozen_millisecond_never_share_an_id() {
    // Every id in the same millisecond with the same pid and MAC: only the counter keeps them
    // apart, so blocks of positions reserved by different threads must never overlap.
    let g = generator(ManualClock::new(ARTICLE_SEQ_MS * MS), false);
    distinct_across_threads(g, 4, 100_003, 0, 0, 0);
    let g = generator(ManualClock::new(ARTICLE_SEQ_MS * MS), true);
    distinct_across_threads(g, 4, 100_003, 0, 0, 0);
}

#[test]
fn threads_racing_mode_switches_in_one_frozen_millisecond_never_share_an_id() {
    // Switches drop every thread's block and give the switching thread's unused positions back;
    // neither may let a position be issued twice.
    let g = LocalityGenerator::builder()
        .clock(ManualClock::new(ARTICLE_SEQ_MS * MS))
        .pid(0x7a7f)
        .mac_fragment(0xd53_7a50)
        .counter(0x1234_5678)
        .build()
        .unwrap();
    distinct_across_threads(g, 3, 30_001, 2_000, 0x1234_5678, 0xf516_6775);
}

#[test]
fn threads_across_milliseconds_never_share_an_id() {
    // A block goes on into a new millisecond only while it is the last one reserved: with the
    // clock moving under four threads (one id in 97 advances it), ids still never repeat.
    let clock = ManualClock::new(ARTICLE_SEQ_MS * MS);
    let g = Arc::new(generator(clock.clone(), false));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (g, clock) = (Arc::clone(&g), clock.clone());
            std::thread::spawn(move || {
                (0..60_000)
                    .map(|i| {
                        if (i + t) % 97 == 0 {
                            clock.advance(MS);
                        }
                        g.next().as_u128()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        for id in h.join().unwrap() {
            assert!(all.insert(id), "duplicate {}", LocalityUuid::from_u128(id));
        }
    }
    assert_eq!(all.len(), 240_000);
}

#[test]
fn one_thread_steps_one_id_at_a_time_across_milliseconds_and_switches() {
    // Blocks are invisible to a thread alone: every id is the one before plus PRIME (variable) or
    // plus 1 (sequential), across new milliseconds and across a round trip of switches.
    let clock = ManualClock::new(ARTICLE_SEQ_MS * MS);
    let g = generator(clock.clone(), false);
    let mut last = g.next().counter_reversed().unwrap();
    for i in 1..1_000u32 {
        if i % 10 == 0 {
            clock.advance(MS);
        }
        if i % 150 == 0 {
            g.use_sequential();
            let a = g.next().counter_sequential().unwrap();
            assert_eq!(g.next().counter_sequential().unwrap(), a.wrapping_add(1));
            g.use_variable();
        }
        let c = g.next().counter_reversed().unwrap();
        assert_eq!(c, last.wrapping_add(PRIME), "id {i}");
        assert_eq!(g.counter(), c);
        last = c;
    }
}

#[test]
fn distinct_even_on_a_frozen_clock() {
    // One millisecond, 300,000 ids: the counter alone keeps them apart.
    let g = generator(ManualClock::new(ARTICLE_SEQ_MS * MS), false);
    let ids: HashSet<u128> = (0..300_000).map(|_| g.next().as_u128()).collect();
    assert_eq!(ids.len(), 300_000);
}

#[test]
fn first_character_changes_with_every_variable_mode_id() {
    let g = LocalityGenerator::new();
    let mut prev = g.next().to_string();
    for _ in 0..100_000 {
        let next = g.next().to_string();
        assert_ne!(prev.as_bytes()[0], next.as_bytes()[0], "{prev} then {next}");
        prev = next;
    }
    // Why: the first character is the counter's low nibble, which moves by PRIME mod 16 = 5.
    assert_eq!(PRIME % 16, 5);
}

#[test]
fn counter_wraps_at_two_to_the_32() {
    let start = u32::MAX - 2 * PRIME; // the third id crosses 2^32
    let g = LocalityGenerator::builder()
        .clock(ManualClock::new(ARTICLE_SEQ_MS * MS))
        .pid(9)
        .mac_fragment(9)
        .counter(start)
        .build()
        .unwrap();
    let counters: Vec<u32> = (0..5)
        .map(|_| g.next().counter_reversed().unwrap())
        .collect();
    assert_eq!(counters[0], u32::MAX - PRIME);
    assert_eq!(counters[1], u32::MAX);
    assert_eq!(counters[2], PRIME - 1, "wrapped modulo 2^32");
    assert_eq!(counters[3], 2 * PRIME - 1);
    assert_eq!(counters.iter().collect::<HashSet<_>>().len(), 5);
}

#[test]
fn counter_period_is_two_to_the_32() {
    // After k ids the counter is start + k * PRIME (mod 2^32). Two ids k1 != k2 (mod 2^32) share a
    // counter only if (k1 - k2) * PRIME = 0 (mod 2^32); PRIME has a multiplicative inverse mod
    // 2^32 (it is odd), so that forces k1 = k2. Find the inverse (Newton's iteration doubles the
    // correct low bits each round) and check it.
    let mut inv: u32 = PRIME; // correct to 3 bits for any odd number
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(PRIME.wrapping_mul(inv)));
    }
    assert_eq!(PRIME.wrapping_mul(inv), 1);
    // The same argument, checked exhaustively where it is cheap: the low 24 bits of the counter
    // run through all 2^24 values before repeating.
    let m = 1u32 << 24;
    let mut seen = vec![0u64; (m / 64) as usize];
    let mut x = 0x00AB_CDEFu32;
    for _ in 0..m {
        let (w, b) = ((x / 64) as usize, x % 64);
        assert_eq!((seen[w] >> b) & 1, 0, "repeat before 2^24");
        seen[w] |= 1 << b;
        x = x.wrapping_add(PRIME) & (m - 1);
    }
    assert_eq!(x, 0x00AB_CDEF);
}

#[test]
fn counter_period_through_the_generator() {
    // The generator's own ids, not the arithmetic: 2^24 ids of one frozen millisecond carry 2^24
    // distinct low 24 bits of their counter (so no counter value repeats before 2^24 ids, and by
    // the inverse argument above none before 2^32), and the counter wraps modulo 2^32.
    let start = u32::MAX - 5;
    let g = idforge::schemes::locality::LocalityGenerator::builder()
        .clock(idforge::ManualClock::new(1_800_000_000_000_000_000))
        .pid(1)
        .mac_fragment(1)
        .counter(start)
        .build()
        .unwrap();
    let m = 1u32 << 24;
    let mut seen = vec![0u64; (m / 64) as usize];
    let first = g.next();
    assert_eq!(first.counter_reversed().unwrap(), start.wrapping_add(PRIME));
    let mut x = first.counter_reversed().unwrap() & (m - 1);
    seen[(x / 64) as usize] |= 1 << (x % 64);
    for k in 1..m {
        let id = g.next();
        let c = id.counter_reversed().unwrap();
        assert_eq!(c, start.wrapping_add(PRIME.wrapping_mul(k + 1)), "id {k}");
        x = c & (m - 1);
        let (w, b) = ((x / 64) as usize, x % 64);
        assert_eq!((seen[w] >> b) & 1, 0, "counter repeated after {k} ids");
        seen[w] |= 1 << b;
    }
    assert_eq!(g.counter(), start.wrapping_add(PRIME.wrapping_mul(m)));
}

#[test]
fn mode_switches_keep_ids_distinct() {
    let clock = ManualClock::new(ARTICLE_SEQ_MS * MS);
    let g = generator(clock.clone(), false);
    let mut ids = HashSet::new();
    // Flip modes every few ids within one millisecond: the original would repeat seed + 1 here.
    for round in 0..200 {
        if round % 2 == 0 {
            g.use_sequential();
            assert_eq!(g.mode(), CounterMode::Sequential);
        } else {
            g.use_variable();
            assert_eq!(g.mode(), CounterMode::Variable);
        }
        for _ in 0..7 {
            assert!(ids.insert(g.next()), "duplicate after {round} switches");
        }
    }
}

#[test]
fn a_mode_round_trip_without_ids_in_between_never_repeats() {
    // variable (ids) -> sequential (no id) -> variable (ids): variable mode must not restart from
    // the point re-entering sequential mode set the counter back to.
    let g = generator(ManualClock::new(ARTICLE_SEQ_MS * MS), true);
    let _ = g.next();
    let mut ids = HashSet::new();
    for round in 0..50 {
        g.use_variable();
        for _ in 0..3 {
            assert!(ids.insert(g.next()), "duplicate in round {round}");
        }
        g.use_sequential();
        if round % 2 == 0 {
            assert!(ids.insert(g.next()), "duplicate in round {round}");
        }
    }
}

#[test]
fn parse_accepts_either_case_and_surrounding_whitespace() {
    let lower: LocalityUuid = "20be0ffc-314a-bd53-7a50-013a65ca76d2".parse().unwrap();
    for text in [
        "20BE0FFC-314A-BD53-7A50-013A65CA76D2",
        "  20be0ffc-314a-bd53-7a50-013a65ca76d2\t\n",
        "20Be0fFc-314a-Bd53-7a50-013A65ca76D2",
    ] {
        assert_eq!(text.parse::<LocalityUuid>().unwrap(), lower, "{text:?}");
    }
    assert_eq!(LocalityUuid::from_bytes(lower.to_bytes()), lower);
    assert_eq!(
        LocalityUuid::try_from(&lower.to_bytes()[..]).unwrap(),
        lower
    );
    assert_eq!(u128::from(lower), 0x20be0ffc_314a_bd53_7a50_013a65ca76d2);
    assert_eq!(
        format!("{lower:?}"),
        "LocalityUuid(20be0ffc-314a-bd53-7a50-013a65ca76d2)"
    );
}

#[test]
fn every_malformed_text_is_refused_with_its_reason() {
    for (text, needle) in [
        ("", "empty"),
        ("   ", "empty"),
        ("20be0ffc-314a-bd53-7a50-013a65ca76d", "36 characters"),
        ("20be0ffc-314a-bd53-7a50-013a65ca76d2a", "36 characters"),
        ("20be0ffc314abd537a50013a65ca76d2", "36 characters"),
        ("20be0ffc+314a-bd53-7a50-013a65ca76d2", "'-' at position 8"),
        ("20be0ffc-314a-bd53-7a50x013a65ca76d2", "'-' at position 23"),
        ("20be0ffc-314a-bd53-7a50-013a65ca76dg", "position 35"),
        ("{0be0ffc-314a-bd53-7a50-013a65ca76d2", "position 0"),
        ("20be0ffc-314a-bd53-7a50-013a65ca76é", "position 34"),
        ("20be0ffc-314a-bd53-7a50-013a65ca76dé", "36 characters"),
    ] {
        let e = text.parse::<LocalityUuid>().unwrap_err();
        assert!(matches!(e, Error::MalformedId { .. }), "{text:?}: {e:?}");
        assert!(e.to_string().contains(needle), "{text:?}: {e}");
    }
}

#[test]
fn wrong_byte_lengths_are_refused() {
    for n in [0usize, 1, 15, 17, 32] {
        let e = LocalityUuid::from_slice(&vec![0u8; n]).unwrap_err();
        assert_eq!(
            e,
            Error::ByteLength {
                what: "UUID",
                expected: 16,
                found: n
            }
        );
        assert!(e.to_string().contains("exactly 16 bytes"), "{e}");
    }
}

#[test]
fn locality_fields_of_other_versions_are_refused() {
    for (text, found) in [
        ("9c5b94b1-35ad-49bb-b118-8e8fc24abf80", 4),
        ("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", 7),
        ("00000000-0000-0000-0000-000000000000", 0),
        ("ffffffff-ffff-ffff-ffff-ffffffffffff", 0xf),
    ] {
        let id: LocalityUuid = text.parse().unwrap();
        assert!(!id.is_locality());
        let wrong = |e: Error| matches!(e, Error::WrongVersion { expected: 0xb, found: f, .. } if f == found);
        assert!(wrong(id.counter_reversed().unwrap_err()), "{text}");
        assert!(wrong(id.counter_sequential().unwrap_err()));
        assert!(wrong(id.pid().unwrap_err()));
        assert!(wrong(id.mac().unwrap_err()));
        assert!(wrong(id.unix_ms().unwrap_err()));
        assert!(wrong(inspect_locality(text, None).unwrap_err()));
    }
    // Auto-detection knows RFC 9562's versions 1 to 8 and b; others need a scheme.
    let e = inspect("9c5b94b1-35ad-c9bb-b118-8e8fc24abf80", None, None).unwrap_err();
    assert!(e.to_string().contains("not a UUID version"), "{e}");
    assert!(e.to_string().contains("b, the Locality UUID"), "{e}");
}

#[test]
fn out_of_range_configuration_is_refused_not_wrapped() {
    let e = LocalityGenerator::builder()
        .pid(70_000)
        .build()
        .unwrap_err();
    assert_eq!(e, Error::PidOutOfRange { pid: 70_000 });
    let e = LocalityGenerator::builder()
        .mac_fragment(0x1000_0000)
        .build()
        .unwrap_err();
    assert_eq!(
        e,
        Error::MacFragmentOutOfRange {
            fragment: 0x1000_0000
        }
    );
    let e = parse_mac("aa:bb:cc:dd:ee").unwrap_err();
    assert!(matches!(e, Error::InvalidMac { .. }));
    let e = LocalityUuid::from_parts(1, CounterMode::Variable, 1, 1, 1 << 48).unwrap_err();
    assert!(matches!(e, Error::TimeOutOfRange { .. }));
    let e = LocalityUuid::from_parts(1, CounterMode::Variable, 1, 1 << 28, 1).unwrap_err();
    assert!(matches!(e, Error::MacFragmentOutOfRange { .. }));
    // A whole MAC is not out of range: the format keeps its last 28 bits by definition.
    let g = LocalityGenerator::builder().mac([0xff; 6]).build().unwrap();
    assert_eq!(g.mac(), MAX_MAC_FRAGMENT);
}

/// Counts of ids per range partition: 16 partitions by the top 4 bits (the first hex character).
fn partitions(ids: impl Iterator<Item = u128>) -> [u64; 16] {
    let mut counts = [0u64; 16];
    for id in ids {
        counts[(id >> 124) as usize] += 1;
    }
    counts
}

const N: usize = 1_000_000;

#[test]
fn variable_mode_spreads_over_every_partition() {
    let g = LocalityGenerator::builder()
        .pid(5)
        .mac_fragment(5)
        .build()
        .unwrap();
    let counts = partitions((0..N).map(|_| g.next().as_u128()));
    let uniform = N as f64 / 16.0; // 62,500
    for (p, &c) in counts.iter().enumerate() {
        let off = (c as f64 - uniform).abs() / uniform;
        assert!(
            off <= 0.05,
            "partition {p:x}: {c} ids, {:.1}% from uniform: {counts:?}",
            off * 100.0
        );
    }
}

#[test]
fn sequential_mode_concentrates_in_one_partition() {
    // The article's bucket: seed 0xf5166775, so a million ids stay below 0xf6000000 and all land in
    // partition f. (From a random moment, a bucket's seed lies within a million of a partition
    // boundary with probability 1e6 / 2^28, under 0.4%; then the ids straddle two partitions.)
    let g = generator(ManualClock::new(ARTICLE_SEQ_MS * MS), true);
    let counts = partitions((0..N).map(|_| g.next().as_u128()));
    let max = *counts.iter().max().unwrap();
    assert!(max as f64 >= 0.99 * N as f64, "{counts:?}");
    assert_eq!(counts[0xf], N as u64);
}

#[test]
fn uuid7_concentrates_in_one_partition() {
    let g = Generator::new(&Scheme::Uuid7, None).unwrap();
    let counts = partitions((0..N).map(|_| g.next().unwrap()));
    let max = *counts.iter().max().unwrap();
    assert!(max as f64 >= 0.99 * N as f64, "{counts:?}");
}

/// How many positions variable mode stepped from counter `from` to counter `to`.
fn steps(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from).wrapping_mul(prime_inverse())
}

/// Makes this thread hold a block of `g`'s positions, and returns the ids made on the way (the
/// last took the block's first position). A thread reserves a block only after it has seen
/// another thread take a position between two of its own: here one spawned thread does, once.
/// Asserts that the state word is then 31 to 62 positions past the last id (a block of 32 to 63).
fn hold_a_block<C: Clock + Send + Sync>(g: &LocalityGenerator<C>) -> Vec<LocalityUuid> {
    let mut ids = vec![g.next()];
    ids.push(std::thread::scope(|s| s.spawn(|| g.next()).join().unwrap()));
    ids.push(g.next()); // sees the other thread's position
    ids.push(g.next()); // reserves a block and takes its first position
    let last = ids[3].counter_reversed().unwrap();
    let ahead = steps(last, g.counter());
    assert!(
        (31..=62).contains(&ahead),
        "no block held: the state word is {ahead} positions past the last id"
    );
    ids
}

/// The largest and smallest share of the ids in one of the 16 partitions, over 1/16.
fn spread(counts: &[u64; 16]) -> (f64, f64) {
    let total: u64 = counts.iter().sum();
    let share = |c: u64| c as f64 * 16.0 / total as f64;
    (
        share(*counts.iter().max().unwrap()),
        share(*counts.iter().min().unwrap()),
    )
}

#[test]
fn one_thread_alternating_two_generators_steps_each_by_prime_over_every_partition() {
    // A thread takes blocks only when another thread takes positions of the same generator: one
    // thread alternating between two generators takes one position per id from each, so each
    // generator's ids step by PRIME and fill the 16 partitions exactly evenly. (Blocks of 64
    // reserved and given up at every change of generator put 2,000,000 such ids all in one
    // partition, and used 64 positions per id.)
    let clock = ManualClock::new(ARTICLE_SEQ_MS * MS);
    let g = [generator(clock.clone(), false), generator(clock, false)];
    let mut last = [0, 1].map(|k| g[k].next().counter_reversed().unwrap());
    let mut counts = [[0u64; 16]; 2];
    for i in 0..N {
        for k in 0..2 {
            let id = g[k].next();
            let c = id.counter_reversed().unwrap();
            assert_eq!(c, last[k].wrapping_add(PRIME), "generator {k}, id {i}");
            last[k] = c;
            counts[k][(id.as_u128() >> 124) as usize] += 1;
        }
    }
    for c in counts {
        assert_eq!(c, [N as u64 / 16; 16]);
    }
}

#[test]
fn blocks_given_up_after_two_ids_still_spread_over_every_partition() {
    // Rounds in which this thread takes a block (after another thread took a position), uses two
    // of its ids and turns to another generator, which gives the rest of the block up (as a
    // thread that exits does). Blocks of one fixed size made every round start the same number
    // of positions after the one before; with 63, the rounds began on even positions only and
    // their five ids filled half the partitions a third fuller than the others (max share 1.2).
    let clock = ManualClock::new(ARTICLE_SEQ_MS * MS);
    let g = generator(clock.clone(), false);
    let other = generator(clock, false);
    let mut counts = [0u64; 16];
    let mut all = HashSet::new();
    for _ in 0..6_000 {
        let mut ids = hold_a_block(&g);
        ids.push(g.next());
        other.next();
        for id in ids {
            counts[(id.as_u128() >> 124) as usize] += 1;
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    // 30,000 ids: evenly random would stay within about 7% of 1/16 (3 standard deviations).
    let (max, min) = spread(&counts);
    assert!(
        max <= 1.10 && min >= 0.90,
        "{max:.3} / {min:.3}: {counts:?}"
    );
}

#[test]
fn a_pool_of_threads_spreads_over_every_partition() {
    // Four threads taking turns (a yield after every id, the clock moving on every few ids), some
    // turning to another generator now and then, and short-lived threads: blocks are reserved,
    // some given up early. The ids still fill the 16 partitions evenly and never repeat.
    let clock = ManualClock::new(ARTICLE_SEQ_MS * MS);
    let g = Arc::new(generator(clock.clone(), false));
    let other = Arc::new(generator(clock.clone(), false));
    let pool: Vec<_> = (0..4)
        .map(|t| {
            let (g, other, clock) = (Arc::clone(&g), Arc::clone(&other), clock.clone());
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(20_000);
                for i in 0..20_000 {
                    if i % 5 == 0 {
                        clock.advance(MS);
                    }
                    if t % 2 == 1 && i % 7 == 0 {
                        other.next();
                    }
                    ids.push(g.next().as_u128());
                    std::thread::yield_now();
                }
                ids
            })
        })
        .collect();
    let mut all: Vec<u128> = Vec::new();
    for k in 0..300 {
        let g = Arc::clone(&g);
        all.extend(
            std::thread::spawn(move || (0..=k % 5).map(|_| g.next().as_u128()).collect::<Vec<_>>())
                .join()
                .unwrap(),
        );
    }
    for h in pool {
        all.extend(h.join().unwrap());
    }
    let n = all.len();
    let counts = partitions(all.iter().copied());
    let distinct: HashSet<u128> = all.into_iter().collect();
    assert_eq!(distinct.len(), n, "ids repeated");
    let (max, min) = spread(&counts);
    assert!(
        max <= 1.05 && min >= 0.95,
        "{max:.3} / {min:.3}: {counts:?}"
    );
}

#[test]
fn sequential_ids_stay_dense_under_threads() {
    // Sequential mode never takes blocks: four threads' ids are consecutive counter values, none
    // skipped (ids made together stay together, as the mode promises).
    let g = Arc::new(generator(ManualClock::new(ARTICLE_SEQ_MS * MS), true));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || {
                (0..25_000)
                    .map(|_| {
                        let c = g.next().counter_sequential().unwrap();
                        std::thread::yield_now();
                        c
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all: Vec<u32> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    let first = 0xf516_6776u32;
    assert!(
        all.iter().enumerate().all(|(i, &c)| c == first + i as u32),
        "sequential ids skipped counter values: {} to {} for {} ids",
        all[0],
        all[all.len() - 1],
        all.len()
    );
}

#[test]
fn a_block_in_hand_gives_no_variable_id_in_sequential_mode_and_goes_on_after() {
    let g = generator(ManualClock::new(ARTICLE_SEQ_MS * MS), false);
    let ids = hold_a_block(&g);
    let last = ids[3].counter_reversed().unwrap();
    g.use_sequential();
    // This thread holds variable-mode positions; its ids are sequential all the same.
    let a = g.next().counter_sequential().unwrap();
    assert_eq!(a, 0xf516_6776);
    assert_eq!(g.next().counter_sequential().unwrap(), a + 1);
    g.use_variable();
    // Variable mode resumed above every reserved position: the block goes on where it was, and
    // another thread's id comes after the block.
    assert_eq!(
        g.next().counter_reversed().unwrap(),
        last.wrapping_add(PRIME)
    );
    let elsewhere = std::thread::scope(|s| s.spawn(|| g.next()).join().unwrap());
    let ahead = steps(last, elsewhere.counter_reversed().unwrap());
    assert!(
        (32..=64).contains(&ahead),
        "another thread's id is {ahead} positions past the block's first"
    );
}

#[test]
fn a_new_generator_never_continues_the_block_of_a_dropped_one() {
    // A generator built where a dropped one was (the same address, likely) starts from its own
    // counter, not from the block this thread held of the dropped one.
    for round in 0..50u32 {
        let clock = ManualClock::new(ARTICLE_SEQ_MS * MS);
        let g = generator(clock.clone(), false);
        hold_a_block(&g);
        drop(g);
        let start = round.wrapping_mul(0x9E37_79B9);
        let fresh = LocalityGenerator::builder()
            .clock(clock)
            .pid(0x7a7f)
            .mac_fragment(0xd53_7a50)
            .counter(start)
            .build()
            .unwrap();
        assert_eq!(
            fresh.next().counter_reversed().unwrap(),
            start.wrapping_add(PRIME)
        );
    }
}

proptest! {
    #[test]
    fn generated_ids_round_trip_through_text_and_inspect(
        pid in any::<u16>(),
        mac in 0..=MAX_MAC_FRAGMENT,
        ms in 0..(1u64 << 44),
        start in any::<u32>(),
        sequential in any::<bool>(),
    ) {
        let g = LocalityGenerator::builder()
            .clock(ManualClock::new(ms * MS))
            .pid(u64::from(pid))
            .mac_fragment(u64::from(mac))
            .counter(start)
            .sequential(sequential)
            .build()
            .unwrap();
        let id = g.next();
        let text = id.to_string();
        let back: LocalityUuid = text.parse().unwrap();
        prop_assert_eq!(back, id);
        prop_assert_eq!(LocalityUuid::from_bytes(back.to_bytes()), id);
        prop_assert_eq!(back.pid().unwrap(), pid);
        prop_assert_eq!(back.mac().unwrap(), mac);
        prop_assert_eq!(back.unix_ms().unwrap(), ms);
        let counter = if sequential {
            prop_assert_eq!(back.counter_sequential().unwrap(), sequential_seed(ms).wrapping_add(1));
            back.counter_reversed().unwrap()
        } else {
            let c = back.counter_reversed().unwrap();
            prop_assert_eq!(c, start.wrapping_add(PRIME));
            c
        };
        let d = inspect(&text, None, None).unwrap();
        prop_assert_eq!(d.scheme.as_str(), "locality");
        prop_assert_eq!(d.counter, Some(u128::from(counter)));
        prop_assert_eq!(d.pid, Some(u32::from(pid)));
        prop_assert_eq!(d.mac.clone(), Some(format!("{mac:07x}")));
        prop_assert_eq!(d.unix_ms(), Some(u128::from(ms)));
        let hex = idforge::text::encode(id.as_u128(), 128, Format::Hex);
        prop_assert_eq!(inspect_locality(hex.as_str(), Some(Format::Hex)).unwrap().value, id.as_u128());
    }

    #[test]
    fn any_bytes_round_trip(bytes in any::<[u8; 16]>()) {
        let id = LocalityUuid::from_bytes(bytes);
        let back: LocalityUuid = id.to_string().parse().unwrap();
        prop_assert_eq!(back.to_bytes(), bytes);
    }

    #[test]
    fn parse_never_panics(s in ".{0,40}") {
        let _ = s.parse::<LocalityUuid>();
        let _ = parse_mac(&s);
    }
}
