//! `nanots` and `nanots-host` (seeds 001 and 002): uniqueness, run-ahead, text round trips.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use idforge::schemes::nanots::{
    self, decode_text_or_int, format, parse, HostDigits, HostGenerator, POLICY,
};
use idforge::{Error, ManualClock, Sequencer, WallClock};
use proptest::prelude::*;

const ARTICLE: &str = "2021-12-28T14:07:02.954100128";

/// One `nanots` value with tag `tag` from a sequencer.
fn next_nanots<C: idforge::Clock>(seq: &Sequencer<C>, layout: &idforge::Layout, tag: u64) -> u64 {
    let stamp = seq.next().unwrap();
    layout.encode(tag as u128, stamp as u128, 0, 0) as u64
}

/// Chronicle's own test: consecutive values differ after `>> 5`.
#[test]
fn consecutive_values_differ_after_shift_5() {
    let layout = nanots::layout();
    let seq = Sequencer::new(WallClock, layout.timebase(), POLICY).unwrap();
    let mut prev = next_nanots(&seq, &layout, 0);
    for _ in 0..100_000 {
        let v = next_nanots(&seq, &layout, 0);
        assert!(v >> 5 > prev >> 5, "{v} after {prev}");
        assert_eq!(v & 31, 0, "the default tag is 0");
        prev = v;
    }
    // Wall time, rounded down to 32 ns, at most 1 ms ahead.
    let now = idforge::Clock::now_ns(&WallClock);
    assert!(prev <= now + 1_000_000);
}

#[test]
fn four_threads_values_distinct_after_shift_5_and_increasing_per_thread() {
    let layout = nanots::layout();
    let seq = Sequencer::new(WallClock, layout.timebase(), POLICY).unwrap();
    let per_thread: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u64)
            .map(|tag| {
                let (seq, layout) = (&seq, &layout);
                s.spawn(move || {
                    (0..100_000)
                        .map(|_| next_nanots(seq, layout, tag))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut seen = HashSet::new();
    for (tag, values) in per_thread.iter().enumerate() {
        assert!(values.windows(2).all(|w| w[0] >> 5 < w[1] >> 5));
        for v in values {
            assert_eq!(v & 31, tag as u64);
            assert!(seen.insert(v >> 5), "duplicate tick {}", v >> 5);
        }
    }
    assert_eq!(seen.len(), 400_000);
}

#[test]
fn frozen_clock_runs_ahead_at_most_one_ms_then_blocks() {
    let clock = ManualClock::new(1_700_000_000_000_000_000);
    let layout = nanots::layout();
    let seq = Arc::new(Sequencer::new(clock.clone(), layout.timebase(), POLICY).unwrap());
    let mut last = 0;
    // 1 ms of 32 ns ticks is 31,250: those and the current tick are issued without waiting.
    for _ in 0..=31_250 {
        last = next_nanots(&seq, &layout, 0);
    }
    assert_eq!(last, 1_700_000_000_000_000_000 + 1_000_000);
    assert_eq!(seq.lead(), Duration::from_millis(1));

    let (s2, l2) = (seq.clone(), layout.clone());
    let waiter = std::thread::spawn(move || next_nanots(&s2, &l2, 0));
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !waiter.is_finished(),
        "1 ms ahead of a frozen clock it must block"
    );
    clock.advance(32);
    assert_eq!(waiter.join().unwrap(), last + 32);
}

#[test]
fn edge_values_round_trip() {
    for (ns, text) in [
        (0, "1970-01-01T00:00:00"),
        (1, "1970-01-01T00:00:00.000000001"),
        (i64::MAX as u64, "2262-04-11T23:47:16.854775807"),
        (u64::MAX, "2554-07-21T23:34:33.709551615"),
        (1_640_700_422_954_100_128, ARTICLE),
    ] {
        assert_eq!(format(ns), text);
        assert_eq!(parse(text).unwrap(), ns, "{text}");
        assert_eq!(parse(&format!("{text}Z")).unwrap(), ns, "{text}Z");
    }
}

proptest! {
    #[test]
    fn text_round_trips_over_the_whole_u64_range(ns in any::<u64>()) {
        let text = format(ns);
        prop_assert_eq!(parse(&text).unwrap(), ns);
        prop_assert_eq!(decode_text_or_int(&text).unwrap(), ns);
        prop_assert_eq!(decode_text_or_int(&ns.to_string()).unwrap(), ns);
        prop_assert!(!text.ends_with('0') || !text.contains('.'), "{}", text);
    }

    #[test]
    fn offsets_name_the_same_instant(ns in any::<u64>(), minutes in -(23 * 60 + 59)..=(23 * 60 + 59i64)) {
        // The same instant written in another zone, as jiff would print it.
        let ts = jiff::Timestamp::from_nanosecond(ns as i128).unwrap();
        let offset = jiff::tz::Offset::from_seconds(minutes as i32 * 60).unwrap();
        let local = offset.to_datetime(ts);
        let sign = if minutes < 0 { '-' } else { '+' };
        let text = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}{sign}{:02}:{:02}",
            local.year(),
            local.month(),
            local.day(),
            local.hour(),
            local.minute(),
            local.second(),
            local.subsec_nanosecond(),
            minutes.abs() / 60,
            minutes.abs() % 60
        );
        prop_assert_eq!(parse(&text).unwrap(), ns, "{}", text);
    }
}

#[test]
fn offsets_are_honoured() {
    let utc = parse(ARTICLE).unwrap();
    assert_eq!(parse("2021-12-28T16:07:02.954100128+02:00").unwrap(), utc);
    assert_eq!(parse("2021-12-28T09:37:02.954100128-04:30").unwrap(), utc);
    assert_eq!(parse(&format!("{ARTICLE}Z")).unwrap(), utc);
    // Not ignored, as the original does: the local reading would be two hours later.
    assert_ne!(parse("2021-12-28T14:07:02.954100128+02:00").unwrap(), utc);
}

#[test]
fn article_example_decodes_to_host_28() {
    let v = parse(ARTICLE).unwrap();
    let (unix_ns, host) = HostDigits::decode(v, 2);
    assert_eq!(host, 28);
    assert_eq!(format(unix_ns), "2021-12-28T14:07:02.9541001");
    let (unix_ns, host) = HostDigits::decode(v, 3);
    assert_eq!(host, 128);
    assert_eq!(unix_ns, 1_640_700_422_954_100_000);
    assert_eq!(format(unix_ns), "2021-12-28T14:07:02.9541");
}

#[test]
fn host_out_of_range_is_refused() {
    assert!(matches!(
        HostDigits::new(100, 2),
        Err(Error::NodeOutOfRange {
            node: 100,
            max: 99,
            ..
        })
    ));
    assert!(matches!(
        HostDigits::new(1000, 3),
        Err(Error::NodeOutOfRange {
            node: 1000,
            max: 999,
            ..
        })
    ));
    assert!(matches!(
        HostDigits::new(5, 4),
        Err(Error::InvalidLayout(_))
    ));
    let msg = HostGenerator::new(100, 2).unwrap_err().to_string();
    assert!(msg.contains("0 to 99"), "{msg}");
    let msg = HostGenerator::new(0, 4).unwrap_err().to_string();
    assert!(msg.contains("2 or 3"), "{msg}");
}

#[test]
fn host_generator_four_threads_unique_and_carry_the_host() {
    let g = HostGenerator::new(28, 2).unwrap();
    let per_thread: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..100_000).map(|_| g.next().unwrap()).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut seen = HashSet::new();
    for values in &per_thread {
        assert!(values.windows(2).all(|w| w[0] < w[1]));
        for &v in values {
            assert_eq!(v % 100, 28);
            assert_eq!(HostDigits::decode(v, 2).1, 28);
            assert!(seen.insert(v), "duplicate {v}");
        }
    }
    assert_eq!(seen.len(), 400_000);
}

#[test]
fn host_generator_three_digits_on_a_frozen_clock() {
    let clock = ManualClock::new(1_000_000_000_000);
    let g = HostGenerator::with_clock(128, 3, clock.clone(), POLICY).unwrap();
    // 1 µs ticks: the current one and 1,000 borrowed (1 ms), then it waits.
    let values: Vec<u64> = (0..=1_000).map(|_| g.next().unwrap()).collect();
    assert_eq!(values[0], 1_000_000_000_128);
    assert!(values.windows(2).all(|w| w[1] - w[0] == 1_000));
    assert_eq!(g.sequencer().lead(), Duration::from_millis(1));
    clock.step_back(2_000_000);
    assert!(matches!(g.next(), Err(Error::ClockBehind { .. })));
}

#[test]
fn text_or_int_for_inspect() {
    assert_eq!(
        decode_text_or_int("1640700422954100128").unwrap(),
        parse(ARTICLE).unwrap()
    );
    assert!(matches!(
        decode_text_or_int("yesterday"),
        Err(Error::MalformedId { .. })
    ));
    let err = decode_text_or_int("2021-12-28T14:07").unwrap_err();
    assert!(matches!(err, Error::InvalidTime { .. }));
    assert!(err.to_string().contains("2021-12-28T14:07"), "{err}");
}
