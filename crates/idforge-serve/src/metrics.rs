//! The metrics, kept and rendered by `prometheus-client` (the Prometheus project's client) in the
//! Prometheus text format 0.0.4: counters of ids and requests, a latency histogram per route,
//! and gauges set when scraped.
//!
//! No lock is shared by every request: each scheme's id counter is made at start and held by
//! its scheme, and a request finds its route's handles in a fixed table of slots, each set once
//! (the first request of a route makes its histogram, the first of a route and status its
//! counter); after that a request costs atomic increments and the route's histogram, whose own
//! short lock only requests of that route share.

use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The `Content-Type` of `/metrics`.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0, 10.0,
];

/// Routes whose handles are kept in slots; the router has fewer. A route past them (none today)
/// is still counted, through the families' own maps.
const ROUTE_SLOTS: usize = 32;

/// Statuses 100 to 599 have a slot each.
const STATUSES: std::ops::Range<u16> = 100..600;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SchemeLabel {
    scheme: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteStatus {
    route: String,
    status: u16,
}

type F64Gauge = Gauge<f64, AtomicU64>;

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// A route's handles: its histogram and its counter per status, each made on first use.
struct RouteHandles {
    route: Box<str>,
    duration: Histogram,
    statuses: Box<[OnceLock<Counter>]>,
}

/// The gauges of leased node ids, with `--etcd`.
struct LeaseFamilies {
    held: Family<SchemeLabel, Gauge>,
    token: Family<SchemeLabel, Gauge>,
    ahead: Family<SchemeLabel, F64Gauge>,
}

/// The service's metrics.
pub struct Metrics {
    registry: Registry,
    issued: Family<SchemeLabel, Counter>,
    lead: Family<SchemeLabel, F64Gauge>,
    node: Family<SchemeLabel, Gauge>,
    ready: Gauge,
    lease: Option<LeaseFamilies>,
    requests: Family<RouteStatus, Counter>,
    duration: Family<RouteLabel, Histogram, fn() -> Histogram>,
    routes: [OnceLock<RouteHandles>; ROUTE_SLOTS],
}

/// A scheme's figures, read when scraped.
pub struct SchemeGauges<'a> {
    /// The scheme's name.
    pub name: &'a str,
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

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// The metrics, every family registered (the lease gauges with [`Metrics::add_leases`]).
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let issued = Family::<SchemeLabel, Counter>::default();
        registry.register(
            "idforge_ids_issued",
            "Ids issued, by scheme",
            issued.clone(),
        );
        let lead = Family::<SchemeLabel, F64Gauge>::default();
        registry.register(
            "idforge_lead_seconds",
            "How far the scheme's last id is ahead of the wall clock",
            lead.clone(),
        );
        let node = Family::<SchemeLabel, Gauge>::default();
        registry.register(
            "idforge_node_id",
            "The node (or host) id a scheme issues with",
            node.clone(),
        );
        let ready = Gauge::default();
        registry.register(
            "idforge_ready",
            "Whether every scheme can issue (1) or not (0)",
            ready.clone(),
        );
        let requests = Family::<RouteStatus, Counter>::default();
        registry.register(
            "idforge_http_requests",
            "Requests, by route and status",
            requests.clone(),
        );
        let duration: Family<RouteLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "idforge_http_request_duration_seconds",
            "Request latency, by route",
            duration.clone(),
        );
        Metrics {
            registry,
            issued,
            lead,
            node,
            ready,
            lease: None,
            requests,
            duration,
            routes: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// Registers the gauges of leased node ids (`--etcd`).
    pub(crate) fn add_leases(&mut self) {
        if self.lease.is_some() {
            return;
        }
        let l = LeaseFamilies {
            held: Family::default(),
            token: Family::default(),
            ahead: Family::default(),
        };
        self.registry.register(
            "idforge_lease_held",
            "Whether the scheme holds its etcd lease and may issue (1) or not (0)",
            l.held.clone(),
        );
        self.registry.register(
            "idforge_fencing_token",
            "The fencing token (etcd revision) of the scheme's node id claim",
            l.token.clone(),
        );
        self.registry.register(
            "idforge_reservation_ahead_seconds",
            "How far the time reserved in etcd is ahead of the wall clock",
            l.ahead.clone(),
        );
        self.lease = Some(l);
    }

    /// The counter of ids issued by `scheme`, made now: the scheme holds it, so counting its ids
    /// is one atomic add.
    pub(crate) fn issued(&self, scheme: &str) -> Counter {
        self.issued
            .get_or_create(&SchemeLabel {
                scheme: scheme.to_string(),
            })
            .clone()
    }

    /// The handles of `route`: found among the slots (a slot is set once, so every reader
    /// sees the same route in it), or set in the first free one.
    fn route_slot(&self, route: &str) -> Option<&RouteHandles> {
        for slot in &self.routes {
            let h = slot.get_or_init(|| RouteHandles {
                route: route.into(),
                duration: self
                    .duration
                    .get_or_create(&RouteLabel {
                        route: route.to_string(),
                    })
                    .clone(),
                statuses: STATUSES.map(|_| OnceLock::new()).collect(),
            });
            if &*h.route == route {
                return Some(h);
            }
        }
        None
    }

    fn requests(&self, route: &str, status: u16) -> Counter {
        self.requests
            .get_or_create(&RouteStatus {
                route: route.to_string(),
                status,
            })
            .clone()
    }

    /// Counts a finished request.
    pub fn record(&self, route: &str, status: u16, took: Duration) {
        let secs = took.as_secs_f64();
        match self.route_slot(route) {
            Some(h) => {
                h.duration.observe(secs);
                match h
                    .statuses
                    .get(usize::from(status.wrapping_sub(STATUSES.start)))
                {
                    Some(c) => c.get_or_init(|| self.requests(route, status)).inc(),
                    None => self.requests(route, status).inc(),
                };
            }
            None => {
                self.duration
                    .get_or_create(&RouteLabel {
                        route: route.to_string(),
                    })
                    .observe(secs);
                self.requests(route, status).inc();
            }
        }
    }

    /// The exposition text, the gauges set from `schemes` and `ready` first.
    pub fn render<'a>(
        &self,
        schemes: impl Iterator<Item = SchemeGauges<'a>>,
        ready: bool,
    ) -> String {
        for g in schemes {
            let label = SchemeLabel {
                scheme: g.name.to_string(),
            };
            self.lead.get_or_create(&label).set(g.lead.as_secs_f64());
            match g.node {
                Some(n) => {
                    self.node
                        .get_or_create(&label)
                        .set(i64::try_from(n).unwrap_or(i64::MAX));
                }
                // No stale node id: the series goes, as it did from the hand-written text.
                None => {
                    self.node.remove(&label);
                }
            }
            if let (Some(l), Some(f)) = (g.lease, &self.lease) {
                f.held.get_or_create(&label).set(i64::from(l.held));
                f.token.get_or_create(&label).set(l.token);
                f.ahead.get_or_create(&label).set(l.ahead_secs);
            }
        }
        self.ready.set(i64::from(ready));
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut s, &self.registry);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_route_and_status_with_their_latency() {
        let m = Metrics::new();
        let c = m.issued("uuid7");
        c.inc_by(5);
        for _ in 0..3 {
            m.record("/v1/ids/{scheme}", 200, Duration::from_micros(300));
        }
        m.record("/v1/ids/{scheme}", 400, Duration::from_secs(20));
        m.record("/healthz", 200, Duration::from_micros(50));
        m.record("/healthz", 999, Duration::from_micros(50));
        let text = m.render(
            [SchemeGauges {
                name: "uuid7",
                lead: Duration::ZERO,
                node: None,
                lease: None,
            }]
            .into_iter(),
            true,
        );
        for line in [
            "idforge_ids_issued_total{scheme=\"uuid7\"} 5",
            "idforge_http_requests_total{route=\"/v1/ids/{scheme}\",status=\"200\"} 3",
            "idforge_http_requests_total{route=\"/v1/ids/{scheme}\",status=\"400\"} 1",
            "idforge_http_requests_total{route=\"/healthz\",status=\"200\"} 1",
            "idforge_http_requests_total{route=\"/healthz\",status=\"999\"} 1",
            "idforge_http_request_duration_seconds_bucket{route=\"/v1/ids/{scheme}\",le=\"0.00025\"} 0",
            "idforge_http_request_duration_seconds_bucket{route=\"/v1/ids/{scheme}\",le=\"0.0005\"} 3",
            "idforge_http_request_duration_seconds_bucket{route=\"/v1/ids/{scheme}\",le=\"10\"} 3",
            "idforge_http_request_duration_seconds_bucket{route=\"/v1/ids/{scheme}\",le=\"+Inf\"} 4",
            "idforge_http_request_duration_seconds_count{route=\"/v1/ids/{scheme}\"} 4",
            "idforge_http_request_duration_seconds_count{route=\"/healthz\"} 2",
            "idforge_ready 1",
            "# TYPE idforge_http_request_duration_seconds histogram",
            "# TYPE idforge_ids_issued_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("idforge_node_id{"), "{text}");
        assert!(!text.contains("idforge_lease_held"), "{text}");
    }

    #[test]
    fn racing_first_requests_of_routes_share_their_slots() {
        let m = std::sync::Arc::new(Metrics::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        let route = ["/a", "/b", "/c"][(i + t) % 3];
                        m.record(route, 200, Duration::from_micros(1));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let filled: Vec<&str> = m
            .routes
            .iter()
            .filter_map(|s| Some(&*s.get()?.route))
            .collect();
        assert_eq!(filled.len(), 3, "{filled:?}");
        let text = m.render(std::iter::empty(), true);
        let total: u64 = ["/a", "/b", "/c"]
            .iter()
            .map(|r| {
                let p = format!("idforge_http_requests_total{{route=\"{r}\",status=\"200\"}} ");
                text.lines()
                    .find_map(|l| l.strip_prefix(p.as_str()))
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        assert_eq!(total, 4000);
    }
}
