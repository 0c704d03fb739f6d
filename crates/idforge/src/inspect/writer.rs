//! Many ids decoded into lines of text or JSON, without allocating per id: [`Inspector`].
//!
//! `idforge inspect` reads millions of ids from a pipe; building a [`Decoded`] (a dozen owned
//! strings) for each costs more than decoding it. The inspector writes each line straight into
//! the caller's buffer. Every kind of id takes that path, named or read without a scheme. Where
//! the fast reading finds nothing to write (text it refuses, a case it does not cover), the id
//! is decoded again with [`inspect_as`](super::inspect_as) and written from its [`Decoded`] by
//! the same writer: a refusal reads exactly as `inspect_as` words it, and tests compare the two
//! paths' lines on every kind (and the `inspect` fuzz target on arbitrary input).

use super::line::Line;
use super::V8_LAYOUTS;
use super::{
    inspect_as, layout_fields, looks_like_typeid, nanots_time_text, Decoded, Part, V7_LAYOUTS,
};
use crate::error::Error;
use crate::layout::Layout;
use crate::schemes::catalog::Kind;
#[cfg(feature = "locality")]
use crate::schemes::locality::{self, LocalityUuid};
use crate::schemes::{ksuid, nanots, Scheme};
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
    hints: Hints,
    /// uuid7's layout, for TypeID text read as the scheme `typeid` (its suffix is a UUIDv7).
    typeid_v7: Option<Fast>,
    /// nanots-host: the host digits and the time's fraction digits, when the digits are valid.
    nanots_host: Option<(u32, u32)>,
    /// The text of the last second written (`YYYY-MM-DDTHH:MM:SS`) and of the last time's
    /// whole block (`time=`, `unix_ms=`...): ids come in runs.
    clock: Clock,
}

/// The hints of an inspector: how they are rewritten, those kept back from text lines and
/// those made already.
struct Hints {
    rewrite: Box<dyn Fn(&str) -> String + Send + Sync>,
    /// Hints withheld from text lines, each once, with how many lines had it.
    withheld: Vec<(String, u64)>,
    /// Hints made once per (UUID version, candidate layouts), rewritten, with their place in
    /// `withheld` once a text line has had them.
    cache: Vec<CachedHint>,
}

struct CachedHint {
    version: u8,
    layouts: &'static [&'static str],
    /// For the end of a JSON line with a note and no hint, the note (`text` is then empty).
    note: Option<&'static str>,
    text: String,
    /// The end of a JSON object with this hint: `,"layouts":[...],"hint":"..."}`.
    json_tail: Vec<u8>,
    withheld_at: Option<usize>,
}

/// The times of the last ids written: the text of their second, and the whole time block
/// (text: ` time=... unix_ms=...`; JSON: `,"unix_ms":...,"unix_ns":...,"time":"..."`) of the
/// last time, written again as it is while the ids that follow have the same time (ids of a
/// millisecond tick come in runs: a generator writes many in one tick).
struct Clock {
    second: SecondCache,
    /// The last block's time in nanoseconds, fraction digits and whether it is JSON.
    last: Option<(u64, u32, bool)>,
    block: Vec<u8>,
    /// Times finer than a millisecond (UUID v1/v6, nanots): the block of the last millisecond
    /// cut where the digits below it go ([`MsBlock`]).
    ms: MsBlock,
    /// UUID v1/v6 `timestamp`s: the digits above their last four, for the last value of
    /// those ([`Clock::ticks`]).
    ticks: Option<(u64, [u8; 24], usize)>,
}

/// A time block with the digits below its millisecond left out, made once per millisecond:
/// the nanoseconds of a time are its milliseconds' digits followed by six more, and its
/// fraction of a second the millisecond's three followed by those six's first.
///
/// JSON: `head` is `,"unix_ms":MS,"unix_ns":MS` and `mid` is `,"time":"...SS.mmm`; a block is
/// `head`, six digits, `mid`, the fraction's further digits and `Z"`. Text: `head` is
/// ` time=...SS.mmm` and `mid` is `Z unix_ms=MS`; a block is `head`, the further digits, `mid`.
struct MsBlock {
    /// The millisecond, fraction digits and whether it is JSON.
    key: Option<(u64, u32, bool)>,
    head: Vec<u8>,
    mid: Vec<u8>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            second: SecondCache::new(),
            last: None,
            block: Vec::with_capacity(128),
            ms: MsBlock {
                key: None,
                head: Vec::with_capacity(64),
                mid: Vec::with_capacity(64),
            },
            ticks: None,
        }
    }

    /// Makes the time block of `key` ([`Emit::when`]'s, made anew).
    #[cold]
    #[inline(never)]
    fn new_block(
        &mut self,
        json: bool,
        unix_ns: Option<u128>,
        time: Option<When<'_>>,
        key: Option<(u64, u32, bool)>,
    ) {
        self.block.clear();
        write_when(
            &mut Line::new(&mut self.block, 0),
            json,
            &mut self.second,
            unix_ns,
            time,
        );
        self.last = key;
    }

    /// Makes the [`MsBlock`] of millisecond `ms`, for `key`; false if its time is not written
    /// as the block expects (then it is left unmade).
    #[cold]
    #[inline(never)]
    fn new_ms(&mut self, ms: u64, json: bool, key: Option<(u64, u32, bool)>) -> bool {
        let b = &mut self.ms;
        b.head.clear();
        b.mid.clear();
        b.key = None;
        // The block of the millisecond itself, cut where the further digits go.
        let mut t = Vec::with_capacity(32);
        self.second
            .write(&mut Line::new(&mut t, 0), i128::from(ms) * 1_000_000, 3);
        let Some((b'Z', time)) = t.split_last() else {
            return false;
        };
        if json {
            b.head.extend_from_slice(b",\"unix_ms\":");
            push_u64(&mut Line::new(&mut b.head, 0), ms);
            b.head.extend_from_slice(b",\"unix_ns\":");
            push_u64(&mut Line::new(&mut b.head, 0), ms);
            b.mid.extend_from_slice(b",\"time\":\"");
            b.mid.extend_from_slice(time);
        } else {
            b.head.extend_from_slice(b" time=");
            b.head.extend_from_slice(time);
            b.mid.extend_from_slice(b"Z unix_ms=");
            push_u64(&mut Line::new(&mut b.mid, 0), ms);
        }
        b.key = key;
        true
    }

    /// A UUID v1/v6 timestamp (100 ns ticks) in decimal: the digits above the last four are
    /// made once while they stay the same (for 1 ms: ids come in runs).
    #[inline]
    fn ticks(&mut self, out: &mut Line<'_>, ticks: u64) {
        const TEN4: u64 = 10_000;
        let high = ticks / TEN4;
        if high == 0 {
            push_u64(out, ticks);
            return;
        }
        let (text, len) = match &self.ticks {
            Some((h, text, len)) if *h == high => (text, *len),
            _ => {
                let mut v = Vec::with_capacity(24);
                push_u64(&mut Line::new(&mut v, 0), high);
                let mut text = [0u8; 24];
                text[..v.len()].copy_from_slice(&v);
                let (_, text, len) = self.ticks.insert((high, text, v.len()));
                (&*text, *len)
            }
        };
        let at = out.len() + len;
        out.extend_from_slice(text);
        out.truncate(at);
        out.extend_from_slice(&digits4((ticks % TEN4) as u32));
    }
}

/// The text of one second, kept while the ids that follow fall in it.
struct SecondCache {
    secs: u64,
    text: [u8; 19],
    valid: bool,
}

struct Fast {
    scheme: Scheme,
    layout: Layout,
    /// The layout's checks and fields with their masks made once.
    plan: Plan,
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
            // TypeID and KSUID text have decoders of their own; a ULID's line carries a hint
            // (its counter is idforge's layout), which the general path writes.
            Some(Kind::Layout(s))
                if *s != Scheme::TypeId && *s != Scheme::Ksuid && *s != Scheme::Ulid =>
            {
                Some(Fast::of(s))
            }
            _ => None,
        };
        let typeid_v7 =
            (kind == Some(Kind::Layout(Scheme::TypeId))).then(|| Fast::of(&Scheme::Uuid7));
        let nanots_host = match kind {
            Some(Kind::NanoTsHost) => nanots::HostDigits::new(0, host_digits.unwrap_or(2))
                .ok()
                .map(|h| (h.digits(), digits_for_tick(h.timebase().tick_ns))),
            _ => None,
        };
        Ok(Inspector {
            kind,
            format,
            host_digits,
            fast,
            hints: Hints {
                rewrite: Box::new(str::to_string),
                withheld: Vec::new(),
                cache: Vec::new(),
            },
            typeid_v7,
            nanots_host,
            clock: Clock::new(),
        })
    }

    /// Rewrites every hint with `f` (the command line names flags, `--scheme uuid7`, where the
    /// library names schemes, ``scheme `uuid7` ``).
    pub fn with_hint_rewriter(
        mut self,
        f: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Self {
        self.hints.rewrite = Box::new(f);
        self.hints.cache.clear();
        self
    }

    /// The hints kept back from text lines, each once, with the number of lines it applied to.
    pub fn hints(&self) -> &[(String, u64)] {
        &self.hints.withheld
    }

    /// Decodes `input` and appends its line (text, or with `json` a JSON object; no newline) to
    /// `out`. On an error nothing is appended, nor when the hint rewriter panics (the panic
    /// goes on; a caller that catches it finds `out` as it was and can use both again).
    ///
    /// # Errors
    /// Those of [`inspect_as`](super::inspect_as).
    pub fn write(&mut self, input: &str, json: bool, out: &mut Vec<u8>) -> Result<(), Error> {
        /// Cuts the buffer back to `start` when dropped: after an error, and while unwinding
        /// from a panic in the middle of a line.
        struct Undo<'a> {
            out: &'a mut Vec<u8>,
            start: usize,
        }
        impl Drop for Undo<'_> {
            fn drop(&mut self) {
                self.out.truncate(self.start);
            }
        }
        let mut undo = Undo {
            start: out.len(),
            out,
        };
        let result = self.write_inner(input, json, undo.out);
        if result.is_ok() {
            // Nothing to cut.
            undo.start = usize::MAX;
        }
        result
    }

    fn write_inner(&mut self, input: &str, json: bool, out: &mut Vec<u8>) -> Result<(), Error> {
        let trimmed = text::trim(input);
        if let Some(fast) = &self.fast {
            let timestamp_text =
                fast.scheme == Scheme::NanoTs && self.format.is_none() && nanots_time_text(trimmed);
            if !timestamp_text {
                let mut e = Emit::new(out, json, &mut self.clock);
                return write_layout(fast, input, trimmed, self.format, &mut e);
            }
        }
        // The other kinds are written without a `Decoded` too; where the fast reading finds
        // nothing to write (bad text, a case it does not cover), the `Decoded` path below
        // decodes the id again and says what is wrong, in the same words as `inspect_as`.
        if self.write_other(trimmed, json, out) {
            return Ok(());
        }
        let d = inspect_as(input, self.kind.as_ref(), self.format, self.host_digits)?;
        self.write_decoded(&d, json, out);
        Ok(())
    }

    /// The kinds other than layout schemes, and ids read without a scheme, as [`inspect_as`]
    /// decodes them. Returns false, having written nothing, where that would fail.
    fn write_other(&mut self, trimmed: &str, json: bool, out: &mut Vec<u8>) -> bool {
        let format = self.format;
        // The kind without its scheme's data (a custom layout is not cloned per id).
        let kind = match &self.kind {
            Some(Kind::Layout(s)) if *s == Scheme::Ksuid => Some(Kind::Layout(Scheme::Ksuid)),
            Some(Kind::Layout(s)) if *s == Scheme::TypeId => Some(Kind::Layout(Scheme::TypeId)),
            Some(Kind::Layout(_)) => return false,
            Some(Kind::NanoTsHost) => Some(Kind::NanoTsHost),
            Some(Kind::Locality) => Some(Kind::Locality),
            Some(Kind::Uuid4) => Some(Kind::Uuid4),
            None => None,
        };
        match kind {
            None => {
                // Canonical UUID text first: 36 characters with its hyphens and hex digits is
                // nothing else (KSUID text has 27 characters, TypeID text no '-'), so the
                // shape checks below would only find it is a UUID.
                if matches!(format, None | Some(Format::Uuid)) {
                    if let Some(value) = text::uuid_hex_fast(trimmed.as_bytes()) {
                        return self.write_any_uuid(trimmed, value, json, out);
                    }
                }
                if format.is_none() {
                    // TypeID text with a prefix, as the table reading takes it: a '_' with 26
                    // characters after it, no '-' (so no UUID), not 27 alphanumerics (no
                    // KSUID): what the shape checks below would find.
                    if let Some(read @ (prefix, _)) = text::typeid_fast(trimmed) {
                        if !prefix.is_empty() {
                            return self.write_typeid_read(trimmed, Some(read), false, json, out);
                        }
                    }
                    if ksuid::looks_like_ksuid(trimmed) {
                        return self.write_ksuid(trimmed, false, json, out);
                    }
                }
                let typeid_text = match format {
                    Some(f) => f == Format::TypeId,
                    None => looks_like_typeid(trimmed),
                };
                if typeid_text {
                    return self.write_typeid(trimmed, false, json, out);
                }
                let uuid_text = match format {
                    None => text::looks_like_uuid(trimmed),
                    Some(f) => f == Format::Uuid,
                };
                if !uuid_text {
                    return false;
                }
                let Ok(value) = text::parse(trimmed, 128, Some(Format::Uuid)) else {
                    return false;
                };
                self.write_any_uuid(trimmed, value, json, out)
            }
            Some(Kind::Layout(Scheme::Ksuid)) => {
                format.is_none() && self.write_ksuid(trimmed, true, json, out)
            }
            Some(Kind::Layout(Scheme::TypeId)) => self.write_typeid(trimmed, true, json, out),
            Some(Kind::Layout(_)) => false,
            Some(Kind::NanoTsHost) => {
                matches!(format, None | Some(Format::Dec))
                    && self.write_nanots_host(trimmed, json, out)
            }
            #[cfg(feature = "locality")]
            Some(Kind::Locality) => {
                // Canonical UUID text at once, other text as `parse` reads it.
                let quick = matches!(format, None | Some(Format::Uuid))
                    .then(|| text::uuid_hex_fast(trimmed.as_bytes()))
                    .flatten();
                match quick.map_or_else(|| text::parse(trimmed, 128, format), Ok) {
                    Ok(value) => self.write_locality(trimmed, value, quick.is_some(), json, out),
                    Err(_) => false,
                }
            }
            #[cfg(not(feature = "locality"))]
            Some(Kind::Locality) => false,
            Some(Kind::Uuid4) => {
                let Ok(value) = text::parse(trimmed, 128, format.or(Some(Format::Uuid))) else {
                    return false;
                };
                if (value >> 76) & 0xF != 4 || value == 0 || value == u128::MAX {
                    return false;
                }
                self.write_uuid(
                    trimmed,
                    Canon::Uuid(value),
                    (Some("uuid4"), None),
                    false,
                    value,
                    json,
                    out,
                )
            }
        }
    }

    /// A UUID read without a scheme: a Locality UUID (version b), any other version as
    /// [`super::inspect_uuid`] reads it.
    fn write_any_uuid(
        &mut self,
        trimmed: &str,
        value: u128,
        json: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let version = ((value >> 76) & 0xF) as u8;
        #[cfg(feature = "locality")]
        if version == locality::VERSION && value != u128::MAX {
            return self.write_locality(trimmed, value, true, json, out);
        }
        if version == 7 && value != u128::MAX && (value >> 62) & 0b11 == 0b10 {
            self.write_v7(trimmed, value, json, out);
            return true;
        }
        let names = (None, None);
        self.write_uuid(trimmed, Canon::Uuid(value), names, true, value, json, out)
    }

    /// A UUID of any version, as [`super::inspect_uuid`] reads it (version 7 too), named
    /// `scheme` when given (uuid4, TypeID), with TypeID's `prefix` first. False where
    /// `inspect_uuid` fails (a variant other than RFC 9562's, an undefined version).
    #[allow(clippy::too_many_arguments)]
    fn write_uuid(
        &mut self,
        trimmed: &str,
        canonical: Canon<'_>,
        (scheme, prefix): (Option<&str>, Option<&str>),
        plain: bool,
        value: u128,
        json: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let version = ((value >> 76) & 0xF) as u8;
        let variant = ((value >> 62) & 0b11) as u8;
        let edge = value == 0 || value == u128::MAX;
        let (own, note): (&str, Option<&str>) = match version {
            _ if value == 0 => ("uuid-nil", Some(notes::NIL)),
            _ if value == u128::MAX => ("uuid-max", Some(notes::MAX)),
            _ if variant != 0b10 => return false,
            1 => ("uuid-v1", Some(notes::V1)),
            2 => ("uuid-v2", Some(notes::V2)),
            3 => ("uuid-v3", Some(notes::V3)),
            4 => ("uuid-v4", Some(notes::V4)),
            5 => ("uuid-v5", Some(notes::V5)),
            6 => ("uuid-v6", Some(notes::V6)),
            7 => ("uuid-v7", None),
            8 => ("uuid-v8", None),
            _ => return false,
        };
        // A TypeID names itself as the candidate layout.
        let layouts: &'static [&'static str] = match (version, prefix.is_some()) {
            (7 | 8, true) if !edge => &TYPEID_LAYOUTS,
            (7, false) if !edge => &V7_LAYOUTS,
            (8, false) if !edge => &V8_LAYOUTS,
            _ => &[],
        };
        let mut e = Emit::new(out, json, &mut self.clock);
        e.plain = plain;
        e.begin(trimmed, canonical, scheme.unwrap_or(own), value);
        match version {
            _ if edge => e.when(None, None),
            1 | 6 => {
                let ticks = crate::time::gregorian_ticks(value, version);
                let unix_ns =
                    (i128::from(ticks) - i128::from(super::GREGORIAN_TO_UNIX_100NS)) * 100;
                e.when(u128::try_from(unix_ns).ok(), Some(When::Ns(unix_ns, 7)));
            }
            7 => {
                let unix_ns = (value >> 80) * 1_000_000;
                e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, 3)));
            }
            _ => e.when(None, None),
        }
        if let Some(p) = prefix {
            e.part("prefix", P::Str(p));
        }
        if !edge {
            match version {
                1 | 6 => {
                    // Above 2^53 in JSON from 1582 + 28 years: a string there.
                    let ticks = crate::time::gregorian_ticks(value, version);
                    let quote = e.json && ticks > 1 << 53;
                    e.key("timestamp");
                    if quote {
                        e.out.push(b'"');
                    }
                    let clock = &mut *e.clock;
                    e.out.with(|out| clock.ticks(out, ticks));
                    if quote {
                        e.out.push(b'"');
                    }
                    e.part("clock_seq", P::Int((value >> 48) & 0x3FFF));
                    e.part("node", P::Hex(value & 0xFFFF_FFFF_FFFF, 12));
                }
                7 => {
                    e.part("rand_a", P::Hex((value >> 64) & 0xFFF, 3));
                    e.part("rand_b", P::Hex(value & ((1u128 << 62) - 1), 16));
                }
                8 => {
                    e.part("custom_a", P::Hex(value >> 80, 12));
                    e.part("custom_b", P::Hex((value >> 64) & 0xFFF, 3));
                    e.part("custom_c", P::Hex(value & ((1u128 << 62) - 1), 16));
                }
                _ => {}
            }
            e.part("version", P::Version(version));
            e.part("variant", P::Variant(variant));
        }
        e.finish(&mut self.hints, version, layouts, note);
        true
    }

    /// A version 7 UUID read without a scheme: what [`super::inspect_uuid`] makes of it.
    fn write_v7(&mut self, trimmed: &str, value: u128, json: bool, out: &mut Vec<u8>) {
        let mut e = Emit::new(out, json, &mut self.clock);
        // UUID text (`write_any_uuid`'s).
        e.plain = true;
        e.begin(trimmed, Canon::Uuid(value), "uuid-v7", value);
        let unix_ns = (value >> 80) * 1_000_000;
        e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, 3)));
        e.part("rand_a", P::Hex((value >> 64) & 0xFFF, 3));
        e.part("rand_b", P::Hex(value & ((1u128 << 62) - 1), 16));
        e.part("version", P::Version(7));
        e.part("variant", P::Variant(0b10));
        e.finish(&mut self.hints, 7, &V7_LAYOUTS, None);
    }

    /// TypeID text, as [`super::inspect`] reads it (`named`: the scheme `typeid` was given).
    fn write_typeid(&mut self, trimmed: &str, named: bool, json: bool, out: &mut Vec<u8>) -> bool {
        let quick = match self.format {
            None | Some(Format::TypeId) => text::typeid_fast(trimmed),
            Some(_) => None,
        };
        self.write_typeid_read(trimmed, quick, named, json, out)
    }

    /// [`Inspector::write_typeid`] with the table reading of the text already made (`quick`:
    /// lowercase TypeID text with a prefix of the spec and a suffix of at most 128 bits, what
    /// `TypeIdPrefix::encode` would write again).
    fn write_typeid_read(
        &mut self,
        trimmed: &str,
        quick: Option<(&str, u128)>,
        named: bool,
        json: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let parsed = match (quick, self.format) {
            (Some(read), _) => Ok(read),
            (None, None | Some(Format::TypeId)) => text::parse_typeid(trimmed, trimmed),
            (None, Some(f)) => text::parse(trimmed, 128, Some(f)).map(|v| ("", v)),
        };
        let Ok((prefix, value)) = parsed else {
            return false;
        };
        // The prefix passed `parse_typeid`'s checks, which are `TypeIdPrefix::new`'s; the
        // canonical text is made for text lines only.
        let canonical = if json || quick.is_some() {
            None
        } else {
            match text::TypeIdPrefix::new(prefix) {
                Ok(p) => Some(p.encode(value)),
                Err(_) => return false,
            }
        };
        let canonical = match (&canonical, quick) {
            (Some(c), _) => c.as_bytes(),
            (None, Some(_)) if !json => trimmed.as_bytes(),
            (None, _) => &[][..],
        };
        let v7 = (value >> 76) & 0xF == 7 && (value >> 62) & 0b11 == 0b10;
        if v7 && named {
            let Some(fast) = &self.typeid_v7 else {
                return false;
            };
            let read = fast.plan.read(value).map(Ok).unwrap_or_else(|| {
                super::check_layout_value(trimmed, trimmed, &fast.scheme, &fast.layout, value)
            });
            let Ok((parts, unix_ns)) = read else {
                return false;
            };
            let mut e = Emit::new(out, json, &mut self.clock);
            e.plain = quick.is_some();
            e.begin(
                trimmed,
                Canon::Text(canonical),
                Scheme::TypeId.name(),
                value,
            );
            e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, fast.digits)));
            e.part("prefix", P::Str(prefix));
            layout_parts(fast, value, &parts, &mut e);
            e.end::<&str>(&[], None, None);
            return true;
        }
        if self.write_uuid(
            trimmed,
            Canon::Text(canonical),
            (Some(Scheme::TypeId.name()), Some(prefix)),
            quick.is_some(),
            value,
            json,
            out,
        ) {
            return true;
        }
        // A suffix that is no UUID RFC 9562 defines: its version and variant alone.
        let mut e = Emit::new(out, json, &mut self.clock);
        e.begin(
            trimmed,
            Canon::Text(canonical),
            Scheme::TypeId.name(),
            value,
        );
        e.when(None, None);
        e.part("prefix", P::Str(prefix));
        e.part("version", P::Version(((value >> 76) & 0xF) as u8));
        e.part("variant", P::Variant(((value >> 62) & 0b11) as u8));
        e.end::<&str>(&[], None, None);
        true
    }

    /// KSUID text, as [`super::inspect`] reads it (`named`: the scheme `ksuid` was given).
    fn write_ksuid(&mut self, trimmed: &str, named: bool, json: bool, out: &mut Vec<u8>) -> bool {
        let Some((seconds, payload)) = ksuid::parse_fast_parts(trimmed) else {
            return false;
        };
        // 27 base62 digits of a value below 62^27: the text is the only one of its value, so
        // it is its canonical text (what `Ksuid::encode` would write again).
        let canonical = trimmed;
        let unix_ns = u128::from(u64::from(seconds) + ksuid::EPOCH_SECONDS) * 1_000_000_000;
        let mut e = Emit::new(out, json, &mut self.clock);
        if e.json {
            e.out.extend_from_slice(b"{\"id\":");
            json_str(&mut e.out, trimmed);
            e.out
                .extend_from_slice(b",\"scheme\":\"ksuid\",\"value\":\"");
            e.out.with(|out| push_wide_decimal(out, seconds, payload));
            e.out.push(b'"');
        } else {
            e.begin(
                trimmed,
                Canon::Text(canonical.as_bytes()),
                Scheme::Ksuid.name(),
                0,
            );
        }
        e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, 0)));
        e.part("timestamp", P::Int(u128::from(seconds)));
        e.part("payload", P::HexUpper(payload));
        if named {
            e.part("counter", P::Int(payload >> 96));
            e.part("random", P::Hex(payload & ((1u128 << 96) - 1), 0));
        }
        e.end::<&str>(&[], None, None);
        true
    }

    /// A nanots-host value, as [`super::inspect_nanots_host`] reads it.
    fn write_nanots_host(&mut self, trimmed: &str, json: bool, out: &mut Vec<u8>) -> bool {
        let Some((digits, frac)) = self.nanots_host else {
            return false;
        };
        let Ok(value) = nanots::decode_text_or_int(trimmed) else {
            return false;
        };
        let (unix_ns, host) = nanots::HostDigits::decode(value, digits);
        let mut e = Emit::new(out, json, &mut self.clock);
        e.begin(
            trimmed,
            Canon::Dec(u128::from(value)),
            "nanots-host",
            u128::from(value),
        );
        e.when(
            Some(u128::from(unix_ns)),
            Some(When::Ns(i128::from(unix_ns), frac)),
        );
        e.part("host", P::Int(u128::from(host)));
        e.end::<&str>(&[], None, None);
        true
    }

    /// A Locality UUID, as [`super::inspect_locality`] reads it.
    #[cfg(feature = "locality")]
    fn write_locality(
        &mut self,
        trimmed: &str,
        value: u128,
        plain: bool,
        json: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let id = LocalityUuid::from_u128(value);
        let (Ok(ms), Ok(counter), Ok(pid), Ok(mac)) =
            (id.unix_ms(), id.counter_reversed(), id.pid(), id.mac())
        else {
            return false;
        };
        let unix_ns = u128::from(ms) * 1_000_000;
        let mut e = Emit::new(out, json, &mut self.clock);
        e.plain = plain;
        e.begin(trimmed, Canon::Uuid(value), locality::NAME, value);
        e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, 3)));
        e.part("counter", P::Int(u128::from(counter)));
        e.part("pid", P::Int(u128::from(pid)));
        e.part("mac", P::Hex(u128::from(mac), 7));
        e.part("version", P::Version(id.version()));
        e.end::<&str>(&[], None, None);
        true
    }

    fn write_decoded(&mut self, d: &Decoded, json: bool, out: &mut Vec<u8>) {
        let mut e = Emit::new(out, json, &mut self.clock);
        match &d.wide {
            // Wider than 128 bits (a KSUID): its value from all its bytes.
            Some(b) => e.begin_wide(
                &d.input,
                Canon::Text(d.canonical.as_bytes()),
                &d.scheme,
                &super::wide_decimal(b),
            ),
            None => e.begin(
                &d.input,
                Canon::Text(d.canonical.as_bytes()),
                &d.scheme,
                d.value,
            ),
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
        let hint = d.hint().map(|h| (self.hints.rewrite)(&h));
        if json {
            e.end(&d.layouts, d.note.as_deref(), hint.as_deref());
        } else {
            e.end::<&str>(&[], d.note.as_deref(), None);
            if let Some(h) = &hint {
                withhold(&mut self.hints.withheld, h);
            }
        }
    }
}

/// The candidate layouts of TypeID text whose suffix is a version 7 or 8 UUID.
const TYPEID_LAYOUTS: [&str; 1] = ["typeid"];

/// What [`super::inspect_uuid`] says of the UUID versions that hold no time to read, or
/// another layout's (the same words: a test compares the lines).
mod notes {
    pub const NIL: &str =
        "the nil UUID (RFC 9562 section 5.9): all 128 bits zero; no version, no time";
    pub const MAX: &str =
        "the max UUID (RFC 9562 section 5.10): all 128 bits one; no version, no time";
    pub const V1: &str = "time-based (RFC 9562 section 5.1): 100 ns since 1582-10-15, clock_seq, node (a MAC address or random)";
    pub const V2: &str = "DCE security (RFC 9562 section 5.2 leaves it to DCE 1.1): a local domain id replaces part of the time, so no time is read";
    pub const V3: &str = "name-based, MD5 (RFC 9562 section 5.3): a hash of a namespace and a name, which cannot be read back; no time";
    pub const V4: &str = "random (RFC 9562 section 5.4): 122 random bits; no time, no order";
    pub const V5: &str = "name-based, SHA-1 (RFC 9562 section 5.5): a hash of a namespace and a name, which cannot be read back; no time";
    pub const V6: &str =
        "time-ordered (RFC 9562 section 5.6): version 1's fields with the time's bits in order";
}

/// Ends a line with its layouts, note and hint: in JSON, the hint on the line; in text, the
/// hint counted once for [`Inspector::hints`]. Each hint is made and rewritten once.
fn finish(
    out: &mut Line<'_>,
    json: bool,
    hints: &mut Hints,
    version: u8,
    layouts: &'static [&'static str],
    note: Option<&'static str>,
) {
    let Hints {
        rewrite,
        withheld,
        cache,
    } = hints;
    if layouts.is_empty() {
        match note {
            // A JSON line's end with a note: made once per note.
            Some(n) if json => {
                let at = match cache
                    .iter()
                    .position(|h| h.note.is_some_and(|c| std::ptr::eq(c, n)))
                {
                    Some(at) => at,
                    None => {
                        let json_tail = json_end(&[], note, None);
                        cache.push(CachedHint {
                            version,
                            layouts,
                            note,
                            text: String::new(),
                            json_tail,
                            withheld_at: None,
                        });
                        cache.len() - 1
                    }
                };
                out.extend_from_slice(&cache[at].json_tail);
            }
            _ => end::<&str>(out, json, &[], note, None),
        }
        return;
    }
    let at = match cache
        .iter()
        .position(|h| h.note.is_none() && h.version == version && std::ptr::eq(h.layouts, layouts))
    {
        Some(at) => at,
        None => {
            let hint = rewrite(&super::hint_for(Some(version), layouts).unwrap_or_default());
            let json_tail = json_end(layouts, None, Some(&hint));
            cache.push(CachedHint {
                version,
                layouts,
                note: None,
                text: hint,
                json_tail,
                withheld_at: None,
            });
            cache.len() - 1
        }
    };
    let h = &mut cache[at];
    if json {
        match note {
            None => out.extend_from_slice(&h.json_tail),
            Some(_) => end(out, json, layouts, note, Some(&h.text)),
        }
        return;
    }
    end::<&str>(out, json, &[], note, None);
    match h.withheld_at {
        Some(i) => withheld[i].1 += 1,
        None => {
            withhold(withheld, &h.text);
            h.withheld_at = withheld.iter().position(|(t, _)| *t == h.text);
        }
    }
}

/// The end of a JSON object with these layouts, note and hint ([`Emit::end`]), made once and
/// kept by [`finish`].
fn json_end(layouts: &[&str], note: Option<&str>, hint: Option<&str>) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut clock = Clock::new();
    Emit::new(&mut tail, true, &mut clock).end(layouts, note, hint);
    tail
}

/// The canonical text of an id, for text lines (JSON objects do not carry it): text already
/// made, or a value written in decimal or as UUID text straight into the line (a `Text` made
/// by `text::encode` and copied in is stored and read back in other widths, which stalls store
/// forwarding).
#[derive(Clone, Copy)]
enum Canon<'a> {
    Text(&'a [u8]),
    Dec(u128),
    Uuid(u128),
}

/// Counts a hint kept back from a text line.
fn withhold(list: &mut Vec<(String, u64)>, hint: &str) {
    match list.iter_mut().find(|(h, _)| h == hint) {
        Some((_, n)) => *n += 1,
        None => list.push((hint.to_string(), 1)),
    }
}

impl Fast {
    fn of(s: &Scheme) -> Fast {
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
        Fast {
            plan: Plan::of(s, &layout),
            digits: digits_for_tick(layout.tick_ns),
            canonical: s.default_format(),
            uuid: s.uuid_version().is_some(),
            scheme: s.clone(),
            layout,
            node_name,
        }
    }
}

/// A layout's reading with every mask made once: [`super::check_layout_value`]'s checks as
/// two compares, [`Layout::decode`]'s fields, its time in 64-bit arithmetic. Where a check
/// fails, [`super::check_layout_value`] reads the id again and says what is wrong.
struct Plan {
    /// The bits an id may set: the layout's fields and fixed bits, within its width.
    allowed: u128,
    /// The UUID version's and variant's bits, and the values they must hold (0 and 0 for a
    /// layout that is no UUID).
    uuid_mask: u128,
    uuid_value: u128,
    node: FieldPlan,
    time: FieldPlan,
    counter: FieldPlan,
    random: FieldPlan,
    /// The most ticks whose time is within any calendar date (`None` for an epoch beyond
    /// it: every id is refused, by the general reading).
    max_ticks: Option<u128>,
    tick_ns: u64,
    epoch_ns: u64,
    fixed_mask: u128,
    fixed_value: u128,
}

/// A field's runs as masks and shifts ([`crate::layout::Field::extract`]).
struct FieldPlan {
    hi_mask: u128,
    hi_shift: u32,
    lo_width: u32,
    lo_mask: u128,
    lo_shift: u32,
}

impl FieldPlan {
    fn of(f: &crate::layout::Field) -> FieldPlan {
        let mask = |s: crate::layout::Segment| match s.width {
            0 => 0,
            w => (u128::MAX >> (128 - w)) << s.shift,
        };
        FieldPlan {
            hi_mask: mask(f.hi),
            hi_shift: f.hi.shift,
            lo_width: f.lo.width,
            lo_mask: mask(f.lo),
            lo_shift: f.lo.shift,
        }
    }

    #[inline]
    fn get(&self, v: u128) -> u128 {
        let hi = (v & self.hi_mask) >> self.hi_shift;
        if self.lo_width == 0 {
            hi
        } else {
            (hi << self.lo_width) | ((v & self.lo_mask) >> self.lo_shift)
        }
    }
}

impl Plan {
    fn of(s: &Scheme, layout: &Layout) -> Plan {
        let width = match layout.bits {
            b @ 1..=127 => (1u128 << b) - 1,
            _ => u128::MAX,
        };
        let (uuid_mask, uuid_value) = match s.uuid_version() {
            Some(v) => (0xF << 76 | 0b11 << 62, u128::from(v) << 76 | 0b10 << 62),
            None => (0, 0),
        };
        // `check_layout_value`'s limit: i64::MAX ms in ns.
        let limit = i64::MAX as u128 * 1_000_000;
        let max_ticks = (u128::from(layout.epoch_ns) <= limit).then(|| {
            (limit - u128::from(layout.epoch_ns))
                .checked_div(u128::from(layout.tick_ns))
                .unwrap_or(u128::MAX)
        });
        Plan {
            allowed: layout.defined_bits() & width,
            uuid_mask,
            uuid_value,
            node: FieldPlan::of(&layout.node),
            time: FieldPlan::of(&layout.time),
            counter: FieldPlan::of(&layout.counter),
            random: FieldPlan::of(&layout.random),
            max_ticks,
            tick_ns: layout.tick_ns,
            epoch_ns: layout.epoch_ns,
            fixed_mask: layout.fixed_mask,
            fixed_value: layout.fixed_value,
        }
    }

    /// The parts and Unix time of an id, or `None` where a check of
    /// [`super::check_layout_value`] fails. Always inlined: its parts returned through memory
    /// were read back in wider loads than they were stored with, which stalls store forwarding.
    #[inline(always)]
    fn read(&self, value: u128) -> Option<(crate::layout::Parts, u128)> {
        if value & !self.allowed != 0 || value & self.uuid_mask != self.uuid_value {
            return None;
        }
        let ticks = self.time.get(value);
        if ticks > self.max_ticks? {
            return None;
        }
        // Within the limit: no overflow (and no saturating arithmetic).
        let unix_ns = ticks * u128::from(self.tick_ns) + u128::from(self.epoch_ns);
        let parts = crate::layout::Parts {
            node: self.node.get(value),
            ticks,
            counter: self.counter.get(value),
            random: self.random.get(value),
            fixed_ok: value & self.fixed_mask == self.fixed_value,
        };
        Some((parts, unix_ns))
    }
}

/// An id of a layout scheme: what [`super::inspect`] makes of it.
#[inline(always)]
fn write_layout(
    fast: &Fast,
    input: &str,
    trimmed: &str,
    format: Option<Format>,
    e: &mut Emit<'_>,
) -> Result<(), Error> {
    let layout = &fast.layout;
    // UUID text of a UUID scheme read at once; other text (and any check that fails) as
    // `inspect` reads it.
    let uuid_text = fast.uuid && matches!(format, None | Some(Format::Uuid));
    let uuid = uuid_text
        .then(|| text::uuid_hex_fast(trimmed.as_bytes()))
        .flatten();
    // Other text as `layout_fields` reads it (nanots' timestamp text does not come here).
    let value = uuid.map(Ok).unwrap_or_else(|| {
        text::parse(
            trimmed,
            layout.bits,
            format.or(fast.scheme.native_format(trimmed)),
        )
    });
    let quick = value
        .as_ref()
        .ok()
        .and_then(|&v| fast.plan.read(v).map(|(parts, ns)| (v, parts, ns)));
    let (value, parts, unix_ns) = match (quick, value) {
        (Some(read), _) => read,
        // A check failed: `check_layout_value` says which (the value read as it reads it).
        (None, Ok(v)) => {
            let (parts, ns) = super::check_layout_value(input, trimmed, &fast.scheme, layout, v)?;
            (v, parts, ns)
        }
        (None, Err(_)) => layout_fields(input, trimmed, &fast.scheme, layout, format)?,
    };
    // Lowercase canonical UUID text is its own canonical text.
    // (A fold, not `any`: no early exit, so the 36 bytes are a few vector compares.)
    let own = uuid.is_some()
        && quick.is_some()
        && !trimmed
            .bytes()
            .fold(false, |up, b| up | b.is_ascii_uppercase());
    let encoded;
    let canonical = match fast.canonical {
        _ if own => Canon::Text(trimmed.as_bytes()),
        _ if e.json => Canon::Text(&[]),
        // `text::encode`'s decimal of the value cut to the layout's width.
        Format::Dec if layout.bits < 128 => Canon::Dec(value & ((1u128 << layout.bits) - 1)),
        Format::Dec => Canon::Dec(value),
        Format::Uuid => Canon::Uuid(value),
        format => {
            encoded = text::encode(value, layout.bits, format);
            Canon::Text(encoded.as_bytes())
        }
    };
    e.plain = uuid.is_some();
    e.begin(trimmed, canonical, fast.scheme.name(), value);
    e.when(Some(unix_ns), Some(When::Ns(unix_ns as i128, fast.digits)));
    layout_parts(fast, value, &parts, e);
    e.end::<&str>(&[], None, None);
    Ok(())
}

/// A layout scheme's parts, in the order [`Decoded::parts`] gives them.
#[inline(always)]
fn layout_parts(fast: &Fast, value: u128, parts: &crate::layout::Parts, e: &mut Emit<'_>) {
    let layout = &fast.layout;
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
}

/// A part's value as the writer shows it.
enum P<'a> {
    /// Decimal in text; in JSON a number up to 2^53, a string above.
    Int(u128),
    /// Lowercase hex, zero-padded to the width given: always a string.
    Hex(u128, usize),
    /// Text as it is: always a string.
    Str(&'a str),
    /// 32 uppercase hex digits (a KSUID's payload): always a string.
    HexUpper(u128),
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
    /// Held by value: its position and capacity stay in registers in the functions that
    /// write the line ([`Line`]).
    out: Line<'a>,
    json: bool,
    clock: &'a mut Clock,
    /// The id's text is known to need no JSON escape (UUID text, which `uuid_hex_fast` or
    /// `parse_uuid` read: hex digits, `-`, braces, `urn:uuid:`; TypeID text `typeid_fast`
    /// read): written without looking for one.
    plain: bool,
}

impl<'a> Emit<'a> {
    fn new(out: &'a mut Vec<u8>, json: bool, clock: &'a mut Clock) -> Emit<'a> {
        // One line fits: no growth while it is written.
        Emit {
            out: Line::new(out, 384),
            json,
            clock,
            plain: false,
        }
    }

    #[inline(always)]
    fn begin(&mut self, input: &str, canonical: Canon<'_>, scheme: &str, value: u128) {
        if self.json {
            self.out.extend_from_slice(b"{\"id\":");
            if self.plain {
                debug_assert!(!needs_escape(input.as_bytes()));
                self.out.push(b'"');
                put(&mut self.out, input.as_bytes());
                self.out.push(b'"');
            } else {
                json_str(&mut self.out, input);
            }
            // Scheme names are the crate's own, plain ASCII: no escape to look for.
            debug_assert!(!needs_escape(scheme.as_bytes()));
            self.out.extend_from_slice(b",\"scheme\":\"");
            put(&mut self.out, scheme.as_bytes());
            self.out.extend_from_slice(b"\",\"value\":\"");
            push_u128(&mut self.out, value);
            self.out.push(b'"');
        } else {
            match canonical {
                Canon::Text(t) => put(&mut self.out, t),
                Canon::Dec(v) => push_u128(&mut self.out, v),
                Canon::Uuid(v) => self.out.extend_from_slice(&text::uuid_ascii(v, false)),
            }
            self.out.extend_from_slice(b"  scheme=");
            put(&mut self.out, scheme.as_bytes());
        }
    }

    /// As [`Emit::begin`], for an id whose value is given as decimal text.
    #[inline(always)]
    fn begin_wide(&mut self, input: &str, canonical: Canon<'_>, scheme: &str, value: &str) {
        if self.json {
            self.out.extend_from_slice(b"{\"id\":");
            json_str(&mut self.out, input);
            self.out.extend_from_slice(b",\"scheme\":");
            json_str(&mut self.out, scheme);
            self.out.extend_from_slice(b",\"value\":");
            json_str(&mut self.out, value);
        } else {
            self.begin(input, canonical, scheme, 0);
        }
    }

    /// The id's time: in JSON `unix_ms`, `unix_ns` and `time`, in text `time` and `unix_ms`.
    #[inline(always)]
    fn when(&mut self, unix_ns: Option<u128>, time: Option<When<'_>>) {
        // A time given both ways, in 64 bits: the block of the last such time, if it is this.
        if let (Some(ns), Some(When::Ns(t, digits))) = (unix_ns, &time) {
            if let Ok(small) = u64::try_from(ns) {
                if i128::from(small) == *t {
                    let key = Some((small, *digits, self.json));
                    if self.clock.last != key && self.when_in_ms(small, *digits) {
                        return;
                    }
                    let clock = &mut *self.clock;
                    if clock.last != key {
                        clock.new_block(self.json, unix_ns, time, key);
                    }
                    self.out.extend_from_slice(&clock.block);
                    return;
                }
            }
        }
        let (json, second) = (self.json, &mut self.clock.second);
        self.out
            .with(|out| write_when(out, json, second, unix_ns, time));
    }

    /// [`Emit::when`] for a time given both ways in 64 bits, from the block of its
    /// millisecond ([`MsBlock`]) where it has digits below the millisecond (4 to 9 fraction
    /// digits, a time after the first millisecond of 1970). False, with nothing written,
    /// otherwise.
    #[inline(always)]
    fn when_in_ms(&mut self, ns: u64, digits: u32) -> bool {
        if !(4..=9).contains(&digits) || ns < 1_000_000 {
            return false;
        }
        let ms = ns / 1_000_000;
        let key = Some((ms, digits, self.json));
        let clock = &mut *self.clock;
        let b = &mut clock.ms;
        if b.key != key && !clock.new_ms(ms, self.json, key) {
            return false;
        }
        let b = &clock.ms;
        // The six digits below the millisecond, then two zero bytes.
        let six = (u64::from_le_bytes(digits8((ns % 1_000_000) as u32)) >> 16).to_le_bytes();
        let further = digits as usize - 3;
        self.out.extend_from_slice(&b.head);
        if self.json {
            self.out.extend_from_slice(&six[..6]);
            self.out.extend_from_slice(&b.mid);
            let at = self.out.len() + further;
            self.out.extend_from_slice(&six);
            self.out.truncate(at);
            self.out.extend_from_slice(b"Z\"");
        } else {
            let at = self.out.len() + further;
            self.out.extend_from_slice(&six);
            self.out.truncate(at);
            self.out.extend_from_slice(&b.mid);
        }
        true
    }

    /// A part: its key (a literal at every call, so its copy is inlined as a few moves) and
    /// its value.
    #[inline(always)]
    fn part(&mut self, key: &str, p: P<'_>) {
        self.key(key);
        self.value(p);
    }

    /// A part's key: `,"key":` or ` key=`.
    #[inline(always)]
    fn key(&mut self, key: &str) {
        if self.json {
            self.out.extend_from_slice(b",\"");
            self.out.extend_from_slice(key.as_bytes());
            self.out.extend_from_slice(b"\":");
        } else {
            self.out.push(b' ');
            self.out.extend_from_slice(key.as_bytes());
            self.out.push(b'=');
        }
    }

    #[inline(always)]
    fn value(&mut self, p: P<'_>) {
        if self.json {
            match p {
                P::Int(n) if n <= 1 << 53 => push_u128(&mut self.out, n),
                P::Int(n) => {
                    self.out.push(b'"');
                    push_u128(&mut self.out, n);
                    self.out.push(b'"');
                }
                P::Hex(v, width) => {
                    self.out.push(b'"');
                    push_hex(&mut self.out, v, width);
                    self.out.push(b'"');
                }
                P::Str(s) => json_str(&mut self.out, s),
                P::HexUpper(v) => {
                    self.out.push(b'"');
                    push_hex_upper(&mut self.out, v);
                    self.out.push(b'"');
                }
                P::Version(v) => push_u128(&mut self.out, u128::from(v)),
                P::Variant(v) => {
                    self.out.push(b'"');
                    push_variant(&mut self.out, v);
                    self.out.push(b'"');
                }
            }
        } else {
            match p {
                P::Int(n) => push_u128(&mut self.out, n),
                P::Hex(v, width) => push_hex(&mut self.out, v, width),
                P::Str(s) => self.out.extend_from_slice(s.as_bytes()),
                P::HexUpper(v) => push_hex_upper(&mut self.out, v),
                P::Version(v) => push_hex(&mut self.out, u128::from(v), 0),
                P::Variant(v) => push_variant(&mut self.out, v),
            }
        }
    }

    /// Ends the line with its layouts, note and hint ([`finish`]).
    #[inline(always)]
    fn finish(
        &mut self,
        hints: &mut Hints,
        version: u8,
        layouts: &'static [&'static str],
        note: Option<&'static str>,
    ) {
        let json = self.json;
        self.out
            .with(|out| finish(out, json, hints, version, layouts, note));
    }

    #[inline(always)]
    fn end<S: AsRef<str>>(&mut self, layouts: &[S], note: Option<&str>, hint: Option<&str>) {
        let json = self.json;
        self.out.with(|out| end(out, json, layouts, note, hint));
    }
}

/// The end of a line ([`Emit::end`]): in JSON its layouts, note and hint and the closing
/// brace, in text its note.
fn end<S: AsRef<str>>(
    out: &mut Line<'_>,
    json: bool,
    layouts: &[S],
    note: Option<&str>,
    hint: Option<&str>,
) {
    if json {
        if !layouts.is_empty() {
            out.extend_from_slice(b",\"layouts\":[");
            for (i, l) in layouts.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(out, l.as_ref());
            }
            out.push(b']');
        }
        if let Some(n) = note {
            out.extend_from_slice(b",\"note\":");
            json_str(out, n);
        }
        if let Some(h) = hint {
            out.extend_from_slice(b",\"hint\":");
            json_str(out, h);
        }
        out.push(b'}');
    } else if let Some(n) = note {
        out.extend_from_slice(b"  (");
        out.extend_from_slice(n.as_bytes());
        out.push(b')');
    }
}

/// [`Emit::when`]'s block, made anew.
fn write_when(
    out: &mut Line<'_>,
    json: bool,
    clock: &mut SecondCache,
    unix_ns: Option<u128>,
    time: Option<When<'_>>,
) {
    let mut time_text = |out: &mut Line<'_>, t: &When<'_>| match t {
        When::Text(s) => out.extend_from_slice(s.as_bytes()),
        When::Ns(ns, digits) => clock.write(out, *ns, *digits),
    };
    if json {
        if let Some(ns) = unix_ns {
            out.extend_from_slice(b",\"unix_ms\":");
            json_nanos(out, ms_of(ns));
            out.extend_from_slice(b",\"unix_ns\":");
            json_nanos(out, ns);
        }
        if let Some(t) = &time {
            out.extend_from_slice(b",\"time\":\"");
            time_text(out, t);
            out.push(b'"');
        }
    } else {
        if let Some(t) = &time {
            out.extend_from_slice(b" time=");
            time_text(out, t);
        }
        if let Some(ns) = unix_ns {
            out.extend_from_slice(b" unix_ms=");
            push_u128(out, ms_of(ns));
        }
    }
}

/// Milliseconds of a time in nanoseconds: a 64-bit division while it fits (a 128-bit one is a
/// call into the compiler's runtime, several times slower).
#[inline]
fn ms_of(ns: u128) -> u128 {
    match u64::try_from(ns) {
        Ok(small) => u128::from(small / 1_000_000),
        Err(_) => ns / 1_000_000,
    }
}

/// Decimal: [`push_u64`] while the value fits 64 bits; above, one division by 10^19
/// ([`divmod_ten19`], a multiplication), the digits above the last 19 and then those 19
/// ([`push19`]).
#[inline(always)]
fn push_u128(out: &mut Line<'_>, n: u128) {
    match u64::try_from(n) {
        Ok(small) => push_u64(out, small),
        Err(_) => out.with(|out| push_u128_wide(out, n)),
    }
}

/// [`push_u128`] of a value above 64 bits.
#[inline(never)]
fn push_u128_wide(out: &mut Line<'_>, n: u128) {
    let (high, low) = divmod_ten19(n);
    match u64::try_from(high) {
        Ok(h) => push_u64(out, h),
        Err(_) => {
            // Below 2^128 / 10^19 < 4 * 10^19: one more digit, then 19.
            let (top, rest) = divmod_ten19(high);
            out.push(b'0' + top as u8);
            push19(out, rest);
        }
    }
    push19(out, low);
}

/// `n / 10^19` and `n % 10^19`, the quotient from the high half of `n * M` for a constant
/// `M`: a 128-bit division is a call into the compiler's runtime and a `div` instruction
/// (tens of cycles) for every 128-bit value written.
///
/// `M = ceil(2^190 / 10^19)` and the quotient is `floor(n * M / 2^190)`, exact for every
/// 128-bit `n`: `M * 10^19 - 2^190 = e < 2^62`, so `n * M / 2^190` exceeds `n / 10^19` by
/// less than `2^128 * e / (10^19 * 2^190) < 1 / 10^19`, less than the distance from `n / 10^19`
/// to the next integer above it. (The constant and the bound as the `itoa` crate uses them.)
#[inline(always)]
fn divmod_ten19(n: u128) -> (u128, u64) {
    const TEN19: u64 = 10_000_000_000_000_000_000;
    const M: u128 = 156_927_543_384_667_019_095_894_735_580_191_660_403;
    let q = mul_high(n, M) >> 62;
    (q, (n - q * u128::from(TEN19)) as u64)
}

/// The high 128 bits of the 256-bit product `x * y`, from four 64-bit products.
#[inline(always)]
fn mul_high(x: u128, y: u128) -> u128 {
    let (x_lo, x_hi) = (x as u64 as u128, x >> 64);
    let (y_lo, y_hi) = (y as u64 as u128, y >> 64);
    let mid = x_lo * y_hi + ((x_lo * y_lo) >> 64);
    let mid2 = x_hi * y_lo + (mid as u64 as u128);
    x_hi * y_hi + (mid >> 64) + (mid2 >> 64)
}

/// Decimal of a 64-bit value: its 8-digit words ([`digits8`]), the first without its leading
/// zeros. Every word goes from a register to the line whole (eight bytes, one store) and the
/// line is cut back to the digits: no copy of a length known only at run time (a call to
/// `memmove`), and no bytes stored piecewise and read back at once (a load that spans several
/// smaller stores waits for them to reach the cache: tens of cycles).
#[inline(always)]
fn push_u64(out: &mut Line<'_>, n: u64) {
    if n < 100 {
        // Versions, nodes, small counters: one or two bytes.
        if n >= 10 {
            out.push(b'0' + (n / 10) as u8);
        }
        out.push(b'0' + (n % 10) as u8);
    } else {
        out.with(|out| push_u64_wide(out, n));
    }
}

/// [`push_u64`] of a value of 3 digits or more.
#[inline(never)]
fn push_u64_wide(out: &mut Line<'_>, n: u64) {
    const TEN8: u64 = 100_000_000;
    if n < TEN8 {
        push_lead(out, n as u32);
    } else if n < TEN8 * TEN8 {
        push_lead(out, (n / TEN8) as u32);
        out.extend_from_slice(&digits8((n % TEN8) as u32));
    } else {
        let rest = n % (TEN8 * TEN8);
        push_lead(out, (n / (TEN8 * TEN8)) as u32);
        out.extend_from_slice(&digits8((rest / TEN8) as u32));
        out.extend_from_slice(&digits8((rest % TEN8) as u32));
    }
}

/// The digits of `x` (below 10^8) without leading zeros: its word with them shifted out.
#[inline(always)]
fn push_lead(out: &mut Line<'_>, x: u32) {
    let digits = x.checked_ilog10().unwrap_or(0) as usize + 1;
    let word = u64::from_le_bytes(digits8(x)) >> (8 * (8 - digits));
    let len = out.len() + digits;
    out.extend_from_slice(&word.to_le_bytes());
    out.truncate(len);
}

/// The 19 decimal digits of `x` (below 10^19), zero-padded: words of 3, 8 and 8 digits
/// joined in registers into three of 8 bytes, appended, and the line cut back by 5.
#[inline(always)]
fn push19(out: &mut Line<'_>, x: u64) {
    const TEN8: u64 = 100_000_000;
    let rest = x / TEN8;
    // Little-endian words: the first digit in the lowest byte; the top word's 3 digits are
    // its last 3 bytes.
    let a = u64::from_le_bytes(digits8((rest / TEN8) as u32));
    let b = u64::from_le_bytes(digits8((rest % TEN8) as u32));
    let c = u64::from_le_bytes(digits8((x % TEN8) as u32));
    let len = out.len() + 19;
    out.extend_from_slice(&(a >> 40 | b << 24).to_le_bytes());
    out.extend_from_slice(&(b >> 40 | c << 24).to_le_bytes());
    out.extend_from_slice(&(c >> 40).to_le_bytes());
    out.truncate(len);
}

/// The 8 decimal digits of `x` (below 10^8), zero-padded, in one 64-bit word: its halves of
/// four digits, then pairs, then single digits are split in every lane at once with
/// multiplications by reciprocals (`10486 / 2^20` is `1 / 100` below 10^4, `103 / 2^10` is
/// `1 / 10` below 100), as Khuong and Lemire write 8 digits at once.
#[inline]
fn digits8(x: u32) -> [u8; 8] {
    let x = u64::from(x);
    let merged = (x / 10_000) | (x % 10_000) << 32;
    let hundreds = ((merged * 10_486) >> 20) & (0x7F << 32 | 0x7F);
    let pairs = (merged - 100 * hundreds) << 16 | hundreds;
    let tens = ((pairs * 103) >> 10) & (0xF << 48 | 0xF << 32 | 0xF << 16 | 0xF);
    let digits = tens + ((pairs - 10 * tens) << 8);
    (digits + 0x3030_3030_3030_3030).to_le_bytes()
}

/// The 4 decimal digits of `x` (below 10^4), zero-padded.
#[inline]
fn digits4(x: u32) -> [u8; 4] {
    let d = digits8(x);
    [d[4], d[5], d[6], d[7]]
}

/// Lowercase hex of `v`, zero-padded to `width` digits (`{v:0width$x}`). The digits are
/// made left-aligned (the value shifted up first), appended as a whole 16- or 32-byte block
/// and the line cut back to them: no copy of a run-time length.
#[inline(always)]
fn push_hex(out: &mut Line<'_>, v: u128, width: usize) {
    // A field of a fixed width that holds its value (the common case; `width` is then a
    // constant where this is inlined): its digits from one 16-digit word, a fixed-size copy.
    if (1..=16).contains(&width) && v >> (4 * width) == 0 {
        let word = text::hex16((v as u64) << (4 * (16 - width)), false).to_be_bytes();
        out.extend_from_slice(&word[..width]);
    } else if width == 0 && v >> 64 == 0 {
        // No width (random bits, a UUID's version in text) and 64 bits: the digits
        // left-aligned in one word, appended whole, the line cut back to them.
        let digits = (64 - (v as u64).leading_zeros()).div_ceil(4).max(1);
        let word = text::hex16((v as u64) << (4 * (16 - digits)), false).to_be_bytes();
        let at = out.len() + digits as usize;
        out.extend_from_slice(&word);
        out.truncate(at);
    } else {
        out.with(|out| push_hex_any(out, v, width));
    }
}

/// [`push_hex`] of any value and width.
#[inline(never)]
fn push_hex_any(out: &mut Line<'_>, v: u128, width: usize) {
    let digits = (128 - v.leading_zeros()).div_ceil(4).max(1) as usize;
    if width > 32 {
        for _ in 32..width {
            out.push(b'0');
        }
    }
    let n = digits.max(width).min(32);
    let len = out.len() + n;
    if n <= 16 {
        // `v` has at most n <= 16 digits: it fits 64 bits.
        let word = text::hex16((v as u64) << (4 * (16 - n) as u32), false);
        out.extend_from_slice(&word.to_be_bytes());
    } else {
        out.extend_from_slice(&text::hex32(v << (4 * (32 - n) as u32), false));
    }
    out.truncate(len);
}

/// The 32 uppercase hex digits of `v`.
#[inline(always)]
fn push_hex_upper(out: &mut Line<'_>, v: u128) {
    out.extend_from_slice(&text::hex32(v, true));
}

/// The decimal text of the 160-bit number `hi` (top 32 bits) and `lo`: one division by
/// 10^19 leaves a quotient that fits 128 bits.
fn push_wide_decimal(out: &mut Line<'_>, hi: u32, lo: u128) {
    // 2^128 = A * 10^19 + B.
    const A: u128 = 34_028_236_692_093_846_346;
    const B: u128 = 3_374_607_431_768_211_456;
    if hi == 0 {
        push_u128(out, lo);
        return;
    }
    // hi * 2^128 + lo = (hi * A + lq) * 10^19 + (hi * B + lr), lo = lq * 10^19 + lr; the
    // second term is below 2^32 * 10^19 + 10^19 (its carry is added to the first), and the
    // quotient below 2^160 / 10^19 < 2^97.
    let (lq, lr) = divmod_ten19(lo);
    let (carry, rem) = divmod_ten19(u128::from(hi) * B + u128::from(lr));
    push_u128(out, u128::from(hi) * A + lq + carry);
    push19(out, rem);
}

impl SecondCache {
    fn new() -> SecondCache {
        SecondCache {
            secs: 0,
            text: [0; 19],
            valid: false,
        }
    }

    /// A time as [`write_unix_ns`] writes it; the date and clock of its second are made once
    /// for the run of ids in that second.
    fn write(&mut self, out: &mut Line<'_>, ns: i128, digits: u32) {
        // 1970 to 2554 (64 bits of nanoseconds): four-digit years, the common case.
        let Ok(ns) = u64::try_from(ns) else {
            write_unix_ns_to(out, ns, digits);
            return;
        };
        if digits > 9 {
            write_unix_ns_to(out, i128::from(ns), digits);
            return;
        }
        let secs = ns / 1_000_000_000;
        if !self.valid || self.secs != secs {
            let mut t = Vec::with_capacity(24);
            write_unix_ns(&mut t, i128::from(secs) * 1_000_000_000, 0);
            if t.len() != 20 {
                write_unix_ns_to(out, i128::from(ns), digits);
                return;
            }
            self.text.copy_from_slice(&t[..19]);
            self.secs = secs;
            self.valid = true;
        }
        let mut buf = [0u8; 31];
        buf[..19].copy_from_slice(&self.text);
        let mut len = 19;
        if digits > 0 {
            buf[19] = b'.';
            let frac = (ns % 1_000_000_000) / 10u64.pow(9 - digits);
            // The fraction's digits from one 8-digit word (the ninth, for nanoseconds, first):
            // UUID v1 and v6 times are 100 ns apart, so this runs for nearly every such id.
            let d = digits as usize;
            if d == 9 {
                buf[20] = b'0' + (frac / 100_000_000) as u8;
                buf[21..29].copy_from_slice(&digits8((frac % 100_000_000) as u32));
            } else {
                buf[20..20 + d].copy_from_slice(&digits8(frac as u32)[8 - d..]);
            }
            len = 20 + d;
        }
        buf[len] = b'Z';
        out.extend_from_slice(&buf[..=len]);
    }
}

/// [`write_unix_ns`] onto a line (times outside 1970-2554 or finer than nanoseconds: rare).
fn write_unix_ns_to(out: &mut Line<'_>, ns: i128, digits: u32) {
    let mut text = Vec::with_capacity(40);
    write_unix_ns(&mut text, ns, digits);
    out.extend_from_slice(&text);
}

/// `0b` and the two variant bits.
#[inline(always)]
fn push_variant(out: &mut Line<'_>, v: u8) {
    out.extend_from_slice(b"0b");
    out.push(b'0' + ((v >> 1) & 1));
    out.push(b'0' + (v & 1));
}

/// A time in nanoseconds as JSON: a number while it fits 64 bits, a decimal string beyond.
#[inline(always)]
fn json_nanos(out: &mut Line<'_>, n: u128) {
    if u64::try_from(n).is_ok() {
        push_u128(out, n);
    } else {
        out.push(b'"');
        push_u128(out, n);
        out.push(b'"');
    }
}

/// Appends `s`, of a length known only at run time, as two copies of a fixed size that
/// overlap (up to 64 bytes): for text this short a call to `memcpy` costs more than the copy.
#[inline(always)]
fn put(out: &mut Line<'_>, s: &[u8]) {
    #[inline(always)]
    fn two<const N: usize>(out: &mut Line<'_>, s: &[u8]) {
        // N <= s.len() <= 2N: the first N bytes, then the last N ending where `s` ends.
        let end = out.len() + s.len();
        out.extend_from_slice(&s[..N]);
        out.truncate(end - N);
        out.extend_from_slice(&s[s.len() - N..]);
    }
    match s.len() {
        32..=64 => two::<32>(out, s),
        16..=31 => two::<16>(out, s),
        8..=15 => two::<8>(out, s),
        _ => out.extend_from_slice(s),
    }
}

/// Whether JSON text of `bytes` needs an escape (a control character, `"` or `\\`): eight
/// bytes at a time, each test the classic "has a zero byte" of a word (exact as to whether
/// some byte matches, which is all that is asked).
#[inline]
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let bad = |x: u64| {
        x.wrapping_sub(ONES * 0x20) & !x & HIGH
            | has_zero(x ^ (ONES * u64::from(b'"')))
            | has_zero(x ^ (ONES * u64::from(b'\\')))
    };
    let word = |c: &[u8]| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    if bytes.len() < 8 {
        return bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
    }
    // Whole words, then the last eight bytes (overlapping the last word read).
    let found = bytes.chunks_exact(8).fold(0, |f, c| f | bad(word(c)));
    found | bad(word(&bytes[bytes.len() - 8..])) != 0
}

/// A JSON string, escaped as `serde_json` escapes it (`\"`, `\\`, the short escapes of
/// control characters where JSON has them, `\u00XX` for the others).
#[inline(always)]
fn json_str(out: &mut Line<'_>, s: &str) {
    let bytes = s.as_bytes();
    if needs_escape(bytes) {
        out.with(|out| json_escaped(out, bytes));
    } else {
        out.push(b'"');
        put(out, bytes);
        out.push(b'"');
    }
}

/// [`json_str`] of text that needs an escape.
#[inline(never)]
fn json_escaped(out: &mut Line<'_>, bytes: &[u8]) {
    out.push(b'"');
    {
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
    fn lines_longer_than_the_room_reserved_are_whole() {
        // A hint rewritten to 5,000 characters that need escapes: each JSON line outgrows the
        // 384 bytes reserved, in the middle of its hint, after lines already in the buffer.
        let long: String = "\"\\\u{1}é".repeat(1_000);
        let hint = long.clone();
        let mut inspector = Inspector::new(None, None, None)
            .unwrap()
            .with_hint_rewriter(move |_| hint.clone());
        let mut out = b"before\n".to_vec();
        out.shrink_to_fit();
        let id = "01890a5d-ac96-774b-bcce-b302099a8057";
        for _ in 0..3 {
            let start = out.len();
            inspector.write(id, true, &mut out).unwrap();
            let line: serde_json::Value = serde_json::from_slice(&out[start..]).unwrap();
            assert_eq!(line["hint"], serde_json::Value::String(long.clone()));
            assert_eq!(line["id"], id);
            out.push(b'\n');
        }
        assert!(out.starts_with(b"before\n{"));
    }

    #[test]
    fn a_hint_rewriter_that_panics_leaves_the_buffer_as_it_was() {
        // The rewriter panics on its first call, at the end of a line (a TypeID with a prefix
        // of 63 characters); the panic is caught and the same inspector and buffer are used
        // again: the buffer holds what it held before, and the next line (its hint outgrowing
        // the room reserved) follows it, whole.
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let long = "\"\\\u{1}é".repeat(50);
        let hint = long.clone();
        let mut inspector = Inspector::new(None, None, None)
            .unwrap()
            .with_hint_rewriter(move |_| {
                if calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
                    panic!("the rewriter fails once");
                }
                hint.clone()
            });
        let suffix = text::encode(
            0x0189_0a5d_ac96_774b_bcce_b302_099a_8057,
            128,
            Format::TypeId,
        );
        let id = format!("{}_{suffix}", "p".repeat(63));
        for json in [true, false] {
            let mut out = b"before\n".to_vec();
            out.shrink_to_fit();
            if json {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    inspector.write(&id, json, &mut out)
                }));
                assert!(result.is_err(), "the rewriter was to panic");
                assert_eq!(out, b"before\n", "a panic left part of a line");
            }
            inspector.write(&id, json, &mut out).unwrap();
            let line = &out[b"before\n".len()..];
            assert!(out.starts_with(b"before\n"));
            if json {
                let line: serde_json::Value = serde_json::from_slice(line).unwrap();
                assert_eq!(line["hint"], serde_json::Value::String(long.clone()));
                assert_eq!(line["id"], serde_json::Value::String(id.clone()));
            } else {
                assert!(line.starts_with(format!("{id}  scheme=typeid ").as_bytes()));
                assert!(line.ends_with(b" version=7 variant=0b10"));
            }
        }
        assert_eq!(inspector.hints(), [(long, 1)]);
    }

    #[test]
    fn put_appends_every_length_whole() {
        let text: Vec<u8> = (0..100u8).map(|i| b'!' + i % 90).collect();
        for len in 0..=text.len() {
            for before in [0, 1, 7, 33] {
                let mut out = vec![b'x'; before];
                put(&mut Line::new(&mut out, 0), &text[..len]);
                assert_eq!(out.len(), before + len);
                assert_eq!(&out[before..], &text[..len], "{len} after {before}");
            }
        }
    }

    #[test]
    fn hex_matches_format() {
        for (v, w) in [
            (0u128, 0usize),
            (0, 3),
            (0xabc, 3),
            (0xabc, 16),
            (u128::MAX, 0),
            (1, 12),
            (5, 40),
            (u128::MAX, 40),
            (u128::MAX >> 3, 32),
        ] {
            let mut out = Vec::new();
            push_hex(&mut Line::new(&mut out, 0), v, w);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{v:0w$x}"));
        }
        // Every length of value against every width, after text already in the line.
        for bits in 0..=128u32 {
            let v = u128::MAX.checked_shr(128 - bits).unwrap_or(0) ^ (bits as u128 * 0x1357);
            let v = v & u128::MAX.checked_shr(128 - bits).unwrap_or(0);
            for w in 0..=34 {
                let mut out = b"x=".to_vec();
                push_hex(&mut Line::new(&mut out, 0), v, w);
                assert_eq!(String::from_utf8(out).unwrap(), format!("x={v:0w$x}"));
            }
        }
    }

    #[test]
    fn decimal_digits_match_itoa() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let mut cases: Vec<u128> = vec![0, 9, 10, u128::from(u64::MAX), u128::from(u64::MAX) + 1];
        cases.extend([u128::MAX, u128::MAX - 1, 10u128.pow(38), 10u128.pow(38) - 1]);
        cases.extend([10u128.pow(19) * u128::from(u64::MAX), 10u128.pow(19) << 64]);
        cases.extend((0..=38).flat_map(|k| [10u128.pow(k) - 1, 10u128.pow(k), 10u128.pow(k) + 1]));
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let wide = u128::from(x) * u128::from(x.rotate_left(29));
            cases.extend([wide, wide >> (x % 128), u128::from(x >> (x % 64))]);
        }
        for n in cases {
            let mut out = b"n=".to_vec();
            push_u128(&mut Line::new(&mut out, 0), n);
            assert_eq!(String::from_utf8(out).unwrap(), format!("n={n}"));
        }
        // Each half of four digits is split in a lane of its own: every value of each half.
        let halves = (0..10_000).flat_map(|i| [i * 10_000 + 1_234, 5_678 * 10_000 + i]);
        for v in halves.chain([99_999_999, 10_000_000, 1]) {
            assert_eq!(digits8(v), *format!("{v:08}").as_bytes());
        }
    }

    #[test]
    fn division_by_ten19_matches_the_division() {
        const TEN19: u128 = 10_000_000_000_000_000_000;
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let mut cases: Vec<u128> = vec![0, 1, u128::MAX, u128::MAX - 1, 1 << 64, 1 << 127];
        // Around multiples of 10^19 (where a quotient too large by one shows) up to 2^128.
        for k in [
            1u128,
            2,
            3,
            1 << 20,
            1 << 64,
            u128::MAX / TEN19,
            u128::MAX / TEN19 - 1,
        ] {
            cases.extend([k * TEN19 - 1, k * TEN19, k * TEN19 + 1]);
        }
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let wide = u128::from(x) << 64 | u128::from(x.rotate_left(29));
            cases.extend([
                wide,
                wide >> (x % 128),
                (wide / TEN19) * TEN19 - (x % 2) as u128,
            ]);
        }
        for n in cases {
            assert_eq!(divmod_ten19(n), (n / TEN19, (n % TEN19) as u64), "{n}");
        }
    }

    #[test]
    fn wide_decimal_matches_the_byte_division() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let mut cases = vec![(0u32, 0u128), (0, u128::MAX), (u32::MAX, u128::MAX), (1, 0)];
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push((
                (x >> 32) as u32,
                u128::from(x) * u128::from(x.rotate_left(17)),
            ));
        }
        for (hi, lo) in cases {
            let mut bytes = hi.to_be_bytes().to_vec();
            bytes.extend_from_slice(&lo.to_be_bytes());
            let mut out = Vec::new();
            push_wide_decimal(&mut Line::new(&mut out, 0), hi, lo);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                super::super::wide_decimal(&bytes)
            );
        }
    }

    #[test]
    fn times_from_the_second_cache_match_write_unix_ns() {
        let mut cache = SecondCache::new();
        let mut ns = 1_700_000_000_123_456_789i128;
        for step in [
            0,
            1,
            999_999_999,
            1,
            86_400_000_000_000,
            -3,
            i128::from(u64::MAX),
            -1,
        ] {
            ns += step;
            for digits in 0..=9 {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                cache.write(&mut Line::new(&mut a, 0), ns, digits);
                write_unix_ns(&mut b, ns, digits);
                assert_eq!(a, b, "{ns} {digits}");
            }
        }
        // Fractions with leading zeros and single nonzero digits at either end.
        for ns in [
            1_700_000_000_000_000_001i128,
            1_700_000_000_000_000_100,
            1_700_000_000_010_000_000,
            1_700_000_000_100_000_000,
            1_700_000_000_900_000_009,
        ] {
            for digits in 0..=9 {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                cache.write(&mut Line::new(&mut a, 0), ns, digits);
                write_unix_ns(&mut b, ns, digits);
                assert_eq!(a, b, "{ns} {digits}");
            }
        }
    }

    #[test]
    fn the_escape_scan_finds_what_a_byte_by_byte_scan_finds() {
        let alphabet = [
            0u8, 0x1f, 0x20, b'"', b'!', b'#', b'\\', b'[', b']', 0x7f, 0x80, 0xa2, 0xff, b'a',
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 41) as usize;
            let mut y = x;
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    y = y.rotate_left(5) ^ i as u64;
                    // Mostly plain text, now and then one byte from the alphabet.
                    if y % 13 == 0 {
                        alphabet[(y >> 8) as usize % alphabet.len()]
                    } else {
                        b'0' + (y % 10) as u8
                    }
                })
                .collect();
            let slow = bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            assert_eq!(needs_escape(&bytes), slow, "{bytes:?}");
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
            "0123456789abcdef0123456789abcdef\u{1f}",
            "01234567\"",
            "0123456\\x",
            "\u{80}\u{a0}\u{ff}ÿ",
        ] {
            let slow = s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
            assert_eq!(needs_escape(s.as_bytes()), slow, "{s:?}");
            let mut out = Vec::new();
            json_str(&mut Line::new(&mut out, 0), s);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }
}
