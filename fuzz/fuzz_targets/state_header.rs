//! State-file headers: any bytes are checked without a panic; a header idforge writes is accepted
//! for its own fingerprint and refused for any other.
#![no_main]
use std::path::Path;

use idforge::shm::{check_header, state_header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fp = String::from_utf8_lossy(&data[..data.len().min(64)]).into_owned();
    let _ = check_header(Path::new("fuzz.state"), data, &fp);
    let mut page = data.to_vec();
    page.resize(4096, 0);
    let _ = check_header(Path::new("fuzz.state"), &page, &fp);
    if fp.len() <= 256 && !fp.contains('\0') {
        let h = state_header(&fp);
        assert!(check_header(Path::new("fuzz.state"), &h, &fp).is_ok());
        assert!(check_header(Path::new("fuzz.state"), &h, &format!("{fp}x")).is_err());
    }
});
