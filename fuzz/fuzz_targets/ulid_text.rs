//! ULID text: parsing never panics; whatever parses prints back as the same text uppercased (the
//! spec decodes case-insensitively and refuses I, L, O, U), and any 128-bit value prints as 26
//! characters that parse back to it.
#![no_main]
use idforge::schemes::ulid::{parse, Ulid};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(v) = parse(s) {
            let back = Ulid(v).to_string();
            assert_eq!(back, s.to_ascii_uppercase(), "{s:?}");
            assert_eq!(parse(&back).ok(), Some(v));
        }
    }
    if data.len() >= 16 {
        let v = u128::from_be_bytes(data[..16].try_into().unwrap());
        let t = Ulid(v).to_string();
        assert_eq!(t.len(), 26);
        assert_eq!(parse(&t).ok(), Some(v), "{t}");
    }
});
