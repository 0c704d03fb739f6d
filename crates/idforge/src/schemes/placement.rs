//! Where a generator made by a language package (the Python and Node.js packages) keeps its
//! sequence: host-wide, in a state file that every process of the host shares, unless asked
//! otherwise. One set of rules, so that a Python worker, a Node.js cluster worker and
//! `idforge gen --shared` agree on the file and refuse the same mistakes.
//!
//! Host-wide is the default for every kind that can be ([`Kind::host_wide`]): workers that a
//! server starts separately (gunicorn, Celery, `node:cluster`, PM2) or forks then draw from one
//! sequence and never repeat an id. `IDFORGE_SHARED=0` keeps each process's sequence to itself.
//!
//! ```
//! use idforge::schemes::catalog::Kind;
//! use idforge::schemes::open::OpenOptions;
//! use idforge::schemes::placement::Placement;
//! let kind = Kind::from_name("uuid7", None)?;
//! let mut opts = OpenOptions::default();
//! // An explicit file: host-wide there.
//! let dir = std::env::temp_dir();
//! let p = Placement { state: Some(dir.join("doc-placement.state")), ..Placement::default() };
//! assert_eq!(p.apply(&kind, &mut opts, false)?, Some(false));
//! assert!(opts.state.is_some());
//! // A relative file names another file in each working directory: refused.
//! let p = Placement { state: Some("ids.state".into()), ..Placement::default() };
//! assert!(p.apply(&kind, &mut OpenOptions::default(), false).is_err());
//! // shared: false keeps the sequence in the process.
//! let p = Placement { shared: Some(false), ..Placement::default() };
//! let mut opts = OpenOptions::default();
//! assert_eq!(p.apply(&kind, &mut opts, false)?, None);
//! assert!(opts.state.is_none());
//! # Ok::<(), idforge::Error>(())
//! ```

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::shm::StateOptions;

use super::catalog::Kind;
use super::open::OpenOptions;

/// What a caller asked for about the sequence's place; `None` and `false` fields were not given.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// `Some(true)`: host-wide; `Some(false)`: in this process; `None`: the default.
    pub shared: Option<bool>,
    /// A state file of the caller's choosing (absolute).
    pub state: Option<PathBuf>,
    /// The permission bits of a state file this process creates (`0o660` to share it with a
    /// group).
    pub state_mode: Option<u32>,
    /// Durable mode: the file is synced before ids past its reservation are issued.
    pub durable: bool,
}

/// Whether generators of `kind` are host-wide when the caller says nothing: every kind that can
/// keep its stamp in a state file ([`Kind::host_wide`]), unless `IDFORGE_SHARED` says `0`,
/// `false`, `no` or `off` (`1`, `true`, `yes`, `on`, empty or unset: host-wide).
///
/// # Errors
/// [`Error::Setting`] for any other value of `IDFORGE_SHARED`.
pub fn shared_by_default(kind: &Kind) -> Result<bool, Error> {
    if !kind.host_wide() {
        return Ok(false);
    }
    match std::env::var("IDFORGE_SHARED") {
        Err(_) => Ok(true),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            other => Err(Error::Setting {
                setting: format!("IDFORGE_SHARED={other:?}"),
                why: "use 1 (each scheme's sequence shared by the host's processes, the default) \
                      or 0 (kept in each process)"
                    .into(),
            }),
        },
    }
}

/// Refuses a relative state path: it names another file in each working directory, so
/// processes started in two places would not share it and would repeat each other's ids
/// (workers in two directories repeated 213,632 of 400,000 ids before this check). `what` names
/// the setting (`IDFORGE_STATE`, `` `state` ``).
///
/// # Errors
/// [`Error::Setting`] for a relative path.
pub fn require_absolute(path: &Path, what: &str) -> Result<(), Error> {
    if path.is_relative() {
        return Err(Error::Setting {
            setting: format!("{what} {:?}", path.display().to_string()),
            why: "a relative path names another file in each working directory, and processes \
                  started in two directories would repeat each other's ids: give an absolute path"
                .into(),
        });
    }
    Ok(())
}

/// The file `idforge gen --shared` uses: `$IDFORGE_STATE` (absolute), else the scheme's file
/// under `$IDFORGE_STATE_DIR` or the default state directory ([`Kind::default_state_path`]).
///
/// # Errors
/// [`Error::Setting`] for a relative `IDFORGE_STATE`; what [`Kind::default_state_path`] returns.
pub fn env_state_path(kind: &Kind, opts: &OpenOptions) -> Result<PathBuf, Error> {
    match std::env::var_os("IDFORGE_STATE").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            require_absolute(&p, "IDFORGE_STATE")?;
            Ok(p)
        }
        None => kind.default_state_path(opts),
    }
}

/// What a state file error adds when the file was not asked for (the default is host-wide):
/// why there is one, and the ways out. `in_process` names the package's way to ask for an
/// in-process sequence (`shared=False`).
pub fn shared_hint(in_process: &str) -> String {
    format!(
        "(idforge keeps each scheme's sequence in a state file shared by every process of the \
         host unless told otherwise, so that workers and forked children never repeat ids: set \
         IDFORGE_STATE_DIR to a private directory you can write, or keep the sequence in this \
         process with {in_process} or IDFORGE_SHARED=0, where processes started separately can \
         repeat each other's ids)"
    )
}

/// Whether [`shared_hint`] helps with `e`: a state file that cannot be made, found or trusted.
pub fn hint_applies(e: &Error) -> bool {
    use crate::error::StateFileError as S;
    matches!(
        e,
        Error::StateFile(
            S::Io { .. } | S::NoDefaultDir { .. } | S::Untrusted { .. } | S::Busy { .. }
        )
    )
}

impl Placement {
    /// Sets `opts.state` as asked: `Some(implicit)` for a host-wide generator (`implicit` when
    /// nobody asked for the file: the default, to which a state file error should add
    /// [`shared_hint`]), `None` for an in-process one. A generator with a fixed clock
    /// (`opts.at_ns`), a policy of its own (`own_policy`) or in durable mode stays in its
    /// process unless asked: on the scheme's default file, whose every user must agree on
    /// both, it would refuse (or be refused by) every default generator of the scheme.
    ///
    /// # Errors
    /// [`Error::Setting`] for settings that contradict each other, a relative path, or file
    /// modes that are not permission bits; what [`shared_by_default`] and
    /// [`Kind::default_state_path`] return.
    pub fn apply(
        &self,
        kind: &Kind,
        opts: &mut OpenOptions,
        own_policy: bool,
    ) -> Result<Option<bool>, Error> {
        let conflict = |setting: &str, why: &str| Error::Setting {
            setting: setting.into(),
            why: why.into(),
        };
        let fixed = opts.at_ns.is_some();
        if self.shared == Some(true) && fixed && self.state.is_none() {
            // As `idforge gen --at --shared`: a fixed clock's stamps on the file wall-clock
            // processes use would leave them behind it (refused until the file is deleted).
            return Err(conflict(
                "a fixed clock (`at`) with `shared` true",
                "it needs a state file of its own: add `state` (not the file wall-clock \
                 generators use)",
            ));
        }
        if self.shared == Some(false) && self.state.is_some() {
            return Err(conflict(
                "`state` with `shared` false",
                "`state` names a host-wide state file, and `shared` false keeps the sequence in \
                 this process: give one or the other",
            ));
        }
        let implicit = self.shared.is_none() && self.state.is_none();
        let shared = match self.shared {
            Some(s) => s || self.state.is_some(),
            None => {
                self.state.is_some()
                    || (!fixed && !own_policy && !self.durable && shared_by_default(kind)?)
            }
        };
        if !shared {
            if self.durable || self.state_mode.is_some() {
                return Err(conflict(
                    "`durable` or `state_mode` with an in-process sequence",
                    "they apply to host-wide generators: leave out `shared` false",
                ));
            }
            opts.state = None;
            return Ok(None);
        }
        let path = match &self.state {
            Some(p) => {
                require_absolute(p, "`state`")?;
                p.clone()
            }
            // The default file of the scheme and node; `IDFORGE_STATE` (one file, as for
            // `idforge gen --shared`) only for a generator that asked for `shared` true.
            None if implicit => kind.default_state_path(opts)?,
            None => env_state_path(kind, opts)?,
        };
        let mut st = StateOptions::new(path);
        if let Some(m) = self.state_mode {
            // As `idforge gen --state-mode`: permission bits only (no setuid, setgid or sticky
            // bit, nothing above them).
            if m > 0o777 {
                return Err(conflict(
                    &format!("`state_mode` {m:#o}"),
                    "it is not permission bits: use 0o600 or 0o660, at most 0o777",
                ));
            }
            st = st.shared_mode(m);
        }
        st.durable = self.durable;
        opts.state = Some(st);
        Ok(Some(implicit))
    }
}
