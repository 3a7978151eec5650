//! Alert thresholds over real HTTP and a real process: a payment that takes a wallet under its threshold
//! appends one `walletBalanceLow` in its own transaction, which reaches the webhook receiver though the
//! receiver was down and the server was killed with `kill -9` in between; a top-up and another payment make
//! exactly one more. Runs on SQLite, and on PostgreSQL with `OPDESK_TEST_POSTGRES`.

use std::{net::SocketAddr, time::Duration};

use reqwest::Method;
use serde_json::{Value, json};

use crate::{
    common::{Proc, balance_of, free_port},
    hooks::{Receiver, eventually},
};

async fn send(p: &Proc, method: Method, path: &str, body: Value) -> Value {
    let r = reqwest::Client::new()
        .request(method, format!("{}/admin{path}", p.base))
        .bearer_auth(&p.admin_token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Pays `value` (minor units of USD) from alice to bob on `p` through Open Payments, and waits until it
/// completed.
async fn pay(p: &Proc, dir: &std::path::Path, value: i64) {
    let c = p.demo_client(dir).await;
    let base = p.base.clone();
    let inc = crate::common::grant_token(&c, &base, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let out = crate::common::auto_approved_outgoing_token(&c, &base, "alice").await;
    let r = c
        .send(
            Method::POST,
            &format!("{base}/incoming-payments"),
            Some(&inc),
            Some(&json!({"walletAddress": format!("{base}/bob")})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let incoming = r.body["id"].as_str().unwrap().to_owned();
    let body = json!({"walletAddress": format!("{base}/alice"), "incomingPayment": incoming,
        "debitAmount": {"value": value.to_string(), "assetCode": "USD", "assetScale": 2}});
    let r = c
        .send(
            Method::POST,
            &format!("{base}/outgoing-payments"),
            Some(&out),
            Some(&body),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let items = p
        .wait_payments_ended(Duration::from_secs(30), "the payment did not end")
        .await;
    assert!(items.iter().all(|p| p["state"] == "completed"), "{items:?}");
}

async fn pending_of(p: &Proc, kind: &str) -> usize {
    p.admin("/webhooks?state=pending&first=1000")
        .await
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["type"] == kind)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_under_a_wallets_threshold_is_one_webhook_event_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let hook: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[gnap]\nauto_approve = true\n[webhooks]\nurl = \"http://{hook}/hook\"\nmax_attempts = 100000\n\
             retry_base_ms = 200\nretry_max_ms = 400\ntimeout_ms = 1000\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let mut server = Proc::start(dir.path(), port).await;
    let start = balance_of(&server.admin("/balances").await, "alice");
    assert!(start > 1000, "alice is seeded with money: {start}");
    let threshold = start - 300;
    let set = send(
        &server,
        Method::PUT,
        "/thresholds",
        json!({"measure": "walletBalance", "subject": "alice", "threshold": threshold.to_string()}),
    )
    .await;
    assert_eq!(set["crossed"], false, "{set}");
    // 200 of it: still over; 200 more: under, one event in that payment's transaction; 50 more: still under
    pay(&server, dir.path(), 200).await;
    assert_eq!(pending_of(&server, "walletBalanceLow").await, 0);
    pay(&server, dir.path(), 200).await;
    pay(&server, dir.path(), 50).await;
    eventually("the crossing waits as a delivery", || async {
        pending_of(&server, "walletBalanceLow").await == 1
    })
    .await;
    let listed = server.admin("/thresholds").await;
    assert_eq!(listed[0]["crossed"], true, "{listed}");
    assert_eq!(listed[0]["value"], start - 450, "{listed}");

    // kill -9 before the receiver could take it; the receiver comes up; the restarted server delivers it
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let receiver = Receiver::start(hook).await;
    let server = Proc::start(dir.path(), port).await;
    eventually("the event reached the receiver", || async {
        !receiver.of("walletBalanceLow").is_empty()
    })
    .await;
    let low = receiver.of("walletBalanceLow");
    assert_eq!(low.len(), 1, "{low:?}");
    let e = &low[0]["event"];
    assert_eq!(e["wallet"], "alice");
    assert_eq!(
        e["balance"],
        start - 400,
        "the balance after the payment that crossed: {e}"
    );
    assert_eq!(e["threshold"], threshold);
    assert_eq!(
        (e["assetCode"].as_str(), e["assetScale"].as_i64()),
        (Some("USD"), Some(2))
    );

    // topped up over it (no event), drained under it again: exactly one more
    send(
        &server,
        Method::POST,
        "/wallets/alice/deposit",
        json!({"value": "1000", "transferId": "top-up-1"}),
    )
    .await;
    pay(&server, dir.path(), 100).await;
    pay(&server, dir.path(), 1000).await;
    eventually("the second crossing reached the receiver", || async {
        receiver.of("walletBalanceLow").len() == 2
    })
    .await;
    let low = receiver.of("walletBalanceLow");
    assert_eq!(low[1]["event"]["balance"], start - 450 + 1000 - 1100, "{low:?}");
    // the operator's setting is an event too (it waited out the kill like the crossing did)
    eventually("the setting reached the receiver", || async {
        receiver.of("thresholdChanged").len() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        receiver.of("walletBalanceLow").len(),
        2,
        "no event beyond one per crossing"
    );
}

/// What an attached console reads (`POST /admin/queries` `overview`, as the embedded one asks its services):
/// the Attention list names a wallet under its threshold, and is empty again once it is removed.
#[tokio::test]
async fn the_overview_query_says_what_needs_attention() {
    let ase = crate::common::TestAse::spawn().await;
    let overview = || async {
        let (s, v) = ase
            .admin(Method::POST, "/queries", Some(r#"{"query":"overview"}"#))
            .await;
        assert_eq!(s, 200, "{v}");
        v["value"]["attention"].as_array().cloned().unwrap_or_default()
    };
    assert!(overview().await.is_empty(), "all is well at the start");
    let set = r#"{"measure":"walletBalance","subject":"alice","threshold":"999999999"}"#;
    let (s, v) = ase.admin(Method::PUT, "/thresholds", Some(set)).await;
    assert_eq!(s, 200, "{v}");
    let attention = overview().await;
    assert_eq!(attention.len(), 1, "{attention:?}");
    assert_eq!(attention[0]["kind"], "walletBalanceLow");
    assert!(
        attention[0]["what"]
            .as_str()
            .unwrap()
            .starts_with("wallet alice: balance"),
        "{attention:?}"
    );
    let (s, _) = ase
        .admin(
            Method::PUT,
            "/thresholds",
            Some(r#"{"measure":"walletBalance","subject":"alice"}"#),
        )
        .await;
    assert_eq!(s, 204);
    assert!(overview().await.is_empty());
}

/// A reader of the event stream (`GET /admin/events`, what consoles follow) sees the crossing as it happens,
/// in sequence order with no hole, though on SQLite the transfer that crossed it published only its own
/// event: the stream reads what the bus skipped from the outbox.
#[tokio::test]
async fn a_crossing_inside_a_transfer_reaches_a_live_reader_in_order() {
    let ase = crate::common::TestAse::spawn().await;
    let mut stream = crate::events::Stream::open(&ase.base, &ase.admin_token, "?live=summary", None).await;
    let (s, b) = ase.admin(Method::GET, "/balances", None).await;
    assert_eq!(s, 200);
    let start = balance_of(&b, "alice");
    let set = json!({"measure": "walletBalance", "subject": "alice", "threshold": (start - 100).to_string()});
    let (s, v) = ase.admin(Method::PUT, "/thresholds", Some(&set.to_string())).await;
    assert_eq!(s, 200, "{v}");
    for (n, value) in [(1, "50"), (2, "100"), (3, "1")] {
        let body = json!({"value": value, "transferId": format!("wd-{n}")});
        let (s, v) = ase
            .admin(Method::POST, "/wallets/alice/withdraw", Some(&body.to_string()))
            .await;
        assert_eq!(s, 200, "{v}");
    }
    // every durable event the stream brings up to the last withdrawal, by number
    let mut seen: Vec<(i64, String)> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !seen.iter().any(|(_, d)| d.contains("wd-3")) {
        assert!(std::time::Instant::now() < deadline, "only {seen:?} arrived");
        let Some(m) = stream.next(Duration::from_secs(10)).await else {
            continue;
        };
        if let Some(id) = m.id.as_deref().and_then(|i| i.parse().ok()) {
            seen.push((id, format!("{} {}", m.event, m.data)));
        }
    }
    let seqs: Vec<i64> = seen.iter().map(|(n, _)| *n).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "in order, no hole: {seen:?}");
    let low: Vec<_> = seen.iter().filter(|(_, d)| d.starts_with("walletBalanceLow")).collect();
    assert_eq!(low.len(), 1, "{seen:?}");
    let moved = |id: &str| {
        seen.iter()
            .position(|(_, d)| d.starts_with("walletFundsMoved") && d.contains(id))
    };
    let at = seen.iter().position(|(_, d)| d.starts_with("walletBalanceLow"));
    assert!(
        moved("wd-1") < at && at < moved("wd-3"),
        "the crossing came with wd-2: {seen:?}"
    );
}
