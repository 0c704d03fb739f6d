//! `idforge.<platform>.node`: the Node.js addon over the idforge engine (napi-rs). Every
//! generator is opened through the library's `schemes::open` and placed by its
//! `schemes::placement` (the rules the Python package follows: host-wide by default), every id
//! is decoded by its `inspect`; this crate only converts between JavaScript values and the
//! library's. `index.js` wraps it: it checks arguments, turns errors into the package's `Error`
//! subclasses and `inspect`'s times into `Date`s.
//!
//! An error crosses to JavaScript with `code` set to `Family:ERR_IDFORGE_VARIANT` (the library's
//! `Error::family` and `Error::variant_name`), which `index.js` splits into the class and the
//! stable `code`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::{ClockChoice, OpenOptions, Opened, TextFormat};
use idforge::schemes::placement::{self, Placement};
use idforge::text::Format;
use idforge::{OnClockBehind, OnExhausted, RandomSource};
use napi::bindgen_prelude::{BigInt, Either, FromNapiValue, ToNapiValue, TypeName, ValueType};
use napi::{sys, Status};
use napi_derive::napi;

type JsErr = napi::Error<String>;
type Res<T> = std::result::Result<T, JsErr>;

// ---------------------------------------------------------------------------------------------
// Errors

/// The library's names for its settings (Rust items) as this package's options, most specific
/// first, so that a message says what to pass here (`{ state: PATH }`).
const SETTINGS: [(&str, &str); 22] = [
    (
        "(`StateOptions::shared_mode`, 666 here",
        "({ stateMode: 0o666 } here",
    ),
    (
        "(`StateOptions::shared_mode`, 660 here",
        "({ stateMode: 0o660 } here",
    ),
    (
        "a fixed clock (`at`) with `shared` true",
        "at with shared: true",
    ),
    ("`shared` false", "shared: false"),
    ("`shared` true", "shared: true"),
    ("add `state`", "add { state: PATH }"),
    ("`state`", "state"),
    ("`durable` or `state_mode`", "durable or stateMode"),
    ("`state_mode`", "stateMode"),
    ("as the `node` setting", "as the node option ({ node: N })"),
    ("give the `node` option", "give the node option"),
    ("give no `node` setting", "leave out the node option"),
    (
        "(`StateOptions::path`, or IDFORGE_STATE_DIR)",
        "({ state: PATH }, or IDFORGE_STATE_DIR)",
    ),
    ("(`StateOptions::path`)", "({ state: PATH })"),
    (
        "(`StateOptions::shared_mode`, e.g. 660)",
        "({ stateMode: 0o660 }, for instance)",
    ),
    ("`StateOptions::shared_mode`", "stateMode"),
    (
        "(`Policy`: `on_exhausted`, `max_lead`, `on_clock_behind`)",
        "(policy: { onExhausted, maxLead, onClockBehind })",
    ),
    ("(`Policy::max_lead`)", "(policy: { maxLead: SECONDS })"),
    (
        "(`OnClockBehind::Wait`)",
        "(policy: { onClockBehind: 'wait' })",
    ),
    ("(`at`)", "(at)"),
    ("(Policy::UNBOUNDED)", "(an unbounded lead)"),
    (
        "`Scheme::Custom(Layout::parse_spec(spec)?)`",
        "`new Generator('custom', { layout: SPEC })`",
    ),
];

/// The stable `code` of an error: `ERR_IDFORGE_` and the variant's name in capitals
/// (`StateFile.Foreign` is `ERR_IDFORGE_STATE_FILE_FOREIGN`).
fn error_code(e: &idforge::Error) -> String {
    let mut code = String::from("ERR_IDFORGE");
    let mut prev_lower = false;
    for c in e.variant_name().chars() {
        if c == '.' {
            code.push('_');
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() {
            if prev_lower || code.ends_with("ERR_IDFORGE") {
                code.push('_');
            }
            prev_lower = false;
        } else {
            prev_lower = true;
        }
        code.push(c.to_ascii_uppercase());
    }
    code
}

fn js_error(e: idforge::Error) -> napi::Error<String> {
    let mut msg = e.to_string();
    for (from, to) in SETTINGS {
        msg = msg.replace(from, to);
    }
    napi::Error::new(format!("{}:{}", e.family(), error_code(&e)), msg)
}

/// Who chose where a host-wide generator's sequence lives, for what its errors advise.
#[derive(Clone, Copy)]
enum Placed {
    /// The caller (`state`, `shared: true`).
    Asked,
    /// Nobody: `new Generator(scheme)`, host-wide by default.
    Implicit,
    /// A module function (`uuid7()`), which takes no options.
    Module,
}

/// As `js_error`, for a host-wide generator: a state file error nobody asked for says why there
/// is a file and how to do without it, and one of a module function names what it can change
/// (the environment, not options it does not take).
fn placed_error(e: idforge::Error, how: Placed) -> napi::Error<String> {
    let hint = placement::hint_applies(&e);
    let env_hint = placement::env_state_hint(&e);
    let mut e = match how {
        Placed::Module => {
            let mut err = js_error(e);
            err.reason = err
                .reason
                .replace(
                    "({ state: PATH }, or IDFORGE_STATE_DIR)",
                    "(IDFORGE_STATE_DIR)",
                )
                .replace("({ state: PATH })", "(IDFORGE_STATE_DIR)");
            err
        }
        _ => js_error(e),
    };
    if hint {
        let how_not = match how {
            Placed::Module => Some("a Generator with { shared: false }"),
            Placed::Implicit => Some("{ shared: false }"),
            Placed::Asked => None,
        };
        if let Some(h) = how_not {
            e.reason = format!("{} {}", e.reason, placement::shared_hint(h));
        }
    }
    if let Some(h) = env_hint {
        e.reason = format!("{} {h}", e.reason);
    }
    e
}

/// A value out of range (`RangeError`, `ERR_OUT_OF_RANGE` in `index.js`).
fn range_error(msg: impl Into<String>) -> napi::Error<String> {
    napi::Error::new("RangeError:ERR_OUT_OF_RANGE".to_string(), msg.into())
}

/// An argument error (a value `index.js` let through but the library refuses to read).
fn arg_error(msg: impl Into<String>) -> napi::Error<String> {
    napi::Error::new("TypeError:ERR_INVALID_ARG_VALUE".to_string(), msg.into())
}

trait OrThrow<T> {
    fn or_throw(self) -> Res<T>;
}

impl<T> OrThrow<T> for Result<T, idforge::Error> {
    fn or_throw(self) -> Result<T, JsErr> {
        self.map_err(js_error)
    }
}

// ---------------------------------------------------------------------------------------------
// Values

/// ASCII text (every id's text is ASCII) made into a JavaScript string without a heap copy or
/// UTF-8 decoding (`napi_create_string_latin1`).
pub struct Ascii<T: AsciiText>(T);

/// Text made of ASCII bytes.
pub trait AsciiText {
    fn ascii(&self) -> &[u8];
}

impl AsciiText for String {
    fn ascii(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsciiText for idforge::text::Text {
    fn ascii(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl<T: AsciiText> TypeName for Ascii<T> {
    fn type_name() -> &'static str {
        "String"
    }
    fn value_type() -> ValueType {
        ValueType::String
    }
}

impl<T: AsciiText> ToNapiValue for Ascii<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let bytes = val.0.ascii();
        let mut out = std::ptr::null_mut();
        // SAFETY: `env` is the live environment of this call (the caller's contract); the bytes
        // are valid for `len` and copied by the call.
        let status = unsafe {
            sys::napi_create_string_latin1(
                env,
                bytes.as_ptr().cast(),
                bytes.len() as isize,
                &mut out,
            )
        };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::new(
                Status::from(status),
                "cannot make a string".to_string(),
            ));
        }
        Ok(out)
    }
}

/// The memory of a typed array (a `Buffer`, `Uint8Array` or `BigUint64Array`) that `index.js`
/// made, to fill in place: read with `napi_get_typedarray_info` alone. napi-rs's own typed
/// array arguments also take a reference and register a finalizer, about a microsecond a call,
/// which a batch of a thousand ids would pay once per batch for nothing.
pub struct Filling<T> {
    data: *mut T,
    len: usize,
}

/// What a `Filling` of `T` accepts (napi's typed array type numbers).
pub trait Element: Sized {
    const KIND: i32;
    const NAME: &'static str;
}

impl Element for u8 {
    const KIND: i32 = sys::TypedarrayType::uint8_array;
    const NAME: &'static str = "a Buffer or Uint8Array";
}

impl Element for u64 {
    const KIND: i32 = sys::TypedarrayType::biguint64_array;
    const NAME: &'static str = "a BigUint64Array";
}

impl<T> Filling<T> {
    fn slice(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `data` and `len` describe the typed array's elements (napi adjusts `data` by
        // the view's byte offset); JavaScript runs on this thread only once this call returns,
        // and the array, an argument of the call, lives until then.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }
}

impl<T: Element> TypeName for Filling<T> {
    fn type_name() -> &'static str {
        T::NAME
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl<T: Element> FromNapiValue for Filling<T> {
    unsafe fn from_napi_value(env: sys::napi_env, val: sys::napi_value) -> napi::Result<Self> {
        let mut is_typed = false;
        // SAFETY: `env` and `val` are the live arguments of this call (the caller's contract).
        let status = unsafe { sys::napi_is_typedarray(env, val, &mut is_typed) };
        if status != sys::Status::napi_ok || !is_typed {
            return Err(napi::Error::new(
                Status::InvalidArg,
                format!("expected {}", T::NAME),
            ));
        }
        let (mut kind, mut len, mut data) = (0, 0usize, std::ptr::null_mut());
        let (mut buffer, mut offset) = (std::ptr::null_mut(), 0usize);
        // SAFETY: as above; `val` is a typed array.
        let status = unsafe {
            sys::napi_get_typedarray_info(
                env,
                val,
                &mut kind,
                &mut len,
                &mut data,
                &mut buffer,
                &mut offset,
            )
        };
        if status != sys::Status::napi_ok || kind != T::KIND {
            return Err(napi::Error::new(
                Status::InvalidArg,
                format!("expected {}", T::NAME),
            ));
        }
        Ok(Filling {
            data: data.cast(),
            len,
        })
    }
}

fn bigint(v: u128) -> BigInt {
    BigInt::from(v)
}

fn u128_of(b: &BigInt) -> Result<u128, JsErr> {
    if b.sign_bit || b.words.len() > 2 && b.words[2..].iter().any(|&w| w != 0) {
        return Err(arg_error(
            "an id is a non-negative integer of at most 128 bits",
        ));
    }
    let lo = b.words.first().copied().unwrap_or(0);
    let hi = b.words.get(1).copied().unwrap_or(0);
    Ok((u128::from(hi) << 64) | u128::from(lo))
}

fn u64_of(b: &BigInt, what: &str) -> Result<u64, JsErr> {
    let (negative, v, lossless) = b.get_u64();
    if negative || !lossless {
        return Err(arg_error(format!(
            "{what} must be an integer from 0 to 2**64 - 1"
        )));
    }
    Ok(v)
}

// ---------------------------------------------------------------------------------------------
// Generator

/// The policy of a generator; unset fields keep the scheme's default.
#[napi(object)]
pub struct PolicyOptions {
    /// "wait" or "run-ahead".
    pub on_exhausted: Option<String>,
    /// Seconds ids may run ahead of the wall clock.
    pub max_lead: Option<f64>,
    /// "fail" or "wait".
    pub on_clock_behind: Option<String>,
}

/// The options of `new Generator(scheme, options)`, already checked by `index.js`.
#[napi(object)]
pub struct GeneratorOptions {
    pub node: Option<BigInt>,
    pub shared: Option<bool>,
    pub state: Option<String>,
    pub clock: Option<String>,
    pub policy: Option<PolicyOptions>,
    pub layout: Option<String>,
    pub format: Option<String>,
    pub prefix: Option<String>,
    pub host_digits: Option<u32>,
    /// RFC 3339 text.
    pub at: Option<String>,
    pub fast_random: Option<bool>,
    pub durable: Option<bool>,
    pub state_mode: Option<u32>,
    pub pid: Option<BigInt>,
    pub mac_fragment: Option<BigInt>,
    pub sequential: Option<bool>,
}

/// What `next()` returns.
#[derive(Clone, Copy)]
enum Out {
    /// A string in the generator's text format (UUIDs, ULID, TypeID, ... or a format asked for).
    Text,
    /// A `bigint` (schemes written in decimal).
    Int,
}

/// A generator of any idforge scheme, held by a JavaScript external (`Handle`) that
/// `Generator` in `index.js` keeps in a private field.
pub struct NativeGenerator {
    g: Arc<Opened>,
    out: Out,
    text: TextFormat,
    width: u32,
}

fn clock_choice(s: &str) -> Result<ClockChoice, JsErr> {
    Ok(match s {
        "auto" => ClockChoice::Auto,
        "precise" => ClockChoice::Precise,
        "counter" => ClockChoice::Counter,
        "ticker" => ClockChoice::Ticker,
        _ => {
            return Err(arg_error(format!(
                "clock {s:?}: use 'auto', 'precise', 'counter' or 'ticker'"
            )))
        }
    })
}

fn policy_of(kind: &Kind, p: &PolicyOptions) -> Result<idforge::Policy, JsErr> {
    let mut base = kind.default_policy();
    if let Some(e) = &p.on_exhausted {
        base.on_exhausted = match e.as_str() {
            "wait" => OnExhausted::Wait,
            "run-ahead" => OnExhausted::RunAhead,
            _ => {
                return Err(arg_error(format!(
                    "policy.onExhausted {e:?}: use 'wait' or 'run-ahead'"
                )))
            }
        };
    }
    if let Some(l) = p.max_lead {
        base.max_lead = Duration::try_from_secs_f64(l).map_err(|_| {
            range_error(format!(
                "policy.maxLead {l}: give a non-negative number of seconds, at most {}",
                Duration::MAX.as_secs()
            ))
        })?;
    }
    if let Some(b) = &p.on_clock_behind {
        base.on_clock_behind = match b.as_str() {
            "fail" => OnClockBehind::Fail,
            "wait" => OnClockBehind::Wait,
            _ => {
                return Err(arg_error(format!(
                    "policy.onClockBehind {b:?}: use 'fail' or 'wait'"
                )))
            }
        };
    }
    Ok(base)
}

impl NativeGenerator {
    fn open(
        kind: &Kind,
        opts: &OpenOptions,
        format: Option<&str>,
        prefix: Option<&str>,
    ) -> Result<NativeGenerator, idforge::Error> {
        // Host-wide generators of the same options share one mapping of their file.
        let g = placement::open_reused(kind, opts)?;
        let text = g.text_format_prefixed(format, prefix)?;
        let out = if format.is_none()
            && prefix.is_none()
            && !g.is_uuid()
            && text == TextFormat::Plain(Format::Dec)
        {
            Out::Int
        } else {
            Out::Text
        };
        let width = g.bits().div_ceil(8);
        Ok(NativeGenerator {
            g,
            out,
            text,
            width,
        })
    }

    fn text_of(&self, id: u128) -> Either<Ascii<String>, BigInt> {
        match self.out {
            Out::Int => Either::B(bigint(id)),
            Out::Text => Either::A(Ascii(self.g.render(id, self.text))),
        }
    }

    fn ids(&self, n: u32) -> Result<Vec<u128>, JsErr> {
        let mut v = Vec::new();
        v.try_reserve_exact(n as usize).map_err(|_| {
            arg_error(format!(
                "{n} ids do not fit in memory: take fewer at a time"
            ))
        })?;
        self.g.take(u64::from(n), |id| v.push(id)).or_throw()?;
        Ok(v)
    }
}

impl NativeGenerator {
    pub fn new(scheme: String, o: GeneratorOptions) -> Result<Self, JsErr> {
        let kind = Kind::from_name(&scheme, o.layout.as_deref()).or_throw()?;
        if o.at.is_some() && o.clock.as_deref().is_some_and(|c| c != "auto") {
            return Err(arg_error(
                "at fixes the clock, so clock would be ignored: give one or the other",
            ));
        }
        let at_ns =
            o.at.as_deref()
                .map(idforge::time::parse_rfc3339)
                .transpose()
                .or_throw()?;
        let mut opts = OpenOptions {
            node: o.node.as_ref().map(|n| u64_of(n, "node")).transpose()?,
            host_digits: o.host_digits,
            pid: o.pid.as_ref().map(|n| u64_of(n, "pid")).transpose()?,
            mac_fragment: o
                .mac_fragment
                .as_ref()
                .map(|n| u64_of(n, "macFragment"))
                .transpose()?,
            sequential: o.sequential.unwrap_or(false),
            at_ns,
            clock: clock_choice(o.clock.as_deref().unwrap_or("auto"))?,
            random: if o.fast_random.unwrap_or(false) {
                RandomSource::Fast
            } else {
                RandomSource::Secure
            },
            ..OpenOptions::default()
        };
        if let Some(p) = &o.policy {
            if at_ns.is_some() {
                // As `idforge gen --at` refuses --max-lead and friends.
                return Err(js_error(idforge::Error::NotApplicable {
                    scheme: kind.name().to_string(),
                    setting: "a policy with a fixed clock (`at`)".into(),
                    why: "a fixed clock runs with no bound on the lead (Policy::UNBOUNDED)".into(),
                }));
            }
            opts.policy = Some(policy_of(&kind, p)?);
        }
        // Host-wide unless asked otherwise (the library's `Placement`, which the Python package
        // shares): cluster and PM2 workers, and children started by child_process.fork, then
        // draw from one sequence.
        let asked = o.shared.is_some() || o.state.is_some();
        let placed = Placement {
            shared: o.shared,
            state: o.state.map(PathBuf::from),
            state_mode: o.state_mode,
            durable: o.durable.unwrap_or(false),
        }
        .apply(&kind, &mut opts, o.policy.is_some());
        let how = if asked {
            Placed::Asked
        } else {
            Placed::Implicit
        };
        let placed = placed.map_err(|e| placed_error(e, how))?;
        let opened = NativeGenerator::open(&kind, &opts, o.format.as_deref(), o.prefix.as_deref());
        match placed {
            Some(_) => opened.map_err(|e| placed_error(e, how)),
            None => opened.map_err(js_error),
        }
    }

    /// The next id: a string, or a `bigint` for schemes written in decimal.
    pub fn next(&self) -> Result<Either<Ascii<String>, BigInt>, JsErr> {
        Ok(self.text_of(self.g.next().or_throw()?))
    }

    /// The next id as text in the generator's format.
    pub fn next_string(&self) -> Result<Ascii<String>, JsErr> {
        Ok(Ascii(self.g.render(self.g.next().or_throw()?, self.text)))
    }

    /// The next id as a `bigint`.
    pub fn next_big_int(&self) -> Result<BigInt, JsErr> {
        Ok(bigint(self.g.next().or_throw()?))
    }

    /// `n` ids as an array of what `next()` returns.
    pub fn take(&self, n: u32) -> Result<Vec<Either<Ascii<String>, BigInt>>, JsErr> {
        Ok(self
            .ids(n)?
            .into_iter()
            .map(|id| self.text_of(id))
            .collect())
    }

    /// `n` ids as an array of strings.
    pub fn take_strings(&self, n: u32) -> Result<Vec<Ascii<String>>, JsErr> {
        Ok(self
            .ids(n)?
            .into_iter()
            .map(|id| Ascii(self.g.render(id, self.text)))
            .collect())
    }

    /// `n` ids as an array of `bigint`s.
    pub fn take_big_ints(&self, n: u32) -> Result<Vec<BigInt>, JsErr> {
        Ok(self.ids(n)?.into_iter().map(bigint).collect())
    }

    /// Fills `buf` (a `Buffer` or `Uint8Array` that `index.js` allocated, `width` bytes an id)
    /// with ids, each big-endian, in issue order. Filling a buffer made in JavaScript costs
    /// less than handing one over from Rust (an external buffer: about 1.7 µs a call).
    pub fn fill_buffer(&self, mut buf: Filling<u8>) -> Result<(), JsErr> {
        fill_bytes(&self.g, self.width as usize, buf.slice()).or_throw()
    }

    /// Fills `ids` (a `BigUint64Array`) with ids of at most 64 bits, in issue order.
    pub fn fill_big_uint64(&self, mut ids: Filling<u64>) -> Result<(), JsErr> {
        if self.g.bits() > 64 {
            return Err(arg_error(format!(
                "{} ids have {} bits, more than a BigUint64Array holds: use takeBuffer",
                self.g.name(),
                self.g.bits()
            )));
        }
        let mut slots = ids.slice().iter_mut();
        self.g
            .take(slots.len() as u64, |id| {
                if let Some(s) = slots.next() {
                    *s = id as u64;
                }
            })
            .or_throw()
    }

    /// An id (a `bigint`) as text in the generator's format.
    pub fn format(&self, id: BigInt) -> Result<Ascii<String>, JsErr> {
        let v = u128_of(&id)?;
        let bits = self.g.bits();
        if bits < 128 && v >> bits != 0 {
            return Err(arg_error(format!(
                "{v} does not fit in the {bits} bits of a {} id",
                self.g.name()
            )));
        }
        Ok(Ascii(self.g.render(v, self.text)))
    }

    pub fn scheme(&self) -> String {
        self.g.name().to_string()
    }

    pub fn bits(&self) -> u32 {
        self.g.bits()
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    /// What `next()` returns: "string" or "bigint".
    pub fn returns(&self) -> &'static str {
        match self.out {
            Out::Text => "string",
            Out::Int => "bigint",
        }
    }

    pub fn is_uuid(&self) -> bool {
        self.g.is_uuid()
    }

    pub fn state_path(&self) -> Option<String> {
        self.g.state_path().map(|p| p.display().to_string())
    }

    /// How far the last id is ahead of the wall clock, in seconds.
    pub fn lead(&self) -> f64 {
        self.g.lead().as_secs_f64()
    }
}

// ---------------------------------------------------------------------------------------------
// Handles: a generator behind a JavaScript external

/// The type tag of the externals that hold a `NativeGenerator`, drawn at random when this copy
/// of the addon is loaded: an external made by other code, or by another copy of this addon (a
/// second version in one process, whose generators may be laid out differently), is refused,
/// never read as a generator.
fn generator_tag() -> &'static sys::napi_type_tag {
    static TAG: OnceLock<sys::napi_type_tag> = OnceLock::new();
    TAG.get_or_init(|| {
        let r = idforge::schemes::uuid4::uuid4();
        sys::napi_type_tag {
            lower: r as u64,
            upper: (r >> 64) as u64,
        }
    })
}

/// A new generator, handed to JavaScript as an external that owns it: freed when the external
/// is collected. Not a napi-rs class: a class method call pays napi-rs's borrow bookkeeping (a
/// hash map and an allocation), about 400 ns, eight times what making a UUIDv7 costs.
pub struct Handle(NativeGenerator);

impl TypeName for Handle {
    fn type_name() -> &'static str {
        "Generator handle"
    }
    fn value_type() -> ValueType {
        ValueType::External
    }
}

impl ToNapiValue for Handle {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        unsafe extern "C" fn finalize(
            _env: sys::napi_env,
            data: *mut std::ffi::c_void,
            _hint: *mut std::ffi::c_void,
        ) {
            // SAFETY: `data` is the box made below, finalized once, when the external is
            // collected: no call that reads it is running (it would hold the external).
            drop(unsafe { Box::from_raw(data.cast::<NativeGenerator>()) });
        }
        let data = Box::into_raw(Box::new(val.0));
        let mut out = std::ptr::null_mut();
        // SAFETY: `env` is the live environment of this call; the external owns `data`, which
        // `finalize` frees.
        let status = unsafe {
            sys::napi_create_external(
                env,
                data.cast(),
                Some(finalize),
                std::ptr::null_mut(),
                &mut out,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: the external was not made: `data` is still only ours.
            drop(unsafe { Box::from_raw(data) });
            return Err(napi::Error::new(
                Status::from(status),
                "cannot make a generator handle".to_string(),
            ));
        }
        // SAFETY: `out` is the external just made.
        let status = unsafe { sys::napi_type_tag_object(env, out, generator_tag()) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::new(
                Status::from(status),
                "cannot tag a generator handle".to_string(),
            ));
        }
        Ok(out)
    }
}

/// A generator handle received as an argument: the generator, for the length of the call.
pub struct Gen(&'static NativeGenerator);

impl TypeName for Gen {
    fn type_name() -> &'static str {
        "Generator handle"
    }
    fn value_type() -> ValueType {
        ValueType::External
    }
}

impl FromNapiValue for Gen {
    unsafe fn from_napi_value(env: sys::napi_env, val: sys::napi_value) -> napi::Result<Self> {
        let refused = || {
            napi::Error::new(
                Status::InvalidArg,
                "expected a generator handle (made by openGenerator)".to_string(),
            )
        };
        let mut kind = 0;
        // SAFETY: `env` and `val` are the live arguments of this call.
        if unsafe { sys::napi_typeof(env, val, &mut kind) } != sys::Status::napi_ok
            || kind != sys::ValueType::napi_external
        {
            return Err(refused());
        }
        let mut tagged = false;
        // SAFETY: as above; `val` is an external.
        if unsafe { sys::napi_check_object_type_tag(env, val, generator_tag(), &mut tagged) }
            != sys::Status::napi_ok
            || !tagged
        {
            return Err(refused());
        }
        let mut data = std::ptr::null_mut();
        // SAFETY: as above.
        if unsafe { sys::napi_get_value_external(env, val, &mut data) } != sys::Status::napi_ok
            || data.is_null()
        {
            return Err(refused());
        }
        // SAFETY: a tagged external holds a live `NativeGenerator` (made by `Handle`), freed only
        // when the external is collected, which it cannot be while it is an argument of this
        // call. Only shared references are made: `Opened` is `Sync`.
        Ok(Gen(unsafe { &*data.cast::<NativeGenerator>() }))
    }
}

/// What does not change over a generator's life, read once by `index.js`.
#[napi(object)]
pub struct GeneratorInfo {
    pub scheme: String,
    pub bits: u32,
    pub width: u32,
    /// What `next()` returns: "string" or "bigint".
    pub returns: String,
    pub is_uuid: bool,
    pub state_path: Option<String>,
}

/// Opens a generator of `scheme` (the options checked by `index.js`).
#[napi]
pub fn open_generator(scheme: String, options: GeneratorOptions) -> Result<Handle, JsErr> {
    NativeGenerator::new(scheme, options).map(Handle)
}

#[napi]
pub fn gen_info(g: Gen) -> GeneratorInfo {
    let g = g.0;
    GeneratorInfo {
        scheme: g.scheme(),
        bits: g.bits(),
        width: g.width(),
        returns: g.returns().to_string(),
        is_uuid: g.is_uuid(),
        state_path: g.state_path(),
    }
}

#[napi]
pub fn gen_next(g: Gen) -> Result<Either<Ascii<String>, BigInt>, JsErr> {
    g.0.next()
}

#[napi]
pub fn gen_next_string(g: Gen) -> Result<Ascii<String>, JsErr> {
    g.0.next_string()
}

#[napi]
pub fn gen_next_big_int(g: Gen) -> Result<BigInt, JsErr> {
    g.0.next_big_int()
}

#[napi]
pub fn gen_take(g: Gen, n: u32) -> Result<Vec<Either<Ascii<String>, BigInt>>, JsErr> {
    g.0.take(n)
}

#[napi]
pub fn gen_take_strings(g: Gen, n: u32) -> Result<Vec<Ascii<String>>, JsErr> {
    g.0.take_strings(n)
}

#[napi]
pub fn gen_take_big_ints(g: Gen, n: u32) -> Result<Vec<BigInt>, JsErr> {
    g.0.take_big_ints(n)
}

#[napi]
pub fn gen_fill_buffer(g: Gen, buf: Filling<u8>) -> Result<(), JsErr> {
    g.0.fill_buffer(buf)
}

#[napi]
pub fn gen_fill_big_uint64(g: Gen, ids: Filling<u64>) -> Result<(), JsErr> {
    g.0.fill_big_uint64(ids)
}

#[napi]
pub fn gen_format(g: Gen, id: BigInt) -> Result<Ascii<String>, JsErr> {
    g.0.format(id)
}

#[napi]
pub fn gen_lead(g: Gen) -> f64 {
    g.0.lead()
}

// ---------------------------------------------------------------------------------------------
// Module functions: one process-wide generator per scheme, shared by every worker thread

const DEFAULT_SCHEMES: [&str; 6] = ["uuid7", "ulid", "typeid", "nanots", "uprotocol", "locality"];
/// The module functions' generators, made on first use: each an `Arc` turned into a pointer
/// that is never freed (a generator replaced after its file was lost may still be in use by
/// another thread; one leaked generator per lost file is the cost).
static DEFAULTS: [AtomicPtr<Opened>; 6] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 6];

/// Opens the module functions' generator of `DEFAULT_SCHEMES[slot]`: host-wide as
/// `new Generator(scheme)` (cluster and PM2 workers, forked children and separately started
/// processes share one sequence), in-process with `IDFORGE_SHARED=0`.
fn open_default(slot: usize) -> Result<Arc<Opened>, JsErr> {
    let kind = Kind::from_name(DEFAULT_SCHEMES[slot], None).or_throw()?;
    let mut opts = OpenOptions::default();
    let placed = Placement::default()
        .apply(&kind, &mut opts, false)
        .map_err(|e| placed_error(e, Placed::Module))?;
    placement::open_reused(&kind, &opts).map_err(|e| match placed {
        Some(_) => placed_error(e, Placed::Module),
        None => js_error(e),
    })
}

/// Makes `fresh` the generator of `slot` if `old` still is; the one in place afterwards.
fn install(slot: usize, old: *mut Opened, fresh: Arc<Opened>) -> &'static Opened {
    let raw = Arc::into_raw(fresh).cast_mut();
    match DEFAULTS[slot].compare_exchange(old, raw, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: `raw` came from `Arc::into_raw` and is never freed.
        Ok(_) => unsafe { &*raw },
        Err(current) => {
            // Another thread installed one first: ours goes (it issued nothing).
            // SAFETY: `raw` is ours alone: it was not stored.
            drop(unsafe { Arc::from_raw(raw) });
            // SAFETY: `current` was installed by `install` and is never freed.
            unsafe { &*current }
        }
    }
}

/// Runs `f` on the module functions' generator of `DEFAULT_SCHEMES[slot]` (every worker thread
/// of the process uses the same one). A generator whose state file was deleted or replaced
/// stops for good (`StateFileLostError`); it is then replaced by one on the file the path now
/// names (a new file is made as for a new process), and `f` runs again: once, so a file that
/// keeps being lost, or was rewound in place, gives its error.
fn with_default<T>(
    slot: usize,
    mut f: impl FnMut(&Opened) -> Result<T, idforge::Error>,
) -> Result<T, JsErr> {
    let mut p = DEFAULTS[slot].load(Ordering::Acquire);
    if p.is_null() {
        p = std::ptr::from_ref(install(slot, p, open_default(slot)?)).cast_mut();
    }
    // SAFETY: a non-null pointer was installed by `install` and is never freed.
    let g = unsafe { &*p };
    match f(g) {
        Err(idforge::Error::StateFile(idforge::StateFileError::Lost { .. })) => {
            let fresh = open_default(slot)?;
            if std::ptr::eq(Arc::as_ptr(&fresh), p) {
                // The path names the same file (rewound in place): nothing new to map.
                return f(g).map_err(|e| placed_error(e, Placed::Module));
            }
            f(install(slot, p, fresh)).map_err(|e| placed_error(e, Placed::Module))
        }
        other => other.map_err(|e| placed_error(e, Placed::Module)),
    }
}

/// A UUIDv7 (RFC 9562, monotonic), as 36 characters.
#[napi]
pub fn uuid7() -> Result<Ascii<idforge::text::Text>, JsErr> {
    let id = with_default(0, Opened::next)?;
    Ok(Ascii(idforge::text::encode(id, 128, Format::Uuid)))
}

/// Fills `buf` with UUIDv7s, 16 bytes each (`uuid7Buffer` in `index.js`).
#[napi]
pub fn uuid7_fill(mut buf: Filling<u8>) -> Result<(), JsErr> {
    let buf = buf.slice();
    with_default(0, |g| fill_bytes(g, 16, buf))
}

/// Fills `buf` with ids of `g`, `w` bytes each, big-endian, in issue order (as many as fit).
fn fill_bytes(g: &Opened, w: usize, buf: &mut [u8]) -> Result<(), idforge::Error> {
    let mut chunks = buf.chunks_exact_mut(w);
    g.take(chunks.len() as u64, |id| {
        if let Some(c) = chunks.next() {
            c.copy_from_slice(&id.to_be_bytes()[16 - w..]);
        }
    })
}

/// A UUIDv4 (122 bits from the secure generator), as 36 characters.
#[napi]
pub fn uuid4() -> Ascii<idforge::text::Text> {
    Ascii(idforge::text::encode(
        idforge::schemes::uuid4::uuid4(),
        128,
        Format::Uuid,
    ))
}

/// A monotonic ULID, as 26 characters.
#[napi]
pub fn ulid() -> Result<Ascii<idforge::text::Text>, JsErr> {
    let id = with_default(1, Opened::next)?;
    Ok(Ascii(idforge::text::encode(id, 128, Format::Ulid)))
}

/// A TypeID: `prefix_` and the 26-character suffix (the bare suffix for prefix "").
#[napi]
pub fn typeid(prefix: String) -> Result<String, JsErr> {
    let p = idforge::text::TypeIdPrefix::new(&prefix).or_throw()?;
    let id = with_default(2, Opened::next)?;
    Ok(p.encode(id).as_str().to_string())
}

/// A nanots timestamp id: Unix nanoseconds, unique on the host.
#[napi]
pub fn nanots() -> Result<BigInt, JsErr> {
    Ok(bigint(with_default(3, Opened::next)?))
}

/// A uProtocol UUIDv7, as 36 characters.
#[napi]
pub fn uprotocol() -> Result<Ascii<idforge::text::Text>, JsErr> {
    let id = with_default(4, Opened::next)?;
    Ok(Ascii(idforge::text::encode(id, 128, Format::Uuid)))
}

/// A Locality UUID, as 36 characters.
#[napi]
pub fn locality() -> Result<Ascii<idforge::text::Text>, JsErr> {
    let id = with_default(5, Opened::next)?;
    Ok(Ascii(idforge::text::encode(id, 128, Format::Uuid)))
}

// ---------------------------------------------------------------------------------------------
// inspect

/// An id's parts, as the library's `inspect` decodes them (`index.js` adds `date`).
#[napi(object)]
pub struct Decoded {
    pub input: String,
    pub scheme: String,
    pub value: BigInt,
    pub bits: u32,
    pub unix_ns: Option<BigInt>,
    pub time: Option<String>,
    pub node: Option<BigInt>,
    pub counter: Option<BigInt>,
    pub random: Option<BigInt>,
    pub version: Option<u32>,
    pub variant: Option<u32>,
    pub canonical: String,
    pub pid: Option<u32>,
    pub mac: Option<String>,
    pub prefix: Option<String>,
    pub layouts: Vec<String>,
    pub note: Option<String>,
    pub hint: Option<String>,
    /// Each field, in the order of the layout.
    pub parts: Vec<DecodedPart>,
}

/// One field of a decoded id: a number as `int`, anything else as `text`.
#[napi(object)]
pub struct DecodedPart {
    pub name: String,
    pub int: Option<BigInt>,
    pub text: Option<String>,
}

/// Decodes id text as `scheme` (or as what the text shows).
#[napi]
pub fn inspect(
    text: String,
    scheme: Option<String>,
    format: Option<String>,
    layout: Option<String>,
    host_digits: Option<u32>,
) -> Result<Decoded, JsErr> {
    let kind = match scheme.as_deref() {
        Some(s) => Some(Kind::from_name(s, layout.as_deref()).or_throw()?),
        None if layout.is_some() => return Err(arg_error("a layout needs scheme 'custom'")),
        None => None,
    };
    let format = format
        .map(|f| f.parse::<Format>().map_err(idforge::Error::InvalidFormat))
        .transpose()
        .or_throw()?;
    let d = idforge::inspect::inspect_as(&text, kind.as_ref(), format, host_digits).or_throw()?;
    let value = match &d.wide {
        // Wider than 128 bits (a KSUID, 160): every byte, as a bigint holds it.
        Some(bytes) => {
            let mut words = Vec::new();
            for chunk in bytes.rchunks(8) {
                let mut w = [0u8; 8];
                w[8 - chunk.len()..].copy_from_slice(chunk);
                words.push(u64::from_be_bytes(w));
            }
            BigInt {
                sign_bit: false,
                words,
            }
        }
        None => bigint(d.value),
    };
    let parts = d
        .parts()
        .into_iter()
        .map(|(k, v)| match v {
            idforge::inspect::Part::Int(n) => DecodedPart {
                name: k.to_string(),
                int: Some(bigint(n)),
                text: None,
            },
            other => DecodedPart {
                name: k.to_string(),
                int: None,
                text: Some(other.to_string()),
            },
        })
        .collect();
    Ok(Decoded {
        input: d.input.clone(),
        scheme: d.scheme.to_string(),
        value,
        bits: d.bits,
        unix_ns: d.unix_ns.map(bigint),
        time: d.time.clone(),
        node: d.node.map(bigint),
        counter: d.counter.map(bigint),
        random: d.random.map(bigint),
        version: d.version.map(u32::from),
        variant: d.variant.map(u32::from),
        canonical: d.canonical.clone(),
        pid: d.pid,
        mac: d.mac.clone(),
        prefix: d.prefix.clone(),
        layouts: d.layouts.iter().map(|l| l.to_string()).collect(),
        note: d.note.clone(),
        hint: d.hint(),
        parts,
    })
}

/// The names of every scheme, in the order `idforge schemes` lists them.
#[napi]
pub fn scheme_names() -> Vec<&'static str> {
    idforge::schemes::catalog::NAMES.to_vec()
}

/// The package's version.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
