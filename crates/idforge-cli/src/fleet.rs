//! `--etcd`: the node id leased from etcd through `idforge-fleet`, and `idforge fleet status`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use idforge::schemes::catalog::Kind;
use idforge::schemes::open::OpenOptions;
use idforge_fleet::{ConnectError, EtcdOptions, Password};

use crate::usage;

/// How to reach etcd securely: TLS and a user (for `gen`, `fleet` and `serve`). Each flag falls
/// back to its IDFORGE_ETCD_* variable; the password comes from a file or IDFORGE_ETCD_PASSWORD,
/// never from the command line, and is never printed.
#[derive(Args, Debug, Clone, Default)]
pub struct EtcdAccess {
    /// With --etcd: PEM file of the CA certificate that signed etcd's server certificate; needed
    /// for https:// endpoints (falls back to IDFORGE_ETCD_CACERT).
    #[arg(long, value_name = "FILE")]
    pub etcd_cacert: Option<PathBuf>,
    /// With --etcd: PEM file of this client's certificate, for an etcd started with
    /// --client-cert-auth; with --etcd-key (falls back to IDFORGE_ETCD_CERT).
    #[arg(long, value_name = "FILE")]
    pub etcd_cert: Option<PathBuf>,
    /// With --etcd: PEM file of the client certificate's private key (falls back to
    /// IDFORGE_ETCD_KEY).
    #[arg(long, value_name = "FILE")]
    pub etcd_key: Option<PathBuf>,
    /// With --etcd: the etcd user, when etcd's authentication is enabled (falls back to
    /// IDFORGE_ETCD_USER). The name only: the password comes from --etcd-password-file or
    /// IDFORGE_ETCD_PASSWORD.
    #[arg(long, value_name = "NAME")]
    pub etcd_user: Option<String>,
    /// With --etcd: a file holding the etcd user's password (falls back to
    /// IDFORGE_ETCD_PASSWORD, the password itself, then IDFORGE_ETCD_PASSWORD_FILE).
    #[arg(long, value_name = "FILE")]
    pub etcd_password_file: Option<PathBuf>,
}

fn env_var(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

impl EtcdAccess {
    /// Whether a flag of these is given.
    fn any_flag(&self) -> bool {
        self.etcd_cacert.is_some()
            || self.etcd_cert.is_some()
            || self.etcd_key.is_some()
            || self.etcd_user.is_some()
            || self.etcd_password_file.is_some()
    }

    /// The options for `endpoints`: flags, else the environment; the password file is read
    /// here. Settings that do not go together are a usage error (exit 2).
    pub fn options(self, endpoints: Vec<String>) -> anyhow::Result<EtcdOptions> {
        let path =
            |flag: Option<PathBuf>, var: &str| flag.or_else(|| env_var(var).map(PathBuf::from));
        let password = match (
            self.etcd_password_file,
            env_var("IDFORGE_ETCD_PASSWORD"),
            env_var("IDFORGE_ETCD_PASSWORD_FILE"),
        ) {
            (Some(f), _, _) => Some(Password::from_file(&f).map_err(settings)?),
            (None, Some(p), _) => Some(Password::new(p)),
            (None, None, Some(f)) => Some(Password::from_file(f.as_ref()).map_err(settings)?),
            (None, None, None) => None,
        };
        let o = EtcdOptions {
            endpoints,
            ca_cert: path(self.etcd_cacert, "IDFORGE_ETCD_CACERT"),
            client_cert: path(self.etcd_cert, "IDFORGE_ETCD_CERT"),
            client_key: path(self.etcd_key, "IDFORGE_ETCD_KEY"),
            user: self.etcd_user.or_else(|| env_var("IDFORGE_ETCD_USER")),
            password,
            namespace: None,
        };
        o.check().map_err(settings)?;
        Ok(o)
    }
}

/// A settings error as a usage error (exit 2), with the flags to look at.
fn settings(e: ConnectError) -> anyhow::Error {
    anyhow::Error::new(crate::failure::Usage(format!(
        "{e} ({})",
        e.failure.settings()
    )))
}

/// Where to lease the node id.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub struct FleetPlan {
    etcd: EtcdOptions,
    namespace: String,
    ttl: Duration,
}

/// The endpoints of `--etcd` (comma separated).
fn split_endpoints(eps: &str) -> Vec<String> {
    eps.split(',')
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect()
}

/// The plan for `--etcd` (or IDFORGE_ETCD), checked against the scheme.
pub fn plan(
    flag: Option<String>,
    access: EtcdAccess,
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
        if namespace.is_some() || ttl.is_some() || access.any_flag() {
            usage!("--namespace, --lease-ttl and the --etcd-* flags go with --etcd");
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
    let endpoints = split_endpoints(&eps);
    if endpoints.is_empty() {
        usage!("--etcd needs at least one endpoint, e.g. https://10.0.0.5:2379");
    }
    let etcd = access.options(endpoints)?;
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
        etcd,
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

    /// Connects as `o` says; a failure is a fleet error (exit 6) naming the flags to check.
    fn connect(o: &EtcdOptions) -> anyhow::Result<EtcdStore> {
        if let Some(w) = o.warning() {
            eprintln!("idforge: warning: {w}");
        }
        EtcdStore::connect_with(o).map_err(|e| match e.failure {
            // A file that cannot be read or holds no PEM: a usage error (exit 2).
            idforge_fleet::Failure::Settings => settings(e),
            _ => crate::failure::Fleet(format!("{e} ({})", e.failure.settings())).into(),
        })
    }

    /// Joins the fleet and points `opts` at the leased node id and cell.
    pub fn join(p: &FleetPlan, kind: &Kind, opts: &mut OpenOptions) -> anyhow::Result<Member> {
        // The connection check reads the namespace's prefix only: a role limited to it is
        // enough.
        let etcd = EtcdOptions {
            namespace: Some(p.namespace.clone()),
            ..p.etcd.clone()
        };
        let store = connect(&etcd)?;
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
    pub fn status(
        endpoints: &str,
        access: EtcdAccess,
        namespace: &str,
    ) -> anyhow::Result<std::process::ExitCode> {
        let etcd = EtcdOptions {
            namespace: Some(namespace.to_string()),
            ..access.options(split_endpoints(endpoints))?
        };
        let store = connect(&etcd)?;
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

    pub fn status(_: &str, _: EtcdAccess, _: &str) -> anyhow::Result<std::process::ExitCode> {
        usage!("{NO_ETCD}")
    }
}

#[cfg(not(feature = "etcd"))]
pub use without_etcd::{join, leave, status};
