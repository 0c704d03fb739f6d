//! The id space a namespace is bound to: the layout's full canonical description (every field's
//! position and width, fixed bits, epoch, tick) and the node range. Two layouts whose fields have
//! the same widths in another order are two id spaces: sharing node ids between them would hand
//! out the same ids.

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::OpenOptions;
use idforge::{Field, Layout};

/// The canonical description of the ids `kind` makes with `opts` (host digits for nanots-host),
/// as a namespace's spec records it: equal exactly when the two id layouts are equal, whatever
/// the scheme is called.
///
/// ```
/// use idforge::schemes::catalog::Kind;
/// use idforge::schemes::open::OpenOptions;
/// use idforge_fleet::layout_description;
/// let o = OpenOptions::default();
/// let a = Kind::from_name("custom", Some("time:41,node:10,counter:12"))?;
/// let b = Kind::from_name("custom", Some("node:10,time:41,counter:12"))?;
/// assert_eq!(
///     layout_description(&a, &o)?,
///     "64-bit time[62..22] node[21..12] counter[11..0] fixed=none epoch=1970-01-01T00:00:00.000000000Z tick=1000000ns"
/// );
/// assert_ne!(layout_description(&a, &o)?, layout_description(&b, &o)?);
/// # Ok::<(), idforge::Error>(())
/// ```
///
/// # Errors
/// Bad host digits for nanots-host. (A kind without a node to lease, such as locality, is
/// described by its name alone.)
pub fn layout_description(kind: &Kind, opts: &OpenOptions) -> Result<String, idforge::Error> {
    Ok(match kind {
        Kind::Layout(s) => describe(&s.layout()),
        Kind::NanoTsHost => {
            let digits = opts.host_digits.unwrap_or(2);
            // Checks the digits (2 or 3) the way opening the scheme does.
            let tb = kind.timebase(opts)?.expect("nanots-host has a time base");
            format!(
                "nanots-host: Unix nanoseconds with the last {digits} decimal digits replaced by the host id, tick={}ns",
                tb.tick_ns
            )
        }
        other => other.name().to_string(),
    })
}

/// `64-bit node[63..54] time[53..7] counter[6..0] fixed=none epoch=… tick=…ns`: the fields from
/// the most significant bit down (a field split in two runs is `name[a..b]+[c..d]`), the fixed
/// bits as mask and value, the epoch to the nanosecond and the tick in nanoseconds.
fn describe(l: &Layout) -> String {
    let runs = |f: &Field| {
        let run = |shift: u32, width: u32| format!("[{}..{shift}]", shift + width - 1);
        let mut s = run(f.hi.shift, f.hi.width);
        if f.lo.width > 0 {
            s.push('+');
            s.push_str(&run(f.lo.shift, f.lo.width));
        }
        s
    };
    let mut fields: Vec<(&str, Field)> = [
        ("node", l.node),
        ("time", l.time),
        ("counter", l.counter),
        ("random", l.random),
    ]
    .into_iter()
    .filter(|(_, f)| f.width() > 0)
    .collect();
    fields.sort_by_key(|(_, f)| std::cmp::Reverse(f.hi.shift));
    let mut parts = vec![format!("{}-bit", l.bits)];
    parts.extend(fields.iter().map(|(n, f)| format!("{n}{}", runs(f))));
    parts.push(if l.fixed_mask == 0 {
        "fixed=none".into()
    } else {
        format!(
            "fixed={:#x}/{:#x}",
            l.fixed_value & l.fixed_mask,
            l.fixed_mask
        )
    });
    parts.push(format!(
        "epoch={}",
        idforge::time::format_unix_ns(i128::from(l.epoch_ns), 9)
    ));
    parts.push(format!("tick={}ns", l.tick_ns));
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(name: &str, layout: Option<&str>) -> String {
        layout_description(
            &Kind::from_name(name, layout).unwrap(),
            &OpenOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn presets_are_described_by_their_bits() {
        assert_eq!(
            desc("snowflake", None),
            "64-bit time[62..22] node[21..12] counter[11..0] fixed=none epoch=2010-11-04T01:42:54.657000000Z tick=1000000ns"
        );
        assert_eq!(
            desc("global-id", None),
            "64-bit node[63..54] time[53..7] counter[6..0] fixed=none epoch=1970-01-01T00:00:00.000000000Z tick=1000000ns"
        );
        // A custom layout with snowflake's bits is snowflake's id space.
        assert_eq!(
            desc(
                "custom",
                Some("time:41,node:10,counter:12,epoch=2010-11-04T01:42:54.657Z")
            ),
            desc("snowflake", None)
        );
    }

    #[test]
    fn every_difference_shows() {
        let base = desc("custom", Some("time:41,node:10,counter:12"));
        for other in [
            "node:10,time:41,counter:12",
            "time:41,counter:12,node:10,order=none",
            "time:41,node:10,counter:12,tick=2ms",
            "time:41,node:10,counter:12,epoch=2020-01-01T00:00:00Z",
            "time:41,node:11,counter:12",
        ] {
            assert_ne!(desc("custom", Some(other)), base, "{other}");
        }
        // Fixed bits: the same fields, another fixed value.
        let with_fixed = |v| {
            Layout::builder("f", 64)
                .time(Field::at(22, 40))
                .node(Field::at(12, 10))
                .counter(Field::at(0, 12))
                .fixed(62, 2, v)
                .build()
                .unwrap()
        };
        assert_ne!(describe(&with_fixed(1)), describe(&with_fixed(2)));
        assert!(describe(&with_fixed(2)).contains("fixed=0x8000000000000000/0xc000000000000000"));
        let o3 = OpenOptions {
            host_digits: Some(3),
            ..OpenOptions::default()
        };
        assert_ne!(
            layout_description(&Kind::NanoTsHost, &o3).unwrap(),
            desc("nanots-host", None)
        );
    }
}
