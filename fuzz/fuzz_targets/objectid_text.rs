//! ObjectId text: parsing never panics; whatever parses prints back as the same text lowercased
//! (24 hex characters, either case accepted, as pymongo), and any 12 bytes print as text that
//! parses back to them.
#![no_main]
use idforge::schemes::objectid::{parse, ObjectId};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(v) = parse(s) {
            let back = ObjectId(v).to_string();
            assert_eq!(back, s.to_ascii_lowercase(), "{s:?}");
            assert_eq!(parse(&back).ok(), Some(v));
        }
    }
    if data.len() >= 12 {
        let id = ObjectId::from_bytes(data[..12].try_into().unwrap());
        let t = id.to_string();
        assert_eq!(t.len(), 24);
        assert_eq!(parse(&t).ok(), Some(id.as_u128()), "{t}");
        assert_eq!(ObjectId(parse(&t).unwrap()).to_bytes(), id.to_bytes());
    }
});
