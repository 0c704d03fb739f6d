//! Guarantee 4: every bad input gets its own typed error, with a message that says what to do.

use idforge::text::Format;
use idforge::{inspect, Error, Generator, Layout, ManualClock, Policy, Scheme};

#[test]
fn node_out_of_range() {
    let e = Generator::new(&Scheme::Snowflake, Some(1024)).unwrap_err();
    assert!(matches!(
        e,
        Error::NodeOutOfRange {
            node: 1024,
            bits: 10,
            max: 1023,
            ..
        }
    ));
    assert!(e.to_string().contains("from 0 to 1023"));
    assert!(Generator::new(&Scheme::Snowflake, Some(1023)).is_ok());
}

#[test]
fn node_required_never_random() {
    let e = Generator::new(&Scheme::GlobalId, None).unwrap_err();
    assert!(matches!(e, Error::NodeRequired { max: 1023, .. }));
    // The library names its own setting; the command line maps it to --node and IDFORGE_NODE.
    assert!(e.to_string().contains("`node` setting"), "{e}");
    assert!(
        !e.to_string().contains("--") && !e.to_string().contains("IDFORGE_NODE"),
        "{e}"
    );
}

#[test]
fn node_refused_where_there_is_no_node_field() {
    let e = Generator::new(&Scheme::Uuid7, Some(3)).unwrap_err();
    assert!(e.to_string().contains("has no node field"));
}

#[test]
fn widths_that_do_not_fit() {
    let e = Layout::parse_spec("time:64,node:40,counter:30").unwrap_err();
    assert!(matches!(e, Error::InvalidLayoutSpec { .. }));
    assert!(e.to_string().contains("at most 128"), "{e}");
    let e = Layout::parse_spec("time:41,counter:33").unwrap_err();
    assert!(e.to_string().contains("wider than 32"), "{e}");
}

#[test]
fn epoch_in_the_future() {
    let l = Layout::parse_spec("time:41,counter:12,epoch=2500-01-01T00:00:00Z").unwrap();
    let e = Generator::new(&Scheme::Custom(l), None).unwrap_err();
    assert!(matches!(e, Error::EpochInFuture { .. }));
    assert!(e.to_string().contains("2500-01-01"));
}

#[test]
fn time_beyond_the_layout_names_the_year_it_ran_out() {
    // Snowflake's 41 bits of ms from 2010-11-04 run out in September 2080.
    let clock = ManualClock::new(idforge::time::parse_rfc3339("2081-01-01T00:00:00Z").unwrap());
    let g = Generator::with_clock(&Scheme::Snowflake, Some(1), clock, Policy::DEFAULT).unwrap();
    let e = g.next().unwrap_err();
    assert!(
        matches!(e, Error::TimeOutOfRange { year: 2080, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.contains("snowflake") && msg.contains("2080"), "{msg}");
}

#[test]
fn malformed_and_wrong_version_id_strings() {
    assert!(matches!(
        inspect("not-an-id", Some(&Scheme::Snowflake), None),
        Err(Error::MalformedId { .. })
    ));
    assert!(matches!(
        inspect("18446744073709551616", Some(&Scheme::Snowflake), None),
        Err(Error::MalformedId { reason, .. }) if reason.contains("64 bits")
    ));
    assert!(matches!(
        inspect(
            "017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
            Some(&Scheme::UProtocolV8),
            None
        ),
        Err(Error::WrongVersion {
            expected: 8,
            found: 7,
            ..
        })
    ));
    // Version 4 is decoded (random, no time); 9 is no version of RFC 9562.
    assert_eq!(
        inspect("017f22e2-79b0-4cc3-98c4-dc0c0c07398f", None, None)
            .unwrap()
            .scheme,
        "uuid-v4"
    );
    assert!(matches!(
        inspect("017f22e2-79b0-9cc3-98c4-dc0c0c07398f", None, None),
        Err(Error::MalformedId { reason, .. }) if reason.contains("version 9")
    ));
    assert!(matches!(
        inspect("017f22e2-79b0-7cc3-98c4", None, Some(Format::Uuid)),
        Err(Error::MalformedId { reason, .. }) if reason.contains("36 characters")
    ));
}

#[test]
fn unknown_scheme() {
    let e = Scheme::from_name("uuid9").unwrap_err().to_string();
    // Library words: the names, not a command to run.
    assert!(!e.contains("idforge schemes"), "{e}");
    assert!(e.contains("the schemes are uuid7, uprotocol"), "{e}");
    // Case-insensitive, one FromStr for each type; the other kinds are named as such.
    assert_eq!("UUID7".parse::<Scheme>().unwrap(), Scheme::Uuid7);
    for name in ["locality", "nanots-host", "uuid4"] {
        let e = Scheme::from_name(name).unwrap_err().to_string();
        assert!(e.contains("Kind"), "{e}");
        assert!(name.parse::<idforge::Kind>().is_ok(), "{name}");
    }
    assert!(Scheme::from_name("custom")
        .unwrap_err()
        .to_string()
        .contains("Layout::parse_spec"));
}

#[test]
fn typed_ids_tell_their_time_and_parts() {
    use idforge::{Generator, Id64, UuidId};
    let g = Generator::builder(&Scheme::Snowflake)
        .node(9)
        .build()
        .unwrap();
    let id: Id64 = g.next_id64().unwrap();
    let d = id.decode(&Scheme::Snowflake).unwrap();
    assert_eq!(d.node, Some(9));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let t = id.timestamp(&Scheme::Snowflake).unwrap().as_millisecond();
    assert!((now - t).abs() < 5_000, "{t} vs {now}");
    // A 64-bit id is refused by a scheme of another width rather than misread.
    assert!(id.decode(&Scheme::Uuid7).is_err());
    let u: UuidId = idforge::uuid7().unwrap();
    let ms = u.unix_ms().unwrap() as i64;
    assert!((now - ms).abs() < 5_000);
    assert_eq!(
        u.decode(&Scheme::Uuid7).unwrap().unix_ms(),
        Some(ms as u128)
    );
    assert_eq!(UuidId::from_bytes(*u.as_bytes()), u);
}
