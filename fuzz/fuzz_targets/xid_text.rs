//! xid text: parsing never panics; whatever parses prints back as exactly the same text (rs/xid
//! accepts only lowercase base32hex with zero padding bits), and any 12 bytes print as 20
//! characters that parse back to them.
#![no_main]
use idforge::schemes::xid::{parse, Xid};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(v) = parse(s) {
            assert_eq!(Xid(v).to_string(), s, "{s:?}");
        }
    }
    if data.len() >= 12 {
        let mut full = [0u8; 16];
        full[4..].copy_from_slice(&data[..12]);
        let v = u128::from_be_bytes(full);
        let t = Xid(v).to_string();
        assert_eq!(t.len(), 20);
        assert_eq!(parse(&t).ok(), Some(v), "{t}");
    }
});
