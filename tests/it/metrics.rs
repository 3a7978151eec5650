//! `/metrics` over real HTTP: scraped before and after real traffic (wallet documents, a signed grant request
//! and incoming-payment create, a request with a bad signature, an ILP packet from a peer, an unknown path,
//! an admin call) and parsed by an OpenMetrics / Prometheus text parser (`openmetrics-parser`): counters move
//! by what was sent, histograms have their buckets, routes are templates (never raw ids), the content type
//! follows the format asked for, no CORS headers even for a browser origin; peers outside `[metrics] allow`
//! find nothing there. The sample Grafana dashboard only queries metrics a real scrape has.

use std::collections::{BTreeSet, HashMap};

use openmetrics_parser::{
    HistogramValue, MetricsExposition, OpenMetricsType, OpenMetricsValue, PrometheusType, PrometheusValue,
};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{TestAse, grant_token};

const CONFIG: &str = r#"
[[ilp.peers]]
name = "sender"
incoming_tokens = ["metrics-peer-token"]
asset_code = "USD"
asset_scale = 2
"#;

type OpenMetrics = MetricsExposition<OpenMetricsType, OpenMetricsValue>;

/// Scrapes `/metrics` as Prometheus does (asking for OpenMetrics) and parses it.
async fn scrape(ase: &TestAse) -> OpenMetrics {
    let res = ase
        .http
        .get(ase.url("/metrics"))
        .header(
            "accept",
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let text = res.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"));
    openmetrics_parser::openmetrics::parse_openmetrics(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The samples of `family` as (labels, value) — counters and gauges only.
fn samples(m: &OpenMetrics, family: &str) -> Vec<(HashMap<String, String>, f64)> {
    let Some(f) = m.families.get(family) else {
        return Vec::new();
    };
    f.iter_samples()
        .map(|s| {
            let labels = s
                .get_labelset()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let v = match &s.value {
                OpenMetricsValue::Counter(c) => c.value.as_f64(),
                OpenMetricsValue::Gauge(g) | OpenMetricsValue::Unknown(g) => g.as_f64(),
                other => panic!("{family}: not a counter or gauge: {other:?}"),
            };
            (labels, v)
        })
        .collect()
}

fn matches(labels: &HashMap<String, String>, want: &[(&str, &str)]) -> bool {
    want.iter().all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
}

/// The sum of `family`'s samples whose labels include `want` (0 when none).
fn value(m: &OpenMetrics, family: &str, want: &[(&str, &str)]) -> f64 {
    samples(m, family)
        .iter()
        .filter(|(l, _)| matches(l, want))
        .map(|(_, v)| v)
        .sum()
}

fn histogram(m: &OpenMetrics, family: &str, want: &[(&str, &str)]) -> Option<HistogramValue> {
    let f = m.families.get(family)?;
    f.iter_samples().find_map(|s| {
        let labels: HashMap<String, String> = s
            .get_labelset()
            .ok()?
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match &s.value {
            OpenMetricsValue::Histogram(h) if matches(&labels, want) => Some(h.clone()),
            _ => None,
        }
    })
}

async fn incoming_token(ase: &TestAse, client: &opdesk::client::SignedClient) -> String {
    grant_token(
        client,
        &ase.base,
        json!([{"type": "incoming-payment", "actions": ["create", "read"], "identifier": ase.url("/alice")}]),
    )
    .await
}

#[tokio::test]
async fn counters_move_with_traffic_and_parse_in_both_formats() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let client = ase.demo_client().await;
    // the peer's and a wallet's thresholds, so that every family the dashboard queries has series
    set_thresholds(&ase).await;
    let before = scrape(&ase).await;

    // Two wallet documents, a signed grant request and incoming-payment create (two good signatures), one
    // create with a signature that cannot verify, an ILP packet that is no Prepare, an unknown path, an admin
    // read of one wallet.
    for _ in 0..2 {
        let (status, _) = ase.get("/alice").await;
        assert_eq!(status, 200);
    }
    let token = incoming_token(&ase, &client).await;
    let created = client
        .send(
            Method::POST,
            &ase.url("/incoming-payments"),
            Some(&token),
            Some(&json!({"walletAddress": ase.url("/alice"), "incomingAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.body);
    let payment_id = created.body["id"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let refused = ase
        .http
        .post(ase.url("/incoming-payments"))
        .header("authorization", format!("GNAP {token}"))
        .header("content-type", "application/json")
        .header(
            "signature-input",
            r#"sig1=("@method" "@target-uri");created=1;keyid="nope";alg="ed25519""#,
        )
        .header("signature", "sig1=:AAAA:")
        .body(json!({"walletAddress": ase.url("/alice")}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let ilp = ase
        .http
        .post(ase.url("/ilp"))
        .bearer_auth("metrics-peer-token")
        .header("content-type", "application/octet-stream")
        .body(b"not an ILP packet".to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(ilp.status(), 200);
    let (status, _) = ase.get(&format!("/nothing/here/{payment_id}")).await;
    assert_eq!(status, 404);
    let (status, _) = ase.admin(Method::GET, "/wallets/alice", None).await;
    assert_eq!(status, 200);
    let (status, _) = ase
        .admin(Method::GET, &format!("/incoming-payments/{payment_id}"), None)
        .await;
    assert_eq!(status, 200);

    let after = scrape(&ase).await;
    let delta = |family: &str, want: &[(&str, &str)]| value(&after, family, want) - value(&before, family, want);

    // HTTP requests by route template, method and status.
    let requests = "opdesk_http_requests";
    assert_eq!(
        delta(requests, &[("route", "/{name}"), ("method", "GET"), ("status", "200")]),
        2.0
    );
    assert_eq!(
        delta(requests, &[("route", "/auth"), ("method", "POST"), ("status", "200")]),
        1.0
    );
    assert_eq!(
        delta(requests, &[("route", "/incoming-payments"), ("status", "201")]),
        1.0
    );
    assert_eq!(
        delta(requests, &[("route", "/incoming-payments"), ("status", "401")]),
        1.0
    );
    assert_eq!(delta(requests, &[("route", "/ilp"), ("status", "200")]), 1.0);
    assert_eq!(delta(requests, &[("route", "unmatched"), ("status", "404")]), 1.0);
    assert_eq!(
        delta(requests, &[("route", "/admin/wallets/{name}"), ("status", "200")]),
        1.0
    );
    assert_eq!(
        delta(
            requests,
            &[("route", "/admin/incoming-payments/{id}"), ("status", "200")]
        ),
        1.0
    );
    // the first scrape is counted once answered
    assert_eq!(
        value(&after, requests, &[("route", "/metrics"), ("status", "200")]),
        1.0
    );
    // never a raw path: no wallet name, payment id or unknown path in a route label
    let routes: BTreeSet<String> = samples(&after, requests)
        .into_iter()
        .map(|(l, _)| l["route"].clone())
        .collect();
    for r in &routes {
        assert!(
            r == "unmatched" || !(r.contains("alice") || r.contains(&payment_id) || r.contains("nothing")),
            "{routes:?}"
        );
    }

    // Latency histograms with every bucket.
    let h = histogram(
        &after,
        "opdesk_http_request_duration_seconds",
        &[("route", "/{name}"), ("method", "GET")],
    )
    .expect("wallet document latency");
    assert_eq!(h.count, Some(2));
    assert_eq!(h.buckets.len(), 17, "{h:?}");
    assert!(
        h.buckets
            .iter()
            .any(|b| b.upper_bound.is_infinite() && b.count.as_f64() == 2.0)
    );
    assert!(h.buckets.iter().any(|b| (b.upper_bound - 0.0001).abs() < 1e-12));

    // Signature verdicts: the grant request and the create verified, the bad one was refused.
    assert_eq!(delta("opdesk_signature_verdicts", &[("verdict", "ok")]), 2.0);
    assert_eq!(delta("opdesk_signature_verdicts", &[("verdict", "refused")]), 1.0);

    // The packet from the peer: rejected with F01.
    let packets = "opdesk_stream_packets";
    assert_eq!(delta(packets, &[("direction", "in"), ("result", "reject_F")]), 1.0);
    assert_eq!(delta(packets, &[("direction", "in"), ("result", "fulfilled")]), 0.0);
    assert_eq!(
        value(&after, packets, &[("direction", "out"), ("result", "fulfilled")]),
        0.0
    );

    // Stored state, read at the scrape: one more pending incoming payment, one more finalized grant.
    assert_eq!(delta("opdesk_incoming_payments", &[("state", "pending")]), 1.0);
    assert_eq!(delta("opdesk_grants", &[("state", "finalized")]), 1.0);
    let outgoing_states: BTreeSet<String> = samples(&after, "opdesk_outgoing_payments")
        .into_iter()
        .map(|(l, _)| l["state"].clone())
        .collect();
    let all: BTreeSet<String> = opdesk::states::OutgoingState::NAMES
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    assert_eq!(outgoing_states, all, "every state, zero or not");
    assert!(
        samples(&after, "opdesk_payments_amount")
            .iter()
            .any(|(l, _)| matches(l, &[("direction", "in"), ("asset", "USD/2")])),
        "amounts by asset"
    );
    assert!(after.families.contains_key("opdesk_webhook_deliveries"));
    assert!(after.families.contains_key("opdesk_webhook_delivery_states"));

    // The store: its queue and its transactions.
    assert!(after.families.contains_key("opdesk_store_queue_depth"));
    let jobs = |m: &OpenMetrics| {
        histogram(m, "opdesk_store_transaction_duration_seconds", &[])
            .and_then(|h| h.count)
            .unwrap_or(0)
    };
    assert!(jobs(&after) > jobs(&before), "store jobs ran");
    assert_eq!(
        value(&after, "opdesk_build_info", &[("version", env!("CARGO_PKG_VERSION"))]),
        1.0
    );
    assert!(value(&after, "opdesk_start_time_seconds", &[]) > 1.7e9);

    // Prometheus text 0.0.4 for a scraper that does not ask for OpenMetrics; a browser origin gets no CORS.
    let res = ase
        .http
        .get(ase.url("/metrics"))
        .header("origin", "https://wallet.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert!(
        !res.headers().keys().any(|k| k.as_str().starts_with("access-control-")),
        "{:?}",
        res.headers()
    );
    let text = res.text().await.unwrap();
    let prom: MetricsExposition<PrometheusType, PrometheusValue> =
        openmetrics_parser::prometheus::parse_prometheus(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let f = &prom.families["opdesk_http_requests_total"];
    assert!(matches!(f.family_type, PrometheusType::Counter));
    let preflight = ase
        .http
        .request(Method::OPTIONS, ase.url("/metrics"))
        .header("origin", "https://wallet.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert!(
        !preflight
            .headers()
            .keys()
            .any(|k| k.as_str().starts_with("access-control-"))
    );
    // while the public routes do answer browsers
    let res = ase
        .http
        .get(ase.url("/alice"))
        .header("origin", "https://wallet.example")
        .send()
        .await
        .unwrap();
    assert!(res.headers().contains_key("access-control-allow-origin"));

    // The dashboard only queries what a scrape has.
    dashboard_queries_existing_metrics(&after);
}

/// Every `opdesk_*` name in the sample dashboard's queries is a family of a real scrape (histogram series
/// by their family name).
fn dashboard_queries_existing_metrics(scrape: &OpenMetrics) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/grafana-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(dashboard["__inputs"][0]["name"], "DS_PROMETHEUS");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            exprs.push(target["expr"].as_str().unwrap().to_owned());
        }
    }
    assert!(exprs.len() >= 8, "{exprs:?}");
    let families: BTreeSet<&str> = scrape.families.keys().map(String::as_str).collect();
    for expr in &exprs {
        let names: Vec<&str> = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("opdesk_"))
            .collect();
        assert!(!names.is_empty(), "{expr}");
        for n in names {
            let family = ["_bucket", "_sum", "_count", "_total"]
                .iter()
                .find_map(|s| n.strip_suffix(s))
                .unwrap_or(n);
            assert!(families.contains(family), "{expr}: no {n} in a scrape ({families:?})");
        }
    }
}

#[tokio::test]
async fn only_allowed_peers_find_it() {
    // loopback is not in the list: /metrics answers as an unknown path does
    let ase = TestAse::spawn_with("[metrics]\nallow = [\"10.0.0.0/8\"]\n").await;
    let res = ase.http.get(ase.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 404);
    let body: Value = res.json().await.unwrap();
    let (_, unknown) = ase.get("/nothing/here").await;
    assert_eq!(body["error"]["code"], unknown["error"]["code"], "{body} {unknown}");
    drop(ase);

    let ase = TestAse::spawn_with("[metrics]\nenabled = false\n").await;
    let res = ase.http.get(ase.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 404);
}

#[tokio::test]
async fn a_grant_left_pending_past_its_window_shows_as_expired() {
    let ase = TestAse::spawn_with("[gnap]\ninteraction_expires_in_secs = 1\n").await;
    let client = ase.demo_client().await;
    let body = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/alice")}]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"]},
    });
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let m = scrape(&ase).await;
    let grants = |m: &OpenMetrics, state: &str| value(m, "opdesk_grants", &[("state", state)]);
    assert_eq!((grants(&m, "pending"), grants(&m, "expired")), (1.0, 0.0));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let m = scrape(&ase).await;
    assert_eq!((grants(&m, "pending"), grants(&m, "expired")), (0.0, 1.0));
    let states: BTreeSet<String> = samples(&m, "opdesk_grants")
        .into_iter()
        .map(|(l, _)| l["state"].clone())
        .collect();
    let all: BTreeSet<String> = opdesk::states::GrantState::NAMES
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    assert_eq!(states, all);
}

/// Liquidity for the peer `sender` and thresholds on it and on alice (5000 on its liquidity of 1000, 200 on its
/// credit used, all of alice's balance).
async fn set_thresholds(ase: &TestAse) {
    for (path, body) in [
        ("/peers/sender/liquidity", json!({"deposit": "1000"})),
        (
            "/thresholds",
            json!({"measure": "peerLiquidity", "subject": "sender", "threshold": "5000"}),
        ),
        (
            "/thresholds",
            json!({"measure": "peerCredit", "subject": "sender", "threshold": "200"}),
        ),
        (
            "/thresholds",
            json!({"measure": "walletBalance", "subject": "alice", "threshold": "999999999"}),
        ),
    ] {
        let method = if path == "/thresholds" {
            Method::PUT
        } else {
            Method::POST
        };
        let (s, v) = ase.admin(method, path, Some(&body.to_string())).await;
        assert!(s < 300, "{path}: {s} {v}");
    }
}

/// Every metric `contrib/prometheus/alerts.yml` names is a family of a real scrape, and the money families
/// carry a peer's liquidity, credit used and thresholds and the wallets under theirs.
#[tokio::test]
async fn every_metric_the_alert_rules_name_is_in_a_scrape() {
    let ase = TestAse::spawn_with(CONFIG).await;
    set_thresholds(&ase).await;
    let scrape = scrape(&ase).await;
    let rules = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/prometheus/alerts.yml")).unwrap();
    let names: BTreeSet<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr:"))
        .flat_map(|e| e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|w| w.starts_with("opdesk_"))
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let families: BTreeSet<&str> = scrape.families.keys().map(String::as_str).collect();
    for n in &names {
        let family = ["_bucket", "_sum", "_count", "_total"]
            .iter()
            .find_map(|s| n.strip_suffix(s))
            .unwrap_or(n);
        assert!(families.contains(family), "no {n} in a scrape ({families:?})");
    }
    let peer = [("peer", "sender")];
    assert_eq!(value(&scrape, "opdesk_peer_liquidity", &peer), 1000.0);
    assert_eq!(value(&scrape, "opdesk_peer_liquidity_threshold", &peer), 5000.0);
    assert_eq!(value(&scrape, "opdesk_peer_credit_used", &peer), 0.0);
    assert_eq!(value(&scrape, "opdesk_peer_credit_threshold", &peer), 200.0);
    assert_eq!(
        value(&scrape, "opdesk_wallets_under_threshold", &[("asset", "USD/2")]),
        1.0
    );
    assert!(value(&scrape, "opdesk_wallet_balance", &[("asset", "USD/2")]) > 0.0);
    assert_eq!(value(&scrape, "opdesk_grants_waiting", &[]), 0.0);
    assert_eq!(value(&scrape, "opdesk_outgoing_payments_failed_last_hour", &[]), 0.0);
}
