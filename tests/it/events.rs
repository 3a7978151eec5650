//! Durable events: the outbox is written in each change's transaction and read back over `GET /admin/events`
//! (Server-Sent Events) from any sequence number, across restarts; webhook deliveries are rows that survive
//! `kill -9`, reach the receiver at least once, and die after their retry budget until the operator
//! re-drives them.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};

use crate::{
    common::{Proc, TestAse, free_port},
    hooks::{Receiver, eventually},
};

/// One Server-Sent Events message.
#[derive(Debug, Clone, Default)]
pub(crate) struct Message {
    pub(crate) id: Option<String>,
    pub(crate) event: String,
    pub(crate) data: String,
}

/// An open `GET /admin/events` stream.
pub(crate) struct Stream {
    res: reqwest::Response,
    buf: String,
}

impl Stream {
    pub(crate) async fn open(base: &str, token: &str, query: &str, last_id: Option<i64>) -> Self {
        let mut req = reqwest::Client::new()
            .get(format!("{base}/admin/events{query}"))
            .bearer_auth(token);
        if let Some(id) = last_id {
            req = req.header("last-event-id", id.to_string());
        }
        let res = req.send().await.expect("events request");
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        Self {
            res,
            buf: String::new(),
        }
    }

    /// The next message (keep-alive comments skipped), or none within `limit`.
    pub(crate) async fn next(&mut self, limit: Duration) -> Option<Message> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut m = Message::default();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        m.id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        m.event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        m.data.push_str(v.trim_start());
                    }
                }
                if m.event.is_empty() && m.data.is_empty() {
                    continue;
                }
                return Some(m);
            }
            let chunk = tokio::time::timeout_at(deadline, self.res.chunk()).await.ok()?;
            let chunk = chunk.expect("stream chunk")?;
            self.buf.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }

    /// Messages until `n` matching `want` arrived (bounded in time).
    pub(crate) async fn until(&mut self, n: usize, want: impl Fn(&Message) -> bool) -> Vec<Message> {
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while got.len() < n {
            assert!(Instant::now() < deadline, "only {got:?} of {n} arrived");
            if let Some(m) = self.next(Duration::from_secs(10)).await
                && want(&m)
            {
                got.push(m);
            }
        }
        got
    }
}

fn created(name: &str) -> impl Fn(&Message) -> bool + '_ {
    move |m| m.event == "walletCreated" && serde_json::from_str::<Value>(&m.data).unwrap()["event"]["name"] == name
}

fn seq_of(m: &Message) -> i64 {
    let v: Value = serde_json::from_str(&m.data).unwrap();
    assert_eq!(m.id.as_deref(), Some(v["seq"].to_string().as_str()), "id: is the seq");
    v["seq"].as_i64().unwrap()
}

async fn create_wallet(ase: &TestAse, name: &str) -> u16 {
    let body = json!({ "name": name, "assetCode": "USD", "assetScale": 2 }).to_string();
    ase.admin(Method::POST, "/wallets", Some(&body)).await.0
}

#[tokio::test]
async fn the_event_stream_resumes_from_a_sequence_number_across_a_restart() {
    let ase = TestAse::spawn().await;
    let mut live = Stream::open(&ase.base, &ase.admin_token, "", None).await;
    for name in ["ev-a", "ev-b", "ev-c"] {
        assert_eq!(create_wallet(&ase, name).await, 201);
    }
    // a refused change (the name is taken) records nothing
    assert_eq!(create_wallet(&ase, "ev-b").await, 409);
    let got = live.until(3, |m| m.event == "walletCreated").await;
    let seqs: Vec<i64> = got.iter().map(seq_of).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "in order, one each: {seqs:?}"
    );
    let b = seqs[1];

    // resume after b's event, by header and by query: c's event comes first, nothing of b's twice
    let mut resumed = Stream::open(&ase.base, &ase.admin_token, "", Some(b)).await;
    let first = resumed.next(Duration::from_secs(5)).await.expect("a replayed event");
    assert_eq!(seq_of(&first), b + 1);
    assert!(created("ev-c")(&first), "{first:?}");
    let mut by_query = Stream::open(&ase.base, &ase.admin_token, &format!("?after={b}"), None).await;
    assert_eq!(seq_of(&by_query.next(Duration::from_secs(5)).await.unwrap()), b + 1);
    // a live event follows the replay
    assert_eq!(create_wallet(&ase, "ev-d").await, 201);
    let d = resumed.until(1, created("ev-d")).await;
    assert_eq!(seq_of(&d[0]), b + 2, "the failed create used no sequence number");

    // the request log is live-only and only for those who ask for it
    let mut with_log = Stream::open(&ase.base, &ase.admin_token, "?live=true", None).await;
    ase.get("/alice").await;
    let log = with_log.until(1, |m| m.event == "httpRequest").await;
    let v: Value = serde_json::from_str(&log[0].data).unwrap();
    assert!(log[0].id.is_none() && v["seq"].is_null(), "{v}");
    assert_eq!(v["event"]["path"], "/alice");
    // consoles follow the request log coalesced: what was served, never an event per request (even while a
    // per-request reader makes the server publish them)
    let mut summary = Stream::open(&ase.base, &ase.admin_token, "?live=summary", None).await;
    ase.get("/bob").await;
    let told = summary
        .until(1, |m| m.event == "requestsServed" || m.event == "httpRequest")
        .await;
    assert_eq!(told[0].event, "requestsServed", "{told:?}");
    let v: Value = serde_json::from_str(&told[0].data).unwrap();
    assert!(v["event"]["total"].as_u64().unwrap() >= 1, "{v}");

    // the server stops: streams end, and the outbox outlives the process
    drop((live, by_query, with_log, summary));
    let (dir, addr) = ase.stop().await;
    assert!(
        resumed.next(Duration::from_secs(5)).await.is_none(),
        "the stream ended with the server"
    );
    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    let mut after_restart = Stream::open(&ase.base, &ase.admin_token, "", Some(b)).await;
    let replayed = after_restart.until(2, |m| m.event == "walletCreated").await;
    assert!(created("ev-c")(&replayed[0]) && created("ev-d")(&replayed[1]));

    // the admin token guards the stream like every admin path
    let res = reqwest::get(format!("{}/admin/events", ase.base)).await.unwrap();
    assert_eq!(res.status(), 401);
    let bad = reqwest::Client::new()
        .get(format!("{}/admin/events", ase.base))
        .bearer_auth(&ase.admin_token)
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

async fn deliveries(p: &Proc, state: &str) -> Vec<Value> {
    p.admin(&format!("/webhooks?state={state}&first=1000"))
        .await
        .as_array()
        .unwrap()
        .clone()
}

async fn post_wallet(p: &Proc, name: &str) {
    let r = reqwest::Client::new()
        .post(format!("{}/admin/wallets", p.base))
        .bearer_auth(&p.admin_token)
        .json(&json!({ "name": name, "assetCode": "USD", "assetScale": 2 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_survive_kill_9_and_die_after_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    let hook: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[webhooks]\nurl = \"http://{hook}/hook\"\nmax_attempts = 4\nretry_base_ms = 1000\nretry_max_ms = 1500\ntimeout_ms = 1000\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let mut server = Proc::start(dir.path(), port).await;

    // the receiver is down: every event waits as a pending delivery with failed attempts
    post_wallet(&server, "hook-0").await;
    eventually("the first delivery is queued", || async {
        !deliveries(&server, "pending").await.is_empty()
    })
    .await;
    for n in 1..6 {
        post_wallet(&server, &format!("hook-{n}")).await;
    }
    eventually("six deliveries failed at least once", || async {
        let d = deliveries(&server, "pending").await;
        d.len() == 6
            && d.iter()
                .all(|d| d["attempts"].as_i64() >= Some(1) && d["lastError"].is_string())
    })
    .await;
    let ids: Vec<String> = deliveries(&server, "pending")
        .await
        .iter()
        .map(|d| d["eventId"].as_str().unwrap().to_owned())
        .collect();

    // kill -9 mid-retry, bring the receiver up, restart: every event arrives, none lost
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let receiver = Receiver::start(hook).await;
    let server = Proc::start(dir.path(), port).await;
    eventually("every queued event reached the receiver", || async {
        ids.iter().all(|id| receiver.seen(id))
    })
    .await;
    eventually("all six are delivered", || async {
        deliveries(&server, "delivered").await.len() == 6
    })
    .await;
    assert!(deliveries(&server, "pending").await.is_empty());

    // the receiver fails: a new event dies after max_attempts, then the operator re-drives it
    receiver.answer(503);
    post_wallet(&server, "hook-dead").await;
    eventually("the delivery is dead", || async {
        deliveries(&server, "dead").await.len() == 1
    })
    .await;
    let dead = deliveries(&server, "dead").await.remove(0);
    assert_eq!(
        (dead["attempts"].as_i64(), dead["lastStatus"].as_i64()),
        (Some(4), Some(503)),
        "{dead}"
    );
    // the metrics of this process: six delivered at the first try, the dead one's three retries and its end,
    // and the stored states
    let metrics = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        r#"opdesk_webhook_deliveries_total{result="delivered"} 6"#,
        r#"opdesk_webhook_deliveries_total{result="retrying"} 3"#,
        r#"opdesk_webhook_deliveries_total{result="dead"} 1"#,
        r#"opdesk_webhook_delivery_states{state="delivered"} 6"#,
        r#"opdesk_webhook_delivery_states{state="dead"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    let seq = dead["eventSeq"].as_i64().unwrap();
    receiver.answer(204);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args([
            "webhooks",
            "retry",
            &seq.to_string(),
            "--data-dir",
            dir.path().to_str().unwrap(),
        ])
        .env("OPDESK_CONFIG", dir.path().join("config.toml"))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("via the server at"));
    let id = dead["eventId"].as_str().unwrap().to_owned();
    eventually("the re-driven event arrives", || async { receiver.seen(&id) }).await;
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args([
            "webhooks",
            "list",
            "--state",
            "dead",
            "--data-dir",
            dir.path().to_str().unwrap(),
        ])
        .env("OPDESK_CONFIG", dir.path().join("config.toml"))
        .output()
        .unwrap();
    assert!(list.status.success());
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains("hook"),
        "no dead deliveries left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_falls_behind_gets_resync_and_misses_no_durable_event() {
    use opdesk::{
        control::events::{Item, stream},
        events::DomainEvent,
    };
    let ase = TestAse::spawn().await;
    let mut rx = stream(ase.state.services.clone(), None, opdesk::control::events::Live::Summary).await;
    // the reader reads nothing: its buffer fills, then a durable event, then a flood that pushes that event
    // out of the bus's ring — the server never waits for the reader
    let flood = |from: u32, to: u32| {
        for n in from..to {
            ase.state.bus.publish(DomainEvent::OutgoingPaymentProgress {
                id: format!("flood-{n}"),
                sent: i64::from(n),
            });
        }
    };
    let started = Instant::now();
    flood(0, 400);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(create_wallet(&ase, "after-flood").await, 201);
    flood(400, 20_400);
    assert!(started.elapsed() < Duration::from_secs(3), "publishing never blocks");
    // now read: a resync comes, and the durable event is there, replayed from the outbox
    let (mut resync, mut wallet) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(resync && wallet) {
        assert!(Instant::now() < deadline, "resync {resync}, wallet event {wallet}");
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(Item::Resync(_))) => resync = true,
            Ok(Some(Item::Event(r))) => {
                if matches!(&r.event, DomainEvent::WalletCreated { name, .. } if name == "after-flood") {
                    assert!(r.seq.is_some());
                    wallet = true;
                }
            }
            Ok(None) => panic!("the stream ended"),
            Err(_) => panic!("nothing more arrived: resync {resync}, wallet event {wallet}"),
        }
    }
}

/// Money the operator moves is an event: deposits and withdrawals reach the webhook receiver with their amount,
/// transfer id and the balance after, though the receiver was down and the server was killed with `kill -9`;
/// a repeated transfer id moves nothing and says nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deposits_and_withdrawals_are_webhook_events_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let hook: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[webhooks]\nurl = \"http://{hook}/hook\"\nmax_attempts = 100000\nretry_base_ms = 200\nretry_max_ms = 400\ntimeout_ms = 1000\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let mut server = Proc::start(dir.path(), port).await;
    let before = {
        let b = server.admin("/balances").await;
        crate::common::balance_of(&b, "alice")
    };
    let admin = |path: &str, body: Value| {
        let (url, token) = (format!("{}/admin{path}", server.base), server.admin_token.clone());
        async move {
            let r = reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{}", r.status());
        }
    };
    for n in 1..=5 {
        admin(
            "/wallets/alice/deposit",
            json!({"value": "100", "transferId": format!("dep-{n}")}),
        )
        .await;
    }
    admin("/wallets/alice/withdraw", json!({"value": "50", "transferId": "wd-1"})).await;
    // the same deposit again: idempotent, no second event
    admin("/wallets/alice/deposit", json!({"value": "100", "transferId": "dep-1"})).await;
    eventually("six money events wait for the receiver", || async {
        deliveries(&server, "pending")
            .await
            .iter()
            .filter(|d| d["type"] == "walletFundsMoved")
            .count()
            == 6
    })
    .await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let receiver = Receiver::start(hook).await;
    let _server = Proc::start(dir.path(), port).await;
    eventually("the six reached the receiver", || async {
        receiver.of("walletFundsMoved").len() >= 6
    })
    .await;
    // at least once: a delivery whose answer came after the attempt's timeout is sent again, and a receiver
    // de-duplicates by the event (the receiver keeps each `seq` once); what counts is each event's content
    let moved = receiver.of("walletFundsMoved");
    let facts: Vec<(String, String, i64, i64)> = moved
        .iter()
        .map(|b| {
            let e = &b["event"];
            (
                e["movement"].as_str().unwrap().to_owned(),
                e["transferId"].as_str().unwrap().to_owned(),
                e["amount"].as_i64().unwrap(),
                e["balance"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut expected: Vec<(String, String, i64, i64)> = (1..=5)
        .map(|n| ("deposit".to_owned(), format!("dep-{n}"), 100, before + 100 * n))
        .collect();
    expected.push(("withdrawal".into(), "wd-1".into(), 50, before + 450));
    assert_eq!(facts, expected, "{moved:?}");
    assert!(
        moved
            .iter()
            .all(|b| b["event"]["wallet"] == "alice" && b["event"]["assetCode"] == "USD")
    );
}
