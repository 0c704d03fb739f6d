//! idforge in PostgreSQL: every scheme as SQL functions, each backend drawing from one
//! host-wide stamp (a state file), so ids of concurrent sessions are unique and increase in
//! generation order across the whole cluster, and across the applications that share the file.
//!
//! * Generators are opened lazily in the backend that first asks for one (never in the
//!   postmaster), cached per backend, and dropped unused in a process whose id differs from the
//!   one that opened them (a fork): the child opens its own.
//! * Nothing here starts a thread: the ticker clock, which refreshes from a thread, is refused.
//! * The state files are under `$PGDATA/idforge` unless `idforge.state_dir` names a directory
//!   (postgresql.conf or ALTER SYSTEM; group-shared with `idforge.state_mode`, as the CLI's
//!   `--state-mode`).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::rc::Rc;

use idforge_lib::schemes::catalog::Kind;
use idforge_lib::schemes::open::{ClockChoice, OpenOptions, Opened, TextFormat};
use idforge_lib::{Error, Scheme, Signed64, StateFileError, StateOptions};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting, PostgresGucEnum};
use pgrx::prelude::*;
use pgrx::{AnyNumeric, JsonB, PgSqlErrorCode, Uuid};

::pgrx::pg_module_magic!(name, version);

static STATE_DIR: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static STATE_MODE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static DURABLE: GucSetting<bool> = GucSetting::<bool>::new(false);
static CLOCK: GucSetting<ClockGuc> = GucSetting::<ClockGuc>::new(ClockGuc::Auto);

/// `idforge.clock`.
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum ClockGuc {
    Auto,
    Precise,
    Counter,
    Ticker,
}

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // Forks are counted from here on (backends are forked from the postmaster, which loads the
    // library itself only when it is preloaded): a generator cached before a fork is never used
    // after it.
    if !idforge_lib::shm::watch_forks() {
        fail(
            PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
            "idforge: cannot register the fork handler (pthread_atfork failed); refusing to load"
                .into(),
        );
    }
    GucRegistry::define_string_guc(
        c"idforge.state_dir",
        c"Directory of idforge's state files (default: the idforge directory in the data directory).",
        c"Every backend draws from the state file of its scheme and node in this directory; point it at an application's state directory to share one sequence with `idforge gen --shared`, the service or the Python package. Settable in postgresql.conf or with ALTER SYSTEM only.",
        &STATE_DIR,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"idforge.state_mode",
        c"Permission bits (octal, e.g. 660) to share state files with a group, as `idforge gen --state-mode`.",
        c"Unset: the state files and their directory must belong to the server's user and be writable by it alone. Set: new files get these bits, and files and directories of other owners or writable by the group are accepted as far as these bits allow.",
        &STATE_MODE,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"idforge.durable",
        c"Sync a mark one second ahead to disk before issuing past the last one (`idforge gen --durable`).",
        c"With it, no id repeats even after a power loss and a clock stepped back.",
        &DURABLE,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"idforge.clock",
        c"Where ids take their time from: auto, precise or counter (ticker is refused: it runs a thread).",
        c"Uniqueness and order never depend on the clock.",
        &CLOCK,
        GucContext::Userset,
        GucFlags::default(),
    );
}

// ---------------------------------------------------------------------------------------------
// Errors: idforge's messages, with the SQLSTATE that fits.

fn sqlstate(e: &Error) -> PgSqlErrorCode {
    use PgSqlErrorCode::*;
    match e {
        Error::MalformedId { .. }
        | Error::AmbiguousId { .. }
        | Error::WrongVersion { .. }
        | Error::WrongVariant { .. }
        | Error::IdTooWide { .. }
        | Error::ByteLength { .. }
        | Error::WrongIdType { .. } => ERRCODE_INVALID_TEXT_REPRESENTATION,
        Error::TimeOutOfRange { .. } | Error::BeforeEpoch { .. } | Error::InvalidTime { .. } => {
            ERRCODE_DATETIME_FIELD_OVERFLOW
        }
        Error::ClockBehind { .. } | Error::EpochInFuture { .. } | Error::LeaseLost { .. } => {
            ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
        }
        Error::ClockUnavailable(_) => ERRCODE_FEATURE_NOT_SUPPORTED,
        Error::StateFile(s) => match s {
            StateFileError::Untrusted { .. } => ERRCODE_INSUFFICIENT_PRIVILEGE,
            StateFileError::Busy { .. } => ERRCODE_LOCK_NOT_AVAILABLE,
            StateFileError::Mismatch { .. } | StateFileError::PolicyMismatch { .. } => {
                ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
            }
            StateFileError::Truncated { .. }
            | StateFileError::Foreign { .. }
            | StateFileError::Version { .. }
            | StateFileError::Corrupt { .. } => ERRCODE_DATA_CORRUPTED,
            _ => ERRCODE_IO_ERROR,
        },
        _ => ERRCODE_INVALID_PARAMETER_VALUE,
    }
}

/// Raises `e` as an SQL error (a state-file error names the settings that choose the file).
fn raise(e: Error) -> ! {
    let code = sqlstate(&e);
    let mut report =
        pgrx::pg_sys::panic::ErrorReport::new(code, format!("idforge: {e}"), "idforge");
    if let Error::StateFile(_) = e {
        report = report.set_hint(
            "the state directory is idforge.state_dir (default: the idforge directory in the data directory); share it with a group by setting idforge.state_mode, e.g. '660' (docs/POSTGRES.md)",
        );
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("an ERROR does not return")
}

fn fail(code: PgSqlErrorCode, message: String) -> ! {
    pgrx::pg_sys::panic::ErrorReport::new(code, message, "idforge").report(PgLogLevel::ERROR);
    unreachable!("an ERROR does not return")
}

fn ok<T>(r: Result<T, Error>) -> T {
    r.unwrap_or_else(|e| raise(e))
}

// ---------------------------------------------------------------------------------------------
// Generators: opened on first use in this backend, kept for its life.

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    scheme: Cow<'static, str>,
    layout: Option<String>,
    node: Option<u64>,
    host_digits: Option<u32>,
}

/// The settings that decide where and how generators are opened; a change (SIGHUP, SET)
/// reopens them.
#[derive(Clone, PartialEq, Eq, Default)]
struct Settings {
    state_dir: Option<Vec<u8>>,
    state_mode: Option<Vec<u8>>,
    durable: bool,
    clock: Option<ClockGuc>,
}

struct Cache {
    /// The fork generation the generators were opened in ([`idforge_lib::shm::fork_generation`]).
    forks: u64,
    settings: Settings,
    generators: HashMap<Key, Rc<Opened>>,
    /// The last key asked for, for the common case of one scheme called row after row.
    last: Option<(Key, Rc<Opened>)>,
}

thread_local! {
    static CACHE: RefCell<Option<Cache>> = const { RefCell::new(None) };
}

/// A string setting's bytes (`None` when unset or empty), borrowed until the setting changes.
fn guc_str(s: &GucSetting<Option<CString>>) -> Option<&[u8]> {
    // SAFETY: the GUC machinery keeps the pointer (when set) at a NUL-terminated string that
    // lives until the setting changes, which cannot happen while a function of this backend runs.
    unsafe {
        let raw = *s.as_ptr();
        (!raw.is_null()).then(|| CStr::from_ptr(raw).to_bytes())
    }
    .filter(|v| !v.is_empty())
}

fn guc_bytes(s: &GucSetting<Option<CString>>) -> Option<Vec<u8>> {
    guc_str(s).map(<[u8]>::to_vec)
}

impl Settings {
    /// Whether the settings are still these (no allocation: called for every id).
    fn current(&self) -> bool {
        guc_str(&STATE_DIR) == self.state_dir.as_deref()
            && guc_str(&STATE_MODE) == self.state_mode.as_deref()
            && DURABLE.get() == self.durable
            && Some(CLOCK.get()) == self.clock
    }
}

fn settings() -> Settings {
    Settings {
        state_dir: guc_bytes(&STATE_DIR),
        state_mode: guc_bytes(&STATE_MODE),
        durable: DURABLE.get(),
        clock: Some(CLOCK.get()),
    }
}

fn state_dir(s: &Settings) -> PathBuf {
    match &s.state_dir {
        Some(d) => PathBuf::from(String::from_utf8_lossy(d).into_owned()),
        None => {
            // SAFETY: DataDir is set before any backend runs a query and not changed after.
            let data = unsafe { CStr::from_ptr(pg_sys::DataDir) };
            PathBuf::from(data.to_string_lossy().into_owned()).join("idforge")
        }
    }
}

fn open(key: &Key, s: &Settings) -> Opened {
    let kind = ok(Kind::from_name(&key.scheme, key.layout.as_deref()));
    let clock = match s.clock.unwrap_or(ClockGuc::Auto) {
        ClockGuc::Auto => ClockChoice::Auto,
        ClockGuc::Precise => ClockChoice::Precise,
        ClockGuc::Counter => ClockChoice::Counter,
        ClockGuc::Ticker => fail(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "idforge: idforge.clock = ticker is refused in PostgreSQL: the ticker clock refreshes from a thread of its own, and a backend must not start threads; use auto (the default), precise or counter".into(),
        ),
    };
    let mut opts = OpenOptions {
        node: key.node,
        host_digits: key.host_digits,
        clock,
        ..OpenOptions::default()
    };
    if kind.host_wide() {
        let name = ok(kind.state_file_name(&opts));
        let mut st = StateOptions::new(state_dir(s).join(name));
        if let Some(m) = &s.state_mode {
            let text = String::from_utf8_lossy(m);
            match u32::from_str_radix(text.trim().trim_start_matches("0o"), 8) {
                Ok(mode) if mode <= 0o777 => st = st.shared_mode(mode),
                _ => fail(
                    PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("idforge: idforge.state_mode = {text:?} is not permission bits: use octal, e.g. 600 or 660"),
                ),
            }
        }
        st.durable = s.durable;
        opts.state = Some(st);
    }
    ok(Opened::open(&kind, &opts))
}

/// The generator for `key` in this backend.
fn generator(key: Key) -> Rc<Opened> {
    let forks = idforge_lib::shm::fork_generation();
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let stale = match &*c {
            Some(cache) => cache.forks != forks || !cache.settings.current(),
            None => true,
        };
        if stale {
            if let Some(old) = c.take() {
                if old.forks != forks {
                    // Opened by the process this one was forked from: its state-file locks and
                    // mappings belong to the parent; leave them alone rather than unlock them.
                    std::mem::forget(old);
                }
            }
            *c = Some(Cache {
                forks,
                settings: settings(),
                generators: HashMap::new(),
                last: None,
            });
        }
        let cache = c.as_mut().expect("set above");
        if let Some((k, g)) = &cache.last {
            if *k == key {
                return g.clone();
            }
        }
        let g = match cache.generators.get(&key) {
            Some(g) => g.clone(),
            None => {
                let g = Rc::new(open(&key, &cache.settings));
                cache.generators.insert(key.clone(), g.clone());
                g
            }
        };
        cache.last = Some((key, g.clone()));
        g
    })
}

fn key(scheme: &'static str, node: Option<i64>) -> Key {
    Key {
        scheme: Cow::Borrowed(scheme),
        layout: None,
        node: node.map(node_u64),
        host_digits: None,
    }
}

fn node_u64(node: i64) -> u64 {
    u64::try_from(node).unwrap_or_else(|_| {
        fail(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("idforge: node id {node} is negative: node ids start at 0"),
        )
    })
}

fn uuid(id: u128) -> Uuid {
    Uuid::from_bytes(id.to_be_bytes())
}

fn uuid_u128(u: &Uuid) -> u128 {
    u128::from_be_bytes(**u)
}

/// A 64-bit id as `bigint`, refusing one with bit 63 set (it would read as negative).
fn bigint(g: &Opened, id: u128) -> i64 {
    match i64::try_from(id) {
        Ok(v) => v,
        Err(_) => fail(
            PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "idforge: this {} id ({id}) sets bit 63: it does not fit a signed bigint; use idforge.id('{}', ...) for its text, or a smaller node",
                g.name(),
                g.name()
            ),
        ),
    }
}

/// Refuses, before generating, a node whose ids would not fit a signed `bigint`.
fn check_signed64(scheme: &str, node: Option<i64>) {
    let Ok(s) = Scheme::from_name(scheme) else {
        return;
    };
    if let (Signed64::NodesBelow(limit), Some(n)) = (s.layout().signed64(), node) {
        if i128::from(n) >= limit as i128 {
            fail(
                PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!(
                    "idforge: {scheme} ids of node {n} set bit 63: they do not fit a signed bigint; use a node below {limit}, or idforge.id('{scheme}', node => {n}) for their text"
                ),
            );
        }
    }
}

fn next_bigint(scheme: &'static str, node: Option<i64>) -> i64 {
    check_signed64(scheme, node);
    let g = generator(key(scheme, node));
    bigint(&g, ok(g.next()))
}

/// Ids `n` at a time from a generator, in batches of up to 1024 (one reservation each).
struct Ids {
    g: Rc<Opened>,
    left: u64,
    buf: Vec<u128>,
    at: usize,
}

impl Ids {
    fn new(g: Rc<Opened>, n: i64) -> Ids {
        let left = u64::try_from(n).unwrap_or_else(|_| {
            fail(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("idforge: cannot generate {n} ids: the count must be 0 or more"),
            )
        });
        Ids {
            g,
            left,
            buf: Vec::with_capacity(1024),
            at: 0,
        }
    }
}

impl Iterator for Ids {
    type Item = u128;
    fn next(&mut self) -> Option<u128> {
        if self.at == self.buf.len() {
            if self.left == 0 {
                return None;
            }
            let k = self.left.min(1024);
            self.buf.clear();
            self.at = 0;
            let buf = &mut self.buf;
            ok(self.g.take(k, |id| buf.push(id)));
            self.left -= k;
        }
        let id = self.buf[self.at];
        self.at += 1;
        Some(id)
    }
}

fn timestamptz(unix_ns: u128) -> TimestampWithTimeZone {
    // PostgreSQL counts microseconds from 2000-01-01.
    const PG_EPOCH_US: i128 = 946_684_800_000_000;
    let us = (unix_ns / 1000) as i128 - PG_EPOCH_US;
    i64::try_from(us)
        .ok()
        .and_then(|us| TimestampWithTimeZone::try_from(us).ok())
        .unwrap_or_else(|| {
            fail(
                PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
                format!("idforge: the id's time ({unix_ns} ns after 1970) is outside timestamptz's range"),
            )
        })
}

fn decode(text: &str, scheme: Option<&str>) -> idforge_lib::Decoded {
    let kind = scheme.map(|s| ok(Kind::from_name(s, None)));
    ok(idforge_lib::inspect::inspect_as(
        text,
        kind.as_ref(),
        None,
        None,
    ))
}

fn narrow_i32(v: Option<u128>) -> Option<i32> {
    v.and_then(|v| i32::try_from(v).ok())
}

/// The SQL functions, in the `idforge` schema (created by the extension, dropped with it).
#[pg_schema]
mod idforge {
    use super::*;

    // --- UUIDs -----------------------------------------------------------------------------

    /// A UUIDv7 (RFC 9562, monotonic): one host-wide sequence across every backend.
    #[pg_extern(volatile, parallel_safe)]
    fn uuid7() -> Uuid {
        let g = generator(key("uuid7", None));
        uuid(ok(g.next()))
    }

    /// `n` UUIDv7s, increasing.
    #[pg_extern(volatile, parallel_safe)]
    fn uuid7_series(n: i64) -> SetOfIterator<'static, Uuid> {
        SetOfIterator::new(Ids::new(generator(key("uuid7", None)), n).map(uuid))
    }

    /// A uProtocol UUID (a UUIDv7 with uProtocol's counter and random split).
    #[pg_extern(volatile, parallel_safe)]
    fn uprotocol() -> Uuid {
        uuid(ok(generator(key("uprotocol", None)).next()))
    }

    /// A legacy uProtocol UUIDv8 (a per-backend singleton on the wall clock: ordered within the
    /// session only).
    #[pg_extern(volatile, parallel_safe)]
    fn uprotocol_v8() -> Uuid {
        uuid(ok(generator(key("uprotocol-v8", None)).next()))
    }

    /// A UUIDv4: 122 random bits from the secure generator (no order).
    #[pg_extern(volatile, parallel_safe)]
    fn uuid4() -> Uuid {
        uuid(ok(generator(key("uuid4", None)).next()))
    }

    /// A Locality UUID (Groupon's: pid, MAC and a counter per millisecond; no shared stamp).
    #[pg_extern(volatile, parallel_safe)]
    fn locality() -> Uuid {
        uuid(ok(generator(key("locality", None)).next()))
    }

    // --- 64-bit ids as bigint ----------------------------------------------------------------

    /// A Twitter Snowflake id of `node` (0-1023).
    #[pg_extern(volatile, parallel_safe)]
    fn snowflake(node: i32) -> i64 {
        next_bigint("snowflake", Some(node.into()))
    }

    /// `n` Snowflake ids of `node`, increasing.
    #[pg_extern(volatile, parallel_safe)]
    fn snowflake_series(node: i32, n: i64) -> SetOfIterator<'static, i64> {
        let g = generator(key("snowflake", Some(node.into())));
        let g2 = g.clone();
        SetOfIterator::new(Ids::new(g, n).map(move |id| bigint(&g2, id)))
    }

    /// A Sonyflake id of `node` (0-65535).
    #[pg_extern(volatile, parallel_safe)]
    fn sonyflake(node: i32) -> i64 {
        next_bigint("sonyflake", Some(node.into()))
    }

    /// An Elixir GlobalId (64 bits) of `node`; nodes from 512 make ids that set bit 63 and are
    /// refused.
    #[pg_extern(volatile, parallel_safe)]
    fn global_id(node: i32) -> i64 {
        next_bigint("global-id", Some(node.into()))
    }

    /// A TSID of `node` (0-1023) as its 64-bit number.
    #[pg_extern(volatile, parallel_safe)]
    fn tsid(node: i32) -> i64 {
        next_bigint("tsid", Some(node.into()))
    }

    /// A Chronicle nanosecond timestamp id, with an optional tag.
    #[pg_extern(volatile, parallel_safe)]
    fn nanots(tag: default!(Option<i32>, "NULL")) -> i64 {
        next_bigint("nanots", tag.map(i64::from))
    }

    // --- 128-bit ids that are not UUIDs, as numeric -----------------------------------------

    /// An Elixir GlobalId of 128 bits, of `node`, as a number.
    #[pg_extern(volatile, parallel_safe)]
    fn global_id_128(node: i64) -> AnyNumeric {
        let g = generator(key("global-id-128", Some(node)));
        AnyNumeric::from(ok(g.next()))
    }

    // --- Text formats ------------------------------------------------------------------------

    /// A ULID (Crockford base32, 26 characters), monotonic.
    #[pg_extern(volatile, parallel_safe)]
    fn ulid() -> String {
        let g = generator(key("ulid", None));
        g.render(ok(g.next()), ok(g.text_format(None)))
    }

    /// `n` ULIDs, increasing.
    #[pg_extern(volatile, parallel_safe)]
    fn ulid_series(n: i64) -> SetOfIterator<'static, String> {
        let g = generator(key("ulid", None));
        let f = ok(g.text_format(None));
        let g2 = g.clone();
        SetOfIterator::new(Ids::new(g, n).map(move |id| g2.render(id, f)))
    }

    /// A TypeID: `prefix_` and a UUIDv7 in base32 (the bare suffix for an empty prefix).
    #[pg_extern(volatile, parallel_safe)]
    fn typeid(prefix: default!(&str, "''")) -> String {
        let g = generator(key("typeid", None));
        let f = ok(g.text_format_prefixed(None, (!prefix.is_empty()).then_some(prefix)));
        g.render(ok(g.next()), f)
    }

    /// A MongoDB ObjectId of `node` (24 hex digits).
    #[pg_extern(volatile, parallel_safe)]
    fn objectid(node: i64) -> String {
        let g = generator(key("objectid", Some(node)));
        g.render(ok(g.next()), ok(g.text_format(None)))
    }

    /// An rs/xid of `node` (20 characters).
    #[pg_extern(volatile, parallel_safe)]
    fn xid(node: i64) -> String {
        let g = generator(key("xid", Some(node)));
        g.render(ok(g.next()), ok(g.text_format(None)))
    }

    /// Any scheme, as text: `scheme` is a name of `idforge schemes` (`custom` with `layout`),
    /// `node` its node (or nanots tag, or nanots-host host id), `format` one of dec, hex,
    /// base32, uuid, ulid, xid, typeid, time (default: the scheme's own), `prefix` a TypeID
    /// prefix.
    #[pg_extern(volatile, parallel_safe, name = "id")]
    fn id(
        scheme: Option<&str>,
        node: default!(Option<i64>, "NULL"),
        format: default!(Option<&str>, "NULL"),
        layout: default!(Option<&str>, "NULL"),
        prefix: default!(Option<&str>, "NULL"),
    ) -> Option<String> {
        let scheme = scheme?;
        let g = generator(Key {
            scheme: Cow::Owned(scheme.trim().to_ascii_lowercase()),
            layout: layout.map(str::to_string),
            node: node.map(node_u64),
            host_digits: None,
        });
        let f = ok(g.text_format_prefixed(format, prefix));
        Some(g.render(ok(g.next()), f))
    }

    /// `n` ids of any scheme as text, increasing for time-ordered schemes (arguments as
    /// `idforge.id`).
    #[pg_extern(volatile, parallel_safe)]
    fn id_series(
        scheme: Option<&str>,
        n: Option<i64>,
        node: default!(Option<i64>, "NULL"),
        format: default!(Option<&str>, "NULL"),
        layout: default!(Option<&str>, "NULL"),
        prefix: default!(Option<&str>, "NULL"),
    ) -> SetOfIterator<'static, String> {
        let (Some(scheme), Some(n)) = (scheme, n) else {
            return SetOfIterator::new(Vec::new());
        };
        let g = generator(Key {
            scheme: Cow::Owned(scheme.trim().to_ascii_lowercase()),
            layout: layout.map(str::to_string),
            node: node.map(node_u64),
            host_digits: None,
        });
        let f: TextFormat = ok(g.text_format_prefixed(format, prefix));
        let g2 = g.clone();
        SetOfIterator::new(Ids::new(g, n).map(move |id| g2.render(id, f)))
    }

    /// The state file this backend's generator of `scheme` (and `node`) uses, or NULL for a
    /// scheme without one (uuid4, locality, uprotocol-v8).
    #[pg_extern(volatile)]
    fn state_path(scheme: Option<&str>, node: default!(Option<i64>, "NULL")) -> Option<String> {
        let scheme = scheme?;
        let g = generator(Key {
            scheme: Cow::Owned(scheme.trim().to_ascii_lowercase()),
            layout: None,
            node: node.map(node_u64),
            host_digits: None,
        });
        g.state_path().map(|p| p.display().to_string())
    }

    // --- Decoding ----------------------------------------------------------------------------

    /// Everything an id says, as `idforge inspect --json` prints it; `scheme` names the scheme
    /// when the text alone cannot (every non-UUID id, and idforge's UUIDv7 counter).
    #[pg_extern(immutable, parallel_safe)]
    fn inspect(id: Option<&str>, scheme: default!(Option<&str>, "NULL")) -> Option<JsonB> {
        let d = decode(id?, scheme);
        Some(JsonB(serde_json::to_value(&d).unwrap_or_else(|e| {
            fail(
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!("idforge: cannot write the decoded id as JSON: {e}"),
            )
        })))
    }

    /// The time of a UUIDv7 (millisecond precision).
    #[pg_extern(immutable, parallel_safe)]
    fn uuid7_time(id: Uuid) -> Option<TimestampWithTimeZone> {
        let d = ok(idforge_lib::inspect(
            &uuid_text(&id),
            Some(&Scheme::Uuid7),
            None,
        ));
        d.unix_ns.map(timestamptz)
    }

    /// The counter of one of idforge's UUIDv7s (its 12 rand_a bits).
    #[pg_extern(immutable, parallel_safe)]
    fn uuid7_counter(id: Uuid) -> Option<i32> {
        let d = ok(idforge_lib::inspect(
            &uuid_text(&id),
            Some(&Scheme::Uuid7),
            None,
        ));
        narrow_i32(d.counter)
    }

    /// The time of a Snowflake id.
    #[pg_extern(immutable, parallel_safe)]
    fn snowflake_time(id: i64) -> Option<TimestampWithTimeZone> {
        snowflake_parts(id).unix_ns.map(timestamptz)
    }

    /// The node of a Snowflake id.
    #[pg_extern(immutable, parallel_safe)]
    fn snowflake_node(id: i64) -> Option<i32> {
        narrow_i32(snowflake_parts(id).node)
    }

    /// The counter (sequence) of a Snowflake id.
    #[pg_extern(immutable, parallel_safe)]
    fn snowflake_counter(id: i64) -> Option<i32> {
        narrow_i32(snowflake_parts(id).counter)
    }

    fn snowflake_parts(id: i64) -> idforge_lib::Decoded {
        if id < 0 {
            fail(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("idforge: {id} is not a Snowflake id: Snowflake ids are positive"),
            );
        }
        ok(idforge_lib::inspect(
            &id.to_string(),
            Some(&Scheme::Snowflake),
            Some(idforge_lib::text::Format::Dec),
        ))
    }

    fn uuid_text(id: &Uuid) -> String {
        idforge_lib::text::encode(uuid_u128(id), 128, idforge_lib::text::Format::Uuid).to_string()
    }
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
