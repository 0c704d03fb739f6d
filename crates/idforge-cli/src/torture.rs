//! `idforge torture`: everything at once, for a bounded time, with one summary at the end.
//!
//! * processes: several `idforge gen --shared` processes on one state file, one of them killed
//!   with SIGKILL and restarted every few hundred milliseconds;
//! * forks: a process that takes ids, forks, and has parent and child keep taking ids;
//! * threads: more threads than cores on one in-process generator, for a scheme whose counter
//!   runs out (Snowflake, `Wait`) and one that runs ahead (GlobalId, `RunAhead`);
//! * clock: threads on generators driven by a clock that an injector steps back by 1 ms to 35 min
//!   and forward again, under the `Fail` and the unbounded policies.
//!
//! Every id issued is collected; the summary counts duplicates and order violations (both must be
//! 0) and the events survived. Exit code 1 if either count is not 0. The workers generate in
//! bursts with pauses (a few hundred thousand ids per second in all), so that a 30-minute run's
//! ids fit in memory for the final check.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Args;
use idforge::{
    Clock, Error, Generator, ManualClock, OnClockBehind, OnExhausted, Policy, Scheme, WallClock,
};

/// Options of `idforge torture`.
#[derive(Args, Debug)]
pub struct TortureArgs {
    /// How long to run, e.g. 120s, 30m.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    duration: Duration,
    /// Generator processes sharing one state file.
    #[arg(long, default_value_t = 3)]
    processes: usize,
    /// Threads per in-process generator (more than the cores: oversubscribed).
    #[arg(long, default_value_t = 8)]
    threads: usize,
    /// Directory for the state file and the processes' output (default: a new temporary one).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 90s, 2m or 1h"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("unknown unit in {s:?}: use s, m or h")),
    };
    Ok(Duration::from_secs(secs))
}

/// Ids collected from one source, checked for order per source and uniqueness per id space.
#[derive(Default)]
struct Tally {
    /// Id space (scheme and node) -> every id issued in it.
    spaces: HashMap<&'static str, Vec<u128>>,
    order_violations: u64,
    restarts: u64,
    kills: u64,
    forks: u64,
    clock_jumps: u64,
    refusals: u64,
    /// Ids and duplicates of the fork rounds (each round checked on its own).
    fork_ids: u64,
    fork_duplicates: u64,
    /// Calls that failed where no failure is expected.
    errors: u64,
}

impl Tally {
    /// Adds one source's ids (in issue order) to an id space.
    fn add(&mut self, space: &'static str, ids: &[u128]) {
        self.order_violations += ids.windows(2).filter(|w| w[0] >= w[1]).count() as u64;
        self.spaces.entry(space).or_default().extend_from_slice(ids);
    }
}

struct Shared {
    stop: AtomicBool,
    tally: Mutex<Tally>,
    issued: AtomicU64,
}

impl Shared {
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }
    fn add(&self, space: &'static str, ids: &[u128]) {
        self.issued.fetch_add(ids.len() as u64, Ordering::Relaxed);
        self.tally
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(space, ids);
    }
    fn count(&self, f: impl FnOnce(&mut Tally)) {
        f(&mut self.tally.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// Runs the torture.
pub fn run(a: TortureArgs) -> anyhow::Result<ExitCode> {
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("idforge-torture-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let exe = std::env::current_exe()?;
    let shared = Shared {
        stop: AtomicBool::new(false),
        tally: Mutex::new(Tally::default()),
        issued: AtomicU64::new(0),
    };
    let start = Instant::now();
    eprintln!(
        "idforge torture: {:?}, {} processes, {} threads per generator, in {}",
        a.duration,
        a.processes,
        a.threads,
        dir.display()
    );
    std::thread::scope(|s| -> anyhow::Result<()> {
        let sh = &shared;
        let procs = s.spawn(|| processes(sh, &exe, &dir, a.processes));
        let forks = s.spawn(|| forks(sh, &exe, &dir));
        let snow = s.spawn(|| {
            threads_on(
                sh,
                "snowflake/node 2 (Wait)",
                Scheme::Snowflake,
                Some(2),
                Policy::DEFAULT,
                a.threads,
            )
        });
        let run_ahead = Policy {
            on_exhausted: OnExhausted::RunAhead,
            max_lead: Duration::from_millis(50),
            on_clock_behind: OnClockBehind::Wait,
        };
        let gid = s.spawn(move || {
            threads_on(
                sh,
                "global-id/node 4 (RunAhead)",
                Scheme::GlobalId,
                Some(4),
                run_ahead,
                a.threads,
            )
        });
        let clock = s.spawn(|| clock_jumps(sh, a.threads.min(4)));
        // Progress every 10 s, then stop.
        let mut reported = 0;
        while start.elapsed() < a.duration {
            std::thread::sleep(
                Duration::from_millis(250).min(a.duration.saturating_sub(start.elapsed())),
            );
            if start.elapsed().as_secs() / 10 > reported {
                reported = start.elapsed().as_secs() / 10;
                eprint!(
                    "\ridforge torture: {:>4}s of {}s, {} ids   ",
                    start.elapsed().as_secs(),
                    a.duration.as_secs(),
                    shared.issued.load(Ordering::Relaxed)
                );
            }
        }
        shared.stop.store(true, Ordering::Relaxed);
        eprintln!();
        for h in [procs, forks, snow, gid, clock] {
            h.join()
                .map_err(|_| anyhow::anyhow!("a torture worker panicked"))??;
        }
        Ok(())
    })?;
    let mut t = shared.tally.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut issued = 0u64;
    let mut duplicates = 0u64;
    let mut per_space = Vec::new();
    for (space, ids) in t.spaces.iter_mut() {
        ids.sort_unstable();
        let d = ids.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        issued += ids.len() as u64;
        duplicates += d;
        per_space.push(format!(
            "  {space:<34} {:>12} ids, {d} duplicates",
            ids.len()
        ));
    }
    issued += t.fork_ids;
    duplicates += t.fork_duplicates;
    per_space.push(format!(
        "  {:<40} {:>12} ids, {} duplicates",
        "uuid7 (fork rounds: parent + child)", t.fork_ids, t.fork_duplicates
    ));
    per_space.sort();
    let secs = start.elapsed().as_secs_f64();
    let mut out = std::io::stdout().lock();
    writeln!(out, "idforge torture summary ({secs:.0} s)")?;
    writeln!(out, "  ids issued            {issued}")?;
    writeln!(out, "  duplicates            {duplicates}   (must be 0)")?;
    writeln!(
        out,
        "  order violations      {}   (must be 0)",
        t.order_violations
    )?;
    writeln!(out, "  unexpected errors     {}   (must be 0)", t.errors)?;
    writeln!(out, "  processes killed (-9) {}", t.kills)?;
    writeln!(out, "  restarts              {}", t.restarts)?;
    writeln!(out, "  forks                 {}", t.forks)?;
    writeln!(out, "  clock jumps survived  {}", t.clock_jumps)?;
    writeln!(
        out,
        "  calls refused (clock behind, Fail policy) {}",
        t.refusals
    )?;
    writeln!(out, "per id space:")?;
    for l in per_space {
        writeln!(out, "{l}")?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(
        if duplicates == 0 && t.order_violations == 0 && issued > 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        },
    )
}

fn read_hex_ids(path: &Path, width: usize) -> Vec<u128> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| l.len() == width) // a killed process may leave a partial last line
        .filter_map(|l| u128::from_str_radix(l, 16).ok())
        .collect()
}

fn spawn_gen(exe: &Path, state: &Path, out: &Path, count: u64) -> anyhow::Result<Child> {
    let f = std::fs::File::create(out)?;
    Ok(Command::new(exe)
        .args([
            "gen",
            "snowflake",
            "--node",
            "1",
            "--shared",
            "--format",
            "hex",
            "-n",
        ])
        .arg(count.to_string())
        .arg("--state")
        .arg(state)
        .env_remove("IDFORGE_NODE")
        .stdout(f)
        .stderr(Stdio::null())
        .spawn()?)
}

/// Processes on one state file, each slot in a loop: start `idforge gen --shared`, let it run
/// 1 to 8 ms, kill it with SIGKILL if it has not finished, collect what it printed, pause. Every
/// run's first id must be above every id collected before the run started.
fn processes(sh: &Shared, exe: &Path, dir: &Path, n: usize) -> anyhow::Result<()> {
    let state = dir.join("snowflake.state");
    let space = "snowflake/node 1 (processes, kill -9)";
    let collected_max = Mutex::new(0u128);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|slot| {
                let (state, collected_max) = (&state, &collected_max);
                s.spawn(move || -> anyhow::Result<()> {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (slot as u64 + 1);
                    let mut run = 0u64;
                    while sh.running() {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let before = *collected_max.lock().unwrap_or_else(|p| p.into_inner());
                        let out = dir.join(format!("proc{slot}-{run}.out"));
                        let mut child = spawn_gen(exe, state, &out, 5_000)?;
                        std::thread::sleep(Duration::from_micros(1_000 + x % 7_000));
                        if child.try_wait()?.is_none() {
                            child.kill()?;
                            sh.count(|t| t.kills += 1);
                        }
                        child.wait()?;
                        let ids = read_hex_ids(&out, 16);
                        let _ = std::fs::remove_file(&out);
                        if ids.first().is_some_and(|&f| f <= before) {
                            sh.count(|t| t.order_violations += 1);
                        }
                        if let Some(&l) = ids.last() {
                            let mut m = collected_max.lock().unwrap_or_else(|p| p.into_inner());
                            *m = (*m).max(l);
                        }
                        sh.add(space, &ids);
                        sh.count(|t| t.restarts += 1);
                        run += 1;
                        std::thread::sleep(Duration::from_millis(150));
                    }
                    Ok(())
                })
            })
            .collect();
        hs.into_iter().try_for_each(|h| {
            h.join()
                .map_err(|_| anyhow::anyhow!("a process slot panicked"))?
        })
    })
}

/// Once a second: a fresh `idforge torture-fork` process takes ids, forks, and parent and child
/// take more from the same in-process generator.
fn forks(sh: &Shared, exe: &Path, dir: &Path) -> anyhow::Result<()> {
    let mut round = 0u64;
    while sh.running() {
        let out = dir.join(format!("fork{round}"));
        std::fs::create_dir_all(&out)?;
        let status = Command::new(exe)
            .args(["torture-fork", "--count", "20000", "--out"])
            .arg(&out)
            .status()?;
        if !status.success() {
            anyhow::bail!("torture-fork failed: {status}");
        }
        // Parent and child files: one id space for the two processes.
        let mut ids = Vec::new();
        for e in std::fs::read_dir(&out)? {
            let mut v = read_hex_ids(&e?.path(), 32);
            sh.count(|t| {
                t.order_violations += v.windows(2).filter(|w| w[0] >= w[1]).count() as u64
            });
            ids.append(&mut v);
        }
        // Each fork round is its own id space (a new process, a new generator): uniqueness is
        // checked between parent and child.
        ids.sort_unstable();
        let dups = ids.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        sh.issued.fetch_add(ids.len() as u64, Ordering::Relaxed);
        sh.count(|t| {
            t.forks += 1;
            t.fork_ids += ids.len() as u64;
            t.fork_duplicates += dups;
        });
        let _ = std::fs::remove_dir_all(&out);
        round += 1;
        for _ in 0..10 {
            if !sh.running() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// The child side of a fork round: take ids, fork, parent and child each take `count` more and
/// write them to `<out>/<pid>` as hex lines.
pub fn fork_child(out: &Path, count: usize) -> anyhow::Result<ExitCode> {
    let g = Generator::new(&Scheme::Uuid7, None)?;
    let mut ids = Vec::with_capacity(count + 1000);
    for _ in 0..1000 {
        ids.push(g.next()?);
    }
    // SAFETY: this process is single-threaded (no thread was spawned before this point), so the
    // child may run ordinary code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        anyhow::bail!("fork failed: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        ids.clear(); // the pre-fork ids belong to the parent's file
    }
    for _ in 0..count {
        ids.push(g.next()?);
    }
    let mut text = String::with_capacity(ids.len() * 33);
    for id in &ids {
        text.push_str(&format!("{id:032x}\n"));
    }
    std::fs::write(out.join(std::process::id().to_string()), text)?;
    if pid > 0 {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
    Ok(ExitCode::SUCCESS)
}

/// `threads` threads (more than the cores) on one generator, in bursts.
fn threads_on(
    sh: &Shared,
    space: &'static str,
    scheme: Scheme,
    node: Option<u64>,
    policy: Policy,
    threads: usize,
) -> anyhow::Result<()> {
    let g = Generator::with_clock(&scheme, node, WallClock, policy)?;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while sh.running() {
                    let mut burst = Vec::with_capacity(2_000);
                    for _ in 0..2_000 {
                        match g.next() {
                            Ok(id) => burst.push(id),
                            // Wait and RunAhead never fail on the wall clock: any error is a defect.
                            Err(_) => sh.count(|t| t.errors += 1),
                        }
                    }
                    sh.add(space, &burst);
                    std::thread::sleep(Duration::from_millis(250));
                }
            });
        }
    });
    Ok(())
}

/// Generators on a clock that an injector steps back (1 ms to 35 min) and forward again.
fn clock_jumps(sh: &Shared, threads: usize) -> anyhow::Result<()> {
    let clock = ManualClock::at_wall_time();
    clock.auto_advance(1_000); // every read moves time by 1 us
    let fail = Generator::with_clock(&Scheme::GlobalId, Some(7), clock.clone(), Policy::DEFAULT)?;
    let unbounded =
        Generator::with_clock(&Scheme::GlobalId, Some(8), clock.clone(), Policy::UNBOUNDED)?;
    std::thread::scope(|s| {
        for t in 0..threads {
            let g = if t % 2 == 0 { &fail } else { &unbounded };
            let space = if t % 2 == 0 {
                "global-id/node 7 (clock jumps, Fail)"
            } else {
                "global-id/node 8 (clock jumps, unbounded)"
            };
            s.spawn(move || {
                while sh.running() {
                    let mut burst = Vec::with_capacity(1_000);
                    let mut refused = 0;
                    for _ in 0..1_000 {
                        match g.next() {
                            Ok(id) => burst.push(id),
                            Err(Error::ClockBehind { .. }) => refused += 1,
                            Err(_) => sh.count(|t| t.errors += 1),
                        }
                    }
                    sh.add(space, &burst);
                    sh.count(|t| t.refusals += refused);
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
        s.spawn(|| {
            let mut x = 0xD1B5_4A32_D192_ED03u64;
            while sh.running() {
                std::thread::sleep(Duration::from_millis(100));
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // 1 ms .. 2^21 ms (35 min), log-uniform.
                let back = (1u64 << (x % 22)) * 1_000_000;
                clock.step_back(back);
                sh.count(|t| t.clock_jumps += 1);
                std::thread::sleep(Duration::from_millis(50));
                clock.advance(back); // the correction
            }
        });
    });
    let _ = clock.now_ns();
    Ok(())
}
