//! Locality UUID text and bytes: never a panic; parse ∘ format = identity.
#![no_main]
use idforge::schemes::locality::LocalityUuid;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(u) = s.parse::<LocalityUuid>() {
            assert_eq!(u.to_string().parse::<LocalityUuid>().ok(), Some(u));
        }
    }
    if let Ok(u) = LocalityUuid::from_slice(data) {
        assert_eq!(u.to_string().parse::<LocalityUuid>().ok(), Some(u));
    }
});
