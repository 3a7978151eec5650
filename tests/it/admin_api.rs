//! Admin API: token and loopback guard, wallet and key management, deposits and withdrawals, and bad input
//! answered 400 with the envelope and nothing written.

use axum::{body::Body, extract::connect_info::MockConnectInfo, http::Request};
use reqwest::Method;
use serde_json::Value;
use tower::ServiceExt;

use crate::common::{TestAse, assert_envelope, assert_matches_schema};

#[tokio::test]
async fn token_is_required() {
    let ase = TestAse::spawn().await;
    let res = ase.http.get(ase.url("/admin/wallets")).send().await.unwrap();
    assert_eq!(res.status(), 401);
    assert!(res.headers().contains_key("www-authenticate"));
    assert_envelope(&res.json().await.unwrap(), "unauthorized");
    let res = ase
        .http
        .get(ase.url("/admin/wallets"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let (status, body) = ase.admin(Method::GET, "/wallets", None).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn non_loopback_peers_are_refused_even_with_the_token() {
    let ase = TestAse::spawn().await;
    let peer: std::net::SocketAddr = "192.0.2.7:5555".parse().unwrap();
    let app = opdesk::server::router(ase.state.clone()).layer(MockConnectInfo(peer));
    let req = Request::get("/admin/wallets")
        .header("authorization", format!("Bearer {}", ase.admin_token))
        .body(Body::empty())
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), 403);
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 16).await.unwrap();
    assert_envelope(&serde_json::from_slice(&bytes).unwrap(), "forbidden");
    // the open wallet routes still answer that peer
    let res = app
        .oneshot(Request::get("/alice").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn create_wallet_deposit_withdraw_and_balances() {
    let ase = TestAse::spawn().await;
    let (s, w) = ase
        .admin(
            Method::POST,
            "/wallets",
            Some(r#"{"name":"dave","assetCode":"USD","assetScale":2,"publicName":"Dave"}"#),
        )
        .await;
    assert_eq!(s, 201, "{w}");
    assert_eq!(w["url"], ase.url("/dave"));
    let (_, doc) = ase.get("/dave").await;
    assert_matches_schema("wallet-address-server.yaml", "wallet-address", &doc);
    assert_eq!(doc["publicName"], "Dave");

    let (s, m) = ase
        .admin(Method::POST, "/wallets/dave/deposit", Some(r#"{"value":"1000"}"#))
        .await;
    assert_eq!(s, 200, "{m}");
    assert_eq!(m["balance"]["balance"], 1000);
    let (s, m) = ase
        .admin(
            Method::POST,
            "/wallets/dave/withdraw",
            Some(r#"{"value":"400","assetCode":"USD","assetScale":2}"#),
        )
        .await;
    assert_eq!(s, 200, "{m}");
    assert_eq!(m["balance"]["balance"], 600);
    let (s, m) = ase
        .admin(Method::POST, "/wallets/dave/withdraw", Some(r#"{"value":"601"}"#))
        .await;
    assert_eq!(s, 409);
    assert_envelope(&m, "insufficient_balance");
    assert_eq!(ase.balance("dave").await, 600);

    let (_, balances) = ase.admin(Method::GET, "/balances", None).await;
    let usd: i64 = balances
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["assetCode"] == "USD")
        .map(|b| b["balance"].as_i64().unwrap())
        .sum();
    assert_eq!(usd, 0, "money is conserved per asset: {balances}");
}

/// `POST /admin/commands` runs an operator command and answers its tagged outcome; the REST paths are a table
/// onto the same commands (same answer); a command it does not know is a 400 that changes nothing.
#[tokio::test]
async fn commands_are_data_on_the_admin_api() {
    let ase = TestAse::spawn().await;
    let (s, o) = ase
        .admin(
            Method::POST,
            "/commands",
            Some(r#"{"command":"deposit","wallet":"alice","funds":{"value":"250","transferId":"cmd-1"}}"#),
        )
        .await;
    assert_eq!(s, 200, "{o}");
    assert_eq!(o["outcome"], "moved");
    assert_eq!(o["value"]["transfer"]["id"], "cmd-1");
    // with the sentence the console's flash line and the CLI say too
    let message = o["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("deposited 2.50 USD to alice: balance "), "{o}");
    // the REST path for the same command answers the outcome's value, and the transfer id holds across both
    let (s, rest) = ase
        .admin(
            Method::POST,
            "/wallets/alice/deposit",
            Some(r#"{"value":"250","transferId":"cmd-1"}"#),
        )
        .await;
    assert_eq!(s, 200, "{rest}");
    assert_eq!(rest["transfer"], o["value"]["transfer"]);
    assert_eq!(rest["balance"]["balance"], o["value"]["balance"]["balance"]);
    let (s, o) = ase
        .admin(
            Method::POST,
            "/commands",
            Some(r#"{"command":"setPublicName","wallet":"alice","publicName":"Alice's Apples"}"#),
        )
        .await;
    assert_eq!((s, o["outcome"].as_str()), (200, Some("wallet")), "{o}");
    let (_, doc) = ase.get("/alice").await;
    assert_eq!(doc["publicName"], "Alice's Apples");
    let before = ase.balance("alice").await;
    for bad in [
        r#"{"command":"launchMissiles"}"#,
        r#"{"wallet":"alice"}"#,
        r#"{"command":"deposit","wallet":"alice"}"#,
        r#"{"command":"setPublicName","wallet":"nobody","publicName":"x"}"#,
    ] {
        let (s, body) = ase.admin(Method::POST, "/commands", Some(bad)).await;
        assert!(s == 400 || s == 404, "{bad}: {s} {body}");
        assert!(body["error"]["code"].is_string(), "{bad}: {body}");
    }
    assert_eq!(ase.balance("alice").await, before);
    // reads are data too: what the console loads, answered as found
    let (s, found) = ase
        .admin(Method::POST, "/queries", Some(r#"{"query":"wallets"}"#))
        .await;
    assert_eq!((s, found["found"].as_str()), (200, Some("wallets")), "{found}");
    assert!(
        found["value"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["wallet"]["publicName"] == "Alice's Apples"),
        "{found}"
    );
    let (s, body) = ase
        .admin(Method::POST, "/queries", Some(r#"{"query":"everything"}"#))
        .await;
    assert_eq!(s, 400, "{body}");
}

#[tokio::test]
async fn transfer_ids_make_movements_idempotent() {
    let ase = TestAse::spawn().await;
    let body = r#"{"value":"250","transferId":"op-1"}"#;
    for _ in 0..3 {
        let (s, _) = ase.admin(Method::POST, "/wallets/bob/deposit", Some(body)).await;
        assert_eq!(s, 200);
    }
    assert_eq!(ase.balance("bob").await, 50_000 + 250);
    let (s, e) = ase
        .admin(
            Method::POST,
            "/wallets/bob/deposit",
            Some(r#"{"value":"251","transferId":"op-1"}"#),
        )
        .await;
    assert_eq!(s, 409);
    assert_envelope(&e, "conflict");
    assert_eq!(ase.balance("bob").await, 50_000 + 250);
}

#[tokio::test]
async fn bad_input_is_400_and_writes_nothing() {
    let ase = TestAse::spawn().await;
    let before: Value = ase.admin(Method::GET, "/balances", None).await.1;
    let cases: &[(&str, &str, &str)] = &[
        ("/wallets/alice/deposit", "{", "invalid_request"),
        ("/wallets/alice/deposit", "[]", "invalid_request"),
        (
            "/wallets/alice/deposit",
            r#"{"value":"1","extra":true}"#,
            "invalid_request",
        ),
        ("/wallets/alice/deposit", r#"{"value":"-1"}"#, "invalid_request"),
        ("/wallets/alice/deposit", r#"{"value":"01"}"#, "invalid_request"),
        ("/wallets/alice/deposit", r#"{"value":"+1"}"#, "invalid_request"),
        ("/wallets/alice/deposit", r#"{"value":"1e3"}"#, "invalid_request"),
        ("/wallets/alice/deposit", r#"{"value":" 1"}"#, "invalid_request"),
        ("/wallets/alice/deposit", r#"{"value":""}"#, "invalid_request"),
        ("/wallets/alice/deposit", r#"{"value":1}"#, "invalid_request"),
        ("/wallets/alice/deposit", r#"{"value":null}"#, "invalid_request"),
        (
            "/wallets/alice/deposit",
            r#"{"value":"9223372036854775808"}"#,
            "invalid_request",
        ),
        (
            "/wallets/alice/deposit",
            r#"{"value":"18446744073709551616"}"#,
            "invalid_request",
        ),
        ("/wallets/alice/deposit", r#"{"value":"0"}"#, "invalid_amount"),
        (
            "/wallets/alice/deposit",
            r#"{"value":"5","assetCode":"EUR","assetScale":2}"#,
            "invalid_amount",
        ),
        (
            "/wallets/alice/deposit",
            r#"{"value":"5","assetCode":"USD","assetScale":3}"#,
            "invalid_amount",
        ),
        (
            "/wallets/alice/deposit",
            r#"{"value":"5","assetCode":"USD"}"#,
            "invalid_amount",
        ),
        ("/wallets/alice/withdraw", r#"{"value":"-5"}"#, "invalid_request"),
        (
            "/wallets/alice/deposit",
            r#"{"value":"5","transferId":"has space"}"#,
            "invalid_request",
        ),
        (
            "/wallets",
            r#"{"name":"auth","assetCode":"USD","assetScale":2}"#,
            "invalid_request",
        ),
        (
            "/wallets",
            r#"{"name":"Bad Name","assetCode":"USD","assetScale":2}"#,
            "invalid_request",
        ),
        (
            "/wallets",
            r#"{"name":"zed","assetCode":"US D","assetScale":2}"#,
            "invalid_request",
        ),
        (
            "/wallets",
            r#"{"name":"zed","assetCode":"usd","assetScale":2}"#,
            "invalid_request",
        ),
        (
            "/wallets",
            r#"{"name":"zed","assetCode":"USD","assetScale":256}"#,
            "invalid_request",
        ),
        (
            "/wallets",
            r#"{"name":"zed","assetCode":"USD","assetScale":2,"colour":"red"}"#,
            "invalid_request",
        ),
        (
            "/wallets/alice/keys",
            r#"{"generate":true,"jwk":{"kid":"k","alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"AA"}}"#,
            "invalid_request",
        ),
        (
            "/wallets/alice/keys",
            r#"{"jwk":{"kid":"k","alg":"Ed25519","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}"#,
            "invalid_key",
        ),
        ("/wallets/alice/keys", r#"{}"#, "invalid_request"),
    ];
    for (path, body, code) in cases {
        let (s, e) = ase.admin(Method::POST, path, Some(body)).await;
        assert_eq!(s, 400, "{path} {body}: {e}");
        assert_envelope(&e, code);
    }
    let (s, _) = ase
        .admin(
            Method::POST,
            "/wallets",
            Some(r#"{"name":"alice","assetCode":"USD","assetScale":2}"#),
        )
        .await;
    assert_eq!(s, 409);
    let big = format!(r#"{{"value":"1","pad":"{}"}}"#, "x".repeat(70_000));
    let (s, e) = ase.admin(Method::POST, "/wallets/alice/deposit", Some(&big)).await;
    assert_eq!(s, 413, "{e}");
    let (s, _) = ase
        .admin(Method::POST, "/wallets/nobody/deposit", Some(r#"{"value":"1"}"#))
        .await;
    assert_eq!(s, 404);
    let after: Value = ase.admin(Method::GET, "/balances", None).await.1;
    assert_eq!(before, after, "no bad request moved money");
    let (_, wallets) = ase.admin(Method::GET, "/wallets", None).await;
    assert_eq!(wallets.as_array().unwrap().len(), 4, "no bad request created a wallet");
    let (_, keys) = ase.get("/alice/jwks.json").await;
    assert_eq!(keys["keys"].as_array().unwrap().len(), 0, "no bad request added a key");
    // and the server keeps serving
    assert_eq!(ase.get("/alice").await.0, 200);
}

#[tokio::test]
async fn keys_can_be_generated_added_and_removed() {
    let ase = TestAse::spawn().await;
    let (s, k) = ase
        .admin(Method::POST, "/wallets/alice/keys", Some(r#"{"generate":true}"#))
        .await;
    assert_eq!(s, 201, "{k}");
    let pem = k["privateKeyPem"].as_str().unwrap();
    let secret = opdesk::httpsig::jwk::from_pkcs8_pem(pem).unwrap();
    let kid = k["jwk"]["kid"].as_str().unwrap().to_owned();
    let (_, jwks) = ase.get("/alice/jwks.json").await;
    assert_matches_schema("wallet-address-server.yaml", "json-web-key-set", &jwks);
    let published: opdesk::httpsig::jwk::Jwk = serde_json::from_value(jwks["keys"][0].clone()).unwrap();
    assert_eq!(published.verifying_key().unwrap(), secret.verifying_key());

    let given = opdesk::httpsig::jwk::Jwk::from_verifying_key(
        "mine",
        &opdesk::httpsig::jwk::generate().unwrap().verifying_key(),
    );
    let body = serde_json::json!({ "jwk": given }).to_string();
    let (s, _) = ase.admin(Method::POST, "/wallets/alice/keys", Some(&body)).await;
    assert_eq!(s, 201);
    let (s, _) = ase.admin(Method::POST, "/wallets/alice/keys", Some(&body)).await;
    assert_eq!(s, 409, "kid is unique per wallet");
    assert_eq!(ase.get("/alice/jwks.json").await.1["keys"].as_array().unwrap().len(), 2);

    let (s, _) = ase
        .admin(Method::DELETE, &format!("/wallets/alice/keys/{kid}"), None)
        .await;
    assert_eq!(s, 204);
    let (s, _) = ase
        .admin(Method::DELETE, &format!("/wallets/alice/keys/{kid}"), None)
        .await;
    assert_eq!(s, 404);
    let (_, jwks) = ase.get("/alice/jwks.json").await;
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 1);
    assert_eq!(jwks["keys"][0]["kid"], "mine");
}

#[tokio::test]
async fn events_are_published_after_commit() {
    let ase = TestAse::spawn().await;
    let mut rx = ase.state.bus.subscribe();
    // an event per request, as a reader of `GET /admin/events?live=true` gets them
    ase.state.capture.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (s, _) = ase
        .admin(Method::POST, "/wallets/bob/deposit", Some(r#"{"value":"7"}"#))
        .await;
    assert_eq!(s, 200);
    let mut saw_balance = false;
    let mut saw_http = false;
    while let Ok(Ok(e)) = tokio::time::timeout(std::time::Duration::from_millis(500), rx.recv()).await {
        match e.event {
            opdesk::events::DomainEvent::BalanceChanged {
                wallet: Some(w),
                balance,
                ..
            } if w == "bob" => {
                assert_eq!(balance, 50_007);
                saw_balance = true;
            }
            opdesk::events::DomainEvent::HttpRequest { path, status, .. } if path == "/admin/wallets/bob/deposit" => {
                assert_eq!(status, 200);
                saw_http = true;
            }
            _ => {}
        }
        if saw_balance && saw_http {
            break;
        }
    }
    assert!(saw_balance && saw_http);
}

#[tokio::test]
async fn ipv4_mapped_loopback_is_loopback_on_a_dual_stack_listener() {
    // Mapped non-loopback peers stay refused.
    let ase = TestAse::spawn().await;
    let peer: std::net::SocketAddr = "[::ffff:192.0.2.7]:5555".parse().unwrap();
    let app = opdesk::server::router(ase.state.clone()).layer(MockConnectInfo(peer));
    let req = Request::get("/admin/wallets")
        .header("authorization", format!("Bearer {}", ase.admin_token))
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.oneshot(req).await.unwrap().status(), 403);
    drop(ase);

    // A real server on [::]:0, reached over IPv4 (the kernel shows the peer as ::ffff:127.0.0.1) and IPv6.
    if std::net::TcpListener::bind("[::]:0").is_err() {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipped: this machine has no IPv6");
        }
        return;
    }
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let ase = TestAse::spawn_in(dir, Some("[::]:0".parse().unwrap())).await;
    let port = ase.addr.port();
    for base in [
        format!("http://[::ffff:127.0.0.1]:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let res = ase
            .http
            .get(format!("{base}/admin/wallets"))
            .bearer_auth(&ase.admin_token)
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{base}: {e}"));
        assert_eq!(res.status(), 200, "{base}");
    }
}

/// The console's `/` filter on a pane paged from the store asks the store: a payment beyond the first page is
/// found by a word of its wallet name or metadata, in-process (the command layer) and through the admin API
/// (`q`), and LIKE wildcards in the text are taken literally.
#[tokio::test]
async fn a_search_finds_rows_beyond_the_loaded_page() {
    use opdesk::{ase::incoming::CreateIncoming, control, control::dto::PaymentFilter};
    let ase = TestAse::spawn().await;
    let s = ase.state.services.clone();
    let create = |wallet: &'static str, note: Option<&'static str>| {
        let s = s.clone();
        async move {
            let w = s.wallets.get(wallet).await.unwrap();
            let metadata = note.map(|n| serde_json::json!({ "note": n }).as_object().unwrap().clone());
            let req = CreateIncoming {
                wallet_address: w.url.clone(),
                incoming_amount: None,
                expires_at: None,
                metadata,
            };
            String::from(s.incoming.create(&w, None, req).await.unwrap().id)
        }
    };
    // the oldest: carol's, with a note; then a page and more of bob's
    let needle = create("carol", Some("50%_off")).await;
    for _ in 0..30 {
        create("bob", None).await;
    }
    let filter = |q: &str| PaymentFilter {
        first: Some(10),
        q: Some(q.to_owned()),
        ..PaymentFilter::default()
    };
    let page = control::list_incoming(
        &s,
        PaymentFilter {
            first: Some(10),
            ..PaymentFilter::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(page.items.len(), 10);
    assert!(
        page.items.iter().all(|p| !p.payment.id.ends_with(&needle)),
        "not on the first page"
    );
    // a list carries each payment's `methods` unless asked not to (the console asks: it shows none)
    assert!(page.items.iter().all(|p| p.payment.methods.is_some()));
    let (status, bare) = ase
        .admin(Method::GET, "/incoming-payments?first=3&methods=false", None)
        .await;
    assert_eq!(status, 200, "{bare}");
    let bare = bare["items"].as_array().unwrap();
    assert_eq!(bare.len(), 3);
    assert!(
        bare.iter().all(|p| p.get("methods").is_none() && p["id"].is_string()),
        "{bare:?}"
    );

    let ids = |items: &[opdesk::ase::incoming::IncomingView]| {
        items
            .iter()
            .map(|p| p.payment.id.rsplit('/').next().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    for q in ["CAROL", "50%_", &needle[needle.len() - 6..]] {
        let found = control::list_incoming(&s, filter(q)).await.unwrap();
        assert_eq!(ids(&found.items), vec![needle.clone()], "in-process q={q}");
        let path = format!(
            "/incoming-payments?first=10&q={}",
            url::form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>()
        );
        let (status, body) = ase.admin(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{body}");
        let items = body["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "admin q={q}: {body}");
        assert!(items[0]["id"].as_str().unwrap().ends_with(&needle));
    }
    // wildcards are literal: `%` and `_` find only the note holding them, `5_%` (a pattern matching
    // `50%_off`) nothing
    for q in ["%", "_"] {
        let found = control::list_incoming(&s, filter(q)).await.unwrap();
        assert_eq!(ids(&found.items), vec![needle.clone()], "q={q}");
    }
    let found = control::list_incoming(&s, filter("5_%")).await.unwrap();
    assert!(found.items.is_empty(), "matched {:?}", ids(&found.items));
    // a search pages like any list: 30 of bob's, ten at a time
    let mut seen = 0;
    let mut cursor = None;
    for _ in 0..5 {
        let page = control::list_incoming(
            &s,
            PaymentFilter {
                cursor: cursor.clone(),
                ..filter("bob")
            },
        )
        .await
        .unwrap();
        seen += page.items.len();
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, 30);
    let (status, body) = ase
        .admin(Method::GET, &format!("/incoming-payments?q={}", "x".repeat(201)), None)
        .await;
    assert_eq!(status, 400, "{body}");
}

/// The overview's activity comes from the store: a deposit shows as money moved in the current minute, per
/// asset, through the command layer and the admin API alike.
#[tokio::test]
async fn the_overview_shows_money_moved_per_minute_from_the_store() {
    use opdesk::control;
    let ase = TestAse::spawn().await;
    let s = ase.state.services.clone();
    let before = control::overview(&s).await.unwrap().activity;
    let usd_now = |a: &opdesk::control::dto::Activity| {
        a.moved
            .iter()
            .find(|m| m.asset_code == "USD")
            .map_or(0, |m| *m.per_minute.last().unwrap())
    };
    let (status, body) = ase
        .admin(Method::POST, "/wallets/alice/deposit", Some(r#"{"value":"1234"}"#))
        .await;
    assert_eq!(status, 200, "{body}");
    let after = control::overview(&s).await.unwrap().activity;
    assert!(
        after
            .moved
            .iter()
            .all(|m| m.per_minute.len() == control::dto::ACTIVITY_MINUTES)
    );
    // (a minute may turn between the two reads: then the deposit is all of the new minute)
    let grew = usd_now(&after) - usd_now(&before);
    assert!(
        grew == 1234 || (after.until != before.until && usd_now(&after) >= 1234),
        "{before:?} {after:?}"
    );
    let (status, body) = ase.admin(Method::GET, "/overview", None).await;
    assert_eq!(status, 200, "{body}");
    let remote: opdesk::control::dto::Overview = serde_json::from_value(body).unwrap();
    assert_eq!(usd_now(&remote.activity), usd_now(&after));
    assert_eq!((remote.activity.sending, remote.activity.webhooks_dead), (0, 0));
}

/// A browsing session cancels one incoming-payment grant per page view: closed grants (cancelled by their
/// client, rejected) are hidden from `/grants` unless `all=true`; `state=` still finds them.
#[tokio::test]
async fn closed_grants_are_hidden_unless_asked_for() {
    use opdesk::states::GrantState;
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let base = ase.url("");
    let request = |access: Value, interact: bool| {
        let mut body = serde_json::json!({"access_token": {"access": access}, "client": format!("{base}/demo-client")});
        if interact {
            body["interact"] = serde_json::json!({"start": ["redirect"]});
        }
        let (client, auth) = (&client, format!("{base}/auth"));
        async move {
            let r = client.send(Method::POST, &auth, None, Some(&body)).await.unwrap();
            assert_eq!(r.status, 200, "{}", r.body);
            r.body
        }
    };
    let incoming = serde_json::json!([{"type": "incoming-payment", "actions": ["create"]}]);
    // the extension's page view: a grant, then its cancellation by the client (DELETE on the continue URI)
    let cancelled = request(incoming.clone(), false).await;
    let r = client
        .send(
            Method::DELETE,
            cancelled["continue"]["uri"].as_str().unwrap(),
            cancelled["continue"]["access_token"]["value"].as_str(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 204, "{}", r.body);
    let kept = request(incoming, false).await;
    let outgoing = serde_json::json!([{"type": "outgoing-payment", "actions": ["create"],
        "identifier": format!("{base}/alice")}]);
    request(outgoing.clone(), true).await;
    request(outgoing, true).await;
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let rejected = pending[0]["id"].as_str().unwrap().to_owned();
    let (s, _) = ase
        .admin(Method::POST, &format!("/grants/{rejected}/reject"), Some("{}"))
        .await;
    assert_eq!(s, 200);

    let states = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|g| g["state"].as_str().unwrap().to_owned())
            .collect()
    };
    let (s, open) = ase.admin(Method::GET, "/grants", None).await;
    assert_eq!(s, 200, "{open}");
    assert_eq!(open.as_array().unwrap().len(), 2, "{open}");
    assert!(
        states(&open)
            .iter()
            .all(|s| !s.parse::<GrantState>().unwrap().is_closed()),
        "{open}"
    );
    assert!(open.as_array().unwrap().iter().any(|g| g["id"] != rejected));
    let (_, all) = ase.admin(Method::GET, "/grants?all=true", None).await;
    assert_eq!(all.as_array().unwrap().len(), 4, "{all}");
    let mut closed: Vec<String> = states(&all)
        .into_iter()
        .filter(|s| s.parse::<GrantState>().unwrap().is_closed())
        .collect();
    closed.sort();
    assert_eq!(
        closed,
        [GrantState::Rejected.to_string(), GrantState::Revoked.to_string()]
    );
    let (_, revoked) = ase.admin(Method::GET, "/grants?state=revoked", None).await;
    assert_eq!(revoked.as_array().unwrap().len(), 1, "{revoked}");
    assert_ne!(kept["continue"]["uri"], cancelled["continue"]["uri"]);
    let (s, e) = ase.admin(Method::GET, "/grants?all=maybe", None).await;
    assert_eq!(s, 400, "{e}");
}
