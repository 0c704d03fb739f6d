//! Id text in every format: parsing never panics, and whatever parses prints back to text that
//! parses to the same value (parse ∘ format = identity on values).
#![no_main]
use idforge::text::{detect, encode, parse, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    for bits in [64u32, 128] {
        let _ = detect(s, bits);
        for format in [None, Some(Format::Dec), Some(Format::Hex), Some(Format::Base32), Some(Format::Uuid)] {
            if let Ok(v) = parse(s, bits, format) {
                assert!(bits == 128 || v >> 64 == 0, "{s:?} parsed wider than {bits} bits");
                for f in [Format::Dec, Format::Hex, Format::Base32, Format::Uuid] {
                    if f == Format::Uuid && bits != 128 {
                        continue;
                    }
                    let t = encode(v, bits, f);
                    assert_eq!(parse(t.as_str(), bits, Some(f)).ok(), Some(v), "{f} of {v:#x}");
                }
            }
        }
    }
});
