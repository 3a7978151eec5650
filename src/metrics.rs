//! Prometheus metrics: the `opdesk_*` families, what records into them, and the exposition (OpenMetrics or
//! Prometheus text 0.0.4, with `prometheus-client`). The HTTP edge records requests and signature verdicts
//! here; the STREAM traffic counters ([`crate::ase::traffic`]), the webhook deliverer and the store own their
//! own meters, registered here by clone; what is stored (grants and payments by state, amounts by asset) is
//! read from the store at each scrape ([`crate::store::stats`]). Knows no routes: `server::metrics` serves it.

use std::{
    collections::HashSet,
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use prometheus_client::{
    encoding::{EncodeLabelSet, text},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use crate::store::{Meters, stats::Snapshot};

/// The `Content-Type` of an OpenMetrics exposition.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The `Content-Type` of a Prometheus text (0.0.4) exposition.
pub const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// HTTP latencies: 100 µs to 10 s.
const HTTP_BUCKETS: [f64; 16] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One request: its route template (`unmatched` when none), method and status.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: Arc<str>,
    pub method: &'static str,
    pub status: u16,
}

/// A route template and method (the latency histogram has no status label).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: Arc<str>,
    pub method: &'static str,
}

/// A signature verdict class: `ok` or `refused`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct VerdictLabels {
    pub verdict: &'static str,
}

/// A STREAM packet: `in` (a peer brought it to `POST /ilp`) or `out` (we sent it through a peer), and how it
/// ended: `fulfilled`, `reject_F`/`reject_T`/`reject_R` (the code's class) or `no_reply`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PacketLabels {
    pub direction: &'static str,
    pub result: &'static str,
}

/// A webhook delivery attempt's result: `delivered`, `retrying` (failed, another attempt is due) or `dead`
/// (failed, the retry budget is spent).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct WebhookLabels {
    pub result: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct AmountLabels {
    direction: &'static str,
    asset: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PeerLabels {
    peer: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct AssetLabels {
    asset: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VersionLabels {
    version: &'static str,
}

type Histograms<S> = Family<S, Histogram, fn() -> Histogram>;

fn http_histogram() -> Histogram {
    Histogram::new(HTTP_BUCKETS)
}

/// The packet counters the STREAM traffic keeps: every packet by its result's class, and the rejected ones by
/// their code.
#[derive(Debug, Clone, Default)]
pub struct Packets(pub Family<PacketLabels, Counter>, pub Family<RejectLabels, Counter>);

/// A rejected ILP packet: its direction and its code (`F07`), one of the codes of the ILP specification
/// (RFC 27) or `other` (a peer's own code: no unbounded label values).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RejectLabels {
    pub direction: &'static str,
    pub code: &'static str,
}

/// The ILP error codes of RFC 27.
const REJECT_CODES: [&str; 21] = [
    "F00", "F01", "F02", "F03", "F04", "F05", "F06", "F07", "F08", "F99", "T00", "T01", "T02", "T03", "T04", "T05",
    "T99", "R00", "R01", "R02", "R99",
];

/// A reject's code as a label: a code of RFC 27, else `other`.
pub fn reject_code_label(code: &str) -> &'static str {
    REJECT_CODES.iter().find(|c| **c == code).copied().unwrap_or("other")
}
/// The attempt counters the webhook deliverer keeps.
pub type WebhookAttempts = Family<WebhookLabels, Counter>;

/// The method as a label: the standard ones by name, any other as `other` (no unbounded label values).
pub fn method_label(m: &http::Method) -> &'static str {
    use http::Method;
    match *m {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// The registry of one server, with the families the HTTP edge records into.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Histograms<RouteLabels>,
    verdicts: Family<VerdictLabels, Counter>,
    /// Route templates seen, shared so a request's labels cost no allocation once its route is known.
    routes: RwLock<HashSet<Arc<str>>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Registers every family: the edge's own and, by clone, the meters other parts keep.
    pub fn new(store: &Meters, packets: &Packets, webhooks: &WebhookAttempts, started_unix: i64) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let durations: Histograms<RouteLabels> = Family::new_with_constructor(http_histogram);
        let verdicts = Family::<VerdictLabels, Counter>::default();
        registry.register(
            "opdesk_http_requests",
            "HTTP requests answered, by route template (unmatched: no route), method and status",
            requests.clone(),
        );
        registry.register(
            "opdesk_http_request_duration_seconds",
            "Time from a request's arrival to its response head, by route template and method",
            durations.clone(),
        );
        registry.register(
            "opdesk_signature_verdicts",
            "HTTP message signatures checked, by verdict (ok or refused)",
            verdicts.clone(),
        );
        for v in ["ok", "refused"] {
            let _ = verdicts.get_or_create(&VerdictLabels { verdict: v });
        }
        registry.register(
            "opdesk_stream_packets",
            "ILP/STREAM packets since start, by direction (in: brought by a peer to POST /ilp, out: sent through \
             a peer) and result (fulfilled, reject_F, reject_T, reject_R, no_reply)",
            packets.0.clone(),
        );
        for direction in ["in", "out"] {
            for result in ["fulfilled", "reject_F", "reject_T", "reject_R", "no_reply"] {
                let _ = packets.0.get_or_create(&PacketLabels { direction, result });
            }
        }
        registry.register(
            "opdesk_ilp_rejects",
            "ILP packets rejected since start, by direction and ILP error code (F07: no rate for the pair; T04: \
             a peer past its credit limit, or not enough liquidity; other: a code outside RFC 27)",
            packets.1.clone(),
        );
        registry.register(
            "opdesk_webhook_deliveries",
            "Webhook delivery attempts since start, by result (delivered, retrying, dead)",
            webhooks.clone(),
        );
        for result in ["delivered", "retrying", "dead"] {
            let _ = webhooks.get_or_create(&WebhookLabels { result });
        }
        registry.register(
            "opdesk_store_queue_depth",
            "Store jobs (transactions and reads) waiting for the store thread",
            store.queue_depth.clone(),
        );
        registry.register(
            "opdesk_store_transaction_duration_seconds",
            "Time each store job (one transaction or read) held the database connection",
            store.job_seconds.clone(),
        );
        registry.register(
            "opdesk_store_commit_group_jobs",
            "Store jobs per commit group (1: a job ran by itself)",
            store.group_jobs.clone(),
        );
        registry.register(
            "opdesk_store_serialization_retries",
            "PostgreSQL transactions run again after losing a serialization race",
            store.retries.clone(),
        );
        registry.register(
            "opdesk_store_exclusive_runs",
            "PostgreSQL jobs that lost several serialization races and then ran alone",
            store.exclusive.clone(),
        );
        registry.register(
            "opdesk_store_commit_group_splits",
            "PostgreSQL commit groups rolled back and run again job by job (a job could not share the group)",
            store.group_splits.clone(),
        );
        registry.register(
            "opdesk_store_caches_trusted",
            "1 while this node serves wallets, keys and tokens from memory (always on SQLite; on PostgreSQL while \
             it hears the other nodes' changes), 0 while it reads them from the database",
            store.caches_trusted.clone(),
        );
        let wal = &store.wal;
        registry.register(
            "opdesk_store_wal_bytes",
            "SQLite: the size of the write-ahead log file on disk, as last seen by the checkpointer",
            wal.file_bytes.clone(),
        );
        registry.register(
            "opdesk_store_wal_ceiling_bytes",
            "SQLite: the configured ceiling on the write-ahead log (store.wal_max_bytes)",
            wal.ceiling_bytes.clone(),
        );
        registry.register(
            "opdesk_store_wal_checkpoints",
            "SQLite: checkpoints that found pages to copy from the write-ahead log into the database",
            wal.checkpoints.clone(),
        );
        registry.register(
            "opdesk_store_wal_pinned_checkpoints",
            "SQLite: checkpoints that could not copy everything because a reader held an older snapshot",
            wal.pinned.clone(),
        );
        registry.register(
            "opdesk_store_wal_last_checkpoint_microseconds",
            "SQLite: how long the last checkpoint took",
            wal.last_micros.clone(),
        );
        registry.register(
            "opdesk_store_wal_last_checkpoint_pages",
            "SQLite: write-ahead log frames in the database after the last checkpoint",
            wal.last_pages.clone(),
        );
        registry.register(
            "opdesk_store_wal_writer_pause_seconds",
            "SQLite: time the writer spent catching the write-ahead log up between commit groups",
            wal.writer_pause.clone(),
        );
        let build = Family::<VersionLabels, Gauge>::default();
        build
            .get_or_create(&VersionLabels {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register("opdesk_build_info", "The running opdesk's version (always 1)", build);
        let start = Gauge::<i64>::default();
        start.set(started_unix);
        registry.register(
            "opdesk_start_time_seconds",
            "When this server process started, in seconds since the Unix epoch",
            start,
        );
        Self {
            registry,
            requests,
            durations,
            verdicts,
            routes: RwLock::default(),
        }
    }

    /// The shared copy of `route`.
    fn route(&self, route: &str) -> Arc<str> {
        if let Some(r) = self.routes.read().unwrap_or_else(PoisonError::into_inner).get(route) {
            return r.clone();
        }
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = routes.get(route) {
            return r.clone();
        }
        let r: Arc<str> = Arc::from(route);
        routes.insert(r.clone());
        r
    }

    /// Records one answered request; `route` is its template (`None`: no route matched).
    pub fn request(&self, route: Option<&str>, method: &'static str, status: u16, elapsed: Duration) {
        let route = self.route(route.unwrap_or("unmatched"));
        self.durations
            .get_or_create(&RouteLabels {
                route: route.clone(),
                method,
            })
            .observe(elapsed.as_secs_f64());
        self.requests
            .get_or_create(&RequestLabels { route, method, status })
            .inc();
    }

    /// Records a signature verdict class.
    pub fn verdict(&self, verdict: &'static str) {
        self.verdicts.get_or_create(&VerdictLabels { verdict }).inc();
    }

    /// The exposition: every family, then what `stored` holds; OpenMetrics (with its `# EOF`) or Prometheus
    /// text.
    pub fn encode(&self, stored: &Snapshot, openmetrics: bool) -> Result<String, std::fmt::Error> {
        let scraped = stored_registry(stored);
        let mut out = String::with_capacity(16 * 1024);
        if openmetrics {
            text::encode_registry(&mut out, &self.registry)?;
            text::encode_registry(&mut out, &scraped)?;
            text::encode_eof(&mut out)?;
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?;
            prometheus_client::encoding::prometheus_text::encode(&mut out, &scraped)?;
        }
        Ok(out)
    }
}

fn states<S: Copy>(rows: &[(S, u64)], name: impl Fn(S) -> &'static str) -> Family<StateLabels, Gauge> {
    let family = Family::<StateLabels, Gauge>::default();
    for (s, n) in rows {
        family
            .get_or_create(&StateLabels { state: name(*s) })
            .set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    family
}

/// The families read from the store at this scrape.
fn stored_registry(s: &Snapshot) -> Registry {
    let mut r = Registry::default();
    r.register(
        "opdesk_grants",
        "GNAP grants by state (expired: still pending when its interaction window passed)",
        states(&s.grants, |s| s.as_str()),
    );
    r.register(
        "opdesk_incoming_payments",
        "Incoming payments by state",
        states(&s.incoming, |s| s.as_str()),
    );
    r.register(
        "opdesk_outgoing_payments",
        "Outgoing payments by state",
        states(&s.outgoing, |s| s.as_str()),
    );
    r.register(
        "opdesk_webhook_delivery_states",
        "Webhook deliveries by state (dead: the retry budget is spent)",
        states(&s.deliveries, |s| s.as_str()),
    );
    let amounts = Family::<AmountLabels, Counter>::default();
    for (direction, rows) in [("in", &s.received), ("out", &s.sent)] {
        for (asset, n) in rows {
            amounts
                .get_or_create(&AmountLabels {
                    direction,
                    asset: asset.clone(),
                })
                .inc_by(*n);
        }
    }
    register_money(&mut r, s);
    r.register(
        "opdesk_payments_amount",
        "Money moved, in minor units of the asset (CODE/scale): in = received into incoming payments, out = \
         sent by outgoing payments (in the paying wallet's asset)",
        amounts,
    );
    r
}

fn gauge(v: u64) -> Gauge {
    let g = Gauge::default();
    g.set(i64::try_from(v).unwrap_or(i64::MAX));
    g
}

/// The families of money that may run low and work that waits: peers' liquidity and credit used against
/// their thresholds, wallet balances per asset, grants waiting and payments failed in the last hour (what
/// `contrib/prometheus/alerts.yml` alerts on).
fn register_money(r: &mut Registry, s: &Snapshot) {
    let per_peer = |value: &dyn Fn(&crate::store::stats::PeerFigures) -> Option<i64>| {
        let family = Family::<PeerLabels, Gauge>::default();
        for p in &s.peers {
            if let Some(v) = value(p) {
                family.get_or_create(&PeerLabels { peer: p.peer.clone() }).set(v);
            }
        }
        family
    };
    r.register(
        "opdesk_peer_liquidity",
        "What may still be sent through each liquidity-limited peer (its liquidity less what we owe it), in minor \
         units of its asset",
        per_peer(&|p| p.liquidity),
    );
    r.register(
        "opdesk_peer_credit_used",
        "What each peer owes us, in minor units of its asset",
        per_peer(&|p| Some(p.credit_used)),
    );
    r.register(
        "opdesk_peer_liquidity_threshold",
        "Each peer's alert threshold on its liquidity (peerLiquidityLow under it)",
        per_peer(&|p| p.liquidity_threshold),
    );
    r.register(
        "opdesk_peer_credit_threshold",
        "Each peer's alert threshold on its credit used (peerCreditHigh over it)",
        per_peer(&|p| p.credit_threshold),
    );
    let (balances, under) = (
        Family::<AssetLabels, Gauge>::default(),
        Family::<AssetLabels, Gauge>::default(),
    );
    for (asset, sum, n) in &s.wallets {
        let labels = AssetLabels { asset: asset.clone() };
        balances.get_or_create(&labels).set(*sum);
        under.get_or_create(&labels).set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    r.register(
        "opdesk_wallet_balance",
        "Wallet balances summed per asset (CODE/scale), in minor units",
        balances,
    );
    r.register(
        "opdesk_wallets_under_threshold",
        "Wallets whose balance less reservations is under their alert threshold, per asset",
        under,
    );
    r.register(
        "opdesk_grants_waiting",
        "Grants waiting for a decision within their interaction window",
        gauge(s.waiting.count),
    );
    let oldest: Gauge = Gauge::default();
    oldest.set(s.waiting.oldest_seconds);
    r.register(
        "opdesk_grants_waiting_oldest_seconds",
        "How long the oldest grant waiting for a decision has waited (0: none waits)",
        oldest,
    );
    r.register(
        "opdesk_grants_waiting_past_half_window",
        "Grants that have waited for a decision longer than half their interaction window",
        gauge(s.waiting.past_half_window),
    );
    r.register(
        "opdesk_outgoing_payments_failed_last_hour",
        "Outgoing payments that failed in the last hour",
        gauge(s.failed_last_hour),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_template_with_shared_route_labels() {
        let m = Metrics::new(&Meters::default(), &Packets::default(), &WebhookAttempts::default(), 7);
        m.request(Some("/{wallet}"), "GET", 200, Duration::from_micros(300));
        m.request(Some("/{wallet}"), "GET", 200, Duration::from_micros(300));
        m.request(None, "GET", 404, Duration::from_micros(30));
        m.verdict("refused");
        let text = m.encode(&Snapshot::default(), false).unwrap();
        assert!(
            text.contains(r#"opdesk_http_requests_total{route="/{wallet}",method="GET",status="200"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"opdesk_http_requests_total{route="unmatched",method="GET",status="404"} 1"#));
        assert!(text.contains(r#"opdesk_signature_verdicts_total{verdict="refused"} 1"#));
        assert!(text.contains(r#"opdesk_signature_verdicts_total{verdict="ok"} 0"#));
        assert!(text.contains("opdesk_start_time_seconds 7"));
        for family in [
            "opdesk_store_wal_bytes 0",
            "opdesk_store_wal_ceiling_bytes 0",
            "opdesk_store_wal_checkpoints_total 0",
            "opdesk_store_wal_pinned_checkpoints_total 0",
            "opdesk_store_wal_last_checkpoint_microseconds 0",
            "opdesk_store_wal_last_checkpoint_pages 0",
            "opdesk_store_wal_writer_pause_seconds_count 0",
        ] {
            assert!(text.contains(family), "{family}: {text}");
        }
        assert_eq!(m.routes.read().unwrap().len(), 2);
        let om = m.encode(&Snapshot::default(), true).unwrap();
        assert!(om.ends_with("# EOF\n"), "{om}");
        assert_eq!(om.matches("# EOF").count(), 1);
    }
}
