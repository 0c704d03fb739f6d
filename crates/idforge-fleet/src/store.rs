//! Where leases, node claims and high-water marks live: the [`Store`] trait, and an in-memory
//! store for tests of the protocol (the etcd store is `crate::etcd::EtcdStore`).
//!
//! Keys, under a namespace's prefix (`/idforge/<namespace>/`):
//! * `node/<id>`: exists while a process holds node id `<id>`; bound to its lease, so it vanishes
//!   when the lease expires. Its create revision is the holder's **fencing token**.
//! * `hwm/<id>`: the node id's high-water mark, Unix nanoseconds: no id of this node id was or
//!   will be issued with a later time by any holder that wrote it. Never bound to a lease.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What can go wrong talking to a store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or answered with an error; the call may be retried (every
    /// call is guarded or idempotent).
    #[error("the coordination store is unavailable: {0}")]
    Unavailable(String),
    /// The store refused the request for lack of permission: retrying cannot help.
    #[error("etcd denied the request ({0}): this client's role needs readwrite, not only read, on the namespace's key prefix (/idforge/<namespace>/, see docs/FLEET.md)")]
    Denied(String),
    /// A value in the store is not what idforge writes.
    #[error("the coordination store holds an unexpected value at {key}: {value:?}")]
    Corrupt {
        /// The key.
        key: String,
        /// What it holds.
        value: String,
    },
}

/// A node id's state in a namespace, from [`Store::scan`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Node ids held now.
    pub held: BTreeSet<u64>,
    /// The high-water mark (Unix ns) of every node id ever used.
    pub hwm: BTreeMap<u64, u64>,
    /// Node ids whose mark is not a number (written by hand?): never claimed, so one bad key
    /// does not block the namespace.
    pub corrupt: BTreeSet<u64>,
}

/// A successful claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimed {
    /// The fencing token: the store revision that created the node key.
    pub token: i64,
    /// The node id's high-water mark when it was claimed (Unix ns), if it was used before.
    pub hwm_ns: Option<u64>,
}

/// The operations of the protocol, each one atomic in the store. Implementations must make
/// `try_claim` and `reserve` transactions: the claim creates the node key only if it does not
/// exist and reads the high-water mark in the same step; `reserve` and `release` write only while
/// the node key still has the creation revision `token`, and `reserve` only ever raises the mark
/// (a write delayed past a later one, as a retried call can be, must not lower it).
pub trait Store: Send + Sync {
    /// Grants a lease of `ttl` (whole seconds); returns its id and the time to live the store
    /// granted (it may grant less).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn grant(&self, ttl: Duration) -> Result<(i64, Duration), StoreError>;
    /// Binds `namespace` to `spec` (the id space's layout: time base and node range) if it is
    /// unbound; returns `Some(found)` when it is bound to another spec.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn bind_spec(&self, namespace: &str, spec: &str) -> Result<Option<String>, StoreError>;
    /// Whether the claim `token` still holds `node` (its key was not deleted or replaced).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn check_owner(&self, namespace: &str, node: u64, token: i64) -> Result<bool, StoreError>;
    /// Renews a lease; `Ok(false)` if it no longer exists (expired or revoked).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn keep_alive(&self, lease: i64) -> Result<bool, StoreError>;
    /// Revokes a lease (its node keys vanish). Revoking a lease that is gone is not an error.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn revoke(&self, lease: i64) -> Result<(), StoreError>;
    /// The held node ids and every high-water mark of `namespace`.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`], [`StoreError::Corrupt`].
    fn scan(&self, namespace: &str) -> Result<Scan, StoreError>;
    /// Claims `node` for `lease` if nobody holds it, reading its high-water mark atomically with
    /// the claim; `Ok(None)` if it is held.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`], [`StoreError::Corrupt`].
    fn try_claim(
        &self,
        namespace: &str,
        node: u64,
        lease: i64,
        holder: &str,
    ) -> Result<Option<Claimed>, StoreError>;
    /// Raises the high-water mark of `node` to `hwm_ns` if the claim `token` still holds it: a
    /// mark already at or above `hwm_ns` is left as it is, so the mark only rises whatever order
    /// the writes arrive in. `Ok(false)` if the claim does not hold it (the lease expired: the
    /// process is fenced).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn reserve(
        &self,
        namespace: &str,
        node: u64,
        token: i64,
        hwm_ns: u64,
    ) -> Result<bool, StoreError>;
    /// Writes the final high-water mark and deletes the node key, if `token` still holds it.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn release(
        &self,
        namespace: &str,
        node: u64,
        token: i64,
        hwm_ns: u64,
    ) -> Result<bool, StoreError>;
}

/// A [`Store`] in memory, with leases that expire on the monotonic clock: the protocol's tests
/// without etcd. `calls` counts every call, for tests of backoff.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<Memory>,
}

#[derive(Debug, Default)]
struct Memory {
    revision: i64,
    next_lease: i64,
    leases: BTreeMap<i64, (Duration, Instant)>,
    /// (namespace, node) → (lease, create revision).
    nodes: BTreeMap<(String, u64), (i64, i64)>,
    hwm: BTreeMap<(String, u64), u64>,
    specs: BTreeMap<String, String>,
    down: bool,
    calls: u64,
}

impl Memory {
    fn expire(&mut self) {
        let now = Instant::now();
        let dead: Vec<i64> = self
            .leases
            .iter()
            .filter(|(_, (_, deadline))| *deadline <= now)
            .map(|(l, _)| *l)
            .collect();
        for l in dead {
            self.drop_lease(l);
        }
    }

    fn drop_lease(&mut self, lease: i64) {
        self.leases.remove(&lease);
        self.nodes.retain(|_, (l, _)| *l != lease);
    }

    fn enter(&mut self) -> Result<(), StoreError> {
        self.calls += 1;
        if self.down {
            return Err(StoreError::Unavailable(
                "the in-memory store is down".into(),
            ));
        }
        self.expire();
        Ok(())
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every call fail with [`StoreError::Unavailable`] (`true`) or work again.
    pub fn set_down(&self, down: bool) {
        self.lock().down = down;
    }

    /// How many calls were made.
    pub fn calls(&self) -> u64 {
        self.lock().calls
    }

    /// Deletes a node key as an operator would (`etcdctl del`), whoever holds it.
    pub fn delete_node(&self, namespace: &str, node: u64) {
        self.lock().nodes.remove(&(namespace.to_string(), node));
    }

    /// The high-water mark stored for a node id.
    pub fn hwm(&self, namespace: &str, node: u64) -> Option<u64> {
        self.lock().hwm.get(&(namespace.to_string(), node)).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Store for MemoryStore {
    fn grant(&self, ttl: Duration) -> Result<(i64, Duration), StoreError> {
        let mut m = self.lock();
        m.enter()?;
        m.next_lease += 1;
        let id = m.next_lease;
        let ttl = Duration::from_secs(ttl.as_secs().max(1));
        m.leases.insert(id, (ttl, Instant::now() + ttl));
        Ok((id, ttl))
    }

    fn bind_spec(&self, namespace: &str, spec: &str) -> Result<Option<String>, StoreError> {
        let mut m = self.lock();
        m.enter()?;
        let found = m
            .specs
            .entry(namespace.to_string())
            .or_insert_with(|| spec.to_string());
        Ok((found != spec).then(|| found.clone()))
    }

    fn check_owner(&self, namespace: &str, node: u64, token: i64) -> Result<bool, StoreError> {
        let mut m = self.lock();
        m.enter()?;
        Ok(m.nodes.get(&(namespace.to_string(), node)).map(|(_, t)| *t) == Some(token))
    }

    fn keep_alive(&self, lease: i64) -> Result<bool, StoreError> {
        let mut m = self.lock();
        m.enter()?;
        match m.leases.get_mut(&lease) {
            Some((ttl, deadline)) => {
                *deadline = Instant::now() + *ttl;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn revoke(&self, lease: i64) -> Result<(), StoreError> {
        let mut m = self.lock();
        m.enter()?;
        m.drop_lease(lease);
        Ok(())
    }

    fn scan(&self, namespace: &str) -> Result<Scan, StoreError> {
        let mut m = self.lock();
        m.enter()?;
        Ok(Scan {
            held: m
                .nodes
                .keys()
                .filter(|(ns, _)| ns == namespace)
                .map(|(_, n)| *n)
                .collect(),
            hwm: m
                .hwm
                .iter()
                .filter(|((ns, _), _)| ns == namespace)
                .map(|((_, n), h)| (*n, *h))
                .collect(),
            corrupt: BTreeSet::new(),
        })
    }

    fn try_claim(
        &self,
        namespace: &str,
        node: u64,
        lease: i64,
        _holder: &str,
    ) -> Result<Option<Claimed>, StoreError> {
        let mut m = self.lock();
        m.enter()?;
        let key = (namespace.to_string(), node);
        if m.nodes.contains_key(&key) || !m.leases.contains_key(&lease) {
            return Ok(None);
        }
        m.revision += 1;
        let token = m.revision;
        m.nodes.insert(key.clone(), (lease, token));
        Ok(Some(Claimed {
            token,
            hwm_ns: m.hwm.get(&key).copied(),
        }))
    }

    fn reserve(
        &self,
        namespace: &str,
        node: u64,
        token: i64,
        hwm_ns: u64,
    ) -> Result<bool, StoreError> {
        let mut m = self.lock();
        m.enter()?;
        let key = (namespace.to_string(), node);
        if m.nodes.get(&key).map(|(_, t)| *t) != Some(token) {
            return Ok(false);
        }
        if m.hwm.get(&key).is_some_and(|h| *h >= hwm_ns) {
            return Ok(true); // the mark only rises
        }
        m.revision += 1;
        m.hwm.insert(key, hwm_ns);
        Ok(true)
    }

    fn release(
        &self,
        namespace: &str,
        node: u64,
        token: i64,
        hwm_ns: u64,
    ) -> Result<bool, StoreError> {
        let mut m = self.lock();
        m.enter()?;
        let key = (namespace.to_string(), node);
        if m.nodes.get(&key).map(|(_, t)| *t) != Some(token) {
            return Ok(false);
        }
        m.revision += 1;
        m.hwm.insert(key.clone(), hwm_ns);
        m.nodes.remove(&key);
        Ok(true)
    }
}
