//! Errors: every way a request can be refused, each with a message that says what to do.

use std::time::Duration;

/// Everything that can go wrong in idforge. Each variant's message names the bad value and the fix.
///
/// ```
/// use idforge::{Error, Layout, Scheme};
/// // Each failing call names the bad value and the fix.
/// let e = Layout::parse_spec("node:10,counter:12").unwrap_err();
/// assert!(matches!(e, Error::InvalidLayoutSpec { .. }));
/// assert!(e.to_string().contains("a layout needs a time field"));
/// let e = idforge::Generator::new(&Scheme::Snowflake, Some(5_000)).unwrap_err();
/// assert!(matches!(e, Error::NodeOutOfRange { node: 5_000, max: 1023, .. }));
/// assert!(e.to_string().contains("use a node id from 0 to 1023"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A node id does not fit the layout's node field.
    #[error("node id {node} is out of range for {scheme}: it has {bits} node bits, so use a node id from 0 to {max}")]
    NodeOutOfRange {
        /// The scheme or layout name.
        scheme: String,
        /// The node id given.
        node: u128,
        /// Width of the node field.
        bits: u32,
        /// Largest node id the field holds.
        max: u128,
    },
    /// A setting was given to a scheme that does not take it (a node id to locality, a state
    /// file to uprotocol-v8, ...): it is refused, never silently ignored.
    #[error("{scheme} does not take {setting}: {why}")]
    NotApplicable {
        /// The scheme name.
        scheme: String,
        /// The setting.
        setting: String,
        /// Why the scheme does not take it.
        why: String,
    },
    /// A fleet member no longer holds its node id lease (renewals failed past its deadline, or
    /// it was shut down): it issues nothing more, so no id can collide with a successor's.
    #[error("node id {node} is no longer held by this process ({reason}); nothing was issued. It issues ids again only after it claims a node id anew")]
    LeaseLost {
        /// The node id that was held.
        node: u64,
        /// Why it was lost.
        reason: String,
    },
    /// nanots-host was opened without a host id.
    #[error("nanots-host needs a host id (0-99, or 0-999 with 3 host digits): give the `node` option the host id; idforge never picks one for you")]
    HostRequired,
    /// A text format name is unknown or does not fit the scheme's ids.
    #[error("{0}")]
    InvalidFormat(String),
    /// A scheme that needs a node id got none.
    #[error("{scheme} needs a node id from 0 to {max}: give one as the `node` setting (idforge never picks a random node for you)")]
    NodeRequired {
        /// The scheme name.
        scheme: String,
        /// Largest node id the scheme accepts.
        max: u128,
    },
    /// A layout's fields do not fit in the id, overlap, or are otherwise impossible.
    #[error("invalid layout: {0}")]
    InvalidLayout(String),
    /// A layout's epoch is later than the current time.
    #[error("the epoch {epoch} is later than the generator's clock ({now}): ids would have negative time; choose an earlier epoch, or a later time for the fixed clock (`at`)")]
    EpochInFuture {
        /// The epoch, RFC 3339.
        epoch: String,
        /// The current time, RFC 3339.
        now: String,
    },
    /// The clock reads a time before the layout's epoch.
    #[error("the time {time} is before the layout's epoch {epoch}: use a later time or an earlier epoch")]
    BeforeEpoch {
        /// The time read from the clock, RFC 3339.
        time: String,
        /// The epoch, RFC 3339.
        epoch: String,
    },
    /// The time no longer fits the layout's time field.
    #[error("the time {time} is beyond the range of {scheme}: its time field ran out in the year {year}; use a layout with more time bits or a later epoch")]
    TimeOutOfRange {
        /// The scheme or layout name.
        scheme: String,
        /// The time that did not fit, RFC 3339.
        time: String,
        /// The year in which the layout ran out.
        year: i32,
    },
    /// The wall clock is further behind the last issued id than the policy allows.
    #[error("the wall clock is {behind:?} behind the last issued id, more than the allowed lead of {max_lead:?}; issuing now could break ordering, so nothing was issued. Fix the clock, retry later, or allow a larger lead (`Policy::max_lead`) or wait for the clock (`OnClockBehind::Wait`); on a shared state file every process sharing it must use the same policy, so change it in all of them")]
    ClockBehind {
        /// How far the clock is behind the last issued stamp.
        behind: Duration,
        /// The policy's bound.
        max_lead: Duration,
    },
    /// A reservation asked for more ids than one tick can hold.
    #[error("cannot reserve {requested} ids at once: one tick of this layout holds at most {max}; reserve in smaller batches")]
    ReserveTooLarge {
        /// How many were asked for.
        requested: u64,
        /// The most one call may take.
        max: u64,
    },
    /// An id string could not be parsed.
    #[error("malformed id {input:?}: {reason}")]
    MalformedId {
        /// The text given (truncated to 80 characters).
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Id text that reads as two different values in different formats (digits only, as long
    /// as the hex or base32 text of the id's width); the format must be named.
    #[error("id {input:?} is ambiguous: it reads as {readings}; pass {choose} to say which")]
    AmbiguousId {
        /// The text given (truncated to 80 characters).
        input: String,
        /// Each reading: the format and the value it gives.
        readings: String,
        /// The flags that pick one reading.
        choose: String,
    },
    /// A UUID has a version other than the one asked for.
    #[error("{input:?} is a version {found:x} UUID, not the version {expected:x} that {scheme} requires")]
    WrongVersion {
        /// The text given.
        input: String,
        /// The scheme asked for.
        scheme: String,
        /// The version required.
        expected: u8,
        /// The version found.
        found: u8,
    },
    /// A UUID's variant bits are not `0b10` (RFC 9562).
    #[error("{input:?} has variant bits {found:#04b}, not the RFC 9562 variant 0b10 that {scheme} requires")]
    WrongVariant {
        /// The text given.
        input: String,
        /// The scheme asked for.
        scheme: String,
        /// The two variant bits found.
        found: u8,
    },
    /// An id does not fit the scheme's width.
    #[error("id {input:?} does not fit {scheme}: it is {bits} bits wide")]
    IdTooWide {
        /// The text given.
        input: String,
        /// The scheme.
        scheme: String,
        /// The scheme's width in bits.
        bits: u32,
    },
    /// The requested text format cannot represent this scheme's ids.
    #[error("format {format} cannot represent {scheme} ids: {reason}")]
    UnsupportedFormat {
        /// The format asked for.
        format: String,
        /// The scheme.
        scheme: String,
        /// Why not, and what to use instead.
        reason: String,
    },
    /// A typed id was asked of a generator whose scheme makes ids of another family.
    #[error("{scheme} ids are {found}, not {requested}: use Generator::{}() for a {}", found.method(), found.type_name())]
    WrongIdType {
        /// The generator's scheme.
        scheme: String,
        /// The family asked for.
        requested: crate::family::IdFamily,
        /// The family of the scheme's ids.
        found: crate::family::IdFamily,
    },
    /// A time string could not be parsed.
    #[error("invalid time {input:?}: {reason}. Use RFC 3339, for example 2024-05-01T12:00:00Z")]
    InvalidTime {
        /// The text given.
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// A scheme name is unknown.
    #[error("unknown scheme {0}")]
    UnknownScheme(String),
    /// A layout spec (`--layout`) could not be parsed.
    #[error("invalid layout spec {spec:?}: {reason}. Example: time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z")]
    InvalidLayoutSpec {
        /// The spec given.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// Raw id bytes of the wrong length.
    #[error("{found} bytes cannot be a {what}: it is exactly {expected} bytes; pass the id's raw bytes, most significant first")]
    ByteLength {
        /// What the bytes were meant to be.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// A process id too wide for the locality scheme's 16-bit pid field.
    #[error("process id {pid} does not fit the locality scheme's 16-bit pid field: pass a pid from 0 to 65535 (idforge does not wrap larger values: two processes could then write the same pid)")]
    PidOutOfRange {
        /// The process id given.
        pid: u64,
    },
    /// A MAC fragment wider than the locality scheme's 28 bits.
    #[error("MAC fragment {fragment:#x} is wider than the 28 bits the locality scheme stores: pass a value up to 0xfffffff, or a whole MAC address (its last 28 bits are used)")]
    MacFragmentOutOfRange {
        /// The fragment given.
        fragment: u64,
    },
    /// A MAC address could not be parsed.
    #[error("invalid MAC address {input:?}: {reason}. Write six hex bytes separated by colons, for example 02:42:ac:11:00:02")]
    InvalidMac {
        /// The text given (truncated to 80 characters).
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The process-wide singleton was already constructed.
    #[error("the {0} generator is a process-wide singleton and cannot be built again; use idforge::schemes::uprotocol_v8::generator() or uprotocol_v8::next()")]
    SingletonTaken(&'static str),
    /// A shared state file could not be used.
    #[error(transparent)]
    StateFile(#[from] StateFileError),
    /// Settings that contradict each other or cannot be used as given (a relative state path,
    /// an in-process generator asked for a state file mode, `IDFORGE_SHARED=maybe`).
    #[error("{setting}: {why}")]
    Setting {
        /// The setting or settings, as given.
        setting: String,
        /// Why they are refused, and what to give instead.
        why: String,
    },
    /// The ticker clock (`ticker::TickerClock`) cannot run: its thread cannot be started, or
    /// forks cannot be detected.
    #[error("the ticker clock cannot run: {0}; use the default clock (`SystemClock`) instead")]
    ClockUnavailable(String),
}

impl Error {
    /// The family of the error, as the language packages name their error classes (Python's
    /// exceptions, JavaScript's `Error` subclasses): `NodeError`, `UnknownSchemeError`,
    /// `ParseError`, `ClockBehindError`, `ClockError`, `LeaseLostError`, `StateFileLostError`,
    /// `StateFileRefusedError` (a file idforge will not use as it is), `StateFileError` (one it
    /// cannot use), or `ConfigError` for everything else.
    ///
    /// ```
    /// let e = idforge::schemes::catalog::Kind::from_name("snowflak", None).unwrap_err();
    /// assert_eq!(e.family(), "UnknownSchemeError");
    /// assert_eq!(e.variant_name(), "UnknownScheme");
    /// ```
    pub fn family(&self) -> &'static str {
        use StateFileError as S;
        match self {
            Error::NodeRequired { .. } | Error::NodeOutOfRange { .. } | Error::HostRequired => {
                "NodeError"
            }
            Error::UnknownScheme(_) => "UnknownSchemeError",
            Error::MalformedId { .. }
            | Error::AmbiguousId { .. }
            | Error::WrongVersion { .. }
            | Error::WrongVariant { .. }
            | Error::IdTooWide { .. }
            | Error::InvalidTime { .. }
            | Error::ByteLength { .. } => "ParseError",
            Error::ClockBehind { .. } => "ClockBehindError",
            Error::BeforeEpoch { .. }
            | Error::TimeOutOfRange { .. }
            | Error::ClockUnavailable(_) => "ClockError",
            Error::LeaseLost { .. } => "LeaseLostError",
            Error::StateFile(S::Lost { .. }) => "StateFileLostError",
            Error::StateFile(
                S::Truncated { .. }
                | S::Foreign { .. }
                | S::Version { .. }
                | S::Corrupt { .. }
                | S::Mismatch { .. }
                | S::PolicyMismatch { .. }
                | S::Untrusted { .. },
            ) => "StateFileRefusedError",
            Error::StateFile(_) => "StateFileError",
            _ => "ConfigError",
        }
    }

    /// The variant's name (`NodeRequired`, or `StateFile.Foreign` for a state file error): a
    /// stable name for programs to test, where the message is for people.
    pub fn variant_name(&self) -> String {
        let dbg = format!("{self:?}");
        let head = |s: &str| -> String {
            s.split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or_default()
                .to_string()
        };
        match self {
            Error::StateFile(_) => {
                format!("StateFile.{}", head(dbg.trim_start_matches("StateFile(")))
            }
            _ => head(&dbg),
        }
    }
}

/// Shortens user input for an error message.
pub(crate) fn clip(input: &str) -> String {
    if input.chars().count() <= 80 {
        input.to_string()
    } else {
        let mut s: String = input.chars().take(77).collect();
        s.push_str("...");
        s
    }
}

/// Builds [`Error::MalformedId`].
pub(crate) fn malformed(input: &str, reason: impl Into<String>) -> Error {
    Error::MalformedId {
        input: clip(input),
        reason: reason.into(),
    }
}

/// What can go wrong with a state file. Each message names the file and says what to do.
///
/// ```
/// use idforge::{Error, Generator, Scheme, StateFileError, StateOptions, WallClock};
/// static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// let dir = std::env::temp_dir().join(format!(
///     "idforge-doc-statefileerror-{}-{}", std::process::id(),
///     N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
/// std::fs::create_dir_all(&dir).unwrap();
/// // A file that idforge did not write is never overwritten.
/// let path = dir.join("notes.txt");
/// std::fs::write(&path, vec![b'x'; 8192]).unwrap();
/// let s = Scheme::Uuid7;
/// let e = Generator::host_wide(&s, None, WallClock, s.default_policy(), &StateOptions::new(&path)).unwrap_err();
/// assert!(matches!(e, Error::StateFile(StateFileError::Foreign { .. })));
/// assert!(e.to_string().contains("not an idforge state file"));
/// assert_eq!(std::fs::read(&path).unwrap(), vec![b'x'; 8192]);
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateFileError {
    /// The file could not be created, opened, mapped or synced.
    #[error("state file {path}: cannot {action}: {reason}. Choose a writable location (`StateOptions::path`)")]
    Io {
        /// The file.
        path: String,
        /// What was being done.
        action: &'static str,
        /// The operating system's error.
        reason: String,
    },
    /// The file is shorter than one header page.
    #[error("state file {path} is truncated ({len} bytes, a state file has {expected}); it was not written by idforge or was cut short. Stop every process still using it, then move it away (idforge recreates it) or choose another path (`StateOptions::path`)")]
    Truncated {
        /// The file.
        path: String,
        /// Its length.
        len: u64,
        /// The expected length.
        expected: u64,
    },
    /// The file does not start with idforge's magic.
    #[error("state file {path} is not an idforge state file (wrong magic bytes); refusing to overwrite it. Choose another path (`StateOptions::path`)")]
    Foreign {
        /// The file.
        path: String,
    },
    /// The file has another format version.
    #[error("state file {path} has format version {found}, this idforge reads version {expected}; use the idforge that wrote it, or stop every process using it and move the file away")]
    Version {
        /// The file.
        path: String,
        /// The version found.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// The header's checksum does not match: it was damaged.
    #[error("state file {path} has a corrupt header (checksum mismatch); its stamp cannot be trusted. Stop every process still using it, move it away, and restart only when the wall clock is past every id it issued")]
    Corrupt {
        /// The file.
        path: String,
    },
    /// The file was written for another scheme, layout or node.
    #[error("state file {path} belongs to `{found}`, not `{expected}`; sharing it would mix two id spaces. Use a separate path (`StateOptions::path`) for each scheme, layout and node")]
    Mismatch {
        /// The file.
        path: String,
        /// What this generator needs.
        expected: String,
        /// What the file holds.
        found: String,
    },
    /// The file is shared by processes with another exhaustion or clock policy.
    #[error("state file {path} is used with policy `{found}`, but this process asks for `{expected}`; every process sharing a state file must use the same policy (`Policy`: `on_exhausted`, `max_lead`, `on_clock_behind`), or its own path (`StateOptions::path`)")]
    PolicyMismatch {
        /// The file.
        path: String,
        /// This process's policy.
        expected: String,
        /// The file's policy.
        found: String,
    },
    /// The file or its directory can be changed by someone else.
    #[error("state {what} {path} is {problem}; another user could rewind or replace the stamp and make this process issue duplicate ids. {fix}")]
    Untrusted {
        /// `file` or `directory`.
        what: &'static str,
        /// The path.
        path: String,
        /// What is wrong (owner, mode).
        problem: String,
        /// What to do.
        fix: String,
    },
    /// Another process has held the lock under which state files are created in a directory
    /// for longer than creating one takes, and looks stopped or hung.
    #[error("state directory {dir}: cannot create a state file in it: {holder} has held the directory's creation lock for {waited_s} s (creating a state file takes a few milliseconds). {fix}")]
    Busy {
        /// The directory.
        dir: String,
        /// Who holds the lock (`process 1234, stopped`), as far as `/proc/locks` tells.
        holder: String,
        /// How long this process waited.
        waited_s: u64,
        /// What to do.
        fix: String,
    },
    /// No default location for state files can be found.
    #[error("no default directory for state files: {reason}. Give a path (`StateOptions::path`), or set IDFORGE_STATE_DIR (a directory)")]
    NoDefaultDir {
        /// Why.
        reason: String,
    },
    /// The file this process mapped was truncated, deleted or replaced while in use.
    #[error("state file {path} {what} while this process was using it; it stopped issuing ids from it (ids from it could now repeat). Stop every process that used the old file, then restart them")]
    Lost {
        /// The file.
        path: String,
        /// `was truncated`, `was deleted or replaced`, ...
        what: String,
    },
}
