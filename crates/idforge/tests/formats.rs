//! The id formats users already use (ULID, TSID, ObjectId, xid, TypeID, KSUID) on idforge's sequencer:
//! conformance vectors produced by each format's reference implementation (`tests/vectors/`,
//! each file names the package, version and script), property tests of the parsers, and the
//! uniqueness of generated ids across threads and across processes sharing a state file, checked
//! on the bits the counter makes unique (time, node, counter), never on random bits.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use idforge::inspect::inspect_as;
use idforge::schemes::catalog::Kind;
use idforge::schemes::open::{OpenOptions, Opened};
use idforge::text::{self, Format};
use idforge::{Generator, ManualClock, Policy, Scheme, StateOptions};
use proptest::prelude::*;
use serde_json::Value;

fn vectors(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn list<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in vectors"))
}

fn num(v: &Value) -> u128 {
    v.as_str()
        .map(|s| s.parse().unwrap())
        .unwrap_or_else(|| u128::from(v.as_u64().unwrap()))
}

/// The bits of an id the sequencer makes unique: everything but the random field.
fn without_random(scheme: &Scheme, id: u128) -> u128 {
    let r = scheme.layout().random;
    id & !r.deposit(r.max())
}

/// Ids are strictly increasing, and distinct even with their random bits taken away.
fn assert_unique_by_counter(scheme: &Scheme, ids: &[u128], what: &str) {
    let masked: HashSet<u128> = ids.iter().map(|&id| without_random(scheme, id)).collect();
    assert_eq!(
        masked.len(),
        ids.len(),
        "{what}: {} of {} {} ids share their time, node and counter bits (unique only by chance)",
        ids.len() - masked.len(),
        ids.len(),
        scheme.name()
    );
}

// ---------------------------------------------------------------------------------------------
// ULID

#[test]
fn ulid_reference_vectors_decode_and_encode() {
    use idforge::schemes::ulid::Ulid;
    let v = vectors("ulid");
    let kind = Kind::from_name("ulid", None).unwrap();
    for case in list(&v, "valid") {
        let text = case["text"].as_str().unwrap();
        let value = num(&case["value"]);
        let u: Ulid = text.parse().unwrap();
        assert_eq!(u.as_u128(), value, "{text}");
        assert_eq!(u.to_string(), text);
        assert_eq!(u.unix_ms(), case["unix_ms"].as_u64().unwrap());
        assert_eq!(text.to_lowercase().parse::<Ulid>().unwrap(), u);
        assert_eq!(Ulid::from_bytes(u.to_bytes()), u);
        let d = inspect_as(text, Some(&kind), None, None).unwrap();
        assert_eq!(d.value, value);
        assert_eq!(d.unix_ms(), Some(u128::from(u.unix_ms())));
        assert_eq!(d.canonical, text);
    }
    for case in list(&v, "invalid") {
        let text = case["text"].as_str().unwrap();
        assert!(text.parse::<Ulid>().is_err(), "accepted {text:?}");
        assert!(
            inspect_as(text, Some(&kind), None, None).is_err(),
            "inspect accepted {text:?}"
        );
    }
}

proptest! {
    #[test]
    fn ulid_text_round_trips(v in any::<u128>()) {
        let t = text::encode(v, 128, Format::Ulid);
        let t = t.as_str();
        prop_assert_eq!(t.len(), 26);
        prop_assert!(t.as_bytes()[0] <= b'7');
        prop_assert_eq!(text::parse(t, 128, Some(Format::Ulid)).unwrap(), v);
        prop_assert_eq!(text::parse(&t.to_lowercase(), 128, Some(Format::Ulid)).unwrap(), v);
    }

    #[test]
    fn ulid_parser_never_panics_and_accepts_only_its_alphabet(s in "[0-9A-Za-z*~ -]{0,30}") {
        if let Ok(v) = idforge::schemes::ulid::parse(&s) {
            prop_assert_eq!(s.len(), 26);
            prop_assert!(!s.to_uppercase().contains(['I', 'L', 'O', 'U']));
            let back = text::encode(v, 128, Format::Ulid);
            prop_assert_eq!(back.as_str(), s.to_uppercase());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// TSID

#[test]
fn tsid_reference_vectors_decode_and_encode() {
    use idforge::schemes::tsid::Tsid;
    let v = vectors("tsid");
    let kind = Kind::from_name("tsid", None).unwrap();
    for case in list(&v, "valid") {
        let text = case["text"].as_str().unwrap();
        let value = num(&case["value"]) as u64;
        let t: Tsid = text.parse().unwrap();
        assert_eq!(t.as_u64(), value, "{text}");
        assert_eq!(t.to_string(), text);
        assert_eq!(t.to_lower(), case["lower"].as_str().unwrap());
        assert_eq!(case["lower"].as_str().unwrap().parse::<Tsid>().unwrap(), t);
        assert_eq!(t.unix_ms(), case["unix_ms"].as_u64().unwrap());
        // Digits only (`8000000000000`) read as decimal too: ambiguous unless both readings
        // agree (`0000000000001`), then read with the format named.
        let digits_only = text.bytes().all(|b| b.is_ascii_digit());
        let format = if digits_only && text.parse::<u64>().ok() != Some(value) {
            let e = inspect_as(text, Some(&kind), None, None).unwrap_err();
            assert!(e.to_string().contains("ambiguous"), "{text}: {e}");
            Some(Format::Base32)
        } else {
            None
        };
        let d = inspect_as(text, Some(&kind), format, None).unwrap();
        assert_eq!(d.value, u128::from(value));
        assert_eq!(d.unix_ms(), Some(u128::from(t.unix_ms())));
        assert_eq!(d.canonical, text);
        let d = inspect_as(&value.to_string(), Some(&kind), Some(Format::Dec), None).unwrap();
        assert_eq!(d.canonical, text);
    }
    for case in list(&v, "look_alikes") {
        let text = case["text"].as_str().unwrap();
        assert_eq!(
            u128::from(text.parse::<Tsid>().unwrap().as_u64()),
            num(&case["value"])
        );
    }
    for case in list(&v, "invalid") {
        let text = case["text"].as_str().unwrap();
        assert!(text.parse::<Tsid>().is_err(), "accepted {text:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// ObjectId

#[test]
fn objectid_reference_vectors_decode_and_encode() {
    use idforge::schemes::objectid::ObjectId;
    let v = vectors("objectid");
    let kind = Kind::from_name("objectid", None).unwrap();
    for case in list(&v, "valid") {
        let text = case["text"].as_str().unwrap();
        let value = num(&case["value"]);
        let id: ObjectId = text.parse().unwrap();
        assert_eq!(id.as_u128(), value, "{text}");
        assert_eq!(id.to_string(), text);
        assert_eq!(text.to_uppercase().parse::<ObjectId>().unwrap(), id);
        assert_eq!(ObjectId::from_bytes(id.to_bytes()), id);
        let secs = case["unix_seconds"].as_u64().unwrap();
        assert_eq!(u64::from(id.unix_seconds()), secs);
        let d = inspect_as(text, Some(&kind), None, None).unwrap();
        assert_eq!((d.value, d.canonical.as_str()), (value, text));
        assert_eq!(d.unix_ms(), Some(u128::from(secs) * 1000));
        assert_eq!(d.node, Some((value >> 24) & ((1 << 40) - 1)));
        assert_eq!(d.counter, Some(value & 0xFF_FFFF));
        // pymongo's generation_time, e.g. 2012-10-17T21:13:27+00:00.
        let t = case["generation_time"]
            .as_str()
            .unwrap()
            .replace("+00:00", ".000Z");
        assert_eq!(
            d.time.as_deref(),
            Some(t.replace(".000Z", "Z").as_str()),
            "{text}"
        );
    }
    for case in list(&v, "invalid") {
        let text = case["text"].as_str().unwrap();
        assert!(text.parse::<ObjectId>().is_err(), "accepted {text:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// xid

#[test]
fn xid_reference_vectors_decode_and_encode() {
    use idforge::schemes::xid::Xid;
    let v = vectors("xid");
    let kind = Kind::from_name("xid", None).unwrap();
    for case in list(&v, "valid") {
        let text = case["text"].as_str().unwrap();
        let value = num(&case["value"]);
        let id: Xid = text.parse().unwrap();
        assert_eq!(id.as_u128(), value, "{text}");
        assert_eq!(id.to_string(), text);
        assert_eq!(
            u64::from(id.unix_seconds()),
            case["unix_seconds"].as_u64().unwrap()
        );
        let machine = u32::from_str_radix(case["machine"].as_str().unwrap(), 16).unwrap();
        assert_eq!(id.machine(), machine);
        assert_eq!(u64::from(id.pid()), case["pid"].as_u64().unwrap());
        assert_eq!(u64::from(id.counter()), case["counter"].as_u64().unwrap());
        let d = inspect_as(text, Some(&kind), None, None).unwrap();
        assert_eq!((d.value, d.canonical.as_str()), (value, text));
        assert_eq!(
            d.node,
            Some(u128::from(machine) << 16 | u128::from(id.pid())),
            "the node is the machine id and pid"
        );
        assert_eq!(d.counter, Some(u128::from(id.counter())));
    }
    for case in list(&v, "invalid") {
        let text = case["text"].as_str().unwrap();
        assert!(text.parse::<Xid>().is_err(), "accepted {text:?}");
    }
}

proptest! {
    #[test]
    fn xid_text_round_trips(v in 0u128..(1 << 96)) {
        let t = text::encode(v, 96, Format::Xid);
        let t = t.as_str();
        prop_assert_eq!(t.len(), 20);
        prop_assert!(t.ends_with(['0', 'g']));
        prop_assert_eq!(idforge::schemes::xid::parse(t).unwrap(), v);
    }

    #[test]
    fn xid_parser_never_panics_and_accepts_only_canonical_text(s in "[0-9a-zA-Z -]{0,22}") {
        if let Ok(v) = idforge::schemes::xid::parse(&s) {
            let back = text::encode(v, 96, Format::Xid);
            prop_assert_eq!(back.as_str(), s.as_str());
        }
    }

    #[test]
    fn objectid_parser_never_panics_and_round_trips(s in "[0-9a-fA-Fx -]{0,26}") {
        if let Ok(v) = idforge::schemes::objectid::parse(&s) {
            let back = text::encode(v, 96, Format::Hex);
            prop_assert_eq!(back.as_str(), s.to_lowercase());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// KSUID

#[test]
fn ksuid_reference_vectors_decode_and_encode() {
    use idforge::schemes::ksuid::Ksuid;
    let v = vectors("ksuid");
    let kind = Kind::from_name("ksuid", None).unwrap();
    let valid = list(&v, "valid");
    assert!(valid.len() > 300);
    for case in valid {
        let text = case["text"].as_str().unwrap();
        let hex = case["hex"].as_str().unwrap();
        let k: Ksuid = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        let got: String = k.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, hex, "{text}");
        assert_eq!(k.to_string(), text);
        assert_eq!(
            u64::from(k.timestamp()),
            case["timestamp"].as_u64().unwrap()
        );
        assert_eq!(k.unix_seconds(), case["unix_seconds"].as_u64().unwrap());
        let payload: String = k.payload().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(payload, case["payload"].as_str().unwrap());
        // inspect: recognised by its shape (unless all digits), and with the scheme named.
        let d = inspect_as(text, Some(&kind), None, None).unwrap();
        assert_eq!(d.canonical, text);
        assert_eq!(
            d.unix_ns,
            Some(u128::from(k.unix_seconds()) * 1_000_000_000)
        );
        assert_eq!(d.counter, Some(k.payload_u128() >> 96));
        if !text.bytes().all(|c| c.is_ascii_digit()) {
            let d = idforge::inspect(text, None, None).unwrap();
            assert_eq!((d.scheme.as_str(), d.counter), ("ksuid", None));
            assert_eq!(d.value, k.payload_u128());
        }
    }
    for case in list(&v, "invalid") {
        let text = case["text"].as_str().unwrap();
        assert!(text.parse::<Ksuid>().is_err(), "accepted {text:?}");
        assert!(
            inspect_as(text, Some(&kind), None, None).is_err(),
            "inspect accepted {text:?}"
        );
    }
    assert_eq!(Ksuid::MAX.to_string(), v["max_text"].as_str().unwrap());
}

#[test]
fn ksuid_generates_through_the_catalog_in_its_own_text_only() {
    let kind = Kind::from_name("ksuid", None).unwrap();
    let g = Opened::open(&kind, &OpenOptions::default()).unwrap();
    assert!(g.text_format(Some("ksuid")).is_ok());
    for other in ["hex", "dec", "uuid", "base32"] {
        let e = g.text_format(Some(other)).unwrap_err().to_string();
        assert!(e.contains("27 base62 characters"), "{other}: {e}");
    }
    // Two renderings of one sequencer value share the first 16 bytes, not the last 4.
    let f = g.text_format(None).unwrap();
    let id = g.next().unwrap();
    let (a, b) = (g.render(id, f), g.render(id, f));
    let (ka, kb): (
        idforge::schemes::ksuid::Ksuid,
        idforge::schemes::ksuid::Ksuid,
    ) = (a.parse().unwrap(), b.parse().unwrap());
    assert_eq!(ka.as_bytes()[..16], kb.as_bytes()[..16]);
    assert_ne!(ka, kb, "the last 32 bits are drawn per id");
}

proptest! {
    #[test]
    fn ksuid_text_round_trips(b in any::<[u8; 20]>()) {
        let k = idforge::schemes::ksuid::Ksuid(b);
        let t = k.to_string();
        prop_assert_eq!(t.len(), 27);
        prop_assert_eq!(t.parse::<idforge::schemes::ksuid::Ksuid>().unwrap(), k);
    }

    #[test]
    fn ksuid_text_sorts_like_the_bytes(a in any::<[u8; 20]>(), b in any::<[u8; 20]>()) {
        let (ka, kb) = (idforge::schemes::ksuid::Ksuid(a), idforge::schemes::ksuid::Ksuid(b));
        prop_assert_eq!(ka.cmp(&kb), ka.to_string().cmp(&kb.to_string()));
    }

    #[test]
    fn ksuid_parser_never_panics_and_accepts_only_canonical_text(s in "[0-9a-zA-Z é_-]{0,29}") {
        if let Ok(k) = idforge::schemes::ksuid::parse(&s) {
            prop_assert_eq!(k.to_string(), s);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// TypeID

/// The UUID of canonical UUID text.
fn uuid_value(t: &str) -> u128 {
    text::parse_uuid(t, t).unwrap()
}

/// One TypeID case that must decode: to its prefix and UUID, back to the same text, and through
/// `inspect` (with and without the scheme named).
fn typeid_decodes(t: &str, prefix: &str, uuid: u128) {
    use idforge::schemes::typeid::TypeId;
    let id: TypeId = t.parse().unwrap_or_else(|e| panic!("{t:?}: {e}"));
    assert_eq!((id.prefix(), id.uuid()), (prefix, uuid), "{t}");
    assert_eq!(id.to_string(), t, "encodes back");
    assert_eq!(TypeId::new(prefix, uuid).unwrap().to_string(), t);
    assert_eq!(
        text::TypeIdPrefix::new(prefix)
            .unwrap()
            .encode(uuid)
            .as_str(),
        t
    );
    assert_eq!(text::parse_typeid(t, t).unwrap(), (prefix, uuid));
    assert_eq!(text::parse(t, 128, Some(Format::TypeId)).unwrap(), uuid);
    let kind = Kind::from_name("typeid", None).unwrap();
    let d = inspect_as(t, Some(&kind), None, None).unwrap_or_else(|e| panic!("{t:?}: {e}"));
    assert_eq!((d.value, d.canonical.as_str()), (uuid, t));
    assert_eq!(d.prefix.as_deref(), Some(prefix));
    assert_eq!(d.scheme, "typeid");
    let version = ((uuid >> 76) & 0xF) as u8;
    if version == 7 && (uuid >> 62) & 0b11 == 0b10 {
        assert_eq!(d.unix_ms(), Some(uuid >> 80), "{t}: a UUIDv7's time");
    }
    // The nil and max UUIDs have no version.
    let nil_or_max = uuid == 0 || uuid == u128::MAX;
    assert_eq!(d.version, (!nil_or_max).then_some(version), "{t}");
    if !prefix.is_empty() {
        // `prefix_suffix` is recognised without the scheme.
        let d = inspect_as(t, None, None, None).unwrap();
        assert_eq!((d.value, d.prefix.as_deref()), (uuid, Some(prefix)));
        if version == 7 && (uuid >> 62) & 0b11 == 0b10 {
            // Its shape says TypeID, not idforge's layout: no counter, `typeid` to name.
            assert_eq!(d.counter, None, "{t}");
            assert_eq!(d.layouts, ["typeid"], "{t}");
            assert!(d.hint().unwrap().contains("scheme `typeid`"), "{t}");
        }
    }
}

/// One TypeID case that must be refused by every parser; `inspect` trims its input (lines of
/// standard input), so text that is valid once trimmed is the only thing it accepts.
fn typeid_refused(t: &str) {
    use idforge::schemes::typeid::TypeId;
    assert!(t.parse::<TypeId>().is_err(), "accepted {t:?}");
    assert!(
        text::parse_typeid(t, t).is_err(),
        "parse_typeid accepted {t:?}"
    );
    let kind = Kind::from_name("typeid", None).unwrap();
    for k in [Some(&kind), None] {
        match inspect_as(t, k, Some(Format::TypeId), None) {
            Err(_) => {}
            Ok(d) => {
                assert_ne!(t.trim(), t, "inspect accepted {t:?}");
                assert!(t.trim().parse::<TypeId>().is_ok(), "inspect accepted {t:?}");
                assert_eq!(d.canonical, t.trim());
            }
        }
    }
}

#[test]
fn typeid_reference_vectors_decode_and_encode() {
    let v = vectors("typeid");
    let mut spec_cases = HashSet::new();
    for case in list(&v, "valid") {
        let t = case["text"].as_str().unwrap();
        typeid_decodes(
            t,
            case["prefix"].as_str().unwrap(),
            uuid_value(case["uuid"].as_str().unwrap()),
        );
        if let Some(c) = case["spec_case"].as_str() {
            spec_cases.insert(c.to_string());
        }
    }
    for case in list(&v, "invalid") {
        typeid_refused(case["text"].as_str().unwrap());
        if let Some(c) = case["spec_case"].as_str() {
            spec_cases.insert(c.to_string());
        }
    }
    // Every case of the spec's valid.yml and invalid.yml (spec 0.3.0) has one of ours.
    for c in [
        "nil",
        "one",
        "ten",
        "sixteen",
        "thirty-two",
        "max-valid",
        "valid-alphabet",
        "valid-uuidv7",
        "prefix-underscore",
        "prefix-uppercase",
        "prefix-numeric",
        "prefix-period",
        "prefix-non-ascii",
        "prefix-spaces",
        "prefix-64-chars",
        "separator-empty-prefix",
        "separator-empty",
        "suffix-short",
        "suffix-long",
        "suffix-spaces",
        "suffix-uppercase",
        "suffix-hyphens",
        "suffix-wrong-alphabet",
        "suffix-ambiguous-crockford",
        "suffix-hyphens-crockford",
        "suffix-overflow",
        "prefix-underscore-start",
        "prefix-underscore-end",
        "empty",
        "prefix-empty",
    ] {
        assert!(spec_cases.contains(c), "no vector for the spec's case {c}");
    }
}

/// The spec's own `valid.json` and `invalid.json` (jetify-com/typeid, spec/), read from the
/// directory in `IDFORGE_TYPEID_SPEC` when it is set (they are not kept in this repository:
/// `tests/vectors/README.md`).
#[test]
#[ignore = "reads the TypeID spec's valid.json/invalid.json from the directory in IDFORGE_TYPEID_SPEC: cargo test -p idforge --test formats -- --ignored"]
fn typeid_spec_files_when_given() {
    let dir = std::env::var_os("IDFORGE_TYPEID_SPEC").expect(
        "IDFORGE_TYPEID_SPEC names the directory of the TypeID spec's valid.json and invalid.json",
    );
    let read = |name: &str| -> Value {
        let p = Path::new(&dir).join(name);
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    };
    let valid = read("valid.json");
    for case in valid.as_array().unwrap() {
        typeid_decodes(
            case["typeid"].as_str().unwrap(),
            case["prefix"].as_str().unwrap(),
            uuid_value(case["uuid"].as_str().unwrap()),
        );
    }
    let invalid = read("invalid.json");
    for case in invalid.as_array().unwrap() {
        typeid_refused(case["typeid"].as_str().unwrap());
    }
    eprintln!(
        "{} valid and {} invalid spec cases checked",
        valid.as_array().unwrap().len(),
        invalid.as_array().unwrap().len()
    );
}

#[test]
fn typeid_generates_with_a_prefix_through_the_catalog() {
    let kind = Kind::from_name("typeid", None).unwrap();
    let g = Opened::open(&kind, &OpenOptions::default()).unwrap();
    let f = g.text_format_prefixed(None, Some("user")).unwrap();
    let mut ids = Vec::new();
    g.take(2000, |id| ids.push(id)).unwrap();
    let texts: Vec<String> = ids.iter().map(|&id| g.render(id, f)).collect();
    assert!(
        texts.windows(2).all(|w| w[0] < w[1]),
        "text sorts like the ids"
    );
    for (id, t) in ids.iter().zip(&texts) {
        assert_eq!(t.len(), 5 + 26);
        assert!(t.starts_with("user_") && t.as_bytes()[5] <= b'7', "{t}");
        assert_eq!((id >> 76) & 0xF, 7, "a UUIDv7");
        assert_eq!((id >> 62) & 0b11, 0b10);
    }
    let d = inspect_as(&texts[0], Some(&kind), None, None).unwrap();
    assert_eq!((d.value, d.prefix.as_deref()), (ids[0], Some("user")));
    assert!(d.counter.is_some());
    // The default is the bare suffix; the UUID text of the same id on request.
    assert_eq!(
        g.render(ids[0], g.text_format(None).unwrap()),
        &texts[0][5..]
    );
    let u = g.render(ids[0], g.text_format(Some("uuid")).unwrap());
    assert_eq!(text::parse_uuid(&u, &u).unwrap(), ids[0]);
    // Prefixes the spec refuses, and a prefix where no TypeID text is written.
    for bad in ["User", "user1", "_user", "user_", &"a".repeat(64), "us er"] {
        assert!(g.text_format_prefixed(None, Some(bad)).is_err(), "{bad:?}");
    }
    assert!(g.text_format_prefixed(Some("uuid"), Some("user")).is_err());
    assert!(
        g.text_format_prefixed(None, Some("")).is_ok(),
        "the empty prefix is the spec's"
    );
    // Any 128-bit scheme can be written as TypeID text.
    let u7 = Opened::open_name("uuid7", None, &OpenOptions::default()).unwrap();
    let f = u7
        .text_format_prefixed(Some("typeid"), Some("order"))
        .unwrap();
    assert!(u7.render(u7.next().unwrap(), f).starts_with("order_0"));
}

proptest! {
    #[test]
    fn typeid_text_round_trips(v in any::<u128>(), p in "([a-z]([a-z_]{0,61}[a-z])?)?") {
        let t = text::TypeIdPrefix::new(&p).unwrap().encode(v);
        let (prefix, back) = text::parse_typeid(t.as_str(), "").unwrap();
        prop_assert_eq!((prefix, back), (p.as_str(), v));
    }

    #[test]
    fn typeid_parser_never_panics_and_accepts_only_canonical_text(s in "[0-9a-zA-Z_ .-]{0,40}") {
        if let Ok((prefix, v)) = text::parse_typeid(&s, "") {
            let back = text::TypeIdPrefix::new(prefix).unwrap().encode(v);
            prop_assert_eq!(back.as_str(), s.as_str());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// UUIDs of every version, inspected without a scheme

fn check_uuid_case(case: &Value) {
    let t = case["text"].as_str().unwrap();
    let value = uuid_value(t);
    let version = case["version"].as_u64().unwrap() as u8;
    let d = idforge::inspect(t, None, None).unwrap_or_else(|e| panic!("{t}: {e}"));
    assert_eq!(d.value, value, "{t}");
    assert_eq!(d.version, Some(version), "{t}");
    assert_eq!(d.variant, Some(0b10), "{t}");
    assert_eq!(d.scheme, format!("uuid-v{version}"), "{t}");
    match version {
        1 | 6 => {
            let ts: u64 = case["timestamp"].as_str().unwrap().parse().unwrap();
            assert_eq!(d.gregorian, Some(ts), "{t}");
            assert_eq!(d.time.as_deref(), case["time"].as_str(), "{t}");
            let ns: i128 = case["unix_ns"].as_str().unwrap().parse().unwrap();
            assert_eq!(d.unix_ns, u128::try_from(ns).ok(), "{t}: none before 1970");
            assert_eq!(
                d.clock_seq.map(u64::from),
                case["clock_seq"].as_u64(),
                "{t}"
            );
            let node = u128::from_str_radix(case["node"].as_str().unwrap(), 16).unwrap();
            assert_eq!(d.node, Some(node), "{t}");
            assert!(d.note.as_deref().unwrap().contains("RFC 9562 section 5."));
        }
        3 | 5 => {
            assert_eq!((d.time.as_deref(), d.unix_ns), (None, None), "{t}");
            assert!(d.note.as_deref().unwrap().contains("name-based"), "{t}");
        }
        4 => {
            assert_eq!((d.time.as_deref(), d.unix_ns), (None, None), "{t}");
            assert!(d.note.as_deref().unwrap().contains("random"), "{t}");
        }
        7 => {
            assert_eq!(d.unix_ms(), case["unix_ms"].as_u64().map(u128::from), "{t}");
            assert!(d.counter.is_none(), "{t}: no counter guessed");
        }
        8 => {
            // The application's bits: raw, never read as uprotocol-v8 or as the uuid6
            // package's nanoseconds unless the scheme is named.
            assert_eq!(
                (d.time.as_deref(), d.unix_ns, d.counter),
                (None, None, None),
                "{t}"
            );
            assert_eq!(d.custom_a, Some(value >> 80), "{t}");
            assert_eq!(d.custom_b, Some((value >> 64) & 0xFFF), "{t}");
            assert_eq!(d.custom_c, Some(value & ((1 << 62) - 1)), "{t}");
        }
        v => panic!("{t}: version {v} in the vectors"),
    }
}

#[test]
fn every_uuid_version_inspects_as_the_references_read_it() {
    let v = vectors("uuid");
    let rfc = list(&v, "rfc9562");
    assert_eq!(
        rfc.len(),
        8,
        "Appendix A's v1, v3, v4, v5, v6, v7 and B's two v8"
    );
    let mut versions = HashSet::new();
    for case in rfc.iter().chain(list(&v, "valid")) {
        check_uuid_case(case);
        versions.insert(case["version"].as_u64().unwrap());
    }
    assert_eq!(
        versions.len(),
        7,
        "versions 1, 3, 4, 5, 6, 7 and 8: {versions:?}"
    );
    // RFC 9562 A.1 and A.5 hold one time, clock sequence and node.
    let a1 = idforge::inspect(rfc[0]["text"].as_str().unwrap(), None, None).unwrap();
    let a5 = idforge::inspect(rfc[4]["text"].as_str().unwrap(), None, None).unwrap();
    assert_eq!(a1.time.as_deref(), Some("2022-02-22T19:22:22.0000000Z"));
    assert_eq!(
        (a1.gregorian, a1.clock_seq, a1.node),
        (a5.gregorian, a5.clock_seq, a5.node)
    );
}

#[test]
fn nil_max_and_undefined_uuids() {
    let nil = idforge::inspect("00000000-0000-0000-0000-000000000000", None, None).unwrap();
    assert_eq!(
        (nil.scheme.as_str(), nil.version, nil.time),
        ("uuid-nil", None, None)
    );
    assert!(nil.note.unwrap().contains("nil UUID"));
    let max = idforge::inspect("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", None, None).unwrap();
    assert_eq!(
        (max.scheme.as_str(), max.version, max.time),
        ("uuid-max", None, None)
    );
    assert!(max.note.unwrap().contains("max UUID"));
    // Versions RFC 9562 does not define, and version 0 that is not nil.
    for t in [
        "00000000-0000-0000-8000-000000000001",
        "017f22e2-79b0-9cc3-98c4-dc0c0c07398f",
        "017f22e2-79b0-fcc3-98c4-dc0c0c07398f",
    ] {
        let e = idforge::inspect(t, None, None).unwrap_err().to_string();
        assert!(e.contains("not a UUID version"), "{t}: {e}");
    }
    // Another variant than RFC 9562's: the version nibble means nothing there.
    let e = idforge::inspect("c232ab00-9414-11ec-f3c8-9f6bdeced846", None, None).unwrap_err();
    assert!(
        matches!(e, idforge::Error::WrongVariant { found: 0b11, .. }),
        "{e:?}"
    );
    // A v1 time before 1970 has no Unix nanoseconds but has its time.
    let d = idforge::inspect("00000000-0000-1000-8000-000000000000", None, None).unwrap();
    assert_eq!(d.time.as_deref(), Some("1582-10-15T00:00:00.0000000Z"));
    assert_eq!(d.unix_ns, None);
}

// ---------------------------------------------------------------------------------------------
// uuid4

#[test]
fn uuid4_generates_random_version_4_uuids_through_the_catalog() {
    let kind = Kind::from_name("uuid4", None).unwrap();
    assert_eq!(kind, Kind::Uuid4);
    assert!(!kind.host_wide());
    let g = Opened::open(&kind, &OpenOptions::default()).unwrap();
    assert_eq!((g.bits(), g.is_uuid()), (128, true));
    let mut ids = Vec::new();
    g.take(10_000, |id| ids.push(id)).unwrap();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    let mut ones = [0u32; 128];
    for &id in &ids {
        assert_eq!(
            ((id >> 76) & 0xF, (id >> 62) & 0b11),
            (4, 0b10),
            "{id:032x}"
        );
        for (bit, n) in ones.iter_mut().enumerate() {
            *n += ((id >> bit) & 1) as u32;
        }
    }
    // Each of the 122 random bits is set in about half the ids (10,000 draws: a standard
    // deviation of 50; 4,000 to 6,000 is 20 of them).
    let fixed = [76, 77, 78, 79, 62, 63];
    for (bit, &n) in ones.iter().enumerate() {
        if !fixed.contains(&bit) {
            assert!(
                (4_000..=6_000).contains(&n),
                "bit {bit} set in {n} of 10000"
            );
        }
    }
    // Rendered as UUID text; inspected as uuid4 (and as a version 4 UUID without the scheme).
    let f = g.text_format(None).unwrap();
    let t = g.render(ids[0], f);
    let d = inspect_as(&t, Some(&kind), None, None).unwrap();
    assert_eq!(
        (d.scheme.as_str(), d.value, d.time.as_deref()),
        ("uuid4", ids[0], None)
    );
    assert!(d.note.unwrap().contains("random"));
    assert_eq!(idforge::inspect(&t, None, None).unwrap().scheme, "uuid-v4");
    let v7 = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";
    assert!(matches!(
        inspect_as(v7, Some(&kind), None, None),
        Err(idforge::Error::WrongVersion {
            expected: 4,
            found: 7,
            ..
        })
    ));
    // Nothing but the secure generator: every setting of the sequencer's is refused.
    let refused = [
        OpenOptions {
            node: Some(1),
            ..OpenOptions::default()
        },
        OpenOptions {
            at_ns: Some(T),
            ..OpenOptions::default()
        },
        OpenOptions {
            policy: Some(Policy::UNBOUNDED),
            ..OpenOptions::default()
        },
        OpenOptions {
            random: idforge::RandomSource::Fast,
            ..OpenOptions::default()
        },
        OpenOptions {
            state: Some(StateOptions::new(
                std::env::temp_dir().join("idforge-uuid4.state"),
            )),
            ..OpenOptions::default()
        },
    ];
    for opts in &refused {
        let e = Opened::open(&kind, opts).unwrap_err();
        assert!(
            matches!(e, idforge::Error::NotApplicable { .. }),
            "{opts:?}: {e}"
        );
    }
    assert!(g.text_format_prefixed(Some("typeid"), Some("key")).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Generation through the catalog, every format

/// Each format's scheme (with a node where it takes one).
fn formats() -> Vec<(Scheme, Option<u64>)> {
    vec![
        (Scheme::Ulid, None),
        (Scheme::Tsid, Some(7)),
        (Scheme::ObjectId, Some(0x12_3456_789a)),
        (Scheme::Xid, Some(0xab_cdef_0123)),
        (Scheme::TypeId, None),
        (Scheme::Ksuid, None),
    ]
}

#[test]
fn every_format_generates_through_the_catalog_renders_and_inspects() {
    for (scheme, node) in formats() {
        let kind = Kind::from_name(scheme.name(), None).unwrap();
        let g = Opened::open(
            &kind,
            &OpenOptions {
                node,
                ..OpenOptions::default()
            },
        )
        .unwrap();
        let f = g.text_format(None).unwrap();
        let mut ids = Vec::new();
        g.take(5000, |id| ids.push(id)).unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{scheme}");
        let texts: Vec<String> = ids.iter().map(|&id| g.render(id, f)).collect();
        assert!(
            texts.windows(2).all(|w| w[0] < w[1]),
            "{scheme}: text sorts like the ids"
        );
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        for (id, t) in ids.iter().zip(&texts).step_by(97) {
            let d = inspect_as(t, Some(&kind), None, None).unwrap();
            if scheme == Scheme::Ksuid {
                // 160 bits: the sequencer's 128, then 32 random ones.
                assert_eq!(d.wide.as_deref().unwrap()[..16], id.to_be_bytes(), "{t}");
                assert_eq!(d.bits, 160);
            } else {
                assert_eq!(d.value, *id, "{scheme} {t}");
            }
            assert_eq!(&d.canonical, t);
            let ms = d.unix_ms().unwrap();
            assert!(ms <= now_ms && ms + 5_000 >= now_ms, "{scheme} {t}: {ms}");
            assert_eq!(d.node.map(|n| n as u64), node, "{scheme}");
            assert!(d.counter.is_some(), "{scheme}");
        }
        assert_unique_by_counter(&scheme, &ids, "one generator");
    }
}

#[test]
fn every_format_is_unique_and_ordered_across_8_threads() {
    for (scheme, node) in formats() {
        let g = Generator::new(&scheme, node).unwrap();
        let per_thread: Vec<Vec<u128>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| (0..50_000).map(|_| g.next().unwrap()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ids in &per_thread {
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{scheme}: per thread");
        }
        let all: Vec<u128> = per_thread.concat();
        assert_unique_by_counter(&scheme, &all, "8 threads");
    }
}

// ---------------------------------------------------------------------------------------------
// Processes sharing a state file

const CHILD_ENV: &str = "IDFORGE_FORMATS_CHILD";
const PER_PROCESS: usize = 100_000;

/// Run by each child process: ids of the scheme in `IDFORGE_FORMATS_CHILD`
/// (`name,node,state,out`) from a generator on the shared state file, written as hex lines.
#[test]
fn child_process_writes_ids_from_a_shared_state_file() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split(',').collect();
    let scheme = Scheme::from_name(parts[0]).unwrap();
    let node = parts[1].parse().ok();
    // A clock frozen at one time, whatever the scheduling: every child issues into the same
    // ticks (running ahead past a full tick), so only the shared stamp keeps them apart.
    let g = Generator::host_wide(
        &scheme,
        node,
        ManualClock::new(T),
        Policy::UNBOUNDED,
        &StateOptions::new(parts[2]),
    )
    .unwrap();
    let ids: Vec<u128> = (0..PER_PROCESS).map(|_| g.next().unwrap()).collect();
    let text: String = ids.iter().map(|id| format!("{id:x}\n")).collect();
    std::fs::write(parts[3], text).unwrap();
}

/// 2027-01-15T08:00:00Z, the frozen clock of the processes.
const T: u64 = 1_800_000_000_000_000_000;

fn run_processes(scheme: &Scheme, node: Option<u64>, processes: usize) -> Vec<Vec<u128>> {
    let dir = std::env::temp_dir().join(format!(
        "idforge-formats-{}-{}",
        scheme.name(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state: PathBuf = dir.join("state");
    let node_text = node.map(|n| n.to_string()).unwrap_or_default();
    let children: Vec<_> = (0..processes)
        .map(|i| {
            let out = dir.join(format!("ids-{i}"));
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "child_process_writes_ids_from_a_shared_state_file",
                    "--test-threads",
                    "1",
                ])
                .env(
                    CHILD_ENV,
                    format!(
                        "{},{node_text},{},{}",
                        scheme.name(),
                        state.display(),
                        out.display()
                    ),
                )
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let mut all = Vec::new();
    for (mut child, out) in children {
        assert!(child.wait().unwrap().success(), "{scheme}: a child failed");
        let ids: Vec<u128> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| u128::from_str_radix(l, 16).unwrap())
            .collect();
        assert_eq!(ids.len(), PER_PROCESS);
        all.push(ids);
    }
    let _ = std::fs::remove_dir_all(&dir);
    all
}

#[test]
fn every_format_is_unique_across_4_processes_on_one_state_file() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    for (scheme, node) in formats() {
        let per_process = run_processes(&scheme, node, 4);
        for ids in &per_process {
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "{scheme}: ids of one process are sorted"
            );
        }
        assert_unique_by_counter(&scheme, &per_process.concat(), "4 processes");
    }
}
