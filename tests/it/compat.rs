//! What real clients (the Web Monetization extension) match on: each case answers the reference ASE's exact
//! status and description (docs/COMPATIBILITY.md names the test of each row), over real HTTP with real
//! signatures; opdesk's own wording travels in `details`.

use std::time::Duration;

use opdesk::client::SignedClient;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::TestAse;

const AUTO: &str = "[gnap]\nauto_approve = true\n";

fn usd(v: &str) -> Value {
    json!({"value": v, "assetCode": "USD", "assetScale": 2})
}

/// Asserts status and the exact description; returns `details`.
fn assert_error(r: &opdesk::client::Response, status: u16, description: &str) -> Value {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.body["error"]["description"], description, "{}", r.body);
    r.body["error"]["details"].clone()
}

async fn grant(ase: &TestAse, c: &SignedClient, access: Value) -> String {
    crate::common::grant_token(c, &ase.base, access).await
}

/// The answer to an interactive outgoing-payment grant request for alice with `limits`.
async fn outgoing_grant(ase: &TestAse, c: &SignedClient, limits: Value) -> Value {
    let body = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/alice"), "limits": limits}]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}},
    });
    let r = c
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// An outgoing-payment grant for alice with `limits`, approved automatically (`[gnap] auto_approve`).
async fn outgoing_token(ase: &TestAse, c: &SignedClient, limits: Value) -> String {
    let grant = outgoing_grant(ase, c, limits).await;
    crate::common::finish_grant(c, &grant).await
}

async fn incoming(ase: &TestAse, c: &SignedClient, wallet: &str, extra: Value) -> String {
    let tok = grant(ase, c, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let mut body = json!({"walletAddress": ase.url(&format!("/{wallet}"))});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let r = c
        .send(Method::POST, &ase.url("/incoming-payments"), Some(&tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_expired_token_is_inactive_token() {
    let ase = TestAse::spawn_with("[gnap]\nauto_approve = true\naccess_token_expires_in_secs = 1\n").await;
    let c = ase.demo_client().await;
    let tok = grant(&ase, &c, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let body = json!({"walletAddress": ase.url("/bob")});
    let r = c
        .send(Method::POST, &ase.url("/incoming-payments"), Some(&tok), Some(&body))
        .await
        .unwrap();
    let details = assert_error(&r, 403, "Inactive Token");
    assert!(details["reason"].as_str().unwrap().contains("expired"), "{details}");
    // an unknown token is the same
    let r = c
        .send(
            Method::POST,
            &ase.url("/incoming-payments"),
            Some("no-such-token"),
            Some(&body),
        )
        .await
        .unwrap();
    assert_error(&r, 403, "Inactive Token");
}

#[tokio::test]
async fn access_the_token_lacks_is_insufficient_grant() {
    let ase = TestAse::spawn_with(AUTO).await;
    let c = ase.demo_client().await;
    let tok = grant(&ase, &c, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let r = c
        .send(
            Method::GET,
            &format!("{}?wallet-address={}", ase.url("/incoming-payments"), ase.url("/bob")),
            Some(&tok),
            None,
        )
        .await
        .unwrap();
    let details = assert_error(&r, 403, "Insufficient Grant");
    assert!(
        details["reason"].as_str().unwrap().contains("incoming-payment"),
        "{details}"
    );
}

#[tokio::test]
async fn a_key_not_in_the_clients_keys_is_a_signature_validation_error_at_the_rs_and_400_at_the_as() {
    let ase = TestAse::spawn_with(AUTO).await;
    let c = ase.demo_client().await;
    let tok = grant(&ase, &c, json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let stranger = SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), "removed-key");
    let body = json!({"walletAddress": ase.url("/bob")});
    let r = stranger
        .send(Method::POST, &ase.url("/incoming-payments"), Some(&tok), Some(&body))
        .await
        .unwrap();
    let details = assert_error(
        &r,
        401,
        "Signature validation error: could not find key in list of client keys",
    );
    assert!(details["reason"].as_str().unwrap().contains("removed-key"), "{details}");
    // the AS: 400 invalid_client
    let grant_body = json!({"access_token": {"access": [{"type": "quote", "actions": ["create"]}]}, "client": ase.url("/demo-client")});
    let r = stranger
        .send(Method::POST, &ase.url("/auth"), None, Some(&grant_body))
        .await
        .unwrap();
    assert_error(&r, 400, "could not determine client");
    assert_eq!(r.body["error"]["code"], "invalid_client");
    // a found key whose signature fails: 401 invalid_client (not taken as a removed key)
    let kid = c.keyid().to_owned();
    let impostor = SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), &kid);
    let r = impostor
        .send(Method::POST, &ase.url("/auth"), None, Some(&grant_body))
        .await
        .unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "invalid_client");
    // at the RS any other signature failure keeps the prefix
    let r = impostor
        .send(Method::POST, &ase.url("/incoming-payments"), Some(&tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(
        r.body["error"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Signature validation error: "),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn a_payment_over_the_grants_limit_is_unauthorized() {
    let ase = TestAse::spawn_with(AUTO).await;
    let c = ase.demo_client().await;
    let out = outgoing_token(&ase, &c, json!({"debitAmount": usd("5")})).await;
    let ip = incoming(&ase, &c, "bob", json!({})).await;
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": ase.url("/alice"), "incomingPayment": ip, "debitAmount": usd("100")})),
        )
        .await
        .unwrap();
    let details = assert_error(&r, 403, "unauthorized");
    assert!(details["reason"].as_str().unwrap().contains("debitAmount"), "{details}");
    // another receiver than the grant's: the same answer
    let other = incoming(&ase, &c, "bob", json!({})).await;
    let out = outgoing_token(&ase, &c, json!({"receiver": ip})).await;
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": ase.url("/alice"), "incomingPayment": other, "debitAmount": usd("1")})),
        )
        .await
        .unwrap();
    assert_error(&r, 403, "unauthorized");
}

#[tokio::test]
async fn a_one_cent_cross_currency_quote_is_non_positive_receive_amount_with_an_exact_min_send_amount() {
    let ase = TestAse::spawn_with(AUTO).await;
    let c = ase.demo_client().await;
    let quo = grant(&ase, &c, json!([{"type": "quote", "actions": ["create"]}])).await;
    let carol = incoming(&ase, &c, "carol", json!({})).await;
    let quote = |debit: String| {
        let (c, quo, url, alice, carol) = (
            c.clone(),
            quo.clone(),
            ase.url("/quotes"),
            ase.url("/alice"),
            carol.clone(),
        );
        async move {
            let body = json!({"walletAddress": alice, "receiver": carol, "method": "ilp", "debitAmount": usd(&debit)});
            c.send(Method::POST, &url, Some(&quo), Some(&body)).await.unwrap()
        }
    };
    let r = quote("1".into()).await;
    let details = assert_error(&r, 400, "non-positive receive amount");
    let min = &details["minSendAmount"];
    assert_eq!(
        (min["assetCode"].clone(), min["assetScale"].clone()),
        (json!("USD"), json!(2)),
        "{details}"
    );
    let v: u64 = min["value"].as_str().unwrap().parse().unwrap();
    assert!(v > 1, "{details}");
    let r = quote(v.to_string()).await;
    assert_eq!(r.status, 201, "exactly minSendAmount delivers: {}", r.body);
    let r = quote((v - 1).to_string()).await;
    assert_error(&r, 400, "non-positive receive amount");
    // the same too-small debit in an outgoing payment from the incoming payment
    let out = outgoing_token(&ase, &c, json!({"debitAmount": usd("500")})).await;
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": ase.url("/alice"), "incomingPayment": carol, "debitAmount": usd("1")})),
        )
        .await
        .unwrap();
    assert_error(&r, 400, "negative receive amount");
}

#[tokio::test]
async fn unknown_and_expired_receivers_are_invalid_receiver() {
    let ase = TestAse::spawn_with(AUTO).await;
    let c = ase.demo_client().await;
    let quo = grant(&ase, &c, json!([{"type": "quote", "actions": ["create"]}])).await;
    let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(1);
    let expiring = incoming(
        &ase,
        &c,
        "bob",
        json!({"expiresAt": soon.format(&time::format_description::well_known::Rfc3339).unwrap()}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let unknown = ase.url("/incoming-payments/0190b8a4-5b47-7c8a-9d2e-1234567890ab");
    for (receiver, why) in [(unknown, "unknown"), (expiring.clone(), "expired")] {
        let body = json!({"walletAddress": ase.url("/alice"), "receiver": receiver, "method": "ilp", "debitAmount": usd("100")});
        let r = c
            .send(Method::POST, &ase.url("/quotes"), Some(&quo), Some(&body))
            .await
            .unwrap();
        let details = assert_error(&r, 400, "invalid receiver");
        assert!(details["reason"].as_str().unwrap().contains(why), "{details}");
        assert_eq!(r.body["error"]["code"], "invalid_receiver");
    }
    let out = outgoing_token(&ase, &c, json!({"debitAmount": usd("500")})).await;
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": ase.url("/alice"), "incomingPayment": expiring, "debitAmount": usd("100")})),
        )
        .await
        .unwrap();
    assert_error(&r, 400, "invalid receiver");
}

/// `quoteId` as clients write it: the reference ASE takes the last path segment, and its Bruno collection
/// builds the URL from the sender's wallet address. Unknown ids and other origins answer 400 `unknown quote`;
/// a quote that cannot be paid, 400 `invalid quote` with the reason in `details`.
#[tokio::test]
async fn a_quote_id_is_read_from_its_last_path_segment() {
    let ase = TestAse::spawn_with(AUTO).await;
    let c = ase.demo_client().await;
    let quo = grant(&ase, &c, json!([{"type": "quote", "actions": ["create"]}])).await;
    let out = outgoing_token(&ase, &c, json!({})).await;
    let quote = || async {
        let ip = incoming(&ase, &c, "bob", json!({})).await;
        let body =
            json!({"walletAddress": ase.url("/alice"), "receiver": ip, "method": "ilp", "debitAmount": usd("100")});
        let r = c
            .send(Method::POST, &ase.url("/quotes"), Some(&quo), Some(&body))
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    };
    let pay = |quote_id: String| {
        let (c, out, url, alice) = (c.clone(), out.clone(), ase.url("/outgoing-payments"), ase.url("/alice"));
        async move {
            c.send(
                Method::POST,
                &url,
                Some(&out),
                Some(&json!({"walletAddress": alice, "quoteId": quote_id})),
            )
            .await
            .unwrap()
        }
    };
    let id_of = |url: &str| url.rsplit('/').next().unwrap().to_owned();
    // the wallet's form, with a trailing slash
    let first = quote().await;
    let r = pay(format!("{}/quotes/{}/", ase.url("/alice"), id_of(&first))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.body["quoteId"],
        first.as_str(),
        "the answer names the quote as it is named"
    );
    // paid once: a second time is an invalid quote
    let details = assert_error(&pay(first.clone()).await, 400, "invalid quote");
    assert!(
        details["reason"].as_str().unwrap().contains("already used"),
        "{details}"
    );
    let second = quote().await;
    for bad in [
        format!("http://127.0.0.2:9/quotes/{}", id_of(&second)),
        format!("{second}?x=1"),
        format!("{}/quotes/{}", ase.url("/alice"), opdesk::ids::new_id()),
        format!("{}/incoming-payments/{}", ase.url(""), id_of(&second)),
        id_of(&second),
    ] {
        let r = pay(bad.clone()).await;
        assert_error(&r, 400, "unknown quote");
        assert_eq!(r.body["error"]["code"], "invalid_quote", "{bad}");
    }
    let r = pay(second).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

/// A grant response's access token value and management URL.
async fn managed_token(ase: &TestAse, c: &SignedClient) -> (String, String) {
    let body = json!({"access_token": {"access": [{"type": "quote", "actions": ["create"]}]}, "client": ase.url("/demo-client")});
    let r = c
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let t = &r.body["access_token"];
    (
        t["value"].as_str().unwrap().to_owned(),
        t["manage"].as_str().unwrap().to_owned(),
    )
}

/// Rotation and revocation find the token by its management URL, as the reference ASE does (its Bruno
/// collection revokes without an `Authorization` header); the signature is always checked against the grant's
/// client key, and a key that is not the client's is 401 `invalid_client` (the spec lists no 400 there).
#[tokio::test]
async fn token_management_goes_by_the_management_url_and_the_clients_signature() {
    let ase = TestAse::spawn_with(AUTO).await;
    let c = ase.demo_client().await;
    let stranger = SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), "not-the-clients");
    let (value, manage) = managed_token(&ase, &c).await;
    // a foreign key, with or without the token: 401 invalid_client, and the token lives on
    for token in [None, Some(value.as_str())] {
        for method in [Method::POST, Method::DELETE] {
            let r = stranger.send(method.clone(), &manage, token, None).await.unwrap();
            assert_eq!(r.status, 401, "{method} {token:?}: {}", r.body);
            assert_eq!(r.body["error"]["code"], "invalid_client", "{}", r.body);
        }
    }
    // another token in the header than the one the URL names: refused
    let (other, _) = managed_token(&ase, &c).await;
    let r = c.send(Method::POST, &manage, Some(&other), None).await.unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    // the client's signature and no header: rotated
    let r = c.send(Method::POST, &manage, None, None).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let rotated = &r.body["access_token"];
    assert_ne!(rotated["value"], value.as_str());
    let new_manage = rotated["manage"].as_str().unwrap().to_owned();
    // the old token cannot be rotated again (revoking it again is idempotent, as everywhere)
    let r = c.send(Method::POST, &manage, None, None).await.unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "invalid_client", "{}", r.body);
    // revoked by its URL alone, then gone
    let r = c.send(Method::DELETE, &new_manage, None, None).await.unwrap();
    assert_eq!(r.status, 204, "{}", r.body);
    let quote =
        json!({"walletAddress": ase.url("/alice"), "receiver": ase.url("/incoming-payments/x"), "method": "ilp"});
    let r = c
        .send(
            Method::POST,
            &ase.url("/quotes"),
            rotated["value"].as_str(),
            Some(&quote),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 403, "a revoked token is refused: {}", r.body);
}

/// Cancelling a grant with a key that is not the client's is 401 `invalid_client`; the client's own cancel
/// still works.
#[tokio::test]
async fn a_grant_cancel_signed_with_a_foreign_key_is_401() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let grant = outgoing_grant(&ase, &c, json!({})).await;
    let uri = grant["continue"]["uri"].as_str().unwrap().to_owned();
    let token = grant["continue"]["access_token"]["value"].as_str().unwrap().to_owned();
    let stranger = SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), "not-the-clients");
    let r = stranger.send(Method::DELETE, &uri, Some(&token), None).await.unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "invalid_client");
    let r = c.send(Method::DELETE, &uri, Some(&token), None).await.unwrap();
    assert_eq!(r.status, 204, "{}", r.body);
}
