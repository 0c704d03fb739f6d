//! The etcd store: the protocol's transactions on etcd v3 (feature `etcd`).
//!
//! Each call runs on a small Tokio runtime of its own, on a thread of its own, so the store can
//! be called from any thread, inside another runtime or not. `etcd-client` does not fail over
//! between endpoints by itself; the member retries every call with backoff, which is safe because
//! every call is guarded by the fencing token or idempotent.

use std::time::{Duration, Instant};

use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, GetOptions, Identity, PutOptions,
    TlsOptions, Txn, TxnOp, TxnOpResponse,
};

use crate::access::{ConnectError, EtcdOptions, Failure};
use crate::store::{Claimed, Scan, Store, StoreError};

/// An etcd cluster, by its client endpoints (`https://10.0.0.5:2379`, ...), with TLS and
/// authentication as [`EtcdOptions`] say.
pub struct EtcdStore {
    rt: tokio::runtime::Runtime,
    client: Client,
    prefix: String,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// An etcd error as a store error: a permission refused is [`StoreError::Denied`] (not retried),
/// anything else [`StoreError::Unavailable`].
fn unavailable(e: etcd_client::Error) -> StoreError {
    let text = e.to_string();
    if text.to_ascii_lowercase().contains("permission denied") {
        StoreError::Denied(text)
    } else {
        StoreError::Unavailable(text)
    }
}

/// The key prefix every namespace lives under; a least-privilege role needs read and write on
/// it, and nothing else (docs/FLEET.md).
pub const KEY_PREFIX: &str = "/idforge/";

/// How long connecting retries an etcd that does not answer (as joining retries an
/// unavailable store).
const CONNECT_RETRY: Duration = Duration::from_secs(10);

/// What went wrong, briefly: a gRPC status's message and the errors under it (tonic keeps the
/// TLS reason in a source), without the generic layers ("transport error").
fn detail(e: &etcd_client::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut src: Option<&dyn std::error::Error> = match e {
        etcd_client::Error::GRpcStatus(s) => {
            parts.push(s.message().to_string());
            std::error::Error::source(s)
        }
        e => {
            parts.push(e.to_string());
            std::error::Error::source(e)
        }
    };
    while let Some(c) = src {
        parts.push(c.to_string());
        src = c.source();
    }
    let generic = ["transport error", "connection error", ""];
    let mut out: Vec<&str> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let later_says_it = parts[i + 1..].iter().any(|q| q.contains(p.as_str()));
        let said = out.iter().any(|o| o.contains(p.as_str()));
        if !generic.contains(&p.as_str()) && !later_says_it && !said {
            out.push(p);
        }
    }
    if out.is_empty() {
        e.to_string()
    } else {
        out.join(": ")
    }
}

/// What a failed first request says about the settings: which endpoint, what failed, what to
/// check.
/// The key prefix the connection check reads: the namespace's, or all of idforge's.
fn check_prefix(o: &EtcdOptions) -> String {
    match &o.namespace {
        Some(n) => format!("{KEY_PREFIX}{n}/"),
        None => KEY_PREFIX.to_string(),
    }
}

fn classify(e: &etcd_client::Error, o: &EtcdOptions) -> ConnectError {
    let eps = o.endpoint_list();
    let prefix = check_prefix(o);
    let detail = detail(e);
    let low = detail.to_ascii_lowercase();
    let ca = o
        .ca_cert
        .as_ref()
        .map_or_else(String::new, |p| p.display().to_string());
    let (failure, message) = if low.contains("authentication failed")
        || low.contains("invalid user id or password")
    {
        (
            Failure::Auth,
            format!(
                "etcd at {eps} refused user {:?}: wrong user name or password ({detail}); check the user and the password file or variable",
                o.user.as_deref().unwrap_or("")
            ),
        )
    } else if low.contains("user name is empty") || low.contains("user name not found") {
        (
            Failure::Auth,
            format!(
                "etcd at {eps} has authentication enabled and this client named no user ({detail}): give a user and its password, or a client certificate whose common name is an etcd user"
            ),
        )
    } else if low.contains("permission denied") {
        (
            Failure::Permission,
            format!(
                "etcd at {eps} denied {} access to {prefix} ({detail}): grant its role readwrite on the key prefix {prefix} (etcdctl role grant-permission ROLE --prefix=true readwrite {prefix})",
                o.user.as_deref().map_or_else(|| "this client".to_string(), |u| format!("user {u:?}"))
            ),
        )
    } else if low.contains("certificaterequired")
        || low.contains("certificate required")
        || low.contains("bad certificate")
        || low.contains("badcertificate")
        || low.contains("unknownca")
        || low.contains("unknown ca")
    {
        let what = if o.client_cert.is_some() {
            "did not accept this client's certificate: check that it is signed by a CA in etcd's --trusted-ca-file and has extended key usage clientAuth"
        } else {
            "requires a client certificate (it runs with --client-cert-auth) and none was given: give a client certificate and its key"
        };
        (
            Failure::ClientCertificate,
            format!("etcd at {eps} {what} ({detail})"),
        )
    } else if low.contains("unknownissuer") || low.contains("unknown issuer") {
        (
            Failure::Tls,
            format!(
                "TLS with etcd at {eps} failed: the server's certificate is not signed by the CA certificate {ca} ({detail}); check that this CA file is the one that signed etcd's --cert-file"
            ),
        )
    } else if low.contains("notvalidforname") || low.contains("not valid for name") {
        (
            Failure::Tls,
            format!(
                "TLS with etcd at {eps} failed: the server's certificate is not made out to the endpoint's address ({detail}); connect by a name or IP in its subject alternative names, or reissue it with this one"
            ),
        )
    } else if low.contains("certificate") || low.contains("tls") || low.contains("handshake") {
        (
            Failure::Tls,
            format!(
                "TLS with etcd at {eps} failed ({detail}); check the CA certificate {ca}, the client certificate and key, and that etcd serves TLS on this port"
            ),
        )
    } else if !o.tls()
        && (low.contains("broken pipe")
            || low.contains("connection reset")
            || low.contains("frame")
            || low.contains("h2 protocol"))
    {
        (
            Failure::Tls,
            format!(
                "etcd at {eps} did not answer plain HTTP/2 ({detail}): if it serves TLS, use https:// endpoints and give the CA certificate"
            ),
        )
    } else if o.tls()
        && (low.contains("connection closed")
            || low.contains("connection reset")
            || low.contains("broken pipe"))
    {
        // Under TLS 1.3 a server that refuses the client's certificate (or its absence) does
        // so after the client has finished its side of the handshake: whether the client reads
        // the alert ("certificate required", "bad certificate") or only sees the connection
        // close depends on timing, and on some machines it is always the close (the TLS test
        // failed every run on one). A server that was reached and closed the connection on
        // this client's certificate is not an unreachable one.
        let what = if o.client_cert.is_some() {
            "most likely did not accept this client's certificate: check that it is signed by a CA in etcd's --trusted-ca-file and has extended key usage clientAuth"
        } else {
            "most likely requires a client certificate (it runs with --client-cert-auth) and none was given: give a client certificate and its key"
        };
        (
            Failure::ClientCertificate,
            format!(
                "etcd at {eps} closed the connection right after the TLS handshake ({detail}): it {what}"
            ),
        )
    } else {
        (
            Failure::Unreachable,
            format!(
                "cannot reach etcd at {eps} ({detail}; retried for {}s); check the endpoints and that etcd runs",
                CONNECT_RETRY.as_secs()
            ),
        )
    };
    ConnectError::new(failure, message)
}

/// A PEM file's bytes, checked to hold `what` (`CERTIFICATE`, `PRIVATE KEY`).
fn read_pem(path: &std::path::Path, label: &str, what: &str) -> Result<Vec<u8>, ConnectError> {
    crate::access::check_credentials_file(path, label, what == "PRIVATE KEY")?;
    let bytes = std::fs::read(path).map_err(|e| {
        ConnectError::new(
            Failure::Settings,
            format!("cannot read the etcd {label} {}: {e}", path.display()),
        )
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let found = text
        .lines()
        .any(|l| l.starts_with("-----BEGIN ") && l.trim_end().ends_with(&format!("{what}-----")));
    if !found {
        return Err(ConnectError::new(
            Failure::Settings,
            format!(
                "the etcd {label} {} holds no PEM {what} (-----BEGIN ...{what}-----)",
                path.display()
            ),
        ));
    }
    Ok(bytes)
}

impl EtcdStore {
    /// Connects to plain `http://` endpoints, without TLS or a user (a 2 s timeout per request
    /// and per connection attempt).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when no endpoint answers.
    pub fn connect(endpoints: &[String]) -> Result<EtcdStore, StoreError> {
        EtcdStore::connect_with(&EtcdOptions::new(endpoints.iter().cloned()))
            .map_err(|e| StoreError::Unavailable(e.to_string()))
    }

    /// Connects as `opts` say (TLS with a CA and client certificate, a user and password), and
    /// makes one read under [`KEY_PREFIX`] (under the namespace's prefix when `opts` names one,
    /// so a role limited to it suffices) so that a wrong CA, a refused certificate, a wrong
    /// password or a missing permission shows here, with what to check, rather than as retries
    /// while joining. A 2 s timeout per request and per connection attempt.
    ///
    /// # Errors
    /// [`ConnectError`]: its [`Failure`] says what kind.
    pub fn connect_with(opts: &EtcdOptions) -> Result<EtcdStore, ConnectError> {
        opts.check()?;
        let mut co = ConnectOptions::new()
            .with_timeout(Duration::from_secs(2))
            .with_connect_timeout(Duration::from_secs(2));
        if opts.tls() {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &opts.ca_cert {
                let pem = read_pem(ca, "CA certificate", "CERTIFICATE")?;
                tls = tls.ca_certificate(Certificate::from_pem(pem));
            }
            if let (Some(c), Some(k)) = (&opts.client_cert, &opts.client_key) {
                let cert = read_pem(c, "client certificate", "CERTIFICATE")?;
                let key = read_pem(k, "client key", "PRIVATE KEY")?;
                tls = tls.identity(Identity::from_pem(cert, key));
            }
            co = co.with_tls(tls);
        }
        if let (Some(u), Some(p)) = (&opts.user, &opts.password) {
            // etcd's tokens expire (and a restarted etcd forgets simple tokens): get a new one
            // with the same credentials when a request finds its token invalid.
            co = co
                .with_user(u.clone(), p.expose().to_string())
                .with_auto_token_refresh(true);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                ConnectError::new(
                    Failure::Unreachable,
                    format!("cannot start a runtime for etcd: {e}"),
                )
            })?;
        let prefix = check_prefix(opts);
        let attempt = |co: ConnectOptions| async {
            let mut c = Client::connect(&opts.endpoints, Some(co)).await?;
            let first = GetOptions::new()
                .with_prefix()
                .with_keys_only()
                .with_limit(1);
            c.get(prefix.as_str(), Some(first)).await?;
            Ok::<Client, etcd_client::Error>(c)
        };
        // An unreachable etcd may be starting or electing a leader: retry that (only that) for
        // a while, as joining retries an unavailable store.
        let connect = async {
            let start = Instant::now();
            let mut wait = Duration::from_millis(100);
            loop {
                match attempt(co.clone()).await {
                    Ok(c) => return Ok(c),
                    Err(e) => {
                        let e = classify(&e, opts);
                        if e.failure != Failure::Unreachable || start.elapsed() >= CONNECT_RETRY {
                            return Err(e);
                        }
                    }
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(1));
            }
        };
        let client = std::thread::scope(|s| {
            s.spawn(|| rt.block_on(connect))
                .join()
                .expect("the etcd connect thread panicked")
        })?;
        Ok(EtcdStore {
            rt,
            client,
            prefix: "/idforge".into(),
        })
    }

    /// Runs `f` on the store's runtime, on a thread of its own.
    fn run<T: Send>(
        &self,
        f: impl FnOnce(Client) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>> + Send,
    ) -> T {
        let client = self.client.clone();
        std::thread::scope(|s| {
            s.spawn(|| self.rt.block_on(f(client)))
                .join()
                .expect("an etcd call panicked")
        })
    }

    fn node_key(&self, ns: &str, node: u64) -> String {
        format!("{}/{ns}/node/{node}", self.prefix)
    }

    fn hwm_key(&self, ns: &str, node: u64) -> String {
        format!("{}/{ns}/hwm/{node}", self.prefix)
    }
}

fn parse_u64(key: &str, value: &[u8]) -> Result<u64, StoreError> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| StoreError::Corrupt {
            key: key.to_string(),
            value: String::from_utf8_lossy(value).into_owned(),
        })
}

impl Store for EtcdStore {
    fn grant(&self, ttl: Duration) -> Result<(i64, Duration), StoreError> {
        let secs = ttl.as_secs().max(1) as i64;
        self.run(move |mut c| Box::pin(async move { c.lease_grant(secs, None).await }))
            .map(|r| (r.id(), Duration::from_secs(r.ttl().max(0) as u64)))
            .map_err(unavailable)
    }

    fn bind_spec(&self, ns: &str, spec: &str) -> Result<Option<String>, StoreError> {
        let key = format!("{}/{ns}/spec", self.prefix);
        let want = spec.to_string();
        let spec = spec.to_string();
        let resp = self
            .run(move |mut c| {
                Box::pin(async move {
                    let txn = Txn::new()
                        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                        .and_then([TxnOp::put(key.clone(), spec, None)])
                        .or_else([TxnOp::get(key, None)]);
                    c.txn(txn).await
                })
            })
            .map_err(unavailable)?;
        if resp.succeeded() {
            return Ok(None);
        }
        for op in resp.op_responses() {
            if let TxnOpResponse::Get(g) = op {
                if let Some(kv) = g.kvs().first() {
                    let found = String::from_utf8_lossy(kv.value()).into_owned();
                    return Ok((found != want).then_some(found));
                }
            }
        }
        Ok(None)
    }

    fn check_owner(&self, ns: &str, node: u64, token: i64) -> Result<bool, StoreError> {
        let nk = self.node_key(ns, node);
        self.run(move |mut c| {
            Box::pin(async move {
                let txn = Txn::new().when([Compare::create_revision(nk, CompareOp::Equal, token)]);
                c.txn(txn).await
            })
        })
        .map(|r| r.succeeded())
        .map_err(unavailable)
    }

    fn keep_alive(&self, lease: i64) -> Result<bool, StoreError> {
        // Opening the keep-alive stream sends one renewal and reads its answer: that is the
        // renewal (no second message).
        match self.run(move |mut c| Box::pin(async move { c.lease_keep_alive(lease).await })) {
            Ok(_) => Ok(true),
            // etcd-client reports an expired lease as an error from `lease_keep_alive` itself.
            Err(etcd_client::Error::LeaseKeepAliveError(m)) if m == "lease not found" => Ok(false),
            Err(e) => Err(unavailable(e)),
        }
    }

    fn revoke(&self, lease: i64) -> Result<(), StoreError> {
        match self.run(move |mut c| Box::pin(async move { c.lease_revoke(lease).await })) {
            Ok(_) => Ok(()),
            // A lease that is gone (expired, revoked) is what revoking wants.
            Err(etcd_client::Error::GRpcStatus(s)) if s.message().contains("not found") => Ok(()),
            Err(e) => Err(unavailable(e)),
        }
    }

    fn scan(&self, ns: &str) -> Result<Scan, StoreError> {
        let prefix = format!("{}/{ns}/", self.prefix);
        let p = prefix.clone();
        let kvs = self
            .run(move |mut c| {
                Box::pin(async move { c.get(p, Some(GetOptions::new().with_prefix())).await })
            })
            .map_err(unavailable)?;
        let mut scan = Scan::default();
        for kv in kvs.kvs() {
            let key = String::from_utf8_lossy(kv.key()).into_owned();
            let rest = &key[prefix.len()..];
            if let Some(n) = rest.strip_prefix("node/") {
                // A key that is not a node id (written by hand) is not ours to claim or count.
                if let Ok(node) = parse_u64(&key, n.as_bytes()) {
                    scan.held.insert(node);
                }
            } else if let Some(n) = rest.strip_prefix("hwm/") {
                let Ok(node) = parse_u64(&key, n.as_bytes()) else {
                    continue;
                };
                match parse_u64(&key, kv.value()) {
                    Ok(h) => {
                        scan.hwm.insert(node, h);
                    }
                    Err(_) => {
                        scan.corrupt.insert(node);
                    }
                }
            }
        }
        Ok(scan)
    }

    fn try_claim(
        &self,
        ns: &str,
        node: u64,
        lease: i64,
        holder: &str,
    ) -> Result<Option<Claimed>, StoreError> {
        let nk = self.node_key(ns, node);
        let hk = self.hwm_key(ns, node);
        let holder = holder.to_string();
        let (nk2, hk2) = (nk.clone(), hk.clone());
        let resp = self
            .run(move |mut c| {
                Box::pin(async move {
                    let txn = Txn::new()
                        .when([Compare::create_revision(nk2.clone(), CompareOp::Equal, 0)])
                        .and_then([
                            TxnOp::put(nk2, holder, Some(PutOptions::new().with_lease(lease))),
                            TxnOp::get(hk2, None),
                        ]);
                    c.txn(txn).await
                })
            })
            .map_err(unavailable)?;
        if !resp.succeeded() {
            return Ok(None);
        }
        let token = resp.header().map(|h| h.revision()).ok_or_else(|| {
            StoreError::Unavailable("a transaction reply without a header".into())
        })?;
        let mut hwm_ns = None;
        for op in resp.op_responses() {
            if let TxnOpResponse::Get(g) = op {
                if let Some(kv) = g.kvs().first() {
                    hwm_ns = Some(parse_u64(&hk, kv.value())?);
                }
            }
        }
        let _ = nk;
        Ok(Some(Claimed { token, hwm_ns }))
    }

    fn reserve(&self, ns: &str, node: u64, token: i64, hwm_ns: u64) -> Result<bool, StoreError> {
        // The mark only rises: read it (and its mod revision) under the token, then write only
        // if it is still that version. A write of ours delayed past a later one (a call that
        // timed out and was retried higher) finds the mark changed and is not applied; a lost
        // compare reads the mark again, and a mark at or above `hwm_ns` is left as it is.
        let nk = self.node_key(ns, node);
        let hk = self.hwm_key(ns, node);
        let read = |resp: &etcd_client::TxnResponse| -> Result<(u64, i64), StoreError> {
            for op in resp.op_responses() {
                if let TxnOpResponse::Get(g) = op {
                    if let Some(kv) = g.kvs().first() {
                        return Ok((parse_u64(&hk, kv.value())?, kv.mod_revision()));
                    }
                }
            }
            Ok((0, 0)) // no mark yet: mod revision 0 compares equal to a missing key
        };
        let (nk1, hk1) = (nk.clone(), hk.clone());
        let first = self
            .run(move |mut c| {
                Box::pin(async move {
                    let txn = Txn::new()
                        .when([Compare::create_revision(nk1, CompareOp::Equal, token)])
                        .and_then([TxnOp::get(hk1, None)]);
                    c.txn(txn).await
                })
            })
            .map_err(unavailable)?;
        if !first.succeeded() {
            return Ok(false);
        }
        let (mut mark, mut rev) = read(&first)?;
        // Each lost compare means the mark was written in between (by a delayed write of this
        // holder: nobody else writes it under its token); a few rounds settle it.
        for _ in 0..8 {
            if mark >= hwm_ns {
                return Ok(true);
            }
            let (nk2, hk2) = (nk.clone(), hk.clone());
            let resp = self
                .run(move |mut c| {
                    Box::pin(async move {
                        let txn = Txn::new()
                            .when([
                                Compare::create_revision(nk2, CompareOp::Equal, token),
                                Compare::mod_revision(hk2.clone(), CompareOp::Equal, rev),
                            ])
                            .and_then([TxnOp::put(hk2.clone(), hwm_ns.to_string(), None)])
                            .or_else([TxnOp::get(hk2, None)]);
                        c.txn(txn).await
                    })
                })
                .map_err(unavailable)?;
            if resp.succeeded() {
                return Ok(true);
            }
            // The token or the mark changed: a lost token fences at once, a changed mark is
            // compared again.
            (mark, rev) = read(&resp)?;
            if !self.check_owner(ns, node, token)? {
                return Ok(false);
            }
        }
        Err(StoreError::Unavailable(format!(
            "the mark at {hk} kept changing while it was being raised"
        )))
    }

    fn release(&self, ns: &str, node: u64, token: i64, hwm_ns: u64) -> Result<bool, StoreError> {
        let nk = self.node_key(ns, node);
        let hk = self.hwm_key(ns, node);
        self.run(move |mut c| {
            Box::pin(async move {
                let txn = Txn::new()
                    .when([Compare::create_revision(
                        nk.clone(),
                        CompareOp::Equal,
                        token,
                    )])
                    .and_then([
                        TxnOp::put(hk, hwm_ns.to_string(), None),
                        TxnOp::delete(nk, None),
                    ]);
                c.txn(txn).await
            })
        })
        .map(|r| r.succeeded())
        .map_err(unavailable)
    }
}
