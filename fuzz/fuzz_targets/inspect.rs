//! `inspect`'s auto-detection and every scheme's decoder: never a panic, and a decoded id's
//! canonical text decodes to the same value. The canonical text is read in the scheme's default
//! format: a short decimal can be ambiguous without it (16 digits are also 64-bit hex).
#![no_main]
use idforge::inspect::{inspect, inspect_as, inspect_locality, inspect_nanots_host, Decoded, Inspector};
use idforge::schemes::catalog::Kind;
use idforge::Scheme;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(d) = inspect(s, None, None) {
        let again = inspect(&d.canonical, None, None).expect("canonical text decodes");
        assert_eq!((again.value, &again.scheme), (d.value, &d.scheme));
        // A version 7 UUID is never given a counter without a scheme.
        assert!(d.version != Some(7) || (d.counter.is_none() && !d.layouts.is_empty()));
    }
    for scheme in Scheme::PRESETS.iter() {
        if let Ok(d) = inspect(s, Some(scheme), None) {
            // A KSUID's canonical text is its own 27 characters, not its default format's
            // (hex of the sequencer's 128 bits): read it as the scheme's text.
            let format = (*scheme != Scheme::Ksuid).then(|| scheme.default_format());
            let again = inspect(&d.canonical, Some(scheme), format)
                .expect("canonical text decodes");
            assert_eq!((again.value, again.unix_ns), (d.value, d.unix_ns), "{scheme}");
        }
    }
    // The inspector's lines (`idforge inspect`) against the `Decoded` reading: the same ids
    // refused, the same text line for the others (JSON is compared in idforge-serve's tests).
    let kinds = std::iter::once(None)
        .chain(Scheme::PRESETS.iter().map(|s| Some(Kind::Layout(s.clone()))))
        .chain([Some(Kind::Locality), Some(Kind::Uuid4), Some(Kind::NanoTsHost)]);
    for kind in kinds {
        let Ok(mut ins) = Inspector::new(kind.clone(), None, None) else { continue };
        let expected = inspect_as(s, kind.as_ref(), None, None);
        for json in [false, true] {
            let mut line = Vec::new();
            let got = ins.write(s, json, &mut line);
            assert_eq!(got.is_ok(), expected.is_ok(), "{s:?} as {kind:?}: {got:?}");
            if let (Ok(d), false) = (&expected, json) {
                assert_eq!(String::from_utf8(line).unwrap(), text_line(d), "{s:?} as {kind:?}");
            }
        }
    }
    let _ = inspect_locality(s, None);
    let _ = inspect_nanots_host(s, 2);
    let _ = inspect_nanots_host(s, 3);
});

/// The text line `idforge inspect` prints for a `Decoded` (as idforge-serve's tests make it).
fn text_line(d: &Decoded) -> String {
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
