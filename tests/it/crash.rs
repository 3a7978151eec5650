//! Crash safety: `opdesk serve` as a child process is killed with SIGKILL while payments are in flight,
//! restarted on the same data dir, and left to finish. Afterwards every payment is completed or failed,
//! every asset balances to zero, no payment holds money, and what left alice equals what reached bob.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{Proc, auto_approved_outgoing_token, balance_of, grant_token};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_flight_loses_and_doubles_nothing() {
    opdesk::egress::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[gnap]\nauto_approve = true\n[engine]\npreset = \"custom\"\npackets_per_payment = 10\npacket_interval_ms = 40\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Proc::start(dir.path(), port).await;
    let base = server.base.clone();
    let before = server.admin("/balances").await;

    // a client with tokens for incoming payments and for alice's outgoing payments
    let key =
        opdesk::httpsig::jwk::from_pkcs8_pem(&std::fs::read_to_string(dir.path().join("demo-client.pem")).unwrap())
            .unwrap();
    let jwks: Value = reqwest::get(format!("{base}/demo-client/jwks.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let c = opdesk::client::SignedClient::new(key, jwks["keys"][0]["kid"].as_str().unwrap());
    let inc = grant_token(&c, &base, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let out = auto_approved_outgoing_token(&c, &base, "alice").await;

    let mut receivers = Vec::new();
    for n in 0..5 {
        let r = c
            .send(
                Method::POST,
                &format!("{base}/incoming-payments"),
                Some(&inc),
                Some(&json!({"walletAddress": format!("{base}/bob"), "metadata": {"n": n}})),
            )
            .await
            .unwrap();
        receivers.push(r.body["id"].as_str().unwrap().to_owned());
    }
    // many payments, then SIGKILL while they stream
    let mut tasks = Vec::new();
    for n in 0..30u64 {
        let (c, out, url, body) = (
            c.clone(),
            out.clone(),
            format!("{base}/outgoing-payments"),
            json!({"walletAddress": format!("{base}/alice"), "incomingPayment": receivers[(n % 5) as usize], "debitAmount": {"value": (100 + n * 7).to_string(), "assetCode": "USD", "assetScale": 2}, "metadata": {"n": n}}),
        );
        tasks.push(tokio::spawn(async move {
            c.send(Method::POST, &url, Some(&out), Some(&body)).await
        }));
    }
    // wait until money is actually streaming, then kill
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let sending = server.admin("/outgoing-payments?state=sending&first=500").await;
        let streaming = sending["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["sentAmount"]["value"] != "0");
        if streaming {
            break;
        }
        assert!(Instant::now() < deadline, "no payment started streaming");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    for t in tasks {
        let _ = t.await;
    }

    // restart on the same data dir: the engine resumes what was committed
    drop(server);
    let server = Proc::start(dir.path(), port).await;
    let items = server
        .wait_payments_ended(Duration::from_secs(30), "payments did not finish after the restart")
        .await;
    let after = server.admin("/balances").await;
    let mut sums = std::collections::HashMap::<String, i64>::new();
    for b in after.as_array().unwrap() {
        *sums.entry(b["assetCode"].as_str().unwrap().to_owned()).or_default() += b["balance"].as_i64().unwrap();
        assert_eq!(b["pendingDebits"], 0, "no reservation outlives its payment: {b}");
        if b["kind"] == "payment" {
            assert_eq!(b["balance"], 0, "{b}");
        }
    }
    assert!(sums.values().all(|v| *v == 0), "{sums:?}");
    let left_alice = balance_of(&before, "alice") - balance_of(&after, "alice");
    let reached_bob = balance_of(&after, "bob") - balance_of(&before, "bob");
    let sent: i64 = items
        .iter()
        .map(|p| p["sentAmount"]["value"].as_str().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(
        left_alice, reached_bob,
        "same asset, no fees: what left alice reached bob"
    );
    assert_eq!(left_alice, sent);
}
