//! How fast a process notices that its state file was deleted or replaced, measured with a
//! generator issuing as fast as it can and one issuing a few ids per millisecond.

use std::time::{Duration, Instant};

use idforge::{Error, Generator, Scheme, StateFileError, StateOptions, WallClock};

fn window(pause: Option<Duration>, replace: bool) -> (Duration, u64) {
    let d = std::env::temp_dir().join(format!(
        "idforge-window-{}-{}-{replace}",
        std::process::id(),
        pause.is_some()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let state = StateOptions::new(d.join("s.state"));
    let g = Generator::host_wide(
        &Scheme::Snowflake,
        Some(2),
        WallClock,
        Scheme::Snowflake.default_policy(),
        &state,
    )
    .unwrap();
    for _ in 0..1000 {
        g.next().unwrap();
    }
    if replace {
        let other = d.join("other.state");
        std::fs::copy(&state.path, &other).unwrap();
        std::fs::rename(&other, &state.path).unwrap();
    } else {
        std::fs::remove_file(&state.path).unwrap();
    }
    let gone = Instant::now();
    let mut after = 0u64;
    let err = loop {
        match g.next() {
            Ok(_) => after += 1,
            Err(e) => break e,
        }
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
        assert!(gone.elapsed() < Duration::from_secs(5), "never noticed");
    };
    let noticed = gone.elapsed();
    assert!(
        matches!(err, Error::StateFile(StateFileError::Lost { .. })),
        "{err}"
    );
    // Refused for good.
    assert!(g.next().is_err());
    std::fs::remove_dir_all(d).unwrap();
    (noticed, after)
}

#[test]
fn a_deleted_or_replaced_state_file_is_noticed_within_a_few_milliseconds() {
    for replace in [false, true] {
        for pause in [None, Some(Duration::from_micros(200))] {
            let (noticed, after) = window(pause, replace);
            eprintln!(
                "replace={replace} pause={pause:?}: noticed after {noticed:?}, {after} ids issued meanwhile"
            );
            // The check runs after every 1 ms of clock or stamp time; allow for a loaded machine.
            assert!(
                noticed < Duration::from_millis(10),
                "noticed only after {noticed:?}"
            );
        }
    }
}

/// A creator holds its directory's lock for a few milliseconds. One that is stopped (here a
/// child that took the lock and then `SIGSTOP`ped itself) holds it forever: an opener gives up
/// after its patience (10 s by default, 1 s here) with a message that names the directory, the
/// process and what to do, instead of "cannot lock the directory of: ... (stopped?)", which
/// named neither.
#[test]
fn an_opener_names_a_stopped_creator_that_holds_the_directory_lock() {
    const PATIENCE: Duration = Duration::from_secs(1);
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let d = std::env::temp_dir().join(format!("idforge-busy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let path = CString::new(d.as_os_str().as_bytes()).unwrap();
    // SAFETY: the child calls only async-signal-safe functions (open, flock, raise, _exit).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            libc::flock(fd, libc::LOCK_EX);
            libc::raise(libc::SIGSTOP);
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waits for our own child; WUNTRACED returns once it has stopped (lock taken).
    unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
    assert!(libc::WIFSTOPPED(status), "the child did not stop: {status}");
    let started = Instant::now();
    let e = Generator::host_wide(
        &Scheme::Snowflake,
        Some(2),
        WallClock,
        Scheme::Snowflake.default_policy(),
        &StateOptions::new(d.join("s.state")).lock_patience(PATIENCE),
    )
    .err();
    let waited = started.elapsed();
    // SAFETY: our own stopped child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    let _ = std::fs::remove_dir_all(&d);
    let e = e.expect("a state file was created while another process held the directory lock");
    assert!(
        matches!(e, Error::StateFile(StateFileError::Busy { .. })),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&d.display().to_string())
            && msg.contains(&format!("process {pid} (stopped)"))
            && msg.contains(&format!("kill -CONT {pid}")),
        "{msg}"
    );
    assert!(
        waited >= PATIENCE && waited < PATIENCE + Duration::from_secs(5),
        "gave up after {waited:?}"
    );
}

/// An attack review: a process that found the state file and had it deleted before its `open`
/// failed with "cannot open: No such file or directory" (158 of 2,052 processes racing
/// deletions); it now goes back and creates the file.
#[test]
fn a_file_deleted_between_finding_it_and_opening_it_is_created_again() {
    use idforge::shm::HostStamp;
    use std::sync::atomic::{AtomicBool, Ordering};
    let d = std::env::temp_dir().join(format!("idforge-open-race-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let opts = StateOptions::new(d.join("s.state"));
    let tb = idforge::Timebase {
        epoch_ns: 0,
        tick_ns: 1_000_000,
        time_bits: 41,
        counter_bits: 12,
    };
    let stop = AtomicBool::new(false);
    let failures = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_file(&opts.path);
                // A deletion every 5 ms races hundreds of opens, and leaves an open room to
                // win within its 16 tries even on a loaded machine (every 200 us or 1 ms, 16
                // losses in a row happened under a load of 4 on 2 cores).
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let mut failures = Vec::new();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            if let Err(e) = HostStamp::open(&opts, "race", &tb) {
                failures.push(e.to_string());
            }
        }
        stop.store(true, Ordering::Relaxed);
        failures
    });
    let _ = std::fs::remove_dir_all(&d);
    assert!(
        failures.is_empty(),
        "{} opens failed, the first: {}",
        failures.len(),
        failures[0]
    );
}
