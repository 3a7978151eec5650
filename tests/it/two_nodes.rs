//! Two `opdesk serve` nodes on one PostgreSQL database behind one public URL (a round-robin TCP proxy in the
//! test): a grant approved on one node is continued through the other, a grant's limit holds across both,
//! a revocation on one node is refused on the other at once, and a node killed with SIGKILL while money
//! streams leaves its payments to the other. PostgreSQL only.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use opdesk::client::SignedClient;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{Proc, balance_of, finish_grant, free_port, postgres, use_postgres_for};

mod alerts;

/// Where the proxy sends the next connection.
const ALTERNATE: usize = 0;
const TO_A: usize = 1;
const TO_B: usize = 2;

/// The load balancer: each connection goes to node A or B — alternately, or to the one `route` names — and
/// is counted per node.
struct Proxy {
    url: String,
    route: Arc<AtomicUsize>,
    served: Arc<[AtomicUsize; 2]>,
}

impl Proxy {
    async fn start(a: u16, b: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let route = Arc::new(AtomicUsize::new(ALTERNATE));
        let served: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let (r, s) = (route.clone(), served.clone());
        tokio::spawn(async move {
            let next = AtomicUsize::new(0);
            while let Ok((mut inbound, _)) = listener.accept().await {
                let node = match r.load(Ordering::SeqCst) {
                    TO_A => 0,
                    TO_B => 1,
                    _ => next.fetch_add(1, Ordering::SeqCst) % 2,
                };
                s[node].fetch_add(1, Ordering::SeqCst);
                let port = [a, b][node];
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", port)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Self { url, route, served }
    }

    fn to(&self, route: usize) {
        self.route.store(route, Ordering::SeqCst);
    }
}

/// Two nodes with their data dirs, one database and the proxy in front.
struct Nodes {
    dir_a: tempfile::TempDir,
    _dir_b: tempfile::TempDir,
    a: Proc,
    b: Proc,
    proxy: Proxy,
}

impl Nodes {
    /// Starts A (which seeds the demo wallets and keeps the demo client's key) and then B, with one
    /// configuration: `config`, the proxy's public URL and one database.
    async fn start(config: &str) -> Self {
        Self::start_with(config, false).await
    }

    /// As [`Nodes::start`]; with `logged`, each node logs at its default level (no `RUST_LOG`) to
    /// `stderr.log` in its data dir.
    async fn start_with(config: &str, logged: bool) -> Self {
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (port_a, port_b) = (free_port(), free_port());
        let proxy = Proxy::start(port_a, port_b).await;
        let text = format!("public_url = \"{}\"\n{config}", proxy.url);
        std::fs::write(dir_a.path().join("config.toml"), text).unwrap();
        use_postgres_for(dir_a.path());
        std::fs::copy(dir_a.path().join("config.toml"), dir_b.path().join("config.toml")).unwrap();
        let start = |dir: &Path, port: u16| {
            let dir = dir.to_owned();
            async move {
                if !logged {
                    return Proc::start(&dir, port).await;
                }
                let log = std::fs::File::create(dir.join("stderr.log")).unwrap();
                let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_opdesk"));
                cmd.args(Proc::serve_args(&dir, port))
                    .env("OPDESK_CONFIG", dir.join("config.toml"))
                    .env_remove("RUST_LOG")
                    .stdout(std::process::Stdio::null())
                    .stderr(log);
                Proc::spawn(cmd, &dir, port).await
            }
        };
        let a = start(dir_a.path(), port_a).await;
        let b = start(dir_b.path(), port_b).await;
        Self {
            dir_a,
            _dir_b: dir_b,
            a,
            b,
            proxy,
        }
    }
}

/// A client of its own for each request, signing as `demo-client` with the key seeded into `dir`: its
/// connection is new, so the proxy routes it.
fn client(dir: &Path) -> SignedClient {
    SignedClient::new(demo_client_key(dir), &demo_client_kid(dir))
}

fn demo_client_key(dir: &Path) -> ed25519_dalek::SigningKey {
    let pem = std::fs::read_to_string(dir.join("demo-client.pem")).unwrap();
    opdesk::httpsig::jwk::from_pkcs8_pem(&pem).unwrap()
}

fn demo_client_kid(dir: &Path) -> String {
    opdesk::httpsig::jwk::thumbprint(&demo_client_key(dir).verifying_key())
}

/// Removes `demo-client`'s key (the one in `dir`) through `node`'s admin API.
async fn remove_demo_client_key(node: &Proc, dir: &Path) {
    let kid = demo_client_kid(dir);
    let (s, body) = admin(node, Method::DELETE, &format!("/wallets/demo-client/keys/{kid}")).await;
    assert!(s < 300, "{s}: {body}");
}

async fn admin(node: &Proc, method: Method, path: &str) -> (u16, Value) {
    admin_with(node, method, path, &json!({})).await
}

fn usd(v: &str) -> Value {
    json!({"value": v, "assetCode": "USD", "assetScale": 2})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_database_share_grants_limits_and_revocations() {
    if postgres().is_none() {
        return; // several nodes need PostgreSQL; on SQLite the data dir's lock refuses a second server
    }
    let Nodes { dir_a, a, b, proxy, .. } = Nodes::start("").await;
    let base = proxy.url.clone();
    let c = || client(dir_a.path());

    // an incoming payment for bob, created through whichever node
    let inc = crate::common::grant_token(
        &c(),
        &base,
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let r = c()
        .send(
            Method::POST,
            &format!("{base}/incoming-payments"),
            Some(&inc),
            Some(&json!({"walletAddress": format!("{base}/bob")})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let bob_ip = r.body["id"].as_str().unwrap().to_owned();

    // an outgoing-payment grant for 5 × 1.00 USD: requested through A, approved by the operator on B,
    // continued through A
    proxy.to(TO_A);
    let body = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create", "read", "list"],
            "identifier": format!("{base}/alice"), "limits": {"debitAmount": usd("500")}}]},
        "client": format!("{base}/demo-client"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n1"}},
    });
    let grant = c()
        .send(Method::POST, &format!("{base}/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(grant.status, 200, "{}", grant.body);
    let (_, pending) = admin(&b, Method::GET, "/grants?state=pending").await;
    let grant_id = pending[0]["id"]
        .as_str()
        .expect("the grant is pending on B too")
        .to_owned();
    let (s, _) = admin(&b, Method::POST, &format!("/grants/{grant_id}/approve")).await;
    assert_eq!(s, 200);
    let out = finish_grant(&c(), &grant.body).await;

    // 20 creates at once, alternating between the nodes: the limit allows exactly 5
    proxy.to(ALTERNATE);
    let before = [
        proxy.served[0].load(Ordering::SeqCst),
        proxy.served[1].load(Ordering::SeqCst),
    ];
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (c, out, url) = (c(), out.clone(), format!("{base}/outgoing-payments"));
        let body = json!({"walletAddress": format!("{base}/alice"), "incomingPayment": bob_ip,
            "debitAmount": usd("100"), "metadata": {"i": i}});
        tasks.push(tokio::spawn(async move {
            c.send(Method::POST, &url, Some(&out), Some(&body)).await.unwrap()
        }));
    }
    let mut created = 0;
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            201 => created += 1,
            403 => {}
            s => panic!("unexpected {s}: {}", r.body),
        }
    }
    assert_eq!(created, 5, "the grant's limit held across both nodes");
    for (node, was) in before.iter().enumerate() {
        assert!(
            proxy.served[node].load(Ordering::SeqCst) >= was + 10,
            "node {node} took its half"
        );
    }
    let spent = c()
        .send(Method::GET, &format!("{base}/outgoing-payment-grant"), Some(&out), None)
        .await
        .unwrap();
    assert_eq!(spent.body["spentDebitAmount"], usd("500"), "{}", spent.body);

    // revoked by the operator on A: B refuses the token at once
    let (s, _) = admin(&a, Method::POST, &format!("/grants/{grant_id}/revoke")).await;
    assert_eq!(s, 200);
    proxy.to(TO_B);
    let r = c()
        .send(
            Method::GET,
            &format!("{base}/outgoing-payments?wallet-address={base}/alice&first=10"),
            Some(&out),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(r.status, 401 | 403), "{}: {}", r.status, r.body);

    // both nodes see the same books, balanced
    let books_a = a.assert_balanced().await;
    let books_b = b.assert_balanced().await;
    assert_eq!(books_a, books_b);
}

/// Money streams through both nodes' engines; node A is killed with SIGKILL mid-flight and node B finishes
/// every payment: each completed or failed, every asset balanced, no money held by a payment, and what left
/// alice is what reached bob (the crash test's invariants, with the survivor doing the finishing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_flight_leaves_its_payments_to_the_other() {
    if postgres().is_none() {
        return;
    }
    let config = "[gnap]\nauto_approve = true\n[engine]\npreset = \"custom\"\npackets_per_payment = 10\n\
                  packet_interval_ms = 40\n";
    let Nodes {
        dir_a, mut a, b, proxy, ..
    } = Nodes::start(config).await;
    let base = proxy.url.clone();
    let before = b.admin("/balances").await;
    let c = || client(dir_a.path());
    let inc = crate::common::grant_token(
        &c(),
        &base,
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let out = crate::common::auto_approved_outgoing_token(&c(), &base, "alice").await;
    let mut receivers = Vec::new();
    for n in 0..5 {
        let r = c()
            .send(
                Method::POST,
                &format!("{base}/incoming-payments"),
                Some(&inc),
                Some(&json!({"walletAddress": format!("{base}/bob"), "metadata": {"n": n}})),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        receivers.push(r.body["id"].as_str().unwrap().to_owned());
    }
    let mut tasks = Vec::new();
    for n in 0..30u64 {
        let (c, out, url) = (c(), out.clone(), format!("{base}/outgoing-payments"));
        let body = json!({"walletAddress": format!("{base}/alice"), "incomingPayment": receivers[(n % 5) as usize],
            "debitAmount": usd(&(100 + n * 7).to_string()), "metadata": {"n": n}});
        tasks.push(tokio::spawn(async move {
            c.send(Method::POST, &url, Some(&out), Some(&body)).await
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let sending = b.admin("/outgoing-payments?state=sending&first=500").await;
        let items = sending["items"].as_array().unwrap().clone();
        if items.iter().any(|p| p["sentAmount"]["value"] != "0") {
            break;
        }
        assert!(Instant::now() < deadline, "no payment started streaming");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    for t in tasks {
        let _ = t.await;
    }

    // B alone finishes what both had begun
    let items = b
        .wait_payments_ended(Duration::from_secs(60), "B did not finish the payments")
        .await;
    let after = b.assert_balanced().await;
    for acct in after.as_array().unwrap() {
        if acct["kind"] == "payment" {
            assert_eq!(acct["balance"], 0, "{acct}");
        }
    }
    let left_alice = balance_of(&before, "alice") - balance_of(&after, "alice");
    let reached_bob = balance_of(&after, "bob") - balance_of(&before, "bob");
    let sent: i64 = items
        .iter()
        .map(|p| p["sentAmount"]["value"].as_str().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(left_alice, reached_bob, "what left alice reached bob");
    assert_eq!(left_alice, sent);
}

/// A store on a fresh database of the test cluster, with `connections` connections.
fn fresh_store(connections: usize) -> opdesk::store::Store {
    let dir = tempfile::tempdir().unwrap();
    use_postgres_for(dir.path());
    let url = crate::common::store_config(dir.path())
        .lines()
        .find_map(|l| {
            l.strip_prefix("url = \"")
                .and_then(|l| l.strip_suffix('"'))
                .map(str::to_owned)
        })
        .unwrap();
    let opts = opdesk::store::Options {
        connections,
        ..Default::default()
    };
    opdesk::store::Store::open_postgres(&url, &opts).unwrap().0
}

/// Jobs that all read and then write one row lose serialization races to each other. After a few losses a
/// job runs alone (the store's run lock, held exclusive), so every one commits and none is lost or doubled,
/// however many wait: the 64 creates of `rs_api` once ran out of retries on a slow machine.
#[test]
fn jobs_that_keep_losing_serialization_races_run_alone_and_all_commit() {
    if postgres().is_none() {
        return;
    }
    let store = fresh_store(8);
    store
        .call_blocking(|c| {
            c.execute_batch("CREATE TABLE hot (n BIGINT NOT NULL); INSERT INTO hot VALUES (0)")
                .map_err(opdesk::store::Error::from)
        })
        .unwrap();
    const JOBS: i64 = 64;
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..JOBS)
            .map(|_| {
                let store = store.clone();
                s.spawn(move || {
                    store.call_blocking(|c| {
                        let n: i64 = c.query_row("SELECT n FROM hot", [], |r| r.get(0))?;
                        // hold the read long enough that the others read the same value
                        std::thread::sleep(std::time::Duration::from_millis(3));
                        c.execute("UPDATE hot SET n = ?1", opdesk::store::db::params![n + 1])?;
                        Ok::<_, opdesk::store::Error>(())
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &results {
        assert!(r.is_ok(), "{r:?}");
    }
    let n: i64 = store
        .call_blocking(|c| {
            c.query_row("SELECT n FROM hot", [], |r| r.get(0))
                .map_err(opdesk::store::Error::from)
        })
        .unwrap();
    assert_eq!(n, JOBS, "every increment kept once");
    assert!(store.meters().retries.get() > 0, "the jobs conflicted");
    assert!(store.meters().exclusive.get() > 0, "some job ran alone");
    store.close();
}

async fn admin_with(node: &Proc, method: Method, path: &str, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .request(method, format!("{}/admin{path}", node.base))
        .bearer_auth(&node.admin_token)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The status `POST /ilp` on `node` answers a peer presenting `token` (401: no peer has it).
async fn ilp_status(node: &Proc, token: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("{}/ilp", node.base))
        .bearer_auth(token)
        .header("content-type", "application/octet-stream")
        .body(vec![0u8; 4])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Polls `check` until it holds (every 50 ms, for at most 10 s).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "{what} within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What one node does reaches the other at once: `GET /admin/events` on B (what an attached console reads)
/// streams the events of changes made on A, live and in sequence order; a peer added on A authenticates on
/// B, and once removed on A is refused on B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_and_peer_changes_made_on_one_node_reach_the_other() {
    if postgres().is_none() {
        return;
    }
    let Nodes { a, b, .. } = Nodes::start("").await;
    let mut stream = reqwest::Client::new()
        .get(format!("{}/admin/events", b.base))
        .bearer_auth(&b.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let names = ["east", "west", "north"];
    for name in names {
        let body = json!({"name": name, "assetCode": "USD", "assetScale": 2});
        let (status, created) = admin_with(&a, Method::POST, "/wallets", &body).await;
        assert_eq!(status, 201, "{created}");
    }
    let (mut text, mut seen) = (String::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.len() < names.len() {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("B streamed only {seen:?} of A's wallets within 10 s:\n{text}"))
            .unwrap()
            .expect("the stream stays open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) else {
                continue;
            };
            let record: Value = serde_json::from_str(data.trim()).unwrap();
            if record["event"]["type"] == "walletCreated" {
                seen.push((record["seq"].as_i64().unwrap(), record["event"]["name"].clone()));
            }
        }
    }
    let order: Vec<&str> = seen.iter().map(|(_, n)| n.as_str().unwrap()).collect();
    assert_eq!(order, names, "in the order A made them");
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");

    let body = json!({"name": "runtime", "assetCode": "USD", "assetScale": 2, "generateIncomingToken": true, "ilpAddress": "test.runtime"});
    let (status, added) = admin_with(&a, Method::POST, "/peers", &body).await;
    assert_eq!(status, 201, "{added}");
    let token = added["generatedIncomingTokens"][0].as_str().unwrap().to_owned();
    eventually("B knows the peer A added", || async {
        ilp_status(&b, &token).await != 401
    })
    .await;
    let (status, gone) = admin_with(&a, Method::DELETE, "/peers/runtime", &Value::Null).await;
    assert!(status < 300, "{status} {gone}");
    eventually("B refuses the peer A removed", || async {
        ilp_status(&b, &token).await == 401
    })
    .await;
}

/// The counters' changes (appended by PostgreSQL's triggers, migration 0016) count at once and fold into the
/// counter rows without changing what a reader sees.
#[test]
fn counter_changes_count_at_once_and_fold_into_their_rows() {
    if postgres().is_none() {
        return;
    }
    use opdesk::store::payments::{counted, fold_counts};
    let store = fresh_store(1);
    let seen = store
        .call_blocking(|c| {
            c.execute_batch(
                "INSERT INTO row_count_deltas (key, d) VALUES ('outgoing:failed', 2), ('outgoing:failed', -1), \
                 ('outgoing:sending', 5)",
            )?;
            let before = (counted(c, "outgoing:failed")?, counted(c, "outgoing:sending")?);
            let folded = fold_counts(c)?;
            let after = (counted(c, "outgoing:failed")?, counted(c, "outgoing:sending")?);
            let left: i64 = c.query_row("SELECT COUNT(*) FROM row_count_deltas", [], |r| r.get(0))?;
            let rows: i64 = c.query_row("SELECT n FROM row_counts WHERE key = 'outgoing:sending'", [], |r| {
                r.get(0)
            })?;
            Ok::<_, opdesk::store::Error>((before, folded, after, left, rows))
        })
        .unwrap();
    assert_eq!(seen, ((1, 5), 2, (1, 5), 0, 5));
    store.close();
}

/// Whether `node` serves wallets, keys and tokens from memory now (its `opdesk_store_caches_trusted`).
async fn trusts_caches(node: &Proc) -> bool {
    let text = reqwest::get(format!("{}/metrics", node.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("opdesk_store_caches_trusted "))
        .unwrap_or_else(|| panic!("no caches gauge in {text}"));
    line.ends_with(" 1")
}

/// An incoming-payment token for `base` (through whichever node) and its grant's id (asked of `node`).
async fn incoming_token(c: &SignedClient, base: &str, node: &Proc) -> (String, String) {
    let token = crate::common::grant_token(c, base, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let (_, grants) = admin(node, Method::GET, "/grants?state=finalized").await;
    let newest = grants
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|g| g["createdAt"].as_str().unwrap_or_default().to_owned())
        .expect("a finalized grant");
    (token, newest["id"].as_str().unwrap().to_owned())
}

/// The status of an incoming payment created for bob with `token`, through whichever node the proxy picks
/// (403: the token is not live; 401: the signature does not verify).
async fn create_status(c: &SignedClient, base: &str, token: &str) -> u16 {
    let r = c
        .send(
            Method::POST,
            &format!("{base}/incoming-payments"),
            Some(token),
            Some(&json!({"walletAddress": format!("{base}/bob")})),
        )
        .await
        .unwrap();
    r.status
}

/// Two nodes with metrics, B hearing the other, and every request routed to B, which has served an
/// incoming-payment token (granted through A) once, so that it holds the token, the client's key and bob in
/// memory: the nodes, the token and its grant's id.
async fn b_caching_a_token() -> (Nodes, String, String) {
    let nodes = Nodes::start("[metrics]\nenabled = true\n").await;
    let (base, c) = (nodes.proxy.url.clone(), client(nodes.dir_a.path()));
    eventually("B hears the other nodes", || trusts_caches(&nodes.b)).await;
    let (token, grant) = incoming_token(&c, &base, &nodes.a).await;
    nodes.proxy.to(TO_B);
    assert_eq!(create_status(&client(nodes.dir_a.path()), &base, &token).await, 201);
    (nodes, token, grant)
}

/// Each node keeps wallets, keys and tokens in memory, and forgets them the moment another node changes them
/// (PostgreSQL `NOTIFY` in the change's transaction): a grant revoked on A is refused on B at once, with B's
/// listener connection up; with it killed (B stops trusting its caches until it hears the others again, and
/// then forgets everything); and a client key removed on A no longer verifies on B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_forget_at_once_what_another_node_changed() {
    if postgres().is_none() {
        return;
    }
    let (Nodes { dir_a, a, b, proxy, .. }, token, grant) = b_caching_a_token().await;
    let base = proxy.url.clone();
    let c = || client(dir_a.path());
    for _ in 0..2 {
        assert_eq!(create_status(&c(), &base, &token).await, 201);
    }
    let (s, _) = admin(&a, Method::POST, &format!("/grants/{grant}/revoke")).await;
    assert_eq!(s, 200);
    assert_eq!(
        create_status(&c(), &base, &token).await,
        403,
        "revoked on A: refused on B at once"
    );

    // B's listener connection killed: B stops trusting its caches at once, and refuses what A revokes
    proxy.to(ALTERNATE);
    let (token, grant) = incoming_token(&c(), &base, &a).await;
    proxy.to(TO_B);
    assert_eq!(create_status(&c(), &base, &token).await, 201);
    let b_pid = b.child.id();
    let url = postgres().unwrap();
    let killed = tokio::task::spawn_blocking(move || {
        let mut pg = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let name = format!("opdesk-listen-{b_pid}");
        pg.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap()
        .len()
    })
    .await
    .unwrap();
    assert!(killed >= 1, "B's listener was found and killed");
    // (B connects again within a second: this checks whichever it is in, deaf or hearing anew)
    let (s, _) = admin(&a, Method::POST, &format!("/grants/{grant}/revoke")).await;
    assert_eq!(s, 200);
    assert_eq!(
        create_status(&c(), &base, &token).await,
        403,
        "revoked on A while B's listener was down"
    );
    eventually("B hears the other nodes again", || trusts_caches(&b)).await;
    assert_eq!(create_status(&c(), &base, &token).await, 403);

    // a key removed on A: B no longer verifies signatures made with it
    proxy.to(ALTERNATE);
    let (token, _) = incoming_token(&c(), &base, &a).await;
    proxy.to(TO_B);
    assert_eq!(create_status(&c(), &base, &token).await, 201);
    remove_demo_client_key(&a, dir_a.path()).await;
    assert_eq!(
        create_status(&c(), &base, &token).await,
        401,
        "a key removed on A no longer verifies on B"
    );
}

/// Resumes a stopped process when dropped (a test that fails must not leave PostgreSQL's backend frozen).
struct Frozen(u32);

impl Frozen {
    fn stop(pid: u32) -> Self {
        let ok = std::process::Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -STOP {pid}");
        Self(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

/// The pids of the backends serving `node`'s listener connections.
async fn listener_backends(node: &Proc) -> Vec<i32> {
    let (pid, url) = (node.child.id(), postgres().unwrap());
    tokio::task::spawn_blocking(move || {
        let mut pg = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let name = format!("opdesk-listen-{pid}");
        pg.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", &[&name])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    })
    .await
    .unwrap()
}

/// A listener connection that dies silently — it looks open and delivers nothing, as when a host vanishes
/// or a network cuts out; here its PostgreSQL backend is frozen with `SIGSTOP` — no longer leaves a node
/// trusting its caches for good: the node stops hearing its own heartbeat, drops what it cached and
/// connects again within seconds, and a client key removed on another node meanwhile (cached with no
/// expiry) stops verifying. (A connection seen to break is noticed at once:
/// `caches_forget_at_once_what_another_node_changed`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_cut_off_silently_is_noticed_within_its_heartbeat_deadline() {
    if postgres().is_none() {
        return;
    }
    let (Nodes { dir_a, a, b, proxy, .. }, token, _) = b_caching_a_token().await;
    let base = proxy.url.clone();
    let c = || client(dir_a.path());

    let backends = listener_backends(&b).await;
    assert_eq!(backends.len(), 1, "{backends:?}");
    let cut_off = backends[0];
    let frozen = Frozen::stop(u32::try_from(cut_off).unwrap());
    let cut = Instant::now();
    remove_demo_client_key(&a, dir_a.path()).await;
    // B's listener hears nothing now: B verifies with the key from memory until it notices
    eventually("B refuses the key removed on A", || async {
        create_status(&c(), &base, &token).await == 401
    })
    .await;
    assert!(
        cut.elapsed() < Duration::from_secs(8),
        "noticed within the heartbeat's deadline: {:?}",
        cut.elapsed()
    );
    assert!(
        listener_backends(&b).await.iter().any(|p| *p != cut_off),
        "B listens on a new connection"
    );
    drop(frozen);
    eventually("B hears the other nodes", || trusts_caches(&b)).await;
    assert_eq!(create_status(&c(), &base, &token).await, 401);
}

/// A store job, boxed.
type StoreJob<T> = Box<dyn FnMut(&mut opdesk::store::db::Connection) -> Result<T, opdesk::store::Error> + Send>;

/// How a job of [`run_as_group`] is sent: plainly, queued behind a row, or to run alone.
#[derive(Clone, Copy)]
enum Lane {
    Plain,
    Queued(&'static str),
    Alone,
}

/// Runs `jobs` closures on `store` while its one connection is held, so that they queue up and the
/// connection takes them as one commit group (each sent by its lane); returns each job's result, in order.
fn run_lanes<T: Send + 'static>(
    store: &opdesk::store::Store,
    jobs: Vec<(Lane, StoreJob<T>)>,
) -> Vec<Result<T, opdesk::store::Error>> {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (started, running) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let holder = store.clone();
        s.spawn(move || {
            holder.call_blocking(move |_| {
                let _ = started.send(());
                let _ = held.recv_timeout(std::time::Duration::from_secs(20));
                Ok::<_, opdesk::store::Error>(())
            })
        });
        running.recv().unwrap();
        let n = jobs.len() as i64;
        let mut handles = Vec::new();
        for (i, (lane, job)) in jobs.into_iter().enumerate() {
            let sender = store.clone();
            handles.push(s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                match lane {
                    Lane::Plain => sender.call_blocking(job),
                    Lane::Queued(key) => rt.block_on(sender.call_queued(key, job)),
                    Lane::Alone => rt.block_on(sender.call_alone(job)),
                }
            }));
            // in this order
            let waited = std::time::Instant::now();
            while store.meters().queue_depth.get() < i as i64 + 1 {
                assert!(
                    waited.elapsed() < std::time::Duration::from_secs(10),
                    "job {i} never queued"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert_eq!(store.meters().queue_depth.get(), n);
        release.send(()).unwrap();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// [`run_lanes`] with every job sent plainly.
fn run_as_group<T: Send + 'static>(
    store: &opdesk::store::Store,
    jobs: Vec<StoreJob<T>>,
) -> Vec<Result<T, opdesk::store::Error>> {
    run_lanes(store, jobs.into_iter().map(|j| (Lane::Plain, j)).collect())
}

/// The jobs waiting for a PostgreSQL connection commit together in one transaction. A job that cannot share
/// it — a statement of it failed (which aborts a PostgreSQL transaction), or it wrote and then gave up —
/// gets its error alone: the group rolls back and every job runs again in a transaction of its own, so each
/// outcome is the one it would have had alone, and nothing of a failed job is kept.
#[test]
fn jobs_waiting_together_commit_as_one_group_and_a_failing_one_fails_alone() {
    if postgres().is_none() {
        return;
    }
    use opdesk::store::{Error, db::params, immediate};
    type Job = StoreJob<i64>;
    let store = fresh_store(1);
    store
        .call_blocking(|c| Ok::<_, Error>(c.execute_batch("CREATE TABLE g (n BIGINT PRIMARY KEY)")?))
        .unwrap();
    // each job inserts its number and answers its transaction's id
    let insert = |n: i64| -> Job {
        Box::new(move |c| {
            let tx = immediate(c)?;
            tx.execute("INSERT INTO g (n) VALUES (?1)", params![n])?;
            let txid: i64 = tx.query_row("SELECT txid_current()", [], |r| r.get(0))?;
            tx.commit()?;
            Ok(txid)
        })
    };
    let clean = run_as_group(&store, (0..12).map(insert).collect());
    let txids: std::collections::BTreeSet<i64> = clean.iter().map(|r| *r.as_ref().unwrap()).collect();
    assert_eq!(
        txids.len(),
        1,
        "twelve jobs waiting together committed in one transaction"
    );
    assert_eq!(store.meters().group_splits.get(), 0);

    let mut jobs: Vec<Job> = (100..112).map(insert).collect();
    // a statement fails (the transaction it runs in is aborted)
    jobs[4] = Box::new(|c| Ok(c.query_row("SELECT n FROM no_such_table", [], |r| r.get(0))?));
    // a job writes, then gives up before committing
    jobs[8] = Box::new(|c| {
        let tx = immediate(c)?;
        tx.execute("INSERT INTO g (n) VALUES (?1)", params![108])?;
        Err(Error::Corrupt("job 8 gives up".into()))
    });
    let split = run_as_group(&store, jobs);
    for (i, r) in split.iter().enumerate() {
        match i {
            4 => assert!(matches!(r, Err(Error::Sql(_))), "job 4: {r:?}"),
            8 => assert!(matches!(r, Err(Error::Corrupt(_))), "job 8: {r:?}"),
            _ => assert!(r.is_ok(), "job {i}: {r:?}"),
        }
    }
    let txids: std::collections::BTreeSet<i64> = split.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
    assert_eq!(txids.len(), 10, "after the split each job committed by itself");
    assert!(store.meters().group_splits.get() >= 1);
    let kept: Vec<i64> = store
        .call_blocking(|c| {
            let mut st = c.prepare("SELECT n FROM g ORDER BY n")?;
            let rows = st.query_map([], |r| r.get(0))?.collect::<Result<Vec<i64>, _>>()?;
            Ok::<_, Error>(rows)
        })
        .unwrap();
    let want: Vec<i64> = (0..12).chain((100..112).filter(|n| *n != 104 && *n != 108)).collect();
    assert_eq!(kept, want, "every job's row once, none of the failed ones'");
    store.close();
}

/// Jobs queued behind one hot row (`Store::call_queued`: the packets through one peer) that wait together
/// run in one transaction, which waited for the row first: every read-modify-write of the row kept, in one
/// commit.
#[test]
fn jobs_queued_behind_one_row_commit_together() {
    if postgres().is_none() {
        return;
    }
    use opdesk::store::{Error, db::params, immediate};
    type Job = StoreJob<i64>;
    let store = fresh_store(1);
    store
        .call_blocking(|c| {
            Ok::<_, Error>(c.execute_batch("CREATE TABLE hot (n BIGINT NOT NULL); INSERT INTO hot VALUES (0)")?)
        })
        .unwrap();
    let bump = || -> Job {
        Box::new(|c| {
            let tx = immediate(c)?;
            let n: i64 = tx.query_row("SELECT n FROM hot", [], |r| r.get(0))?;
            tx.execute("UPDATE hot SET n = ?1", params![n + 1])?;
            let txid: i64 = tx.query_row("SELECT txid_current()", [], |r| r.get(0))?;
            tx.commit()?;
            Ok(txid)
        })
    };
    let done = run_lanes(&store, (0..12).map(|_| (Lane::Queued("hot"), bump())).collect());
    let txids: std::collections::BTreeSet<i64> = done.iter().map(|r| *r.as_ref().unwrap()).collect();
    assert_eq!(txids.len(), 1, "twelve queued jobs committed in one transaction");
    let n: i64 = store
        .call_blocking(|c| Ok::<_, Error>(c.query_row("SELECT n FROM hot", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(n, 12, "every increment kept once");
    assert_eq!(store.meters().group_splits.get(), 0);
    store.close();
}

/// The outbox's sequencer never shares a commit group: a group rolled back because another of its jobs failed
/// would have drawn numbers and lost them, and readers would see a hole (the event stream's test once saw
/// `[9, 10, 12]` for three wallets created in a row).
#[test]
fn the_sequencer_runs_alone_and_numbers_without_holes() {
    if postgres().is_none() {
        return;
    }
    use opdesk::store::{Error, db::params, outbox};
    let store = fresh_store(1);
    let pend = |n: i64| -> StoreJob<Option<usize>> {
        Box::new(move |c| {
            c.execute(
                "INSERT INTO events_pending (id, at, type, payload) VALUES (?1, '2026-11-28T00:00:00.000Z', 't', '{}')",
                params![format!("e{n:03}")],
            )?;
            Ok(None)
        })
    };
    let fails = || -> StoreJob<Option<usize>> {
        Box::new(|c| Ok(c.query_row("SELECT n FROM no_such_table", [], |r| r.get(0))?))
    };
    let sequence = || -> StoreJob<Option<usize>> { Box::new(|c| outbox::sequence(c)) };
    let (_, before) = store.call_blocking(|c| outbox::bounds(c)).unwrap();
    for round in 0..3 {
        store.call_blocking(pend(round)).unwrap();
        // the sequencer waits with a job that fails: the group splits
        let r = run_lanes(&store, vec![(Lane::Alone, sequence()), (Lane::Plain, fails())]);
        assert!(matches!(r[0], Ok(Some(1))), "round {round}: {:?}", r[0]);
        assert!(r[1].is_err());
    }
    let seqs: Vec<i64> = store
        .call_blocking(move |c| {
            let mut st = c.prepare("SELECT seq FROM events WHERE seq > ?1 ORDER BY seq")?;
            let rows = st
                .query_map(params![before], |r| r.get(0))?
                .collect::<Result<Vec<i64>, _>>()?;
            Ok::<_, Error>(rows)
        })
        .unwrap();
    assert_eq!(seqs, vec![before + 1, before + 2, before + 3], "numbered without holes");
    store.close();
}

/// The demo on any node: B, started after A seeded, keeps the same demo-client key in its own data dir (from
/// the database), so `opdesk demo` and the demo client sign from either node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_keeps_the_demo_clients_key() {
    if postgres().is_none() {
        return;
    }
    let nodes = Nodes::start("").await;
    let a_pem = std::fs::read_to_string(nodes.dir_a.path().join("demo-client.pem")).unwrap();
    let b_pem = std::fs::read_to_string(nodes._dir_b.path().join("demo-client.pem")).unwrap();
    assert_eq!(a_pem, b_pem, "one demo-client key for every node");
    let (s, keys) = admin(&nodes.b, Method::GET, "/wallets/demo-client/keys").await;
    assert_eq!(s, 200, "{keys}");
    assert_eq!(
        keys["keys"].as_array().map(Vec::len),
        Some(1),
        "registered once: {keys}"
    );
    nodes.proxy.to(TO_B);
    let c = client(nodes._dir_b.path());
    let (token, _) = incoming_token(&c, &nodes.proxy.url, &nodes.b).await;
    assert_eq!(create_status(&c, &nodes.proxy.url, &token).await, 201);
}
