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

/// The service's counters.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
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
}

impl Metrics {
    /// Counts a finished request.
    pub fn record(&self, route: &str, status: u16, took: Duration) {
        let secs = took.as_secs_f64();
        {
            let mut r = self.requests.lock().unwrap_or_else(|p| p.into_inner());
            *r.entry((route.to_string(), status)).or_default() += 1;
        }
        let mut l = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = l.entry(route.to_string()).or_default();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                h.counts[i] += 1;
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
        for g in schemes {
            if let Some(n) = g.node {
                let _ = writeln!(s, "idforge_node_id{{scheme=\"{}\"}} {n}", g.name);
            }
        }
        s.push_str("# HELP idforge_ready Whether every scheme can issue (1) or not (0).\n# TYPE idforge_ready gauge\n");
        let _ = writeln!(s, "idforge_ready {}", u8::from(ready));
        s.push_str("# HELP idforge_http_requests_total Requests, by route and status.\n# TYPE idforge_http_requests_total counter\n");
        for ((route, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                s,
                "idforge_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        s.push_str("# HELP idforge_http_request_duration_seconds Request latency, by route.\n# TYPE idforge_http_request_duration_seconds histogram\n");
        for (route, h) in self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
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
