//! GNAP authorization server end to end with the project's own signed client: non-interactive, interactive
//! with finish, and polling grants; rotation and revocation; every refusal the issue lists; a hostile JWKS
//! host; the exactly-once token under concurrent continues; 413 for oversized bodies; unknown members
//! ignored where the spec leaves objects open; and the spec's codes for rotating a dead grant's token.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{TestAse, assert_envelope, assert_matches_pointer};

const GRANT_200: &str = "/paths/~1/post/responses/200/content/application~1json/schema";
const CONTINUE_200: &str = "/paths/~1continue~1%7Bid%7D/post/responses/200/content/application~1json/schema";
const ROTATE_200: &str = "/paths/~1token~1%7Bid%7D/post/responses/200/content/application~1json/schema";

fn incoming_grant(ase: &TestAse) -> Value {
    json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["create", "read", "complete"], "identifier": ase.url("/bob")}]},
        "client": ase.url("/demo-client"),
    })
}

fn outgoing_grant(ase: &TestAse, finish: Option<&str>) -> Value {
    let mut interact = json!({"start": ["redirect"]});
    if let Some(uri) = finish {
        interact["finish"] = json!({"method": "redirect", "uri": uri, "nonce": "client-nonce-123"});
    }
    json!({
        "access_token": {"access": [{
            "type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/alice"),
            "limits": {"debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}, "interval": "R12/2026-01-01T00:00:00Z/P1M"}
        }]},
        "client": {"walletAddress": ase.url("/demo-client")},
        "interact": interact,
    })
}

async fn approve(ase: &TestAse, grant_id: &str) {
    let (s, b) = ase
        .admin(Method::POST, &format!("/grants/{grant_id}/approve"), Some("{}"))
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["state"], "approved");
}

/// The grant id behind a pending interaction (the operator's view).
async fn pending_grant_id(ase: &TestAse) -> String {
    let (_, list) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    list[0]["id"].as_str().expect("a pending grant").to_owned()
}

#[tokio::test]
async fn non_interactive_grant_is_issued_at_once() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&incoming_grant(&ase)))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    assert_matches_pointer("auth-server.yaml", GRANT_200, &res.body);
    let at = &res.body["access_token"];
    assert!(at["value"].as_str().unwrap().len() >= 32);
    assert!(at["manage"].as_str().unwrap().starts_with(&ase.url("/auth/token/")));
    assert!(!at["manage"].as_str().unwrap().contains(at["value"].as_str().unwrap()));
    assert_eq!(at["expires_in"], 600);
    assert_eq!(at["access"], incoming_grant(&ase)["access_token"]["access"]);
    assert!(
        res.body["continue"]["uri"]
            .as_str()
            .unwrap()
            .starts_with(&ase.url("/auth/continue/"))
    );
    let info = ase
        .state
        .gnap
        .introspect(at["value"].as_str().unwrap())
        .await
        .unwrap()
        .expect("live token");
    assert_eq!(info.access.len(), 1);
}

#[tokio::test]
async fn interactive_grant_with_finish_approve_redirect_continue_rotate_revoke() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let mut events = ase.state.bus.subscribe();
    let finish = "http://127.0.0.1:9/callback?state=xyz";
    let res = client
        .send(
            Method::POST,
            &ase.url("/auth"),
            None,
            Some(&outgoing_grant(&ase, Some(finish))),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    assert_matches_pointer("auth-server.yaml", GRANT_200, &res.body);
    assert!(res.body.get("access_token").is_none());
    let redirect = res.body["interact"]["redirect"].as_str().unwrap().to_owned();
    let as_nonce = res.body["interact"]["finish"].as_str().unwrap().to_owned();
    let cont_uri = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let cont_token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(redirect.starts_with(&ase.url("/auth/interact/")));

    // the browser waits on the interaction page until the operator decides
    let page = ase.http.get(&redirect).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.unwrap();
    assert!(html.contains("up to 5.00 USD"), "{html}");
    assert!(html.contains("Waiting for the account holder"), "{html}");

    // continuing before approval is refused: this grant has a finish, so it cannot be polled
    let r = client
        .send(Method::POST, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    assert_envelope(&r.body, "request_denied");

    let grant_id = pending_grant_id(&ase).await;
    let saw_pending = loop {
        match tokio::time::timeout(Duration::from_secs(1), events.recv())
            .await
            .map(|r| r.map(|r| r.event))
        {
            Ok(Ok(opdesk::events::DomainEvent::GrantPending { id, .. })) => break id,
            Ok(Ok(_)) => continue,
            other => panic!("no GrantPending event: {other:?}"),
        }
    };
    assert_eq!(saw_pending, grant_id);
    approve(&ase, &grant_id).await;

    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects.get(&redirect).send().await.unwrap();
    assert_eq!(r.status(), 303);
    let location = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with("http://127.0.0.1:9/callback?state=xyz&"));
    let q: std::collections::HashMap<_, _> = location.query_pairs().into_owned().collect();
    let interact_ref = q["interact_ref"].clone();
    assert!(opdesk::httpsig::verify_interaction_hash(
        "client-nonce-123",
        &as_nonce,
        &interact_ref,
        &ase.url("/auth"),
        &q["hash"]
    ));
    assert_eq!(
        q["hash"],
        opdesk::httpsig::interaction_hash_std("client-nonce-123", &as_nonce, &interact_ref, &ase.url("/auth"))
    );

    // a wrong interact_ref is refused; the right one issues the token once
    let r = client
        .send(
            Method::POST,
            &cont_uri,
            Some(&cont_token),
            Some(&json!({"interact_ref": "nope"})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 404);
    assert_envelope(&r.body, "invalid_continuation");
    let r = client
        .send(
            Method::POST,
            &cont_uri,
            Some(&cont_token),
            Some(&json!({"interact_ref": interact_ref})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_matches_pointer("auth-server.yaml", CONTINUE_200, &r.body);
    let token = r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let manage = r.body["access_token"]["manage"].as_str().unwrap().to_owned();
    assert_eq!(
        r.body["access_token"]["access"],
        outgoing_grant(&ase, None)["access_token"]["access"]
    );
    let again = client
        .send(
            Method::POST,
            &cont_uri,
            Some(&cont_token),
            Some(&json!({"interact_ref": interact_ref})),
        )
        .await
        .unwrap();
    assert_eq!(again.status, 401, "issued once: {}", again.body);

    // the access token is not a continuation token, and the continuation token is not an access token
    let r = client.send(Method::POST, &cont_uri, Some(&token), None).await.unwrap();
    assert_eq!(r.status, 401);
    assert_envelope(&r.body, "invalid_continuation");
    assert!(ase.state.gnap.introspect(&cont_token).await.unwrap().is_none());

    // rotate: new value and manage URL; the old ones are dead
    let r = client.send(Method::POST, &manage, Some(&token), None).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_matches_pointer("auth-server.yaml", ROTATE_200, &r.body);
    let token2 = r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let manage2 = r.body["access_token"]["manage"].as_str().unwrap().to_owned();
    assert_ne!(token2, token);
    assert_ne!(manage2, manage);
    assert!(ase.state.gnap.introspect(&token).await.unwrap().is_none());
    assert!(ase.state.gnap.introspect(&token2).await.unwrap().is_some());
    let r = client.send(Method::POST, &manage, Some(&token), None).await.unwrap();
    assert_eq!(r.status, 401, "old manage URL is dead");
    let r = client.send(Method::POST, &manage2, Some(&token), None).await.unwrap();
    assert_eq!(r.status, 401, "presented token must be the managed one");

    // revoke: 204, idempotent, and the token is dead
    let r = client
        .send(Method::DELETE, &manage2, Some(&token2), None)
        .await
        .unwrap();
    assert_eq!(r.status, 204);
    assert!(r.raw.is_empty());
    let r = client
        .send(Method::DELETE, &manage2, Some(&token2), None)
        .await
        .unwrap();
    assert_eq!(r.status, 204);
    assert!(ase.state.gnap.introspect(&token2).await.unwrap().is_none());
    let r = client.send(Method::POST, &manage2, Some(&token2), None).await.unwrap();
    assert_eq!(r.status, 401, "a revoked token cannot be rotated");
}

#[tokio::test]
async fn polling_grant_waits_then_issues() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&outgoing_grant(&ase, None)))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["continue"]["wait"], 1);
    let cont_uri = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let cont_token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = client
        .send(Method::POST, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert_envelope(&r.body, "too_fast");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = client
        .send(Method::POST, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_matches_pointer("auth-server.yaml", CONTINUE_200, &r.body);
    assert!(r.body.get("access_token").is_none());
    assert_eq!(r.body["continue"]["wait"], 1);
    approve(&ase, &pending_grant_id(&ase).await).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = client
        .send(Method::POST, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["access_token"]["value"].is_string());
}

#[tokio::test]
async fn reject_then_continue_is_request_denied_and_cancel_revokes() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&outgoing_grant(&ase, None)))
        .await
        .unwrap();
    let cont_uri = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let cont_token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let id = pending_grant_id(&ase).await;
    let (s, b) = ase
        .admin(
            Method::POST,
            &format!("/grants/{id}/reject"),
            Some(r#"{"reason":"not today"}"#),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(b["state"], "rejected");
    let (s, _) = ase
        .admin(Method::POST, &format!("/grants/{id}/approve"), Some("{}"))
        .await;
    assert_eq!(s, 409, "a decided grant stays decided");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = client
        .send(Method::POST, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    assert_envelope(&r.body, "request_denied");
    let r = client
        .send(Method::DELETE, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 204);
    let (_, g) = ase.admin(Method::GET, &format!("/grants/{id}"), None).await;
    assert_eq!(g["state"], "revoked");
}

#[tokio::test]
async fn grant_request_refusals() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let auth = ase.url("/auth");
    let mut no_interact = outgoing_grant(&ase, None);
    no_interact.as_object_mut().unwrap().remove("interact");
    let jwk_client = {
        let mut g = outgoing_grant(&ase, None);
        let (_, jwks) = ase.get("/demo-client/jwks.json").await;
        g["client"] = json!({"jwk": jwks["keys"][0]});
        g
    };
    let foreign_wallet = {
        let mut g = outgoing_grant(&ase, None);
        g["access_token"]["access"][0]["identifier"] = json!("https://elsewhere.test/alice");
        g
    };
    let cases = [
        (no_interact, 400, "invalid_request"),
        (jwk_client, 400, "invalid_client"),
        (foreign_wallet, 400, "invalid_request"),
        (json!({"client": ase.url("/demo-client")}), 400, "invalid_request"),
        (
            json!({"client": ase.url("/demo-client"), "access_token": {"access": [{"type": "quote", "actions": ["list"]}]}}),
            400,
            "invalid_request",
        ),
        (
            json!({"client": ase.url("/demo-client"), "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/alice"),
            "limits": {"debitAmount": {"value": "5", "assetCode": "EUR", "assetScale": 2}}}]}, "interact": {"start": ["redirect"]}}),
            400,
            "invalid_request",
        ),
        (
            json!({"client": ase.url("/demo-client"), "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/alice")}]},
            "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "https://good@evil.test/cb", "nonce": "n"}}}),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in cases {
        let r = client.send(Method::POST, &auth, None, Some(&body)).await.unwrap();
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert_envelope(&r.body, code);
    }
    let r = client
        .send_raw(
            Method::POST,
            &auth,
            {
                let body = b"{not json";
                client.sign(&Method::POST, &auth, None, body, now()).unwrap()
            },
            b"{not json".to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert_envelope(&r.body, "invalid_request");
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

#[tokio::test]
async fn signature_refusals() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let auth = ase.url("/auth");
    let body = serde_json::to_vec(&incoming_grant(&ase)).unwrap();

    // unsigned
    let r = ase
        .http
        .post(&auth)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // tampered body (digest no longer matches)
    let headers = client.sign(&Method::POST, &auth, None, &body, now()).unwrap();
    let mut tampered = body.clone();
    let pos = tampered.iter().position(|b| *b == b'b').unwrap();
    tampered[pos] = b'c';
    let r = client.send_raw(Method::POST, &auth, headers, tampered).await.unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    assert_envelope(&r.body, "invalid_client");

    // wrong key under the right kid
    let wrong = opdesk::client::SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), client.keyid());
    let r = wrong
        .send(Method::POST, &auth, None, Some(&incoming_grant(&ase)))
        .await
        .unwrap();
    assert_eq!(r.status, 401);

    // unknown kid: 400 `could not determine client`, as the reference ASE answers (clients take it as a
    // removed key); a found key whose signature fails stays 401 (above)
    let unknown = opdesk::client::SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), "no-such-kid");
    let r = unknown
        .send(Method::POST, &auth, None, Some(&incoming_grant(&ase)))
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert_envelope(&r.body, "invalid_client");
    assert_eq!(r.body["error"]["description"], "could not determine client");
    assert!(
        r.body["error"]["details"]["reason"]
            .as_str()
            .unwrap()
            .contains("no-such-kid"),
        "{}",
        r.body
    );

    // stale created
    let headers = client.sign(&Method::POST, &auth, None, &body, now() - 1000).unwrap();
    let r = client
        .send_raw(Method::POST, &auth, headers, body.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 401);

    // the same signed grant request twice: two honest identical requests in one second sign alike (the SDK
    // sends no nonce), so each is a new grant request, as at the reference ASE
    let headers = client.sign(&Method::POST, &auth, None, &body, now()).unwrap();
    let r = client
        .send_raw(Method::POST, &auth, headers.clone(), body.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let again = client
        .send_raw(Method::POST, &auth, headers, body.clone())
        .await
        .unwrap();
    assert_eq!(
        again.status, 200,
        "an identical grant request is a new one: {}",
        again.body
    );
    assert_ne!(r.body["access_token"]["value"], again.body["access_token"]["value"]);

    // signed for another URL (a host alias)
    let other = auth.replace("127.0.0.1", "localhost");
    let headers = client.sign(&Method::POST, &other, None, &body, now()).unwrap();
    let r = client
        .send_raw(Method::POST, &auth, headers, body.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 401);

    // wrong continuation token (a different body: the same one signed in the same second would be a replay)
    let mut other_grant = incoming_grant(&ase);
    other_grant["access_token"]["access"][0]["actions"] = json!(["read"]);
    let res = client
        .send(Method::POST, &auth, None, Some(&other_grant))
        .await
        .unwrap();
    let cont = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let r = client
        .send(Method::POST, &cont, Some("wrong-token"), None)
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    assert_envelope(&r.body, "invalid_continuation");
    let r = client.send(Method::POST, &cont, None, None).await.unwrap();
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn concurrent_continues_issue_one_token() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let res = client
        .send(
            Method::POST,
            &ase.url("/auth"),
            None,
            Some(&outgoing_grant(&ase, Some("http://127.0.0.1:9/cb"))),
        )
        .await
        .unwrap();
    let redirect = res.body["interact"]["redirect"].as_str().unwrap().to_owned();
    let cont = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    approve(&ase, &pending_grant_id(&ase).await).await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let loc = no_redirects.get(&redirect).send().await.unwrap().headers()["location"]
        .to_str()
        .unwrap()
        .to_owned();
    let interact_ref = url::Url::parse(&loc)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "interact_ref")
        .unwrap()
        .1
        .into_owned();
    let body = serde_json::to_vec(&json!({"interact_ref": interact_ref})).unwrap();
    let mut tasks = Vec::new();
    for i in 0..10 {
        let (client, cont, token, body) = (client.clone(), cont.clone(), token.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            // distinct `created` values so no request is a replay of another
            let headers = client
                .sign(&Method::POST, &cont, Some(&token), &body, now() - i)
                .unwrap();
            client.send_raw(Method::POST, &cont, headers, body).await.unwrap()
        }));
    }
    let mut issued = 0;
    for t in tasks {
        let r = t.await.unwrap();
        if r.status == 200 {
            assert!(r.body["access_token"]["value"].is_string());
            issued += 1;
        } else {
            assert_eq!(r.status, 401, "{}", r.body);
        }
    }
    assert_eq!(issued, 1);
}

/// A JWKS host that misbehaves must cost bounded time and give 401, never a hung handler.
#[tokio::test]
async fn hostile_jwks_hosts_are_bounded() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ase = TestAse::spawn_with("[egress]\ntimeout_ms = 700\n").await;
    let signer = opdesk::client::SignedClient::new(opdesk::httpsig::jwk::generate().unwrap(), "k1");
    for mode in ["hang", "garbage", "huge"] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = sock.read(&mut buf).await;
                    match mode {
                        "hang" => tokio::time::sleep(Duration::from_secs(30)).await,
                        "garbage" => {
                            let _ = sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 9\r\n\r\nnot json!").await;
                        }
                        _ => {
                            let _ = sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10485760\r\n\r\n").await;
                            let chunk = vec![b' '; 65536];
                            for _ in 0..160 {
                                if sock.write_all(&chunk).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                });
            }
        });
        let body = json!({
            "access_token": {"access": [{"type": "quote", "actions": ["create"]}]},
            "client": format!("http://{addr}/wallet"),
        });
        let started = std::time::Instant::now();
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            signer.send(Method::POST, &ase.url("/auth"), None, Some(&body)),
        )
        .await
        .expect("bounded")
        .unwrap();
        // keys that cannot be fetched: the reference ASE's answer to a key it cannot find
        assert_eq!(r.status, 400, "{mode}: {}", r.body);
        assert_envelope(&r.body, "invalid_client");
        assert_eq!(r.body["error"]["description"], "could not determine client", "{mode}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{mode} took {:?}",
            started.elapsed()
        );
    }
    assert_eq!(ase.get("/healthz").await.0, 200);
}

#[tokio::test]
async fn subject_grant_returns_the_subject_after_approval() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let body = json!({
        "subject": {"sub_ids": [{"id": ase.url("/alice"), "format": "uri"}]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"]},
    });
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body["interact"]["redirect"].is_string());
    let mut no_interact = body.clone();
    no_interact.as_object_mut().unwrap().remove("interact");
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&no_interact))
        .await
        .unwrap();
    assert_eq!(r.status, 400, "subject grants need interaction");
    approve(&ase, &pending_grant_id(&ase).await).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let cont = res.body["continue"]["uri"].as_str().unwrap();
    let token = res.body["continue"]["access_token"]["value"].as_str().unwrap();
    let r = client.send(Method::POST, cont, Some(token), None).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_matches_pointer("auth-server.yaml", CONTINUE_200, &r.body);
    assert_eq!(r.body["subject"]["sub_ids"][0]["id"], ase.url("/alice"));
    assert!(r.body.get("access_token").is_none());
}

#[tokio::test]
async fn auto_approve_skips_the_operator_and_expired_tokens_still_rotate() {
    let ase = TestAse::spawn_with("[gnap]\nauto_approve = true\naccess_token_expires_in_secs = 1\n").await;
    let client = ase.demo_client().await;
    let res = client
        .send(
            Method::POST,
            &ase.url("/auth"),
            None,
            Some(&outgoing_grant(&ase, Some("http://127.0.0.1:9/cb"))),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200);
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects
        .get(res.body["interact"]["redirect"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303, "approved without an operator");
    let loc = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    let interact_ref = loc
        .query_pairs()
        .find(|(k, _)| k == "interact_ref")
        .unwrap()
        .1
        .into_owned();
    let cont = res.body["continue"]["uri"].as_str().unwrap();
    let ctoken = res.body["continue"]["access_token"]["value"].as_str().unwrap();
    let r = client
        .send(
            Method::POST,
            cont,
            Some(ctoken),
            Some(&json!({"interact_ref": interact_ref})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["access_token"]["expires_in"], 1);
    let token = r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let manage = r.body["access_token"]["manage"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(ase.state.gnap.introspect(&token).await.unwrap().is_none(), "expired");
    let r = client.send(Method::POST, &manage, Some(&token), None).await.unwrap();
    assert_eq!(
        r.status, 200,
        "an expired token rotates while its grant lives: {}",
        r.body
    );
    let fresh = r.body["access_token"]["value"].as_str().unwrap();
    assert!(ase.state.gnap.introspect(fresh).await.unwrap().is_some());
}

#[tokio::test]
async fn oversized_bodies_are_413_with_the_gnap_envelope() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let mut body = incoming_grant(&ase);
    body["padding"] = json!("x".repeat(70_000));
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 413, "{}", r.body);
    assert_envelope(&r.body, "invalid_request");
    // also while the console captures request bodies (the request log reads the body first)
    ase.state.capture.store(1, std::sync::atomic::Ordering::Relaxed);
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 413, "{}", r.body);
    assert_envelope(&r.body, "invalid_request");
    ase.state.capture.store(0, std::sync::atomic::Ordering::Relaxed);
    // the continuation and token endpoints answer the same
    let ok = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&incoming_grant(&ase)))
        .await
        .unwrap();
    assert_eq!(ok.status, 200, "{}", ok.body);
    let cont = ok.body["continue"]["uri"].as_str().unwrap();
    let ctoken = ok.body["continue"]["access_token"]["value"].as_str().unwrap();
    let r = client
        .send(
            Method::POST,
            cont,
            Some(ctoken),
            Some(&json!({"padding": "x".repeat(70_000)})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 413, "{}", r.body);
    assert_envelope(&r.body, "invalid_request");
}

#[tokio::test]
async fn unknown_members_are_ignored_and_wrong_types_refused() {
    let ase = TestAse::spawn_with("[gnap]\nauto_approve = true\n").await;
    let client = ase.demo_client().await;
    let auth = ase.url("/auth");

    // extensions at every level the spec leaves open
    let mut body = incoming_grant(&ase);
    body["access_token"]["flags"] = json!(["bearer"]);
    body["extension"] = json!({"any": 1});
    let r = client.send(Method::POST, &auth, None, Some(&body)).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let subject = json!({
        "subject": {"sub_ids": [{"id": ase.url("/alice"), "format": "uri", "note": "x"}], "assertion_formats": ["id_token"]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"], "hints": {"ui_locales": ["en"]}},
    });
    let r = client.send(Method::POST, &auth, None, Some(&subject)).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);

    // known members of the wrong type, and unknown members where an ignored one would widen the grant
    let mut wrong_type = incoming_grant(&ase);
    wrong_type["access_token"]["access"] = json!("all");
    let mut bad_subject = subject.clone();
    bad_subject["subject"]["sub_ids"] = json!("alice");
    let mut misspelt_limit = outgoing_grant(&ase, None);
    misspelt_limit["access_token"]["access"][0]["limits"] =
        json!({"debitAmmount": {"value": "5", "assetCode": "USD", "assetScale": 2}});
    for bad in [wrong_type, bad_subject, misspelt_limit] {
        let r = client.send(Method::POST, &auth, None, Some(&bad)).await.unwrap();
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_envelope(&r.body, "invalid_request");
    }

    // continue: an unknown member is ignored; a wrongly typed interact_ref is refused
    let res = client
        .send(
            Method::POST,
            &auth,
            None,
            Some(&outgoing_grant(&ase, Some("http://127.0.0.1:9/cb"))),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects
        .get(res.body["interact"]["redirect"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let loc = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    let interact_ref = loc
        .query_pairs()
        .find(|(k, _)| k == "interact_ref")
        .unwrap()
        .1
        .into_owned();
    let cont = res.body["continue"]["uri"].as_str().unwrap();
    let ctoken = res.body["continue"]["access_token"]["value"].as_str().unwrap();
    let r = client
        .send(Method::POST, cont, Some(ctoken), Some(&json!({"interact_ref": 5})))
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert_envelope(&r.body, "invalid_request");
    let r = client
        .send(
            Method::POST,
            cont,
            Some(ctoken),
            Some(&json!({"interact_ref": interact_ref, "extension": {"x": [1, 2]}})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["access_token"]["value"].is_string(), "{}", r.body);
}

#[tokio::test]
async fn rotating_a_token_of_a_cancelled_grant_is_invalid_client() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&incoming_grant(&ase)))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let token = res.body["access_token"]["value"].as_str().unwrap();
    let manage = res.body["access_token"]["manage"].as_str().unwrap();
    let cont = res.body["continue"]["uri"].as_str().unwrap();
    let ctoken = res.body["continue"]["access_token"]["value"].as_str().unwrap();
    let r = client.send(Method::DELETE, cont, Some(ctoken), None).await.unwrap();
    assert_eq!(r.status, 204, "{}", r.body);
    let r = client.send(Method::POST, manage, Some(token), None).await.unwrap();
    // auth-server.yaml lists 400/404 invalid_rotation and 401 invalid_client for POST /token/{id}
    assert_eq!(r.status, 401, "{}", r.body);
    assert_envelope(&r.body, "invalid_client");
    assert_matches_pointer(
        "auth-server.yaml",
        "/paths/~1token~1%7Bid%7D/post/responses/401/content/application~1json/schema",
        &r.body,
    );
}
