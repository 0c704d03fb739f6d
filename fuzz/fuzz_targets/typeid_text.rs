//! TypeID text: parsing never panics; whatever parses prints back as exactly the same text (the
//! spec allows only lowercase, one canonical suffix), and any UUID under a prefix the spec allows
//! prints as text that parses back to the same prefix and UUID.
#![no_main]
use idforge::schemes::typeid::TypeId;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(t) = s.parse::<TypeId>() {
            assert_eq!(t.to_string(), s, "{s:?}");
        }
    }
    if data.len() >= 16 {
        let uuid = u128::from_be_bytes(data[..16].try_into().unwrap());
        let prefix = std::str::from_utf8(&data[16..]).unwrap_or("");
        if let Ok(t) = TypeId::new(prefix, uuid) {
            let text = t.to_string();
            let back: TypeId = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((back.prefix(), back.uuid()), (prefix, uuid), "{text}");
        }
    }
});
