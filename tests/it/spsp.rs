//! SPSP receive end to end: a wallet address asked with `Accept: application/spsp4+json` answers STREAM
//! credentials (fresh per query, never cached); real OER Prepares to `POST /ilp` with them credit the wallet
//! itself; fulfils carry RFC 39 receipts when the query carried `Receipt-Nonce`/`Receipt-Secret`; the money is
//! announced as durable `walletReceived` events, coalesced per connection, exactly once across `kill -9`.
//! Refusals: one receipt header alone or a wrong length → 400, an unknown wallet → 404, `[ilp] spsp = false`
//! → the Open Payments document.

use std::time::Duration;

use base64::Engine as _;
use opdesk::ilp::{Frame, crypto::hmac_sha256};
use serde_json::Value;

use crate::{
    common::{Proc, TestAse, free_port},
    events::Stream,
    ilp_receiver::{CONFIG, Reply, Sender},
};

const SPSP: &str = "application/spsp4+json";

/// An SPSP query: status, headers and body.
async fn query(base: &str, path: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = reqwest::Client::new().get(format!("{base}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.unwrap();
    let (status, headers) = (res.status().as_u16(), res.headers().clone());
    (status, headers, res.json().await.unwrap_or(Value::Null))
}

fn sender(base: &str, spsp: &Value) -> Sender {
    Sender::to(
        base,
        spsp["destination_account"].as_str().unwrap(),
        spsp["shared_secret"].as_str().unwrap(),
    )
}

fn fulfilled(reply: &Reply) -> &opdesk::ilp::StreamPacket {
    match reply {
        Reply::Fulfill(s) => s,
        other => panic!("not fulfilled: {other:?}"),
    }
}

/// The `walletReceived` events of `wallet` in the outbox, replayed from the start until their amounts add up to
/// `total` (bounded), then a moment more to catch any extra.
async fn wallet_received(base: &str, token: &str, wallet: &str, total: i64) -> Vec<Value> {
    let mut stream = Stream::open(base, token, "", Some(0)).await;
    let mut got: Vec<Value> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut settle = None;
    loop {
        let now = tokio::time::Instant::now();
        if settle.is_some_and(|until| now >= until) {
            return got;
        }
        assert!(now < deadline, "walletReceived events for {wallet}: only {got:?}");
        if let Some(m) = stream.next(Duration::from_millis(300)).await
            && m.event == "walletReceived"
        {
            let v: Value = serde_json::from_str(&m.data).unwrap();
            assert!(v["seq"].is_i64(), "durable: {v}");
            if v["event"]["wallet"] == wallet {
                got.push(v["event"].clone());
            }
        }
        if settle.is_none() && got.iter().map(|e| e["amount"].as_i64().unwrap()).sum::<i64>() >= total {
            settle = Some(tokio::time::Instant::now() + Duration::from_millis(1500));
        }
    }
}

#[tokio::test]
async fn spsp_credentials_pay_into_the_wallet_and_are_announced() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let before = ase.balance("bob").await;

    // the plain document is unchanged, and says it varies with Accept
    let (s, h, doc) = query(&ase.base, "/bob", &[]).await;
    assert_eq!(s, 200);
    assert_eq!(doc["id"], ase.url("/bob"));
    assert!(h["content-type"].to_str().unwrap().starts_with("application/json"));
    assert!(h.get_all("vary").iter().any(|v| v == "Accept"), "{h:?}");

    // an SPSP query: fresh credentials each time, never cached
    let (s, h, a) = query(
        &ase.base,
        "/bob",
        &[("accept", "application/spsp4+json, application/json;q=0.5")],
    )
    .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(h["content-type"], SPSP);
    assert_eq!(h["cache-control"], "no-store");
    assert_eq!(a["receipts_enabled"], false);
    let dest = a["destination_account"].as_str().unwrap();
    assert!(dest.starts_with("test.opdesk."), "{dest}");
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(a["shared_secret"].as_str().unwrap())
        .expect("base64url");
    assert_eq!(secret.len(), 32);
    let (_, _, b) = query(&ase.base, "/bob", &[("accept", SPSP)]).await;
    assert_ne!(a["destination_account"], b["destination_account"]);

    // two connections pay: the connection asks for the asset, then money
    let mut one = sender(&ase.base, &a);
    let hello = one.connect().await;
    assert!(
        hello.stream().frames.iter().any(|f| matches!(f,
            Frame::ConnectionAssetDetails { source_asset_code, source_asset_scale: 2 } if source_asset_code == "USD")),
        "{hello:?}"
    );
    for amount in [100, 250, 50] {
        fulfilled(&one.pay(amount).await);
    }
    let mut two = sender(&ase.base, &b);
    let last = two.pay(7).await;
    // the room advertised is what the totals can hold, counted for this connection
    assert!(
        fulfilled(&last).frames.iter().any(|f| matches!(f,
            Frame::StreamMaxMoney { stream_id: 1, total_received: 7, receive_max } if *receive_max == i64::MAX as u64)),
        "{last:?}"
    );
    assert_eq!(ase.balance("bob").await, before + 407);

    // announced: per connection, amounts adding up to what each paid, the last saying the total
    let events = wallet_received(&ase.base, &ase.admin_token, "bob", 407).await;
    let mut by_connection = std::collections::BTreeMap::<String, (i64, i64)>::new();
    for e in &events {
        assert_eq!(
            (e["assetCode"].as_str(), e["assetScale"].as_i64()),
            (Some("USD"), Some(2))
        );
        let c = by_connection
            .entry(e["connection"].as_str().unwrap().into())
            .or_default();
        c.0 += e["amount"].as_i64().unwrap();
        c.1 = e["received"].as_i64().unwrap();
    }
    let mut totals: Vec<(i64, i64)> = by_connection.into_values().collect();
    totals.sort_unstable();
    assert_eq!(totals, [(7, 7), (400, 400)], "{events:?}");
    assert!(events.len() <= 4, "coalesced, not one event per packet: {events:?}");

    // the wallet's credentials are not an incoming payment's: nothing else moved
    let (s, _, _) = query(&ase.base, "/nobody", &[("accept", SPSP)]).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn receipts_prove_the_connection_total() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let (nonce, secret) = ([0x5a_u8; 16], [0x33_u8; 32]);
    let (s, _, spsp) = query(
        &ase.base,
        "/alice",
        &[
            ("accept", SPSP),
            ("receipt-nonce", &b64(&nonce)),
            ("receipt-secret", &b64(&secret)),
        ],
    )
    .await;
    assert_eq!(s, 200, "{spsp}");
    assert_eq!(spsp["receipts_enabled"], true);
    let mut s = sender(&ase.base, &spsp);
    let mut totals = Vec::new();
    for amount in [120, 80] {
        let reply = s.pay(amount).await;
        let receipt = fulfilled(&reply)
            .frames
            .iter()
            .find_map(|f| match f {
                Frame::StreamReceipt { stream_id: 1, receipt } => Some(receipt.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no receipt in {reply:?}"));
        // RFC 39: version 1, the nonce, stream id (one byte), total (UInt64), HMAC-SHA256 of the rest
        assert_eq!(receipt.len(), 58);
        assert_eq!((receipt[0], &receipt[1..17], receipt[17]), (1, &nonce[..], 1));
        assert_eq!(&receipt[26..], hmac_sha256(&secret, &receipt[..26]));
        totals.push(u64::from_be_bytes(receipt[18..26].try_into().unwrap()));
    }
    assert_eq!(totals, [120, 200]);

    // without a receipt setup, no receipts
    let (_, _, plain) = query(&ase.base, "/alice", &[("accept", SPSP)]).await;
    let reply = sender(&ase.base, &plain).pay(5).await;
    assert!(
        !fulfilled(&reply)
            .frames
            .iter()
            .any(|f| matches!(f, Frame::StreamReceipt { .. }))
    );

    // the headers come in pairs of the right lengths
    for headers in [
        vec![("receipt-nonce", b64(&nonce))],
        vec![("receipt-secret", b64(&secret))],
        vec![("receipt-nonce", b64(&nonce[..15])), ("receipt-secret", b64(&secret))],
        vec![("receipt-nonce", b64(&nonce)), ("receipt-secret", "%%%".into())],
    ] {
        let mut all = vec![("accept", SPSP)];
        all.extend(headers.iter().map(|(k, v)| (*k, v.as_str())));
        let (s, _, body) = query(&ase.base, "/alice", &all).await;
        assert_eq!(s, 400, "{headers:?}: {body}");
        assert_eq!(body["error"]["code"], "invalid_request", "{body}");
    }
}

#[tokio::test]
async fn spsp_can_be_turned_off() {
    let ase = TestAse::spawn_with(&CONFIG.replace("[ilp]\n", "[ilp]\nspsp = false\n")).await;
    let (s, h, doc) = query(&ase.base, "/alice", &[("accept", SPSP)]).await;
    assert_eq!(s, 200);
    assert!(h["content-type"].to_str().unwrap().starts_with("application/json"));
    assert_eq!(doc["id"], ase.url("/alice"));
    assert!(
        !h.get_all("vary").iter().any(|v| v.to_str().unwrap().contains("Accept")),
        "{h:?}"
    );
}

/// Money credited just before a `kill -9` is announced after the restart, and money announced before it is not
/// announced again: per connection, the events add up to exactly what was paid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn money_is_announced_exactly_once_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), CONFIG).unwrap();
    let port = free_port();
    let mut server = Proc::start(dir.path(), port).await;
    let (_, _, spsp) = query(&server.base, "/bob", &[("accept", SPSP)]).await;
    let mut s = sender(&server.base, &spsp);
    let mut paid = 0;
    for round in 0..3 {
        for _ in 0..5 {
            fulfilled(&s.pay(10).await);
            paid += 10;
        }
        if round < 2 {
            // a report in between, or not
            tokio::time::sleep(Duration::from_millis(600)).await;
        }
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let server = Proc::start(dir.path(), port).await;
    let events = wallet_received(&server.base, &server.admin_token, "bob", paid).await;
    let sum: i64 = events.iter().map(|e| e["amount"].as_i64().unwrap()).sum();
    assert_eq!(sum, paid, "{events:?}");
    assert_eq!(events.last().unwrap()["received"], paid);
}
