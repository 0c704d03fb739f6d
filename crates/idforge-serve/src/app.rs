//! The service's state: the schemes it opened, with their leases, and the limits shared by
//! every request.

use std::sync::{Arc, Mutex};

use anyhow::Context;
use axum::http::StatusCode;
use idforge::schemes::catalog::{Identity, Kind, NAMES};
use idforge::schemes::open::{OpenOptions, Opened};
use idforge::StateOptions;
use prometheus_client::metrics::counter::Counter;

use crate::auth::Tokens;
use crate::config::{Config, MAX_COUNT_CEILING};
use crate::errors::{fail, query_words, ApiError};
use crate::fleet::{Lease, LeaseStatus};
use crate::metrics::Metrics;

/// One scheme the service issues.
pub(crate) struct Served {
    pub(crate) gen: Opened,
    /// The node (or host) id it issues with, for the metrics.
    pub(crate) node: Option<u64>,
    /// Its ids issued, as exported by `/metrics`.
    pub(crate) issued: Counter,
    /// The most ids it can issue a second (its counter's ids per tick), where it has a
    /// sequencer: a batch that needs longer than the timeout is refused before it starts.
    pub(crate) ids_per_second: Option<f64>,
    /// Whether its tick is longer than a millisecond (Sonyflake's 10 ms, a custom layout's):
    /// its small batches, which may sleep until the next tick, are made on the blocking pool.
    pub(crate) coarse_tick: bool,
    /// Why it can no longer issue (a lost state file), once that happened.
    pub(crate) broken: Mutex<Option<String>>,
    /// Its node id's lease, with `--etcd`.
    pub(crate) lease: Option<Lease>,
}

impl Served {
    /// Why the scheme can no longer issue, once it cannot.
    pub(crate) fn broken(&self) -> Option<String> {
        self.broken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Notes a refusal of the generator: a lost state file leaves the scheme unready until the
    /// service restarts (other refusals pass).
    pub(crate) fn refused(&self, e: &idforge::Error) {
        if matches!(e, idforge::Error::StateFile(_)) {
            *self.broken.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
    }
    pub(crate) fn lease_status(&self) -> Option<LeaseStatus> {
        self.lease.as_ref().and_then(Lease::status)
    }
}

/// The service: its configuration and the schemes it opened.
pub struct App {
    pub(crate) config: Config,
    pub(crate) schemes: Vec<Served>,
    /// The schemes of the catalog not served for want of a node id, with the flag that gives one.
    pub(crate) left_out: Vec<(String, &'static str)>,
    /// The custom scheme of the configured layout.
    pub(crate) custom: Option<Kind>,
    /// The large (streamed) batches in flight: at most `config.max_batches`.
    pub(crate) batches: Arc<tokio::sync::Semaphore>,
    pub(crate) metrics: Metrics,
    /// The bearer tokens, as digests.
    pub(crate) tokens: Tokens,
}

impl App {
    /// Opens every scheme of `config` (all of the catalog by default; custom only with a
    /// layout), so that a scheme that cannot be opened stops the service at start. A scheme with
    /// a node (or host) id is served only with one: from `config.node`, `config.host`,
    /// `config.nodes` or leased with `config.fleet`; serving the whole catalog, the others are
    /// left out ([`App::left_out`]).
    ///
    /// # Errors
    /// An unknown scheme, a scheme named in `config.schemes` (or custom, by its layout) that
    /// needs a node id none was given for, a layout that does not parse, a `max_count` over
    /// [`MAX_COUNT_CEILING`], a node that does not fit a scheme's layout, a state file that
    /// cannot be used, with the scheme named.
    pub fn open(config: Config) -> anyhow::Result<Arc<App>> {
        if config.max_count > MAX_COUNT_CEILING {
            anyhow::bail!(
                "max count {} is over the ceiling of {MAX_COUNT_CEILING} ids per request: set at most that (--max-count)",
                config.max_count
            );
        }
        // The layout is parsed whether or not custom is asked for: a setting the service cannot
        // use stops it, with the reason `idforge gen --layout` gives.
        let custom = match config.layout.as_deref() {
            Some(spec) => Some(
                Kind::from_name("custom", Some(spec))
                    .context("the custom scheme's layout (--layout) does not parse")?,
            ),
            None => None,
        };
        for name in config.nodes.keys() {
            let kind = resolve(name, custom.as_ref()).with_context(|| {
                format!("[nodes] in the config file names {name:?}, not a scheme")
            })?;
            if !matches!(kind.identity(), Identity::Node { .. } | Identity::Host) {
                anyhow::bail!(
                    "[nodes] in the config file gives {} a node id, but it has no node field",
                    kind.name()
                );
            }
        }
        let explicit = config.schemes.is_some();
        let names: Vec<String> = config
            .schemes
            .clone()
            .unwrap_or_else(|| NAMES.iter().map(|n| n.to_string()).collect());
        let mut metrics = Metrics::new();
        let mut schemes = Vec::new();
        let mut left_out = Vec::new();
        for name in &names {
            let kind = match resolve(name, custom.as_ref()) {
                Ok(k) => k,
                // Serving the whole catalog: custom without a layout (and schemes this build
                // leaves out) are skipped.
                Err(_) if !explicit => continue,
                Err(e) => return Err(e).context("cannot serve the schemes asked for (--schemes)"),
            };
            if schemes.iter().any(|s: &Served| s.gen.kind() == &kind) {
                continue;
            }
            let own = config.nodes.get(kind.name()).copied();
            let (node, needs) = match kind.identity() {
                Identity::Node { .. } => (own.or(config.node), Some("--node N")),
                Identity::Host => (own.or(config.host), Some("--host N")),
                Identity::Tag { .. } | Identity::None | Identity::PidAndMac => (None, None),
            };
            // idforge never picks a node id: a scheme with one is served only with a node id
            // given for it, or leased from etcd.
            if let (None, Some(flag), None) = (node, needs, &config.fleet) {
                // custom is asked for by its layout.
                if explicit || matches!(kind, Kind::Layout(idforge::Scheme::Custom(_))) {
                    anyhow::bail!(
                        "{} needs a node id, and idforge never picks one: give {flag} (or \
                         {} = N under [nodes] in the config file, or --etcd), or leave {} out of --schemes",
                        kind.name(),
                        kind.name(),
                        kind.name()
                    );
                }
                left_out.push((kind.name().to_string(), flag));
                continue;
            }
            let mut opts = OpenOptions {
                node,
                clock: config.clock,
                ..OpenOptions::default()
            };
            // With --etcd the node id is leased, and the member's cell keeps the stamp (with
            // time reserved in etcd) instead of a state file.
            let lease = match &config.fleet {
                Some(f) if kind.leases_node() => Some(Lease::join(f, &kind, &mut opts)?),
                _ => None,
            };
            let node = opts.node;
            if lease.is_none() && !config.in_process && kind.host_wide() {
                // `IDFORGE_STATE` names the one file `idforge gen --shared` and the language
                // packages use for every scheme: the service's files in the state directory
                // would be others, and the two would repeat each other's ids.
                if std::env::var_os("IDFORGE_STATE").is_some_and(|v| !v.is_empty()) {
                    anyhow::bail!(
                        "IDFORGE_STATE is set: it names the one state file that `idforge gen \
                         --shared` and the Python and Node.js packages use, while the service \
                         keeps each scheme in its own file of the state directory, so the two \
                         would draw from different sequences and repeat each other's ids; unset \
                         IDFORGE_STATE (and set IDFORGE_STATE_DIR), or serve with --in-process"
                    );
                }
                let path = kind.default_state_path(&opts).with_context(|| {
                    format!("{}: no default state file (set IDFORGE_STATE_DIR, or serve with --in-process)", kind.name())
                })?;
                let state = StateOptions::new(path);
                opts.state = Some(match config.state_mode {
                    Some(mode) => state.shared_mode(mode),
                    None => state,
                });
            }
            let gen = Opened::open(&kind, &opts).with_context(|| {
                format!(
                    "cannot open {} (pick the schemes to serve with --schemes)",
                    kind.name()
                )
            })?;
            let timebase = kind.timebase(&opts).ok().flatten();
            let ids_per_second = timebase
                .map(|tb| (1u64 << tb.counter_bits.min(63)) as f64 * 1e9 / tb.tick_ns as f64);
            let coarse_tick = timebase.is_some_and(|tb| tb.tick_ns > 1_000_000);
            schemes.push(Served {
                gen,
                node,
                issued: metrics.issued(kind.name()),
                ids_per_second,
                coarse_tick,
                broken: Mutex::new(None),
                lease,
            });
        }
        if schemes.is_empty() {
            anyhow::bail!("no scheme to serve: name some with --schemes");
        }
        if schemes.iter().any(|s| s.lease.is_some()) {
            metrics.add_leases();
        }
        Ok(Arc::new(App {
            schemes,
            left_out,
            custom,
            batches: Arc::new(tokio::sync::Semaphore::new(config.max_batches)),
            tokens: Tokens::new(&config.tokens),
            config,
            metrics,
        }))
    }

    /// The large (streamed) batches in flight: at most `config.max_batches`. A batch counts
    /// from its start until it is made, or stopped because its request is gone.
    pub fn batches_in_flight(&self) -> usize {
        self.config.max_batches - self.batches.available_permits()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The names of the schemes served, in catalog order.
    pub fn scheme_names(&self) -> Vec<String> {
        self.schemes
            .iter()
            .map(|s| s.gen.name().to_string())
            .collect()
    }

    /// The schemes of the catalog left out because no node id was given for them (served with
    /// `--node`, `--host`, `[nodes]` in the config file or `--etcd`).
    pub fn left_out(&self) -> Vec<String> {
        self.left_out.iter().map(|(n, _)| n.clone()).collect()
    }

    /// What the log says at start about the schemes left out, if any.
    pub fn left_out_note(&self) -> Option<String> {
        if self.left_out.is_empty() {
            return None;
        }
        let mut flags: Vec<&str> = self.left_out.iter().map(|(_, f)| *f).collect();
        flags.sort_unstable_by(|a, b| b.cmp(a));
        flags.dedup();
        Some(format!(
            "not serving {}: they need a node id, and idforge never picks one; serve them with {} (each server its own), --etcd, or a node id per scheme under [nodes] in the config file",
            self.left_out().join(", "),
            flags.join(" / ")
        ))
    }

    /// The state files in use, by scheme.
    pub fn state_files(&self) -> Vec<(String, std::path::PathBuf)> {
        self.schemes
            .iter()
            .filter_map(|s| Some((s.gen.name().to_string(), s.gen.state_path()?.to_path_buf())))
            .collect()
    }

    /// The leases held, by scheme: (scheme, namespace, node id, fencing token).
    pub fn leases(&self) -> Vec<(String, String, u64, i64)> {
        self.schemes
            .iter()
            .filter_map(|s| {
                let st = s.lease_status()?;
                Some((s.gen.name().to_string(), st.namespace, st.node, st.token))
            })
            .collect()
    }

    /// Gives every leased node id back (recording the last time issued as its mark); after this
    /// the leased schemes issue nothing. Returns the failures, by scheme.
    pub fn release_leases(&self) -> Vec<(String, String)> {
        self.schemes
            .iter()
            .filter_map(|s| {
                let e = s.lease.as_ref()?.shutdown().err()?;
                Some((s.gen.name().to_string(), e))
            })
            .collect()
    }

    pub(crate) fn find(&self, name: &str) -> Result<usize, ApiError> {
        // The usual request names a served scheme exactly.
        if let Some(i) = self.schemes.iter().position(|s| s.gen.name() == name) {
            return Ok(i);
        }
        let not_served = |name: &str| {
            fail(
                StatusCode::BAD_REQUEST,
                format!(
                    "{name} is not served here; served: {} (see /v1/schemes for the catalog)",
                    self.scheme_names().join(", ")
                ),
            )
        };
        let kind = match resolve(name, self.custom.as_ref()) {
            Ok(kind) => kind,
            Err(_) if name.trim().eq_ignore_ascii_case("custom") => {
                return Err(not_served("custom"))
            }
            Err(e) => {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    query_words(&format!("{e:#}")),
                ))
            }
        };
        self.schemes
            .iter()
            .position(|s| s.gen.kind() == &kind)
            .ok_or_else(|| not_served(kind.name()))
    }
}

/// The kind of a scheme name: a catalog name, or `custom` with the configured layout.
pub(crate) fn resolve(name: &str, custom: Option<&Kind>) -> anyhow::Result<Kind> {
    match (Kind::from_name(name, None), custom) {
        (Ok(k), _) => Ok(k),
        (Err(_), Some(c)) if name.trim().eq_ignore_ascii_case("custom") => Ok(c.clone()),
        (Err(e), _) => Err(e.into()),
    }
}
// Its one test is about builds without the `etcd` feature.
#[cfg(all(test, not(feature = "etcd")))]
mod tests {
    use super::*;
    use crate::Settings;

    #[test]
    fn etcd_without_the_feature_says_how_to_build_it() {
        let config = Settings {
            etcd: Some("http://127.0.0.1:2379".into()),
            schemes: Some(vec!["uuid7".into(), "snowflake".into()]),
            in_process: Some(true),
            ..Settings::default()
        }
        .finish()
        .unwrap();
        let e = format!("{:#}", App::open(config).err().expect("refused"));
        assert!(e.contains("built without etcd support"), "{e}");
        assert!(e.contains("--features etcd"), "{e}");
        // Schemes without a node id do not need etcd.
        let config = Settings {
            etcd: Some("http://127.0.0.1:2379".into()),
            schemes: Some(vec!["uuid7".into()]),
            in_process: Some(true),
            ..Settings::default()
        }
        .finish()
        .unwrap();
        assert!(App::open(config).is_ok());
    }
}
