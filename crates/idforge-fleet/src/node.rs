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

/// The namespace a scheme's node ids are leased in unless one is named: the scheme's name, with
/// the host digits for nanots-host (`nanots-host2`, `nanots-host3`: their ids overlap, so they
/// must not share node ids); `None` for custom layouts, which must name theirs. The command line
/// and the service both use it, so their processes share one id space per scheme.
///
/// ```
/// use idforge::schemes::catalog::Kind;
/// use idforge_fleet::node::default_namespace;
/// assert_eq!(default_namespace(&Kind::from_name("snowflake", None).unwrap(), None).as_deref(), Some("snowflake"));
/// assert_eq!(default_namespace(&Kind::NanoTsHost, Some(3)).as_deref(), Some("nanots-host3"));
/// assert_eq!(default_namespace(&Kind::NanoTsHost, None).as_deref(), Some("nanots-host2"));
/// ```
pub fn default_namespace(
    kind: &idforge::schemes::catalog::Kind,
    host_digits: Option<u32>,
) -> Option<String> {
    use idforge::schemes::catalog::Kind;
    match kind {
        Kind::Layout(idforge::Scheme::Custom(_)) => None,
        Kind::NanoTsHost => Some(format!("nanots-host{}", host_digits.unwrap_or(2))),
        k => Some(k.name().to_string()),
    }
}
