//! Every scheme opens by name through `schemes::open`, the one path the command line and the
//! service use: each yields unique ids of its width, refuses settings it does not take, and
//! opens host-wide on a state file where it can.

use std::collections::HashSet;

use idforge::schemes::catalog::{Identity, Kind, NAMES};
use idforge::schemes::open::{OpenOptions, Opened, TextFormat};
#[cfg(feature = "host-wide")]
use idforge::StateOptions;
use idforge::{inspect, Error};

/// Options that every scheme with an identity accepts.
fn opts_for(kind: &Kind) -> OpenOptions {
    let mut o = OpenOptions::default();
    match kind.identity() {
        Identity::None | Identity::PidAndMac => {}
        _ => o.node = Some(1),
    }
    o
}

#[test]
fn every_named_scheme_opens_and_issues_unique_ids_that_decode_as_it() {
    for name in NAMES {
        if cfg!(not(feature = "locality")) && name == "locality" {
            continue;
        }
        let layout = (name == "custom").then_some("time:41,node:10,counter:12");
        let kind = Kind::from_name(name, layout).unwrap();
        let g = Opened::open(&kind, &opts_for(&kind)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(g.name(), name);
        let mut seen = HashSet::new();
        let mut last = 0u128;
        g.take(5000, |id| {
            assert!(seen.insert(id), "{name}: duplicate {id}");
            assert!(
                id < 1u128.checked_shl(g.bits()).unwrap_or(u128::MAX),
                "{name}: too wide"
            );
            // locality and uuid4 are in no order (their facts say order none).
            if name != "locality" && name != "uuid4" {
                assert!(id > last, "{name}: not increasing");
            }
            last = id;
        })
        .unwrap();
        assert_eq!(seen.len(), 5000);
        // The default text decodes back as the same scheme (custom needs its layout).
        let text = g.render(last, g.text_format(None).unwrap());
        if name != "custom" && name != "nanots-host" {
            let d = idforge::inspect::inspect_as(&text, Some(&kind), None, None)
                .unwrap_or_else(|e| panic!("{name}: {text}: {e}"));
            match d.wide.as_deref() {
                // A KSUID: the sequencer's 128 bits, then 32 random ones.
                Some(wide) => assert_eq!(wide[..16], last.to_be_bytes(), "{name}: {text}"),
                None => assert_eq!(d.value, last, "{name}: {text}"),
            }
        }
    }
}

#[test]
fn settings_a_scheme_does_not_take_are_refused_not_ignored() {
    let refuse = |name: &str, o: OpenOptions| {
        let e = Opened::open_name(name, None, &o).unwrap_err();
        assert!(matches!(e, Error::NotApplicable { .. }), "{name}: {e}");
    };
    refuse(
        "uprotocol-v8",
        OpenOptions {
            at_ns: Some(1),
            ..OpenOptions::default()
        },
    );
    refuse(
        "uprotocol-v8",
        OpenOptions {
            node: Some(1),
            ..OpenOptions::default()
        },
    );
    refuse(
        "snowflake",
        OpenOptions {
            node: Some(1),
            sequential: true,
            ..OpenOptions::default()
        },
    );
    refuse(
        "uuid7",
        OpenOptions {
            host_digits: Some(3),
            ..OpenOptions::default()
        },
    );
    #[cfg(feature = "locality")]
    refuse(
        "locality",
        OpenOptions {
            node: Some(1),
            ..OpenOptions::default()
        },
    );
    assert_eq!(
        Opened::open_name("nanots-host", None, &OpenOptions::default()).unwrap_err(),
        Error::HostRequired
    );
    let e = Opened::open_name("snowflake", None, &OpenOptions::default()).unwrap_err();
    assert!(matches!(e, Error::NodeRequired { .. }), "{e}");
}

/// A state file whose stamp is ahead of a fixed clock, with a bounded policy, would make the
/// first id wait for ever for a clock that never moves: refused at open instead.
#[cfg(feature = "host-wide")]
#[test]
fn a_fixed_clock_with_a_bounded_policy_is_refused_not_left_waiting() {
    let dir = std::env::temp_dir().join(format!("idforge-open-fixed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("uuid7.state");
    let kind = Kind::from_name("uuid7", None).unwrap();
    // The file's stamp is now, on the wall clock.
    let now = Opened::open(
        &kind,
        &OpenOptions {
            state: Some(StateOptions::new(&path)),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    now.next().unwrap();
    drop(now);
    let at = idforge::time::parse_rfc3339("2024-10-11T09:40:25.767Z").unwrap();
    let fixed = |policy| OpenOptions {
        at_ns: Some(at),
        policy,
        state: Some(StateOptions::new(&path)),
        ..OpenOptions::default()
    };
    let e = Opened::open(&kind, &fixed(Some(idforge::Policy::DEFAULT))).unwrap_err();
    assert!(
        matches!(&e, Error::NotApplicable { setting, .. } if setting.contains("fixed clock")),
        "{e}"
    );
    // With no policy (the unbounded one) it issues at once. A state file keeps the policy it
    // was made with, so this is a file of its own.
    let path = dir.join("uuid7-fixed.state");
    for policy in [None, Some(idforge::Policy::UNBOUNDED)] {
        let g = Opened::open(
            &kind,
            &OpenOptions {
                state: Some(StateOptions::new(&path)),
                ..fixed(policy)
            },
        )
        .unwrap();
        g.next().unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fixed_clock_gives_ids_at_that_time() {
    let at = idforge::time::parse_rfc3339("2024-10-11T09:40:25.767Z").unwrap();
    for name in ["uuid7", "snowflake", "nanots-host"] {
        let kind = Kind::from_name(name, None).unwrap();
        let o = OpenOptions {
            at_ns: Some(at),
            ..opts_for(&kind)
        };
        let g = Opened::open(&kind, &o).unwrap();
        let id = g.next().unwrap();
        let d = match name {
            "nanots-host" => idforge::inspect::inspect_nanots_host(&id.to_string(), 2).unwrap(),
            _ => inspect(
                &g.render(id, g.text_format(None).unwrap()),
                Some(&idforge::Scheme::from_name(name).unwrap()),
                None,
            )
            .unwrap(),
        };
        assert_eq!(d.unix_ms(), Some((at / 1_000_000) as u128), "{name}");
    }
}

#[test]
fn text_formats_fit_the_scheme() {
    let nh = Opened::open_name(
        "nanots-host",
        None,
        &OpenOptions {
            node: Some(28),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert_eq!(nh.text_format(Some("time")).unwrap(), TextFormat::Time);
    assert!(nh.text_format(Some("hex")).is_err());
    let sf = Opened::open_name(
        "snowflake",
        None,
        &OpenOptions {
            node: Some(1),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert!(sf.text_format(Some("time")).is_err());
    assert!(sf.text_format(Some("uuid")).is_err());
    assert!(sf.text_format(Some("nope")).is_err());
    let id = nh.next().unwrap();
    assert!(nh.render(id, TextFormat::Time).ends_with("28"));
}

#[cfg(feature = "host-wide")]
#[test]
fn two_opens_on_one_state_file_share_the_stamp() {
    let dir = std::env::temp_dir().join(format!("idforge-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    for name in ["global-id", "nanots-host"] {
        let kind = Kind::from_name(name, None).unwrap();
        let o = OpenOptions {
            state: Some(StateOptions::new(dir.join(format!("{name}.state")))),
            ..opts_for(&kind)
        };
        let a = Opened::open(&kind, &o).unwrap();
        let b = Opened::open(&kind, &o).unwrap();
        assert_eq!(
            a.state_path(),
            Some(dir.join(format!("{name}.state")).as_path())
        );
        // Interleaved, the two generators' ids increase together: one stamp.
        let mut last = 0;
        for _ in 0..1000 {
            for g in [&a, &b] {
                let id = g.next().unwrap();
                assert!(id > last, "{name}: {id} after {last}");
                last = id;
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "host-wide")]
#[test]
fn the_default_state_path_is_named_by_the_kind() {
    let dir = std::env::temp_dir().join("idforge-open-default");
    // SAFETY: the tests of this binary read the environment only through `std::env`, whose
    // readers and writers take one lock; nothing here calls libc's getenv directly.
    unsafe { std::env::set_var("IDFORGE_STATE_DIR", &dir) };
    let k = Kind::from_name("snowflake", None).unwrap();
    let p1 = k
        .default_state_path(&OpenOptions {
            node: Some(1),
            ..OpenOptions::default()
        })
        .unwrap();
    let p2 = k
        .default_state_path(&OpenOptions {
            node: Some(2),
            ..OpenOptions::default()
        })
        .unwrap();
    assert_ne!(p1, p2, "two nodes, two files");
    assert!(p1.starts_with(&dir));
    let e = Kind::from_name("uprotocol-v8", None)
        .unwrap()
        .default_state_path(&OpenOptions::default())
        .unwrap_err();
    assert!(matches!(e, Error::NotApplicable { .. }), "{e}");
}
