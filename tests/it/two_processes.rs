//! Two `opdesk serve` processes with separate data dirs, peered both ways on loopback: alice@A gets a grant,
//! quotes bob@B's incoming payment (A resolves it as an Open Payments client and probes the rate over STREAM),
//! and pays it; B shows the incoming payment completed, and both ledgers balance.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;

use crate::common::Proc;

fn config(me: &str, other: &str, other_port: u16, incoming: &str, outgoing: &str) -> String {
    format!(
        "[gnap]\nauto_approve = true\n\n[ilp]\naddress = \"test.{me}\"\n\n[[ilp.peers]]\nname = \"{other}\"\n\
         incoming_tokens = [\"{incoming}\"]\noutgoing_endpoint = \"http://127.0.0.1:{other_port}/ilp\"\n\
         outgoing_token = \"{outgoing}\"\nroutes = [\"test.{other}\"]\nmax_packet_amount = 700\n\
         asset_code = \"USD\"\nasset_scale = 2\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_at_a_pays_bob_at_b_across_two_processes() {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (pa, pb) = (free(), free());
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(
        da.path().join("config.toml"),
        config("desk-a", "desk-b", pb, "b-to-a", "a-to-b"),
    )
    .unwrap();
    std::fs::write(
        db.path().join("config.toml"),
        config("desk-b", "desk-a", pa, "a-to-b", "b-to-a"),
    )
    .unwrap();
    let a = Proc::start(da.path(), pa).await;
    let b = Proc::start(db.path(), pb).await;

    // bob@B: an incoming payment for 25.00
    let cb = b.demo_client(db.path()).await;
    let g = cb
        .send(
            Method::POST,
            &format!("{}/auth", b.base),
            None,
            Some(&json!({"access_token": {"access": [{"type": "incoming-payment", "actions": ["create", "read"]}]}, "client": format!("{}/demo-client", b.base)})),
        )
        .await
        .unwrap();
    let inc = g.body["access_token"]["value"].as_str().unwrap().to_owned();
    let ip = cb
        .send(
            Method::POST,
            &format!("{}/incoming-payments", b.base),
            Some(&inc),
            Some(&json!({"walletAddress": format!("{}/bob", b.base), "incomingAmount": {"value": "2500", "assetCode": "USD", "assetScale": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(ip.status, 201, "{}", ip.body);
    let receiver = ip.body["id"].as_str().unwrap().to_owned();

    // alice@A: a quote grant, an outgoing grant (auto-approved on A), a quote for bob@B, the payment
    let ca = a.demo_client(da.path()).await;
    let client_a = format!("{}/demo-client", a.base);
    let q = ca
        .send(
            Method::POST,
            &format!("{}/auth", a.base),
            None,
            Some(&json!({"access_token": {"access": [{"type": "quote", "actions": ["create"]}]}, "client": client_a})),
        )
        .await
        .unwrap();
    let quote_token = q.body["access_token"]["value"].as_str().unwrap().to_owned();
    let r = ca
        .send(
            Method::POST,
            &format!("{}/auth", a.base),
            None,
            Some(&json!({
                "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": format!("{}/alice", a.base)}]},
                "client": client_a,
                "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}},
            })),
        )
        .await
        .unwrap();
    let out = crate::common::finish_grant(&ca, &r.body).await;
    let quote = ca
        .send(
            Method::POST,
            &format!("{}/quotes", a.base),
            Some(&quote_token),
            Some(&json!({"walletAddress": format!("{}/alice", a.base), "receiver": receiver, "method": "ilp"})),
        )
        .await
        .unwrap();
    assert_eq!(quote.status, 201, "{}", quote.body);
    assert_eq!(quote.body["receiveAmount"]["value"], "2500");
    let p = ca
        .send(
            Method::POST,
            &format!("{}/outgoing-payments", a.base),
            Some(&out),
            Some(&json!({"walletAddress": format!("{}/alice", a.base), "quoteId": quote.body["id"]})),
        )
        .await
        .unwrap();
    assert_eq!(p.status, 201, "{}", p.body);
    let id = p.body["id"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();

    // A's payment completes; B's incoming payment is completed with exactly 25.00
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let v = a.admin(&format!("/outgoing-payments/{id}")).await;
        if matches!(v["state"].as_str(), Some("completed" | "failed")) {
            break v;
        }
        assert!(Instant::now() < deadline, "the payment did not finish: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["state"], "completed", "{done}");
    let rid = receiver.rsplit('/').next().unwrap();
    let on_b = b.admin(&format!("/incoming-payments/{rid}")).await;
    assert_eq!(on_b["state"], "completed", "{on_b}");
    assert_eq!(on_b["receivedAmount"]["value"], "2500");
    let bal_a = a.assert_balanced().await;
    let bal_b = b.assert_balanced().await;
    let wallet = |bs: &serde_json::Value, w: &str| {
        bs.as_array().unwrap().iter().find(|b| b["wallet"] == w).unwrap()["balance"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(wallet(&bal_b, "bob"), 50_000 + 2500);
    assert!(
        wallet(&bal_a, "alice") <= 100_000 - 2500,
        "alice paid at least what bob got (plus any fee)"
    );
}
