//! How a failed command ends: its exit code, and its message in the command line's words (the
//! library names its own settings, such as `StateOptions::path`; here they become flags).

use std::io;
use std::process::ExitCode;

/// The exit codes, as `idforge --help` lists them.
pub const EXIT_CODES: &str = "Exit status:
  0  success
  1  an id or an input line was bad (inspect: the others are still decoded)
  2  usage: an unknown scheme, a bad flag value, or flags that do not go together
  3  the generator refused to issue: the clock is behind the last id, or the layout's time ran out
  4  the state file cannot be used (another user's, damaged, replaced, or for another scheme)
  5  output could not be written
  6  no node id could be leased from etcd (namespace full, clock behind, etcd unreachable)
  7  serve: the address cannot be listened on (in use, or not permitted)";

/// A mistake in how the command was called (exit code 2).
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A fleet error (exit code 6).
#[derive(Debug)]
pub struct Fleet(pub String);

impl std::fmt::Display for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fleet {}

/// Returns a [`Usage`] error: `usage!("--x applies only to {}", y)`.
#[macro_export]
macro_rules! usage {
    ($($t:tt)*) => {
        return Err(anyhow::Error::new($crate::failure::Usage(format!($($t)*))))
    };
}

/// Ends the command: prints the error (unless a reader went away: `| head` is not an error) and
/// returns its exit code.
pub fn report(e: &anyhow::Error) -> ExitCode {
    if let Some(io) = e.downcast_ref::<io::Error>() {
        if io.kind() == io::ErrorKind::BrokenPipe {
            return ExitCode::SUCCESS;
        }
    }
    eprintln!("idforge: error: {}", message(e));
    ExitCode::from(code(e))
}

/// The exit code of an error.
pub fn code(e: &anyhow::Error) -> u8 {
    use idforge::Error as E;
    if e.downcast_ref::<idforge_serve::CannotListen>().is_some() {
        return 7;
    }
    if e.downcast_ref::<Usage>().is_some() {
        return 2;
    }
    if e.downcast_ref::<io::Error>().is_some() {
        return 5;
    }
    if e.downcast_ref::<Fleet>().is_some() {
        return 6;
    }
    match e.downcast_ref::<E>() {
        Some(E::StateFile(_)) => 4,
        Some(E::LeaseLost { .. }) => 6,
        Some(
            E::ClockBehind { .. }
            | E::TimeOutOfRange { .. }
            | E::BeforeEpoch { .. }
            | E::ClockUnavailable(_),
        ) => 3,
        Some(E::MalformedId { .. } | E::AmbiguousId { .. } | E::WrongVersion { .. }) => 1,
        _ => 2,
    }
}

/// The message of an error, with the library's setting names replaced by flags.
pub fn message(e: &anyhow::Error) -> String {
    match e.downcast_ref::<idforge::Error>() {
        Some(idforge::Error::HostRequired) => {
            "nanots-host needs a host id: pass --host N (0-99, or 0-999 with --host-digits 3) or set IDFORGE_HOST; idforge never picks one for you".into()
        }
        _ => flagify(&format!("{e:#}")),
    }
}

/// Library setting names to flags.
const SETTINGS: [(&str, &str); 9] = [
    ("as the `node` setting", "with --node N or IDFORGE_NODE"),
    (
        "give no `node` setting",
        "leave out --node and IDFORGE_NODE",
    ),
    (
        "(`StateOptions::path`, or IDFORGE_STATE_DIR)",
        "(--state PATH, or IDFORGE_STATE_DIR)",
    ),
    ("(`StateOptions::path`)", "(--state PATH or IDFORGE_STATE)"),
    ("`StateOptions::shared_mode`", "--state-mode"),
    (
        "(`Policy`: `on_exhausted`, `max_lead`, `on_clock_behind`)",
        "(--run-ahead, --max-lead, --on-clock-behind)",
    ),
    ("(`Policy::max_lead`)", "(--max-lead MS)"),
    ("(`OnClockBehind::Wait`)", "(--on-clock-behind wait)"),
    ("for the fixed clock (`at`)", "for --at"),
];

/// Library setting names to what `idforge serve` takes instead, where it differs from
/// [`SETTINGS`] (serve names no state file: it makes one per scheme in its state directory).
const SERVE_SETTINGS: [(&str, &str); 1] = [(
    "(`StateOptions::path`)",
    "(IDFORGE_STATE_DIR, or --in-process)",
)];

/// Set by `idforge serve`: messages then name serve's settings ([`SERVE_SETTINGS`]).
static SERVING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that this process serves, for [`flagify`].
pub fn serving() {
    SERVING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Rewrites a library message for the command line: the settings in [`SETTINGS`], and
/// ``format `hex` `` / ``scheme `uuid7` `` as `--format hex` / `--scheme uuid7`.
pub fn flagify(msg: &str) -> String {
    let mut s = msg.to_string();
    if SERVING.load(std::sync::atomic::Ordering::Relaxed) {
        for (from, to) in SERVE_SETTINGS {
            s = s.replace(from, to);
        }
    }
    for (from, to) in SETTINGS {
        s = s.replace(from, to);
    }
    for word in ["format", "scheme"] {
        let pat = format!("{word} `");
        let mut out = String::new();
        let mut rest = s.as_str();
        while let Some(i) = rest.find(&pat) {
            let after = &rest[i + pat.len()..];
            match after.find('`') {
                Some(j) if !after[..j].contains(' ') => {
                    out.push_str(&rest[..i]);
                    out.push_str(&format!("--{word} {}", &after[..j]));
                    rest = &after[j + 1..];
                }
                _ => {
                    out.push_str(&rest[..i + pat.len()]);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        s = out;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_settings_become_flags() {
        let e = idforge::Generator::new(&idforge::Scheme::Snowflake, None).unwrap_err();
        let m = message(&anyhow::Error::new(e));
        assert!(m.contains("--node N or IDFORGE_NODE"), "{m}");
        assert_eq!(
            flagify("pass format `dec` or format `hex`; scheme `uuid7`"),
            "pass --format dec or --format hex; --scheme uuid7"
        );
        assert_eq!(flagify("the format `a b` stays"), "the format `a b` stays");
    }

    #[test]
    fn serve_names_its_state_directory_not_gens_state_flag() {
        // (Other tests in this process are unaffected: no other message of theirs names a
        // state path.)
        serving();
        let m = flagify(
            "cannot open: Permission denied. Choose a writable location (`StateOptions::path`)",
        );
        assert!(m.contains("(IDFORGE_STATE_DIR, or --in-process)"), "{m}");
        assert!(!m.contains("--state PATH"), "{m}");
    }

    #[test]
    fn every_library_setting_name_has_a_flag() {
        // Each token the library uses in a message is translated (a new one must be added here).
        for (from, to) in SETTINGS {
            assert!(!flagify(from).contains('`'), "{from} -> {to}");
        }
    }
}
