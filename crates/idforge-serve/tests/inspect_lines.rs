//! `idforge::inspect::Inspector` (the lines `idforge inspect` prints, written without a
//! `Decoded` per id for layout schemes and version 7 UUIDs) against the `Decoded` reading of
//! the same ids: its text lines must be the ones the command line printed from `Decoded`, and its
//! JSON the service's `/v1/inspect` object, for ids of every scheme, in every format, and for
//! text that is not an id (the same error). Values are drawn at random over each layout's
//! defined bits, so times, nodes and counters reach their edges.

use idforge::inspect::{inspect_as, Inspector};
use idforge::schemes::catalog::{Kind, NAMES};
use idforge::text::{self, Format};
use idforge::Decoded;
use proptest::prelude::*;
use serde_json::Value;

/// The text line the command line printed from a `Decoded` (hint excepted: the inspector
/// says it once, not on each line).
fn reference_line(d: &Decoded) -> String {
    let mut s = format!("{}  scheme={}", d.canonical, d.scheme);
    if let Some(time) = &d.time {
        s.push_str(&format!(" time={time}"));
    }
    if let Some(ms) = d.unix_ms() {
        s.push_str(&format!(" unix_ms={ms}"));
    }
    for (k, v) in d.parts() {
        s.push_str(&format!(" {k}={v}"));
    }
    if let Some(n) = &d.note {
        s.push_str(&format!("  ({n})"));
    }
    s
}

fn kinds() -> Vec<Option<Kind>> {
    let mut v = vec![None];
    for name in NAMES {
        let layout = (name == "custom").then_some("time:40,node:8,counter:15,tick=1ms");
        v.push(Some(Kind::from_name(name, layout).unwrap()));
    }
    v
}

/// Compares the inspector with the `Decoded` path on one input.
fn check(kind: Option<&Kind>, format: Option<Format>, input: &str) {
    check_digits(kind, format, None, input)
}

/// As [`check`], with nanots-host's host digits.
fn check_digits(kind: Option<&Kind>, format: Option<Format>, digits: Option<u32>, input: &str) {
    let Ok(mut ins) = Inspector::new(kind.cloned(), format, digits) else {
        assert!(inspect_as(input, kind, format, digits).is_err());
        return;
    };
    for json in [false, true] {
        compare(&mut ins, kind, format, digits, input, json);
    }
}

/// One line of `ins` against the `Decoded` path.
fn compare(
    ins: &mut Inspector,
    kind: Option<&Kind>,
    format: Option<Format>,
    digits: Option<u32>,
    input: &str,
    json: bool,
) {
    let expected = inspect_as(input, kind, format, digits);
    {
        let mut out = b"kept|".to_vec();
        let got = ins.write(input, json, &mut out);
        match (&expected, got) {
            (Ok(d), Ok(())) => {
                let line = String::from_utf8(out[5..].to_vec()).unwrap();
                if json {
                    let got: Value = serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("{input:?}: not JSON ({e}): {line}"));
                    assert_eq!(
                        got,
                        idforge_serve::json::decoded(d, str::to_string),
                        "{input:?} as {kind:?}"
                    );
                } else {
                    assert_eq!(line, reference_line(d), "{input:?} as {kind:?}");
                }
            }
            (Err(e), Err(g)) => {
                assert_eq!(e.to_string(), g.to_string(), "{input:?} as {kind:?}");
                assert_eq!(out, b"kept|", "an error appends nothing");
            }
            (e, g) => panic!("{input:?} as {kind:?}: Decoded path {e:?}, inspector {g:?}"),
        }
    }
}

/// The ids of a stream for one inspector of `kind`: `raw` with `delta` in its low bits (ids of
/// one run share their time, as a generator's do), shown as `shape` says: the kind's own
/// text, uppercase, braced or as a URN (UUIDs), with another UUID version (for no kind: every
/// version, times shared across versions of other fraction digits), or TypeID text.
fn stream_text(kind: Option<&Kind>, raw: u128, delta: u16, shape: u8) -> String {
    let raw = raw ^ u128::from(delta);
    let (v, bits, format) = match kind.and_then(|k| value_of(k, raw, false)) {
        Some((v, bits)) => {
            let Some(Kind::Layout(s)) = kind else {
                unreachable!()
            };
            (v, bits, s.default_format())
        }
        // UUIDs: `delta` in the low bits of a v1 or v6 time too (times within and across
        // milliseconds, which share a millisecond's block of text).
        None => (
            uuid_of(
                raw ^ u128::from(delta) << 96 ^ u128::from(delta & 0xFFF) << 64,
                [1, 6, 7, 8, 4, 0xb][usize::from(shape) % 6],
                0b10,
            ),
            128,
            Format::Uuid,
        ),
    };
    let own = text::encode(v, bits, format).to_string();
    match shape {
        0 => own,
        1 => own.to_uppercase(),
        2 if bits == 128 => format!("{{{}}}", text::encode(v, 128, Format::Uuid)),
        3 if bits == 128 => format!("urn:uuid:{}", text::encode(v, 128, Format::Uuid)),
        4 if bits == 128 => text::encode(v ^ (0x3 << 76), 128, Format::Uuid).to_string(),
        5 if bits == 128 => format!("user_{}", text::encode(v, 128, Format::TypeId)),
        6 => text::encode(v, bits, Format::Dec).to_string(),
        _ => own,
    }
}

/// A value of `kind` drawn from `raw`: the layout's defined bits with its fixed bits set (and,
/// when `stray`, a bit the layout does not define, to be refused alike).
fn value_of(kind: &Kind, raw: u128, stray: bool) -> Option<(u128, u32)> {
    let Kind::Layout(s) = kind else { return None };
    let l = s.layout();
    let mut v = (raw & l.defined_bits() & !l.fixed_mask) | l.fixed_value;
    if stray {
        v |= !l.defined_bits()
            & if l.bits < 128 {
                (1u128 << l.bits) - 1
            } else {
                u128::MAX
            };
    }
    Some((v, l.bits))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_scheme_and_format_writes_what_decoded_says(raw in any::<u128>(), stray in prop::bool::weighted(0.1)) {
        let formats = [None, Some(Format::Dec), Some(Format::Hex), Some(Format::Base32), Some(Format::Uuid)];
        for kind in kinds() {
            for f in formats {
                let text = match kind.as_ref().and_then(|k| value_of(k, raw, stray)) {
                    Some((v, bits)) => {
                        let shown = f.unwrap_or(Format::Dec);
                        if shown == Format::Uuid && bits != 128 { continue; }
                        text::encode(v, bits, shown).to_string()
                    }
                    // Kinds without a layout, and no kind: UUID text of any version.
                    None => text::encode(raw, 128, Format::Uuid).to_string(),
                };
                check(kind.as_ref(), f, &text);
            }
        }
    }

    #[test]
    fn uuids_of_every_version_without_a_scheme(raw in any::<u128>(), version in 0u128..16, variant in 0u128..4) {
        let v = (raw & !(0xF << 76) & !(0b11 << 62)) | (version << 76) | (variant << 62);
        let canonical = text::encode(v, 128, Format::Uuid).to_string();
        for input in [canonical.clone(), canonical.to_uppercase(), format!("{{{canonical}}}"), format!("urn:uuid:{canonical}"), format!("  {canonical} ")] {
            check(None, None, &input);
            check(None, Some(Format::Uuid), &input);
        }
    }

    #[test]
    fn text_that_is_not_an_id_fails_alike(s in "\\PC{0,40}") {
        for kind in kinds() {
            check(kind.as_ref(), None, &s);
        }
    }
}

/// A UUID of `version` and `variant` with the other bits from `raw`.
fn uuid_of(raw: u128, version: u128, variant: u128) -> u128 {
    (raw & !(0xF << 76) & !(0b11 << 62)) | (version << 76) | (variant << 62)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The kinds whose ids are not a layout's value in a generic format: KSUID and TypeID text,
    /// Locality UUIDs and version 4 UUIDs, nanots-host integers and timestamps.
    #[test]
    fn other_kinds_in_their_own_text(
        raw in any::<u128>(),
        top in any::<u32>(),
        version in 0u128..16,
        variant in 0u128..4,
        likely in prop::bool::weighted(0.7),
        prefix in "[a-z]{0,3}(_[a-z]{1,2})?",
        host_digits in prop::option::of(1u32..5),
    ) {
        let ksuid = |name: &str| Kind::from_name(name, None).unwrap();
        // KSUID text of any 20 bytes, read with and without the scheme.
        let mut b = [0u8; 20];
        b[..4].copy_from_slice(&top.to_be_bytes());
        b[4..].copy_from_slice(&raw.to_be_bytes());
        let k = idforge::schemes::ksuid::Ksuid::from_bytes(b).to_string();
        for kind in [None, Some(ksuid("ksuid"))] {
            check(kind.as_ref(), None, &k);
            check(kind.as_ref(), Some(Format::Base32), &k);
        }
        // TypeID text of UUIDs of every version and variant (mostly v7 and v8, RFC 9562's variant).
        let (version, variant) = if likely { (7 + (raw & 1), 0b10) } else { (version, variant) };
        let v = uuid_of(raw, version, variant);
        let suffix = text::encode(v, 128, Format::TypeId).to_string();
        let typeid = if prefix.is_empty() { suffix.clone() } else { format!("{prefix}_{suffix}") };
        for kind in [None, Some(ksuid("typeid"))] {
            for f in [None, Some(Format::TypeId)] {
                check(kind.as_ref(), f, &typeid);
            }
            check(kind.as_ref(), Some(Format::Uuid), &text::encode(v, 128, Format::Uuid).to_string());
        }
        for edge in [0, u128::MAX] {
            check(Some(&ksuid("typeid")), None, &text::encode(edge, 128, Format::TypeId).to_string());
        }
        // Locality UUIDs (version b) and version 4 UUIDs, as UUID text and hex.
        for (name, version) in [("locality", 0xb), ("uuid4", 4)] {
            let variant = if likely { 0b10 } else { variant };
            let v = uuid_of(raw, version, variant);
            for f in [None, Some(Format::Uuid), Some(Format::Hex)] {
                let shown = text::encode(v, 128, f.unwrap_or(Format::Uuid)).to_string();
                check(Some(&ksuid(name)), f, &shown);
                check(None, f, &shown);
            }
        }
        // nanots-host: integers and Chronicle's timestamp text, with 2 or 3 host digits (and
        // digits it refuses).
        let n = raw as u64;
        for text in [n.to_string(), idforge::schemes::nanots::format(n), format!("{}.{:09}", idforge::schemes::nanots::format(n), n % 1_000_000_000)] {
            for f in [None, Some(Format::Dec), Some(Format::Hex)] {
                check_digits(Some(&ksuid("nanots-host")), f, host_digits, &text);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// One inspector per kind over a stream of ids, text lines then JSON: what it keeps from
    /// one id to the next (the last time's text, hints) never shows in another id's line.
    #[test]
    fn one_inspector_over_a_stream_writes_what_decoded_says(
        raw in any::<u128>(),
        ids in prop::collection::vec((any::<u16>(), 0u8..8, prop::bool::weighted(0.2)), 1..24),
        again in any::<u128>(),
    ) {
        for kind in kinds() {
            let mut ins = Inspector::new(kind.clone(), None, None).unwrap();
            for json in [false, true] {
                for &(delta, shape, fresh) in &ids {
                    // Now and then an id of another run (another time).
                    let raw = if fresh { again ^ u128::from(delta) << 90 } else { raw };
                    let input = stream_text(kind.as_ref(), raw, delta, shape);
                    compare(&mut ins, kind.as_ref(), None, None, &input, json);
                }
            }
        }
    }
}

#[test]
fn nil_max_and_odd_text() {
    for input in [
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "user_01h455vb4pex5vsknk084sn02q",
        "01h455vb4pex5vsknk084sn02q",
        "2021-12-28T14:07:02.954100128",
        "\"quoted\"\\",
        "",
    ] {
        for kind in kinds() {
            check(kind.as_ref(), None, input);
        }
    }
}

#[test]
fn the_v7_hint_is_kept_once_for_text_and_given_in_json() {
    let mut ins = Inspector::new(None, None, None)
        .unwrap()
        .with_hint_rewriter(|h| h.replace("scheme `", "--scheme `"));
    let mut out = Vec::new();
    for _ in 0..3 {
        ins.write("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", false, &mut out)
            .unwrap();
    }
    assert!(!String::from_utf8_lossy(&out).contains("layout"));
    assert_eq!(ins.hints().len(), 1);
    assert_eq!(ins.hints()[0].1, 3);
    assert!(ins.hints()[0].0.contains("--scheme `uuid7`"));
    out.clear();
    ins.write("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", true, &mut out)
        .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert!(v["hint"].as_str().unwrap().contains("--scheme `uuid7`"));
    assert_eq!(v["layouts"], serde_json::json!(["uuid7", "uprotocol"]));
}
