//! The payment engine end to end: local settlement fixed-send and fixed-receive, cross-currency with the
//! configured rate and fee, failures with their reasons (insufficient balance, completed receiver, expired
//! receiver), retry after a deposit, operator cancel, and money conservation throughout.

use opdesk::{
    app::AppCore,
    ase::{
        incoming::CreateIncoming,
        outgoing::{GrantContext, Source},
    },
    money::{Amount, Asset, Value},
    settings::Settings,
};
use reqwest::Method;
use serde_json::{Value as Json, json};

use crate::common::TestAse;

pub(crate) fn usd(v: &str) -> Json {
    json!({"value": v, "assetCode": "USD", "assetScale": 2})
}

/// Per-asset sums of all balances are zero, and the journal agrees with the cached balances.
pub(crate) async fn assert_conserved(ase: &TestAse) {
    let (_, balances) = ase.admin(Method::GET, "/balances", None).await;
    let mut sums = std::collections::HashMap::<String, i64>::new();
    for b in balances.as_array().unwrap() {
        *sums.entry(b["assetCode"].as_str().unwrap().to_owned()).or_default() += b["balance"].as_i64().unwrap();
        if b["kind"] != "settlement" {
            assert!(b["available"].as_i64().unwrap() >= 0, "{b}");
        }
        if b["kind"] == "payment" {
            assert_eq!(b["balance"], 0, "a finished payment holds no money: {b}");
        }
    }
    assert!(sums.values().all(|v| *v == 0), "{sums:?}");
    let audit = ase.state.ledger.audit().await.unwrap();
    assert!(audit.is_empty(), "{audit:?}");
}

pub(crate) struct Payer {
    client: opdesk::client::SignedClient,
    pub(crate) incoming: String,
    quote: String,
    outgoing: String,
}

pub(crate) async fn payer(ase: &TestAse) -> Payer {
    let client = ase.demo_client().await;
    let grant = |access: Json| json!({"access_token": {"access": access}, "client": ase.url("/demo-client")});
    let tok = |r: opdesk::client::Response| r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let auth = ase.url("/auth");
    let incoming = tok(client
        .send(
            Method::POST,
            &auth,
            None,
            Some(&grant(
                json!([{"type": "incoming-payment", "actions": ["create", "read"]}]),
            )),
        )
        .await
        .unwrap());
    let quote = tok(client
        .send(
            Method::POST,
            &auth,
            None,
            Some(&grant(json!([{"type": "quote", "actions": ["create"]}]))),
        )
        .await
        .unwrap());
    let mut out =
        grant(json!([{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/alice")}]));
    out["interact"] = json!({"start": ["redirect"]});
    let r = client.send(Method::POST, &auth, None, Some(&out)).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let cont = r.body["continue"].clone();
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    ase.admin(
        Method::POST,
        &format!("/grants/{}/approve", pending[0]["id"].as_str().unwrap()),
        Some("{}"),
    )
    .await;
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
    let outgoing = tok(r);
    Payer {
        client,
        incoming,
        quote,
        outgoing,
    }
}

impl Payer {
    pub(crate) async fn incoming(&self, ase: &TestAse, wallet: &str, amount: Option<Json>, extra: Json) -> Json {
        let mut body = json!({"walletAddress": ase.url(&format!("/{wallet}")), "metadata": {"n": rand_n()}});
        if let Some(a) = amount {
            body["incomingAmount"] = a;
        }
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = self
            .client
            .send(
                Method::POST,
                &ase.url("/incoming-payments"),
                Some(&self.incoming),
                Some(&body),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        r.body
    }

    pub(crate) async fn quote(&self, ase: &TestAse, receiver: &str, amount: Json) -> Json {
        let mut body = json!({"walletAddress": ase.url("/alice"), "receiver": receiver, "method": "ilp"});
        for (k, v) in amount.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = self
            .client
            .send(Method::POST, &ase.url("/quotes"), Some(&self.quote), Some(&body))
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        r.body
    }

    pub(crate) async fn pay(&self, ase: &TestAse, quote: &Json) -> Json {
        let body = json!({"walletAddress": ase.url("/alice"), "quoteId": quote["id"]});
        let r = self
            .client
            .send(
                Method::POST,
                &ase.url("/outgoing-payments"),
                Some(&self.outgoing),
                Some(&body),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        ase.wait_outgoing(r.body["id"].as_str().unwrap()).await
    }

    pub(crate) async fn get(&self, url: &str, token: &str) -> Json {
        let r = self.client.send(Method::GET, url, Some(token), None).await.unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }
}

fn rand_n() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[tokio::test]
async fn alice_pays_bob_fixed_send_and_fixed_receive() {
    let ase = TestAse::spawn().await;
    let p = payer(&ase).await;
    let ip = p.incoming(&ase, "bob", Some(usd("1000")), json!({})).await;
    let q = p
        .quote(&ase, ip["id"].as_str().unwrap(), json!({"debitAmount": usd("1000")}))
        .await;
    let done = p.pay(&ase, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"], usd("1000"));
    assert_eq!(done["failed"], false);
    let got = p.get(done["id"].as_str().unwrap(), &p.outgoing).await;
    assert_eq!(got["sentAmount"], usd("1000"));
    let inc = p.get(ip["id"].as_str().unwrap(), &p.incoming).await;
    assert_eq!(inc["receivedAmount"], usd("1000"));
    assert_eq!(inc["completed"], true);
    assert_eq!(ase.balance("alice").await, 100_000 - 1000);
    assert_eq!(ase.balance("bob").await, 50_000 + 1000);

    let open = p.incoming(&ase, "bob", None, json!({})).await;
    let q = p
        .quote(&ase, open["id"].as_str().unwrap(), json!({"receiveAmount": usd("250")}))
        .await;
    let done = p.pay(&ase, &q).await;
    assert_eq!(done["state"], "completed");
    let inc = p.get(open["id"].as_str().unwrap(), &p.incoming).await;
    assert_eq!(inc["receivedAmount"], usd("250"));
    assert_eq!(inc["completed"], false, "open-ended receivers stay open");
    assert_eq!(ase.balance("alice").await, 100_000 - 1250);
    assert_eq!(ase.balance("bob").await, 50_000 + 1250);
    assert_conserved(&ase).await;
}

#[tokio::test]
async fn alice_pays_carol_across_currencies_with_rate_and_fee() {
    let ase = TestAse::spawn_with("[fees]\nUSD = { fixed = 10, basis_points = 100 }\n").await;
    let p = payer(&ase).await;
    let ip = p.incoming(&ase, "carol", None, json!({})).await;
    let q = p
        .quote(&ase, ip["id"].as_str().unwrap(), json!({"debitAmount": usd("1000")}))
        .await;
    // fee 10 + 1% of 1000 = 20; 980 USD at 0.90 = 882 EUR
    assert_eq!(
        q["receiveAmount"],
        json!({"value": "882", "assetCode": "EUR", "assetScale": 2})
    );
    let done = p.pay(&ase, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(ase.balance("alice").await, 100_000 - 1000);
    assert_eq!(ase.balance("carol").await, 50_000 + 882);
    let inc = p.get(ip["id"].as_str().unwrap(), &p.incoming).await;
    assert_eq!(inc["receivedAmount"]["value"], "882");
    assert_conserved(&ase).await;

    // the metrics show the money moved by asset and the payment's state, read from the store: the same
    // after a restart
    let lines = [
        r#"opdesk_payments_amount_total{direction="out",asset="USD/2"} 1000"#,
        r#"opdesk_payments_amount_total{direction="in",asset="EUR/2"} 882"#,
        r#"opdesk_outgoing_payments{state="completed"} 1"#,
        r#"opdesk_outgoing_payments{state="failed"} 0"#,
    ];
    let (dir, addr) = ase.stop().await;
    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    let metrics = ase
        .http
        .get(ase.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in lines {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
}

#[tokio::test]
async fn failures_carry_reasons_and_release_the_reservation() {
    let ase = TestAse::spawn().await;
    let p = payer(&ase).await;
    // insufficient balance: failed, nothing debited
    let ip = p.incoming(&ase, "bob", None, json!({})).await;
    let q = p
        .quote(&ase, ip["id"].as_str().unwrap(), json!({"debitAmount": usd("200000")}))
        .await;
    let failed = p.pay(&ase, &q).await;
    assert_eq!(failed["state"], "failed");
    assert_eq!(failed["failed"], true);
    assert_eq!(failed["failureReason"], "insufficient_balance");
    assert!(failed["failureMessage"].as_str().unwrap().contains("does not cover"));
    assert_eq!(ase.balance("alice").await, 100_000);

    // retry after a deposit succeeds, as a new attempt
    let (s, _) = ase
        .admin(Method::POST, "/wallets/alice/deposit", Some(r#"{"value":"150000"}"#))
        .await;
    assert_eq!(s, 200);
    let id = failed["id"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let (s, retried) = ase
        .admin(Method::POST, &format!("/outgoing-payments/{id}/retry"), Some("{}"))
        .await;
    assert_eq!(s, 200, "{retried}");
    let done = ase.wait_outgoing(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["attempts"], 1);
    assert_eq!(ase.balance("alice").await, 250_000 - 200_000);

    // a completed receiver: the payment fails with receiver_completed and nothing moves
    let ip = p.incoming(&ase, "bob", Some(usd("500")), json!({})).await;
    let q = p.quote(&ase, ip["id"].as_str().unwrap(), json!({})).await;
    let rid = ip["id"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let (s, _) = ase
        .admin(Method::POST, &format!("/incoming-payments/{rid}/complete"), Some("{}"))
        .await;
    assert_eq!(s, 200);
    let before = ase.balance("alice").await;
    let failed = p.pay(&ase, &q).await;
    assert_eq!(failed["failureReason"], "receiver_completed", "{failed}");
    assert_eq!(ase.balance("alice").await, before);
    let (s, e) = ase
        .admin(
            Method::POST,
            &format!(
                "/outgoing-payments/{}/retry",
                failed["id"].as_str().unwrap().rsplit('/').next().unwrap()
            ),
            Some("{}"),
        )
        .await;
    assert_eq!(s, 409, "the receiver still refuses: {e}");
    assert_conserved(&ase).await;
}

#[tokio::test]
async fn an_expiring_receiver_stops_a_payment_in_flight() {
    // two packets, 1.5 s apart: the receiver expires in between
    let ase =
        TestAse::spawn_with("[engine]\npreset = \"custom\"\npackets_per_payment = 2\npacket_interval_ms = 1500\n")
            .await;
    let p = payer(&ase).await;
    let expires = opdesk::clock::format_ts(time::OffsetDateTime::now_utc() + time::Duration::milliseconds(900));
    let ip = p.incoming(&ase, "bob", None, json!({"expiresAt": expires})).await;
    let body = json!({"walletAddress": ase.url("/alice"), "incomingPayment": ip["id"], "debitAmount": usd("1000")});
    let r = p
        .client
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&p.outgoing),
            Some(&body),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let done = ase.wait_outgoing(r.body["id"].as_str().unwrap()).await;
    assert_eq!(done["failureReason"], "receiver_expired", "{done}");
    assert_eq!(done["sentAmount"], usd("500"), "what was sent stays sent");
    assert_eq!(ase.balance("alice").await, 100_000 - 500);
    assert_eq!(ase.balance("bob").await, 50_000 + 500);
    // money to an expired receiver: refused at quote time already
    let r = p.client.send(Method::POST, &ase.url("/quotes"), Some(&p.quote), Some(&json!({"walletAddress": ase.url("/alice"), "receiver": ip["id"], "method": "ilp", "debitAmount": usd("1")}))).await.unwrap();
    assert_eq!(r.status, 400);
    assert_conserved(&ase).await;
}

#[tokio::test]
async fn events_follow_a_payment() {
    let ase = TestAse::spawn().await;
    let p = payer(&ase).await;
    let mut rx = ase.state.bus.subscribe();
    let ip = p.incoming(&ase, "bob", Some(usd("300")), json!({})).await;
    let q = p.quote(&ase, ip["id"].as_str().unwrap(), json!({})).await;
    p.pay(&ase, &q).await;
    let mut seen = Vec::new();
    while let Ok(Ok(e)) = tokio::time::timeout(std::time::Duration::from_millis(300), rx.recv()).await {
        let v = serde_json::to_value(&e.event).unwrap();
        seen.push(v["type"].as_str().unwrap().to_owned());
    }
    for want in [
        "incomingPaymentCreated",
        "quoteCreated",
        "outgoingPaymentCreated",
        "outgoingPaymentProgress",
        "outgoingPaymentCompleted",
        "incomingPaymentReceived",
        "incomingPaymentCompleted",
        "balanceChanged",
    ] {
        assert!(seen.iter().any(|s| s == want), "no {want} in {seen:?}");
    }
}

/// In-process: a payment the engine has not touched yet can be cancelled; its reservation is released.
#[tokio::test]
async fn operator_cancels_an_unsent_payment() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::for_data_dir(dir.path(), "127.0.0.1:0".parse().unwrap()).unwrap();
    let core = AppCore::open(settings).await.unwrap();
    let s = &core.state;
    let bob = s.wallets.get("bob").await.unwrap();
    let alice = s.wallets.get("alice").await.unwrap();
    let usd = Asset::new("USD", 2).unwrap();
    let ip = s
        .incoming
        .create(
            &bob,
            None,
            CreateIncoming {
                wallet_address: bob.url.clone(),
                incoming_amount: None,
                expires_at: None,
                metadata: None,
            },
        )
        .await
        .unwrap();
    let debit = Amount::new(Value::new(700).unwrap(), &usd);
    let dto = s
        .outgoing
        .create(
            &alice,
            None,
            None::<GrantContext>,
            Source::Incoming {
                receiver: s.incoming.url_of(&ip.id),
                debit,
            },
            None,
            None,
        )
        .await
        .unwrap();
    let id = dto.id.rsplit('/').next().unwrap().to_owned();
    assert_eq!(s.ledger.balance(&alice.account_id).await.unwrap().pending_debits, 700);
    let cancelled = s.engine.cancel(&id).await.unwrap();
    assert_eq!(cancelled.state, "cancelled");
    let b = s.ledger.balance(&alice.account_id).await.unwrap();
    assert_eq!((b.balance, b.pending_debits), (100_000, 0));
    assert!(s.engine.cancel(&id).await.is_err(), "cancel is once");
    s.engine.drain().await.unwrap();
    assert_eq!(
        s.outgoing.get(&id).await.unwrap().state,
        "cancelled",
        "the engine leaves it alone"
    );
    core.close();
}

/// Webhooks: events arrive signed; a refused delivery is retried.
#[tokio::test]
async fn webhooks_are_signed_and_retried() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((mut sock, _)) = listener.accept().await {
            n += 1;
            let tx = tx.clone();
            let refuse = n == 1;
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                loop {
                    let k = sock.read(&mut chunk).await.unwrap_or(0);
                    if k == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..k]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(i) = text.find("\r\n\r\n") {
                        let len: usize = text
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length: ")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if buf.len() >= i + 4 + len {
                            let sig = text
                                .lines()
                                .find_map(|l| {
                                    l.to_ascii_lowercase()
                                        .strip_prefix("opdesk-signature: ")
                                        .map(str::to_owned)
                                })
                                .unwrap_or_default();
                            let body = text[i + 4..i + 4 + len].to_owned();
                            let status = if refuse { "500 Internal Server Error" } else { "200 OK" };
                            let _ = sock
                                .write_all(
                                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                                        .as_bytes(),
                                )
                                .await;
                            if !refuse {
                                let _ = tx.send((sig, body));
                            }
                            break;
                        }
                    }
                }
            });
        }
    });
    let ase = TestAse::spawn_with(&format!(
        "[webhooks]\nurl = \"http://{addr}/hook\"\nsecret = \"s3cret\"\n"
    ))
    .await;
    for name in ["hooked-1", "hooked-2"] {
        let body = format!(r#"{{"name":"{name}","assetCode":"USD","assetScale":2}}"#);
        let (s, _) = ase.admin(Method::POST, "/wallets", Some(&body)).await;
        assert_eq!(s, 201);
    }
    let (sig, body) = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let v: Json = serde_json::from_str(&body).unwrap();
    assert_eq!(v["event"]["type"], "walletCreated", "{v}");
    assert_eq!(v["type"], "walletCreated", "{v}");
    let t: i64 = sig
        .split(", ")
        .next()
        .unwrap()
        .trim_start_matches("t=")
        .parse()
        .unwrap();
    assert_eq!(
        sig,
        opdesk::webhooks::signature(b"s3cret", t, body.as_bytes()).to_ascii_lowercase()
    );
    // two events; the first delivery was refused with 500 and arrives on retry
    let (_, second) = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let w: Json = serde_json::from_str(&second).unwrap();
    assert_eq!(w["event"]["type"], "walletCreated");
    assert_ne!(w["id"], v["id"]);
    let mut names = [v["event"]["name"].clone(), w["event"]["name"].clone()];
    names.sort_by_key(|n| n.to_string());
    assert_eq!(names, [json!("hooked-1"), json!("hooked-2")]);
}
