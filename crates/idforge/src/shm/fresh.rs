//! How a new state file starts: how long its creator waits and the stamp it starts at, so that
//! its ids start above those of processes still using a deleted file at the same path.
//!
//! The argument, for a file deleted while processes still issue from it and created again at
//! the same path:
//!
//! 1. A process issuing from a state file checks that its path still names the file whenever
//!    its clock has moved [`CHECK_INTERVAL`] since its last check (or its stamp has moved that
//!    much time's worth of stamps), on the very call that would issue the id: a process whose
//!    clock (a ticker whose thread is not scheduled) stands still issues only readings from
//!    before its next check. The creator waits [`FRESH_MARGIN`], longer than the interval,
//!    before it reads the clock: every reading another process issues from the deleted file
//!    is then earlier than the creator's reading `now` (the creator's reading is precise; a
//!    cheap reading is at most [`Clock::max_error_ns`](crate::Clock::max_error_ns) ahead of
//!    the real time).
//! 2. The sequencer never issues a stamp whose tick starts more than the lead its policy
//!    allows ahead of the reading it issued from ([`fresh_lead`]): nothing under `Wait` (whose
//!    stamps lead only after the clock stepped back), `max_lead` under `RunAhead` and in
//!    durable mode (a process that recovered to the durable mark issues from up there).
//! 3. So every stamp of the deleted file is in a tick at or below the tick of
//!    `now + lead + error`, with any counter: the new file starts at counter 0 of the tick
//!    after that ([`fresh_stamp`]), whatever the tick's length. It starts ahead of the clock
//!    instead of sleeping the lead, which the policy allows; the generator then waits, outside
//!    the directory's lock, for the part of the lead its policy does not let it issue from
//!    (see `host_wide_sequencer`).
//!
//! Not covered: the system clock stepping back while the file is deleted and created again
//! (the processes on the deleted file may lead the stepped-back clock by up to `max_lead`);
//! GUARANTEES.md lists it.

use std::time::Duration;

use crate::sequencer::{OnExhausted, Policy, Timebase};

/// How often (in wall-clock time, and in stamp time) a process checks that its state file's path
/// still names the file it mapped.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(1);

/// How long a process that creates a state file waits, holding the directory's lock, before it
/// reads the clock for the file's first stamp: more than [`CHECK_INTERVAL`], so processes still
/// using a deleted file at the same path issue nothing from a later reading (module docs).
pub const FRESH_MARGIN: Duration = Duration::from_millis(2);

/// The lead a fresh state file allows for under the unbounded policy of a fixed clock (whose
/// lead has no bound to allow for) in durable mode.
const UNBOUNDED_FRESH_LEAD: Duration = Duration::from_secs(1);

/// How far ahead of its reading a process following `policy` may have issued from a state file
/// (see the module docs): `max_lead` under `RunAhead` (nothing for the unbounded policy of a
/// fixed clock, `--at`, whose clock does not move), nothing under `Wait`; in durable mode
/// `max_lead` under either (one second for the unbounded policy), since a process that
/// recovered to the durable mark issues from there while it is within `max_lead`.
pub fn fresh_lead(policy: &Policy, durable: bool) -> Duration {
    let unbounded = policy.max_lead == Duration::MAX;
    match (durable, policy.on_exhausted) {
        (true, _) if unbounded => UNBOUNDED_FRESH_LEAD,
        (true, _) => policy.max_lead,
        (false, OnExhausted::RunAhead) if unbounded => Duration::ZERO,
        (false, OnExhausted::RunAhead) => policy.max_lead,
        (false, OnExhausted::Wait) => Duration::ZERO,
    }
}

/// How far ahead of its clock a process following `policy` may issue in normal operation:
/// `max_lead` under `RunAhead` (one second for the unbounded policy), nothing under `Wait`
/// (whose lead comes only from a clock that stepped back). A generator that opened a state file
/// waits while the file's stamp leads its clock by more than this.
pub fn policy_lead(policy: &Policy) -> Duration {
    match policy.on_exhausted {
        OnExhausted::RunAhead if policy.max_lead == Duration::MAX => UNBOUNDED_FRESH_LEAD,
        OnExhausted::RunAhead => policy.max_lead,
        OnExhausted::Wait => Duration::ZERO,
    }
}

/// The stamp a newly created state file starts at, for a creator whose precise clock read
/// `now_ns` after [`FRESH_MARGIN`], when processes on a deleted predecessor may have issued up
/// to `lead_ns` ahead of their clock (the [`fresh_lead`] plus the clock's error): the last stamp
/// of the tick holding `now_ns + lead_ns`, so that the first id takes counter 0 of the tick
/// after it. A file whose stamp cannot hold that tick starts at the largest stamp: it issues
/// nothing (every call says the time is out of the layout's range).
pub fn fresh_stamp(tb: &Timebase, now_ns: u64, lead_ns: u64) -> u64 {
    let at = u128::from(now_ns) + u128::from(lead_ns);
    let tick = at.saturating_sub(u128::from(tb.epoch_ns)) / u128::from(tb.tick_ns);
    let first = (tick + 1) << tb.counter_bits;
    if first > u128::from(tb.max_stamp()) {
        tb.max_stamp()
    } else {
        first as u64 - 1
    }
}
