//! `--etcd`: each node-based scheme's node id leased from etcd through `idforge-fleet`
//! (feature `etcd`), one member per scheme, in the namespace prefix + scheme name.

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::OpenOptions;

use crate::config::Fleet;

/// What a scheme's member holds, for `/readyz`, `/metrics` and the log.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) struct LeaseStatus {
    pub namespace: String,
    pub node: u64,
    pub token: i64,
    /// Whether the member may issue now (lease held, not fenced).
    pub issuing: bool,
    /// How far the reservation is ahead of the wall clock, in seconds (negative: behind).
    pub ahead_secs: f64,
    /// Why it may not issue, if it may not.
    pub lost: Option<String>,
    /// The store's last error while renewals fail (etcd down, a role revoked, authentication
    /// turned off).
    pub store_error: Option<String>,
}

impl LeaseStatus {
    /// Why the member does not issue: its loss, else the store's error, else a late renewal.
    pub fn why_not_issuing(&self) -> String {
        match (&self.lost, &self.store_error) {
            (Some(lost), _) => lost.clone(),
            (None, Some(e)) => format!("renewals fail: {e}"),
            (None, None) => "the lease could not be renewed in time".into(),
        }
    }
}

/// The namespace of a scheme: the prefix and the namespace `idforge gen --etcd` uses for it
/// (`idforge_fleet::node::default_namespace`; custom layouts: `custom`, bound in etcd to the
/// first layout that uses it).
#[cfg(feature = "etcd")]
pub(crate) fn namespace(fleet: &Fleet, kind: &Kind, opts: &OpenOptions) -> String {
    let name = idforge_fleet::node::default_namespace(kind, opts.host_digits)
        .unwrap_or_else(|| kind.name().to_string());
    format!("{}{}", fleet.namespace_prefix, name)
}

#[cfg(feature = "etcd")]
pub(crate) use with_etcd::Lease;

#[cfg(feature = "etcd")]
mod with_etcd {
    use std::sync::{Arc, Mutex};
    use std::time::{SystemTime, UNIX_EPOCH};

    use anyhow::Context;
    use idforge_fleet::etcd::EtcdStore;
    use idforge_fleet::{FleetOptions, Member, Store};

    use super::*;

    /// A scheme's membership; taken out at shutdown.
    pub(crate) struct Lease(Mutex<Option<Member>>);

    impl Lease {
        /// Connects to etcd, leases a node id for `kind` and points `opts` at it.
        pub(crate) fn join(
            fleet: &Fleet,
            kind: &Kind,
            opts: &mut OpenOptions,
        ) -> anyhow::Result<Lease> {
            let eps = fleet.etcd.endpoint_list();
            let ns = namespace(fleet, kind, opts);
            // The connection check reads the namespace's prefix only: a role limited to it is
            // enough.
            let etcd = idforge_fleet::EtcdOptions {
                namespace: Some(ns.clone()),
                ..fleet.etcd.clone()
            };
            let store: Arc<dyn Store> = Arc::new(EtcdStore::connect_with(&etcd).map_err(|e| {
                anyhow::anyhow!(
                    "{}: {e} ({}; etcd_* in the config file)",
                    kind.name(),
                    e.failure.settings()
                )
            })?);
            let mut fo = FleetOptions::new(ns, kind, opts)?;
            fo.ttl = fleet.lease_ttl;
            let member = Member::join(store, fo).with_context(|| {
                format!("{}: cannot lease a node id from etcd at {eps}", kind.name())
            })?;
            opts.node = Some(member.node());
            opts.cell = Some(member.cell());
            Ok(Lease(Mutex::new(Some(member))))
        }

        /// What the member holds; `None` once it was shut down.
        pub(crate) fn status(&self) -> Option<LeaseStatus> {
            let g = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let st = g.as_ref()?.status();
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            Some(LeaseStatus {
                namespace: st.namespace,
                node: st.node,
                token: st.token,
                issuing: st.issuing,
                ahead_secs: (st.reserved_ns as f64 - now as f64) / 1e9,
                lost: st.lost,
                store_error: st.store_error,
            })
        }

        /// Stops issuing, records the last time issued and gives the node id back.
        pub(crate) fn shutdown(&self) -> Result<(), String> {
            let m = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
            match m {
                Some(m) => m.shutdown().map_err(|e| e.to_string()),
                None => Ok(()),
            }
        }
    }
}

#[cfg(not(feature = "etcd"))]
mod without_etcd {
    use super::*;

    /// No membership without the `etcd` feature: never made.
    pub(crate) enum Lease {}

    impl Lease {
        pub(crate) fn join(_: &Fleet, _: &Kind, _: &mut OpenOptions) -> anyhow::Result<Lease> {
            anyhow::bail!("this idforge was built without etcd support, so --etcd (IDFORGE_ETCD) cannot lease node ids: build it with `cargo install --path crates/idforge-cli --features etcd` (needs protoc; scripts/etcd install), or give each server its own --node")
        }

        pub(crate) fn status(&self) -> Option<LeaseStatus> {
            match *self {}
        }

        pub(crate) fn shutdown(&self) -> Result<(), String> {
            match *self {}
        }
    }
}

#[cfg(not(feature = "etcd"))]
pub(crate) use without_etcd::Lease;
