//! The etcd store: the protocol's transactions on etcd v3 (feature `etcd`).
//!
//! Each call runs on a small Tokio runtime of its own, on a thread of its own, so the store can
//! be called from any thread, inside another runtime or not. `etcd-client` does not fail over
//! between endpoints by itself; the member retries every call with backoff, which is safe because
//! every call is guarded by the fencing token or idempotent.

use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
};

use crate::store::{Claimed, Scan, Store, StoreError};

/// An etcd cluster, by its client endpoints (`http://127.0.0.1:2379`, ...).
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

fn unavailable(e: etcd_client::Error) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl EtcdStore {
    /// Connects to `endpoints` (a 2 s timeout per request and per connection attempt).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when no endpoint answers.
    pub fn connect(endpoints: &[String]) -> Result<EtcdStore, StoreError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unavailable(format!("cannot start a runtime: {e}")))?;
        let opts = ConnectOptions::new()
            .with_timeout(Duration::from_secs(2))
            .with_connect_timeout(Duration::from_secs(2));
        let eps = endpoints.to_vec();
        let client = std::thread::scope(|s| {
            s.spawn(|| rt.block_on(Client::connect(eps, Some(opts))))
                .join()
                .expect("the etcd connect thread panicked")
        })
        .map_err(unavailable)?;
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
