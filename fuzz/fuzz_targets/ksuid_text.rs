//! KSUID text: parsing never panics; whatever parses prints back as exactly the same text (base62
//! is case-sensitive: one text per value), and any 20 bytes print as 27 characters that parse
//! back to them, in the same order as the bytes.
#![no_main]
use idforge::schemes::ksuid::{parse, Ksuid};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(k) = parse(s) {
            assert_eq!(k.to_string(), s, "{s:?}");
        }
    }
    if data.len() >= 40 {
        let a = Ksuid(data[..20].try_into().unwrap());
        let b = Ksuid(data[20..40].try_into().unwrap());
        let (ta, tb) = (a.to_string(), b.to_string());
        assert_eq!(ta.len(), 27);
        assert_eq!(parse(&ta).ok(), Some(a), "{ta}");
        assert_eq!(a.cmp(&b), ta.cmp(&tb), "{ta} {tb}");
    }
});
