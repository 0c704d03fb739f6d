//! Guarantee 3: decoding returns exactly what was encoded, for every layout.

use idforge::{Layout, Scheme};
use proptest::prelude::*;

fn presets() -> Vec<Layout> {
    Scheme::PRESETS.iter().map(|s| s.layout()).collect()
}

fn mask(v: u128, width: u32) -> u128 {
    if width == 0 {
        0
    } else {
        v & (u128::MAX >> (128 - width))
    }
}

fn check_round_trip(
    l: &Layout,
    node: u128,
    ticks: u128,
    counter: u128,
    random: u128,
) -> Result<(), TestCaseError> {
    let (n, t, c, r) = (
        mask(node, l.node.width()),
        mask(ticks, l.time.width()),
        mask(counter, l.counter.width()),
        mask(random, l.random.width()),
    );
    let id = l.encode(n, t, c, r);
    if l.bits == 64 {
        prop_assert_eq!(id >> 64, 0, "{} id fits in 64 bits", l.name);
    }
    let p = l.decode(id);
    prop_assert_eq!(
        (p.node, p.ticks, p.counter, p.random),
        (n, t, c, r),
        "{}",
        l.name
    );
    prop_assert!(p.fixed_ok, "{}: fixed bits", l.name);
    // And the other way: an id made of its decoded parts is the same id.
    prop_assert_eq!(l.encode(p.node, p.ticks, p.counter, p.random), id);
    Ok(())
}

proptest! {
    #[test]
    fn presets_round_trip(node in any::<u128>(), ticks in any::<u128>(), counter in any::<u128>(), random in any::<u128>()) {
        for l in presets() {
            check_round_trip(&l, node, ticks, counter, random)?;
        }
    }

    #[test]
    fn custom_layouts_round_trip(
        widths in (1u32..=40, 0u32..=20, 0u32..=20),
        order in 0usize..6,
        tick_ms in 1u64..1000,
        vals in (any::<u128>(), any::<u128>(), any::<u128>()),
    ) {
        let (t, n, c) = widths;
        let mut items = vec![format!("time:{t}")];
        if n > 0 { items.push(format!("node:{n}")); }
        if c > 0 { items.push(format!("counter:{c}")); }
        let k = items.len();
        items.rotate_left(order % k);
        if order >= 3 { items.reverse(); }
        let time_first = items.iter().position(|i| i.starts_with("time"))
            < items.iter().position(|i| i.starts_with("counter")).or(Some(usize::MAX));
        let spec = format!("{},tick={tick_ms}ms,epoch=2015-01-01T00:00:00Z", items.join(","));
        // Counter above time: refused unless the spec accepts unordered ids.
        prop_assert_eq!(Layout::parse_spec(&spec).is_ok(), time_first, "{}", spec);
        let spec = if time_first { spec } else { format!("{spec},order=none") };
        let l = Layout::parse_spec(&spec).unwrap();
        prop_assert_eq!(l.is_time_ordered(), time_first);
        check_round_trip(&l, vals.0, vals.1, vals.2, 0)?;
        prop_assert_eq!(Layout::parse_spec(&l.spec()).unwrap(), l);
    }

    #[test]
    fn spec_parser_never_panics(s in "[a-z:=,0-9TZ.-]{0,60}") {
        let _ = Layout::parse_spec(&s);
    }
}
