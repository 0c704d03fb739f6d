//! A layout whose stamp fills all 64 bits (60 time bits, 4 counter bits, 1 ns ticks), at the
//! last tick of its range: every way of taking a range of stamps issues the last ones, up to
//! stamp `u64::MAX`, and then fails; none steps past the end (a debug build panicked with an
//! arithmetic overflow in `fill`, `reserve`, `StampRange` and `Blocks`; an attack review's
//! reproductions).

use idforge::{Error, Generator, Layout, ManualClock, Policy, Scheme, Sequencer};

const SPEC: &str = "time:60,counter:4,tick=1ns";
/// The last tick: 2^60 - 1 ns after the Unix epoch (2006-07-14T23:58:24.606846975Z).
const LAST_TICK_NS: u64 = (1 << 60) - 1;

fn at_the_end() -> Generator<ManualClock> {
    let layout = Layout::parse_spec(SPEC).unwrap();
    let clock = ManualClock::new(LAST_TICK_NS);
    Generator::with_clock(&Scheme::Custom(layout), None, clock, Policy::UNBOUNDED).unwrap()
}

fn out_of_range<T: std::fmt::Debug>(r: Result<T, Error>) {
    assert!(
        matches!(r, Err(Error::TimeOutOfRange { .. })),
        "expected TimeOutOfRange, got {r:?}"
    );
}

#[test]
fn next_issues_the_last_16_ids_then_fails() {
    let g = at_the_end();
    let ids: Vec<u128> = (0..16).map(|_| g.next().unwrap()).collect();
    assert_eq!(ids[0], u128::from(u64::MAX - 15));
    assert_eq!(ids[15], u128::from(u64::MAX));
    out_of_range(g.next());
}

#[test]
fn fill_up_to_the_last_stamp_then_fails() {
    let g = at_the_end();
    let mut out = [0u128; 16];
    g.fill(&mut out).unwrap();
    let want: Vec<u128> = (u64::MAX - 15..=u64::MAX).map(u128::from).collect();
    assert_eq!(out.to_vec(), want);
    out_of_range(g.fill(&mut out[..1]));
}

#[test]
fn a_batch_up_to_the_last_stamp_then_fails() {
    let g = at_the_end();
    let ids: Vec<u128> = g.reserve(16).unwrap().collect();
    assert_eq!(ids.len(), 16);
    assert_eq!(ids[15], u128::from(u64::MAX));
    out_of_range(g.reserve(1).map(|b| b.count()));
}

#[test]
fn a_stamp_range_up_to_the_last_stamp_then_fails() {
    let tb = Layout::parse_spec(SPEC).unwrap().timebase();
    let seq = Sequencer::new(ManualClock::new(LAST_TICK_NS), tb, Policy::UNBOUNDED).unwrap();
    let stamps: Vec<u64> = seq.reserve(16).unwrap().collect();
    assert_eq!(stamps, (u64::MAX - 15..=u64::MAX).collect::<Vec<_>>());
    out_of_range(seq.reserve(1).map(|r| r.len));
}

#[test]
fn a_block_up_to_the_last_stamp_then_fails() {
    let g = at_the_end();
    let mut b = g.blocks(16);
    let ids: Vec<u128> = (0..16).map(|_| b.next().unwrap()).collect();
    assert_eq!(ids[15], u128::from(u64::MAX));
    out_of_range(b.next());
}
