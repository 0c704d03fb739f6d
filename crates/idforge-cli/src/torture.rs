//! `idforge torture`: everything at once, for a bounded time, with one summary at the end.
//!
//! * processes: several `idforge gen --shared` processes on one state file, one of them killed
//!   with SIGKILL and restarted every few hundred milliseconds;
//! * forks: processes that take ids, fork, and have parent and child keep taking ids from the same
//!   in-process generator: `uuid7` (random bits), and Snowflake running ahead of the clock (no
//!   random bits: only the stamp page shared across the fork keeps parent and child apart); and
//!   Snowflake running ahead on a node id leased from a fleet (an in-memory store: no etcd
//!   needed), whose forked child must be refused every id and then joins the fleet itself;
//! * threads: more threads than cores on one in-process generator, for a scheme whose counter
//!   runs out (Snowflake, `Wait`) and one that runs ahead (GlobalId, `RunAhead`);
//! * clock: threads on generators driven by a clock that an injector steps back by 1 ms to 35 min
//!   and forward again, under the `Fail` and the unbounded policies.
//!
//! Every id issued is collected; the summary counts duplicates and order violations, unexpected
//! errors, child processes that failed, and sources that issued no id. The workers generate in
//! bursts with pauses (a few hundred thousand ids per second in all), so that a 30-minute run's
//! ids fit in memory for the final check.
//!
//! Exit status: 0 when every check passed; 1 when one failed (the summary says which); 2 when
//! the run could not start (a `--dir` that is not empty, say); 130 or 143 when SIGINT or SIGTERM
//! stopped it early and no check failed (the summary covers what ran). A second SIGINT or
//! SIGTERM ends torture at once, without cleaning up.
//!
//! Torture works in a directory of its own: a new one under the temporary directory, or `--dir`,
//! which must be empty or not exist. It removes only what it created there (and the directory,
//! if it created it), also after an error or a signal. Its child processes run in their own
//! process groups, so a terminal's Ctrl-C reaches only torture, which winds them down itself.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use idforge::{
    Clock, Error, Generator, ManualClock, OnClockBehind, OnExhausted, Policy, ProcessStamp, Scheme,
    StateOptions, SystemClock, WallClock,
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
    /// Directory for the state file and the processes' output: must be empty or not exist
    /// (default: a new directory under the temporary directory). Torture removes only what it
    /// created there.
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

/// The id spaces of the in-process and process workers (fork rounds are counted apart).
const PROCESSES: &str = "snowflake/node 1 (processes, kill -9)";
const SNOWFLAKE_WAIT: &str = "snowflake/node 2 (Wait)";
const GLOBAL_ID_RUN_AHEAD: &str = "global-id/node 4 (RunAhead)";
const CLOCK_FAIL: &str = "global-id/node 7 (clock jumps, Fail)";
const CLOCK_UNBOUNDED: &str = "global-id/node 8 (clock jumps, unbounded)";
const SPACES: [&str; 5] = [
    PROCESSES,
    SNOWFLAKE_WAIT,
    GLOBAL_ID_RUN_AHEAD,
    CLOCK_FAIL,
    CLOCK_UNBOUNDED,
];

/// The generator of a fork round.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ForkScheme {
    /// uuid7: 58 random bits per id (a collision would also need equal random bits).
    Uuid7,
    /// Snowflake node 3 running ahead of the clock: no random bits.
    Snowflake,
    /// Snowflake running ahead on a node id leased from a fleet (in-memory store): the child's
    /// inherited cell must refuse every id; it then joins the fleet itself.
    Fleet,
}

impl ForkScheme {
    const ALL: [ForkScheme; 3] = [ForkScheme::Uuid7, ForkScheme::Snowflake, ForkScheme::Fleet];

    fn arg(self) -> &'static str {
        match self {
            ForkScheme::Uuid7 => "uuid7",
            ForkScheme::Snowflake => "snowflake",
            ForkScheme::Fleet => "fleet",
        }
    }

    fn space(self) -> &'static str {
        match self {
            ForkScheme::Uuid7 => "uuid7 (fork rounds: parent + child)",
            ForkScheme::Snowflake => "snowflake/node 3 (fork rounds, RunAhead)",
            ForkScheme::Fleet => "snowflake/fleet lease (fork rounds)",
        }
    }

    /// Hex digits of an id.
    fn width(self) -> usize {
        match self {
            ForkScheme::Uuid7 => 32,
            ForkScheme::Snowflake | ForkScheme::Fleet => 16,
        }
    }
}

/// Ids of the fork rounds of one scheme; each round is its own id space (a new process with a
/// new generator), checked between parent and child.
#[derive(Default)]
struct ForkTally {
    rounds: u64,
    ids: u64,
    duplicates: u64,
}

/// Ids collected from one source, checked for order per source and uniqueness per id space.
#[derive(Default)]
struct Tally {
    /// Id space (scheme and node) -> every id issued in it.
    spaces: BTreeMap<&'static str, Vec<u128>>,
    forks: BTreeMap<ForkScheme, ForkTally>,
    order_violations: u64,
    restarts: u64,
    kills: u64,
    clock_jumps: u64,
    refusals: u64,
    /// Calls or workers that failed where no failure is expected.
    errors: u64,
    /// Child processes that failed: exited non-zero, or died by a signal torture did not send.
    child_failures: u64,
    /// The first few messages of errors and failures, for the summary.
    problems: Vec<String>,
}

impl Tally {
    /// Adds one source's ids (in issue order) to an id space.
    fn add(&mut self, space: &'static str, ids: &[u128]) {
        self.order_violations += ids.windows(2).filter(|w| w[0] >= w[1]).count() as u64;
        self.spaces.entry(space).or_default().extend_from_slice(ids);
    }

    fn note(&mut self, problem: String) {
        if self.problems.len() < 10 && !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
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
        self.count(|t| t.add(space, ids));
    }
    fn count(&self, f: impl FnOnce(&mut Tally)) {
        f(&mut self.tally.lock().unwrap_or_else(|p| p.into_inner()));
    }
    /// An unexpected error.
    fn error(&self, problem: String) {
        self.count(|t| {
            t.errors += 1;
            t.note(problem);
        });
    }
    /// A child process that failed.
    fn child_failed(&self, problem: String) {
        self.count(|t| {
            t.child_failures += 1;
            t.note(problem);
        });
    }
}

/// The signal (SIGINT or SIGTERM) that asked torture to stop, or 0.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: one atomic store. The main loop sees it and winds the run down.
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// SIGINT and SIGTERM set [`SIGNAL`] once; a second one has the default effect (SA_RESETHAND).
fn install_signal_handlers() -> anyhow::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed `sigaction` is a valid value to fill in; the handler only stores to
        // an atomic, which is async-signal-safe; `sigaction` gets valid pointers.
        let r = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if r != 0 {
            anyhow::bail!(
                "cannot install the handler of signal {sig}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// Torture's working directory and everything torture created in it. Dropping it (at the end, or
/// on an early return or a panic) removes what torture created and nothing else: the directory
/// itself only if torture created it.
struct Workdir {
    dir: PathBuf,
    created_dir: bool,
    /// Files and subdirectories torture created (subdirectories with what its children wrote in
    /// them).
    created: Mutex<HashSet<PathBuf>>,
}

impl Workdir {
    /// `--dir` if given (it must be empty or not exist), else a new temporary directory.
    fn open(dir: Option<&Path>) -> anyhow::Result<Workdir> {
        let created_dir = match dir {
            Some(d) => match std::fs::read_dir(d) {
                Ok(mut entries) => {
                    if entries.next().is_some() {
                        anyhow::bail!(
                            "--dir {}: the directory is not empty; torture removes what it creates there, so pass an empty or new directory",
                            d.display()
                        );
                    }
                    false
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir(d).map_err(|e| {
                        anyhow::anyhow!(
                            "--dir {}: cannot create the directory: {e}; pass an empty or new directory whose parent exists",
                            d.display()
                        )
                    })?;
                    true
                }
                Err(e) => {
                    anyhow::bail!("--dir {}: {e}; pass an empty or new directory", d.display())
                }
            },
            None => false,
        };
        if let Some(d) = dir {
            return Ok(Workdir {
                dir: d.to_path_buf(),
                created_dir,
                created: Mutex::new(HashSet::new()),
            });
        }
        let base = std::env::temp_dir();
        let nanos = WallClock.now_ns();
        for attempt in 0..100u64 {
            let d = base.join(format!(
                "idforge-torture-{}-{:x}",
                std::process::id(),
                nanos.wrapping_add(attempt)
            ));
            match std::fs::create_dir(&d) {
                Ok(()) => {
                    return Ok(Workdir {
                        dir: d,
                        created_dir: true,
                        created: Mutex::new(HashSet::new()),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => anyhow::bail!(
                    "cannot create a temporary directory in {}: {e}; pass --dir DIR",
                    base.display()
                ),
            }
        }
        anyhow::bail!(
            "cannot find a free name for a temporary directory in {}; pass --dir DIR",
            base.display()
        )
    }

    fn created(&self) -> std::sync::MutexGuard<'_, HashSet<PathBuf>> {
        self.created.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The path of a file torture is about to create, registered for removal.
    fn file(&self, name: &str) -> PathBuf {
        let p = self.dir.join(name);
        self.created().insert(p.clone());
        p
    }

    /// A new subdirectory (it must not exist), registered for removal with its contents.
    fn subdir(&self, name: &str) -> std::io::Result<PathBuf> {
        let p = self.dir.join(name);
        std::fs::create_dir(&p)?;
        self.created().insert(p.clone());
        Ok(p)
    }

    /// Removes a file or subdirectory torture created, now.
    fn remove(&self, p: &Path) {
        remove_path(p);
        self.created().remove(p);
    }

    fn cleanup(&self) {
        let paths: Vec<PathBuf> = self.created().drain().collect();
        for p in &paths {
            remove_path(p);
        }
        if self.created_dir {
            if let Err(e) = std::fs::remove_dir(&self.dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    eprintln!(
                        "idforge torture: left {}: {e} (it holds files torture did not create)",
                        self.dir.display()
                    );
                }
            }
        }
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        self.cleanup();
    }
}

fn remove_path(p: &Path) {
    let r = match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
        Err(_) => return,
    };
    if let Err(e) = r {
        eprintln!("idforge torture: cannot remove {}: {e}", p.display());
    }
}

/// A child process in its own process group. Dropped before it was waited for (an early return,
/// a panic), it is killed with its whole group and reaped: no child outlives the run.
struct ChildGuard {
    child: Child,
    status: Option<ExitStatus>,
    /// Torture sent it SIGKILL.
    killed: bool,
}

impl ChildGuard {
    fn spawn(cmd: &mut Command) -> std::io::Result<ChildGuard> {
        Ok(ChildGuard {
            child: cmd.process_group(0).spawn()?,
            status: None,
            killed: false,
        })
    }

    /// Its exit status, if it has ended.
    fn poll(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status)
    }

    /// SIGKILL to its process group (the child and anything it forked).
    fn kill(&mut self) {
        if self.status.is_none() {
            // SAFETY: kill(2) has no memory preconditions. The child has not been reaped, so
            // its pid, which is its process group's id, cannot have been reused.
            unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
            self.killed = true;
        }
    }

    fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let s = self.child.wait()?;
        self.status = Some(s);
        Ok(s)
    }

    /// Whether it ended well: exit status 0, or killed by torture's own SIGKILL.
    fn ended_well(&self, status: ExitStatus) -> bool {
        status.success() || (self.killed && status.signal() == Some(libc::SIGKILL))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.kill();
            let _ = self.child.wait();
        }
    }
}

/// The first line a child wrote to its standard error, for the summary.
fn first_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_default()
}

/// Runs the torture.
pub fn run(a: TortureArgs) -> anyhow::Result<ExitCode> {
    install_signal_handlers()?;
    let work = Workdir::open(a.dir.as_deref())?;
    let dir = work.dir.clone();
    let exe = std::env::current_exe()?;
    // The processes' state file, created here so that no child process creates it (a child
    // killed while creating it could leave a temporary file behind).
    let state = work.file("snowflake.state");
    Generator::host_wide(
        &Scheme::Snowflake,
        Some(1),
        SystemClock::fast(),
        Policy::DEFAULT,
        &StateOptions::new(&state),
    )?;
    let mut tally = Tally::default();
    for s in SPACES {
        tally.spaces.insert(s, Vec::new());
    }
    for f in ForkScheme::ALL {
        tally.forks.insert(f, ForkTally::default());
    }
    let shared = Shared {
        stop: AtomicBool::new(false),
        tally: Mutex::new(tally),
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
    std::thread::scope(|s| {
        let sh = &shared;
        let (exe, state, work) = (&exe, &state, &work);
        let run_ahead = Policy {
            on_exhausted: OnExhausted::RunAhead,
            max_lead: Duration::from_millis(50),
            on_clock_behind: OnClockBehind::Wait,
        };
        let workers = [
            (
                "processes",
                s.spawn(move || processes(sh, exe, work, state, a.processes)),
            ),
            ("fork rounds", s.spawn(move || forks(sh, exe, work))),
            (
                SNOWFLAKE_WAIT,
                s.spawn(move || {
                    threads_on(
                        sh,
                        SNOWFLAKE_WAIT,
                        Scheme::Snowflake,
                        Some(2),
                        Policy::DEFAULT,
                        a.threads,
                    )
                }),
            ),
            (
                GLOBAL_ID_RUN_AHEAD,
                s.spawn(move || {
                    threads_on(
                        sh,
                        GLOBAL_ID_RUN_AHEAD,
                        Scheme::GlobalId,
                        Some(4),
                        run_ahead,
                        a.threads,
                    )
                }),
            ),
            (
                "clock jumps",
                s.spawn(move || clock_jumps(sh, a.threads.min(4))),
            ),
        ];
        // Progress every 10 s; stop at the end or on SIGINT/SIGTERM.
        let mut reported = 0;
        while start.elapsed() < a.duration && SIGNAL.load(Ordering::SeqCst) == 0 {
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
        for (name, h) in workers {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => shared.error(format!("{name}: {e:#}")),
                Err(_) => shared.error(format!("{name}: the worker panicked")),
            }
        }
    });
    let secs = start.elapsed().as_secs_f64();
    let signal = SIGNAL.load(Ordering::SeqCst);
    let mut t = shared.tally.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut issued = 0u64;
    let mut duplicates = 0u64;
    let mut per_space = Vec::new();
    let mut silent = Vec::new();
    for (space, ids) in t.spaces.iter_mut() {
        ids.sort_unstable();
        let d = ids.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        issued += ids.len() as u64;
        duplicates += d;
        per_space.push((*space, ids.len() as u64, d));
    }
    let mut forks = 0;
    for (f, ft) in &t.forks {
        issued += ft.ids;
        duplicates += ft.duplicates;
        forks += ft.rounds;
        per_space.push((f.space(), ft.ids, ft.duplicates));
    }
    per_space.sort();
    for &(space, n, _) in &per_space {
        if n == 0 {
            silent.push(space);
        }
    }
    // A run stopped by a signal may have ended before some source's first ids.
    let silent_counts = signal == 0;
    let failed = duplicates > 0
        || t.order_violations > 0
        || t.errors > 0
        || t.child_failures > 0
        || (silent_counts && !silent.is_empty());

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
    writeln!(
        out,
        "  failed child processes {}  (must be 0)",
        t.child_failures
    )?;
    if silent_counts {
        writeln!(
            out,
            "  sources without ids   {}   (must be 0)",
            silent.len()
        )?;
    } else {
        writeln!(
            out,
            "  sources without ids   {}   (not checked: stopped early)",
            silent.len()
        )?;
    }
    writeln!(out, "  processes killed (-9) {}", t.kills)?;
    writeln!(out, "  restarts              {}", t.restarts)?;
    writeln!(out, "  forks                 {forks}")?;
    writeln!(out, "  clock jumps survived  {}", t.clock_jumps)?;
    writeln!(
        out,
        "  calls refused (clock behind, Fail policy) {}",
        t.refusals
    )?;
    writeln!(out, "per id space:")?;
    for (space, n, d) in &per_space {
        writeln!(out, "  {space:<44} {n:>12} ids, {d} duplicates")?;
    }
    for space in &silent {
        writeln!(out, "no ids from: {space}")?;
    }
    if !t.problems.is_empty() {
        writeln!(out, "first problems:")?;
        for p in &t.problems {
            writeln!(out, "  {p}")?;
        }
    }
    let code = if failed {
        writeln!(out, "result: FAILED")?;
        ExitCode::from(1)
    } else if signal != 0 {
        writeln!(
            out,
            "result: stopped by {} after {secs:.0} s; no check failed",
            signal_name(signal)
        )?;
        ExitCode::from(128 + signal as u8)
    } else {
        writeln!(out, "result: passed")?;
        ExitCode::SUCCESS
    };
    out.flush()?;
    drop(work); // removes what torture created
    Ok(code)
}

fn read_hex_ids(path: &Path, width: usize) -> Vec<u128> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| l.len() == width) // a killed process may leave a partial last line
        .filter_map(|l| u128::from_str_radix(l, 16).ok())
        .collect()
}

/// Ids each process run asks for.
const PER_RUN: u64 = 5_000;

fn spawn_gen(exe: &Path, state: &Path, out: &Path, err: &Path) -> std::io::Result<ChildGuard> {
    ChildGuard::spawn(
        Command::new(exe)
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
            .arg(PER_RUN.to_string())
            .arg("--state")
            .arg(state)
            .env_remove("IDFORGE_NODE")
            .env_remove("IDFORGE_STATE")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(out)?)
            .stderr(std::fs::File::create(err)?),
    )
}

/// Processes on one state file, each slot in a loop: start `idforge gen --shared`, let it run
/// 1 to 8 ms, kill it with SIGKILL if it has not finished, collect what it printed, pause. Every
/// run's first id must be above every id collected before the run started; a run must end by
/// torture's SIGKILL or with exit status 0 and all its ids.
fn processes(
    sh: &Shared,
    exe: &Path,
    work: &Workdir,
    state: &Path,
    n: usize,
) -> anyhow::Result<()> {
    let collected_max = Mutex::new(0u128);
    std::thread::scope(|s| {
        for slot in 0..n {
            let collected_max = &collected_max;
            s.spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (slot as u64 + 1);
                let mut run = 0u64;
                while sh.running() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let before = *collected_max.lock().unwrap_or_else(|p| p.into_inner());
                    let out = work.file(&format!("proc{slot}-{run}.out"));
                    let err = work.file(&format!("proc{slot}-{run}.err"));
                    if let Err(e) = one_process_run(sh, exe, state, &out, &err, x, before, |l| {
                        let mut m = collected_max.lock().unwrap_or_else(|p| p.into_inner());
                        *m = (*m).max(l);
                    }) {
                        sh.error(format!("processes, slot {slot}: {e}"));
                    }
                    work.remove(&out);
                    work.remove(&err);
                    run += 1;
                    std::thread::sleep(Duration::from_millis(150));
                }
            });
        }
    });
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn one_process_run(
    sh: &Shared,
    exe: &Path,
    state: &Path,
    out: &Path,
    err: &Path,
    x: u64,
    before: u128,
    raise_max: impl FnOnce(u128),
) -> std::io::Result<()> {
    let mut child = spawn_gen(exe, state, out, err)?;
    std::thread::sleep(Duration::from_micros(1_000 + x % 7_000));
    if child.poll()?.is_none() {
        child.kill();
        sh.count(|t| t.kills += 1);
    }
    let status = child.wait()?;
    let ids = read_hex_ids(out, 16);
    if !child.ended_well(status) {
        sh.child_failed(format!("gen --shared: {status}: {}", first_line(err)));
    } else if status.success() && ids.len() as u64 != PER_RUN {
        sh.child_failed(format!(
            "gen --shared exited 0 after printing {} of {PER_RUN} ids",
            ids.len()
        ));
    }
    if ids.first().is_some_and(|&f| f <= before) {
        sh.count(|t| t.order_violations += 1);
    }
    if let Some(&l) = ids.last() {
        raise_max(l);
    }
    sh.add(PROCESSES, &ids);
    sh.count(|t| t.restarts += 1);
    Ok(())
}

/// Once a second, a fork round of each scheme: a fresh `idforge torture-fork` process takes ids,
/// forks, and parent and child take more from the same in-process generator.
fn forks(sh: &Shared, exe: &Path, work: &Workdir) -> anyhow::Result<()> {
    let mut round = 0u64;
    while sh.running() {
        for f in ForkScheme::ALL {
            if !sh.running() {
                break;
            }
            if let Err(e) = fork_round(sh, exe, work, f, round) {
                sh.error(format!("fork round {round} ({}): {e}", f.arg()));
            }
        }
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

/// Ids the parent and the child each take after the fork.
const FORK_COUNT: usize = 20_000;

fn fork_round(
    sh: &Shared,
    exe: &Path,
    work: &Workdir,
    f: ForkScheme,
    round: u64,
) -> std::io::Result<()> {
    let out = work.subdir(&format!("fork-{}-{round}", f.arg()))?;
    let err = out.join("stderr");
    let result = (|| {
        let mut child = ChildGuard::spawn(
            Command::new(exe)
                .args(["torture-fork", "--scheme", f.arg(), "--count"])
                .arg(FORK_COUNT.to_string())
                .arg("--out")
                .arg(&out)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&err)?),
        )?;
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.poll()? {
                break s;
            }
            if !sh.running() {
                child.kill(); // winding down: the round is dropped, not counted
                child.wait()?;
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(30) {
                child.kill();
                child.wait()?;
                sh.child_failed(format!(
                    "torture-fork --scheme {} did not finish in 30 s",
                    f.arg()
                ));
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        if !status.success() {
            sh.child_failed(format!(
                "torture-fork --scheme {}: {status}: {}",
                f.arg(),
                first_line(&err)
            ));
            return Ok(());
        }
        // The parent's and the child's files: one id space for the two processes.
        let mut files = Vec::new();
        for e in std::fs::read_dir(&out)? {
            let p = e?.path();
            if p != err {
                files.push(read_hex_ids(&p, f.width()));
            }
        }
        let mut lens: Vec<usize> = files.iter().map(Vec::len).collect();
        lens.sort_unstable();
        if lens.len() != 2 || lens[0] < FORK_COUNT {
            sh.child_failed(format!(
                "torture-fork --scheme {} exited 0 but wrote {lens:?} ids (parent and child: at least {FORK_COUNT} each)",
                f.arg()
            ));
        }
        let mut ids = Vec::new();
        for mut v in files {
            sh.count(|t| {
                t.order_violations += v.windows(2).filter(|w| w[0] >= w[1]).count() as u64
            });
            ids.append(&mut v);
        }
        ids.sort_unstable();
        let dups = ids.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        sh.issued.fetch_add(ids.len() as u64, Ordering::Relaxed);
        sh.count(|t| {
            let ft = t.forks.entry(f).or_default();
            ft.rounds += 1;
            ft.ids += ids.len() as u64;
            ft.duplicates += dups;
        });
        Ok(())
    })();
    work.remove(&out);
    result
}

/// The child side of a fork round: take ids, fork, parent and child each take `count` more and
/// write them to `<out>/<pid>` as hex lines. The parent fails if the forked child fails.
pub fn fork_child(out: &Path, count: usize, scheme: ForkScheme) -> anyhow::Result<ExitCode> {
    let (g, before) = match scheme {
        ForkScheme::Fleet => return fleet_fork(out, count),
        ForkScheme::Uuid7 => (Generator::new(&Scheme::Uuid7, None)?, 1_000),
        // RunAhead, and before the fork whole ticks at once: the stamp is 8 ms ahead of the
        // clock when the process forks, so parent and child both continue from it. On a private
        // copy of the stamp page they would issue the same ids.
        ForkScheme::Snowflake => (
            Generator::with_clock(
                &Scheme::Snowflake,
                Some(3),
                SystemClock::fast(),
                Policy {
                    on_exhausted: OnExhausted::RunAhead,
                    max_lead: Duration::from_secs(1),
                    on_clock_behind: OnClockBehind::Fail,
                },
            )?,
            8 * 4_096,
        ),
    };
    fork_and_take(&g, out, count, before, scheme.width())
}

fn fork_and_take(
    g: &Generator<SystemClock, ProcessStamp>,
    out: &Path,
    count: usize,
    before: usize,
    width: usize,
) -> anyhow::Result<ExitCode> {
    let mut ids = Vec::with_capacity(count + before);
    let batch = (g.layout().ids_per_tick() as usize).min(4_096);
    while ids.len() < before {
        for id in g.reserve(batch.min(before - ids.len()) as u64)? {
            ids.push(id);
        }
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
    let mut text = String::with_capacity(ids.len() * (width + 1));
    for id in &ids {
        text.push_str(&format!("{id:0width$x}\n"));
    }
    std::fs::write(out.join(std::process::id().to_string()), text)?;
    if pid > 0 {
        let mut status = 0;
        // SAFETY: waiting for our own child, into a local.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r != pid {
            anyhow::bail!(
                "waiting for the forked child: {}",
                std::io::Error::last_os_error()
            );
        }
        let status = ExitStatus::from_raw(status);
        if !status.success() {
            anyhow::bail!("the forked child failed: {status}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A Snowflake generator running ahead (1 s) on a node id leased from `store` (a 30 s lease, 8 s
/// reserved ahead: nothing expires during a round).
fn leased_snowflake(
    store: &std::sync::Arc<dyn idforge_fleet::Store>,
) -> anyhow::Result<(idforge_fleet::Member, idforge::schemes::open::Opened)> {
    use idforge::schemes::catalog::Kind;
    use idforge::schemes::open::{OpenOptions, Opened};
    let kind = Kind::from_name("snowflake", None)?;
    let mut o = idforge_fleet::FleetOptions::new("torture-fork", &kind, &OpenOptions::default())?;
    o.ttl = Duration::from_secs(30);
    o.reserve_ahead = Duration::from_secs(8);
    let m = idforge_fleet::Member::join(store.clone(), o)?;
    let g = Opened::open(
        &kind,
        &OpenOptions {
            node: Some(m.node()),
            cell: Some(m.cell()),
            policy: Some(Policy {
                on_exhausted: OnExhausted::RunAhead,
                max_lead: Duration::from_secs(1),
                on_clock_behind: OnClockBehind::Fail,
            }),
            ..OpenOptions::default()
        },
    )?;
    Ok((m, g))
}

/// The fleet fork round: a member of an in-memory fleet takes ids 8 ticks ahead of the clock and
/// forks. The parent takes `count` more. The child tries `count` ids on the inherited generator:
/// every one must be refused as forked from the lease holder (an id it issued is written out, so
/// the round's duplicate check sees it, and the child fails); then it drops its copy of the
/// member (which must return and give nothing back), joins the fleet on its copy of the store
/// (which knows the parent's claim) and takes `count` ids on a node id of its own.
fn fleet_fork(out: &Path, count: usize) -> anyhow::Result<ExitCode> {
    let store: std::sync::Arc<dyn idforge_fleet::Store> =
        std::sync::Arc::new(idforge_fleet::MemoryStore::new());
    let (member, g) = leased_snowflake(&store)?;
    // No renewal from here to the fork: no thread of the parent holds the store's lock when the
    // child, which has only the forking thread, joins on its copy.
    member.freeze_renewals(true);
    let mut ids = Vec::with_capacity(2 * count + 8 * 4_096);
    while ids.len() < 8 * 4_096 {
        ids.push(g.next()?);
    }
    // SAFETY: the only other thread is the member's renewal thread, frozen above and parked (it
    // holds no lock); the child runs ordinary code on the forking thread.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        anyhow::bail!("fork failed: {}", std::io::Error::last_os_error());
    }
    let write = |ids: &[u128]| {
        let mut text = String::with_capacity(ids.len() * 17);
        for id in ids {
            text.push_str(&format!("{id:016x}\n"));
        }
        std::fs::write(out.join(std::process::id().to_string()), text)
    };
    if pid == 0 {
        ids.clear(); // the pre-fork ids belong to the parent's file
        let mut other = None;
        for _ in 0..count {
            match g.next() {
                Ok(id) => ids.push(id),
                Err(e)
                    if e.to_string()
                        .contains("was forked from the holder of the lease") => {}
                Err(e) => other = Some(e),
            }
        }
        let inherited = ids.len();
        // Written before the member is dropped, in case dropping fails: the round's duplicate
        // check sees every id the child issued (the file is written again below).
        write(&ids)?;
        drop(g);
        drop(member); // the parent's lease: nothing is given back
        let (mine, g) = leased_snowflake(&store)?;
        for _ in 0..count {
            ids.push(g.next()?);
        }
        write(&ids)?;
        mine.shutdown()?;
        if inherited > 0 {
            anyhow::bail!("the forked child issued {inherited} ids under its parent's lease");
        }
        if let Some(e) = other {
            anyhow::bail!("the forked child was refused with an unexpected error: {e}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    for _ in 0..count {
        ids.push(g.next()?);
    }
    write(&ids)?;
    let mut status = 0;
    // SAFETY: waiting for our own child, into a local.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    if r != pid {
        anyhow::bail!(
            "waiting for the forked child: {}",
            std::io::Error::last_os_error()
        );
    }
    let status = ExitStatus::from_raw(status);
    if !status.success() {
        anyhow::bail!("the forked child failed: {status}");
    }
    member.shutdown()?;
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
    let g = Generator::with_clock(
        &scheme,
        node,
        SystemClock::for_tick(scheme.layout().timebase().tick_ns),
        policy,
    )?;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while sh.running() {
                    let mut burst = Vec::with_capacity(2_000);
                    for _ in 0..2_000 {
                        match g.next() {
                            Ok(id) => burst.push(id),
                            // Wait and RunAhead never fail on the wall clock: any error is a defect.
                            Err(e) => sh.error(format!("{space}: {e}")),
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
            let (g, space) = if t % 2 == 0 {
                (&fail, CLOCK_FAIL)
            } else {
                (&unbounded, CLOCK_UNBOUNDED)
            };
            s.spawn(move || {
                while sh.running() {
                    let mut burst = Vec::with_capacity(1_000);
                    let mut refused = 0;
                    for _ in 0..1_000 {
                        match g.next() {
                            Ok(id) => burst.push(id),
                            Err(Error::ClockBehind { .. }) => refused += 1,
                            Err(e) => sh.error(format!("{space}: {e}")),
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
