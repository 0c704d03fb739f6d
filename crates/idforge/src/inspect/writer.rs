//! Many ids decoded into lines of text or JSON, without allocating per id: [`Inspector`].
//!
//! `idforge inspect` reads millions of ids from a pipe; building a [`Decoded`] (a dozen owned
//! strings) for each costs more than decoding it. The inspector writes each line straight into
//! the caller's buffer. Ids of a layout scheme (every sequencer scheme but TypeID) and version 7
//! UUIDs read without a scheme take that path; every other id is decoded with
//! [`inspect_as`](super::inspect_as) and written from its [`Decoded`] by the same writer, so the
//! two paths cannot print different lines for one id (a test compares them on every scheme).

use super::{
    inspect_as, layout_fields, looks_like_typeid, nanots_time_text, Decoded, Part, V7_LAYOUTS,
};
use crate::error::Error;
use crate::layout::Layout;
use crate::schemes::catalog::Kind;
use crate::schemes::Scheme;
use crate::text::{self, Format};
use crate::time::{digits_for_tick, write_unix_ns};

/// Decodes ids one by one into lines of text (as `idforge inspect` prints them) or JSON (one
/// object per id, as `idforge inspect --json` and the service's `/v1/inspect` give them),
/// appended to a reusable buffer.
///
/// A text line is `canonical  scheme=... time=... unix_ms=... part=value...  (note)`; the hint
/// that an id's layout is unknown (a version 7 UUID decoded without a scheme) is not repeated
/// on every line but kept once ([`Inspector::hints`]). A JSON object carries its hint.
///
/// ```
/// use idforge::inspect::Inspector;
/// use idforge::schemes::catalog::Kind;
/// let mut inspector = Inspector::new(Some(Kind::Layout(idforge::Scheme::Snowflake)), None, None)?;
/// let mut line = Vec::new();
/// inspector.write("1541815603606036480", false, &mut line)?;
/// assert_eq!(
///     String::from_utf8(line.clone()).unwrap(),
///     "1541815603606036480  scheme=snowflake time=2022-06-28T16:07:40.105Z unix_ms=1656432460105 node=378 counter=0"
/// );
/// line.clear();
/// inspector.write("1541815603606036480", true, &mut line)?;
/// assert!(line.starts_with(br#"{"id":"1541815603606036480","scheme":"snowflake","value":"1541815603606036480","unix_ms":1656432460105"#));
/// // A bad id appends nothing and says why.
/// assert!(inspector.write("12x", false, &mut line).is_err());
/// # Ok::<(), idforge::Error>(())
/// ```
pub struct Inspector {
    kind: Option<Kind>,
    format: Option<Format>,
    host_digits: Option<u32>,
    /// The layout of a layout scheme named (not TypeID): decoded without a [`Decoded`].
    fast: Option<Fast>,
    rewrite: Box<dyn Fn(&str) -> String + Send + Sync>,
    /// The rewritten hint of a version 7 UUID read without a scheme, made once.
    v7_hint: Option<String>,
    /// Hints withheld from text lines, each once, with how many lines had it.
    withheld: Vec<(String, u64)>,
}

struct Fast {
    scheme: Scheme,
    layout: Layout,
    digits: u32,
    canonical: Format,
    node_name: NodeName,
    uuid: bool,
}

#[derive(Clone, Copy)]
enum NodeName {
    None,
    Node,
    Tag,
    RandB,
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector")
            .field("kind", &self.kind)
            .field("format", &self.format)
            .field("host_digits", &self.host_digits)
            .finish_non_exhaustive()
    }
}

impl Inspector {
    /// An inspector for ids of `kind` (or, with `None`, whatever each id's text shows, as
    /// [`inspect`](super::inspect) reads it) in `format` (or detected), with `host_digits` for
    /// nanots-host ids.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] for host digits given to another kind than nanots-host.
    pub fn new(
        kind: Option<Kind>,
        format: Option<Format>,
        host_digits: Option<u32>,
    ) -> Result<Inspector, Error> {
        if host_digits.is_some() && kind != Some(Kind::NanoTsHost) {
            return Err(Error::InvalidFormat(
                "host digits apply only to nanots-host ids".into(),
            ));
        }
        let fast = match &kind {
            // TypeID and KSUID text have decoders of their own.
            Some(Kind::Layout(s)) if *s != Scheme::TypeId && *s != Scheme::Ksuid => {
                let layout = s.layout();
                let node_name = if layout.node.width() == 0 {
                    NodeName::None
                } else {
                    match s {
                        Scheme::UProtocolV8 => NodeName::RandB,
                        Scheme::NanoTs => NodeName::Tag,
                        _ => NodeName::Node,
                    }
                };
                Some(Fast {
                    digits: digits_for_tick(layout.tick_ns),
                    canonical: s.default_format(),
                    uuid: s.uuid_version().is_some(),
                    scheme: s.clone(),
                    layout,
                    node_name,
                })
            }
            _ => None,
        };
        Ok(Inspector {
            kind,
            format,
            host_digits,
            fast,
            rewrite: Box::new(str::to_string),
            v7_hint: None,
            withheld: Vec::new(),
        })
    }

    /// Rewrites every hint with `f` (the command line names flags, `--scheme uuid7`, where the
    /// library names schemes, ``scheme `uuid7` ``).
    pub fn with_hint_rewriter(
        mut self,
        f: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Self {
        self.rewrite = Box::new(f);
        self.v7_hint = None;
        self
    }

    /// The hints kept back from text lines, each once, with the number of lines it applied to.
    pub fn hints(&self) -> &[(String, u64)] {
        &self.withheld
    }

    /// Decodes `input` and appends its line (text, or with `json` a JSON object; no newline) to
    /// `out`. On an error nothing is appended.
    ///
    /// # Errors
    /// Those of [`inspect_as`](super::inspect_as).
    pub fn write(&mut self, input: &str, json: bool, out: &mut Vec<u8>) -> Result<(), Error> {
        let start = out.len();
        let result = self.write_inner(input, json, out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn write_inner(&mut self, input: &str, json: bool, out: &mut Vec<u8>) -> Result<(), Error> {
        let trimmed = input.trim();
        if let Some(fast) = &self.fast {
            let timestamp_text =
                fast.scheme == Scheme::NanoTs && self.format.is_none() && nanots_time_text(trimmed);
            if !timestamp_text {
                write_layout(fast, input, trimmed, self.format, json, out)?;
                return Ok(());
            }
        }
        if self.kind.is_none() {
            let uuid_text = match self.format {
                None => !looks_like_typeid(trimmed) && text::looks_like_uuid(trimmed),
                Some(f) => f == Format::Uuid,
            };
            if uuid_text {
                let value = text::parse(trimmed, 128, Some(Format::Uuid))?;
                let v7 = (value >> 76) & 0xF == 7 && (value >> 62) & 0b11 == 0b10;
                if v7 && value != u128::MAX {
                    self.write_v7(trimmed, value, json, out);
                    return Ok(());
                }
            }
        }
        let d = inspect_as(input, self.kind.as_ref(), self.format, self.host_digits)?;
        self.write_decoded(&d, json, out);
        Ok(())
    }

    /// A version 7 UUID read without a scheme: what [`super::inspect_uuid`] makes of it.
    fn write_v7(&mut self, trimmed: &str, value: u128, json: bool, out: &mut Vec<u8>) {
        let canonical = text::encode(value, 128, Format::Uuid);
        let mut e = Emit { out, json };
        e.begin(trimmed, canonical.as_bytes(), "uuid-v7", value);
        let unix_ns = (value >> 80) * 1_000_000;
        e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, 3)));
        e.part("rand_a", P::Hex((value >> 64) & 0xFFF, 3));
        e.part("rand_b", P::Hex(value & ((1u128 << 62) - 1), 16));
        e.part("version", P::Version(7));
        e.part("variant", P::Variant(0b10));
        if self.v7_hint.is_none() {
            let hint = super::hint_for(Some(7), &V7_LAYOUTS).unwrap_or_default();
            self.v7_hint = Some((self.rewrite)(&hint));
        }
        let hint = self.v7_hint.as_deref().unwrap_or_default();
        if json {
            e.end(&V7_LAYOUTS, None, Some(hint));
        } else {
            e.end::<&str>(&[], None, None);
            withhold(&mut self.withheld, hint);
        }
    }

    fn write_decoded(&mut self, d: &Decoded, json: bool, out: &mut Vec<u8>) {
        let mut e = Emit { out, json };
        match &d.wide {
            // Wider than 128 bits (a KSUID): its value from all its bytes.
            Some(b) => e.begin_wide(
                &d.input,
                d.canonical.as_bytes(),
                &d.scheme,
                &super::wide_decimal(b),
            ),
            None => e.begin(&d.input, d.canonical.as_bytes(), &d.scheme, d.value),
        }
        e.when(d.unix_ns, d.time.as_deref().map(When::Text));
        for (k, v) in d.parts() {
            let p = match &v {
                Part::Int(n) => P::Int(*n),
                Part::Hex(s) | Part::Text(s) => P::Str(s),
                Part::Version(v) => P::Version(*v),
            };
            e.part(k, p);
        }
        let hint = d.hint().map(|h| (self.rewrite)(&h));
        if json {
            e.end(&d.layouts, d.note.as_deref(), hint.as_deref());
        } else {
            e.end::<&str>(&[], d.note.as_deref(), None);
            if let Some(h) = &hint {
                withhold(&mut self.withheld, h);
            }
        }
    }
}

/// Counts a hint kept back from a text line.
fn withhold(list: &mut Vec<(String, u64)>, hint: &str) {
    match list.iter_mut().find(|(h, _)| h == hint) {
        Some((_, n)) => *n += 1,
        None => list.push((hint.to_string(), 1)),
    }
}

/// An id of a layout scheme: what [`super::inspect`] makes of it.
fn write_layout(
    fast: &Fast,
    input: &str,
    trimmed: &str,
    format: Option<Format>,
    json: bool,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let layout = &fast.layout;
    let (value, parts, unix_ns) = layout_fields(input, trimmed, &fast.scheme, layout, format)?;
    let canonical = text::encode(value, layout.bits, fast.canonical);
    let mut e = Emit { out, json };
    e.begin(trimmed, canonical.as_bytes(), fast.scheme.name(), value);
    e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, fast.digits)));
    match fast.node_name {
        NodeName::None => {}
        NodeName::Node => e.part("node", P::Int(parts.node)),
        NodeName::Tag => e.part("tag", P::Int(parts.node)),
        NodeName::RandB => e.part("rand_b", P::Hex(parts.node, 16)),
    }
    if layout.counter.width() > 0 {
        e.part("counter", P::Int(parts.counter));
    }
    if layout.random.width() > 0 {
        e.part("random", P::Hex(parts.random, 0));
    }
    if fast.uuid {
        e.part("version", P::Version(((value >> 76) & 0xF) as u8));
        e.part("variant", P::Variant(((value >> 62) & 0b11) as u8));
    }
    e.end::<&str>(&[], None, None);
    Ok(())
}

/// A part's value as the writer shows it.
enum P<'a> {
    /// Decimal in text; in JSON a number up to 2^53, a string above.
    Int(u128),
    /// Lowercase hex, zero-padded to the width given: always a string.
    Hex(u128, usize),
    /// Text as it is: always a string.
    Str(&'a str),
    /// A UUID version: hex in text, a number in JSON.
    Version(u8),
    /// The variant bits as `0b10`: always a string.
    Variant(u8),
}

/// The time of an id, as text already made or as nanoseconds and fraction digits.
enum When<'a> {
    Text(&'a str),
    Ns(i128, u32),
}

/// One line being written.
struct Emit<'a> {
    out: &'a mut Vec<u8>,
    json: bool,
}

impl Emit<'_> {
    fn begin(&mut self, input: &str, canonical: &[u8], scheme: &str, value: u128) {
        if self.json {
            self.out.extend_from_slice(b"{\"id\":");
            json_str(self.out, input);
            self.out.extend_from_slice(b",\"scheme\":");
            json_str(self.out, scheme);
            self.out.extend_from_slice(b",\"value\":\"");
            push_u128(self.out, value);
            self.out.push(b'"');
        } else {
            self.out.extend_from_slice(canonical);
            self.out.extend_from_slice(b"  scheme=");
            self.out.extend_from_slice(scheme.as_bytes());
        }
    }

    /// As [`Emit::begin`], for an id whose value is given as decimal text.
    fn begin_wide(&mut self, input: &str, canonical: &[u8], scheme: &str, value: &str) {
        if self.json {
            self.out.extend_from_slice(b"{\"id\":");
            json_str(self.out, input);
            self.out.extend_from_slice(b",\"scheme\":");
            json_str(self.out, scheme);
            self.out.extend_from_slice(b",\"value\":");
            json_str(self.out, value);
        } else {
            self.begin(input, canonical, scheme, 0);
        }
    }

    fn when(&mut self, unix_ns: Option<u128>, time: Option<When<'_>>) {
        let time_text = |out: &mut Vec<u8>, t: &When<'_>| match t {
            When::Text(s) => out.extend_from_slice(s.as_bytes()),
            When::Ns(ns, digits) => write_unix_ns(out, *ns, *digits),
        };
        if self.json {
            if let Some(ns) = unix_ns {
                self.out.extend_from_slice(b",\"unix_ms\":");
                json_nanos(self.out, ns / 1_000_000);
                self.out.extend_from_slice(b",\"unix_ns\":");
                json_nanos(self.out, ns);
            }
            if let Some(t) = &time {
                self.out.extend_from_slice(b",\"time\":\"");
                time_text(self.out, t);
                self.out.push(b'"');
            }
        } else {
            if let Some(t) = &time {
                self.out.extend_from_slice(b" time=");
                time_text(self.out, t);
            }
            if let Some(ns) = unix_ns {
                self.out.extend_from_slice(b" unix_ms=");
                push_u128(self.out, ns / 1_000_000);
            }
        }
    }

    fn part(&mut self, key: &str, p: P<'_>) {
        if self.json {
            self.out.extend_from_slice(b",\"");
            self.out.extend_from_slice(key.as_bytes());
            self.out.extend_from_slice(b"\":");
            match p {
                P::Int(n) if n <= 1 << 53 => push_u128(self.out, n),
                P::Int(n) => {
                    self.out.push(b'"');
                    push_u128(self.out, n);
                    self.out.push(b'"');
                }
                P::Hex(v, width) => {
                    self.out.push(b'"');
                    push_hex(self.out, v, width);
                    self.out.push(b'"');
                }
                P::Str(s) => json_str(self.out, s),
                P::Version(v) => push_u128(self.out, u128::from(v)),
                P::Variant(v) => {
                    self.out.push(b'"');
                    push_variant(self.out, v);
                    self.out.push(b'"');
                }
            }
        } else {
            self.out.push(b' ');
            self.out.extend_from_slice(key.as_bytes());
            self.out.push(b'=');
            match p {
                P::Int(n) => push_u128(self.out, n),
                P::Hex(v, width) => push_hex(self.out, v, width),
                P::Str(s) => self.out.extend_from_slice(s.as_bytes()),
                P::Version(v) => push_hex(self.out, u128::from(v), 0),
                P::Variant(v) => push_variant(self.out, v),
            }
        }
    }

    fn end<S: AsRef<str>>(&mut self, layouts: &[S], note: Option<&str>, hint: Option<&str>) {
        if self.json {
            if !layouts.is_empty() {
                self.out.extend_from_slice(b",\"layouts\":[");
                for (i, l) in layouts.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    json_str(self.out, l.as_ref());
                }
                self.out.push(b']');
            }
            if let Some(n) = note {
                self.out.extend_from_slice(b",\"note\":");
                json_str(self.out, n);
            }
            if let Some(h) = hint {
                self.out.extend_from_slice(b",\"hint\":");
                json_str(self.out, h);
            }
            self.out.push(b'}');
        } else if let Some(n) = note {
            self.out.extend_from_slice(b"  (");
            self.out.extend_from_slice(n.as_bytes());
            self.out.push(b')');
        }
    }
}

fn push_u128(out: &mut Vec<u8>, n: u128) {
    let mut buf = itoa::Buffer::new();
    let s = match u64::try_from(n) {
        Ok(small) => buf.format(small),
        Err(_) => buf.format(n),
    };
    out.extend_from_slice(s.as_bytes());
}

/// Lowercase hex of `v`, zero-padded to `width` digits (`{v:0width$x}`).
fn push_hex(out: &mut Vec<u8>, v: u128, width: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (128 - v.leading_zeros()).div_ceil(4).max(1) as usize;
    let n = digits.max(width);
    let start = out.len();
    out.resize(start + n, b'0');
    let mut v = v;
    for slot in out[start..].iter_mut().rev().take(digits) {
        *slot = HEX[(v & 0xF) as usize];
        v >>= 4;
    }
}

/// `0b` and the two variant bits.
fn push_variant(out: &mut Vec<u8>, v: u8) {
    out.extend_from_slice(b"0b");
    out.push(b'0' + ((v >> 1) & 1));
    out.push(b'0' + (v & 1));
}

/// A time in nanoseconds as JSON: a number while it fits 64 bits, a decimal string beyond.
fn json_nanos(out: &mut Vec<u8>, n: u128) {
    if u64::try_from(n).is_ok() {
        push_u128(out, n);
    } else {
        out.push(b'"');
        push_u128(out, n);
        out.push(b'"');
    }
}

/// A JSON string, escaped as `serde_json` escapes it (`\"`, `\\`, the short escapes of
/// control characters where JSON has them, `\u00XX` for the others).
fn json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        out.extend_from_slice(bytes);
    } else {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for &b in bytes {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                c if c < 0x20 => {
                    out.extend_from_slice(b"\\u00");
                    out.push(HEX[usize::from(c >> 4)]);
                    out.push(HEX[usize::from(c & 0xF)]);
                }
                c => out.push(c),
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_matches_format() {
        for (v, w) in [
            (0u128, 0usize),
            (0, 3),
            (0xabc, 3),
            (0xabc, 16),
            (u128::MAX, 0),
            (1, 12),
        ] {
            let mut out = Vec::new();
            push_hex(&mut out, v, w);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{v:0w$x}"));
        }
    }

    #[test]
    fn json_strings_escape_like_serde_json() {
        for s in [
            "plain",
            "q\"uote",
            "back\\slash",
            "nl\n\r\t\u{8}\u{c}",
            "\u{1}\u{1f}",
            "é\u{7f}",
        ] {
            let mut out = Vec::new();
            json_str(&mut out, s);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }
}
