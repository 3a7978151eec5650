//! Resource server end to end with the project's own signed client: every endpoint's happy path validated
//! against the spec's schemas, every error status, read vs read-all visibility, quotes and their expiry,
//! outgoing payments with reservations and grant limits (including 20 concurrent creates against a limit
//! that allows exactly 5), and keyset pagination in both directions.

use std::time::Duration;

use opdesk::client::SignedClient;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{
    TestAse, assert_closed_matches, assert_envelope, assert_list_matches, assert_matches_pointer, assert_matches_schema,
};

const RS: &str = "resource-server.yaml";

fn ok_schema(path: &str, method: &str, status: u16) -> String {
    format!(
        "/paths/{}/{method}/responses/{status}/content/application~1json/schema",
        path.replace('/', "~1").replace('{', "%7B").replace('}', "%7D")
    )
}

/// A non-interactive grant for `access`; returns the access token.
async fn token(ase: &TestAse, client: &SignedClient, client_url: &str, access: Value) -> String {
    let body = json!({"access_token": {"access": access}, "client": client_url});
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["access_token"]["value"].as_str().unwrap().to_owned()
}

/// An outgoing-payment grant approved by the operator; returns the access token.
async fn outgoing_token(ase: &TestAse, client: &SignedClient, wallet: &str, limits: Option<Value>) -> String {
    let mut item = json!({"type": "outgoing-payment", "actions": ["create", "read", "list"], "identifier": ase.url(&format!("/{wallet}"))});
    if let Some(l) = limits {
        item["limits"] = l;
    }
    let body = json!({
        "access_token": {"access": [item]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n1"}},
    });
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    let (s, _) = ase
        .admin(Method::POST, &format!("/grants/{id}/approve"), Some("{}"))
        .await;
    assert_eq!(s, 200);
    crate::common::finish_grant(client, &r.body).await
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

fn usd(v: &str) -> Value {
    json!({"value": v, "assetCode": "USD", "assetScale": 2})
}

async fn create_incoming(
    ase: &TestAse,
    c: &SignedClient,
    tok: &str,
    wallet: &str,
    amount: Option<Value>,
    n: u32,
) -> Value {
    let mut body = json!({"walletAddress": ase.url(&format!("/{wallet}")), "metadata": {"n": n}});
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

#[tokio::test]
async fn incoming_payment_lifecycle_matches_the_spec() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let tok = token(&ase, &c, &ase.url("/demo-client"), json!([{"type": "incoming-payment", "actions": ["create", "read", "list", "complete"], "identifier": ase.url("/bob")}])).await;
    let created = create_incoming(&ase, &c, &tok, "bob", Some(usd("2500")), 1).await;
    assert_matches_pointer(RS, &ok_schema("/incoming-payments", "post", 201), &created);
    assert_eq!(created["receivedAmount"]["value"], "0");
    assert_eq!(created["completed"], false);
    let methods = created["methods"].as_array().unwrap();
    assert_eq!(methods.len(), 1);
    assert_eq!(methods[0]["type"], "ilp");
    assert!(methods[0]["ilpAddress"].as_str().unwrap().starts_with("test.opdesk."));
    assert_eq!(created["metadata"], json!({"n": 1}));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with(&ase.url("/incoming-payments/")));

    let r = c.send(Method::GET, &id, Some(&tok), None).await.unwrap();
    assert_eq!(r.status, 200);
    assert_matches_schema(RS, "incoming-payment-with-methods", &r.body);

    let public: Value = ase.http.get(&id).send().await.unwrap().json().await.unwrap();
    assert_matches_schema(RS, "public-incoming-payment", &public);
    assert_eq!(
        public,
        json!({"authServer": ase.url("/auth"), "receivedAmount": usd("0")})
    );

    let r = c
        .send(
            Method::GET,
            &format!("{}?wallet-address={}", ase.url("/incoming-payments"), ase.url("/bob")),
            Some(&tok),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_list_matches(RS, "incoming-payment", &r.body);
    assert!(r.body["result"][0].get("methods").is_none());

    let r = c
        .send(Method::POST, &format!("{id}/complete"), Some(&tok), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_closed_matches(RS, "incoming-payment", &r.body);
    assert_eq!(r.body["completed"], true);
    assert!(r.body.get("methods").is_none());
}

#[tokio::test]
async fn resource_server_error_statuses() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let bob_url = ase.url("/bob");
    let tok = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create", "read"], "identifier": bob_url}]),
    )
    .await;
    let url = ase.url("/incoming-payments");
    let body = json!({"walletAddress": bob_url});

    // 401: no Authorization, malformed Authorization, bad signature
    let r = ase.http.post(&url).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(
        r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("GNAP as_uri=")
    );
    let r = ase
        .http
        .post(&url)
        .header("authorization", format!("Bearer {tok}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let wrong_key = SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), c.keyid());
    let r = wrong_key
        .send(Method::POST, &url, Some(&tok), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    assert!(r.headers.contains_key("www-authenticate"));

    // 403: unknown token, wrong wallet, missing action, continuation token
    let r = c
        .send(Method::POST, &url, Some("not-a-token"), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 403);
    let r = c
        .send(
            Method::POST,
            &url,
            Some(&tok),
            Some(&json!({"walletAddress": ase.url("/alice")})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 403);
    let created = create_incoming(&ase, &c, &tok, "bob", None, 2).await;
    let id = created["id"].as_str().unwrap();
    let r = c
        .send(Method::POST, &format!("{id}/complete"), Some(&tok), None)
        .await
        .unwrap();
    assert_eq!(r.status, 403, "no complete action");
    let g = c.send(Method::POST, &ase.url("/auth"), None, Some(&json!({"access_token": {"access": [{"type": "quote", "actions": ["create"]}]}, "client": ase.url("/demo-client")}))).await.unwrap();
    let cont_token = g.body["continue"]["access_token"]["value"].as_str().unwrap();
    let r = c.send(Method::GET, id, Some(cont_token), None).await.unwrap();
    assert_eq!(r.status, 403, "a continuation token is not an access token");

    // 404: unknown ids, with and without auth
    let unknown = format!("{url}/{}", opdesk::ids::new_id());
    assert_eq!(
        c.send(Method::GET, &unknown, Some(&tok), None).await.unwrap().status,
        404
    );
    assert_eq!(ase.http.get(&unknown).send().await.unwrap().status(), 404);
    assert_eq!(
        ase.http.get(format!("{url}/garbage")).send().await.unwrap().status(),
        404
    );

    // 400 per validation rule; nothing written
    let cases = [
        json!({"walletAddress": bob_url, "incomingAmount": {"value": "100", "assetCode": "EUR", "assetScale": 2}}),
        json!({"walletAddress": bob_url, "incomingAmount": usd("01")}),
        json!({"walletAddress": bob_url, "incomingAmount": usd("0")}),
        json!({"walletAddress": bob_url, "incomingAmount": usd("-5")}),
        json!({"walletAddress": bob_url, "incomingAmount": {"value": 5, "assetCode": "USD", "assetScale": 2}}),
        json!({"walletAddress": bob_url, "expiresAt": "2001-01-01T00:00:00Z"}),
        json!({"walletAddress": bob_url, "expiresAt": "2999-01-01T00:00:00Z"}),
        json!({"walletAddress": bob_url, "expiresAt": "tomorrow"}),
        json!({"walletAddress": bob_url, "unknown": true}),
        json!({"walletAddress": bob_url, "metadata": "not an object"}),
        json!({}),
    ];
    for b in cases {
        let r = c.send(Method::POST, &url, Some(&tok), Some(&b)).await.unwrap();
        assert_eq!(r.status, 400, "{b}: {}", r.body);
        assert!(r.body["error"]["code"].is_string() && r.body["error"]["description"].is_string());
    }
    let r = c
        .send(
            Method::GET,
            &format!("{url}?wallet-address={bob_url}"),
            Some(&tok),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 403, "no list action");
    let list_tok = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["list"], "identifier": bob_url}]),
    )
    .await;
    let r = c
        .send(
            Method::GET,
            &format!("{url}?wallet-address={bob_url}"),
            Some(&list_tok),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        r.body["result"].as_array().unwrap().len(),
        1,
        "only the one valid create was written"
    );
    for q in [
        "",
        "&first=0",
        "&first=101",
        "&last=2",
        "&first=2&last=2",
        "&cursor=nope",
    ] {
        let r = c
            .send(
                Method::GET,
                &format!("{url}?wallet-address={bob_url}{q}"),
                Some(&list_tok),
                None,
            )
            .await
            .unwrap();
        assert_eq!(r.status, if q.is_empty() { 200 } else { 400 }, "{q}: {}", r.body);
    }
    let r = c.send(Method::GET, &url, Some(&list_tok), None).await.unwrap();
    assert_eq!(r.status, 400, "wallet-address is required");
    assert_envelope(&r.body, "invalid_request");
}

#[tokio::test]
async fn read_sees_own_resources_and_read_all_sees_all() {
    let ase = TestAse::spawn().await;
    let demo = ase.demo_client().await;
    // a second client: carol's wallet with a generated key
    let (s, k) = ase
        .admin(Method::POST, "/wallets/carol/keys", Some(r#"{"generate":true}"#))
        .await;
    assert_eq!(s, 201);
    let carol = SignedClient::new(
        opdesk::httpsig::jwk::from_pkcs8_pem(k["privateKeyPem"].as_str().unwrap()).unwrap(),
        k["jwk"]["kid"].as_str().unwrap(),
    );
    let bob = ase.url("/bob");
    let tok_a = token(
        &ase,
        &demo,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create", "read", "list"], "identifier": bob}]),
    )
    .await;
    let p = create_incoming(&ase, &demo, &tok_a, "bob", None, 1).await;
    let id = p["id"].as_str().unwrap();
    let list = format!("{}?wallet-address={bob}", ase.url("/incoming-payments"));

    let tok_read = token(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["read", "list"], "identifier": bob}]),
    )
    .await;
    assert_eq!(
        carol.send(Method::GET, id, Some(&tok_read), None).await.unwrap().status,
        404
    );
    let r = carol.send(Method::GET, &list, Some(&tok_read), None).await.unwrap();
    assert_eq!(r.body["result"].as_array().unwrap().len(), 0);

    let tok_all = token(
        &ase,
        &carol,
        &ase.url("/carol"),
        json!([{"type": "incoming-payment", "actions": ["read-all"], "identifier": bob}]),
    )
    .await;
    assert_eq!(
        carol.send(Method::GET, id, Some(&tok_all), None).await.unwrap().status,
        200
    );
    // list-all needs bob's owner: the operator approves it
    let body = json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["list-all"], "identifier": bob}]},
        "client": ase.url("/carol"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n1"}},
    });
    let g = carol
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
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
    let tok_list_all = crate::common::finish_grant(&carol, &g.body).await;
    let r = carol.send(Method::GET, &list, Some(&tok_list_all), None).await.unwrap();
    assert_eq!(r.body["result"].as_array().unwrap().len(), 1);

    // a token is bound to its client: carol cannot use demo-client's token
    assert_eq!(
        carol.send(Method::GET, id, Some(&tok_a), None).await.unwrap().status,
        401
    );
}

#[tokio::test]
async fn pagination_walks_both_directions() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let tok = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create", "list"], "identifier": ase.url("/bob")}]),
    )
    .await;
    let mut ids = Vec::new();
    for n in 0..7 {
        ids.push(
            create_incoming(&ase, &c, &tok, "bob", None, n).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    ids.reverse(); // newest first
    let list = |q: String| {
        let (c, tok, url) = (
            c.clone(),
            tok.clone(),
            format!(
                "{}?wallet-address={}{q}",
                ase.url("/incoming-payments"),
                ase.url("/bob")
            ),
        );
        async move { c.send(Method::GET, &url, Some(&tok), None).await.unwrap().body }
    };
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = list(format!(
            "&first=3{}",
            cursor.as_ref().map(|c| format!("&cursor={c}")).unwrap_or_default()
        ))
        .await;
        assert_list_matches(RS, "incoming-payment", &page);
        for item in page["result"].as_array().unwrap() {
            seen.push(item["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(page["pagination"]["hasPreviousPage"], cursor.is_some());
        if page["pagination"]["hasNextPage"] == false {
            break;
        }
        cursor = Some(page["pagination"]["endCursor"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen, ids);
    // backwards from the oldest
    let oldest = ids[6].rsplit('/').next().unwrap().to_owned();
    let page = list(format!("&last=3&cursor={oldest}")).await;
    let back: Vec<_> = page["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(back, ids[3..6].to_vec());
    assert_eq!(page["pagination"]["hasPreviousPage"], true);
    assert_eq!(page["pagination"]["hasNextPage"], true);
    // an empty page omits its cursors
    let newest = ids[0].rsplit('/').next().unwrap().to_owned();
    let page = list(format!("&last=3&cursor={newest}")).await;
    assert_eq!(page["result"], json!([]));
    assert!(page["pagination"].get("startCursor").is_none());
    assert_list_matches(RS, "incoming-payment", &page);
}

#[tokio::test]
async fn quotes_variants_cross_currency_and_expiry() {
    let ase = TestAse::spawn_with("[resource_server]\nquote_lifetime_secs = 1\n").await;
    let c = ase.demo_client().await;
    let inc = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let quo = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "quote", "actions": ["create", "read"]}]),
    )
    .await;
    let bob_ip = create_incoming(&ase, &c, &inc, "bob", Some(usd("1500")), 1).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let carol_ip = create_incoming(&ase, &c, &inc, "carol", None, 2).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let alice = ase.url("/alice");
    let q = |body: Value| {
        let (c, quo, url) = (c.clone(), quo.clone(), ase.url("/quotes"));
        async move { c.send(Method::POST, &url, Some(&quo), Some(&body)).await.unwrap() }
    };
    let r = q(json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp"})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_matches_schema(RS, "quote", &r.body);
    assert_eq!(
        (
            r.body["debitAmount"]["value"].as_str(),
            r.body["receiveAmount"]["value"].as_str()
        ),
        (Some("1500"), Some("1500"))
    );
    let got = c
        .send(Method::GET, r.body["id"].as_str().unwrap(), Some(&quo), None)
        .await
        .unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.body, r.body);
    let r = q(json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp", "debitAmount": usd("700")})).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["receiveAmount"]["value"], "700");
    let r = q(json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp", "receiveAmount": usd("300")})).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["debitAmount"]["value"], "300");
    // USD → EUR at the configured 0.90
    let r = q(json!({"walletAddress": alice, "receiver": carol_ip, "method": "ilp", "debitAmount": usd("1000")})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.body["receiveAmount"],
        json!({"value": "900", "assetCode": "EUR", "assetScale": 2})
    );
    for bad in [
        json!({"walletAddress": alice, "receiver": carol_ip, "method": "ilp"}),
        json!({"walletAddress": alice, "receiver": bob_ip}),
        json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp", "debitAmount": usd("1"), "receiveAmount": usd("1")}),
        json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp", "receiveAmount": usd("1501")}),
        json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp", "debitAmount": {"value": "5", "assetCode": "EUR", "assetScale": 2}}),
        json!({"walletAddress": alice, "receiver": "https://elsewhere.test/incoming-payments/1", "method": "ilp"}),
        json!({"walletAddress": alice, "receiver": ase.url("/bob"), "method": "ilp"}),
    ] {
        let r = q(bad.clone()).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    // an expired quote cannot be paid
    let quote = q(json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp", "debitAmount": usd("100")}))
        .await
        .body;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let out = outgoing_token(&ase, &c, "alice", None).await;
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": alice, "quoteId": quote["id"]})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert_envelope(&r.body, "invalid_quote");
}

#[tokio::test]
async fn outgoing_payments_reserve_and_respect_quotes() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let inc = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let quo = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "quote", "actions": ["create"]}]),
    )
    .await;
    let out = outgoing_token(&ase, &c, "alice", None).await;
    let alice = ase.url("/alice");
    let bob_ip = create_incoming(&ase, &c, &inc, "bob", Some(usd("2500")), 1).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let quote = c
        .send(
            Method::POST,
            &ase.url("/quotes"),
            Some(&quo),
            Some(&json!({"walletAddress": alice, "receiver": bob_ip, "method": "ilp", "debitAmount": usd("1000")})),
        )
        .await
        .unwrap()
        .body;
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": alice, "quoteId": quote["id"], "metadata": {"invoice": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_matches_schema(RS, "outgoing-payment-with-spent-amounts", &r.body);
    assert_eq!(r.body["debitAmount"], quote["debitAmount"]);
    assert_eq!(r.body["sentAmount"]["value"], "0");
    assert_eq!(r.body["failed"], false);
    assert_eq!(r.body["grantSpentDebitAmount"]["value"], "0");
    // the debit was reserved at once; the engine then settles it
    let id = r.body["id"].as_str().unwrap();
    let settled = ase.wait_outgoing(id).await;
    assert_eq!(settled["state"], "completed");
    assert_eq!(ase.balance("alice").await, 100_000 - 1000);

    let got = c.send(Method::GET, id, Some(&out), None).await.unwrap();
    assert_eq!(got.status, 200);
    assert_matches_schema(RS, "outgoing-payment", &got.body);
    assert!(got.body.get("grantSpentDebitAmount").is_none());
    let list = c
        .send(
            Method::GET,
            &format!("{}?wallet-address={alice}", ase.url("/outgoing-payments")),
            Some(&out),
            None,
        )
        .await
        .unwrap();
    assert_list_matches(RS, "outgoing-payment", &list.body);

    // a quote pays once
    let again = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": alice, "quoteId": quote["id"]})),
        )
        .await
        .unwrap();
    assert_eq!(again.status, 400);
    // from an incoming payment and a debit amount
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": alice, "incomingPayment": bob_ip, "debitAmount": usd("500")})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["receiveAmount"]["value"], "500");
    // it completes (the engine settles it on its own), after which alice has nothing reserved
    let paid = ase.wait_outgoing(&id_of(&r.body)).await;
    assert_eq!(paid["state"], "completed", "{paid}");
    // more than alice has: created failed, nothing reserved
    let big_ip = create_incoming(&ase, &c, &inc, "bob", None, 2).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": alice, "incomingPayment": big_ip, "debitAmount": usd("9999999")})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["failed"], true);
    let failed = ase.wait_outgoing(&id_of(&r.body)).await;
    assert_eq!(failed["failureReason"], "insufficient_balance");
    let (_, detail) = ase.admin(Method::GET, "/wallets/alice", None).await;
    assert_eq!(detail["balance"]["pendingDebits"], 0, "nothing stays reserved");
    // a token for another wallet cannot pay from alice
    let bob_out = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create", "read"]}]),
    )
    .await;
    let r = c
        .send(
            Method::POST,
            &ase.url("/outgoing-payments"),
            Some(&bob_out),
            Some(&json!({"walletAddress": alice, "incomingPayment": big_ip, "debitAmount": usd("1")})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn twenty_concurrent_creates_against_a_limit_of_five() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let inc = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let bob_ip = create_incoming(&ase, &c, &inc, "bob", None, 1).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = outgoing_token(&ase, &c, "alice", Some(json!({"debitAmount": usd("500")}))).await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (c, out, url, body) = (
            c.clone(),
            out.clone(),
            ase.url("/outgoing-payments"),
            json!({"walletAddress": ase.url("/alice"), "incomingPayment": bob_ip, "debitAmount": usd("100"), "metadata": {"i": i}}),
        );
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
    assert_eq!(created, 5);
    let spent = c
        .send(Method::GET, &ase.url("/outgoing-payment-grant"), Some(&out), None)
        .await
        .unwrap();
    assert_eq!(spent.status, 200, "{}", spent.body);
    assert_matches_pointer(RS, &ok_schema("/outgoing-payment-grant", "get", 200), &spent.body);
    assert_eq!(spent.body["spentDebitAmount"], usd("500"));
}

/// 64 creates at once queue up at the store and commit in groups; the grant's limit (checked inside each
/// create's transaction) refuses exactly one, and only its writes are undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_creates_commit_in_groups_all_but_the_one_over_the_limit() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let inc = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let bob_ip = create_incoming(&ase, &c, &inc, "bob", None, 1).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, before) = ase.admin(Method::GET, "/wallets/alice", None).await;
    let groups = |text: &str, le: &str| -> u64 {
        let line = if le.is_empty() {
            "opdesk_store_commit_group_jobs_count".to_owned()
        } else {
            format!("opdesk_store_commit_group_jobs_bucket{{le=\"{le}\"}}")
        };
        text.lines()
            .find_map(|l| l.strip_prefix(&line).map(|v| v.trim().parse::<u64>().unwrap()))
            .unwrap_or_else(|| panic!("{line} missing:\n{text}"))
    };
    let metrics = || async { reqwest::get(ase.url("/metrics")).await.unwrap().text().await.unwrap() };
    let m0 = metrics().await;
    let out = outgoing_token(&ase, &c, "alice", Some(json!({"debitAmount": usd("6300")}))).await;
    let mut tasks = Vec::new();
    for i in 0..64 {
        let (c, out, url, body) = (
            c.clone(),
            out.clone(),
            ase.url("/outgoing-payments"),
            json!({"walletAddress": ase.url("/alice"), "incomingPayment": bob_ip, "debitAmount": usd("100"), "metadata": {"i": i}}),
        );
        tasks.push(tokio::spawn(async move {
            c.send(Method::POST, &url, Some(&out), Some(&body)).await.unwrap()
        }));
    }
    let (mut created, mut refused) = (Vec::new(), 0);
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            201 => created.push(id_of(&r.body)),
            403 => refused += 1,
            s => panic!("unexpected {s}: {}", r.body),
        }
    }
    assert_eq!((created.len(), refused), (63, 1));
    let m1 = metrics().await;
    let grouped = |m: &str| groups(m, "") - groups(m, "1");
    if crate::common::postgres().is_none() {
        // SQLite's writer commits queued writes together; PostgreSQL commits each in its own transaction
        assert!(grouped(&m1) > grouped(&m0), "some creates shared a commit:\n{m1}");
    }
    let spent = c
        .send(Method::GET, &ase.url("/outgoing-payment-grant"), Some(&out), None)
        .await
        .unwrap();
    assert_eq!(spent.body["spentDebitAmount"], usd("6300"));
    // every acknowledged payment is there and is paid; nothing else moved
    let list = c
        .send(
            Method::GET,
            &format!(
                "{}?wallet-address={}&first=100",
                ase.url("/outgoing-payments"),
                ase.url("/alice")
            ),
            Some(&out),
            None,
        )
        .await
        .unwrap();
    let mut listed: Vec<String> = list.body["result"].as_array().unwrap().iter().map(id_of).collect();
    listed.sort();
    created.sort();
    assert_eq!(listed, created);
    for id in &created {
        let p = ase.wait_outgoing(id).await;
        assert_eq!(p["sentAmount"]["value"], "100", "{p}");
    }
    let (_, after) = ase.admin(Method::GET, "/wallets/alice", None).await;
    let bal = |v: &Value| v["balance"]["available"].as_i64().unwrap();
    assert_eq!(bal(&before) - bal(&after), 6300, "{before} {after}");
}

#[tokio::test]
async fn interval_limits_and_spent_amounts() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let inc = token(
        &ase,
        &c,
        &ase.url("/demo-client"),
        json!([{"type": "incoming-payment", "actions": ["create"]}]),
    )
    .await;
    let bob_ip = create_incoming(&ase, &c, &inc, "bob", None, 1).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let start = opdesk::clock::format_ts(time::OffsetDateTime::now_utc() - time::Duration::days(1));
    let out = outgoing_token(
        &ase,
        &c,
        "alice",
        Some(json!({"debitAmount": usd("500"), "interval": format!("R/{start}/P1M"), "receiver": bob_ip})),
    )
    .await;
    let spent = c
        .send(Method::GET, &ase.url("/outgoing-payment-grant"), Some(&out), None)
        .await
        .unwrap();
    assert_eq!(
        spent.body,
        json!({"spentDebitAmount": null, "spentReceiveAmount": null})
    );
    let pay = |v: &str, to: &str, n: u32| {
        let (c, out, url) = (c.clone(), out.clone(), ase.url("/outgoing-payments"));
        let body = json!({"walletAddress": ase.url("/alice"), "incomingPayment": to, "debitAmount": usd(v), "metadata": {"n": n}});
        async move { c.send(Method::POST, &url, Some(&out), Some(&body)).await.unwrap() }
    };
    let r = pay("300", &bob_ip, 1).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = pay("300", &bob_ip, 2).await;
    assert_eq!(r.status, 403, "past the interval's limit: {}", r.body);
    let other = create_incoming(&ase, &c, &inc, "bob", None, 3).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = pay("100", &other, 4).await;
    assert_eq!(r.status, 403, "only to the grant's receiver");
    let r = pay("200", &bob_ip, 5).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["grantSpentDebitAmount"], usd("300"));
    let spent = c
        .send(Method::GET, &ase.url("/outgoing-payment-grant"), Some(&out), None)
        .await
        .unwrap();
    assert_eq!(spent.body["spentDebitAmount"], usd("500"));
    assert_eq!(spent.body["spentReceiveAmount"], usd("500"));
}
