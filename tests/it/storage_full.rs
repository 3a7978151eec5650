//! A full store, for real: the server restarts with `store.max_db_pages` just above the database's size
//! (SQLite's `PRAGMA max_page_count` on its writer connection, so writes past it fail with `SQLITE_FULL`
//! exactly as on a full disk), the test fills it through the API, and then checks: creates answer 503
//! `service_unavailable` with `Retry-After` and leave no row, GNAP grant requests too, reads keep working and
//! a restart without the quota takes writes again; an outgoing payment in flight pauses (not failed, no
//! attempt counted, nothing lost or doubled) and completes on its own once pages are freed.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use opdesk::client::{Response, SignedClient};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{TestAse, assert_envelope, finish_grant, grant_token};

/// The quota is SQLite's (`store.max_db_pages`, in pages of the data dir's file): on PostgreSQL these tests
/// have nothing to test, and a server refuses the setting there.
fn sqlite_only() -> bool {
    crate::common::postgres().is_some()
}

fn usd(v: &str) -> Value {
    json!({"value": v, "assetCode": "USD", "assetScale": 2})
}

/// A fresh connection to the server's database file (not the server's: no quota here).
fn db(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("ase.sqlite3")).unwrap()
}

fn count(dir: &Path, table: &str) -> i64 {
    db(dir)
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// Restarts on the same data dir and address with `config` as its config.toml.
async fn restart(ase: TestAse, config: &str) -> TestAse {
    let (dir, addr) = ase.stop().await;
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    TestAse::spawn_in(dir, Some(addr)).await
}

/// A quota of `margin` pages above the database's current size.
fn quota(dir: &Path, margin: i64) -> String {
    let pages: i64 = db(dir).query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
    format!("[store]\nmax_db_pages = {}\n", pages + margin)
}

async fn token(ase: &TestAse, c: &SignedClient, access: Value) -> String {
    grant_token(c, &ase.base, access).await
}

async fn try_incoming(ase: &TestAse, c: &SignedClient, tok: &str, amount: Option<Value>, pad: usize) -> Response {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut body = json!({"walletAddress": ase.url("/bob"), "metadata": {"n": n, "pad": "x".repeat(pad)}});
    if let Some(a) = amount {
        body["incomingAmount"] = a;
    }
    c.send(Method::POST, &ase.url("/incoming-payments"), Some(tok), Some(&body))
        .await
        .unwrap()
}

/// Every ordering of every non-empty subset of `items`.
fn permutations(items: &[&'static str]) -> Vec<Vec<&'static str>> {
    let mut out = Vec::new();
    for (i, first) in items.iter().enumerate() {
        out.push(vec![*first]);
        let rest: Vec<&'static str> = items
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, x)| *x)
            .collect();
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            out.push(tail);
        }
    }
    out
}

/// The 503 of a full store: the envelope and `Retry-After`.
fn assert_full(r: &Response) {
    assert_eq!(r.status, 503, "{}", r.body);
    assert_envelope(&r.body, "service_unavailable");
    assert!(
        r.body["error"]["description"]
            .as_str()
            .unwrap()
            .contains("storage is full"),
        "{}",
        r.body
    );
    assert!(r.headers.contains_key("retry-after"), "{:?}", r.headers);
}

/// Creates incoming payments (big ones, then small ones) until the store refuses one; returns how many
/// were created and the refusal.
async fn fill(ase: &TestAse, c: &SignedClient, tok: &str) -> (i64, Response) {
    let mut created = 0;
    let mut last = None;
    for pad in [3000, 100, 0] {
        for _ in 0..400 {
            let r = try_incoming(ase, c, tok, None, pad).await;
            if r.status == 201 {
                created += 1;
                continue;
            }
            assert_full(&r);
            last = Some(r);
            break;
        }
        assert!(last.is_some(), "the store never filled");
    }
    (created, last.unwrap())
}

#[tokio::test]
async fn creates_at_a_full_store_answer_503_and_write_nothing() {
    if sqlite_only() {
        return;
    }
    let ase = TestAse::spawn().await;
    let demo = ase.demo_client().await;
    let tok = token(
        &ase,
        &demo,
        json!([{"type": "incoming-payment", "actions": ["create", "read"]}]),
    )
    .await;
    let first = try_incoming(&ase, &demo, &tok, Some(usd("100")), 0).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let dir: Arc<tempfile::TempDir> = ase.dir.clone();
    let config = quota(dir.path(), 10);
    let ase = restart(ase, &config).await;

    let before = count(dir.path(), "incoming_payments");
    let (created, refused) = fill(&ase, &demo, &tok).await;
    assert_full(&refused);
    assert_eq!(
        count(dir.path(), "incoming_payments"),
        before + created,
        "a refused create leaves no row"
    );
    // the next create is refused too, and still writes nothing
    assert_full(&try_incoming(&ase, &demo, &tok, None, 0).await);
    assert_eq!(count(dir.path(), "incoming_payments"), before + created);

    // GNAP: grant requests until the grants table needs a page of its own, then 503 with nothing half-issued
    let grants_before = count(dir.path(), "grants");
    let mut issued = 0;
    let mut refused = None;
    for actions in permutations(&["create", "complete", "read", "read-all", "list"]) {
        // distinct bodies: identical requests in the same second would be refused as replays
        let body = json!({"access_token": {"access": [{"type": "incoming-payment", "actions": actions}]},
            "client": ase.url("/demo-client")});
        let r = demo
            .send(Method::POST, &ase.url("/auth"), None, Some(&body))
            .await
            .unwrap();
        if r.status == 200 {
            issued += 1;
            continue;
        }
        refused = Some(r);
        break;
    }
    let refused = refused.expect("the grants table never filled");
    assert_full(&refused);
    assert_eq!(count(dir.path(), "grants"), grants_before + issued);
    assert_eq!(
        count(dir.path(), "access_tokens"),
        count(dir.path(), "grants"),
        "every grant here is non-interactive and has exactly its token"
    );

    // reads keep working
    let r = demo
        .send(Method::GET, first.body["id"].as_str().unwrap(), Some(&tok), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let (s, w) = ase.get("/bob").await;
    assert_eq!(s, 200, "{w}");
    let (s, _) = ase.admin(Method::GET, "/incoming-payments", None).await;
    assert_eq!(s, 200);

    // room again: writes succeed
    let ase = restart(ase, "").await;
    let r = try_incoming(&ase, &demo, &tok, None, 3000).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn a_payment_in_flight_pauses_while_full_and_completes_once_there_is_room() {
    if sqlite_only() {
        return;
    }
    // few, quick retries: a full store counted as a transient failure would fail the payment at once
    let engine = "[engine]\npreset = \"custom\"\npackets_per_payment = 40\npacket_interval_ms = 150\n\
                  max_attempts = 2\nretry_base_ms = 100\n";
    let ase = TestAse::spawn_with(engine).await;
    let demo = ase.demo_client().await;
    let inc = token(
        &ase,
        &demo,
        json!([{"type": "incoming-payment", "actions": ["create", "read"]}]),
    )
    .await;
    let quo = token(&ase, &demo, json!([{"type": "quote", "actions": ["create"]}])).await;
    let grant = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/alice")}]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n1"}},
    });
    let g = demo
        .send(Method::POST, &ase.url("/auth"), None, Some(&grant))
        .await
        .unwrap();
    assert_eq!(g.status, 200, "{}", g.body);
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let gid = pending[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        ase.admin(Method::POST, &format!("/grants/{gid}/approve"), Some("{}"))
            .await
            .0,
        200
    );
    let out = finish_grant(&demo, &g.body).await;
    let receiver = try_incoming(&ase, &demo, &inc, Some(usd("4000")), 0).await;
    assert_eq!(receiver.status, 201, "{}", receiver.body);
    let receiver_url = receiver.body["id"].as_str().unwrap().to_owned();
    let quote = demo
        .send(
            Method::POST,
            &ase.url("/quotes"),
            Some(&quo),
            Some(&json!({"walletAddress": ase.url("/alice"), "receiver": receiver_url, "method": "ilp"})),
        )
        .await
        .unwrap();
    assert_eq!(quote.status, 201, "{}", quote.body);
    let debit = quote.body["debitAmount"]["value"]
        .as_str()
        .unwrap()
        .parse::<i64>()
        .unwrap();
    let alice_before = ase.balance("alice").await;
    let bob_before = ase.balance("bob").await;

    let dir: Arc<tempfile::TempDir> = ase.dir.clone();
    let config = format!("{engine}{}", quota(dir.path(), 12));
    let ase = restart(ase, &config).await;
    let r = demo
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": ase.url("/alice"), "quoteId": quote.body["id"]})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let (_, initial) = ase.admin(Method::GET, &format!("/outgoing-payments/{id}"), None).await;
    fill(&ase, &demo, &inc).await;

    // the engine hits the full store: the payment stops moving but is not failed
    let view = || async {
        let (s, v) = ase.admin(Method::GET, &format!("/outgoing-payments/{id}"), None).await;
        assert_eq!(s, 200, "{v}");
        v
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let stalled = loop {
        let a = view().await;
        assert_ne!(
            a["state"], "completed",
            "the payment finished before the store filled: {a}"
        );
        assert_eq!(a["state"], "sending", "{a}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let b = view().await;
        assert_eq!(b["state"], "sending", "a full store does not fail a payment: {b}");
        if a["sentAmount"] == b["sentAmount"] {
            break b;
        }
        assert!(Instant::now() < deadline, "the payment never paused: {b}");
    };
    assert_eq!(stalled["failed"], false, "{stalled}");
    assert!(ase.state.engine.storage_full(), "the engine paused for the full store");
    assert_eq!(
        stalled["attempts"], initial["attempts"],
        "no attempt is counted: {stalled}"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let later = view().await;
    assert_eq!(later["state"], "sending", "{later}");
    assert_eq!(later["attempts"], initial["attempts"], "{later}");
    assert_eq!(later["sentAmount"], stalled["sentAmount"], "{later}");
    let sent = stalled["sentAmount"]["value"].as_str().unwrap().parse::<i64>().unwrap();
    assert!(sent < debit, "{stalled}");
    // reads keep working meanwhile, and agree with what was sent
    let r = demo.send(Method::GET, &receiver_url, Some(&inc), None).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["completed"], false, "{}", r.body);
    let r = demo
        .send(
            Method::GET,
            &format!("{}/outgoing-payments/{id}", ase.base),
            Some(&out),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["failed"], false, "{}", r.body);
    let audit = ase.state.ledger.audit().await.unwrap();
    assert!(audit.is_empty(), "nothing half-written: {audit:?}");

    // room returns while the server runs (as when disk space is freed): the pages of the test's filler
    // payments go back to SQLite's free list, and the engine resumes on its own and finishes, exactly once
    let freed = db(dir.path())
        .execute("DELETE FROM incoming_payments WHERE metadata LIKE '%xxxxxxxxxx%'", [])
        .unwrap();
    assert!(freed > 0);
    let deadline = Instant::now() + Duration::from_secs(45);
    let done = loop {
        let (s, v) = ase.admin(Method::GET, &format!("/outgoing-payments/{id}"), None).await;
        assert_eq!(s, 200, "{v}");
        if v["state"] != "sending" {
            break v;
        }
        assert!(Instant::now() < deadline, "the payment did not resume: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"]["value"], debit.to_string(), "{done}");
    let r = demo.send(Method::GET, &receiver_url, Some(&inc), None).await.unwrap();
    assert_eq!(r.body["receivedAmount"]["value"], "4000", "{}", r.body);
    assert_eq!(r.body["completed"], true, "{}", r.body);
    assert_eq!(ase.balance("alice").await, alice_before - debit);
    assert_eq!(ase.balance("bob").await, bob_before + 4000);
    let (_, balances) = ase.admin(Method::GET, "/balances", None).await;
    let mut sums = std::collections::HashMap::<String, i64>::new();
    for b in balances.as_array().unwrap() {
        *sums.entry(b["assetCode"].as_str().unwrap().to_owned()).or_default() += b["balance"].as_i64().unwrap();
        assert_eq!(b["pendingDebits"], 0, "{b}");
    }
    assert!(sums.values().all(|v| *v == 0), "{sums:?}");
    let audit = ase.state.ledger.audit().await.unwrap();
    assert!(audit.is_empty(), "{audit:?}");
}

/// `[ilp]` of one of two desks peered both ways on loopback.
fn desk(me: &str, other: &str, other_port: u16, incoming: &str, outgoing: &str) -> String {
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
asset_code = "USD"
asset_scale = 2
"#
    )
}

fn peer_balance(ase_balances: &Value) -> i64 {
    ase_balances
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["kind"] == "peer")
        .map(|b| b["balance"].as_i64().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_packet_fulfilled_while_full_is_recorded_once_there_is_room() {
    if sqlite_only() {
        return;
    }
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    };
    let (a_addr, b_addr) = (free(), free());
    let engine = "[engine]\npreset = \"custom\"\npackets_per_payment = 40\npacket_interval_ms = 150\n\
                  max_attempts = 2\nretry_base_ms = 100\n";
    let a_config = format!(
        "{}{engine}",
        desk("desk-a", "desk-b", b_addr.port(), "b-to-a", "a-to-b")
    );
    let mk = |cfg: &str| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("config.toml"), cfg).unwrap();
        Arc::new(d)
    };
    let a = TestAse::spawn_in(mk(&a_config), Some(a_addr)).await;
    let b = TestAse::spawn_in(
        mk(&desk("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a")),
        Some(b_addr),
    )
    .await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;
    let b_inc = token(
        &b,
        &b_client,
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let receiver = try_incoming(&b, &b_client, &b_inc, Some(usd("4000")), 0).await;
    assert_eq!(receiver.status, 201, "{}", receiver.body);
    let receiver = receiver.body["id"].as_str().unwrap().to_owned();
    let quo = token(&a, &a_client, json!([{"type": "quote", "actions": ["create"]}])).await;
    let q = a_client
        .send(
            Method::POST,
            &a.url("/quotes"),
            Some(&quo),
            Some(&json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp"})),
        )
        .await
        .unwrap();
    assert_eq!(q.status, 201, "{}", q.body);
    let grant = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": a.url("/alice")}]},
        "client": a.url("/demo-client"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n1"}},
    });
    let g = a_client
        .send(Method::POST, &a.url("/auth"), None, Some(&grant))
        .await
        .unwrap();
    assert_eq!(g.status, 200, "{}", g.body);
    let (_, pending) = a.admin(Method::GET, "/grants?state=pending", None).await;
    let gid = pending[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        a.admin(Method::POST, &format!("/grants/{gid}/approve"), Some("{}"))
            .await
            .0,
        200
    );
    let out = finish_grant(&a_client, &g.body).await;
    let a_inc = token(
        &a,
        &a_client,
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;

    // A restarts with a quota, pays, and fills up while paying
    let a_dir: Arc<tempfile::TempDir> = a.dir.clone();
    let a = restart(a, &format!("{a_config}{}", quota(a_dir.path(), 12))).await;
    let r = a_client
        .send(
            Method::POST,
            &a.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": a.url("/alice"), "quoteId": q.body["id"]})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    fill(&a, &a_client, &a_inc).await;
    let view = || async {
        let (s, v) = a.admin(Method::GET, &format!("/outgoing-payments/{id}"), None).await;
        assert_eq!(s, 200, "{v}");
        v
    };
    let received = || async {
        let v: Value = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
        v["receivedAmount"]["value"].as_str().unwrap().parse::<i64>().unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let stalled = loop {
        let x = view().await;
        assert_eq!(x["state"], "sending", "{x}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let y = view().await;
        assert_eq!(y["state"], "sending", "a full store does not fail a payment: {y}");
        if x["sentAmount"] == y["sentAmount"] {
            break y;
        }
        assert!(Instant::now() < deadline, "the payment never paused: {y}");
    };
    assert!(a.state.engine.storage_full());
    assert_eq!(stalled["attempts"], 0, "{stalled}");
    // the packet fulfilled at B whose record A's store refused is held, not forgotten: B is one packet ahead
    let sent = stalled["deliveredAmount"]["value"]
        .as_str()
        .unwrap()
        .parse::<i64>()
        .unwrap();
    let at_b = received().await;
    assert!(at_b > sent && at_b < 4000, "B has {at_b}, A recorded {sent}");

    // room again: A records the held packet first, then finishes; the books agree on both sides
    let freed = db(a_dir.path())
        .execute("DELETE FROM incoming_payments WHERE metadata LIKE '%xxxxxxxxxx%'", [])
        .unwrap();
    assert!(freed > 0);
    let deadline = Instant::now() + Duration::from_secs(45);
    let done = loop {
        let v = view().await;
        if v["state"] != "sending" {
            break v;
        }
        assert!(Instant::now() < deadline, "the payment did not resume: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["deliveredAmount"]["value"], "4000", "{done}");
    assert_eq!(received().await, 4000);
    let (_, a_bal) = a.admin(Method::GET, "/balances", None).await;
    let (_, b_bal) = b.admin(Method::GET, "/balances", None).await;
    assert_eq!(
        peer_balance(&a_bal),
        -peer_balance(&b_bal),
        "what A booked to the link is what B received over it"
    );
    for (ase, balances) in [(&a, &a_bal), (&b, &b_bal)] {
        let mut sums = std::collections::HashMap::<String, i64>::new();
        for x in balances.as_array().unwrap() {
            *sums.entry(x["assetCode"].as_str().unwrap().to_owned()).or_default() += x["balance"].as_i64().unwrap();
            assert_eq!(x["pendingDebits"], 0, "{x}");
        }
        assert!(sums.values().all(|v| *v == 0), "{sums:?}");
        assert!(ase.state.ledger.audit().await.unwrap().is_empty());
    }
}
