//! How a new state file starts: how long its creator waits and the stamp it starts at, so that
//! its ids start above those of processes still using a deleted file at the same path.

use std::time::Duration;

use crate::sequencer::{OnExhausted, Policy, Timebase};

/// How often (in wall-clock time, and in stamp time) a process checks that its state file's path
/// still names the file it mapped.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(1);

/// How long a process that creates a state file waits before it reads the clock for the file's
/// first stamp ([`fresh_wait`]): more than [`CHECK_INTERVAL`], so processes still using a deleted
/// file at the same path have stopped, and their stamps are below the clock (plus the lead their
/// policy allows).
pub const FRESH_MARGIN: Duration = Duration::from_millis(2);

/// The lead a fresh state file allows for under the unbounded policy of a fixed clock (whose
/// lead has no bound to allow for).
const UNBOUNDED_FRESH_LEAD: Duration = Duration::from_secs(1);

/// How long the process that creates a state file waits, after it found the file missing and
/// before it reads the clock for the new file's first stamp: [`FRESH_MARGIN`], plus the lead a
/// process may issue ahead of its clock under `RunAhead` (`max_lead`), plus one second in
/// durable mode (a process that recovered to a durable mark may be up to that far ahead).
/// Processes still issuing from a deleted file at the same path (with the same policy) stop
/// within [`CHECK_INTERVAL`], and their stamps were at most that far ahead of the clock: the new
/// file's stamps start above theirs. The unbounded policy of a fixed clock (`--at`) has no lead
/// to wait out.
pub fn fresh_wait(policy: &Policy, durable: bool) -> Duration {
    let lead = match policy.on_exhausted {
        OnExhausted::RunAhead if policy.max_lead == Duration::MAX => Duration::ZERO,
        OnExhausted::RunAhead => policy.max_lead,
        OnExhausted::Wait => Duration::ZERO,
    };
    FRESH_MARGIN
        + lead
        + if durable {
            Duration::from_secs(1)
        } else {
            Duration::ZERO
        }
}

/// How far ahead of its clock a process following `policy` may issue: `max_lead` under
/// `RunAhead` (one second for the unbounded policy), nothing under `Wait` (whose lead comes only
/// from a clock that stepped back).
pub fn policy_lead(policy: &Policy) -> Duration {
    match policy.on_exhausted {
        OnExhausted::RunAhead if policy.max_lead == Duration::MAX => UNBOUNDED_FRESH_LEAD,
        OnExhausted::RunAhead => policy.max_lead,
        OnExhausted::Wait => Duration::ZERO,
    }
}

/// The stamp a newly created state file starts at, for a generator whose clock reads `now_ns`
/// (read after `HostStamp::open_fresh` waited [`fresh_wait`]): the clock's tick, less one so
/// that the first id takes counter 0 of that tick.
pub fn fresh_stamp(tb: &Timebase, now_ns: u64) -> u64 {
    let at = u128::from(now_ns);
    let tick = at.saturating_sub(u128::from(tb.epoch_ns)) / u128::from(tb.tick_ns);
    let stamp = tick << tb.counter_bits;
    if stamp > u128::from(tb.max_stamp()) {
        0
    } else {
        (stamp as u64).saturating_sub(1)
    }
}
