//! The STREAM sender end to end: two opdesk instances on loopback, peered both ways over ILP-over-HTTP.
//! alice@A quotes bob@B's incoming payment (A resolves it as an Open Payments client with its own key, then
//! probes the rate through peer B) and pays it by STREAM in packets below the peer's maximum. Checked: B's
//! incoming payment completes with exactly the amount, A's payment completes with sent/delivered amounts,
//! both ledgers balance per asset (the peer accounts carry the link), the plan's peer and rates are used,
//! and a completed receiver makes a second payment fail with `receiver_completed`.

use std::time::Instant;

use reqwest::Method;
use serde_json::{Value as Json, json};

use crate::common::TestAse;

pub(crate) fn config(
    me: &str,
    other: &str,
    other_port: u16,
    incoming: &str,
    outgoing: &str,
    max_packet: u64,
) -> String {
    format!(
        r#"
[ilp]
address = "test.{me}"

[[ilp.peers]]
name = "{other}"
incoming_tokens = ["{incoming}"]
outgoing_endpoint = "http://127.0.0.1:{other_port}/ilp"
outgoing_token = "{outgoing}"
routes = ["test.{other}"]
max_packet_amount = {max_packet}
asset_code = "USD"
asset_scale = 2
"#
    )
}

/// A free loopback address.
pub(crate) fn free() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A fresh data dir with `cfg` as its config.toml.
pub(crate) fn dir(cfg: &str) -> std::sync::Arc<tempfile::TempDir> {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("config.toml"), cfg).unwrap();
    std::sync::Arc::new(d)
}

/// Two instances, A and B, peered both ways; A's packets are at most `max_packet`.
pub(crate) async fn pair(max_packet: u64) -> (TestAse, TestAse) {
    let (a_addr, b_addr) = (free(), free());
    let a_dir = dir(&config(
        "desk-a",
        "desk-b",
        b_addr.port(),
        "b-to-a",
        "a-to-b",
        max_packet,
    ));
    let b_dir = dir(&config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000));
    let a = TestAse::spawn_in(a_dir, Some(a_addr)).await;
    let b = TestAse::spawn_in(b_dir, Some(b_addr)).await;
    (a, b)
}

/// An incoming payment on bob@`b` (of `amount` USD minor units, or open-ended), created over Open Payments
/// with `client`; returns its URL.
pub(crate) async fn bob_receiver(b: &TestAse, client: &opdesk::client::SignedClient, amount: Option<u64>) -> String {
    let token = grant(
        b,
        client,
        json!([{"type": "incoming-payment", "actions": ["create", "read"]}]),
    )
    .await;
    let mut body = json!({"walletAddress": b.url("/bob")});
    if let Some(v) = amount {
        body["incomingAmount"] = json!({"value": v.to_string(), "assetCode": "USD", "assetScale": 2});
    }
    let r = client
        .send(Method::POST, &b.url("/incoming-payments"), Some(&token), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["id"].as_str().unwrap().to_owned()
}

fn tok(r: &opdesk::client::Response) -> String {
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["access_token"]["value"].as_str().unwrap().to_owned()
}

pub(crate) async fn grant(ase: &TestAse, client: &opdesk::client::SignedClient, access: Json) -> String {
    let body = json!({"access_token": {"access": access}, "client": ase.url("/demo-client")});
    tok(&client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap())
}

/// An outgoing-payment grant for alice on `ase`, approved by the operator.
pub(crate) async fn outgoing_grant(ase: &TestAse, client: &opdesk::client::SignedClient) -> String {
    let body = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/alice")}]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"]},
    });
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let cont = r.body["continue"].clone();
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = pending[0]["id"].as_str().unwrap();
    let (s, _) = ase
        .admin(Method::POST, &format!("/grants/{id}/approve"), Some("{}"))
        .await;
    assert_eq!(s, 200);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = client
        .send(
            Method::POST,
            cont["uri"].as_str().unwrap(),
            Some(cont["access_token"]["value"].as_str().unwrap()),
            None,
        )
        .await
        .unwrap();
    tok(&r)
}

/// Pays quote `quote` (its JSON) from alice@`a` with a fresh outgoing-payment grant; the payment once it is no
/// longer sending.
/// alice@`a` quotes `receiver` (by its incoming amount, or what it still expects); the quote, created.
pub(crate) async fn quote_receiver(a: &TestAse, client: &opdesk::client::SignedClient, receiver: &str) -> Json {
    let body = json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp"});
    quote(a, client, &body).await
}

/// `body` posted to `a`'s `/quotes` under a new quote grant; the quote, created.
pub(crate) async fn quote(a: &TestAse, client: &opdesk::client::SignedClient, body: &Json) -> Json {
    let quote_tok = grant(a, client, json!([{"type": "quote", "actions": ["create"]}])).await;
    let q = client
        .send(Method::POST, &a.url("/quotes"), Some(&quote_tok), Some(body))
        .await
        .unwrap();
    assert_eq!(q.status, 201, "{}", q.body);
    q.body
}

pub(crate) async fn pay_quote(a: &TestAse, client: &opdesk::client::SignedClient, quote: &Json) -> Json {
    let id = start_paying(a, client, quote).await;
    a.wait_outgoing(&id).await
}

/// Creates alice's outgoing payment of `quote` (its grant auto-approved); returns its URL without waiting.
pub(crate) async fn start_paying(a: &TestAse, client: &opdesk::client::SignedClient, quote: &Json) -> String {
    let out_tok = outgoing_grant(a, client).await;
    let body = json!({"walletAddress": a.url("/alice"), "quoteId": quote["id"]});
    let r = client
        .send(Method::POST, &a.url("/outgoing-payments"), Some(&out_tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["id"].as_str().unwrap().to_owned()
}

/// Every asset's balances sum to zero, no wallet or payment account is negative, the journal matches.
pub(crate) async fn assert_balanced(ase: &TestAse) -> Json {
    let (_, balances) = ase.admin(Method::GET, "/balances", None).await;
    let mut sums = std::collections::HashMap::<String, i64>::new();
    for b in balances.as_array().unwrap() {
        *sums.entry(b["assetCode"].as_str().unwrap().to_owned()).or_default() += b["balance"].as_i64().unwrap();
        if matches!(b["kind"].as_str(), Some("wallet" | "payment")) {
            assert!(b["available"].as_i64().unwrap() >= 0, "{b}");
        }
        if b["kind"] == "payment" {
            assert_eq!(b["balance"], 0, "a finished payment holds no money: {b}");
        }
    }
    assert!(sums.values().all(|v| *v == 0), "{sums:?}");
    assert!(ase.state.ledger.audit().await.unwrap().is_empty());
    balances
}

pub(crate) fn peer_balance(balances: &Json) -> i64 {
    balances
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["kind"] == "peer")
        .map(|b| b["balance"].as_i64().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_at_a_pays_bob_at_b_by_stream() {
    let (a, b) = pair(700).await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;

    // bob@B: an incoming payment of 25.00 USD
    let receiver = bob_receiver(&b, &b_client, Some(2500)).await;

    // alice@A quotes it: resolved over Open Payments, rate probed through peer desk-b
    let quote_tok = grant(&a, &a_client, json!([{"type": "quote", "actions": ["create"]}])).await;
    let body = json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp"});
    let started = Instant::now();
    let q = a_client
        .send(Method::POST, &a.url("/quotes"), Some(&quote_tok), Some(&body))
        .await
        .unwrap();
    let quote_ms = started.elapsed().as_millis();
    assert_eq!(q.status, 201, "{}", q.body);
    crate::common::assert_matches_schema("resource-server.yaml", "quote", &q.body);
    assert_eq!(q.body["receiveAmount"]["value"], "2500");
    // fixed delivery at the minimum rate 0.99: ceil(2500 / 0.99) = 2526
    assert_eq!(q.body["debitAmount"]["value"], "2526", "{}", q.body);
    let (_, jwks) = a.get("/opdesk/jwks.json").await;
    assert_eq!(
        jwks["keys"].as_array().unwrap().len(),
        1,
        "the ASE's client key is published: {jwks}"
    );

    // and pays it
    let out_tok = outgoing_grant(&a, &a_client).await;
    let body = json!({"walletAddress": a.url("/alice"), "quoteId": q.body["id"]});
    let alice_before = a.balance("alice").await;
    let started = Instant::now();
    let r = a_client
        .send(Method::POST, &a.url("/outgoing-payments"), Some(&out_tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let done = a.wait_outgoing(r.body["id"].as_str().unwrap()).await;
    let pay_ms = started.elapsed().as_millis();
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"]["value"], "2500", "{done}");

    // B: completed with exactly 25.00; bob got it
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "2500", "{public}");
    let (_, inc) = b
        .admin(
            Method::GET,
            &format!("/incoming-payments/{}", receiver.rsplit('/').next().unwrap()),
            None,
        )
        .await;
    assert_eq!(inc["state"], "completed", "{inc}");
    assert_eq!(b.balance("bob").await, 50_000 + 2500);
    assert_eq!(
        a.balance("alice").await,
        alice_before - 2500,
        "the unneeded 26 went back to alice"
    );

    // both ledgers balance; the link shows +2500 at A and −2500 at B
    let a_bal = assert_balanced(&a).await;
    let b_bal = assert_balanced(&b).await;
    assert_eq!(peer_balance(&a_bal), 2500);
    assert_eq!(peer_balance(&b_bal), -2500);
    let (s, peers) = a.admin(Method::GET, "/peers", None).await;
    assert_eq!(s, 200);
    assert_eq!(peers[0]["name"], "desk-b");
    assert_eq!(peers[0]["routes"], json!(["test.desk-b"]));
    assert_eq!(peers[0]["peerAccountBalance"], 2500);
    assert!(!peers.to_string().contains("a-to-b"), "tokens stay secret: {peers}");
    eprintln!("STREAM A→B: quote {quote_ms} ms, payment of 2500 in packets of ≤700: {pay_ms} ms");

    // a second payment to the completed receiver: the quote is refused, a payment without quote too
    let q2 = a_client
        .send(
            Method::POST,
            &a.url("/quotes"),
            Some(&quote_tok),
            Some(&body_for(&a, &receiver)),
        )
        .await
        .unwrap();
    assert_eq!(q2.status, 400, "{}", q2.body);
    assert_eq!(q2.body["error"]["code"], "invalid_receiver", "{}", q2.body);
}

fn body_for(a: &TestAse, receiver: &str) -> Json {
    json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp", "debitAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_send_without_a_quote_and_a_receiver_that_fills_up() {
    let (a, b) = pair(100_000).await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;
    let receiver = bob_receiver(&b, &b_client, Some(1000)).await;

    // fixed-send 5.00 without a quote: delivers floor(500 × 0.99) = 495 at least; the receiver gets 500
    let out_tok = outgoing_grant(&a, &a_client).await;
    let body = json!({"walletAddress": a.url("/alice"), "incomingPayment": receiver, "debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}});
    let r = a_client
        .send(Method::POST, &a.url("/outgoing-payments"), Some(&out_tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["receiveAmount"]["value"], "495", "{}", r.body);
    let done = a.wait_outgoing(r.body["id"].as_str().unwrap()).await;
    assert_eq!(done["state"], "completed", "{done}");
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    let got: i64 = public["receivedAmount"]["value"].as_str().unwrap().parse().unwrap();
    assert!((495..=500).contains(&got), "{public}");

    // the receiver is completed on B behind A's back: the next payment fails with receiver_completed
    let id = receiver.rsplit('/').next().unwrap();
    let (s, _) = b
        .admin(Method::POST, &format!("/incoming-payments/{id}/complete"), Some("{}"))
        .await;
    assert_eq!(s, 200);
    let q_tok = grant(&a, &a_client, json!([{"type": "quote", "actions": ["create"]}])).await;
    let q = a_client
        .send(
            Method::POST,
            &a.url("/quotes"),
            Some(&q_tok),
            Some(&body_for(&a, &receiver)),
        )
        .await
        .unwrap();
    assert_eq!(q.status, 400, "{}", q.body);
    assert_balanced(&a).await;
    assert_balanced(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_added_at_runtime_carries_payments_at_once() {
    // A starts with no peers; B knows A from its config.
    let (a_addr, b_addr) = (free(), free());
    let a = TestAse::spawn_in(dir("[ilp]\naddress = \"test.desk-a\"\n"), Some(a_addr)).await;
    let b_config = config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000);
    let b = TestAse::spawn_in(dir(&b_config), Some(b_addr)).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    let receiver = bob_receiver(&b, &b_client, None).await;
    let quote_tok = grant(&a, &a_client, json!([{"type": "quote", "actions": ["create"]}])).await;
    let (quotes_url, quote_body) = (a.url("/quotes"), body_for(&a, &receiver));
    let quote = || a_client.send(Method::POST, &quotes_url, Some(&quote_tok), Some(&quote_body));
    let q = quote().await.unwrap();
    assert_eq!(q.status, 400, "no peer yet: {}", q.body);
    assert_eq!(a.get("/opdesk").await.0, 404, "no client wallet before a peer can send");

    // The operator adds B: routed by its ILP address (no routes given); the client wallet appears.
    let body = format!(
        r#"{{"name":"desk-b","assetCode":"USD","assetScale":2,"ilpAddress":"test.desk-b","incomingTokens":["b-to-a"],"outgoingEndpoint":"http://{b_addr}/ilp","outgoingToken":"a-to-b"}}"#
    );
    let (status, peer) = a.admin(Method::POST, "/peers", Some(&body)).await;
    assert_eq!(status, 201, "{peer}");
    assert_eq!(peer["routes"], json!(["test.desk-b"]));
    let (_, jwks) = a.get("/opdesk/jwks.json").await;
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 1, "{jwks}");

    // (the same signed body twice within a second is a replay)
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let q = quote().await.unwrap();
    assert_eq!(q.status, 201, "{}", q.body);
    let done = pay_quote(&a, &a_client, &q.body).await;
    assert_eq!(done["state"], "completed", "{done}");
    // fixed-send: the whole debit goes out, and the receiver gets what it buys (at least the quoted amount)
    assert_eq!(done["sentAmount"], done["debitAmount"], "{done}");
    let quoted: i64 = done["receiveAmount"]["value"].as_str().unwrap().parse().unwrap();
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    let got: i64 = public["receivedAmount"]["value"].as_str().unwrap().parse().unwrap();
    assert!(got >= quoted, "{public}");
    let sent: i64 = done["sentAmount"]["value"].as_str().unwrap().parse().unwrap();
    let a_bal = assert_balanced(&a).await;
    assert_balanced(&b).await;
    assert_eq!(peer_balance(&a_bal), sent);
    let (_, shown) = a.admin(Method::GET, "/peers/desk-b", None).await;
    assert_eq!(shown["peerAccountBalance"], sent, "{shown}");

    // While nothing is sending through it, it can be removed; quotes then fail again.
    let (status, _) = a.admin(Method::DELETE, "/peers/desk-b", None).await;
    assert_eq!(status, 204);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(quote().await.unwrap().status, 400);
}

#[tokio::test]
async fn receivers_elsewhere_need_a_peer_and_a_route() {
    // no peers: refused as before, with a clear reason
    let a = TestAse::spawn().await;
    let c = a.demo_client().await;
    let q_tok = grant(&a, &c, json!([{"type": "quote", "actions": ["create"]}])).await;
    let body = json!({"walletAddress": a.url("/alice"), "receiver": "http://127.0.0.1:9/incoming-payments/0190b8a4-5b47-7c8a-9d2e-1234567890ab", "method": "ilp"});
    let q = c
        .send(Method::POST, &a.url("/quotes"), Some(&q_tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(q.status, 400, "{}", q.body);
    assert_eq!(q.body["error"]["code"], "invalid_receiver");
    assert_eq!(q.body["error"]["description"], "invalid receiver");
    assert!(
        q.body["error"]["details"]["reason"]
            .as_str()
            .unwrap()
            .contains("no ILP peer"),
        "{}",
        q.body
    );
}

/// Throughput figures for BENCHMARKS.md (`cargo test --release --test it -- --ignored stream_throughput
/// --nocapture`): money packets of one unit straight into B's `/ilp` (one packet in flight), then a
/// payment A → B in packets of 10 through both instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement, not a check"]
async fn stream_throughput() {
    use opdesk::ilp::{
        Address,
        sender::{Connection, HttpTransport, Verdict},
    };
    let (a, b) = pair(10).await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;
    let b_inc = grant(
        &b,
        &b_client,
        json!([{"type": "incoming-payment", "actions": ["create", "read"]}]),
    )
    .await;
    let incoming = |value: &str| {
        let body = json!({"walletAddress": b.url("/bob"), "incomingAmount": {"value": value, "assetCode": "USD", "assetScale": 2}});
        let (c, url, tok) = (b_client.clone(), b.url("/incoming-payments"), b_inc.clone());
        async move { c.send(Method::POST, &url, Some(&tok), Some(&body)).await.unwrap().body }
    };

    // raw /ilp: 2000 one-unit money packets
    let direct = incoming("100000").await;
    let method = &direct["methods"][0];
    let secret = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        method["sharedSecret"].as_str().unwrap(),
    )
    .unwrap();
    let transport = std::sync::Arc::new(HttpTransport::new(
        &b.url("/ilp"),
        "a-to-b",
        std::time::Duration::from_secs(10),
    ));
    let mut conn = Connection::new(
        transport,
        Address::new(method["ilpAddress"].as_str().unwrap()).unwrap(),
        &secret,
        None,
        std::time::Duration::from_secs(30),
    );
    conn.connect().await.unwrap();
    let n = 2000;
    let started = Instant::now();
    for _ in 0..n {
        assert!(matches!(
            conn.send_money(1, 1).await.unwrap(),
            Verdict::Fulfilled { .. }
        ));
    }
    let direct_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for _ in 0..n {
        conn.probe(1).await.unwrap();
    }
    let probe_s = started.elapsed().as_secs_f64();

    // end to end: a payment of 20000 in packets of 10 (2000 packets, each committed on both sides)
    let receiver = incoming("20000").await["id"].as_str().unwrap().to_owned();
    let q = quote_receiver(&a, &a_client, &receiver).await;
    let out_tok = outgoing_grant(&a, &a_client).await;
    let body = json!({"walletAddress": a.url("/alice"), "quoteId": q["id"]});
    let started = Instant::now();
    let r = a_client
        .send(Method::POST, &a.url("/outgoing-payments"), Some(&out_tok), Some(&body))
        .await
        .unwrap();
    let done = a.wait_outgoing(r.body["id"].as_str().unwrap()).await;
    let e2e_s = started.elapsed().as_secs_f64();
    assert_eq!(done["state"], "completed", "{done}");
    eprintln!(
        "money packets into /ilp: {:.0}/s; probes: {:.0}/s; A→B payment of 2000 packets: {:.2} s = {:.0} packets/s",
        f64::from(n) / direct_s,
        f64::from(n) / probe_s,
        e2e_s,
        2000.0 / e2e_s
    );
}

/// A rates service in the reference ASE's shape on loopback: `GET /rates?base=USD` → `{"base":"USD",
/// "rates":{"EUR":0.8}}`; counts requests.
async fn rates_service() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let body = if head.starts_with("GET /rates?base=USD ") {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                r#"{"base":"USD","rates":{"EUR":0.8}}"#
            } else {
                r#"{"base":"?","rates":{}}"#
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(answer.as_bytes()).await;
        }
    });
    (format!("http://{addr}/rates"), hits)
}

/// A cross-currency link: alice@A holds USD, A's peer desk-b settles in EUR, carol@B receives EUR. A converts
/// USD → EUR itself at the rates service's 0.8 (over `[rates]`'s 0.90), takes its fee in USD, and sends EUR
/// packets; every amount follows from the rate, the 1 % slippage and the fee, and both ledgers balance per
/// asset (A's conversion shows as USD in, EUR out on its settlement accounts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usd_pays_eur_through_a_eur_peer_at_the_rates_service_rate() {
    let (rates_url, rates_hits) = rates_service().await;
    let (a_addr, b_addr) = (free(), free());
    let eur = |cfg: String| cfg.replace("asset_code = \"USD\"", "asset_code = \"EUR\"");
    let a_cfg = eur(config("desk-a", "desk-b", b_addr.port(), "b-to-a", "a-to-b", 400))
        + &format!("\n[exchange_rates]\nurl = \"{rates_url}\"\n\n[fees]\nUSD = {{ fixed = 10 }}\n");
    let b_cfg = eur(config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000));
    let a = TestAse::spawn_in(dir(&a_cfg), Some(a_addr)).await;
    let b = TestAse::spawn_in(dir(&b_cfg), Some(b_addr)).await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;

    // carol@B: 9.00 EUR
    let token = grant(
        &b,
        &b_client,
        json!([{"type": "incoming-payment", "actions": ["create", "read"]}]),
    )
    .await;
    let body = json!({"walletAddress": b.url("/carol"), "incomingAmount": {"value": "900", "assetCode": "EUR", "assetScale": 2}});
    let r = b_client
        .send(Method::POST, &b.url("/incoming-payments"), Some(&token), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let receiver = r.body["id"].as_str().unwrap().to_owned();

    // fixed receive: 900 EUR at the 0.99 floor needs ceil(900 / 0.99) = 910 EUR through the peer, which
    // costs ceil(910 / 0.8) = 1138 USD; plus the fixed fee of 10
    let q = quote_receiver(&a, &a_client, &receiver).await;
    crate::common::assert_matches_schema("resource-server.yaml", "quote", &q);
    assert_eq!(
        q["receiveAmount"],
        json!({"value": "900", "assetCode": "EUR", "assetScale": 2})
    );
    assert_eq!(
        q["debitAmount"],
        json!({"value": "1148", "assetCode": "USD", "assetScale": 2})
    );
    assert_eq!(
        rates_hits.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the rates service was asked"
    );

    // fixed send elsewhere: 5.00 USD less the fee 10 = 490 USD → floor(490 × 0.8) = 392 EUR → 388 at 0.99
    let probe = json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp",
        "debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}});
    let q2 = quote(&a, &a_client, &probe).await;
    assert_eq!(q2["receiveAmount"]["value"], "388", "{q2}");

    // pay the fixed-receive quote: packets of ≤ 400 EUR; the path is 1:1, so 900 EUR go out for 900 in,
    // which stand for ceil(900 / 0.8) = 1125 USD; alice pays that and the fee, the other 13 come back
    let alice_before = a.balance("alice").await;
    let done = pay_quote(&a, &a_client, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(
        done["sentAmount"],
        json!({"value": "1135", "assetCode": "USD", "assetScale": 2}),
        "{done}"
    );
    assert_eq!(a.balance("alice").await, alice_before - 1135);
    assert_eq!(b.balance("carol").await, 50_000 + 900);
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "900", "{public}");

    // the books: A's peer account owes desk-b 900 EUR; the conversion sits on A's settlement accounts
    let a_bal = assert_balanced(&a).await;
    let b_bal = assert_balanced(&b).await;
    let of = |bal: &Json, kind: &str, code: &str| -> i64 {
        bal.as_array()
            .unwrap()
            .iter()
            .filter(|x| x["kind"] == kind && x["assetCode"] == code)
            .map(|x| x["balance"].as_i64().unwrap())
            .sum()
    };
    assert_eq!(of(&a_bal, "peer", "EUR"), 900);
    assert_eq!(of(&a_bal, "peer", "USD"), 0);
    assert_eq!(of(&b_bal, "peer", "EUR"), -900);
    let (_, peers) = a.admin(Method::GET, "/peers", None).await;
    assert_eq!(peers[0]["assetCode"], "EUR", "{peers}");
}
