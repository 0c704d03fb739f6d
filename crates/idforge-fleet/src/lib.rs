//! # idforge-fleet: node ids leased from a coordination store
//!
//! Snowflake-family ids are unique only if no two live processes share a node id. A fleet
//! member takes its node id from a store (etcd in production, [`MemoryStore`] in tests) under a
//! lease, and reserves time before it issues, so that ids stay unique whatever clocks and
//! pauses do: a bad clock can cost availability, never uniqueness.
//!
//! ## The protocol (the contract)
//!
//! Keys live under `/idforge/<namespace>/` (one namespace per id space). A member:
//!
//! 1. grants a lease of TTL `T` (default 10 s) and notes the local monotonic deadline
//!    (time the request was sent + `T` − `T`/10);
//! 2. claims a node id with one transaction: *if `node/<id>` does not exist, create it bound to the
//!    lease, and read `hwm/<id>`*; candidates are never-used ids first, then the least recently
//!    used (lowest mark); on a lost race, the next candidate. The key's create revision is the
//!    member's **fencing token**;
//! 3. compares its wall clock with the mark: past it, go on; behind by at most a bounded wait
//!    (3 s), wait, renewing the lease meanwhile; further behind, give the id back and try
//!    another, or fail with [`FleetError::ClockBehind`] saying by how much;
//! 4. **reserves time** before issuing: a write guarded by the token raises the mark to
//!    `max(E, mark) + R` (R = 2 s), `E` the wall-clock time of the lease's deadline; the mark
//!    only rises (a delayed write cannot lower it). The sequencer never issues a stamp above the
//!    reservation (`StampCell::ceiling`), and the worker extends it when less than `R/2` is left
//!    beyond the deadline, so a member cut off from the store issues until its deadline;
//! 5. renews the lease every `min(T/3, R/4)`; every id is refused once the monotonic deadline
//!    has passed without a renewal (`StampCell::check_issued`), at once, without waiting on the
//!    store; store errors back off exponentially (to 2 s) instead of hammering a store that is
//!    down. A forked child's cell refuses every id (the lease is the parent's). After the lease
//!    is lost, it claims the same node id again if it is still free (its stamp raised above the
//!    mark), else it stays fenced;
//! 6. on clean shutdown stops issuing, writes the time of its last stamp as the mark (never below
//!    the mark it claimed the id with) and gives the id back.
//!
//! **Why it holds.** Every id a holder issued has a time at or below its last written
//! reservation (step 4). The next holder of the node id reads that mark atomically with its claim
//! (step 2) and starts its stamp above it. A holder that was frozen past its lease and wakes up
//! refuses new ids (step 5), and even an id that passed its checks just before the freeze has a
//! time at or below its reservation, below the successor's first id. The reservation is the same
//! idea as the host-wide state file's durable mark: one concept in the engine
//! (`StampCell::ceiling`/`raise_ceiling`), two stores.
//!
//! ```
//! use std::sync::Arc;
//! use idforge::schemes::catalog::Kind;
//! use idforge::schemes::open::{OpenOptions, Opened};
//! use idforge_fleet::{FleetOptions, Member, MemoryStore};
//!
//! let kind = Kind::from_name("snowflake", None)?;
//! let store = Arc::new(MemoryStore::new());
//! let member = Member::join(store, FleetOptions::new("orders", &kind, &OpenOptions::default())?)?;
//! let g = Opened::open(&kind, &OpenOptions {
//!     node: Some(member.node()),
//!     cell: Some(member.cell()),
//!     ..OpenOptions::default()
//! })?;
//! let id = g.next()?;
//! assert!(member.node() <= 1023); // a never-used id first
//! member.shutdown()?;
//! assert!(g.next().is_err()); // a member that gave its node id back issues nothing
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod access;
mod member;
pub mod node;
mod space;
mod store;

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "etcd")]
pub mod local;

pub use access::{check_credentials_file, ConnectError, EtcdOptions, Failure, Password};
pub use member::{FleetError, FleetOptions, Member, Status};
pub use space::layout_description;
pub use store::{Claimed, MemoryStore, Scan, Store, StoreError};
