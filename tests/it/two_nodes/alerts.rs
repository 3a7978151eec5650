//! Two nodes under load, as an operator watches them: a wallet's threshold crossed by payments streaming
//! through both nodes at once fires once, and concurrent grants and payments through both nodes all succeed
//! without a single `ERROR` line in either node's log at its default level. PostgreSQL only.

use super::*;

/// Every durable event `node` has, replayed from the start of its outbox (until none comes for 3 s; at most
/// 20 000).
async fn all_events(node: &Proc) -> Vec<Value> {
    let mut stream = crate::events::Stream::open(&node.base, &node.admin_token, "", Some(0)).await;
    let mut out = Vec::new();
    while out.len() < 20_000 {
        let Some(m) = stream.next(Duration::from_secs(3)).await else {
            break;
        };
        if let Ok(v) = serde_json::from_str::<Value>(&m.data) {
            out.push(v);
        }
    }
    out
}

/// `n` incoming payments for bob, created through whichever node the proxy picks.
async fn receivers(c: &SignedClient, base: &str, n: usize) -> Vec<String> {
    let inc = crate::common::grant_token(c, base, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let mut out = Vec::new();
    for _ in 0..n {
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
        out.push(r.body["id"].as_str().unwrap().to_owned());
    }
    out
}

/// Payments of 100 from alice, each on a connection of its own (so through both nodes), all at once, each
/// with metadata of its own (the same request again would be a replay); the status each creation was
/// answered.
async fn pay_concurrently(dir: &Path, base: &str, token: &str, to: &[String], n: usize) -> Vec<u16> {
    let mut tasks = Vec::new();
    for i in 0..n {
        let (c, token, url) = (client(dir), token.to_owned(), format!("{base}/outgoing-payments"));
        let body = json!({"walletAddress": format!("{base}/alice"), "incomingPayment": to[i % to.len()],
            "debitAmount": usd("100"), "metadata": {"n": opdesk::ids::new_id()}});
        tasks.push(tokio::spawn(async move {
            c.send(Method::POST, &url, Some(&token), Some(&body))
                .await
                .map(|r| r.status)
                .unwrap_or(0)
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    statuses
}

/// Payments through both nodes at once take alice under her threshold: one node's transaction flips the
/// crossed flag (SERIALIZABLE, guarded by its value) and appends the one `walletBalanceLow`; the other's
/// finds it flipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threshold_crossed_by_payments_on_both_nodes_fires_once() {
    if postgres().is_none() {
        return;
    }
    let Nodes { dir_a, a, b, proxy, .. } = Nodes::start("[gnap]\nauto_approve = true\n").await;
    let base = proxy.url.clone();
    let start = balance_of(&a.admin("/balances").await, "alice");
    assert!(start >= 3000, "alice is seeded with enough: {start}");
    let threshold = start - 1050;
    let body = json!({"measure": "walletBalance", "subject": "alice", "threshold": threshold.to_string()});
    let (s, set) = admin_with(&a, Method::PUT, "/thresholds", &body).await;
    assert_eq!(s, 200, "{set}");
    let c = client(dir_a.path());
    let to = receivers(&c, &base, 4).await;
    let out = crate::common::auto_approved_outgoing_token(&c, &base, "alice").await;
    let statuses = pay_concurrently(dir_a.path(), &base, &out, &to, 20).await;
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let items = b
        .wait_payments_ended(Duration::from_secs(60), "the payments did not end")
        .await;
    assert!(items.iter().all(|p| p["state"] == "completed"), "{items:?}");
    assert_eq!(items.len(), 20);

    let events = all_events(&b).await;
    let low: Vec<Value> = events
        .into_iter()
        .filter(|r| r["event"]["type"] == "walletBalanceLow")
        .collect();
    assert_eq!(low.len(), 1, "one crossing, one event across both nodes: {low:?}");
    let balance = low[0]["event"]["balance"].as_i64().unwrap();
    assert!(balance < threshold && balance >= threshold - 100, "{low:?}");
    let (_, listed) = admin_with(&b, Method::GET, "/thresholds", &Value::Null).await;
    assert_eq!(listed[0]["crossed"], true, "{listed}");
    assert_eq!(listed[0]["value"], start - 2000, "{listed}");
}

/// Grants (non-interactive, and interactive ones approved by policy and continued) and payments, all at once
/// through both nodes, with each node logging to stderr at its default level: every request succeeds, every
/// payment completes, and neither node logs an `ERROR` line (serialization conflicts are retried and logged at
/// debug).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_grants_and_payments_on_two_nodes_log_no_error() {
    if postgres().is_none() {
        return;
    }
    let nodes = Nodes::start_with("[gnap]\nauto_approve = true\n", true).await;
    let (dir, base) = (nodes.dir_a.path().to_owned(), nodes.proxy.url.clone());
    let to = receivers(&client(&dir), &base, 4).await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (dir, base, to) = (dir.clone(), base.clone(), to.clone());
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                // a grant of each kind, and an incoming payment with the first
                let c = client(&dir);
                let inc = receivers(&c, &base, 1).await;
                let out = crate::common::auto_approved_outgoing_token(&c, &base, "alice").await;
                (inc.len(), pay_concurrently(&dir, &base, &out, &to, 2).await)
            } else {
                let out = crate::common::auto_approved_outgoing_token(&client(&dir), &base, "alice").await;
                (0, pay_concurrently(&dir, &base, &out, &to, 3).await)
            }
        }));
    }
    let mut payments = 0;
    for t in tasks {
        let (_, statuses) = t.await.unwrap();
        assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
        payments += statuses.len();
    }
    assert_eq!(payments, 20);
    let items = nodes
        .b
        .wait_payments_ended(Duration::from_secs(60), "the payments did not end")
        .await;
    assert!(items.iter().all(|p| p["state"] == "completed"), "{items:?}");
    nodes.b.assert_balanced().await;

    let Nodes {
        dir_a, _dir_b, a, b, ..
    } = nodes;
    drop((a, b));
    for (node, dir) in [("A", dir_a.path()), ("B", _dir_b.path())] {
        let log = std::fs::read_to_string(dir.join("stderr.log")).unwrap();
        assert!(log.lines().count() > 0, "node {node} logged at its default level");
        let errors: Vec<&str> = log.lines().filter(|l| l.contains("ERROR")).collect();
        assert!(errors.is_empty(), "node {node} logged errors:\n{}", errors.join("\n"));
    }
}
