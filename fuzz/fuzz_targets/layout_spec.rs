//! Layout specs (`--layout`): never a panic; a parsed layout's spec parses to the same layout, and
//! encode/decode are exact inverses on it.
#![no_main]
use idforge::Layout;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (spec, values) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(spec) = std::str::from_utf8(spec) else { return };
    let Ok(l) = Layout::parse_spec(spec) else { return };
    assert_eq!(Layout::parse_spec(&l.spec()).as_ref(), Ok(&l), "spec round trip of {spec:?}");
    let mut v = [0u8; 48];
    for (d, s) in v.iter_mut().zip(values) {
        *d = *s;
    }
    let n = u128::from_le_bytes(v[0..16].try_into().unwrap()) & l.node.max();
    let t = u128::from_le_bytes(v[16..32].try_into().unwrap()) & l.time.max();
    let c = u128::from_le_bytes(v[32..48].try_into().unwrap()) & l.counter.max();
    let p = l.decode(l.encode(n, t, c, 0));
    assert_eq!((p.node, p.ticks, p.counter), (n, t, c));
});
