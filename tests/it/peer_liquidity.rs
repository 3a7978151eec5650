//! Peer liquidity and credit limits end to end, on two opdesk instances peered both ways (the helpers of
//! `ilp_sender`): a payment through a peer without enough liquidity waits with its reason and a deposit
//! resumes it to the exact amount; a peer past its credit limit is refused `T04` with nothing credited until
//! a settlement or a higher limit lets money flow; deposits, withdrawals and settlements keep every ledger
//! balanced; a withdrawal past what we do not owe is refused in words, on the admin API and the CLI. Each side
//! counts the packets through its peer and keeps the last reject (T04) either way.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value as Json, json};

use crate::{
    common::TestAse,
    ilp_sender::{assert_balanced, bob_receiver, config, dir, free, grant, pair, quote_receiver, start_paying},
};

/// Quotes and pays `receiver` from alice@`a`; returns the outgoing payment's id.
async fn pay(a: &TestAse, client: &opdesk::client::SignedClient, receiver: &str) -> String {
    let quote = quote_receiver(a, client, receiver).await;
    let url = start_paying(a, client, &quote).await;
    url.rsplit('/').next().unwrap().to_owned()
}

/// Polls the operator view of payment `id` until `until` holds (bounded); returns it.
async fn wait_for(ase: &TestAse, id: &str, what: &str, until: impl Fn(&Json) -> bool) -> Json {
    let mut last = Json::Null;
    for _ in 0..1000 {
        let (s, v) = ase.admin(Method::GET, &format!("/outgoing-payments/{id}"), None).await;
        assert_eq!(s, 200, "{v}");
        if until(&v) {
            return v;
        }
        last = v;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("payment {id}: {what} never happened: {last}");
}

async fn peer(ase: &TestAse, name: &str) -> Json {
    let (s, p) = ase.admin(Method::GET, &format!("/peers/{name}"), None).await;
    assert_eq!(s, 200, "{p}");
    p
}

async fn post(ase: &TestAse, path: &str, body: Json) -> (u16, Json) {
    ase.admin(Method::POST, path, Some(&body.to_string())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_waits_for_liquidity_and_a_deposit_resumes_it() {
    let (a, b) = pair(700).await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;

    // no liquidity deposited: the peer is not limited (as before migration 0010)
    let p = peer(&a, "desk-b").await;
    assert_eq!(p["sendLimited"], false, "{p}");
    assert!(p.get("availableToSend").is_none(), "{p}");

    // 10.00 USD of liquidity from peer desk-b: we may owe it 10.00
    let (s, moved) = post(
        &a,
        "/peers/desk-b/liquidity",
        json!({"deposit": "1000", "transferId": "liq-1"}),
    )
    .await;
    assert_eq!(s, 200, "{moved}");
    assert_eq!(moved["transfer"]["kind"], "liquidity_deposit");
    assert_eq!(moved["peer"]["liquidity"], 1000);
    assert_eq!(moved["peer"]["sendLimited"], true);
    assert_eq!(moved["peer"]["availableToSend"], 1000);
    // the same transfer id again changes nothing
    let (s, again) = post(
        &a,
        "/peers/desk-b/liquidity",
        json!({"deposit": "1000", "transferId": "liq-1"}),
    )
    .await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["peer"]["liquidity"], 1000);

    // 25.00 to bob@B in packets of ≤ 7.00: the first goes, the second has no room
    let receiver = bob_receiver(&b, &b_client, Some(2500)).await;
    let id = pay(&a, &a_client, &receiver).await;
    let waiting = wait_for(&a, &id, "a wait for liquidity", |v| {
        v["failureReason"] == "peer_liquidity"
    })
    .await;
    assert_eq!(waiting["state"], "sending", "{waiting}");
    assert_eq!(waiting["sentAmount"]["value"], "700", "{waiting}");
    assert_eq!(
        waiting["failureMessage"],
        "Peer desk-b is out of liquidity: 3.00 USD of 10.00 USD available, the packet needs 7.00 USD. \
         Deposit liquidity to resume.",
        "{waiting}"
    );
    assert_eq!(waiting["attempts"], 0, "waiting is no failed attempt: {waiting}");
    // it stays waiting (rechecked, never failed)
    tokio::time::sleep(Duration::from_millis(300)).await;
    let still = wait_for(&a, &id, "still waiting", |_| true).await;
    assert_eq!(
        (still["state"].as_str(), still["sentAmount"]["value"].as_str()),
        (Some("sending"), Some("700"))
    );
    let p = peer(&a, "desk-b").await;
    assert_eq!(
        (p["position"].as_i64(), p["owed"].as_i64()),
        (Some(700), Some(700)),
        "{p}"
    );
    assert_eq!(
        (p["availableToSend"].as_u64(), p["inFlight"].as_u64()),
        (Some(300), Some(0)),
        "{p}"
    );

    // 20.00 more: the deposit wakes it and it completes with exactly 25.00
    let (s, moved) = post(&a, "/peers/desk-b/liquidity", json!({"deposit": "2000"})).await;
    assert_eq!(s, 200, "{moved}");
    let done = a.wait_outgoing(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"]["value"], "2500", "{done}");
    assert!(done["failureReason"].is_null(), "the wait is over: {done}");
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "2500", "{public}");
    assert_eq!(b.balance("bob").await, 50_000 + 2500);
    let p = peer(&a, "desk-b").await;
    assert_eq!(
        (
            p["liquidity"].as_i64(),
            p["position"].as_i64(),
            p["availableToSend"].as_u64()
        ),
        (Some(3000), Some(2500), Some(500)),
        "{p}"
    );

    // withdrawing past what we do not owe is refused, in words; within it, it goes
    let (s, e) = post(&a, "/peers/desk-b/liquidity", json!({"withdraw": "600"})).await;
    assert_eq!(s, 409, "{e}");
    assert_eq!(e["error"]["code"], "insufficient_liquidity");
    assert_eq!(
        e["error"]["description"],
        "cannot withdraw 6.00 USD from peer desk-b's liquidity: only 5.00 USD can be withdrawn \
         (30.00 USD deposited, 25.00 USD owed to the peer)"
    );
    let (s, moved) = post(&a, "/peers/desk-b/liquidity", json!({"withdraw": "500"})).await;
    assert_eq!(s, 200, "{moved}");
    assert_eq!(moved["peer"]["availableToSend"], 0);

    // we pay the peer 25.00 outside ILP: nothing owed, the whole liquidity can be withdrawn
    let (s, settled) = post(
        &a,
        "/peers/desk-b/settlements",
        json!({"direction": "paid", "amount": "2500", "id": "wire-1"}),
    )
    .await;
    assert_eq!(s, 200, "{settled}");
    assert_eq!(settled["transfer"]["kind"], "settlement");
    assert_eq!(settled["peer"]["position"], 0);
    let (s, again) = post(
        &a,
        "/peers/desk-b/settlements",
        json!({"direction": "paid", "amount": "2500", "id": "wire-1"}),
    )
    .await;
    assert_eq!(
        (s, again["peer"]["position"].as_i64()),
        (200, Some(0)),
        "idempotent: {again}"
    );
    let (s, moved) = post(&a, "/peers/desk-b/liquidity", json!({"withdraw": "2500"})).await;
    assert_eq!(s, 200, "{moved}");
    assert_eq!(moved["peer"]["liquidity"], 0);
    let (s, e) = post(&a, "/peers/desk-b/liquidity", json!({"withdraw": "1"})).await;
    assert_eq!(s, 409, "{e}");

    // both ledgers balance per asset, the journal agrees, and the events were recorded
    let balances = assert_balanced(&a).await;
    assert!(
        balances
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["kind"] == "liquidity" && b["peer"] == "desk-b" && b["balance"] == 0),
        "{balances}"
    );
    assert_balanced(&b).await;
    let events = a
        .state
        .store
        .call(|c| {
            let mut st = c.prepare("SELECT type FROM events ORDER BY seq")?;
            let v = st
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, opdesk::store::Error>(v)
        })
        .await
        .unwrap();
    assert_eq!(
        events.iter().filter(|e| *e == "peerLiquidityChanged").count(),
        4,
        "{events:?}"
    );
    assert_eq!(events.iter().filter(|e| *e == "peerSettled").count(), 1, "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_past_its_credit_limit_is_refused_t04_until_settled_or_raised() {
    let (a, b) = pair(700).await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;

    // B lets peer desk-a (a config peer) owe it at most 14.00
    let (s, p) = b
        .admin(Method::PATCH, "/peers/desk-a", Some(r#"{"creditLimit":"1400"}"#))
        .await;
    assert_eq!(s, 200, "{p}");
    assert_eq!(
        (p["creditLimit"].as_i64(), p["creditUsed"].as_u64()),
        (Some(1400), Some(0)),
        "{p}"
    );

    // 25.00 in packets of 7.00: two are credited (14.00 owed), the third is refused T04
    let receiver = bob_receiver(&b, &b_client, Some(2500)).await;
    let id = pay(&a, &a_client, &receiver).await;
    let refused = wait_for(&a, &id, "a T04", |v| {
        v["failureMessage"].as_str().is_some_and(|m| m.contains("T04"))
    })
    .await;
    assert_eq!(refused["state"], "sending", "a temporary refusal is retried: {refused}");
    let message = refused["failureMessage"].as_str().unwrap();
    assert!(message.contains("past its credit limit of 14.00 USD"), "{message}");
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    // the packets (700, 700, 700, 400) are in flight together, so B credits whichever fit first: 700 + 700,
    // or 700 + 400 when the last one came early; never more than the limit
    let got: i64 = public["receivedAmount"]["value"].as_str().unwrap().parse().unwrap();
    assert!(got == 1400 || got == 1100, "nothing more credited: {public}");
    assert_eq!(b.balance("bob").await, 50_000 + got);
    let p = peer(&b, "desk-a").await;
    assert_eq!(
        (p["position"].as_i64(), p["creditUsed"].as_i64()),
        (Some(-got), Some(got)),
        "{p}"
    );
    // the traffic (this process): B answered desk-a's packets and refused the last with T04, and A saw it
    assert!(p["packetsIn"]["fulfilled"].as_u64() >= Some(2), "{p}");
    assert!(p["packetsIn"]["rejected"].as_u64() >= Some(1), "{p}");
    assert_eq!(
        (p["lastReject"]["code"].as_str(), p["lastReject"]["direction"].as_str()),
        (Some("T04"), Some("in")),
        "{p}"
    );
    let sent = peer(&a, "desk-b").await;
    assert!(
        sent["packetsOut"]["total"].as_u64() >= p["packetsIn"]["total"].as_u64(),
        "{sent}"
    );
    assert_eq!(sent["lastReject"]["code"], "T04", "{sent}");
    assert_eq!(sent["lastReject"]["direction"], "out", "{sent}");
    assert_balanced(&b).await;

    // desk-a pays B what it owes outside ILP: B records it, and the payment completes on its next retry
    let (s, settled) = post(
        &b,
        "/peers/desk-a/settlements",
        json!({"direction": "received", "amount": got.to_string()}),
    )
    .await;
    assert_eq!(s, 200, "{settled}");
    assert_eq!(settled["peer"]["position"], 0);
    let done = a.wait_outgoing(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"]["value"], "2500", "{done}");
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "2500", "{public}");
    assert_eq!(peer(&b, "desk-a").await["position"], -(2500 - got));

    // a second payment: the first packet would take desk-a past 14.00 owed; raising the limit lets it through
    let receiver = bob_receiver(&b, &b_client, Some(1000)).await;
    let id = pay(&a, &a_client, &receiver).await;
    wait_for(&a, &id, "a T04", |v| {
        v["failureMessage"].as_str().is_some_and(|m| m.contains("T04"))
    })
    .await;
    let (s, p) = b
        .admin(Method::PATCH, "/peers/desk-a", Some(r#"{"creditLimit":"10000"}"#))
        .await;
    assert_eq!(s, 200, "{p}");
    let done = a.wait_outgoing(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"]["value"], "1000", "{done}");
    assert_eq!(peer(&b, "desk-a").await["position"], -(3500 - got));
    // `null` removes the limit
    let (s, p) = b
        .admin(Method::PATCH, "/peers/desk-a", Some(r#"{"creditLimit":null}"#))
        .await;
    assert_eq!(s, 200, "{p}");
    assert!(p.get("creditLimit").is_none(), "{p}");

    assert_balanced(&a).await;
    assert_balanced(&b).await;
}

/// Across currencies the peer's asset counts: alice@A pays in USD through desk-b, a EUR link; A's liquidity,
/// position and the packets it compares are all EUR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liquidity_is_counted_in_the_peer_asset_across_currencies() {
    let (a_addr, b_addr) = (free(), free());
    let eur = |cfg: String| cfg.replace("asset_code = \"USD\"", "asset_code = \"EUR\"");
    let a = TestAse::spawn_in(
        dir(&eur(config("desk-a", "desk-b", b_addr.port(), "b-to-a", "a-to-b", 400))),
        Some(a_addr),
    )
    .await;
    let b = TestAse::spawn_in(
        dir(&eur(config(
            "desk-b",
            "desk-a",
            a_addr.port(),
            "a-to-b",
            "b-to-a",
            100_000,
        ))),
        Some(b_addr),
    )
    .await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;
    let (s, moved) = post(&a, "/peers/desk-b/liquidity", json!({"deposit": "500"})).await;
    assert_eq!(s, 200, "{moved}");
    assert_eq!(moved["peer"]["assetCode"], "EUR");

    // carol@B: 9.00 EUR, paid from alice's USD in EUR packets of ≤ 4.00
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
    let id = pay(&a, &a_client, &receiver).await;
    let waiting = wait_for(&a, &id, "a wait for liquidity", |v| {
        v["failureReason"] == "peer_liquidity"
    })
    .await;
    assert_eq!(
        waiting["failureMessage"],
        "Peer desk-b is out of liquidity: 1.00 EUR of 5.00 EUR available, the packet needs 4.00 EUR. \
         Deposit liquidity to resume.",
        "{waiting}"
    );
    let p = peer(&a, "desk-b").await;
    assert_eq!(
        (p["position"].as_i64(), p["availableToSend"].as_u64()),
        (Some(400), Some(100)),
        "{p}"
    );

    let (s, _) = post(&a, "/peers/desk-b/liquidity", json!({"deposit": "500"})).await;
    assert_eq!(s, 200);
    let done = a.wait_outgoing(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "900", "{public}");
    let p = peer(&a, "desk-b").await;
    assert_eq!(
        (
            p["liquidity"].as_i64(),
            p["position"].as_i64(),
            p["availableToSend"].as_u64()
        ),
        (Some(1000), Some(900), Some(100)),
        "{p}"
    );
    assert_balanced(&a).await;
    assert_balanced(&b).await;
}

fn opdesk(ase: &TestAse, args: &[&str]) -> std::process::Output {
    let cfg = ase.dir.path().join("test-config.toml");
    std::fs::write(&cfg, "").unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args([
            "--data-dir",
            ase.dir.path().to_str().unwrap(),
            "--listen",
            &ase.addr.to_string(),
        ])
        .args(args)
        .env_remove("RUST_LOG")
        .env("OPDESK_CONFIG", &cfg)
        .output()
        .expect("run opdesk")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_deposits_settles_and_refuses_in_one_line() {
    let ase = TestAse::spawn().await;
    let run = |args: &'static [&'static str]| {
        let ase = &ase;
        tokio::task::block_in_place(|| opdesk(ase, args))
    };
    let ok = |out: std::process::Output| {
        assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    ok(run(&[
        "peers",
        "add",
        "bank",
        "--asset",
        "USD",
        "--incoming-token",
        "bank-token",
    ]));
    let out = ok(run(&["peers", "liquidity", "bank", "deposit", "1000"]));
    assert_eq!(
        out,
        "deposited 10.00 USD into bank's liquidity: now 10.00 USD, 10.00 USD available to send\n"
    );
    let out = ok(run(&["peers", "settle", "bank", "received", "250"]));
    assert_eq!(
        out,
        "settlement recorded: bank paid us 2.50 USD; now we owe bank 2.50 USD\n"
    );
    let out = ok(run(&["peers", "update", "bank", "--credit-limit", "5000"]));
    assert!(out.contains("credit limit:    50.00"), "{out}");
    assert!(out.contains("available:       7.50 USD"), "{out}");

    let out = run(&["peers", "liquidity", "bank", "withdraw", "900"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("via ") && !l.contains("server at"))
        .collect();
    assert_eq!(
        lines,
        [
            "error: cannot withdraw 9.00 USD from peer bank's liquidity: only 7.50 USD can be withdrawn \
          (10.00 USD deposited, 2.50 USD owed to the peer)"
        ],
        "{err}"
    );
    let out = run(&["peers", "liquidity", "bank", "withdraw", "1.00"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("error: the amount must be whole minor units")
    );

    let p = peer(&ase, "bank").await;
    assert_eq!(
        (
            p["liquidity"].as_i64(),
            p["position"].as_i64(),
            p["creditLimit"].as_i64()
        ),
        (Some(1000), Some(250), Some(5000)),
        "{p}"
    );
    assert_balanced(&ase).await;
}
