//! `inspect`'s auto-detection and every scheme's decoder: never a panic, and a decoded id's
//! canonical text decodes to the same value. The canonical text is read in the scheme's default
//! format: a short decimal can be ambiguous without it (16 digits are also 64-bit hex).
#![no_main]
use idforge::inspect::{inspect, inspect_locality, inspect_nanots_host};
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
    let _ = inspect_locality(s, None);
    let _ = inspect_nanots_host(s, 2);
    let _ = inspect_nanots_host(s, 3);
});
