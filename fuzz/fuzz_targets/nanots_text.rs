//! Chronicle timestamp text: never a panic; parse ∘ format = identity.
#![no_main]
use idforge::schemes::nanots;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(v) = nanots::parse(s) {
            assert_eq!(nanots::parse(&nanots::format(v)).ok(), Some(v), "{s:?}");
        }
        let _ = nanots::decode_text_or_int(s);
    }
    if data.len() >= 8 {
        let v = u64::from_le_bytes(data[..8].try_into().unwrap());
        assert_eq!(nanots::parse(&nanots::format(v)).ok(), Some(v));
    }
});
