//! Tests of the state file: creation, sharing, every refusal, durable recovery, the SIGBUS guard.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::header::{OFF_FINGERPRINT, OFF_STAMP};
use super::host::boot_id_hash;
use super::sys::euid;
use super::*;
use crate::sequencer::{OnExhausted, Policy, StampCell, Timebase};

fn tb() -> Timebase {
    Timebase {
        epoch_ns: 0,
        tick_ns: 1_000_000,
        time_bits: 48,
        counter_bits: 12,
    }
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "idforge-shm-{name}-{}-{:x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
    d
}

#[test]
fn two_mappings_of_one_file_share_the_stamp() {
    let d = tmpdir("share");
    let o = StateOptions::new(d.join("s.state"));
    let a = HostStamp::open(&o, "fp", &tb()).unwrap();
    let b = HostStamp::open(&o, "fp", &tb()).unwrap();
    assert!(a.compare_exchange_weak(0, 42).is_ok() || a.compare_exchange_weak(0, 42).is_ok());
    assert_eq!(b.load(), 42);
    let mode = fs::metadata(d.join("s.state"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn bad_files_get_their_errors() {
    let d = tmpdir("bad");
    let path = d.join("x.state");
    let o = StateOptions::new(&path);
    let err = |fp: &str| HostStamp::open(&o, fp, &tb()).unwrap_err();
    let write = |bytes: &[u8]| {
        fs::write(&path, bytes).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    };

    write(b"short");
    let e = err("fp");
    assert!(matches!(
        e,
        Error::StateFile(StateFileError::Truncated { len: 5, .. })
    ));
    assert!(e.to_string().contains("Stop every process still using it"));

    write(&vec![7u8; PAGE]);
    assert!(matches!(
        err("fp"),
        Error::StateFile(StateFileError::Foreign { .. })
    ));

    let mut page = state_header("fp");
    page[8] = 9;
    write(&page);
    assert!(matches!(
        err("fp"),
        Error::StateFile(StateFileError::Version { found: 9, .. })
    ));

    let mut page = state_header("fp");
    page[OFF_FINGERPRINT] ^= 1;
    write(&page);
    let e = err("fp");
    assert!(matches!(
        e,
        Error::StateFile(StateFileError::Corrupt { .. })
    ));
    assert!(e.to_string().contains("Stop every process still using it"));

    write(&state_header("scheme=a"));
    let e = err("scheme=b");
    assert!(
        matches!(&e, Error::StateFile(StateFileError::Mismatch { found, .. }) if found == "scheme=a")
    );
    assert!(e.to_string().contains(&path.display().to_string()));
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn processes_with_another_policy_are_told_so() {
    let d = tmpdir("policy");
    let o = StateOptions::new(d.join("p.state"));
    let run_ahead = Policy {
        on_exhausted: OnExhausted::RunAhead,
        max_lead: Duration::from_millis(2000),
        ..Policy::DEFAULT
    };
    let fp = |p: &Policy| fingerprint("snowflake", "l", &tb(), 1, false, p);
    let _a = HostStamp::open(&o, &fp(&run_ahead), &tb()).unwrap();
    let e = HostStamp::open(&o, &fp(&Policy::DEFAULT), &tb()).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, Error::StateFile(StateFileError::PolicyMismatch { .. })),
        "{text}"
    );
    assert!(text.contains("run-ahead/2000000000ns/fail"), "{text}");
    assert!(text.contains("wait/1000000000ns/fail"), "{text}");
    assert!(text.contains("on_exhausted"), "{text}");
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn short_pages_are_truncated_not_a_panic() {
    for len in [0, 7, 12, 100, 319, PAGE - 1] {
        let page = vec![0u8; len];
        assert!(matches!(
            check_header(Path::new("short"), &page, "fp"),
            Err(Error::StateFile(StateFileError::Truncated { .. }))
        ));
    }
    // A real header cut short is refused the same way.
    let h = state_header("fp");
    assert!(check_header(Path::new("short"), &h[..300], "fp").is_err());
    assert!(check_header(Path::new("full"), &h, "fp").is_ok());
}

#[test]
fn durable_mode_persists_a_ceiling_before_passing_it() {
    let d = tmpdir("durable");
    let mut o = StateOptions::new(d.join("d.state"));
    o.durable = true;
    let a = HostStamp::open(&o, "fp", &tb()).unwrap();
    assert_eq!(a.ceiling(), 0);
    let c = a.raise_ceiling(5_000).unwrap();
    assert_eq!(c, 5_000 + (1_000 << 12));
    assert_eq!(a.persisted_ceiling(), c);
    assert_eq!(a.ceiling(), c);
    if boot_id_hash(Path::new(BOOT_ID_PATH)).is_some() {
        // Within one boot, reopening keeps the stamp (a restart must not jump ahead).
        a.force_stamp(10);
        let same_boot = HostStamp::open(&o, "fp", &tb()).unwrap();
        assert_eq!(same_boot.load(), 10);
    }
    // A crash that lost the stamp, then a new boot: reopening starts at the persisted ceiling.
    a.force_stamp(10);
    a.forget_boot();
    drop(a);
    let b = HostStamp::open(&o, "fp", &tb()).unwrap();
    assert_eq!(b.load(), c);
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn without_a_boot_id_every_durable_open_recovers_to_the_mark() {
    let d = tmpdir("noboot");
    let mut o = StateOptions::new(d.join("d.state"));
    o.durable = true;
    o.boot_id_path = d.join("no-such-boot-id");
    let a = HostStamp::open(&o, "fp", &tb()).unwrap();
    let c = a.raise_ceiling(5_000).unwrap();
    // A power loss that lost the latest stamp (the page cache is gone), and no way to tell
    // that the machine rebooted: the next open must still start at the persisted mark.
    a.force_stamp(10);
    drop(a);
    let b = HostStamp::open(&o, "fp", &tb()).unwrap();
    assert_eq!(
        b.load(),
        c,
        "an unidentifiable boot must be taken for a crash"
    );
    // An empty boot id file counts as unreadable too.
    fs::write(&o.boot_id_path, "\n").unwrap();
    b.force_stamp(10);
    drop(b);
    let first = HostStamp::open(&o, "fp", &tb()).unwrap();
    assert_eq!(first.load(), c);
    // While a process has the file open there was no crash since it opened it: a second
    // process trusts the stamp and does not push the running one ahead of its clock.
    first.force_stamp(c - 7);
    let second = HostStamp::open(&o, "fp", &tb()).unwrap();
    assert_eq!(second.load(), c - 7);
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn files_and_directories_others_can_write_are_refused() {
    let d = tmpdir("trust");
    let path = d.join("t.state");
    let o = StateOptions::new(&path);
    drop(HostStamp::open(&o, "fp", &tb()).unwrap());
    // A file writable by others.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
    let e = HostStamp::open(&o, "fp", &tb()).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::StateFile(StateFileError::Untrusted { what: "file", .. })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("chmod go-w"), "{e}");
    // ...accepted when asked for explicitly.
    let shared = StateOptions::new(&path).shared_mode(0o666);
    drop(HostStamp::open(&shared, "fp", &tb()).unwrap());
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    // A directory writable by others (no sticky bit).
    fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
    let e = HostStamp::open(&o, "fp", &tb()).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::StateFile(StateFileError::Untrusted {
                what: "directory",
                ..
            })
        ),
        "{e}"
    );
    // With the sticky bit (like /tmp) others cannot rename or delete our file: accepted.
    fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
    drop(HostStamp::open(&o, "fp", &tb()).unwrap());
    fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
    // A symbolic link is not followed.
    let link = d.join("link.state");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let e = HostStamp::open(&StateOptions::new(&link), "fp", &tb()).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn files_and_directories_of_another_user_are_refused() {
    // chown needs root; CI and this project's machines run as root. Elsewhere the refusal
    // of files others can write (above) still runs.
    if euid() != 0 {
        eprintln!("NOTE: not root, the other-owner case cannot be set up here");
        return;
    }
    let d = tmpdir("owner");
    let path = d.join("o.state");
    let o = StateOptions::new(&path);
    drop(HostStamp::open(&o, "fp", &tb()).unwrap());
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    let e = HostStamp::open(&o, "fp", &tb()).unwrap_err();
    assert!(e.to_string().contains("owned by user id 65534"), "{e}");
    std::os::unix::fs::chown(&path, Some(0), None).unwrap();
    // The attack of the issue: another user pre-creates the directory, mode 777.
    let evil = d.join("evil");
    fs::create_dir(&evil).unwrap();
    fs::set_permissions(&evil, fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&evil, Some(65534), None).unwrap();
    let e = HostStamp::open(&StateOptions::new(evil.join("x.state")), "fp", &tb()).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::StateFile(StateFileError::Untrusted {
                what: "directory",
                ..
            })
        ),
        "{e}"
    );
    assert!(!evil.join("x.state").exists(), "nothing is created there");
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_truncated_file_is_refused_not_a_crash() {
    let d = tmpdir("truncate");
    let path = d.join("t.state");
    let a = HostStamp::open(&StateOptions::new(&path), "fp", &tb()).unwrap();
    assert!(a.compare_exchange_weak(0, 7).is_ok() || a.compare_exchange_weak(0, 7).is_ok());
    a.check_issued(1, 7).unwrap();
    // Another process shrinks the file under the mapping: the next access faults (SIGBUS),
    // which the guard turns into a refusal.
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let _ = a.load();
    let e = a.check_issued(2, 8).unwrap_err();
    assert!(
        matches!(&e, Error::StateFile(StateFileError::Lost { what, .. }) if what == "was truncated"),
        "{e}"
    );
    assert!(a.raise_ceiling(100).is_err());
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_deleted_or_replaced_file_is_noticed_within_the_check_interval() {
    let d = tmpdir("deleted");
    let path = d.join("t.state");
    let o = StateOptions::new(&path);
    let ms = 1_000_000;
    let a = HostStamp::open(&o, "fp", &tb()).unwrap();
    a.check_issued(10 * ms, 1).unwrap();
    fs::remove_file(&path).unwrap();
    // Within the interval, no system call is made (amortised)...
    a.check_issued(10 * ms + ms / 2, 2).unwrap();
    // ...after it, by wall time or by stamp time, the loss is found.
    let e = a.check_issued(11 * ms, 3).unwrap_err();
    assert!(e.to_string().contains("was deleted"), "{e}");
    // Sticky: every later id is refused at once.
    assert!(a.check_issued(11 * ms, 4).is_err());

    let b = HostStamp::open(&o, "fp", &tb()).unwrap();
    b.check_issued(10 * ms, 1).unwrap();
    let other = d.join("other.state");
    fs::write(&other, state_header("fp")).unwrap();
    fs::rename(&other, &path).unwrap();
    let e = b.check_issued(10 * ms, 1 + (1 << 12)).unwrap_err();
    assert!(e.to_string().contains("was replaced"), "{e}");
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_new_file_starts_ahead_of_the_clock() {
    let ms = 1_000_000;
    let run_ahead = Policy {
        on_exhausted: OnExhausted::RunAhead,
        max_lead: Duration::from_millis(5),
        ..Policy::DEFAULT
    };
    // The first id is counter 0 of the tick after the one holding the clock plus the lead:
    // the clock's tick may already be in use by processes on a deleted file, with any counter.
    assert_eq!(fresh_stamp(&tb(), 1_000 * ms, 0), (1_001 << 12) - 1);
    assert_eq!(
        fresh_stamp(&tb(), 1_000 * ms + ms / 2, 0),
        (1_001 << 12) - 1
    );
    assert_eq!(fresh_stamp(&tb(), 1_000 * ms, 5 * ms), (1_006 << 12) - 1);
    // A coarse tick: the next tick boundary, not counter 0 of the current one.
    let coarse = Timebase {
        tick_ns: 100 * ms,
        ..tb()
    };
    assert_eq!(fresh_stamp(&coarse, 1_000 * ms + 1, 50_000), (11 << 12) - 1);
    // No room for the tick after: the largest stamp, from which nothing is issued.
    let narrow = Timebase {
        time_bits: 10,
        ..tb()
    };
    assert_eq!(fresh_stamp(&narrow, 1_023 * ms, 0), narrow.max_stamp());
    // The lead a predecessor may have issued at: `RunAhead`'s bound, nothing under `Wait`, and
    // `max_lead` in durable mode under either.
    assert_eq!(fresh_lead(&Policy::DEFAULT, false), Duration::ZERO);
    assert_eq!(fresh_lead(&Policy::DEFAULT, true), Policy::DEFAULT.max_lead);
    assert_eq!(fresh_lead(&run_ahead, false), Duration::from_millis(5));
    assert_eq!(fresh_lead(&run_ahead, true), Duration::from_millis(5));
    assert_eq!(fresh_lead(&Policy::UNBOUNDED, false), Duration::ZERO);
    assert_eq!(fresh_lead(&Policy::UNBOUNDED, true), Duration::from_secs(1));
    let d = tmpdir("fresh");
    let o = StateOptions::new(d.join("f.state"));
    let asked = std::sync::atomic::AtomicU64::new(0);
    let t0 = std::time::Instant::now();
    let a = HostStamp::open_fresh(&o, "fp", &tb(), FRESH_MARGIN, &|| {
        // Read only after the wait: processes on a deleted file have stopped by now.
        assert!(t0.elapsed() >= FRESH_MARGIN);
        asked.fetch_add(1, Ordering::Relaxed);
        12_345
    })
    .unwrap();
    assert_eq!(a.load(), 12_345);
    // An existing file keeps its stamp, and the fresh stamp is not even computed.
    assert_eq!(
        HostStamp::open_fresh(&o, "fp", &tb(), FRESH_MARGIN, &|| {
            asked.fetch_add(1, Ordering::Relaxed);
            99
        })
        .unwrap()
        .load(),
        12_345
    );
    assert_eq!(asked.load(Ordering::Relaxed), 1);
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn creators_are_serialised_so_no_file_appears_during_a_wait() {
    // A waits 300 ms before creating; B, arriving meanwhile with no wait of its own, must
    // neither create its own file nor compute a fresh stamp: it opens A's file when it exists.
    let d = tmpdir("creators");
    let o = StateOptions::new(d.join("c.state"));
    let b_fresh = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            HostStamp::open_fresh(&o, "fp", &tb(), Duration::from_millis(300), &|| 777)
                .unwrap()
                .load()
        });
        std::thread::sleep(Duration::from_millis(50));
        let b = HostStamp::open_fresh(&o, "fp", &tb(), Duration::ZERO, &|| {
            b_fresh.store(true, Ordering::Relaxed);
            1
        })
        .unwrap();
        assert_eq!(b.load(), 777, "B must open A's file");
        assert_eq!(a.join().unwrap(), 777);
    });
    assert!(!b_fresh.load(Ordering::Relaxed), "B computed a fresh stamp");
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_rewound_or_rewritten_file_is_refused() {
    let d = tmpdir("rewound");
    let path = d.join("r.state");
    let a = HostStamp::open(&StateOptions::new(&path), "fp", &tb()).unwrap();
    let ms = 1_000_000;
    a.force_stamp(5_000);
    a.check_issued(10 * ms, 5_000).unwrap();
    // A backup copied over the live file: same inode, whole again, an older stamp.
    let mut old = state_header("fp");
    old[OFF_STAMP..OFF_STAMP + 8].copy_from_slice(&100u64.to_ne_bytes());
    fs::write(&path, &old).unwrap();
    // The next id's stamp (101, from the rewound cell) is refused at once, not a ms later.
    a.force_stamp(101);
    let e = a.check_issued(10 * ms, 101).unwrap_err();
    assert!(e.to_string().contains("was rewound"), "{e}");

    // A file rewritten with another header (same inode) is caught at the next check.
    let path2 = d.join("w.state");
    let b = HostStamp::open(&StateOptions::new(&path2), "fp", &tb()).unwrap();
    b.check_issued(10 * ms, 1).unwrap();
    fs::write(&path2, state_header("fp-other")).unwrap();
    let e = b.check_issued(11 * ms, 2).unwrap_err();
    assert!(e.to_string().contains("was replaced"), "{e}");
    fs::remove_dir_all(d).unwrap();
}

/// An older stamp written far back (below everything a check saw) into a file in use: the
/// next id's stamp comes from the clock, above the last check's record, so "stamp below the
/// record" cannot see it; the stamp its compare-and-swap replaced can. Before that check, the
/// process went on issuing from the rewound cell and repeated the ids of the current tick
/// (an attack review: up to 295 duplicates across three processes in a second).
#[test]
fn a_stamp_written_far_back_is_refused_at_the_first_id_after_it() {
    use crate::clock::ManualClock;
    use crate::sequencer::Sequencer;
    use std::os::unix::fs::FileExt;
    let d = tmpdir("far-back");
    let path = d.join("f.state");
    let ms = 1_000_000;
    let t = 1_000 * ms;
    let clock = ManualClock::new(t + 9 * ms / 10);
    let cell = HostStamp::open(&StateOptions::new(&path), "fp", &tb()).unwrap();
    let seq = Sequencer::with_cell(clock.clone(), cell, tb(), Policy::DEFAULT).unwrap();
    assert_eq!(seq.next().unwrap(), 1_000 << 12); // a full check records (T, 0)
    clock.set(t + 11 * ms / 10);
    let ours: Vec<u64> = (0..3).map(|_| seq.next().unwrap()).collect();
    assert_eq!(ours, [1_001 << 12, (1_001 << 12) + 1, (1_001 << 12) + 2]);
    // Another process writes tick T - 100 into the stamp word (as pwrite would).
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&((900u64) << 12).to_ne_bytes(), OFF_STAMP as u64)
        .unwrap();
    // The next stamp would be (T + 1, 0) again: refused, and every id after it.
    let e = seq.next().unwrap_err();
    assert!(e.to_string().contains("was rewound"), "{e}");
    clock.set(t + 25 * ms / 10);
    assert!(seq.next().is_err());
    fs::remove_dir_all(d).unwrap();
}

/// A child forked (by another thread) while this process held a directory's creation lock
/// shares the lock's open file description: closing the parent's descriptor alone left the lock
/// held for the child's life, and every creator on the host waited for it.
#[test]
#[allow(unsafe_code)] // fork, kill and waitpid, in a test only
fn a_creation_lock_held_across_a_fork_is_released_when_the_creator_is_done() {
    let d = tmpdir("lockfork");
    let guard = super::file::lock_directory(&d, Duration::from_secs(10)).unwrap();
    // SAFETY: the child only sleeps and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // Killed below, long before this ends.
        std::thread::sleep(Duration::from_secs(20));
        // SAFETY: leave the child at once.
        unsafe { libc::_exit(0) };
    }
    drop(guard); // the creator is done; the child lives on with its copy of the descriptor
    let t = std::time::Instant::now();
    let again = super::file::lock_directory(&d, Duration::from_millis(100));
    let waited = t.elapsed();
    // SAFETY: reap the child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    assert!(
        again.is_ok(),
        "the lock stayed with the child: {:?}",
        again.err()
    );
    // Held by the child, the lock would be refused after the 100 ms patience only once the
    // holder is found not running, or waited for up to the child's 20 s.
    assert!(
        waited < Duration::from_secs(10),
        "waited {waited:?} for a lock nobody used"
    );
    drop(again);
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_private_explicit_mode_keeps_the_owner_check() {
    if euid() != 0 {
        eprintln!("NOTE: not root, the other-owner case cannot be set up here");
        return;
    }
    let d = tmpdir("mode600");
    let path = d.join("o.state");
    drop(HostStamp::open(&StateOptions::new(&path), "fp", &tb()).unwrap());
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    // --state-mode 600 is private: another user's file is still refused.
    let e = HostStamp::open(&StateOptions::new(&path).shared_mode(0o600), "fp", &tb()).unwrap_err();
    assert!(e.to_string().contains("owned by user id 65534"), "{e}");
    // A group-writable shared mode accepts it (its mode is within what was asked for).
    fs::set_permissions(&path, fs::Permissions::from_mode(0o660)).unwrap();
    drop(HostStamp::open(&StateOptions::new(&path).shared_mode(0o660), "fp", &tb()).unwrap());
    // A symlink owned by another user, standing for the directory, is refused.
    let real = d.join("real");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
    let link = d.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
    let e = HostStamp::open(&StateOptions::new(link.join("x.state")), "fp", &tb()).unwrap_err();
    assert!(
        e.to_string()
            .contains("symbolic link owned by user id 65534"),
        "{e}"
    );
    // A group-shared file gets exactly the mode asked for, whatever the umask.
    let shared = d.join("g.state");
    drop(HostStamp::open(&StateOptions::new(&shared).shared_mode(0o660), "fp", &tb()).unwrap());
    assert_eq!(
        fs::metadata(&shared).unwrap().permissions().mode() & 0o777,
        0o660
    );
    fs::remove_dir_all(d).unwrap();
}
