//! The Classroom's query over real HTTP and the store in use (SQLite, or PostgreSQL when the suite runs on it):
//! one seat's wallets, its client app signing with its own key, and each step of the flow showing up in the
//! seat's row as it is taken — wallet read, incoming payment, quote, grant, approval, payment.

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::TestAse;

/// The seat rows the admin API's classroom query answers.
async fn classroom(ase: &TestAse) -> Vec<Value> {
    let (s, b) = ase
        .admin(Method::POST, "/queries", Some(r#"{"query":"classroom"}"#))
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["found"], "classroom", "{b}");
    b["value"].as_array().expect("seats").clone()
}

/// Which steps seat 1 has taken: `+` or `-` for wallet read, incoming, quote, grant, approved, paid.
async fn taken(ase: &TestAse) -> String {
    let seats = classroom(ase).await;
    let one = seats.iter().find(|s| s["seat"] == 1).expect("seat 1");
    one["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| if s.is_null() { "-" } else { "+" })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn a_seats_steps_show_up_in_the_classroom_as_it_takes_them() {
    let ase = TestAse::spawn_with("[gnap]\nauto_approve = true\n").await;
    for name in ["seat01", "seat01-shop", "seat01-app", "seat1-not-a-seat"] {
        let body = json!({"name": name, "assetCode": "USD", "assetScale": 2}).to_string();
        let (s, b) = ase.admin(Method::POST, "/wallets", Some(&body)).await;
        assert_eq!(s, 201, "{b}");
    }
    let (s, _) = ase
        .admin(Method::POST, "/wallets/seat01/deposit", Some(r#"{"value":"1000"}"#))
        .await;
    assert_eq!(s, 200);
    let (s, key) = ase
        .admin(Method::POST, "/wallets/seat01-app/keys", Some(r#"{"generate":true}"#))
        .await;
    assert_eq!(s, 201, "{key}");
    let signing = opdesk::httpsig::jwk::from_pkcs8_pem(key["privateKeyPem"].as_str().unwrap()).unwrap();
    let app = opdesk::client::SignedClient::new(signing, key["jwk"]["kid"].as_str().unwrap());

    let seats = classroom(&ase).await;
    assert_eq!(seats.len(), 1, "only seat01's wallets name a seat: {seats:?}");
    assert_eq!(taken(&ase).await, "- - - - - -");

    // the seat reads its wallet address; the app's own address read by the server does not count
    let (s, _) = ase.get("/seat01").await;
    assert_eq!(s, 200);
    let (s, _) = ase.get("/seat01-app").await;
    assert_eq!(s, 200);
    assert_eq!(taken(&ase).await, "+ - - - - -");

    let base = ase.url("");
    let client = ase.url("/seat01-app");
    let grant = |access: Value| json!({"access_token": {"access": access}, "client": client});
    let token = |r: &opdesk::client::Response| r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let post = |url: String, token: Option<String>, body: Value| {
        let app = &app;
        async move {
            let r = app
                .send(Method::POST, &url, token.as_deref(), Some(&body))
                .await
                .unwrap();
            assert!(r.status < 300, "{url}: {} {}", r.status, r.body);
            r
        }
    };

    let g = post(
        format!("{base}/auth"),
        None,
        grant(json!([{"type": "incoming-payment", "actions": ["create"]}])),
    )
    .await;
    let incoming = post(
        format!("{base}/incoming-payments"),
        Some(token(&g)),
        json!({"walletAddress": ase.url("/seat01-shop"), "incomingAmount": {"value": "250", "assetCode": "USD", "assetScale": 2}}),
    )
    .await;
    assert_eq!(taken(&ase).await, "+ + - - - -");

    let g = post(
        format!("{base}/auth"),
        None,
        grant(json!([{"type": "quote", "actions": ["create"]}])),
    )
    .await;
    let quote = post(
        format!("{base}/quotes"),
        Some(token(&g)),
        json!({"walletAddress": ase.url("/seat01"), "receiver": incoming.body["id"], "method": "ilp"}),
    )
    .await;
    assert_eq!(taken(&ase).await, "+ + + - - -");

    // an interactive grant, approved by the server's policy at once
    let mut body =
        grant(json!([{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/seat01")}]));
    body["interact"] =
        json!({"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}});
    let pending = post(format!("{base}/auth"), None, body).await;
    assert_eq!(taken(&ase).await, "+ + + + + -");
    let out = crate::common::finish_grant(&app, &pending.body).await;

    let paid = post(
        format!("{base}/outgoing-payments"),
        Some(out),
        json!({"walletAddress": ase.url("/seat01"), "quoteId": quote.body["id"]}),
    )
    .await;
    let done = ase.wait_outgoing(paid.body["id"].as_str().unwrap()).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(taken(&ase).await, "+ + + + + +");
    let seat = classroom(&ase).await.remove(0);
    assert_eq!(seat["approvedByOwner"], 0, "the policy approved, not the owner: {seat}");
    assert_eq!(seat["steps"][5]["count"], 1, "{seat}");
}

/// A seat's undecided grant: until when it can be decided, its failed owner sign-ins and the lockout, as the
/// class query tells them (the Classroom's `owner to approve`, `locked out — unlock`).
#[tokio::test]
async fn a_seats_open_grant_says_until_when_and_its_failed_sign_ins_and_lockout() {
    let ase = TestAse::spawn_with("[consent]\nmax_failures_per_grant = 2\n").await;
    for name in ["seat01", "seat01-app"] {
        let body = json!({"name": name, "assetCode": "USD", "assetScale": 2}).to_string();
        let (s, b) = ase.admin(Method::POST, "/wallets", Some(&body)).await;
        assert_eq!(s, 201, "{b}");
    }
    let body = json!({"command": "setOwnerPassphrase", "wallet": "seat01",
                      "passphrase": {"action": "set", "passphrase": "correct horse battery"}});
    let (s, b) = ase.admin(Method::POST, "/commands", Some(&body.to_string())).await;
    assert_eq!(s, 200, "{b}");
    let (_, key) = ase
        .admin(Method::POST, "/wallets/seat01-app/keys", Some(r#"{"generate":true}"#))
        .await;
    let signing = opdesk::httpsig::jwk::from_pkcs8_pem(key["privateKeyPem"].as_str().unwrap()).unwrap();
    let app = opdesk::client::SignedClient::new(signing, key["jwk"]["kid"].as_str().unwrap());
    let grant = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/seat01"),
            "limits": {"debitAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}}}]},
        "client": ase.url("/seat01-app"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}},
    });
    let r = app
        .send(Method::POST, &ase.url("/auth"), None, Some(&grant))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let page = r.body["interact"]["redirect"].as_str().unwrap().to_owned();
    let (s, class) = ase.admin(Method::POST, "/queries", Some(r#"{"query":"class"}"#)).await;
    assert_eq!(s, 200, "{class}");
    let seat = &class["value"][0];
    assert!(seat["decideBy"].is_string(), "{seat}");
    assert_eq!(seat["failedSignIns"], 0, "{seat}");

    // two wrong passphrases on the page: counted, and the owner is locked out
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let first = http.get(&page).send().await.unwrap();
    let cookie = first.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let html = first.text().await.unwrap();
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = html[at..].split('"').next().unwrap().to_owned();
    for _ in 0..2 {
        let body = format!("csrf={csrf}&passphrase=wrong+wrong");
        let r = http
            .post(&page)
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let (_, class) = ase.admin(Method::POST, "/queries", Some(r#"{"query":"class"}"#)).await;
    let seat = &class["value"][0];
    assert_eq!(seat["failedSignIns"], 2, "{seat}");
    assert_eq!(seat["lockedOut"], true, "{seat}");
    // lifted by wallet: no failures left, not locked
    let body = json!({"command": "unlockSignIns", "wallet": "seat01"}).to_string();
    let (s, u) = ase.admin(Method::POST, "/commands", Some(&body)).await;
    assert_eq!((s, u["value"]["forgotten"].as_u64()), (200, Some(2)), "{u}");
    let (_, class) = ase.admin(Method::POST, "/queries", Some(r#"{"query":"class"}"#)).await;
    let seat = &class["value"][0];
    assert_eq!(
        (seat["failedSignIns"].as_u64(), seat["lockedOut"].as_bool()),
        (Some(0), Some(false)),
        "{seat}"
    );
}
