//! Where a node id comes from: given explicitly, the ordinal of a Kubernetes StatefulSet pod, or
//! leased from a store ([`crate::Member`]).

/// The ordinal at the end of a StatefulSet pod's host name: `orders-3` → 3.
///
/// ```
/// use idforge_fleet::node::statefulset_ordinal;
/// assert_eq!(statefulset_ordinal("orders-3"), Some(3));
/// assert_eq!(statefulset_ordinal("id-service-12"), Some(12));
/// assert_eq!(statefulset_ordinal("orders"), None);
/// assert_eq!(statefulset_ordinal("orders-"), None);
/// assert_eq!(statefulset_ordinal("orders-03"), None); // StatefulSets never pad
/// ```
pub fn statefulset_ordinal(hostname: &str) -> Option<u64> {
    let (name, n) = hostname.trim().rsplit_once('-')?;
    if name.is_empty() || n.is_empty() || (n.len() > 1 && n.starts_with('0')) {
        return None;
    }
    if !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// This machine's host name (`/proc/sys/kernel/hostname`, else `HOSTNAME`).
pub fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
}
