//! Wallet address server: documents and JWKS validated against the spec's own schemas, 404s, cache headers,
//! persistence across restarts and reseeding of a fresh data dir.

use crate::common::{TestAse, assert_envelope, assert_matches_schema};

#[tokio::test]
async fn wallet_document_matches_the_spec() {
    let ase = TestAse::spawn().await;
    let res = ase.http.get(ase.url("/alice")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["cache-control"].to_str().unwrap().contains("max-age="));
    let body: serde_json::Value = res.json().await.unwrap();
    assert_matches_schema("wallet-address-server.yaml", "wallet-address", &body);
    assert_eq!(body["id"], ase.url("/alice"));
    assert_eq!(body["assetCode"], "USD");
    assert_eq!(body["assetScale"], 2);
    assert_eq!(body["authServer"], ase.url("/auth"));
    assert_eq!(body["resourceServer"], ase.base);
    assert!(!body["resourceServer"].as_str().unwrap().ends_with('/'));
    let (_, carol) = ase.get("/carol").await;
    assert_matches_schema("wallet-address-server.yaml", "wallet-address", &carol);
    assert_eq!(carol["assetCode"], "EUR");
}

#[tokio::test]
async fn demo_client_jwks_has_its_key_and_matches_the_private_key_file() {
    let ase = TestAse::spawn().await;
    let (status, body) = ase.get("/demo-client/jwks.json").await;
    assert_eq!(status, 200);
    assert_matches_schema("wallet-address-server.yaml", "json-web-key-set", &body);
    let keys = body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["alg"], "EdDSA");
    assert_eq!(keys[0]["kty"], "OKP");
    assert_eq!(keys[0]["crv"], "Ed25519");
    let pem = std::fs::read_to_string(ase.dir.path().join("demo-client.pem")).unwrap();
    let secret = opdesk::httpsig::jwk::from_pkcs8_pem(&pem).unwrap();
    let jwk: opdesk::httpsig::jwk::Jwk = serde_json::from_value(keys[0].clone()).unwrap();
    assert_eq!(jwk.verifying_key().unwrap(), secret.verifying_key());
    let (status, body) = ase.get("/alice/jwks.json").await;
    assert_eq!(status, 200);
    assert_eq!(body, serde_json::json!({"keys": []}));
}

#[tokio::test]
async fn unknown_wallet_is_a_404_envelope() {
    let ase = TestAse::spawn().await;
    for path in ["/nobody", "/nobody/jwks.json", "/nobody/did.json", "/no/such/route"] {
        let (status, body) = ase.get(path).await;
        assert_eq!(status, 404, "{path}");
        assert_envelope(&body, "not_found");
    }
    let (status, body) = ase.get("/alice/did.json").await;
    assert_eq!(status, 500);
    assert_envelope(&body, "not_implemented");
    let (status, _) = ase.get("/healthz").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn restart_keeps_data_and_never_reseeds_and_a_new_dir_reseeds() {
    let ase = TestAse::spawn().await;
    let (s, _) = ase
        .admin(
            reqwest::Method::POST,
            "/wallets/alice/withdraw",
            Some(r#"{"value":"100"}"#),
        )
        .await;
    assert_eq!(s, 200);
    let (_, jwks_before) = ase.get("/demo-client/jwks.json").await;
    let (dir, addr) = ase.stop().await;

    let ase = TestAse::spawn_in(dir.clone(), Some(addr)).await;
    assert_eq!(ase.balance("alice").await, 100_000 - 100, "no second seeding deposit");
    let (_, jwks_after) = ase.get("/demo-client/jwks.json").await;
    assert_eq!(jwks_before, jwks_after, "no second demo key");
    let (_, wallets) = ase.admin(reqwest::Method::GET, "/wallets", None).await;
    assert_eq!(wallets.as_array().unwrap().len(), 4);
    drop(ase);

    let fresh = TestAse::spawn().await;
    assert_eq!(fresh.balance("alice").await, 100_000);
}

#[tokio::test]
async fn seeding_can_be_switched_off() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[demo]\nseed = false\n").unwrap();
    let ase = TestAse::spawn_in(std::sync::Arc::new(dir), None).await;
    let (status, _) = ase.get("/alice").await;
    assert_eq!(status, 404);
    assert!(!ase.dir.path().join("demo-client.pem").exists());
}

/// Browser clients: a preflight for a signed POST from any origin is answered with what it asked for; simple
/// requests to wallet addresses, JWKS and the GNAP endpoint carry `Access-Control-Allow-Origin`; the admin
/// API carries none.
#[tokio::test]
async fn browsers_may_call_open_payments_from_any_origin_but_not_the_admin_api() {
    let ase = TestAse::spawn().await;
    let origin = "https://wallet.example";
    let preflight = ase
        .http
        .request(reqwest::Method::OPTIONS, ase.url("/incoming-payments"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-digest,content-type,signature,signature-input",
        )
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let h = preflight.headers();
    assert_eq!(h["access-control-allow-origin"], "*");
    assert!(
        h["access-control-allow-methods"].to_str().unwrap().contains("POST"),
        "{h:?}"
    );
    let allowed = h["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase();
    for want in ["authorization", "signature", "signature-input", "content-digest"] {
        assert!(allowed.contains(want), "{want} in {allowed}");
    }
    assert_eq!(h["access-control-max-age"], "3600");
    for path in ["/alice", "/alice/jwks.json"] {
        let r = ase
            .http
            .get(ase.url(path))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["access-control-allow-origin"], "*", "{path}");
    }
    let refused = ase
        .http
        .post(ase.url("/auth"))
        .header("origin", origin)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert!(refused.status().is_client_error());
    assert_eq!(
        refused.headers()["access-control-allow-origin"],
        "*",
        "errors reach the page too"
    );
    let admin = ase
        .http
        .get(ase.url("/admin/wallets"))
        .bearer_auth(&ase.admin_token)
        .header("origin", origin)
        .send()
        .await
        .unwrap();
    assert_eq!(admin.status(), 200);
    assert!(admin.headers().get("access-control-allow-origin").is_none());
    let admin_preflight = ase
        .http
        .request(reqwest::Method::OPTIONS, ase.url("/admin/wallets"))
        .header("origin", origin)
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert!(admin_preflight.headers().get("access-control-allow-origin").is_none());
}

/// `[server] cors_origins` narrows CORS to the origins named: they get their origin back, others nothing.
#[tokio::test]
async fn cors_can_be_limited_to_named_origins() {
    let ase = TestAse::spawn_with("[server]\ncors_origins = [\"https://wallet.example\"]\n").await;
    for (origin, allowed) in [("https://wallet.example", true), ("https://evil.example", false)] {
        let preflight = ase
            .http
            .request(reqwest::Method::OPTIONS, ase.url("/incoming-payments"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization,signature")
            .send()
            .await
            .unwrap();
        let got = preflight.headers().get("access-control-allow-origin");
        assert_eq!(got.map(|v| v.to_str().unwrap()), allowed.then_some(origin), "{origin}");
        let r = ase
            .http
            .get(ase.url("/alice"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let got = r.headers().get("access-control-allow-origin");
        assert_eq!(got.map(|v| v.to_str().unwrap()), allowed.then_some(origin), "{origin}");
    }
}
