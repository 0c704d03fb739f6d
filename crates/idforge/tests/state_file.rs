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
