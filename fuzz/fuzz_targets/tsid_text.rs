//! TSID text: parsing never panics; whatever parses prints back as the same text uppercased, with
//! the look-alikes tsid-creator accepts (I and L for 1, O for 0) written canonically, and any
//! 64-bit value prints as 13 characters that parse back to it.
#![no_main]
use idforge::schemes::tsid::Tsid;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(t) = s.parse::<Tsid>() {
            let canonical: String = s
                .chars()
                .map(|c| match c.to_ascii_uppercase() {
                    'I' | 'L' => '1',
                    'O' => '0',
                    c => c,
                })
                .collect();
            let back = t.to_string();
            assert_eq!(back, canonical, "{s:?}");
            assert_eq!(back.parse::<Tsid>().ok(), Some(t));
            assert_eq!(t.to_lower().parse::<Tsid>().ok(), Some(t));
        }
    }
    if data.len() >= 8 {
        let t = Tsid(u64::from_be_bytes(data[..8].try_into().unwrap()));
        let text = t.to_string();
        assert_eq!(text.len(), 13);
        assert_eq!(text.parse::<Tsid>().ok(), Some(t), "{text}");
    }
});
