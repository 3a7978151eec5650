//! The STREAM sender keeps several packets in flight: A pays bob@B through an ILP-over-HTTP proxy in front of
//! B's `/ilp` that counts the requests in flight at once (and holds B's replies a while, so they overlap).
//! Checked: a payment of many small packets completes with several in flight at once and exact amounts on
//! both ledgers; and A killed with SIGKILL while B has fulfilled packets whose replies A never saw resumes
//! on restart without sending that money twice (B received exactly what A recorded as sent), also when that
//! lost window completed B's incoming payment (B answers with its total and its close), and never records
//! more than the lost window sent, even when the receiver's total counts money from someone else; and a
//! receiver whose totals do not match the books gets one packet at a time; and a payment is not cancelled
//! while a packet of it is on its way.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value as Json, json};

use crate::{
    common::{Proc, TestAse, auto_approved_outgoing_token, balance_of},
    ilp_sender::{
        assert_balanced, bob_receiver, config, dir, free, pay_quote, peer_balance, quote, quote_receiver, start_paying,
    },
};

/// What the proxy saw.
#[derive(Default)]
struct Seen {
    now: AtomicUsize,
    max: AtomicUsize,
    /// Fulfills B made whose reply the proxy is still holding back from A.
    held_fulfills: AtomicUsize,
    /// The amounts of the Prepares in the proxy now (forwarded, their reply not yet given back to A).
    amount_in_flight: AtomicU64,
    /// How long each Prepare waits in the proxy before it is forwarded to B (milliseconds; 0: at once).
    forward_delay_ms: AtomicU64,
    /// Prepares waiting in the proxy, not yet forwarded to B.
    held_prepares: AtomicUsize,
}

/// A proxy on a free loopback port forwarding every request to `upstream` (after `Seen::forward_delay_ms`),
/// holding each reply back for `hold` before answering.
async fn proxy(upstream: String, hold: Duration) -> (u16, Arc<Seen>) {
    opdesk::egress::install_default_crypto_provider();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let http = reqwest::Client::new();
    let state = (upstream, hold, seen.clone(), http);
    let app = axum::Router::new()
        .fallback(
            |axum::extract::State((upstream, hold, seen, http)): axum::extract::State<(
                String,
                Duration,
                Arc<Seen>,
                reqwest::Client,
            )>,
             headers: axum::http::HeaderMap,
             body: axum::body::Bytes| async move {
                // (in a task of its own: a Prepare on its way goes on to B even when A's request is gone, as
                // through a connector)
                tokio::spawn(async move {
                    let now = seen.now.fetch_add(1, Ordering::SeqCst) + 1;
                    seen.max.fetch_max(now, Ordering::SeqCst);
                    let amount = match opdesk::ilp::Packet::decode(&body) {
                        Ok(opdesk::ilp::Packet::Prepare(p)) => p.amount,
                        _ => 0,
                    };
                    seen.amount_in_flight.fetch_add(amount, Ordering::SeqCst);
                    let delay = seen.forward_delay_ms.load(Ordering::SeqCst);
                    if delay > 0 {
                        seen.held_prepares.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(delay)).await;
                        seen.held_prepares.fetch_sub(1, Ordering::SeqCst);
                    }
                    let mut req = http.post(&upstream).body(body.to_vec());
                    for name in ["authorization", "content-type", "accept"] {
                        if let Some(v) = headers.get(name) {
                            req = req.header(name, v.as_bytes());
                        }
                    }
                    let reply = req.send().await.unwrap().bytes().await.unwrap().to_vec();
                    // an ILP Fulfill starts with type 13
                    let fulfill = reply.first() == Some(&13);
                    if fulfill {
                        seen.held_fulfills.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(hold).await;
                    if fulfill {
                        seen.held_fulfills.fetch_sub(1, Ordering::SeqCst);
                    }
                    seen.amount_in_flight.fetch_sub(amount, Ordering::SeqCst);
                    seen.now.fetch_sub(1, Ordering::SeqCst);
                    ([(axum::http::header::CONTENT_TYPE, "application/octet-stream")], reply)
                })
                .await
                .unwrap()
            },
        )
        .with_state(state);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, seen)
}

/// A and B in-process, A paying B through the proxy (holding B's replies for `hold`), packets of at most
/// 1.00.
async fn proxied_pair(hold: Duration) -> (TestAse, TestAse, Arc<Seen>) {
    let (a_addr, b_addr) = (free(), free());
    let (proxy_port, seen) = proxy(format!("http://{b_addr}/ilp"), hold).await;
    let a = TestAse::spawn_in(
        dir(&config("desk-a", "desk-b", proxy_port, "b-to-a", "a-to-b", 100)),
        Some(a_addr),
    )
    .await;
    let b = TestAse::spawn_in(
        dir(&config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000)),
        Some(b_addr),
    )
    .await;
    (a, b, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_small_packets_go_several_at_once_with_exact_amounts() {
    let (a, b, seen) = proxied_pair(Duration::from_millis(15)).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    // 60.00 in packets of at most 1.00
    let receiver = bob_receiver(&b, &b_client, Some(6000)).await;
    let q = quote_receiver(&a, &a_client, &receiver).await;
    let probes_max = seen.max.swap(0, Ordering::SeqCst);
    assert_eq!(probes_max, 1, "the quote's probes go one at a time");

    let (alice_before, bob_before) = (a.balance("alice").await, b.balance("bob").await);
    let done = pay_quote(&a, &a_client, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"]["value"], "6000", "{done}");
    assert_eq!(done["receiveAmount"]["value"], "6000", "{done}");

    let in_flight = seen.max.load(Ordering::SeqCst);
    assert!(
        (4..=16).contains(&in_flight),
        "several packets in flight at once, at most 16: {in_flight}"
    );
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "6000", "{public}");
    assert_eq!(a.balance("alice").await, alice_before - 6000);
    assert_eq!(b.balance("bob").await, bob_before + 6000);
    assert_eq!(peer_balance(&assert_balanced(&a).await), 6000);
    assert_eq!(peer_balance(&assert_balanced(&b).await), -6000);
}

/// A payment whose first packet is on its way (held in the proxy before it reaches B) is not cancelled under
/// it: the fulfillment that follows must be booked, and a cancelled payment could not book it (B would have
/// received money A never took from alice). The cancel is refused while the packet's claim lives; the payment
/// then completes with the same amount on both ledgers, and is past cancelling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_is_not_cancelled_while_a_packet_of_it_is_on_its_way() {
    let (a, b, seen) = proxied_pair(Duration::from_millis(5)).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    let receiver = bob_receiver(&b, &b_client, Some(50)).await;
    let q = quote_receiver(&a, &a_client, &receiver).await;
    let alice_before = a.balance("alice").await;

    // the payment's packets wait 1.5 s in the proxy before they go on to B
    seen.forward_delay_ms.store(1500, Ordering::SeqCst);
    let url = start_paying(&a, &a_client, &q).await;
    let id = url.rsplit('/').next().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    // (a packet with money: a connection's first packets may carry none)
    while seen.amount_in_flight.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the payment's first packet never reached the proxy"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let cancel = format!("/outgoing-payments/{id}/cancel");
    let (status, refused) = a.admin(Method::POST, &cancel, None).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "in_flight", "{refused}");
    seen.forward_delay_ms.store(0, Ordering::SeqCst);

    let done = a.wait_outgoing(&url).await;
    assert_eq!(done["state"], "completed", "{done}");
    let sent: i64 = done["sentAmount"]["value"].as_str().unwrap().parse().unwrap();
    assert!(sent > 0, "{done}");
    assert_eq!(a.balance("alice").await, alice_before - sent);
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "50", "{public}");
    assert_eq!(peer_balance(&assert_balanced(&a).await), sent);
    assert_eq!(peer_balance(&assert_balanced(&b).await), -sent);
    let (status, late) = a.admin(Method::POST, &cancel, None).await;
    assert_eq!(
        (status, &late["error"]["code"]),
        (409, &json!("invalid_state")),
        "{late}"
    );
}

/// A receiver whose total for the connection is not what the books say was delivered (here it also counts a
/// stranger's money paid over the same credentials first) gets one packet at a time, as a receiver that
/// reports no total does: a crash could not be reconciled from its word. The payment still completes exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_whose_totals_do_not_match_gets_one_packet_at_a_time() {
    let (a, b, seen) = proxied_pair(Duration::from_millis(5)).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    let receiver = bob_receiver(&b, &b_client, None).await;
    // A quotes a fixed send of 15.00 (packets of at most 1.00)
    let body = json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp",
        "debitAmount": {"value": "1500", "assetCode": "USD", "assetScale": 2}});
    let q = quote(&a, &a_client, &body).await;
    // a stranger's 5.00 on the connection A's quote opened (its address and secret)
    let (address, secret) = plan_credentials(a.dir.path());
    pay_on_a_connection(&b, &address, &secret, 500).await;

    let done = pay_quote(&a, &a_client, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    // (fixed-send: the whole 15.00 went out, and on this 1:1 path all of it arrived, more than the 14.85
    // quoted at the minimum rate 0.99)
    assert_eq!(done["deliveredAmount"]["value"], "1500", "{done}");
    assert_eq!(done["sentAmount"]["value"], "1500", "{done}");

    assert_eq!(seen.max.load(Ordering::SeqCst), 1, "one packet in flight at a time");
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"]["value"], "2000", "{public}");
    assert_eq!(peer_balance(&assert_balanced(&a).await), 1500);
}

/// A as a child `opdesk serve` (so it can be killed) paying through the proxy; B in-process.
struct Killable {
    a: Proc,
    a_dir: tempfile::TempDir,
    a_port: u16,
    b: TestAse,
    seen: Arc<Seen>,
    alice_before: i64,
}

impl Killable {
    async fn start(hold: Duration) -> Self {
        Self::start_with(hold, "").await
    }

    /// `ilp`: more settings of A's `[ilp]` table.
    async fn start_with(hold: Duration, ilp: &str) -> Self {
        let (a_port, b_addr) = (free().port(), free());
        let (proxy_port, seen) = proxy(format!("http://{b_addr}/ilp"), hold).await;
        let a_dir = tempfile::tempdir().unwrap();
        std::fs::write(
            a_dir.path().join("config.toml"),
            format!(
                "[gnap]\nauto_approve = true\n{}",
                config("desk-a", "desk-b", proxy_port, "b-to-a", "a-to-b", 100).replacen(
                    "[ilp]\n",
                    &format!("[ilp]\n{ilp}\n"),
                    1
                )
            ),
        )
        .unwrap();
        let b = TestAse::spawn_in(
            dir(&config("desk-b", "desk-a", a_port, "a-to-b", "b-to-a", 100_000)),
            Some(b_addr),
        )
        .await;
        let a = Proc::start(a_dir.path(), a_port).await;
        let alice_before = balance_of(&a.admin("/balances").await, "alice");
        Self {
            a,
            a_dir,
            a_port,
            b,
            seen,
            alice_before,
        }
    }

    /// A pays a new incoming payment of bob@B (expecting `amount`, or open-ended) a fixed send of 50.00
    /// (packets of at most 1.00): the receiver's URL and the payment's id.
    async fn pay_bob(&self, amount: Option<u64>) -> (String, String) {
        let receiver = bob_receiver(&self.b, &self.b.demo_client().await, amount).await;
        let a_client = self.a.demo_client(self.a_dir.path()).await;
        let out = auto_approved_outgoing_token(&a_client, &self.a.base, "alice").await;
        let body = json!({"walletAddress": format!("{}/alice", self.a.base), "incomingPayment": receiver, "debitAmount": {"value": "5000", "assetCode": "USD", "assetScale": 2}});
        let r = a_client
            .send(
                Method::POST,
                &format!("{}/outgoing-payments", self.a.base),
                Some(&out),
                Some(&body),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        let id = r.body["id"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
        (receiver, id)
    }

    async fn received(&self, receiver: &str) -> i64 {
        let public: Json = self.b.http.get(receiver).send().await.unwrap().json().await.unwrap();
        public["receivedAmount"]["value"].as_str().unwrap().parse().unwrap()
    }

    /// Waits until `ready` (B's received amount, what the proxy saw), then kills A with SIGKILL.
    async fn kill_when(&mut self, receiver: &str, ready: impl Fn(i64, &Seen) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready(self.received(receiver).await, &self.seen) {
            assert!(Instant::now() < deadline, "no packets in flight to kill A over");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        self.a.child.kill().unwrap();
        self.a.child.wait().unwrap();
    }

    /// Restarts A and waits until the payment `id` is no longer sending.
    async fn restart_until_done(&mut self, id: &str) -> Json {
        self.a = Proc::start(self.a_dir.path(), self.a_port).await;
        // on PostgreSQL the killed node's lease on the payment (60 s from its last window) runs out first
        let wait = if crate::common::postgres().is_some() { 150 } else { 60 };
        let deadline = Instant::now() + Duration::from_secs(wait);
        loop {
            let p = self.a.admin(&format!("/outgoing-payments/{id}")).await;
            if p["state"] != "sending" {
                return p;
            }
            assert!(
                Instant::now() < deadline,
                "the payment did not finish after the restart: {p}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The fixed send `done` (50.00 at the minimum rate 0.99) paid B exactly what A recorded as sent, once,
    /// and both books say so.
    async fn assert_paid_once(&self, receiver: &str, done: &Json) {
        assert_eq!(done["state"], "completed", "{done}");
        let sent: i64 = done["sentAmount"]["value"].as_str().unwrap().parse().unwrap();
        assert!((4950..=5000).contains(&sent), "{done}");
        assert_eq!(
            self.received(receiver).await,
            sent,
            "B received exactly what A recorded as sent, once"
        );
        self.assert_books(sent, sent).await;
    }

    /// A's books: alice paid exactly `sent`, all of it to the peer account; every asset sums to zero and
    /// no payment account holds money; B's books balance with the peer owed `b_received`.
    async fn assert_books(&self, sent: i64, b_received: i64) {
        let after = self.a.admin("/balances").await;
        assert_eq!(self.alice_before - balance_of(&after, "alice"), sent);
        assert_eq!(peer_balance(&after), sent);
        let mut sums = std::collections::HashMap::<String, i64>::new();
        for b in after.as_array().unwrap() {
            *sums.entry(b["assetCode"].as_str().unwrap().to_owned()).or_default() += b["balance"].as_i64().unwrap();
            if b["kind"] == "payment" {
                assert_eq!(b["balance"], 0, "{b}");
            }
        }
        assert!(sums.values().all(|v| *v == 0), "{sums:?}");
        assert_eq!(peer_balance(&assert_balanced(&self.b).await), -b_received);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_killed_with_packets_in_flight_resumes_without_paying_twice() {
    let mut k = Killable::start(Duration::from_millis(300)).await;
    // open-ended: B would take anything sent twice
    let (receiver, id) = k.pay_bob(None).await;

    // kill A while B has fulfilled packets whose replies A has not seen yet (after a first window, so the
    // payment has committed progress too)
    k.kill_when(&receiver, |received, seen| {
        received > 400 && seen.held_fulfills.load(Ordering::SeqCst) >= 2
    })
    .await;
    let held = k.seen.held_fulfills.load(Ordering::SeqCst);
    assert!(held >= 2, "fulfilled packets A never heard of: {held}");

    // restart: A learns from B's total what arrived unrecorded and sends only the rest
    let done = k.restart_until_done(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    // fixed send: done once the receive amount (5000 at the minimum rate 0.99) arrived
    assert_eq!(done["receiveAmount"]["value"], "4950", "{done}");
    assert_eq!(done["deliveredAmount"]["value"], done["sentAmount"]["value"], "{done}");
    k.assert_paid_once(&receiver, &done).await;
}

/// A killed with a window on its way to B: the Prepares wait in the proxy and reach B only after A has
/// restarted. A asks B for its total only once those packets have expired (they may still be fulfilled until
/// then), so it records them from the total instead of sending that money again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_restarted_before_its_lost_window_arrived_waits_for_it_to_expire() {
    let mut k = Killable::start_with(Duration::ZERO, "packet_expiry_ms = 5000").await;
    let (receiver, id) = k.pay_bob(None).await;
    // once windows are under way, the next Prepares wait 3 s in the proxy: A is killed while they do
    let deadline = Instant::now() + Duration::from_secs(30);
    while k.received(&receiver).await < 400 {
        assert!(Instant::now() < deadline, "the payment did not get under way");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    k.seen.forward_delay_ms.store(3000, Ordering::SeqCst);
    k.kill_when(&receiver, |_, seen| seen.held_prepares.load(Ordering::SeqCst) >= 2)
        .await;
    k.seen.forward_delay_ms.store(0, Ordering::SeqCst);
    let held = k.seen.held_prepares.load(Ordering::SeqCst);
    assert!(held >= 2, "Prepares of a window on their way to B: {held}");

    // A is back before they reach B
    let done = k.restart_until_done(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    // every Prepare the proxy took has been through B by now
    let deadline = Instant::now() + Duration::from_secs(15);
    while k.seen.now.load(Ordering::SeqCst) > 0 {
        assert!(Instant::now() < deadline, "Prepares still in the proxy");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    k.assert_paid_once(&receiver, &done).await;
}

/// The lost window completed B's incoming payment: B refuses every packet after that (the payment is
/// completed), and its refusal carries the connection's total with the close, so A still records the window
/// and completes instead of failing with money it sent unrecorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_killed_in_the_window_that_completed_the_receiver_completes_on_restart() {
    let mut k = Killable::start(Duration::from_millis(1000)).await;
    // exactly what A's fixed send delivers (5000 at the minimum rate 0.99)
    let (receiver, id) = k.pay_bob(Some(4950)).await;
    k.kill_when(&receiver, |received, seen| {
        received == 4950 && seen.held_fulfills.load(Ordering::SeqCst) >= 1
    })
    .await;

    let done = k.restart_until_done(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"]["value"], "4950", "{done}");
    assert_eq!(done["deliveredAmount"]["value"], "4950", "{done}");
    assert_eq!(k.received(&receiver).await, 4950);
    k.assert_books(4950, 4950).await;
}

/// The ILP address and shared secret of the one STREAM plan in the data dir's database (SQLite or, on the
/// PostgreSQL suite, the database its config names): the connection the desk pays over.
fn plan_credentials(dir: &std::path::Path) -> (String, String) {
    let config = crate::common::store_config(dir);
    let url = config
        .lines()
        .find_map(|l| l.strip_prefix("url = \"").and_then(|u| u.strip_suffix('"')))
        .map(str::to_owned);
    let file = dir.join("ase.sqlite3");
    // (the PostgreSQL client blocks on a runtime of its own: off the test's)
    std::thread::spawn(move || {
        let db = match url {
            Some(url) => opdesk::store::db::Connection::connect_postgres(&url).unwrap(),
            None => rusqlite::Connection::open(&file).unwrap().into(),
        };
        db.query_row("SELECT ilp_address, shared_secret FROM stream_plans", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
    })
    .join()
    .unwrap()
}

/// One money packet of `amount` straight into B's `/ilp` as the peer desk-a, on the connection (address and
/// secret) A uses: B counts it in that connection's total, as a receiver counting a payment-wide total
/// would count another sender's money.
async fn pay_on_a_connection(b: &TestAse, address: &str, secret: &str, amount: u64) {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD_INDIFFERENT};
    use opdesk::ilp::{Address, Frame, Packet, PacketType, Prepare, StreamPacket, Timestamp, crypto::StreamKeys};
    let keys = StreamKeys::derive(&URL_SAFE_NO_PAD_INDIFFERENT.decode(secret).unwrap());
    let request = StreamPacket {
        sequence: 1_000_000,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: amount,
        frames: vec![Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }],
    };
    let data = request.encrypt(&keys.encryption_key).unwrap();
    let ms = i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap();
    let prepare = Prepare {
        amount,
        expires_at: Timestamp::from_unix_millis(ms + 30_000).unwrap(),
        execution_condition: keys.condition(&data),
        destination: Address::new(address).unwrap(),
        data,
    };
    let reply = b
        .http
        .post(b.url("/ilp"))
        .bearer_auth("a-to-b")
        .header("content-type", "application/octet-stream")
        .body(prepare.encode().unwrap())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(
        matches!(Packet::decode(&reply), Ok(Packet::Fulfill(_))),
        "{:?}",
        Packet::decode(&reply)
    );
}

/// The bound of a reconciliation: what A records for packets a crash left unrecorded is never more than
/// the sum of the packets of the window that was in flight (the durable flight bound is exactly committed +
/// that window), even when the receiver's total for the connection also counts someone else's money (as a
/// receiver reporting a payment-wide total would). The lost window here is small (the second window: two
/// packets), so a looser bound (say, sixteen packets ahead) would attribute the stranger's money to A.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciliation_never_records_more_source_than_the_lost_window_sent() {
    let mut k = Killable::start(Duration::from_millis(1500)).await;
    let (receiver, id) = k.pay_bob(None).await;
    // the whole lost window at B (every request in the proxy is a held fulfill), A not told
    k.kill_when(&receiver, |received, seen| {
        let held = seen.held_fulfills.load(Ordering::SeqCst);
        received > 0 && held >= 2 && held == seen.now.load(Ordering::SeqCst)
    })
    .await;
    let window = i64::try_from(k.seen.amount_in_flight.load(Ordering::SeqCst)).unwrap();
    assert!(window >= 200, "a lost window of two packets or more: {window}");
    let from_a = k.received(&receiver).await;

    // someone else's 10.00 on A's connection, while A is down
    let (address, secret) = plan_credentials(k.a_dir.path());
    let extra = 1000;
    pay_on_a_connection(&k.b, &address, &secret, 1000).await;
    assert_eq!(k.received(&receiver).await, from_a + extra);

    let done = k.restart_until_done(&id).await;
    assert_eq!(done["state"], "completed", "{done}");
    let sent: i64 = done["sentAmount"]["value"].as_str().unwrap().parse().unwrap();
    let delivered: i64 = done["deliveredAmount"]["value"].as_str().unwrap().parse().unwrap();
    let b_received = k.received(&receiver).await;
    // A's source: exactly what its packets carried to B (the lost window in full, nothing of the stranger's)
    assert_eq!(sent, b_received - extra, "{done}");
    // the delivered amount is the receiver's word: it counts the stranger's money (the remaining risk with
    // such a receiver; this ASE's receiver and ilp-protocol-stream count per connection)
    assert_eq!(delivered, b_received, "{done}");
    k.assert_books(sent, b_received).await;
}
