//! Who may act on whose resources, end to end with signed clients: `complete` is for the creating client or
//! the wallet's owner (a bare or identifier-only grant of another client gets 404 and the payment stays
//! payable), identifier-less reads of another client's incoming payment or quote are 404, `list-all` needs
//! the resource owner's consent and an identifier (after the operator approves it lists every payment),
//! `read-all` stays non-interactive by default for other ASEs, and both follow `[gnap]` settings.

use opdesk::client::SignedClient;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{TestAse, assert_envelope, finish_grant};

fn usd(v: &str) -> Value {
    json!({"value": v, "assetCode": "USD", "assetScale": 2})
}

/// A grant request for `access` by the client at `client_url`, optionally interactive.
async fn grant(ase: &TestAse, c: &SignedClient, client_url: &str, access: Value, interact: bool) -> (u16, Value) {
    let mut body = json!({"access_token": {"access": access}, "client": client_url});
    if interact {
        body["interact"] = json!({"start": ["redirect"],
            "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n1"}});
    }
    let r = c
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    (r.status, r.body)
}

/// A non-interactive grant's access token.
async fn token(ase: &TestAse, c: &SignedClient, client_url: &str, access: Value) -> String {
    let (s, b) = grant(ase, c, client_url, access, false).await;
    assert_eq!(s, 200, "{b}");
    b["access_token"]["value"].as_str().expect("issued at once").to_owned()
}

/// The operator approves the only pending grant; returns its operator view.
async fn approve_pending(ase: &TestAse) -> Value {
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let pending = pending.as_array().unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let id = pending[0]["id"].as_str().unwrap();
    let (s, v) = ase
        .admin(Method::POST, &format!("/grants/{id}/approve"), Some("{}"))
        .await;
    assert_eq!(s, 200, "{v}");
    pending[0].clone()
}

/// A client signing as local wallet `wallet` with a freshly generated key.
async fn wallet_client(ase: &TestAse, wallet: &str) -> SignedClient {
    let (s, k) = ase
        .admin(
            Method::POST,
            &format!("/wallets/{wallet}/keys"),
            Some(r#"{"generate":true}"#),
        )
        .await;
    assert_eq!(s, 201, "{k}");
    SignedClient::new(
        opdesk::httpsig::jwk::from_pkcs8_pem(k["privateKeyPem"].as_str().unwrap()).unwrap(),
        k["jwk"]["kid"].as_str().unwrap(),
    )
}

async fn create_incoming(ase: &TestAse, c: &SignedClient, tok: &str, wallet: &str, amount: Option<Value>) -> Value {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut body = json!({"walletAddress": ase.url(&format!("/{wallet}")), "metadata": {"invoice": n}});
    if let Some(a) = amount {
        body["incomingAmount"] = a;
    }
    let r = c
        .send(Method::POST, &ase.url("/incoming-payments"), Some(tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

async fn complete(c: &SignedClient, payment: &Value, tok: &str) -> (u16, Value) {
    let url = format!("{}/complete", payment["id"].as_str().unwrap());
    let r = c.send(Method::POST, &url, Some(tok), None).await.unwrap();
    (r.status, r.body)
}

/// Pays `receiver` from alice through the local engine (quote + outgoing payment); returns the settled
/// operator view.
async fn pay_from_alice(ase: &TestAse, c: &SignedClient, receiver: &str) -> Value {
    let quo = token(
        ase,
        c,
        &ase.url("/demo-client"),
        json!([{"type": "quote", "actions": ["create"]}]),
    )
    .await;
    let (s, g) = grant(
        ase,
        c,
        &ase.url("/demo-client"),
        json!([{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/alice")}]),
        true,
    )
    .await;
    assert_eq!(s, 200, "{g}");
    approve_pending(ase).await;
    let out = finish_grant(c, &g).await;
    let alice = ase.url("/alice");
    let quote = c
        .send(
            Method::POST,
            &ase.url("/quotes"),
            Some(&quo),
            Some(&json!({"walletAddress": alice, "receiver": receiver, "method": "ilp"})),
        )
        .await
        .unwrap();
    assert_eq!(quote.status, 201, "{}", quote.body);
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": alice, "quoteId": quote.body["id"]})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    ase.wait_outgoing(r.body["id"].as_str().unwrap()).await
}

#[tokio::test]
async fn complete_is_for_the_creating_client_or_the_wallets_owner() {
    let ase = TestAse::spawn().await;
    let demo = ase.demo_client().await;
    let carol = wallet_client(&ase, "carol").await;
    let bob_key = wallet_client(&ase, "bob").await;
    let bob = ase.url("/bob");
    let own = token(
        &ase,
        &demo,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create", "read", "complete"]}]),
    )
    .await;
    let payment = create_incoming(&ase, &demo, &own, "bob", Some(usd("1000"))).await;

    // another client with a bare non-interactive complete grant, and with one naming bob's wallet
    let bare = token(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["complete", "read"]}]),
    )
    .await;
    let named = token(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["complete"], "identifier": bob}]),
    )
    .await;
    for tok in [&bare, &named] {
        let (s, b) = complete(&carol, &payment, tok).await;
        assert_eq!(s, 404, "another client's payment does not exist for it: {b}");
        assert_envelope(&b, "not_found");
    }
    // nor can it read it (identifier-less read of another client's resource)
    let r = carol
        .send(Method::GET, payment["id"].as_str().unwrap(), Some(&bare), None)
        .await
        .unwrap();
    assert_eq!(r.status, 404, "{}", r.body);
    assert_envelope(&r.body, "not_found");

    // the payment stays open: a local payment still pays it in full
    let r = demo
        .send(Method::GET, payment["id"].as_str().unwrap(), Some(&own), None)
        .await
        .unwrap();
    assert_eq!(r.body["completed"], false, "{}", r.body);
    let paid = pay_from_alice(&ase, &demo, payment["id"].as_str().unwrap()).await;
    assert_eq!(paid["state"], "completed", "{paid}");
    let r = demo
        .send(Method::GET, payment["id"].as_str().unwrap(), Some(&own), None)
        .await
        .unwrap();
    assert_eq!(r.body["receivedAmount"]["value"], "1000", "{}", r.body);
    assert_eq!(r.body["completed"], true, "{}", r.body);

    // the creating client completes its own
    let second = create_incoming(&ase, &demo, &own, "bob", None).await;
    let (s, b) = complete(&demo, &second, &own).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["completed"], true);

    // the wallet itself (signing with bob's key) with a grant naming bob completes any of bob's payments
    let third = create_incoming(&ase, &demo, &own, "bob", None).await;
    let bob_tok = token(
        &ase,
        &bob_key,
        &bob,
        json!([{"type": "incoming-payment", "actions": ["complete"], "identifier": bob}]),
    )
    .await;
    let (s, b) = complete(&bob_key, &third, &bob_tok).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["completed"], true);
    // ...but not without naming it, nor another wallet's
    let fourth = create_incoming(&ase, &demo, &own, "bob", None).await;
    let bob_bare = token(
        &ase,
        &bob_key,
        &bob,
        json!([{"type": "incoming-payment", "actions": ["complete"]}]),
    )
    .await;
    assert_eq!(complete(&bob_key, &fourth, &bob_bare).await.0, 404);
    let carols = create_incoming(&ase, &demo, &own, "carol", None).await;
    assert_eq!(complete(&bob_key, &carols, &bob_tok).await.0, 403);

    // a grant naming bob that bob's owner approved (interactive: it asks for list-all) completes any of them
    let (s, g) = grant(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["complete", "list-all"], "identifier": bob}]),
        true,
    )
    .await;
    assert_eq!(s, 200, "{g}");
    let pending = approve_pending(&ase).await;
    let lines = pending["description"].to_string();
    assert!(lines.contains("complete ANY of its incoming payments"), "{lines}");
    let approved = finish_grant(&carol, &g).await;
    let (s, b) = complete(&carol, &fourth, &approved).await;
    assert_eq!(s, 200, "{b}");
}

#[tokio::test]
async fn quotes_of_another_client_are_not_found() {
    let ase = TestAse::spawn().await;
    let demo = ase.demo_client().await;
    let carol = wallet_client(&ase, "carol").await;
    let inc = token(
        &ase,
        &demo,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let payment = create_incoming(&ase, &demo, &inc, "bob", Some(usd("500"))).await;
    let mine = token(
        &ase,
        &demo,
        &ase.url("/demo-client"),
        json!([{"type": "quote", "actions": ["create", "read"]}]),
    )
    .await;
    let quote = demo
        .send(
            Method::POST,
            &ase.url("/quotes"),
            Some(&mine),
            Some(&json!({"walletAddress": ase.url("/alice"), "receiver": payment["id"], "method": "ilp"})),
        )
        .await
        .unwrap();
    assert_eq!(quote.status, 201, "{}", quote.body);
    let url = quote.body["id"].as_str().unwrap();
    assert_eq!(
        demo.send(Method::GET, url, Some(&mine), None).await.unwrap().status,
        200
    );
    let theirs = token(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "quote", "actions": ["read"]}]),
    )
    .await;
    let r = carol.send(Method::GET, url, Some(&theirs), None).await.unwrap();
    assert_eq!(r.status, 404, "{}", r.body);
    assert_envelope(&r.body, "not_found");
}

#[tokio::test]
async fn list_all_needs_the_owner_and_read_all_does_not_by_default() {
    let ase = TestAse::spawn().await;
    let demo = ase.demo_client().await;
    let carol = wallet_client(&ase, "carol").await;
    let bob = ase.url("/bob");
    let inc = token(
        &ase,
        &demo,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let first = create_incoming(&ase, &demo, &inc, "bob", None).await;
    create_incoming(&ase, &demo, &inc, "bob", None).await;

    // list-all without naming the wallet: refused
    let (s, b) = grant(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["list-all"]}]),
        true,
    )
    .await;
    assert_eq!(s, 400, "{b}");
    assert_envelope(&b, "invalid_request");
    assert!(
        b["error"]["description"]
            .as_str()
            .unwrap()
            .contains("access identifier required"),
        "{b}"
    );
    // naming it but without interaction: it needs interaction, no token
    let access = json!([{"type": "incoming-payment", "actions": ["list-all"], "identifier": bob}]);
    let (s, b) = grant(&ase, &carol, &ase.url("/carol"), access.clone(), false).await;
    assert_eq!(s, 400, "{b}");
    assert!(b.get("access_token").is_none(), "{b}");
    assert!(b["error"]["description"].as_str().unwrap().contains("interact"), "{b}");
    // with interaction: pending until the operator approves; then it lists every payment of bob
    let (s, g) = grant(&ase, &carol, &ase.url("/carol"), access, true).await;
    assert_eq!(s, 200, "{g}");
    assert!(g.get("access_token").is_none(), "{g}");
    assert!(g["interact"]["redirect"].is_string(), "{g}");
    let pending = approve_pending(&ase).await;
    assert!(
        pending["description"]
            .to_string()
            .contains("list EVERY incoming payment"),
        "{pending}"
    );
    let tok = finish_grant(&carol, &g).await;
    let list = format!("{}?wallet-address={bob}", ase.url("/incoming-payments"));
    let r = carol.send(Method::GET, &list, Some(&tok), None).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["result"].as_array().unwrap().len(), 2, "{}", r.body);

    // read-all stays non-interactive (other ASEs look receivers up with it), identifier or not
    let read_all = token(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["read-all"]}]),
    )
    .await;
    let r = carol
        .send(Method::GET, first["id"].as_str().unwrap(), Some(&read_all), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn consent_for_list_all_and_read_all_follows_the_settings() {
    let ase = TestAse::spawn_with("[gnap]\nlist_all_interaction = false\nread_all_interaction = true\n").await;
    let carol = wallet_client(&ase, "carol").await;
    let bob = ase.url("/bob");
    // list-all is issued at once
    token(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["list-all"]}]),
    )
    .await;
    // read-all needs the wallet named and interaction
    let (s, b) = grant(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["read-all"]}]),
        true,
    )
    .await;
    assert_eq!(s, 400, "{b}");
    assert!(
        b["error"]["description"]
            .as_str()
            .unwrap()
            .contains("access identifier required"),
        "{b}"
    );
    let access = json!([{"type": "incoming-payment", "actions": ["read-all"], "identifier": bob}]);
    let (s, b) = grant(&ase, &carol, &ase.url("/carol"), access.clone(), false).await;
    assert_eq!(s, 400, "{b}");
    assert!(b.get("access_token").is_none(), "{b}");
    let (s, g) = grant(&ase, &carol, &ase.url("/carol"), access, true).await;
    assert_eq!(s, 200, "{g}");
    assert!(
        g.get("access_token").is_none() && g["interact"]["redirect"].is_string(),
        "{g}"
    );
    let pending = approve_pending(&ase).await;
    assert!(
        pending["description"]
            .to_string()
            .contains("read ANY of its incoming payments"),
        "{pending}"
    );
    // quotes have no identifier: read-all on them just needs interaction
    let (s, g) = grant(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "quote", "actions": ["read-all"]}]),
        true,
    )
    .await;
    assert_eq!(s, 200, "{g}");
    assert!(g.get("access_token").is_none(), "{g}");
}
