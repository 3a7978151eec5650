//! Attacks an outsider can make, each against the real server over loopback: receivers that steer opdesk's
//! outbound requests (refused addresses, huge and slow replies, hostile error text), fetch failures as an
//! oracle, replays of a signed outgoing payment across a `kill -9`, and honest identical requests that must
//! not be taken for replays.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use crate::common::{Proc, TestAse, auto_approved_outgoing_token, balance_of, grant_token};

/// What the hostile server does with a request (given the request head).
#[derive(Clone, Copy)]
enum Hostile {
    /// Answers `status` with a JSON body full of internal-sounding text.
    Status(u16),
    /// Streams `mb` megabytes of JSON-ish bytes, without `Content-Length`.
    Huge { mb: usize },
    /// Accepts and never answers.
    Hang,
    /// Answers like an incoming payment whose `authServer` is this same server at `/auth`.
    PublicIncoming,
}

/// A loopback HTTP server that counts connections and records request heads. Bounded: at most 200
/// connections, each served at most 30 s.
struct HostileServer {
    port: u16,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
    written: Arc<AtomicUsize>,
}

impl HostileServer {
    async fn start(mode: Hostile) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let written = Arc::new(AtomicUsize::new(0));
        let (c, h, w) = (connections.clone(), heads.clone(), written.clone());
        tokio::spawn(async move {
            for _ in 0..200 {
                let Ok((sock, _)) = listener.accept().await else { break };
                c.fetch_add(1, Ordering::SeqCst);
                let (h, w) = (h.clone(), w.clone());
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(30), serve(sock, mode, port, h, w)).await;
                });
            }
        });
        Self {
            port,
            connections,
            heads,
            written,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

async fn serve(
    mut sock: TcpStream,
    mode: Hostile,
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
    written: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        let n = sock.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    heads.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
    match mode {
        Hostile::Status(status) => {
            let body = r#"{"error":{"code":"internal","description":"hostile-secret-text at 10.9.8.7:5432"}}"#;
            let reply = format!(
                "HTTP/1.1 {status} Nope\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            sock.write_all(reply.as_bytes()).await?;
        }
        Hostile::Huge { mb } => {
            sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"x\":\"")
                .await?;
            let chunk = vec![b'a'; 64 * 1024];
            for _ in 0..mb * 16 {
                sock.write_all(&chunk).await?;
                written.fetch_add(chunk.len(), Ordering::SeqCst);
            }
        }
        Hostile::Hang => tokio::time::sleep(Duration::from_secs(30)).await,
        Hostile::PublicIncoming => {
            let body = json!({
                "receivedAmount": {"value": "0", "assetCode": "USD", "assetScale": 2},
                "authServer": format!("http://127.0.0.1:{port}/auth"),
            })
            .to_string();
            let status = if head.starts_with(b"GET") {
                "200 OK"
            } else {
                "418 Teapot"
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            sock.write_all(reply.as_bytes()).await?;
        }
    }
    sock.shutdown().await
}

/// A config with a sending peer (so remote receivers are resolved at all) and `extra` appended.
fn config_with_peer(extra: &str) -> String {
    format!(
        r#"
[[ilp.peers]]
name = "upstream"
outgoing_endpoint = "http://127.0.0.1:9/ilp"
outgoing_token = "t-upstream"
routes = ["test.elsewhere"]
asset_code = "USD"
asset_scale = 2
{extra}"#
    )
}

async fn quote_token(ase: &TestAse, client: &opdesk::client::SignedClient) -> String {
    grant_token(client, &ase.base, json!([{"type": "quote", "actions": ["create"]}])).await
}

async fn quote(ase: &TestAse, client: &opdesk::client::SignedClient, token: &str, receiver: &str) -> (u16, Value) {
    let body = json!({"walletAddress": ase.url("/alice"), "receiver": receiver, "method": "ilp"});
    let r = client
        .send(Method::POST, &ase.url("/quotes"), Some(token), Some(&body))
        .await
        .unwrap();
    (r.status, r.body)
}

/// Nothing in `body` tells the client about the hosts, ports or answers behind it.
fn assert_no_oracle(body: &Value, port: u16) {
    let text = body.to_string().to_ascii_lowercase();
    for leak in [
        "refused",
        "connection",
        "dns",
        "timed out",
        "hostile-secret-text",
        "10.9.8.7",
        "http 4",
        "http 5",
        "size limit",
        "not json",
        "unknown key",
        "routes to",
        "ppm",
        "peer",
        "upstream",
        &port.to_string(),
    ] {
        assert!(!text.contains(leak), "the error tells the client {leak:?}: {body}");
    }
}

#[tokio::test]
async fn receivers_on_refused_addresses_are_never_fetched() {
    let ase = TestAse::spawn_with(&config_with_peer("[egress]\nallow_loopback = false\n")).await;
    let client = ase.demo_client().await;
    let token = quote_token(&ase, &client).await;
    let hostile = HostileServer::start(Hostile::Status(200)).await;
    let p = hostile.port;
    for receiver in [
        format!("http://127.0.0.1:{p}/incoming-payments/1"),
        format!("http://localhost:{p}/incoming-payments/1"),
        format!("http://[::ffff:127.0.0.1]:{p}/incoming-payments/1"),
        format!("http://0x7f.1:{p}/incoming-payments/1"),
        format!("http://[::1]:{p}/incoming-payments/1"),
        format!("http://0.0.0.0:{p}/incoming-payments/1"),
    ] {
        let started = Instant::now();
        let (status, body) = quote(&ase, &client, &token, &receiver).await;
        assert_eq!(status, 400, "{receiver}: {body}");
        assert_eq!(body["error"]["code"], "invalid_receiver", "{body}");
        assert_eq!(body["error"]["description"], "invalid receiver", "{receiver}");
        assert_eq!(
            body["error"]["details"]["reason"], "the receiver could not be resolved",
            "{receiver}"
        );
        assert_no_oracle(&body, p);
        assert!(started.elapsed() < Duration::from_secs(2), "refused before connecting");
    }
    assert_eq!(hostile.connections(), 0, "nothing was fetched");
}

#[tokio::test]
async fn hostile_receiver_answers_reach_nobody() {
    let ase = TestAse::spawn_with(&config_with_peer("[egress]\ntimeout_ms = 1500\n")).await;
    let client = ase.demo_client().await;
    let token = quote_token(&ase, &client).await;
    // an error status with internal-sounding text, a server that never answers, a closed port
    let status = HostileServer::start(Hostile::Status(503)).await;
    let hang = HostileServer::start(Hostile::Hang).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (port, what) in [(status.port, "status"), (hang.port, "hang"), (closed, "closed")] {
        let started = Instant::now();
        let (code, body) = quote(
            &ase,
            &client,
            &token,
            &format!("http://127.0.0.1:{port}/incoming-payments/1"),
        )
        .await;
        assert_eq!(code, 400, "{what}: {body}");
        assert_eq!(body["error"]["description"], "invalid receiver", "{what}");
        assert_eq!(
            body["error"]["details"]["reason"], "the receiver could not be resolved",
            "{what}"
        );
        assert_no_oracle(&body, port);
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{what}: answered within the timeout"
        );
    }
    // only the path may end in /incoming-payments/{id}: queries, fragments and other paths are refused before
    // any request, although this policy allows the host
    for receiver in [
        format!("http://127.0.0.1:{}/steal?x=/incoming-payments/1", status.port),
        format!("http://127.0.0.1:{}/incoming-payments/1?x=1", status.port),
        format!("http://127.0.0.1:{}/incoming-payments/1#f", status.port),
        format!("http://127.0.0.1:{}/incoming-payments/1/complete", status.port),
        format!("http://u:p@127.0.0.1:{}/incoming-payments/1", status.port),
    ] {
        let (code, body) = quote(&ase, &client, &token, &receiver).await;
        assert_eq!(code, 400, "{receiver}: {body}");
        assert_eq!(body["error"]["code"], "invalid_receiver", "{body}");
    }
    assert_eq!(
        status.connections(),
        1,
        "only the first, well-formed receiver was fetched"
    );
    // a receiver whose authServer refuses: opdesk asks it for a grant, and tells the client nothing of the answer
    let teapot = HostileServer::start(Hostile::PublicIncoming).await;
    let (code, body) = quote(
        &ase,
        &client,
        &token,
        &format!("http://127.0.0.1:{}/incoming-payments/1", teapot.port),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_no_oracle(&body, teapot.port);
    assert!(!body.to_string().contains("418"), "{body}");
    assert!(
        teapot.heads().iter().any(|h| h.starts_with("POST /auth")),
        "the grant was asked for"
    );
    // the server keeps serving
    assert_eq!(ase.get("/alice").await.0, 200);
}

/// VmRSS of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_receiver_replies_are_cut_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        config_with_peer("[egress]\ntimeout_ms = 10000\n"),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = Proc::start(dir.path(), port).await;
    let client = server.demo_client(dir.path()).await;
    let base = server.base.clone();
    let token = grant_token(&client, &base, json!([{"type": "quote", "actions": ["create"]}])).await;
    let hostile = HostileServer::start(Hostile::Huge { mb: 100 }).await;
    let pid = server.child.id();
    let before = rss_kib(pid);
    for _ in 0..3 {
        let started = Instant::now();
        let r = client
            .send(
                Method::POST,
                &format!("{base}/quotes"),
                Some(&token),
                Some(&json!({"walletAddress": format!("{base}/alice"), "receiver": format!("http://127.0.0.1:{}/incoming-payments/1", hostile.port), "method": "ilp"})),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.body["error"]["description"], "invalid receiver");
        assert_eq!(
            r.body["error"]["details"]["reason"],
            "the receiver could not be resolved"
        );
        assert_no_oracle(&r.body, hostile.port);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "cut off, not read to the end"
        );
    }
    let after = rss_kib(pid);
    assert!(
        after < before + 20 * 1024,
        "RSS stays flat while 100 MB replies are refused: {before} KiB -> {after} KiB"
    );
    assert!(
        hostile.written.load(Ordering::SeqCst) < 3 * 50 * 1024 * 1024,
        "the replies were abandoned early"
    );
}

#[tokio::test]
async fn unfetchable_client_keys_are_not_an_oracle() {
    let ase = TestAse::spawn().await;
    let key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let kid = opdesk::httpsig::jwk::thumbprint(&key.verifying_key());
    let client = opdesk::client::SignedClient::new(key, &kid);
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let status = HostileServer::start(Hostile::Status(500)).await;
    // unreachable, failing, and a wallet that serves a key set without this key: one and the same answer
    let mut answers = Vec::new();
    for (port, wallet) in [
        (closed, format!("http://127.0.0.1:{closed}/mallory")),
        (status.port, format!("http://127.0.0.1:{}/mallory", status.port)),
        (0, ase.url("/demo-client")),
    ] {
        let body = json!({"access_token": {"access": [{"type": "quote", "actions": ["create"]}]}, "client": wallet});
        for _ in 0..3 {
            let r = client
                .send(Method::POST, &ase.url("/auth"), None, Some(&body))
                .await
                .unwrap();
            assert!(matches!(r.status, 400 | 401), "{}", r.body);
            if port != 0 {
                assert_no_oracle(&r.body, port);
            }
            answers.push((r.status, r.body));
        }
    }
    assert!(
        answers.windows(2).all(|w| w[0] == w[1]),
        "one answer for every kind of key failure: {answers:?}"
    );
    assert_eq!(
        status.connections(),
        1,
        "a failed key fetch is remembered: one outbound request, not three"
    );
}

#[tokio::test]
async fn identical_signed_creates_are_new_requests() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let token = grant_token(
        &client,
        &ase.base,
        json!([{"type": "incoming-payment", "actions": ["create"]}, {"type": "quote", "actions": ["create"]}]),
    )
    .await;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    // one signature, sent five times: what the SDK sends for five identical invoices within one second
    let url = ase.url("/incoming-payments");
    let bytes = serde_json::to_vec(&json!({"walletAddress": ase.url("/bob"), "incomingAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}})).unwrap();
    let headers = client.sign(&Method::POST, &url, Some(&token), &bytes, now).unwrap();
    let mut ids = std::collections::HashSet::new();
    for _ in 0..5 {
        let r = client
            .send_raw(Method::POST, &url, headers.clone(), bytes.clone())
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        ids.insert(r.body["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 5, "five distinct incoming payments");
    let receiver = ids.iter().next().unwrap().clone();
    let url = ase.url("/quotes");
    let bytes = serde_json::to_vec(&json!({"walletAddress": ase.url("/alice"), "receiver": receiver, "method": "ilp", "debitAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}})).unwrap();
    let headers = client.sign(&Method::POST, &url, Some(&token), &bytes, now).unwrap();
    let mut quotes = std::collections::HashSet::new();
    for _ in 0..3 {
        let r = client
            .send_raw(Method::POST, &url, headers.clone(), bytes.clone())
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        quotes.insert(r.body["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(quotes.len(), 3, "three distinct quotes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_outgoing_payment_moves_money_once_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[gnap]\nauto_approve = true\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Proc::start(dir.path(), port).await;
    let base = server.base.clone();
    let c = server.demo_client(dir.path()).await;
    let inc = grant_token(&c, &base, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let out = auto_approved_outgoing_token(&c, &base, "alice").await;
    let r = c
        .send(
            Method::POST,
            &format!("{base}/incoming-payments"),
            Some(&inc),
            Some(&json!({"walletAddress": format!("{base}/bob")})),
        )
        .await
        .unwrap();
    let receiver = r.body["id"].as_str().unwrap().to_owned();
    let before = server.admin("/balances").await;

    // one captured request, sent four times: twice now, and twice after a kill -9 and a restart
    let url = format!("{base}/outgoing-payments");
    let bytes = serde_json::to_vec(&json!({"walletAddress": format!("{base}/alice"), "incomingPayment": receiver, "debitAmount": {"value": "1234", "assetCode": "USD", "assetScale": 2}})).unwrap();
    let headers = c
        .sign(
            &Method::POST,
            &url,
            Some(&out),
            &bytes,
            time::OffsetDateTime::now_utc().unix_timestamp(),
        )
        .unwrap();
    let first = c
        .send_raw(Method::POST, &url, headers.clone(), bytes.clone())
        .await
        .unwrap();
    assert_eq!(first.status, 201, "{}", first.body);
    let again = c
        .send_raw(Method::POST, &url, headers.clone(), bytes.clone())
        .await
        .unwrap();
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(again.body, first.body, "the original answer, byte for byte");
    // another captured request, six copies at once: one payment, six identical answers
    let bytes2 = serde_json::to_vec(&json!({"walletAddress": format!("{base}/alice"), "incomingPayment": receiver, "debitAmount": {"value": "111", "assetCode": "USD", "assetScale": 2}})).unwrap();
    let headers2 = c
        .sign(
            &Method::POST,
            &url,
            Some(&out),
            &bytes2,
            time::OffsetDateTime::now_utc().unix_timestamp(),
        )
        .unwrap();
    let copies: Vec<_> = (0..6)
        .map(|_| {
            let (c, url, h, b) = (c.clone(), url.clone(), headers2.clone(), bytes2.clone());
            tokio::spawn(async move { c.send_raw(Method::POST, &url, h, b).await.unwrap() })
        })
        .collect();
    let mut bodies = std::collections::HashSet::new();
    for copy in copies {
        let r = copy.await.unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        bodies.insert(r.body.to_string());
    }
    assert_eq!(bodies.len(), 1, "concurrent copies all get the one answer: {bodies:?}");

    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(server);
    let server = Proc::start(dir.path(), port).await;
    for _ in 0..2 {
        let replay = c
            .send_raw(Method::POST, &url, headers.clone(), bytes.clone())
            .await
            .unwrap();
        assert_eq!(replay.status, 201, "{}", replay.body);
        assert_eq!(replay.body, first.body, "after a restart too");
    }
    // exactly one payment, settled once
    let deadline = Instant::now() + Duration::from_secs(20);
    let all = loop {
        let all = server.admin("/outgoing-payments?first=100").await;
        if all["items"].as_array().unwrap().iter().all(|p| p["state"] != "sending") {
            break all;
        }
        assert!(Instant::now() < deadline, "the payment did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(all["items"].as_array().unwrap().len(), 2, "{all}");
    let after = server.assert_balanced().await;
    assert_eq!(balance_of(&before, "alice") - balance_of(&after, "alice"), 1234 + 111);
    assert_eq!(balance_of(&after, "bob") - balance_of(&before, "bob"), 1234 + 111);
    // a new signature over the same body is a new request: a second payment (the incomingPayment+debitAmount form)
    let headers = c
        .sign(
            &Method::POST,
            &url,
            Some(&out),
            &bytes,
            time::OffsetDateTime::now_utc().unix_timestamp() + 1,
        )
        .unwrap();
    let second = c.send_raw(Method::POST, &url, headers, bytes).await.unwrap();
    assert_eq!(second.status, 201, "{}", second.body);
    assert_ne!(second.body["id"], first.body["id"]);
}

#[tokio::test]
async fn a_refused_outgoing_payment_stays_refused_when_replayed() {
    use opdesk::{
        ase::outgoing::{GrantContext, RequestKey, Source},
        server::error::ApiError,
    };
    let ase = TestAse::spawn().await;
    let s = &ase.state;
    let alice = s.wallets.get("alice").await.unwrap();
    let bob = s.wallets.get("bob").await.unwrap();
    let usd = opdesk::money::Asset::new("USD", 2).unwrap();
    let ip = s
        .incoming
        .create(
            &bob,
            None,
            opdesk::ase::incoming::CreateIncoming {
                wallet_address: bob.url.clone(),
                incoming_amount: None,
                expires_at: None,
                metadata: None,
            },
        )
        .await
        .unwrap();
    let limits = |max: u64| GrantContext {
        grant_id: "g-replay".into(),
        limits: Some(opdesk::gnap::model::Limits {
            debit_amount: Some(opdesk::money::Amount::new(
                opdesk::money::Value::new(max).unwrap(),
                &usd,
            )),
            ..Default::default()
        }),
    };
    let source = || Source::Incoming {
        receiver: s.incoming.url_of(&ip.id),
        debit: opdesk::money::Amount::new(opdesk::money::Value::new(500).unwrap(), &usd),
    };
    let key = RequestKey {
        signature_digest: [42u8; 32],
        created: time::OffsetDateTime::now_utc().unix_timestamp(),
        window_secs: 300,
    };
    // the grant's room is too small: 403, which the edge remembers for the request's replays
    let first = ApiError::from(
        s.outgoing
            .create(&alice, None, Some(limits(100)), source(), None, Some(key.clone()))
            .await
            .unwrap_err(),
    );
    assert_eq!(first.status.as_u16(), 403);
    s.outgoing
        .remember_refusal(&key, first.status.as_u16(), first.envelope().to_string())
        .await;
    // the same signed request once the reason is gone (a new interval: more room) is refused alike
    let replay = ApiError::from(
        s.outgoing
            .create(&alice, None, Some(limits(10_000)), source(), None, Some(key.clone()))
            .await
            .unwrap_err(),
    );
    assert_eq!(replay.status.as_u16(), 403);
    assert_eq!(replay.verbatim.as_deref(), Some(first.envelope().to_string().as_str()));
    let (_, list) = ase.admin(Method::GET, "/outgoing-payments?first=10", None).await;
    assert!(list["items"].as_array().unwrap().is_empty(), "{list}");
    // a new signature is a new request
    let fresh = RequestKey {
        signature_digest: [43u8; 32],
        ..key
    };
    s.outgoing
        .create(&alice, None, None, source(), None, Some(fresh))
        .await
        .unwrap();
}

/// The edge remembers what it refused: a create refused for a grant's limit, replayed once the grant's next
/// interval has room, is refused alike instead of paying.
#[tokio::test]
async fn a_refused_signed_create_is_refused_alike_over_http_once_the_reason_is_gone() {
    let ase = TestAse::spawn_with("[gnap]\nauto_approve = true\n").await;
    let client = ase.demo_client().await;
    let inc = grant_token(
        &client,
        &ase.base,
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let r = client
        .send(
            Method::POST,
            &ase.url("/incoming-payments"),
            Some(&inc),
            Some(&json!({"walletAddress": ase.url("/bob")})),
        )
        .await
        .unwrap();
    let receiver = r.body["id"].as_str().unwrap().to_owned();
    // 100 per 4-second interval, starting now
    let start = time::OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let interval = format!("R/{}/PT4S", opdesk::clock::format_ts(start));
    let body = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/alice"),
            "limits": {"debitAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}, "interval": interval}}]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}},
    });
    let g = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    let out = crate::common::finish_grant(&client, &g.body).await;
    let pay = |value: &str| {
        serde_json::to_vec(&json!({"walletAddress": ase.url("/alice"), "incomingPayment": receiver,
            "debitAmount": {"value": value, "assetCode": "USD", "assetScale": 2}}))
        .unwrap()
    };
    let url = ase.url("/outgoing-payments");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let a = pay("80");
    let headers = client.sign(&Method::POST, &url, Some(&out), &a, now).unwrap();
    let first = client.send_raw(Method::POST, &url, headers, a).await.unwrap();
    assert_eq!(first.status, 201, "{}", first.body);
    let b = pay("50");
    let headers = client.sign(&Method::POST, &url, Some(&out), &b, now).unwrap();
    let refused = client
        .send_raw(Method::POST, &url, headers.clone(), b.clone())
        .await
        .unwrap();
    assert_eq!(refused.status, 403, "80 + 50 passes the limit of 100: {}", refused.body);
    // the next interval has room for 50 again
    let next = start + time::Duration::seconds(4);
    let wait = (next - time::OffsetDateTime::now_utc())
        .whole_milliseconds()
        .clamp(0, 5000) as u64;
    tokio::time::sleep(Duration::from_millis(wait + 300)).await;
    let fresh = client
        .sign(
            &Method::POST,
            &url,
            Some(&out),
            &pay("50"),
            time::OffsetDateTime::now_utc().unix_timestamp(),
        )
        .unwrap();
    let replay = client.send_raw(Method::POST, &url, headers, b).await.unwrap();
    assert_eq!(replay.status, 403, "the replay is refused alike: {}", replay.body);
    assert_eq!(replay.body, refused.body);
    // a new request for the same payment is a new request, and the new interval has room for it
    let new = client.send_raw(Method::POST, &url, fresh, pay("50")).await.unwrap();
    assert_eq!(new.status, 201, "{}", new.body);
}

#[tokio::test]
async fn the_operator_sees_why_a_receiver_was_refused() {
    let ase = TestAse::spawn_with(&config_with_peer("[egress]\nallow_loopback = false\n")).await;
    let client = ase.demo_client().await;
    let token = quote_token(&ase, &client).await;
    // what an attached console does: ask for headers and bodies, and listen to the bus
    ase.state.capture.store(1, Ordering::Relaxed);
    let mut events = ase.state.bus.subscribe();
    let (status, body) = quote(&ase, &client, &token, "http://127.0.0.1:9/incoming-payments/1").await;
    assert_eq!(status, 400, "{body}");
    assert_no_oracle(&body, 9);
    let deadline = Instant::now() + Duration::from_secs(5);
    let detail = loop {
        assert!(Instant::now() < deadline, "no request log event for the quote");
        let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .unwrap()
            .unwrap();
        if let opdesk::events::DomainEvent::HttpRequest { path, exchange, .. } = event.event
            && path == "/quotes"
        {
            break exchange.and_then(|x| x.detail).unwrap_or_default();
        }
    };
    assert!(
        detail.contains("127.0.0.1:9"),
        "the operator learns what was refused: {detail}"
    );
    assert!(detail.contains("refused by the address policy"), "{detail}");
}
