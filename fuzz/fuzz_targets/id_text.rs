//! Id text in every format: parsing never panics, and whatever parses prints back to text that
//! parses to the same value (parse ∘ format = identity on values); detection agrees with parsing
//! without a format (it never picks one of two readings), and no width makes `encode` panic.
#![no_main]
use idforge::text::{detect, encode, parse, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    for bits in [64u32, 128] {
        match (detect(s, bits), parse(s, bits, None)) {
            (Ok(f), Ok(v)) => assert_eq!(parse(s, bits, Some(f)).ok(), Some(v), "{s:?} as {f}"),
            (Err(_), Err(_)) => {}
            (d, p) => panic!("{s:?}: detect {d:?} but parse {p:?}"),
        }
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
    if let Some(&w) = data.first() {
        let bits = u32::from(w) * 2; // 0 to 510: widths above 128 are taken as 128
        for f in [Format::Dec, Format::Hex, Format::Base32, Format::Uuid] {
            let _ = parse(encode(u128::MAX, bits, f).as_str(), bits, Some(f));
        }
    }
});
