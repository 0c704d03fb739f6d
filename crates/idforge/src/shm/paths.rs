//! Where state files are: [`StateOptions`] and the default state directory and paths.

use std::path::PathBuf;
use std::time::Duration;

use super::header::fnv1a;
use super::sys;
use crate::error::{Error, StateFileError};

/// Where the boot id is read (Linux).
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// How to open a [`HostStamp`](super::HostStamp).
#[derive(Debug, Clone)]
pub struct StateOptions {
    /// The state file.
    pub path: PathBuf,
    /// Permission bits of a newly created file (default `0o600`).
    pub mode: u32,
    /// The mode was asked for explicitly to share the file with a group or others: a file and
    /// directory writable as far as `mode` allows, by any owner, are then accepted (see
    /// [`StateOptions::shared_mode`]).
    pub shared: bool,
    /// Durable mode: persist a ceiling before issuing past it.
    pub durable: bool,
    /// Where the boot id is read (default [`BOOT_ID_PATH`]); an unreadable one means the boot
    /// cannot be identified, and durable mode then recovers to the persisted mark on every open.
    pub boot_id_path: PathBuf,
    /// How long an opener that finds the directory locked by the process creating the file
    /// waits when that process is stopped, a zombie or cannot be found, before it gives up with
    /// [`StateFileError::Busy`] naming it (default 10 s; see [`StateOptions::lock_patience`]).
    /// A creator that runs is waited for up to two minutes whatever this is.
    pub lock_patience: Duration,
}

/// [`StateOptions::lock_patience`]'s default.
const DEFAULT_LOCK_PATIENCE: Duration = Duration::from_secs(10);

impl StateOptions {
    /// Options for `path`, mode `0600`, not durable.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StateOptions {
            path: path.into(),
            mode: 0o600,
            shared: false,
            durable: false,
            boot_id_path: PathBuf::from(BOOT_ID_PATH),
            lock_patience: DEFAULT_LOCK_PATIENCE,
        }
    }

    /// Give up on a creator that holds the directory's lock and is stopped, a zombie or gone
    /// after `patience` instead of 10 s: a service whose manager allows it a few seconds to
    /// start can fail with the creator's name in time. Capped at two minutes, the longest an
    /// opener waits for any creator.
    ///
    /// ```
    /// use std::time::Duration;
    /// use idforge::StateOptions;
    ///
    /// let opts = StateOptions::new("/var/lib/ids/snowflake.state").lock_patience(Duration::from_secs(2));
    /// assert_eq!(opts.lock_patience, Duration::from_secs(2));
    /// assert_eq!(StateOptions::new("x").lock_patience, Duration::from_secs(10));
    /// ```
    pub fn lock_patience(mut self, patience: Duration) -> Self {
        self.lock_patience = patience;
        self
    }

    /// Share the file explicitly: new files get `mode` (for instance `0o660` for a group), and an
    /// existing file or directory writable by group or others, or owned by another user, is
    /// accepted as far as `mode` grants that access. Everyone who can write the file can make
    /// every process using it issue duplicates: share only with whom you trust.
    pub fn shared_mode(mut self, mode: u32) -> Self {
        self.mode = mode & 0o7777;
        self.shared = true;
        self
    }
}

/// The home directory of the effective user from the password database (not `$HOME`, which
/// differs between shells, `sudo` and services).
fn passwd_home() -> Option<PathBuf> {
    let dir = sys::passwd_home()?;
    (!dir.is_empty() && dir != "/").then(|| PathBuf::from(dir))
}

/// The default directory for state files: `$IDFORGE_STATE_DIR` if set, else
/// `<home>/.local/state/idforge` with the home directory of the effective user from the password
/// database (`$HOME` only if the user has no entry there).
///
/// The per-shell variables `XDG_STATE_HOME` and `HOME` are deliberately not followed: two shells of
/// one user with different values would otherwise use two state files for one scheme and node,
/// and their ids would collide. There is no fallback to a shared temporary directory (another
/// user could create it first): without a home directory this is
/// [`StateFileError::NoDefaultDir`].
///
/// # Errors
/// [`StateFileError::NoDefaultDir`] when neither the variable nor a home directory is available,
/// or when the variable is a relative path.
pub fn default_state_dir() -> Result<PathBuf, Error> {
    if let Some(d) = std::env::var_os("IDFORGE_STATE_DIR").filter(|v| !v.is_empty()) {
        let d = PathBuf::from(d);
        if d.is_relative() {
            // Resolved against each process's working directory, one value would name a file
            // per directory processes start in (workers with `--chdir`, services with another
            // working directory): two sequences for one scheme and node, and repeated ids (an
            // attack review: 69,152 of 600,000 stamps from two processes).
            return Err(Error::StateFile(StateFileError::NoDefaultDir {
                reason: format!(
                    "IDFORGE_STATE_DIR={} is a relative path, which names another directory in \
                     each working directory (processes started in different places would not \
                     share their files, and would repeat ids); make it absolute",
                    d.display()
                ),
            }));
        }
        return Ok(d);
    }
    let home = passwd_home().or_else(|| {
        std::env::var_os("HOME")
            .filter(|v| !v.is_empty() && v != "/")
            .map(PathBuf::from)
    });
    match home {
        Some(h) => Ok(h.join(".local/state/idforge")),
        None => Err(Error::StateFile(StateFileError::NoDefaultDir {
            reason: "the current user has no home directory".into(),
        })),
    }
}

/// The default state file of a scheme and node: `<default_state_dir>/<scheme>[-node<N>].state`
/// (custom layouts add a hash of their spec, so two layouts never share a file).
///
/// # Errors
/// As [`default_state_dir`].
///
/// ```
/// use idforge::default_state_path;
/// if let Ok(path) = default_state_path("snowflake", "", Some(7)) {
///     assert!(path.ends_with("snowflake-node7.state"));
/// }
/// ```
pub fn default_state_path(
    scheme: &str,
    layout_spec: &str,
    node: Option<u64>,
) -> Result<PathBuf, Error> {
    Ok(default_state_dir()?.join(state_file_name(scheme, layout_spec, node)))
}

/// The name of a scheme and node's state file in any state directory:
/// `<scheme>[-node<N>].state` (custom layouts add a hash of their spec). Programs that keep
/// state files in a directory of their own (the PostgreSQL extension's `idforge.state_dir`)
/// name them as [`default_state_path`] does, so they share a file with `idforge gen --shared`
/// pointed at the same directory.
///
/// ```
/// use idforge::shm::state_file_name;
/// assert_eq!(state_file_name("uuid7", "", None), "uuid7.state");
/// assert_eq!(state_file_name("snowflake", "", Some(7)), "snowflake-node7.state");
/// ```
pub fn state_file_name(scheme: &str, layout_spec: &str, node: Option<u64>) -> String {
    let mut name = scheme.to_string();
    if scheme == "custom" {
        name.push_str(&format!("-{:016x}", fnv1a(&[layout_spec.as_bytes()])));
    }
    if let Some(n) = node {
        name.push_str(&format!("-node{n}"));
    }
    name.push_str(".state");
    name
}
