//! Prometheus text exposition, written by hand: counters of ids and requests, a latency
//! histogram per route, and gauges read when scraped.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// A route's requests by status, and its latency.
#[derive(Default)]
struct Route {
    statuses: BTreeMap<u16, u64>,
    latency: Histogram,
}

/// The service's counters.
#[derive(Default)]
pub struct Metrics {
    routes: Mutex<BTreeMap<String, Route>>,
}

/// A scheme's figures, read when scraped.
pub struct SchemeGauges<'a> {
    /// The scheme's name.
    pub name: &'a str,
    /// Ids issued since start.
    pub issued: &'a AtomicU64,
    /// How far its last id is ahead of the wall clock.
    pub lead: Duration,
    /// Its node (or host) id, where it has one.
    pub node: Option<u64>,
    /// Its lease, when its node id is leased from etcd.
    pub lease: Option<LeaseGauges>,
}

/// A leased node id's figures.
pub struct LeaseGauges {
    /// Whether the lease is held and the member may issue.
    pub held: bool,
    /// The fencing token of the claim.
    pub token: i64,
    /// How far the time reservation is ahead of the wall clock, in seconds.
    pub ahead_secs: f64,
}

impl Metrics {
    /// Counts a finished request.
    pub fn record(&self, route: &str, status: u16, took: Duration) {
        let secs = took.as_secs_f64();
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        // One lock, and a new key only for a route's first request.
        let r = match routes.get_mut(route) {
            Some(r) => r,
            None => routes.entry(route.to_string()).or_default(),
        };
        *r.statuses.entry(status).or_default() += 1;
        let h = &mut r.latency;
        // Cumulative buckets: every bucket from the first that holds `secs`.
        if let Some(first) = BUCKETS.iter().position(|b| secs <= *b) {
            for c in &mut h.counts[first..] {
                *c += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// The exposition text.
    pub fn render<'a>(
        &self,
        schemes: impl Iterator<Item = SchemeGauges<'a>> + Clone,
        ready: bool,
    ) -> String {
        let mut s = String::new();
        s.push_str("# HELP idforge_ids_issued_total Ids issued, by scheme.\n# TYPE idforge_ids_issued_total counter\n");
        for g in schemes.clone() {
            let _ = writeln!(
                s,
                "idforge_ids_issued_total{{scheme=\"{}\"}} {}",
                g.name,
                g.issued.load(Ordering::Relaxed)
            );
        }
        s.push_str("# HELP idforge_lead_seconds How far the scheme's last id is ahead of the wall clock.\n# TYPE idforge_lead_seconds gauge\n");
        for g in schemes.clone() {
            let _ = writeln!(
                s,
                "idforge_lead_seconds{{scheme=\"{}\"}} {}",
                g.name,
                g.lead.as_secs_f64()
            );
        }
        s.push_str("# HELP idforge_node_id The node (or host) id a scheme issues with.\n# TYPE idforge_node_id gauge\n");
        for g in schemes.clone() {
            if let Some(n) = g.node {
                let _ = writeln!(s, "idforge_node_id{{scheme=\"{}\"}} {n}", g.name);
            }
        }
        if schemes.clone().any(|g| g.lease.is_some()) {
            let leased = || schemes.clone().filter_map(|g| Some((g.name, g.lease?)));
            s.push_str("# HELP idforge_lease_held Whether the scheme holds its etcd lease and may issue (1) or not (0).\n# TYPE idforge_lease_held gauge\n");
            for (name, l) in leased() {
                let _ = writeln!(
                    s,
                    "idforge_lease_held{{scheme=\"{name}\"}} {}",
                    u8::from(l.held)
                );
            }
            s.push_str("# HELP idforge_fencing_token The fencing token (etcd revision) of the scheme's node id claim.\n# TYPE idforge_fencing_token gauge\n");
            for (name, l) in leased() {
                let _ = writeln!(s, "idforge_fencing_token{{scheme=\"{name}\"}} {}", l.token);
            }
            s.push_str("# HELP idforge_reservation_ahead_seconds How far the time reserved in etcd is ahead of the wall clock.\n# TYPE idforge_reservation_ahead_seconds gauge\n");
            for (name, l) in leased() {
                let _ = writeln!(
                    s,
                    "idforge_reservation_ahead_seconds{{scheme=\"{name}\"}} {}",
                    l.ahead_secs
                );
            }
        }
        s.push_str("# HELP idforge_ready Whether every scheme can issue (1) or not (0).\n# TYPE idforge_ready gauge\n");
        let _ = writeln!(s, "idforge_ready {}", u8::from(ready));
        s.push_str("# HELP idforge_http_requests_total Requests, by route and status.\n# TYPE idforge_http_requests_total counter\n");
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        for (route, r) in routes.iter() {
            for (status, n) in &r.statuses {
                let _ = writeln!(
                    s,
                    "idforge_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
        s.push_str("# HELP idforge_http_request_duration_seconds Request latency, by route.\n# TYPE idforge_http_request_duration_seconds histogram\n");
        for (route, r) in routes.iter() {
            let h = &r.latency;
            for (b, c) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    s,
                    "idforge_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{b}\"}} {c}"
                );
            }
            let _ = writeln!(
                s,
                "idforge_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                s,
                "idforge_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                s,
                "idforge_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
        s
    }
}
