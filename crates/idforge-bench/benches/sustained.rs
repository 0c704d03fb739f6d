//! Sustained rate of `nanots` and `nanots-host` for one second, with the lead over the wall clock
//! sampled throughout: 2 threads on one in-process generator (on its default clock,
//! CLOCK_REALTIME, and on the counter and ticker clocks), 2 threads on one host-wide generator,
//! and 2 processes on one state file.
//!
//! Run: `cargo bench -p idforge-bench --bench sustained`. Prints one line per case; no criterion
//! (the quantity is a rate over a fixed second, not a per-call time).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use idforge::schemes::nanots;
use idforge::ticker::TickerClock;
use idforge::{Clock, Generator, Scheme, StateOptions, SystemClock, WallClock};

const SECOND: Duration = Duration::from_secs(1);

/// Runs `threads` threads calling `next` for one second; returns (ids, max lead seen).
fn run<F: Fn() -> u64 + Sync, L: Fn() -> Duration + Sync>(
    threads: usize,
    next: F,
    lead: L,
) -> (u64, Duration) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, next, lead) = (&stop, &next, &lead);
                s.spawn(move || {
                    let mut n = 0u64;
                    let mut max_lead = Duration::ZERO;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..256 {
                            std::hint::black_box(next());
                        }
                        n += 256;
                        if t == 0 && n % 4096 == 0 {
                            max_lead = max_lead.max(lead());
                        }
                    }
                    (n, max_lead)
                })
            })
            .collect();
        std::thread::sleep(SECOND);
        stop.store(true, Ordering::Relaxed);
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, Duration::ZERO), |(n, l), (m, k)| (n + m, l.max(k)))
    })
}

fn report(case: &str, capacity: f64, (ids, lead): (u64, Duration)) {
    println!(
        "{case:<44} {:>6.2} M ids/s = {:>5.1}% of {:.2} M/s; max lead {:?}",
        ids as f64 / 1e6,
        ids as f64 * 100.0 / capacity,
        capacity / 1e6,
        lead
    );
}

/// How far the last stamp is ahead of CLOCK_REALTIME (the stamp first, then the clock).
fn wall_lead<C: Clock, S: idforge::StampCell>(seq: &idforge::Sequencer<C, S>) -> Duration {
    let at = seq.stamp_unix_ns(seq.last_stamp());
    Duration::from_nanos(
        u64::try_from(at.saturating_sub(WallClock.now_ns() as u128)).unwrap_or(u64::MAX),
    )
}

fn state_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("idforge-sustained-{name}.state"))
}

fn host_wide_nanots(name: &str) -> Generator<WallClock, idforge::HostStamp> {
    let opts = StateOptions::new(state_path(name));
    Generator::host_wide(
        &Scheme::NanoTs,
        None,
        WallClock,
        Scheme::NanoTs.default_policy(),
        &opts,
    )
    .unwrap()
}

fn main() {
    if std::env::var_os("IDFORGE_SUSTAINED_CHILD").is_some() {
        let g = host_wide_nanots("two-processes");
        let (n, lead) = run(1, || g.next_u64().unwrap(), || g.sequencer().lead());
        println!("{n} {}", lead.as_nanos());
        return;
    }
    let cap_ns = 1e9 / 32.0;
    let g = Generator::new(&Scheme::NanoTs, None).unwrap();
    report(
        "nanots, 1 thread, in-process",
        cap_ns,
        run(1, || g.next_u64().unwrap(), || g.sequencer().lead()),
    );
    report(
        "nanots, 2 threads, in-process",
        cap_ns,
        run(2, || g.next_u64().unwrap(), || g.sequencer().lead()),
    );
    // The cheap clocks (`--clock counter`, `--clock ticker`), the lead measured against
    // CLOCK_REALTIME rather than the generator's own clock (which the ticker lags).
    let policy = Scheme::NanoTs.default_policy();
    let counter =
        Generator::with_clock(&Scheme::NanoTs, None, SystemClock::fast(), policy).unwrap();
    report(
        "nanots, 2 threads, in-process, counter clock",
        cap_ns,
        run(
            2,
            || counter.next_u64().unwrap(),
            || wall_lead(counter.sequencer()),
        ),
    );
    let ticker =
        Generator::with_clock(&Scheme::NanoTs, None, TickerClock::start().unwrap(), policy)
            .unwrap();
    report(
        "nanots, 2 threads, in-process, ticker clock",
        cap_ns,
        run(
            2,
            || ticker.next_u64().unwrap(),
            || wall_lead(ticker.sequencer()),
        ),
    );
    let _ = std::fs::remove_file(state_path("threads"));
    let h = host_wide_nanots("threads");
    report(
        "nanots, 2 threads, host-wide",
        cap_ns,
        run(2, || h.next_u64().unwrap(), || h.sequencer().lead()),
    );

    let _ = std::fs::remove_file(state_path("two-processes"));
    let exe = std::env::current_exe().unwrap();
    let kids: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .env("IDFORGE_SUSTAINED_CHILD", "1")
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut total = (0u64, Duration::ZERO);
    for k in kids {
        let out = String::from_utf8(k.wait_with_output().unwrap().stdout).unwrap();
        let mut it = out.split_whitespace().map(|v| v.parse::<u64>().unwrap());
        let (n, lead) = (it.next().unwrap(), it.next().unwrap());
        total = (total.0 + n, total.1.max(Duration::from_nanos(lead)));
    }
    report("nanots, 2 processes, one state file", cap_ns, total);

    let cap_host = 1e9 / 100.0;
    let hg = nanots::HostGenerator::new(28, 2).unwrap();
    report(
        "nanots-host, 2 threads, in-process",
        cap_host,
        run(2, || hg.next().unwrap(), || hg.sequencer().lead()),
    );
}
