//! Guarantee 1 and 2 for every scheme: many threads on one shared generator, all ids unique and
//! each thread's ids strictly increasing.

use std::collections::HashSet;

use idforge::schemes::uprotocol_v8;
use idforge::{Generator, Layout, Scheme};

/// Runs `threads` threads taking `per_thread` ids each from `next`, then checks the guarantees.
fn hammer(name: &str, threads: usize, per_thread: usize, next: &(dyn Fn() -> u128 + Sync)) {
    let per: Vec<Vec<u128>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut v = Vec::with_capacity(per_thread);
                    for _ in 0..per_thread {
                        v.push(next());
                    }
                    v
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    for (t, ids) in per.iter().enumerate() {
        for w in ids.windows(2) {
            assert!(
                w[0] < w[1],
                "{name}: thread {t} issued {:#x} after {:#x}",
                w[1],
                w[0]
            );
        }
    }
    // Every id of every thread, sorted: a duplicate is two equal neighbours.
    let mut all: Vec<u128> = per.concat();
    all.sort_unstable();
    if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
        panic!("{name}: duplicate id {:#x}", w[0]);
    }
    assert_eq!(all.len(), threads * per_thread, "{name}: id count");
}

/// Ids per thread: 250,000, or fewer where the layout's capacity would make it take seconds.
fn per_thread(l: &Layout) -> usize {
    let per_second = l.ids_per_second();
    // Aim for at most ~0.5 s of the layout's capacity across 8 threads: hundreds of ticks whose
    // counter runs out (50 of Sonyflake's 10 ms ticks), and the test command stays short.
    ((per_second * 0.5 / 8.0) as usize).clamp(1_000, 250_000)
}

#[test]
fn every_scheme_is_unique_and_ordered_across_8_threads() {
    for scheme in Scheme::PRESETS
        .iter()
        .filter(|s| **s != Scheme::UProtocolV8)
    {
        let node = scheme.needs_node().then_some(1);
        let g = Generator::new(scheme, node).unwrap();
        let n = per_thread(g.layout());
        hammer(scheme.name(), 8, n, &|| g.next().unwrap());
    }
}

#[test]
fn uprotocol_v8_singleton_is_unique_and_ordered_across_8_threads() {
    let n = per_thread(&uprotocol_v8::layout());
    hammer("uprotocol-v8", 8, n, &|| uprotocol_v8::next().unwrap());
}

#[test]
fn a_custom_layout_is_unique_and_ordered_across_8_threads() {
    let l = Layout::parse_spec("time:40,node:4,counter:19,tick=1ms,epoch=2020-01-01T00:00:00Z")
        .unwrap();
    let g = Generator::new(&Scheme::Custom(l), Some(3)).unwrap();
    hammer("custom", 8, 250_000, &|| g.next().unwrap());
}

#[test]
fn reserved_batches_are_unique_across_threads() {
    let g = Generator::new(&Scheme::Snowflake, Some(9)).unwrap();
    let per: Vec<Vec<u128>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..2_000)
                        .flat_map(|_| g.reserve(64).unwrap().collect::<Vec<_>>())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = HashSet::new();
    for ids in &per {
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for id in ids {
            assert!(all.insert(*id));
        }
    }
    assert_eq!(all.len(), 4 * 2_000 * 64);
}
