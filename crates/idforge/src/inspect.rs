//! Decoding any id back into its parts.
//!
//! UUIDs are recognised by their version ([`inspect_uuid`]): versions 1 and 6 are read as RFC 9562
//! defines them (the 60-bit time since 1582-10-15, `clock_seq`, the node), 3, 4 and 5 are said
//! to be name-based or random (they hold no time), and the nil and max UUIDs are named. As far
//! as the version says which of idforge's layouts wrote them:
//! 8 is `uprotocol-v8` and b a Locality UUID, but 7 is written by `uuid7`, `uprotocol` and other
//! libraries alike, each with its own use of the bits after the time. Without a scheme a
//! version 7 UUID is therefore decoded only as far as every reading agrees (time, version,
//! variant and the raw `rand_a`/`rand_b` bits), and [`Decoded::layouts`] lists the candidates.
//! A version 8 UUID records only that its bits are the vendor's (RFC 9562, section 5.8):
//! without a scheme it is shown as its raw `custom_a`, `custom_b` and `custom_c` fields, with
//! no time, and [`Decoded::layouts`] names `uprotocol-v8` as the layout idforge knows for it.
//! KSUID text (27 base62 characters, not all digits) is recognised by its shape and decoded as
//! the KSUID reference shows it (timestamp, payload); with the scheme `ksuid` named, the
//! payload's top 32 bits are read as idforge's counter ([`Decoded::wide`] holds its 20 bytes).
//! Integer ids carry no marker of their scheme, so they need one named. Text that reads as two
//! different values (digits only, as long as the hex or base32 text of the id's width) needs
//! its format named ([`Error::AmbiguousId`]).

use crate::error::{clip, malformed, Error};
#[cfg(feature = "locality")]
use crate::schemes::locality::{self, LocalityUuid};
use crate::schemes::{nanots, Scheme};
use crate::text::{self, Format};
use crate::time::{digits_for_tick, format_unix_ns};

// The line writer's buffer handling: its invariants in its `// SAFETY:` comments.
#[allow(unsafe_code)]
mod line;
mod writer;
pub use writer::Inspector;

/// The schemes of idforge that write version 7 UUIDs.
pub const V7_LAYOUTS: [&str; 2] = ["uuid7", "uprotocol"];

/// The schemes of idforge that write version 8 UUIDs.
pub const V8_LAYOUTS: [&str; 1] = ["uprotocol-v8"];

/// A time in nanoseconds as JSON: a number while it fits 64 bits, a decimal string beyond
/// (never a number wrapped modulo 2^64).
#[cfg(feature = "serde")]
struct Nanos(u128);

#[cfg(feature = "serde")]
impl serde::Serialize for Nanos {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match u64::try_from(self.0) {
            Ok(n) => s.serialize_u64(n),
            Err(_) => s.collect_str(&self.0),
        }
    }
}

/// One of an id's parts ([`Decoded::parts`]).
///
/// ```
/// use idforge::inspect::Part;
/// assert_eq!(Part::Int(378).to_string(), "378");
/// assert_eq!(Part::Version(11).to_string(), "b"); // hex, as a UUID's text writes it
/// let d = idforge::inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", None, None)?;
/// assert!(d.parts().contains(&("version", Part::Version(7))));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A number (a node, a counter, a process id). In JSON: a number up to 2^53, a string above
    /// (JavaScript's doubles hold integers exactly only that far).
    Int(u128),
    /// Bits shown as text (`rand_b`, a MAC fragment, the variant): always a string.
    Hex(String),
    /// Text (a TypeID's prefix): always a string.
    Text(String),
    /// A UUID version: hex in text (`b`), a number in JSON (11), as RFC 9562 numbers them.
    Version(u8),
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Int(n) => write!(f, "{n}"),
            Part::Hex(s) | Part::Text(s) => f.write_str(s),
            Part::Version(v) => write!(f, "{v:x}"),
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Int(n) if *n <= 1 << 53 => s.serialize_u64(*n as u64),
            Part::Int(n) => s.collect_str(n),
            Part::Hex(t) | Part::Text(t) => s.serialize_str(t),
            Part::Version(v) => s.serialize_u8(*v),
        }
    }
}

/// `idforge inspect --json`'s object: `id`, `scheme`, `value` (decimal string), `unix_ms`,
/// `unix_ns` and `time` when the id records a time (numbers while they fit 64 bits, decimal
/// strings beyond), then [`Decoded::parts`], `layouts` and `hint` when the layout is unknown.
#[cfg(feature = "serde")]
impl serde::Serialize for Decoded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let parts = self.parts();
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.input)?;
        m.serialize_entry("scheme", &self.scheme)?;
        match &self.wide {
            Some(b) => m.serialize_entry("value", &wide_decimal(b))?,
            None => m.serialize_entry("value", &self.value.to_string())?,
        }
        if let Some(ns) = self.unix_ns {
            m.serialize_entry("unix_ms", &Nanos(ns / 1_000_000))?;
            m.serialize_entry("unix_ns", &Nanos(ns))?;
        }
        if let Some(time) = &self.time {
            m.serialize_entry("time", time)?;
        }
        for (k, v) in &parts {
            m.serialize_entry(k, v)?;
        }
        if !self.layouts.is_empty() {
            m.serialize_entry("layouts", &self.layouts)?;
        }
        if let Some(n) = &self.note {
            m.serialize_entry("note", n)?;
        }
        if let Some(h) = self.hint() {
            m.serialize_entry("hint", &h)?;
        }
        m.end()
    }
}

/// An id taken apart.
///
/// ```
/// use idforge::Scheme;
/// let d = idforge::inspect("1541815603606036480", Some(&Scheme::Snowflake), None)?;
/// assert_eq!(d.scheme, "snowflake");
/// assert_eq!((d.node, d.counter), (Some(378), Some(0)));
/// assert_eq!(d.unix_ms(), Some(1_656_432_460_105));
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The id as given, trimmed.
    pub input: String,
    /// The scheme it was decoded as; for a UUID decoded without one, `uuid-v1` to `uuid-v8`
    /// (see [`Decoded::layouts`] for 7 and 8), `uuid-nil` or `uuid-max`.
    pub scheme: String,
    /// The id's value.
    pub value: u128,
    /// The id's width in bits.
    pub bits: u32,
    /// The id's time: Unix nanoseconds at the start of its tick; `None` for an id that does
    /// not say where its time is (a version 8 UUID decoded without a scheme).
    pub unix_ns: Option<u128>,
    /// The id's time as RFC 3339 UTC, at the scheme's precision (ms: 3 digits, 10 ms: 2);
    /// `None` where [`Decoded::unix_ns`] is.
    pub time: Option<String>,
    /// The node field, where the scheme has one.
    pub node: Option<u128>,
    /// The counter field.
    pub counter: Option<u128>,
    /// The random bits, where the scheme has them.
    pub random: Option<u128>,
    /// The UUID version, for UUIDs.
    pub version: Option<u8>,
    /// The UUID variant bits, for UUIDs.
    pub variant: Option<u8>,
    /// The id in the scheme's default text format.
    pub canonical: String,
    /// The process id field, for Locality UUIDs.
    pub pid: Option<u32>,
    /// The MAC fragment as hex (7 digits, 28 bits), for Locality UUIDs.
    pub mac: Option<String>,
    /// RFC 9562's `rand_a` (the 12 bits after the version), for a version 7 UUID decoded
    /// without a scheme: a counter in some layouts, random bits in others.
    pub rand_a: Option<u128>,
    /// RFC 9562's `rand_b` (the 62 bits after the variant), for a version 7 UUID decoded without
    /// a scheme.
    pub rand_b: Option<u128>,
    /// RFC 9562's `custom_a` (the 48 bits before the version), for a version 8 UUID decoded
    /// without a scheme.
    pub custom_a: Option<u128>,
    /// RFC 9562's `custom_b` (the 12 bits after the version), for a version 8 UUID decoded
    /// without a scheme.
    pub custom_b: Option<u128>,
    /// RFC 9562's `custom_c` (the 62 bits after the variant), for a version 8 UUID decoded
    /// without a scheme.
    pub custom_c: Option<u128>,
    /// The schemes the id may come from when its text does not say which ([`V7_LAYOUTS`] for a
    /// version 7 UUID decoded without a scheme, which may also come from another library,
    /// [`V8_LAYOUTS`] for a version 8 UUID); empty when it was decoded as one scheme.
    pub layouts: Vec<String>,
    /// A TypeID's prefix (possibly empty), for an id decoded as TypeID text.
    pub prefix: Option<String>,
    /// RFC 9562's 14-bit `clock_seq`, for a version 1 or 6 UUID.
    pub clock_seq: Option<u16>,
    /// The 60-bit timestamp of a version 1 or 6 UUID: 100-nanosecond intervals since
    /// 1582-10-15T00:00:00Z (the Gregorian reform). [`Decoded::time`] holds it as a time;
    /// [`Decoded::unix_ns`] too when it is not before 1970.
    pub gregorian: Option<u64>,
    /// What kind of UUID it is, when its version says so without a time to read (random,
    /// name-based, nil, max, DCE security) or with one (time-based, v1 and v6).
    pub note: Option<String>,
    /// For an id wider than 128 bits (a KSUID, 160), all its bytes; [`Decoded::value`] then
    /// holds its low 128 bits (a KSUID's payload).
    pub wide: Option<Vec<u8>>,
}

impl Decoded {
    /// The id's time in whole milliseconds since the Unix epoch, where the id records one.
    ///
    /// ```
    /// let d = idforge::inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", None, None)?;
    /// assert_eq!(d.unix_ms(), Some(1_645_557_742_000));
    /// let v4 = idforge::inspect("9c5b94b1-35ad-49bb-b118-8e8fc24abf80", None, None)?;
    /// assert_eq!(v4.unix_ms(), None); // random: no time
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn unix_ms(&self) -> Option<u128> {
        self.unix_ns.map(|ns| ns / 1_000_000)
    }

    /// The id's time as a timestamp, when it is within the years `jiff` holds (to 9999; a
    /// layout that runs out later can decode to a time beyond it: then [`Decoded::time`] and
    /// [`Decoded::unix_ns`] still hold it).
    ///
    /// ```
    /// let d = idforge::inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", None, None)?;
    /// assert_eq!(d.timestamp().unwrap().as_millisecond(), 1_645_557_742_000);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timestamp(&self) -> Option<jiff::Timestamp> {
        self.unix_ns
            .and_then(|ns| i128::try_from(ns).ok())
            .and_then(|ns| jiff::Timestamp::from_nanosecond(ns).ok())
    }

    /// The scheme's own parts, named as the scheme names them, in the order `idforge inspect`
    /// prints them: `prefix` (TypeID), `timestamp` and `clock_seq` (UUID versions 1 and 6),
    /// `node` (12 hex digits for UUID versions 1 and 6; `host` for nanots-host, `tag` for nanots, `rand_b` for
    /// uprotocol-v8), `counter`, `pid`, `mac`, `random`, `rand_a`, `rand_b`, `custom_a`,
    /// `custom_b`, `custom_c`, `version`, `variant`. The command line's text and JSON, and the service's JSON, come from here.
    ///
    /// ```
    /// use idforge::inspect::Part;
    /// let d = idforge::inspect("1541815603606036480", Some(&idforge::Scheme::Snowflake), None)?;
    /// assert_eq!(d.parts()[0], ("node", Part::Int(378)));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn parts(&self) -> Vec<(&'static str, Part)> {
        let mut out = Vec::new();
        if let Some(p) = &self.prefix {
            out.push(("prefix", Part::Text(p.clone())));
        }
        if let Some(t) = self.gregorian {
            out.push(("timestamp", Part::Int(u128::from(t))));
        }
        if let Some(b) = &self.wide {
            // A KSUID: the reference's `Timestamp` (seconds since its epoch) and `Payload`.
            let ts = b.iter().take(4).fold(0u128, |a, x| a << 8 | u128::from(*x));
            out.push(("timestamp", Part::Int(ts)));
            out.push(("payload", Part::Hex(hex_upper(&b[4..]))));
        }
        if let Some(c) = self.clock_seq {
            out.push(("clock_seq", Part::Int(u128::from(c))));
        }
        if let Some(node) = self.node {
            out.push(match self.scheme.as_str() {
                "uprotocol-v8" => ("rand_b", Part::Hex(format!("{node:016x}"))),
                _ if self.gregorian.is_some() => ("node", Part::Hex(format!("{node:012x}"))),
                "nanots-host" => ("host", Part::Int(node)),
                "nanots" => ("tag", Part::Int(node)),
                _ => ("node", Part::Int(node)),
            });
        }
        if let Some(c) = self.counter {
            out.push(("counter", Part::Int(c)));
        }
        if let Some(pid) = self.pid {
            out.push(("pid", Part::Int(u128::from(pid))));
        }
        if let Some(mac) = &self.mac {
            out.push(("mac", Part::Hex(mac.clone())));
        }
        if let Some(r) = self.random {
            out.push(("random", Part::Hex(format!("{r:x}"))));
        }
        if let Some(r) = self.rand_a {
            out.push(("rand_a", Part::Hex(format!("{r:03x}"))));
        }
        if let Some(r) = self.rand_b {
            out.push(("rand_b", Part::Hex(format!("{r:016x}"))));
        }
        if let Some(r) = self.custom_a {
            out.push(("custom_a", Part::Hex(format!("{r:012x}"))));
        }
        if let Some(r) = self.custom_b {
            out.push(("custom_b", Part::Hex(format!("{r:03x}"))));
        }
        if let Some(r) = self.custom_c {
            out.push(("custom_c", Part::Hex(format!("{r:016x}"))));
        }
        if let Some(v) = self.version {
            out.push(("version", Part::Version(v)));
        }
        if let Some(v) = self.variant {
            out.push(("variant", Part::Hex(format!("0b{v:02b}"))));
        }
        out
    }

    /// For an id whose layout is not known, what it may be and how to decode the rest.
    ///
    /// ```
    /// let d = idforge::inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", None, None).unwrap();
    /// assert!(d.hint().unwrap().contains("scheme `uprotocol`"));
    /// ```
    pub fn hint(&self) -> Option<String> {
        if self.scheme == "ulid" && self.counter.is_some() {
            return Some(ULID_HINT.into());
        }
        hint_for(self.version, &self.layouts)
    }
}

/// The hint of an id of UUID version `version` that may come from any of `layouts` (none when
/// `layouts` is empty: the id was decoded as one scheme).
fn hint_for<S: AsRef<str>>(version: Option<u8>, layouts: &[S]) -> Option<String> {
    if layouts.is_empty() {
        return None;
    }
    let names = layouts.iter().map(AsRef::as_ref).collect::<Vec<_>>();
    let schemes = names
        .iter()
        .map(|l| format!("scheme `{l}`"))
        .collect::<Vec<_>>()
        .join(" or ");
    Some(if version == Some(8) {
        format!(
            "a version 8 UUID does not record its layout (RFC 9562 leaves its bits to the application): it may be {} or another application's; name the scheme ({schemes}) to read its time and counter",
            names.join(", "),
        )
    } else {
        format!(
            "a version 7 UUID does not record its layout: it may be {} or another library's UUIDv7, which use rand_a and rand_b differently; name the scheme ({schemes}) to read its counter",
            names.join(", "),
        )
    })
}

/// Decodes id text. With `scheme` the text is read as that scheme's id (and a UUID's version
/// and variant are checked); without it, only UUIDs can be recognised, and a version 7 UUID is
/// decoded only as far as its version defines it (no counter: see [`Decoded::layouts`]).
/// `format` names the text's format; without it, text that could be two formats is refused.
///
/// # Errors
///
/// [`Error::AmbiguousId`] for text that reads as two values (pass `format`),
/// [`Error::MalformedId`] for text that is not an id of the scheme (or, without a scheme, an
/// integer id or an unknown UUID version), [`Error::WrongVersion`] and [`Error::WrongVariant`]
/// for a UUID of another version or variant than the scheme's.
///
/// ```
/// use idforge::{inspect, text::Format, Scheme};
/// let d = inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", None, None).unwrap();
/// assert_eq!((d.scheme.as_str(), d.counter), ("uuid-v7", None));
/// assert_eq!(d.unix_ms(), Some(1_645_557_742_000));
/// assert_eq!(d.time.as_deref(), Some("2022-02-22T19:22:22.000Z"));
/// assert_eq!(d.rand_a, Some(0xcc3));
/// let d = inspect("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", Some(&Scheme::UProtocol), None).unwrap();
/// assert_eq!(d.counter, Some(0xcc3));
/// // Digits only, 16 of them: decimal, or the hex text of a 64-bit id.
/// assert!(inspect("1999999999800000", Some(&Scheme::Snowflake), None).is_err());
/// let d = inspect("1999999999800000", Some(&Scheme::Snowflake), Some(Format::Hex)).unwrap();
/// assert_eq!(d.time.as_deref(), Some("2024-10-11T09:40:25.767Z"));
/// ```
pub fn inspect(
    input: &str,
    scheme: Option<&Scheme>,
    format: Option<Format>,
) -> Result<Decoded, Error> {
    let trimmed = input.trim();
    if scheme == Some(&Scheme::Ksuid)
        || (scheme.is_none()
            && format.is_none()
            && crate::schemes::ksuid::looks_like_ksuid(trimmed))
    {
        return inspect_ksuid(input, trimmed, format, scheme.is_some());
    }
    let typeid_text = match format {
        Some(f) => f == Format::TypeId,
        None => looks_like_typeid(trimmed),
    };
    if scheme == Some(&Scheme::TypeId) || (scheme.is_none() && typeid_text) {
        return inspect_typeid(input, trimmed, format, scheme.is_some());
    }
    let scheme = match scheme {
        Some(s) => s.clone(),
        None => {
            let looks_uuid = match format {
                Some(f) => f == Format::Uuid,
                // Also the 32 hex digits of `uuid.hex` and `Uuid::simple`, when a letter shows
                // they are not a decimal integer.
                None => text::looks_like_uuid(trimmed) || simple_uuid_text(trimmed),
            };
            if !looks_uuid {
                let integer = !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit());
                return Err(malformed(
                    input,
                    if integer {
                        "an integer id does not say which scheme made it; name the scheme (for example scheme `snowflake`)"
                    } else if trimmed.is_empty() {
                        "empty"
                    } else if trimmed.len() == 26
                        && trimmed.bytes().all(|b| b.is_ascii_alphanumeric())
                    {
                        "26 base32 characters are a ULID, or TypeID text without a prefix (as `idforge gen typeid` writes it): the same text for both, so name the scheme (scheme `ulid` or scheme `typeid`)"
                    } else {
                        "not a UUID nor TypeID text, the only ids that say what made them; for another scheme's id, name the scheme (for example scheme `ulid`, scheme `xid` or scheme `snowflake`)"
                    },
                ));
            }
            let simple = format.is_none() && simple_uuid_text(trimmed);
            let value = text::parse(
                trimmed,
                128,
                Some(if simple { Format::Hex } else { Format::Uuid }),
            )?;
            #[cfg(feature = "locality")]
            if ((value >> 76) & 0xF) as u8 == locality::VERSION && value != u128::MAX {
                return inspect_locality(input, format);
            }
            return inspect_uuid(input, trimmed, value);
        }
    };
    let layout = scheme.layout();
    let (value, parts, unix_ns) = layout_fields(input, trimmed, &scheme, &layout, format)?;
    Ok(layout_decoded(
        trimmed, &scheme, &layout, value, parts, unix_ns,
    ))
}

/// The 32 hex digits of a UUID without hyphens (`uuid.hex`, `Uuid::simple`), with at least
/// one letter: digits only would be a decimal integer as well.
fn simple_uuid_text(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 32 && b.iter().all(u8::is_ascii_hexdigit) && b.iter().any(u8::is_ascii_alphabetic)
}

/// What a ULID's `counter` is: idforge's layout, not the format's (the ULID spec has 80 random
/// bits after the time), so another generator's ULID has random bits there.
const ULID_HINT: &str = "the ULID spec defines 48 bits of time and 80 random bits: counter is idforge's layout (the top 16 of those bits, where idforge's generator keeps its counter), and in a ULID made by another generator it is random bits";

/// The [`Decoded`] of a layout scheme's id, its fields checked.
fn layout_decoded(
    trimmed: &str,
    scheme: &Scheme,
    layout: &crate::layout::Layout,
    value: u128,
    parts: crate::layout::Parts,
    unix_ns: u128,
) -> Decoded {
    let bits = layout.bits;
    let is_uuid = scheme.uuid_version().is_some();
    Decoded {
        input: trimmed.to_string(),
        scheme: scheme.name().to_string(),
        value,
        bits,
        unix_ns: Some(unix_ns),
        time: Some(format_unix_ns(
            unix_ns as i128,
            digits_for_tick(layout.tick_ns),
        )),
        node: (layout.node.width() > 0).then_some(parts.node),
        counter: (layout.counter.width() > 0).then_some(parts.counter),
        random: (layout.random.width() > 0).then_some(parts.random),
        version: is_uuid.then_some(((value >> 76) & 0xF) as u8),
        variant: is_uuid.then_some(((value >> 62) & 0b11) as u8),
        canonical: text::encode(value, bits, scheme.default_format()).to_string(),
        pid: None,
        mac: None,
        rand_a: None,
        rand_b: None,
        custom_a: None,
        custom_b: None,
        custom_c: None,
        layouts: Vec::new(),
        prefix: None,
        clock_seq: None,
        gregorian: None,
        note: None,
        wide: None,
    }
}

/// The value, parts and Unix time of `trimmed` read as an id of the layout scheme `scheme`
/// (not TypeID), with every check [`inspect`] makes: a UUID's version and variant, bits the
/// layout does not define, a time beyond any calendar date.
pub(crate) fn layout_fields(
    input: &str,
    trimmed: &str,
    scheme: &Scheme,
    layout: &crate::layout::Layout,
    format: Option<Format>,
) -> Result<(u128, crate::layout::Parts, u128), Error> {
    let bits = layout.bits;
    let value = match (scheme, format) {
        // nanots values come as integers, as Chronicle's timestamp text, or as hex or base32.
        (Scheme::NanoTs, None) if nanots_time_text(trimmed) => {
            nanots::decode_text_or_int(trimmed)? as u128
        }
        _ => text::parse(trimmed, bits, format.or(scheme.native_format(trimmed)))?,
    };
    let (parts, unix_ns) = check_layout_value(input, trimmed, scheme, layout, value)?;
    Ok((value, parts, unix_ns))
}

/// The checks of [`layout_fields`] on a value already read.
fn check_layout_value(
    input: &str,
    trimmed: &str,
    scheme: &Scheme,
    layout: &crate::layout::Layout,
    value: u128,
) -> Result<(crate::layout::Parts, u128), Error> {
    if layout.bits < 128 && value >> layout.bits != 0 {
        return Err(malformed(
            input,
            format!("the value does not fit in {} bits", layout.bits),
        ));
    }
    if let Some(expected) = scheme.uuid_version() {
        let found = ((value >> 76) & 0xF) as u8;
        if found != expected {
            return Err(Error::WrongVersion {
                input: clip(trimmed),
                scheme: scheme.name().into(),
                expected,
                found,
            });
        }
        let variant = ((value >> 62) & 0b11) as u8;
        if variant != 0b10 {
            return Err(Error::WrongVariant {
                input: clip(trimmed),
                scheme: scheme.name().into(),
                found: variant,
            });
        }
    }
    let stray = value & !layout.defined_bits();
    if stray != 0 {
        return Err(malformed(
            input,
            format!(
                "bit {} is set, but {} defines no bit there; is it an id of this scheme?",
                127 - stray.leading_zeros(),
                scheme.name()
            ),
        ));
    }
    let parts = layout.decode(value);
    let unix_ns = layout.unix_ns_of(parts.ticks);
    if unix_ns > i64::MAX as u128 * 1_000_000 {
        return Err(malformed(
            input,
            "its time field is beyond any calendar date; is it an id of this scheme?",
        ));
    }
    Ok((parts, unix_ns))
}

/// Decodes an id's value as `scheme` lays it out, without text: what [`inspect`] gives for
/// the id's canonical text (the typed ids' `decode` methods come here).
///
/// # Errors
/// [`Error::MalformedId`] for a value wider than the scheme's ids, bits the scheme does not
/// define or a time beyond any calendar date; [`Error::WrongVersion`] and
/// [`Error::WrongVariant`] for a UUID of another version or variant than the scheme's.
///
/// ```
/// use idforge::{inspect::decode, Scheme};
/// let d = decode(1_541_815_603_606_036_480, &Scheme::Snowflake)?;
/// assert_eq!((d.node, d.counter), (Some(378), Some(0)));
/// assert_eq!(d.time.as_deref(), Some("2022-06-28T16:07:40.105Z"));
/// assert!(decode(1 << 64, &Scheme::Snowflake).is_err()); // wider than 64 bits
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn decode(value: u128, scheme: &Scheme) -> Result<Decoded, Error> {
    let layout = scheme.layout();
    let shown = if layout.bits < 128 && value >> layout.bits != 0 {
        text::encode(value, 128, Format::Dec)
    } else {
        text::encode(value, layout.bits, scheme.default_format())
    };
    if *scheme == Scheme::TypeId {
        return inspect(shown.as_str(), Some(scheme), Some(Format::TypeId));
    }
    let canonical = shown.as_str();
    let (parts, unix_ns) = check_layout_value(canonical, canonical, scheme, &layout, value)?;
    Ok(layout_decoded(
        canonical, scheme, &layout, value, parts, unix_ns,
    ))
}

// The typed ids decode here, above the schemes (the ids module is below them).

impl crate::ids::UuidId {
    /// The id's parts as `scheme` lays them out (time, node, counter...), read from its bits
    /// without going through text.
    ///
    /// # Errors
    /// As [`decode`](crate::inspect::decode): a scheme of another width or UUID version, bits
    /// the scheme does not define.
    ///
    /// ```
    /// use idforge::{Scheme, UuidId};
    /// let id: UuidId = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F".parse()?;
    /// let d = id.decode(&Scheme::UProtocol)?;
    /// assert_eq!((d.unix_ms(), d.counter), (Some(1_645_557_742_000), Some(0xcc3)));
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn decode(self, scheme: &crate::Scheme) -> Result<crate::Decoded, Error> {
        decode(self.as_u128(), scheme)
    }
}

impl crate::ids::Id64 {
    /// The id's parts as `scheme` lays them out (its time, node, counter...), read from its
    /// bits without going through text: an integer id does not say which scheme made it.
    ///
    /// # Errors
    /// As [`decode`](crate::inspect::decode): a scheme of another width, bits the scheme does
    /// not define, a time field beyond any calendar date.
    ///
    /// ```
    /// use idforge::{Id64, Scheme};
    /// let id = Id64::from(1_541_815_603_606_036_480u64);
    /// let d = id.decode(&Scheme::Snowflake)?;
    /// assert!(d.timestamp().is_some());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn decode(self, scheme: &crate::Scheme) -> Result<crate::Decoded, Error> {
        decode(u128::from(self.as_u64()), scheme)
    }

    /// The time `scheme` records in the id (the start of its tick).
    ///
    /// # Errors
    /// As [`Id64::decode`]; [`Error::TimeOutOfRange`] for a time past the years `jiff` holds
    /// (9999).
    ///
    /// ```
    /// use idforge::{Id64, Scheme};
    /// let id = Id64::from(1_541_815_603_606_036_480u64);
    /// assert_eq!(id.timestamp(&Scheme::Snowflake)?.to_string(), "2022-06-28T16:07:40.105Z");
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timestamp(self, scheme: &crate::Scheme) -> Result<jiff::Timestamp, Error> {
        let d = self.decode(scheme)?;
        d.timestamp().ok_or_else(|| Error::TimeOutOfRange {
            scheme: scheme.name().into(),
            time: d.time.clone().unwrap_or_default(),
            year: 9999,
        })
    }
}

impl crate::ids::Id128 {
    /// The id's parts as `scheme` lays them out (its time, node, counter...), read from its
    /// bits without going through text: an integer id does not say which scheme made it.
    ///
    /// # Errors
    /// As [`decode`](crate::inspect::decode): a scheme of another width, bits the scheme does
    /// not define, a time field beyond any calendar date.
    ///
    /// ```
    /// use idforge::{Id128, Scheme};
    /// let id = Id128::from(1_541_815_603_606_036_480u128);
    /// let d = id.decode(&Scheme::GlobalId128)?;
    /// assert!(d.timestamp().is_some());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn decode(self, scheme: &crate::Scheme) -> Result<crate::Decoded, Error> {
        decode(u128::from(self), scheme)
    }

    /// The time `scheme` records in the id (the start of its tick).
    ///
    /// # Errors
    /// As [`Id128::decode`]; [`Error::TimeOutOfRange`] for a time past the years `jiff` holds
    /// (9999).
    ///
    /// ```
    /// use idforge::{Id128, Scheme};
    /// let id = Id128::from(1_541_815_603_606_036_480u128);
    /// assert!(id.timestamp(&Scheme::GlobalId128).is_ok());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn timestamp(self, scheme: &crate::Scheme) -> Result<jiff::Timestamp, Error> {
        let d = self.decode(scheme)?;
        d.timestamp().ok_or_else(|| Error::TimeOutOfRange {
            scheme: scheme.name().into(),
            time: d.time.clone().unwrap_or_default(),
            year: 9999,
        })
    }
}

/// Whether text has the shape of TypeID text with a prefix: a `_` and 26 characters after the
/// last one. (A bare suffix is read as TypeID text only with the scheme or the format named:
/// it has the shape of a lowercase ULID.)
///
/// ```
/// use idforge::inspect::looks_like_typeid;
/// assert!(looks_like_typeid("user_01h455vb4pex5vsknk084sn02q"));
/// assert!(!looks_like_typeid("01h455vb4pex5vsknk084sn02q")); // a bare suffix reads as a ULID
/// ```
pub fn looks_like_typeid(t: &str) -> bool {
    t.rfind('_').is_some_and(|at| t.len() - at - 1 == 26) && !text::looks_like_uuid(t)
}

/// TypeID text (`prefix_suffix`, or the bare suffix), or with a format named, the UUID in that
/// format (then with the empty prefix). With the scheme `typeid` named, a UUIDv7 suffix is
/// decoded as its layout (uuid7's: time, counter, random); recognised by its shape alone, it is
/// decoded as any version 7 UUID (time, raw `rand_a`/`rand_b`, `typeid` named in
/// [`Decoded::layouts`]): other libraries' TypeIDs have random bits where idforge's counter is.
/// The spec lets a suffix hold any UUID, which is decoded as far as its version says.
fn inspect_typeid(
    input: &str,
    trimmed: &str,
    format: Option<Format>,
    named: bool,
) -> Result<Decoded, Error> {
    let (prefix, value) = match format {
        None | Some(Format::TypeId) => text::parse_typeid(trimmed, input)?,
        Some(f) => ("", text::parse(trimmed, 128, Some(f))?),
    };
    let canonical = text::TypeIdPrefix::new(prefix)?.encode(value).to_string();
    let version = ((value >> 76) & 0xF) as u8;
    let variant = ((value >> 62) & 0b11) as u8;
    let mut d = if version == 7 && variant == 0b10 && named {
        let text = text::encode(value, 128, Format::Uuid);
        // uuid7's layout, which the typeid scheme's is (read as uuid7: not this function again).
        inspect(text.as_str(), Some(&Scheme::Uuid7), Some(Format::Uuid))?
    } else {
        inspect_uuid(input, trimmed, value).unwrap_or_else(|_| other_uuid(trimmed, value))
    };
    d.input = trimmed.to_string();
    d.scheme = Scheme::TypeId.name().into();
    d.canonical = canonical;
    d.prefix = Some(prefix.to_string());
    d.layouts = if d.layouts.is_empty() {
        Vec::new()
    } else {
        vec![Scheme::TypeId.name().to_string()]
    };
    Ok(d)
}

/// KSUID text. With the scheme named, the payload's top 32 bits are read as idforge's counter
/// and the other 96 as random bits; recognised by its shape alone, only the reference's parts
/// (timestamp, payload) are shown: other libraries' KSUIDs are random there.
fn inspect_ksuid(
    input: &str,
    trimmed: &str,
    format: Option<Format>,
    named: bool,
) -> Result<Decoded, Error> {
    use crate::schemes::ksuid::{self, Ksuid};
    if let Some(f) = format {
        return Err(Error::UnsupportedFormat {
            format: f.to_string(),
            scheme: "ksuid".into(),
            reason: "a KSUID is read from its 27 base62 characters; give no format".into(),
        });
    }
    let k: Ksuid = ksuid::parse(trimmed).map_err(|e| match e {
        Error::MalformedId { reason, .. } => malformed(input, reason),
        e => e,
    })?;
    let unix_ns = u128::from(k.unix_seconds()) * 1_000_000_000;
    let payload = k.payload_u128();
    Ok(Decoded {
        input: trimmed.to_string(),
        scheme: Scheme::Ksuid.name().into(),
        value: payload,
        bits: 128 + ksuid::TAIL_BITS,
        unix_ns: Some(unix_ns),
        time: Some(format_unix_ns(unix_ns as i128, 0)),
        node: None,
        counter: named.then_some(payload >> 96),
        random: named.then_some(payload & ((1u128 << 96) - 1)),
        version: None,
        variant: None,
        canonical: k.to_string(),
        pid: None,
        mac: None,
        rand_a: None,
        rand_b: None,
        custom_a: None,
        custom_b: None,
        custom_c: None,
        layouts: Vec::new(),
        prefix: None,
        clock_seq: None,
        gregorian: None,
        note: None,
        wide: Some(k.as_bytes().to_vec()),
    })
}

/// Bytes as uppercase hex (as the KSUID reference's `inspect` prints its payload).
fn hex_upper(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// A big-endian number of any width in decimal.
pub(crate) fn wide_decimal(b: &[u8]) -> String {
    let mut n: Vec<u8> = b.to_vec();
    let mut digits = Vec::new();
    while n.iter().any(|x| *x != 0) {
        let mut rem = 0u32;
        for x in n.iter_mut() {
            let acc = rem << 8 | u32::from(*x);
            *x = (acc / 10) as u8;
            rem = acc % 10;
        }
        digits.push(b'0' + rem as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// A UUID of any version, decoded only as far as its version and variant.
fn other_uuid(trimmed: &str, value: u128) -> Decoded {
    Decoded {
        input: trimmed.to_string(),
        scheme: "uuid".into(),
        value,
        bits: 128,
        unix_ns: None,
        time: None,
        node: None,
        counter: None,
        random: None,
        version: Some(((value >> 76) & 0xF) as u8),
        variant: Some(((value >> 62) & 0b11) as u8),
        canonical: text::encode(value, 128, Format::Uuid).to_string(),
        pid: None,
        mac: None,
        rand_a: None,
        rand_b: None,
        custom_a: None,
        custom_b: None,
        custom_c: None,
        layouts: Vec::new(),
        prefix: None,
        clock_seq: None,
        gregorian: None,
        note: None,
        wide: None,
    }
}

/// Chronicle's timestamp text: a 4-digit year and a dash.
fn nanots_time_text(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

pub use crate::time::GREGORIAN_TO_UNIX_100NS;

/// A UUID of any version of RFC 9562, decoded as far as its version defines it: the time,
/// `clock_seq` and node of versions 1 and 6, the raw fields of 7 and 8, and for the others
/// what they are (random, name-based, DCE security, nil, max) with no time. The variant must be
/// RFC 9562's (`0b10`) except for nil and max; versions 9 to 15 are not defined.
///
/// # Errors
/// [`Error::WrongVariant`] for another variant, [`Error::MalformedId`] for version 0 (other
/// than nil) and versions 9 to 15.
///
/// ```
/// // RFC 9562, Appendix A.1: a version 1 UUID.
/// let d = idforge::inspect("C232AB00-9414-11EC-B3C8-9F6BDECED846", None, None)?;
/// assert_eq!(d.time.as_deref(), Some("2022-02-22T19:22:22.0000000Z"));
/// assert_eq!((d.gregorian, d.clock_seq, d.node), (Some(0x1EC9414C232AB00), Some(0x33C8), Some(0x9F6BDECED846)));
/// # Ok::<(), idforge::Error>(())
/// ```
pub fn inspect_uuid(input: &str, trimmed: &str, value: u128) -> Result<Decoded, Error> {
    let version = ((value >> 76) & 0xF) as u8;
    let variant = ((value >> 62) & 0b11) as u8;
    let plain = |scheme: &str, note: &str| {
        let mut d = other_uuid(trimmed, value);
        d.scheme = scheme.into();
        d.note = Some(note.into());
        if value == 0 || value == u128::MAX {
            // Neither has a version or a variant: its bits are all one value.
            (d.version, d.variant) = (None, None);
        }
        d
    };
    if value == 0 {
        return Ok(plain(
            "uuid-nil",
            "the nil UUID (RFC 9562 section 5.9): all 128 bits zero; no version, no time",
        ));
    }
    if value == u128::MAX {
        return Ok(plain(
            "uuid-max",
            "the max UUID (RFC 9562 section 5.10): all 128 bits one; no version, no time",
        ));
    }
    // A version RFC 9562 does not define has no variant to require (an int such as 123 read as
    // a UUID is version 0: that is what to say of it).
    if variant != 0b10 && (1..=8).contains(&version) {
        return Err(Error::WrongVariant {
            input: clip(trimmed),
            scheme: format!("a version {version:x} UUID"),
            found: variant,
        });
    }
    match version {
        1 | 6 => Ok(inspect_gregorian(trimmed, value, version)),
        2 => Ok(plain("uuid-v2", "DCE security (RFC 9562 section 5.2 leaves it to DCE 1.1): a local domain id replaces part of the time, so no time is read")),
        3 => Ok(plain("uuid-v3", "name-based, MD5 (RFC 9562 section 5.3): a hash of a namespace and a name, which cannot be read back; no time")),
        4 => Ok(plain("uuid-v4", "random (RFC 9562 section 5.4): 122 random bits; no time, no order")),
        5 => Ok(plain("uuid-v5", "name-based, SHA-1 (RFC 9562 section 5.5): a hash of a namespace and a name, which cannot be read back; no time")),
        7 => inspect_v7(trimmed, value),
        8 => inspect_v8(trimmed, value),
        v => Err(malformed(
            input,
            format!(
                "version {v:x} is not a UUID version RFC 9562 defines (1 to 8, and the nil and max UUIDs{}); if it is an id of one of idforge's schemes, name the scheme",
                if cfg!(feature = "locality") {
                    "; idforge also reads b, the Locality UUID"
                } else {
                    ""
                }
            ),
        )),
    }
}

/// A version 1 or 6 UUID: the 60-bit count of 100 ns since 1582-10-15, the 14-bit clock
/// sequence and the 48-bit node (RFC 9562 sections 5.1 and 5.6).
///
/// ```text
///  v1: time_low(32) | time_mid(16) | ver(4) | time_high(12) | var(2) | clock_seq(14) | node(48)
///  v6: time_high(32) | time_mid(16) | ver(4) | time_low(12) | var(2) | clock_seq(14) | node(48)
/// ```
fn inspect_gregorian(trimmed: &str, value: u128, version: u8) -> Decoded {
    let ticks = crate::time::gregorian_ticks(value, version);
    let unix_100ns = i128::from(ticks) - i128::from(GREGORIAN_TO_UNIX_100NS);
    let mut d = other_uuid(trimmed, value);
    d.scheme = format!("uuid-v{version}");
    d.gregorian = Some(ticks);
    d.time = Some(format_unix_ns(unix_100ns * 100, 7));
    d.unix_ns = u128::try_from(unix_100ns * 100).ok();
    d.clock_seq = Some(((value >> 48) & 0x3FFF) as u16);
    d.node = Some(value & 0xFFFF_FFFF_FFFF);
    d.note = Some(if version == 1 {
        "time-based (RFC 9562 section 5.1): 100 ns since 1582-10-15, clock_seq, node (a MAC address or random)".into()
    } else {
        "time-ordered (RFC 9562 section 5.6): version 1's fields with the time's bits in order"
            .into()
    });
    d
}

/// A version 7 UUID of unknown layout: only what RFC 9562 defines.
fn inspect_v7(trimmed: &str, value: u128) -> Result<Decoded, Error> {
    let variant = ((value >> 62) & 0b11) as u8;
    if variant != 0b10 {
        return Err(Error::WrongVariant {
            input: clip(trimmed),
            scheme: "a version 7 UUID".into(),
            found: variant,
        });
    }
    let unix_ns = (value >> 80) * 1_000_000;
    Ok(Decoded {
        input: trimmed.to_string(),
        scheme: "uuid-v7".into(),
        value,
        bits: 128,
        unix_ns: Some(unix_ns),
        time: Some(format_unix_ns(unix_ns as i128, 3)),
        node: None,
        counter: None,
        random: None,
        version: Some(7),
        variant: Some(variant),
        canonical: text::encode(value, 128, Format::Uuid).to_string(),
        pid: None,
        mac: None,
        rand_a: Some((value >> 64) & 0xFFF),
        rand_b: Some(value & ((1u128 << 62) - 1)),
        custom_a: None,
        custom_b: None,
        custom_c: None,
        layouts: V7_LAYOUTS.iter().map(|s| s.to_string()).collect(),
        prefix: None,
        clock_seq: None,
        gregorian: None,
        note: None,
        wide: None,
    })
}

/// A version 8 UUID of unknown layout: RFC 9562 (section 5.8) defines only its version and
/// variant, so its time is not guessed; its bits are shown as the RFC names them.
fn inspect_v8(trimmed: &str, value: u128) -> Result<Decoded, Error> {
    let variant = ((value >> 62) & 0b11) as u8;
    if variant != 0b10 {
        return Err(Error::WrongVariant {
            input: clip(trimmed),
            scheme: "a version 8 UUID".into(),
            found: variant,
        });
    }
    Ok(Decoded {
        input: trimmed.to_string(),
        scheme: "uuid-v8".into(),
        value,
        bits: 128,
        unix_ns: None,
        time: None,
        node: None,
        counter: None,
        random: None,
        version: Some(8),
        variant: Some(variant),
        canonical: text::encode(value, 128, Format::Uuid).to_string(),
        pid: None,
        mac: None,
        rand_a: None,
        rand_b: None,
        custom_a: Some(value >> 80),
        custom_b: Some((value >> 64) & 0xFFF),
        custom_c: Some(value & ((1u128 << 62) - 1)),
        layouts: V8_LAYOUTS.iter().map(|s| s.to_string()).collect(),
        prefix: None,
        clock_seq: None,
        gregorian: None,
        note: None,
        wide: None,
    })
}

/// Decodes `input` as a scheme of any kind ([`crate::schemes::catalog::Kind`]), or, with no
/// kind, as whatever the text shows ([`inspect`]): the decoding half of the catalog, used by the
/// command line and the service. `host_digits` applies to nanots-host only (default 2).
///
/// ```
/// use idforge::inspect::inspect_as;
/// use idforge::schemes::catalog::Kind;
/// let d = inspect_as("2021-12-28T14:07:02.954100128", Some(&Kind::NanoTsHost), None, None)?;
/// assert_eq!((d.scheme.as_str(), d.node), ("nanots-host", Some(28)));
/// # Ok::<(), idforge::Error>(())
/// ```
///
/// # Errors
/// Those of [`inspect`], [`inspect_nanots_host`] and `inspect_locality`; a format for a
/// nanots-host id ([`Error::InvalidFormat`]): its text is decimal or a timestamp.
pub fn inspect_as(
    input: &str,
    kind: Option<&crate::schemes::catalog::Kind>,
    format: Option<Format>,
    host_digits: Option<u32>,
) -> Result<Decoded, Error> {
    use crate::schemes::catalog::Kind;
    if host_digits.is_some() && kind != Some(&Kind::NanoTsHost) {
        return Err(Error::InvalidFormat(
            "host digits apply only to nanots-host ids".into(),
        ));
    }
    match kind {
        None => inspect(input, None, format),
        Some(Kind::Layout(s)) => inspect(input, Some(s), format),
        Some(Kind::NanoTsHost) => match format {
            None | Some(Format::Dec) => inspect_nanots_host(input, host_digits.unwrap_or(2)),
            Some(f) => Err(Error::InvalidFormat(format!(
                "nanots-host ids are decimal integers or timestamps, not format `{}`",
                f.name()
            ))),
        },
        #[cfg(feature = "locality")]
        Some(Kind::Locality) => inspect_locality(input, format),
        #[cfg(not(feature = "locality"))]
        Some(Kind::Locality) => Err(Error::UnknownScheme("locality".into())),
        Some(Kind::Uuid4) => {
            let trimmed = input.trim();
            let value = text::parse(trimmed, 128, format.or(Some(Format::Uuid)))?;
            let found = ((value >> 76) & 0xF) as u8;
            if found != 4 || value == 0 || value == u128::MAX {
                return Err(Error::WrongVersion {
                    input: clip(trimmed),
                    scheme: "uuid4".into(),
                    expected: 4,
                    found,
                });
            }
            inspect_uuid(input, trimmed, value).map(|d| Decoded {
                scheme: "uuid4".into(),
                ..d
            })
        }
    }
}

/// Decodes a `nanots-host` value ([`nanots::HostDigits`]) given as an integer or as timestamp
/// text; `digits` is 2 (hosts 0..=99) or 3 (hosts 0..=999).
///
/// # Errors
///
/// [`Error::InvalidLayout`] for `digits` other than 2 or 3, [`Error::MalformedId`] or
/// [`Error::InvalidTime`] for text that is neither a 64-bit decimal integer nor timestamp text.
///
/// ```
/// let d = idforge::inspect::inspect_nanots_host("2021-12-28T14:07:02.954100128", 2).unwrap();
/// assert_eq!(d.node, Some(28));
/// assert_eq!(d.time.as_deref(), Some("2021-12-28T14:07:02.9541001Z"));
/// ```
pub fn inspect_nanots_host(input: &str, digits: u32) -> Result<Decoded, Error> {
    let trimmed = input.trim();
    let host_digits = nanots::HostDigits::new(0, digits)?;
    let value = nanots::decode_text_or_int(trimmed)?;
    let (unix_ns, host) = nanots::HostDigits::decode(value, host_digits.digits());
    Ok(Decoded {
        input: trimmed.to_string(),
        scheme: "nanots-host".into(),
        value: value as u128,
        bits: 64,
        unix_ns: Some(unix_ns as u128),
        time: Some(format_unix_ns(
            unix_ns as i128,
            digits_for_tick(host_digits.timebase().tick_ns),
        )),
        node: Some(host as u128),
        counter: None,
        random: None,
        version: None,
        variant: None,
        canonical: value.to_string(),
        pid: None,
        mac: None,
        rand_a: None,
        rand_b: None,
        custom_a: None,
        custom_b: None,
        custom_c: None,
        layouts: Vec::new(),
        prefix: None,
        clock_seq: None,
        gregorian: None,
        note: None,
        wide: None,
    })
}

#[cfg(feature = "locality")]
/// Decodes a Locality UUID ([`locality`]), in `format` or (with `None`) the detected one; other
/// UUID versions are refused with [`Error::WrongVersion`]. The counter is read as variable mode
/// writes it ([`LocalityUuid::counter_reversed`]): an id does not record its mode.
///
/// # Errors
///
/// [`Error::MalformedId`] or [`Error::AmbiguousId`] for text that is not one UUID,
/// [`Error::WrongVersion`] for a UUID of another version than b.
///
/// ```
/// let d = idforge::inspect::inspect_locality("20be0ffc-314a-bd53-7a50-013a65ca76d2", None).unwrap();
/// assert_eq!(d.counter, Some(3_488_672_514));
/// assert_eq!((d.pid, d.mac.as_deref()), (Some(12_618), Some("d537a50")));
/// assert_eq!(d.time.as_deref(), Some("2012-10-15T18:58:18.450Z"));
/// ```
pub fn inspect_locality(input: &str, format: Option<Format>) -> Result<Decoded, Error> {
    let trimmed = input.trim();
    let id = LocalityUuid::from_u128(text::parse(trimmed, 128, format)?);
    if !id.is_locality() {
        return Err(Error::WrongVersion {
            input: clip(trimmed),
            scheme: locality::NAME.into(),
            expected: locality::VERSION,
            found: id.version(),
        });
    }
    let unix_ns = u128::from(id.unix_ms()?) * 1_000_000;
    Ok(Decoded {
        input: trimmed.to_string(),
        scheme: locality::NAME.to_string(),
        value: id.as_u128(),
        bits: 128,
        unix_ns: Some(unix_ns),
        time: Some(format_unix_ns(unix_ns as i128, 3)),
        node: None,
        counter: Some(u128::from(id.counter_reversed()?)),
        random: None,
        version: Some(id.version()),
        variant: None,
        canonical: id.to_string(),
        pid: Some(u32::from(id.pid()?)),
        mac: Some(format!("{:07x}", id.mac()?)),
        rand_a: None,
        rand_b: None,
        custom_a: None,
        custom_b: None,
        custom_c: None,
        layouts: Vec::new(),
        prefix: None,
        clock_seq: None,
        gregorian: None,
        note: None,
        wide: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_recognised_by_version() {
        // A version 8 UUID does not say which layout wrote it: raw fields, no time.
        let d = inspect("018f3a5c-1d2e-8abc-9def-0123456789ab", None, None).unwrap();
        assert_eq!(d.scheme, "uuid-v8");
        assert_eq!(
            (d.unix_ns, d.time.as_deref(), d.counter),
            (None, None, None)
        );
        assert_eq!(
            (d.custom_a, d.custom_b, d.custom_c),
            (
                Some(0x018f_3a5c_1d2e),
                Some(0xabc),
                Some(0x1def_0123_4567_89ab)
            )
        );
        assert!(d.hint().unwrap().contains("scheme `uprotocol-v8`"));
        // Named, it is read as the scheme.
        let d = inspect(
            "018f3a5c-1d2e-8abc-9def-0123456789ab",
            Some(&Scheme::UProtocolV8),
            None,
        )
        .unwrap();
        assert_eq!(d.scheme, "uprotocol-v8");
        assert_eq!(d.counter, Some(0xabc));
        assert_eq!(d.node, Some(0x1def_0123_4567_89ab));
        // Version 4 says it is random; 9 is no version of RFC 9562.
        let d = inspect("018f3a5c-1d2e-4abc-9def-0123456789ab", None, None).unwrap();
        assert_eq!((d.scheme.as_str(), d.time.as_deref()), ("uuid-v4", None));
        assert!(d.note.unwrap().contains("random"));
        let e = inspect("018f3a5c-1d2e-9abc-9def-0123456789ab", None, None).unwrap_err();
        assert!(e.to_string().contains("version 9"), "{e}");
    }

    #[cfg(feature = "locality")]
    #[test]
    fn version_b_is_a_locality_uuid() {
        let d = inspect(" 20BE0FFC-314A-BD53-7A50-013A65CA76D2 ", None, None).unwrap();
        assert_eq!(d.scheme, "locality");
        assert_eq!(d.canonical, "20be0ffc-314a-bd53-7a50-013a65ca76d2");
        assert_eq!(
            (d.counter, d.pid, d.version),
            (Some(3_488_672_514), Some(12_618), Some(0xb))
        );
        assert_eq!(d.mac.as_deref(), Some("d537a50"));
        assert_eq!(d.unix_ms(), Some(1_350_327_498_450));
        let hex = inspect_locality("20be0ffc314abd537a50013a65ca76d2", Some(Format::Hex)).unwrap();
        assert_eq!(
            hex,
            Decoded {
                input: hex.input.clone(),
                ..d
            }
        );
        let e = inspect_locality("018f3a5c-1d2e-8abc-9def-0123456789ab", None).unwrap_err();
        assert!(
            matches!(
                e,
                Error::WrongVersion {
                    expected: 0xb,
                    found: 8,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(inspect_locality("20be0ffc-314a-bd53-7a50-013a65ca76dz", None).is_err());
    }

    #[test]
    fn integers_need_a_scheme() {
        let e = inspect("1541815603606036480", None, None).unwrap_err();
        assert!(e.to_string().contains("an integer id does not say"), "{e}");
        // Text that is not an integer is not called one.
        let e = inspect("garbage", None, None).unwrap_err().to_string();
        assert!(
            !e.contains("integer") && e.contains("not a UUID nor TypeID text"),
            "{e}"
        );
        assert!(e.contains("scheme `ulid`"), "{e}");
        let d = inspect("1541815603606036480", Some(&Scheme::Snowflake), None).unwrap();
        assert_eq!(d.unix_ms(), Some(1_656_432_460_105));
        assert_eq!(d.node, Some((1_541_815_603_606_036_480u128 >> 12) & 0x3FF));
    }

    #[test]
    fn wrong_version_and_variant_are_typed() {
        let v8 = "018f3a5c-1d2e-8abc-9def-0123456789ab";
        assert!(matches!(
            inspect(v8, Some(&Scheme::Uuid7), None),
            Err(Error::WrongVersion {
                expected: 7,
                found: 8,
                ..
            })
        ));
        let bad_variant = "018f3a5c-1d2e-7abc-cdef-0123456789ab";
        assert!(matches!(
            inspect(bad_variant, Some(&Scheme::UProtocol), None),
            Err(Error::WrongVariant { found: 0b11, .. })
        ));
    }

    #[test]
    fn bits_outside_the_layout_are_refused() {
        // Snowflake's top bit is always 0.
        let e = inspect(&(1u64 << 63).to_string(), Some(&Scheme::Snowflake), None).unwrap_err();
        assert!(e.to_string().contains("bit 63"), "{e}");
        // global-id-128 uses the low 108 bits.
        let e = inspect(
            &(1u128 << 120).to_string(),
            Some(&Scheme::GlobalId128),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("bit 120"), "{e}");
        assert!(inspect(
            &(1u128 << 100).to_string(),
            Some(&Scheme::GlobalId128),
            None
        )
        .is_ok());
    }

    #[test]
    fn sonyflake_time_has_two_fraction_digits() {
        let l = Scheme::Sonyflake.layout();
        let id = l.encode(5, 100, 1, 0);
        let d = inspect(&id.to_string(), Some(&Scheme::Sonyflake), None).unwrap();
        assert_eq!(d.time.as_deref(), Some("2014-09-01T00:00:01.00Z"));
        assert_eq!((d.node, d.counter), (Some(5), Some(1)));
    }
    #[test]
    fn a_v7_uuid_without_a_scheme_is_not_given_a_counter() {
        // `idforge gen uprotocol --at 2024-10-11T09:40:25.767Z`: its first id has counter 0,
        // but read as uuid7 it showed counter=4 (random bits of rand_b).
        let id = "01927af3-6a27-7000-91db-9862765ae4bc";
        let d = inspect(id, None, None).unwrap();
        assert_ne!(d.scheme, "uuid7");
        assert_eq!(d.counter, None);
        assert_eq!(d.unix_ms(), Some(1_728_639_625_767));
        assert_eq!(d.time.as_deref(), Some("2024-10-11T09:40:25.767Z"));
        assert_eq!((d.version, d.variant), (Some(7), Some(0b10)));
        let dbg = format!("{d:?}");
        assert!(dbg.contains("rand_a: Some(0)"), "{dbg}");
        assert!(dbg.contains("rand_b: Some(1286789667204293820)"), "{dbg}");
        let u = inspect(id, Some(&Scheme::UProtocol), None).unwrap();
        assert_eq!((u.scheme.as_str(), u.counter), ("uprotocol", Some(0)));
        let s = inspect(id, Some(&Scheme::Uuid7), None).unwrap();
        assert_eq!((s.scheme.as_str(), s.counter), ("uuid7", Some(4)));
    }

    #[test]
    fn a_hex_id_made_of_digits_is_ambiguous() {
        // `idforge gen snowflake --node 0 --at 2024-10-11T09:40:25.767Z --format hex`
        let e = inspect("1999999999800000", Some(&Scheme::Snowflake), None).unwrap_err();
        assert!(e.to_string().contains("ambiguous"), "{e}");
        let d = inspect(
            "1999999999800000",
            Some(&Scheme::Snowflake),
            Some(Format::Hex),
        )
        .unwrap();
        assert_eq!(d.time.as_deref(), Some("2024-10-11T09:40:25.767Z"));
        assert_eq!((d.node, d.counter), (Some(0), Some(0)));
        // nanots reads decimal and timestamp text, and hex too; 16 digits are ambiguous.
        let e = inspect("1999999999800000", Some(&Scheme::NanoTs), None).unwrap_err();
        assert!(e.to_string().contains("ambiguous"), "{e}");
        assert!(inspect("17f5d6a8b2c3e400", Some(&Scheme::NanoTs), None).is_ok());
    }

    #[test]
    fn text_a_user_meets_reads_or_is_refused_with_the_way_out() {
        // `uuid.hex` / `Uuid::simple`: 32 hex digits.
        let d = inspect("017f22e279b07cc398c4dc0c0c07398f", None, None).unwrap();
        assert_eq!(
            (d.scheme.as_str(), d.unix_ms()),
            ("uuid-v7", Some(1_645_557_742_000))
        );
        // 32 decimal digits stay an integer that needs its scheme.
        let e = inspect("12345678901234567890123456789012", None, None).unwrap_err();
        assert!(e.to_string().contains("name the scheme"), "{e}");
        // `idforge gen typeid` without a prefix: the same text as a ULID.
        let e = inspect("01m8gxfzvpe008005k2jj791de", None, None).unwrap_err();
        assert!(
            e.to_string().contains("scheme `ulid` or scheme `typeid`"),
            "{e}"
        );
        assert!(inspect("01m8gxfzvpe008005k2jj791de", Some(&Scheme::TypeId), None).is_ok());
        // 123 as a UUID is version 0: no such version, rather than a variant it lacks.
        let e = inspect("00000000-0000-0000-0000-00000000007b", None, None).unwrap_err();
        assert!(
            e.to_string().contains("version 0 is not a UUID version"),
            "{e}"
        );
        assert!(!e.to_string().contains("variant"), "{e}");
    }

    #[test]
    fn a_ulid_s_counter_comes_with_a_hint_that_it_is_idforge_s_layout() {
        // The ULID spec's own example: its 80 bits after the time are random.
        let d = inspect("01ARZ3NDEKTSV4RRFFQ69G5FAV", Some(&Scheme::Ulid), None).unwrap();
        assert_eq!(d.counter, Some(54902));
        let h = d.hint().expect("a hint");
        assert!(
            h.contains("80 random bits") && h.contains("idforge's layout"),
            "{h}"
        );
    }

    #[test]
    fn digits_of_a_canonical_width_are_ambiguous_for_tsid_and_objectid() {
        // `idforge gen tsid --node 1 --format dec --at 2020-01-01T00:10:00Z`: 13 digits, the
        // width of TSID's base32 text; read as base32 it was a made-up 2038 id.
        let e = inspect("2516582404096", Some(&Scheme::Tsid), None).unwrap_err();
        assert!(
            e.to_string().contains("ambiguous") && e.to_string().contains("format `dec`"),
            "{e}"
        );
        let d = inspect("2516582404096", Some(&Scheme::Tsid), Some(Format::Dec)).unwrap();
        assert_eq!(d.time.as_deref(), Some("2020-01-01T00:10:00.000Z"));
        assert_eq!(d.node, Some(1));
        // Base32 text with a letter, and decimal of another width, read as before.
        assert!(inspect("0SC6VNHCW0400", Some(&Scheme::Tsid), None).is_ok());
        assert!(inspect("914472257630244864", Some(&Scheme::Tsid), None).is_ok());
        // `idforge gen objectid --node 1 --format dec --at 1970-01-01T10:00:00Z`: 24 digits,
        // the width of ObjectId's hex text; read as hex it was a made-up 2024 id.
        let e = inspect("664082786653543874953216", Some(&Scheme::ObjectId), None).unwrap_err();
        assert!(e.to_string().contains("ambiguous"), "{e}");
        let d = inspect(
            "664082786653543874953216",
            Some(&Scheme::ObjectId),
            Some(Format::Dec),
        )
        .unwrap();
        assert_eq!(d.time.as_deref(), Some("1970-01-01T10:00:00Z"));
        assert_eq!(d.hint(), None);
        // Hex with a letter is ObjectId's own text.
        assert!(inspect("507f1f77bcf86cd799439011", Some(&Scheme::ObjectId), None).is_ok());
        // 24 zeros read as 0 either way: not ambiguous.
        assert_eq!(
            inspect("000000000000000000000000", Some(&Scheme::ObjectId), None)
                .unwrap()
                .value,
            0
        );
    }

    #[test]
    fn uuid_text_forms_and_lengths() {
        let d = inspect("{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}", None, None).unwrap();
        assert_eq!(d.unix_ms(), Some(1_645_557_742_000));
        #[cfg(feature = "locality")]
        {
            let d = inspect("urn:uuid:20be0ffc-314a-bd53-7a50-013a65ca76d2", None, None).unwrap();
            assert_eq!(d.scheme, "locality");
        }
        let d = inspect("urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f", None, None).unwrap();
        assert_eq!(d.unix_ms(), Some(1_645_557_742_000));
        let e = inspect("017f22e2-79b0-7cc3-98c4-dc0c0c07398", None, None).unwrap_err();
        assert!(e.to_string().contains("a UUID has 36 characters"), "{e}");
    }
}
