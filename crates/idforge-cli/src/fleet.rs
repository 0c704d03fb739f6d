//! `--etcd`: the node id leased from etcd through `idforge-fleet`, and `idforge fleet status`.

use std::time::Duration;

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::OpenOptions;

use crate::usage;

/// Where to lease the node id.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub struct FleetPlan {
    endpoints: Vec<String>,
    namespace: String,
    ttl: Duration,
}

/// The plan for `--etcd` (or IDFORGE_ETCD), checked against the scheme.
pub fn plan(
    flag: Option<String>,
    namespace: Option<String>,
    ttl: Option<u64>,
    kind: &Kind,
    node_given: bool,
    host_digits: Option<u32>,
) -> anyhow::Result<Option<FleetPlan>> {
    let from_env = std::env::var("IDFORGE_ETCD")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let Some(eps) = flag.or(if node_given { None } else { from_env }) else {
        if namespace.is_some() || ttl.is_some() {
            usage!("--namespace and --lease-ttl go with --etcd");
        }
        return Ok(None);
    };
    if !kind.leases_node() {
        usage!(
            "{} has no node id to lease from etcd; --etcd applies to global-id, global-id-128, snowflake, sonyflake, nanots-host and custom layouts with a node field",
            kind.name()
        );
    }
    if node_given {
        usage!(
            "--etcd leases the node id: leave out --node and --host (and IDFORGE_NODE, IDFORGE_HOST, --node-from-hostname)"
        );
    }
    let endpoints: Vec<String> = eps
        .split(',')
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    if endpoints.is_empty() {
        usage!("--etcd needs at least one endpoint, e.g. http://127.0.0.1:2379");
    }
    // The namespace is also bound to its layout in etcd, which refuses a mix.
    let namespace =
        match namespace.or_else(|| idforge_fleet::node::default_namespace(kind, host_digits)) {
            Some(n) => n,
            None => usage!(
                "--etcd with a custom layout needs --namespace NAME: one namespace per id space"
            ),
        };
    if namespace.is_empty() || namespace.contains('/') {
        usage!("--namespace {namespace:?}: use a non-empty name without '/'");
    }
    let ttl = Duration::from_secs(ttl.unwrap_or(10));
    if ttl < Duration::from_secs(2) {
        usage!("--lease-ttl must be at least 2 seconds");
    }
    Ok(Some(FleetPlan {
        endpoints,
        namespace,
        ttl,
    }))
}

#[cfg(feature = "etcd")]
pub use with_etcd::{join, leave, status};

#[cfg(feature = "etcd")]
mod with_etcd {
    use super::*;
    use idforge_fleet::etcd::EtcdStore;
    use idforge_fleet::{FleetOptions, Member};
    use std::sync::Arc;

    /// Joins the fleet and points `opts` at the leased node id and cell.
    pub fn join(p: &FleetPlan, kind: &Kind, opts: &mut OpenOptions) -> anyhow::Result<Member> {
        let store = EtcdStore::connect(&p.endpoints).map_err(|e| {
            crate::failure::Fleet(format!("etcd at {}: {e}", p.endpoints.join(",")))
        })?;
        let mut fo = FleetOptions::new(p.namespace.clone(), kind, opts)?;
        fo.ttl = p.ttl;
        let started = std::time::Instant::now();
        let member =
            Member::join(Arc::new(store), fo).map_err(|e| crate::failure::Fleet(e.to_string()))?;
        let took = started.elapsed();
        let st = member.status();
        eprintln!(
            "idforge: node {} leased from etcd namespace {:?} in {:.1} ms (fencing token {}), time reserved to {}",
            st.node,
            st.namespace,
            took.as_secs_f64() * 1e3,
            st.token,
            idforge::time::format_unix_ns(i128::from(st.reserved_ns), 3)
        );
        opts.node = Some(member.node());
        opts.cell = Some(member.cell());
        Ok(member)
    }

    /// Gives the node id back, recording the last time issued.
    pub fn leave(m: Member) -> anyhow::Result<()> {
        m.shutdown()
            .map_err(|e| crate::failure::Fleet(format!("giving the node id back: {e}")).into())
    }

    /// `idforge fleet status`: who holds which node id, and every node id's mark.
    pub fn status(endpoints: &str, namespace: &str) -> anyhow::Result<std::process::ExitCode> {
        let eps: Vec<String> = endpoints.split(',').map(|e| e.trim().to_string()).collect();
        let store = EtcdStore::connect(&eps)
            .map_err(|e| crate::failure::Fleet(format!("etcd at {endpoints}: {e}")))?;
        let scan = idforge_fleet::Store::scan(&store, namespace)?;
        println!(
            "namespace {namespace:?}: {} node ids held, {} used",
            scan.held.len(),
            scan.hwm.len()
        );
        let all: std::collections::BTreeSet<u64> =
            scan.held.iter().chain(scan.hwm.keys()).copied().collect();
        for n in all {
            println!(
                "node {n:>6}  {}  mark {}",
                if scan.held.contains(&n) {
                    "held"
                } else {
                    "free"
                },
                scan.hwm
                    .get(&n)
                    .map_or("-".into(), |h| idforge::time::format_unix_ns(
                        i128::from(*h),
                        3
                    ))
            );
        }
        Ok(std::process::ExitCode::SUCCESS)
    }
}

#[cfg(not(feature = "etcd"))]
mod without_etcd {
    use super::*;

    const NO_ETCD: &str = "this idforge was built without etcd support: install it with `cargo install --path crates/idforge-cli --features etcd` (needs protoc; scripts/etcd install)";

    pub struct Member;

    pub fn join(_: &FleetPlan, _: &Kind, _: &mut OpenOptions) -> anyhow::Result<Member> {
        usage!("{NO_ETCD}")
    }

    pub fn leave(_: Member) -> anyhow::Result<()> {
        Ok(())
    }

    pub fn status(_: &str, _: &str) -> anyhow::Result<std::process::ExitCode> {
        usage!("{NO_ETCD}")
    }
}

#[cfg(not(feature = "etcd"))]
pub use without_etcd::{join, leave, status};
