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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::Error;
use crate::shm::StateOptions;

use super::catalog::Kind;
use super::open::{OpenOptions, Opened};

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
            setting: if what.starts_with("IDFORGE_") {
                format!("{what}={}", path.display())
            } else {
                format!("{what} {:?}", path.display().to_string())
            },
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
    if std::env::var_os("IDFORGE_STATE").is_some_and(|v| !v.is_empty()) {
        return format!(
            "(IDFORGE_STATE names the state file of every host-wide generator of this process: \
             point it at a file in a private directory you can write, or unset it and set \
             IDFORGE_STATE_DIR; or keep the sequence in this process with {in_process} or \
             IDFORGE_SHARED=0, where processes started separately can repeat each other's ids)"
        );
    }
    format!(
        "(idforge keeps each scheme's sequence in a state file shared by every process of the \
         host unless told otherwise, so that workers and forked children never repeat ids: set \
         IDFORGE_STATE_DIR to a private directory you can write, or keep the sequence in this \
         process with {in_process} or IDFORGE_SHARED=0, where processes started separately can \
         repeat each other's ids)"
    )
}

/// What a state file error adds when `IDFORGE_STATE` is set and the file is another scheme's:
/// that variable names one file, for one scheme.
pub fn env_state_hint(e: &Error) -> Option<&'static str> {
    let mismatch = matches!(
        e,
        Error::StateFile(crate::error::StateFileError::Mismatch { .. })
    );
    (mismatch && std::env::var_os("IDFORGE_STATE").is_some_and(|v| !v.is_empty())).then_some(
        "(IDFORGE_STATE names one state file, which holds one scheme's sequence: to give each \
         scheme its own file, unset it and set IDFORGE_STATE_DIR to their directory)",
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
    /// [`shared_hint`]), `None` for an in-process one.
    ///
    /// Every user of a state file must agree on its policy and durability, so a host-wide
    /// generator with a policy of its own (`own_policy`) or in durable mode needs a file other
    /// than the scheme's default one (`state`, or `IDFORGE_STATE`), or `shared` false: it is
    /// refused otherwise, since on the default file it would refuse (or be refused by) every
    /// default generator of the scheme, and kept in its process unasked it would repeat the ids
    /// of processes started separately. With `IDFORGE_SHARED=0` it stays in its process, as
    /// every default generator does. A generator with a fixed clock (`opts.at_ns`), made for
    /// reproducible ids, stays in its process unless given a file of its own.
    ///
    /// The host-wide file is `state`, else `IDFORGE_STATE` (one file, as for
    /// `idforge gen --shared`), else the scheme's file under the state directory
    /// ([`env_state_path`]): the file the command line uses, whether the generator asked for
    /// `shared` or not.
    ///
    /// # Errors
    /// [`Error::Setting`] for settings that contradict each other or leave the place of a
    /// generator with its own policy open, a relative path, or file modes that are not
    /// permission bits; what [`shared_by_default`] and [`Kind::default_state_path`] return.
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
            None => self.state.is_some() || (!fixed && shared_by_default(kind)?),
        };
        let env_file = std::env::var_os("IDFORGE_STATE").is_some_and(|v| !v.is_empty());
        if shared && (own_policy || self.durable) && self.state.is_none() && !env_file {
            // The fingerprint of the file's first user stays in it: the default file with a
            // policy of its own refused every default generator of the host (and the command
            // line) until it was deleted, and deleted, a default generator reissued ids the
            // run-ahead ones had issued ahead of the clock (4,728,000 of 21,313,000).
            return Err(conflict(
                if self.durable {
                    "durable mode on the scheme's default state file"
                } else {
                    "a policy of its own on the scheme's default state file"
                },
                "every user of a state file must agree on its policy and durability, and the \
                 default file is every default generator's: add `state` (an absolute path that \
                 every process with these settings uses) or `shared` false (this process only: \
                 processes started separately can then repeat its ids)",
            ));
        }
        if !shared {
            if self.durable || self.state_mode.is_some() {
                return Err(conflict(
                    "`durable` or `state_mode` with an in-process sequence",
                    "they apply to a state file: add `state` (or leave out `shared` false)",
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
            // The file `idforge gen --shared` uses, asked for or not: a default generator on
            // another file than the command line's (or than a `shared` true one's) would repeat
            // its ids.
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

/// A host-wide generator opened once per process for each set of options (the state file
/// among them) and handed out again while its file is the same file: a package whose callers
/// make a generator per request (`new Generator('uuid7')` in a handler) would otherwise map the
/// file once per call, and a process holds at most 256 mappings (each with its guard against a
/// truncated file), which the garbage collector of the language frees late or never. An
/// in-process generator (no `opts.state`) is opened anew each time.
///
/// A generator is handed out again only while the path names the file it mapped (same device
/// and inode): a file deleted or replaced meanwhile, which stopped that generator for good, is
/// opened anew.
///
/// ```
/// use idforge::schemes::catalog::Kind;
/// use idforge::schemes::open::OpenOptions;
/// use idforge::schemes::placement::open_reused;
/// use idforge::StateOptions;
/// let dir = std::env::temp_dir().join(format!("idforge-doc-reuse-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let kind = Kind::from_name("uuid7", None)?;
/// let opts = OpenOptions { state: Some(StateOptions::new(dir.join("u.state"))), ..OpenOptions::default() };
/// let (a, b) = (open_reused(&kind, &opts)?, open_reused(&kind, &opts)?);
/// assert!(std::sync::Arc::ptr_eq(&a, &b));
/// assert!(a.next()? < b.next()?);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), idforge::Error>(())
/// ```
///
/// # Errors
/// What [`Opened::open`] returns.
pub fn open_reused(kind: &Kind, opts: &OpenOptions) -> Result<Arc<Opened>, Error> {
    let Some(st) = &opts.state else {
        return Ok(Arc::new(Opened::open(kind, opts)?));
    };
    type Reused = HashMap<String, ((u64, u64), Arc<Opened>)>;
    static OPENED: Mutex<Option<Reused>> = Mutex::new(None);
    let identity = |path: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    };
    let key = format!("{kind:?}|{opts:?}");
    // Opening takes microseconds and runs no code of the caller's: held across it, the lock
    // makes two threads asking at once share one generator.
    let mut map = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    let map = map.get_or_insert_with(HashMap::new);
    if let Some((id, g)) = map.get(&key) {
        if identity(&st.path) == Some(*id) {
            return Ok(Arc::clone(g));
        }
    }
    // The file's identity before and after the open: kept only when they agree (or the open
    // made the file), so that a file replaced during the open is not paired with the generator
    // of the other one. (Paired, it would refuse every id as lost, never repeat one.)
    let before = identity(&st.path);
    let g = Arc::new(Opened::open(kind, opts)?);
    match (before, identity(&st.path)) {
        (a, Some(b)) if a.is_none_or(|a| a == b) => {
            map.insert(key, (b, Arc::clone(&g)));
        }
        _ => {
            map.remove(&key);
        }
    }
    Ok(g)
}
