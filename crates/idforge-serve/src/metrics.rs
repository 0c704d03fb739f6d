//! The metrics, kept and rendered by `prometheus-client` (the Prometheus project's client) in the
//! Prometheus text format 0.0.4: counters of ids and requests, a latency histogram per route,
//! and gauges set when scraped.
//!
//! No lock is shared by every request: each scheme's id counter is made at start and held by
//! its scheme, and a request finds its route's handles in a fixed table of slots, each set once
//! (the first request of a route makes its histogram, the first of a route and status its
//! counter); after that a request costs atomic increments: the route's latency histogram is
//! [`LatencyHistogram`], whose counts are striped over cache lines so that two workers do not
//! write the same one (prometheus-client's own `Histogram` takes a lock per observation, which
//! every request of a route would share).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
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

/// The bucket bounds in nanoseconds: a latency is placed with integer comparisons.
const BUCKETS_NS: [u64; BUCKETS.len()] = {
    let mut ns = [0u64; BUCKETS.len()];
    let mut i = 0;
    while i < BUCKETS.len() {
        // Exact: every bound is a whole number of 100 ns steps.
        ns[i] = (BUCKETS[i] * 1e9 + 0.5) as u64;
        i += 1;
    }
    ns
};

/// Stripes of a [`LatencyHistogram`]: more than the workers of a runtime on a small machine.
const STRIPES: usize = 8;

/// One stripe's counts, alone on its cache lines (128 bytes: adjacent-line prefetch pairs 64-byte
/// lines).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe {
    /// Observations per bucket, the last one past every bound (`+Inf`).
    buckets: [AtomicU64; BUCKETS.len() + 1],
    /// The sum of the observations, in nanoseconds.
    sum_ns: AtomicU64,
}

/// A request latency histogram with [`BUCKETS`] for bounds, rendered as a Prometheus
/// histogram. An observation is two relaxed atomic adds on the stripe of the thread that makes
/// it ([`stripe`]); a scrape sums the stripes, and the count it says is the sum of the buckets
/// it says, so the two always agree.
#[derive(Debug, Clone, Default)]
pub(crate) struct LatencyHistogram(Arc<[Stripe; STRIPES]>);

/// This thread's stripe: threads take stripes in turn as they first observe.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    MINE.with(|m| *m)
}

impl LatencyHistogram {
    pub(crate) fn observe(&self, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BUCKETS_NS
            .iter()
            .position(|&b| ns <= b)
            .unwrap_or(BUCKETS.len());
        let s = &self.0[stripe()];
        s.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        s.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The counts per bucket (not cumulative, `+Inf` last) and the sum in seconds.
    fn snapshot(&self) -> ([u64; BUCKETS.len() + 1], f64) {
        let mut counts = [0u64; BUCKETS.len() + 1];
        let mut sum_ns: u128 = 0;
        for s in self.0.iter() {
            for (c, b) in counts.iter_mut().zip(&s.buckets) {
                *c += b.load(Ordering::Relaxed);
            }
            sum_ns += u128::from(s.sum_ns.load(Ordering::Relaxed));
        }
        (counts, sum_ns as f64 / 1e9)
    }
}

impl TypedMetric for LatencyHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (counts, sum) = self.snapshot();
        let buckets: Vec<(f64, u64)> = BUCKETS
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(counts)
            .collect();
        encoder.encode_histogram::<NoLabelSet>(sum, counts.iter().sum(), &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

fn latency_histogram() -> LatencyHistogram {
    LatencyHistogram::default()
}

/// A route's handles: its histogram and its counter per status, each made on first use.
struct RouteHandles {
    route: Box<str>,
    duration: LatencyHistogram,
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
    duration: Family<RouteLabel, LatencyHistogram, fn() -> LatencyHistogram>,
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
        let duration: Family<RouteLabel, LatencyHistogram, fn() -> LatencyHistogram> =
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
        match self.route_slot(route) {
            Some(h) => {
                h.duration.observe(took);
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
                    .observe(took);
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

    /// The exposition of `h` alone, registered as `name`.
    fn render_one(name: &str, h: impl prometheus_client::registry::Metric) -> String {
        let mut r = Registry::default();
        r.register(name, "Latency", h);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).unwrap();
        out
    }

    #[test]
    fn the_striped_histogram_renders_as_prometheus_clients_own_for_the_same_observations() {
        // Latencies exact both as whole nanoseconds and as binary fractions of a second, so the
        // two sums are the same number; on and between bounds, and past the last one.
        let took = [
            Duration::from_nanos(100_000),
            Duration::from_secs_f64(0.000_25),
            Duration::from_secs_f64(0.5),
            Duration::from_secs_f64(0.25),
            Duration::from_secs(2),
            Duration::from_secs(64),
            Duration::ZERO,
        ];
        let ours = LatencyHistogram::default();
        let theirs = prometheus_client::metrics::histogram::Histogram::new(BUCKETS);
        std::thread::scope(|s| {
            // From several threads: the stripes are summed.
            for chunk in took.chunks(2) {
                let ours = ours.clone();
                s.spawn(move || chunk.iter().for_each(|t| ours.observe(*t)));
            }
        });
        for t in took {
            theirs.observe(t.as_secs_f64());
        }
        let a = render_one("latency_seconds", ours);
        assert_eq!(a, render_one("latency_seconds", theirs));
        assert!(a.contains("latency_seconds_count 7"), "{a}");
        assert!(a.contains("latency_seconds_bucket{le=\"0.0001\"} 2"), "{a}");
        assert!(a.contains("latency_seconds_bucket{le=\"10.0\"} 6"), "{a}");
    }

    #[test]
    fn two_threads_observing_at_once_lose_no_observation() {
        let h = LatencyHistogram::default();
        std::thread::scope(|s| {
            for i in 0..4u64 {
                let h = h.clone();
                s.spawn(move || {
                    for k in 0..50_000u64 {
                        h.observe(Duration::from_micros((i * 50_000 + k) % 3_000));
                    }
                });
            }
        });
        let (counts, sum) = h.snapshot();
        assert_eq!(counts.iter().sum::<u64>(), 200_000);
        let exact: u64 = (0..200_000u64).map(|x| (x % 3_000) * 1_000).sum();
        assert!((sum - exact as f64 / 1e9).abs() < 1e-6, "{sum}");
    }

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
