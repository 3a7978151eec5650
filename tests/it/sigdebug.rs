//! The signature debugger over real HTTP: signed requests that fail in each way reach a real server, and
//! `GET /admin/requests/{id}` explains each one; `opdesk requests show` prints the same through the server,
//! and `opdesk sig explain` reproduces the RFC 9421 B.2.6 signature base from a saved request.

use std::process::{Command, Output};

use opdesk::{client::SignedClient, httpsig::jwk};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{TestAse, grant_token};

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vectors/httpsig/");

fn opdesk(ase_dir: &std::path::Path, listen: &str, args: &[&str]) -> Output {
    std::fs::create_dir_all(ase_dir).unwrap();
    std::fs::set_permissions(ase_dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let cfg = ase_dir.join("test-config.toml");
    std::fs::write(&cfg, "").unwrap();
    Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(["--data-dir", ase_dir.to_str().unwrap(), "--listen", listen])
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .env("OPDESK_CONFIG", &cfg)
        .output()
        .expect("run opdesk")
}

/// The newest request in the server's log, explained.
async fn newest(ase: &TestAse) -> Value {
    let (s, list) = ase.admin(Method::GET, "/requests?limit=1", None).await;
    assert_eq!(s, 200, "{list}");
    let id = list["items"][0]["id"].as_str().unwrap().to_owned();
    let (s, d) = ase.admin(Method::GET, &format!("/requests/{id}"), None).await;
    assert_eq!(s, 200, "{d}");
    d
}

fn reasons(d: &Value) -> Vec<String> {
    d["report"]["verdict"]["reasons"]
        .as_array()
        .unwrap_or_else(|| panic!("no reasons: {d}"))
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_kind_is_explained_by_the_server() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let client_url = ase.url("/demo-client");
    let tok = grant_token(
        &c,
        &ase.base,
        json!([{"type": "incoming-payment", "actions": ["create", "read"], "identifier": ase.url("/bob")}]),
    )
    .await;
    let url = ase.url("/incoming-payments");
    let body = serde_json::to_vec(&json!({"walletAddress": ase.url("/bob"), "metadata": {"n": 1}})).unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let send = |c: &SignedClient, headers, body: Vec<u8>| {
        let c = c.clone();
        let url = url.clone();
        async move { c.send_raw(Method::POST, &url, headers, body).await.unwrap() }
    };

    // A good signature: ok, with its key and base.
    let h = c.sign(&Method::POST, &url, Some(&tok), &body, now).unwrap();
    let r = send(&c, h, body.clone()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let d = newest(&ase).await;
    assert_eq!(d["signature"], "ok", "{d}");
    assert_eq!(d["report"]["verdict"]["outcome"], "ok", "{d}");
    assert_eq!(d["report"]["key"]["verified"], true);
    assert_eq!(d["report"]["key"]["source"], format!("{client_url}/jwks.json"));
    let base = d["report"]["base"].as_str().unwrap();
    assert!(
        base.starts_with(&format!("\"@method\": POST\n\"@target-uri\": {url}\n")),
        "{base}"
    );
    assert!(!base.contains(&tok), "the token is masked in the base");
    let ok_id = d["id"].as_str().unwrap().to_owned();

    // Tampered body (same length): the digests differ.
    let h = c.sign(&Method::POST, &url, Some(&tok), &body, now).unwrap();
    let mut tampered = body.clone();
    let at = tampered.iter().position(|b| *b == b'1').unwrap();
    tampered[at] = b'2';
    let r = send(&c, h, tampered).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let d = newest(&ase).await;
    let rs = reasons(&d);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert!(rs[0].starts_with("content-digest differs: sent sha-512=:"), "{rs:?}");
    assert!(rs[0].contains(", body hashes to sha-512=:"), "{rs:?}");
    assert_eq!(d["report"]["digest"]["matches"], false);

    // Stale created.
    let h = c.sign(&Method::POST, &url, Some(&tok), &body, now - 412).unwrap();
    let r = send(&c, h, body.clone()).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let rs = reasons(&newest(&ase).await);
    assert_eq!(rs.len(), 1, "{rs:?}");
    // The server's clock may have moved a second since `now`.
    assert!(
        rs[0] == "`created` is 412 s old, window is 300 s" || rs[0] == "`created` is 413 s old, window is 300 s",
        "{rs:?}"
    );

    // Authorization sent but not covered.
    let mut h = c.sign(&Method::POST, &url, None, &body, now).unwrap();
    h.insert("authorization", format!("GNAP {tok}").parse().unwrap());
    let r = send(&c, h, body.clone()).await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(reasons(&newest(&ase).await), vec!["`authorization` is not covered"]);

    // Unknown kid: the key set it was looked up in is named.
    let pem = std::fs::read_to_string(ase.dir.path().join("demo-client.pem")).unwrap();
    let stranger = SignedClient::new(jwk::from_pkcs8_pem(&pem).unwrap(), "no-such-kid");
    let h = stranger.sign(&Method::POST, &url, Some(&tok), &body, now).unwrap();
    let r = send(&stranger, h, body.clone()).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let d = newest(&ase).await;
    assert_eq!(
        reasons(&d),
        vec![format!("no key with kid `no-such-kid` at {client_url}/jwks.json")]
    );

    // Wrong key under the right kid.
    let impostor = SignedClient::new(jwk::generate().unwrap(), c.keyid());
    let h = impostor.sign(&Method::POST, &url, Some(&tok), &body, now).unwrap();
    let r = send(&impostor, h, body.clone()).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let d = newest(&ase).await;
    assert_eq!(
        reasons(&d),
        vec![format!(
            "signature does not verify with kid `{}` of {client_url}",
            c.keyid()
        )]
    );
    assert_eq!(d["report"]["key"]["verified"], false);
    let wrong_id = d["id"].as_str().unwrap().to_owned();

    // The list is newest first, admin requests not in it; an unknown id is a 404.
    let (_, list) = ase.admin(Method::GET, "/requests", None).await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items[0]["id"], wrong_id.as_str());
    assert!(items.iter().all(|i| !i["path"].as_str().unwrap().starts_with("/admin")));
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    let (_, page) = ase.admin(Method::GET, "/requests?limit=2", None).await;
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let (_, next) = ase
        .admin(Method::GET, &format!("/requests?limit=2&cursor={cursor}"), None)
        .await;
    assert_eq!(next["items"][0]["id"], items[2]["id"]);
    let (s, _) = ase.admin(Method::GET, "/requests/nope", None).await;
    assert_eq!(s, 404);

    // The CLI, through the running server, in a pipe.
    let dir = ase.dir.path().to_owned();
    let listen = ase.addr.to_string();
    let (d2, l2, w2) = (dir.clone(), listen.clone(), wrong_id.clone());
    let out = tokio::task::spawn_blocking(move || opdesk(&d2, &l2, &["requests", "show", &w2]))
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for section in [
        "Components",
        "Parameters",
        "Key",
        "Digest",
        "Signature base",
        "Verdict: refused",
    ] {
        assert!(text.contains(section), "{section}: {text}");
    }
    assert!(text.contains("signature does not verify with kid"), "{text}");
    assert!(!text.contains('\u{1b}'), "no escapes in a pipe: {text}");
    let (d2, l2) = (dir.clone(), listen.clone());
    let out = tokio::task::spawn_blocking(move || opdesk(&d2, &l2, &["requests", "show", &ok_id, "--json"]))
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["report"]["verdict"]["outcome"], "ok");
    let out = tokio::task::spawn_blocking(move || opdesk(&dir, &listen, &["requests", "list"]))
        .await
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("ID "), "{text}");
    assert!(text.contains(&wrong_id), "{text}");
}

#[test]
fn requests_need_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = opdesk(dir.path(), "127.0.0.1:0", &["requests", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("running server's memory"),
        "{err}"
    );
    assert!(lines[1].starts_with("hint: start `opdesk serve`"), "{err}");
}

/// The RFC 9421 B.2.6 request saved as raw HTTP (the test request with its Signature headers).
fn b26_file(dir: &std::path::Path, crlf: bool) -> std::path::PathBuf {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{VECTORS}rfc9421-B.2.6-ed25519-request.json")).unwrap())
            .unwrap();
    let raw = std::fs::read_to_string(format!("{VECTORS}rfc9421-test-request.http")).unwrap();
    let (head, body) = raw.split_once("\n\n").unwrap();
    let head = format!(
        "{head}\nSignature-Input: {}\nSignature: {}",
        v["signature_input_header"].as_str().unwrap(),
        v["signature_header"].as_str().unwrap()
    );
    let text = if crlf {
        format!("{}\r\n\r\n{body}", head.replace('\n', "\r\n"))
    } else {
        format!("{head}\n\n{body}")
    };
    let path = dir.join(if crlf { "b26-crlf.http" } else { "b26.http" });
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn sig_explain_reproduces_the_rfc_9421_signature_base() {
    let dir = tempfile::tempdir().unwrap();
    let want = std::fs::read_to_string(format!("{VECTORS}rfc9421-B.2.6-signature-base.txt")).unwrap();
    let key: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{VECTORS}rfc9421-B.1.4-test-key-ed25519.json")).unwrap(),
    )
    .unwrap();
    // A JWKS as Open Payments publishes it: public members only, alg EdDSA.
    let mut public = key["jwk"].clone();
    public.as_object_mut().unwrap().remove("d");
    public["alg"] = json!("EdDSA");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [public]}).to_string()).unwrap();
    let ddir = dir.path().join("data");
    for crlf in [false, true] {
        let file = b26_file(dir.path(), crlf);
        let f = file.to_str().unwrap();
        // Base only: exit 0, the base printed verbatim.
        let out = opdesk(&ddir, "127.0.0.1:0", &["sig", "explain", f, "--now", "1618884473"]);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(&format!("Signature base\n{want}\n")), "{text}");
        assert!(text.contains("not checked"), "{text}");
        // JSON: the base is the vector's, byte for byte; the RFC signature verifies with the RFC key, and the
        // Open Payments policy refuses what the RFC example does not cover.
        let out = opdesk(
            &ddir,
            "127.0.0.1:0",
            &[
                "sig",
                "explain",
                f,
                "--jwks",
                jwks.to_str().unwrap(),
                "--now",
                "1618884473",
                "--json",
            ],
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["base"].as_str().unwrap(), want);
        assert_eq!(v["key"]["verified"], true, "{v}");
        assert_eq!(v["verdict"]["outcome"], "refused");
        assert_eq!(
            v["verdict"]["reasons"],
            json!([
                "`@target-uri` is not covered",
                "`content-digest` is not covered (the request has a body)"
            ])
        );
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("`@target-uri` is not covered"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sig_explain_accepts_a_request_a_client_signed_and_says_why_another_fails() {
    // A request the project's own client signs, saved raw; checked against the server's JWKS URL.
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let url = ase.url("/incoming-payments");
    let body = br#"{"walletAddress":"x"}"#;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let h = c.sign(&Method::POST, &url, Some("TOKEN1"), body, now).unwrap();
    let mut raw = format!("POST /incoming-payments HTTP/1.1\r\nHost: {}\r\n", ase.addr);
    for (k, v) in &h {
        raw.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap()));
    }
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.http");
    std::fs::write(&good, [raw.as_bytes(), b"\r\n", body].concat()).unwrap();
    let bad = dir.path().join("bad.http");
    std::fs::write(&bad, [raw.as_bytes(), b"\r\n", br#"{"walletAddress":"y"}"#].concat()).unwrap();
    let jwks = ase.url("/demo-client/jwks.json");
    let ddir = dir.path().join("data");
    let run = move |file: std::path::PathBuf| {
        let (d, j) = (ddir.clone(), jwks.clone());
        tokio::task::spawn_blocking(move || {
            opdesk(
                &d,
                "127.0.0.1:0",
                &[
                    "sig",
                    "explain",
                    file.to_str().unwrap(),
                    "--jwks",
                    &j,
                    "--scheme",
                    "http",
                ],
            )
        })
    };
    let out = run(good).await.unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Verdict: ok"), "{text}");
    let out = run(bad).await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("✗ content-digest differs: sent sha-512=:"), "{text}");
}

/// Request times are arrival times: distinct and strictly increasing in arrival order, even for requests sent
/// at once, and each create's arrival comes just before the `createdAt` of the payment it created (the
/// console used to stamp requests when it saw them: a dozen shared one millisecond, and a request seemed to
/// arrive after its payment was made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_times_are_arrival_times_in_order_just_before_what_they_created() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let tok = grant_token(
        &c,
        &ase.base,
        json!([{"type": "incoming-payment", "actions": ["create", "read"], "identifier": ase.url("/bob")}]),
    )
    .await;
    let body = json!({"walletAddress": ase.url("/bob")});
    let url = ase.url("/incoming-payments");
    let mut created = Vec::new();
    for _ in 0..10 {
        let r = c.send(Method::POST, &url, Some(&tok), Some(&body)).await.unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        created.push(r.body["createdAt"].as_str().unwrap().to_owned());
    }
    let at_once = (0..10).map(|_| {
        let (c, url, tok, body) = (c.clone(), url.clone(), tok.clone(), body.clone());
        tokio::spawn(async move {
            c.send(Method::POST, &url, Some(&tok), Some(&body))
                .await
                .unwrap()
                .status
        })
    });
    for h in at_once.collect::<Vec<_>>() {
        assert_eq!(h.await.unwrap(), 201);
    }
    let (s, list) = ase.admin(Method::GET, "/requests?limit=1000", None).await;
    assert_eq!(s, 200, "{list}");
    let items = list["items"].as_array().unwrap();
    let times: Vec<&str> = items.iter().map(|i| i["receivedAt"].as_str().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] > w[1]),
        "newest first, all distinct: {times:#?}"
    );
    // the ten sequential creates, oldest first: each arrived before its payment was created, and not long before
    let creates: Vec<&str> = items
        .iter()
        .rev()
        .filter(|i| i["method"] == "POST" && i["path"] == "/incoming-payments")
        .map(|i| i["receivedAt"].as_str().unwrap())
        .take(10)
        .collect();
    assert_eq!(creates.len(), 10);
    for (arrived, made) in creates.iter().zip(&created) {
        let arrived = time::OffsetDateTime::parse(arrived, &time::format_description::well_known::Rfc3339).unwrap();
        let made = time::OffsetDateTime::parse(made, &time::format_description::well_known::Rfc3339).unwrap();
        // createdAt has milliseconds: compare at that precision
        let arrived_ms = arrived
            .replace_nanosecond(arrived.millisecond() as u32 * 1_000_000)
            .unwrap();
        assert!(
            arrived_ms <= made,
            "arrived {arrived} after its payment was created at {made}"
        );
        assert!(made - arrived < time::Duration::milliseconds(500), "{arrived} → {made}");
    }
}

/// The official Rust SDK's form: unquoted components and a bare base64 signature, the parameters as it
/// writes them. Signed over the SDK's own base.
fn sdk_headers(
    key: &ed25519_dalek::SigningKey,
    kid: &str,
    method: &str,
    url: &str,
    token: &str,
    body: &[u8],
    created: i64,
) -> reqwest::header::HeaderMap {
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;
    let digest = opdesk::httpsig::content_digest_sha512(body);
    let fields = [
        ("@method", method.to_owned()),
        ("@target-uri", url.to_owned()),
        ("content-type", "application/json".to_owned()),
        ("authorization", format!("GNAP {token}")),
        ("content-digest", digest.clone()),
        ("content-length", body.len().to_string()),
    ];
    let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
    let raw = format!("({});created={created};keyid=\"{kid}\"", names.join(" "));
    let mut base: String = fields.iter().map(|(n, v)| format!("\"{n}\": {v}\n")).collect();
    base.push_str(&format!("\"@signature-params\": {raw}"));
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign(base.as_bytes()).to_bytes());
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("content-type", "application/json".parse().unwrap());
    h.insert("authorization", format!("GNAP {token}").parse().unwrap());
    h.insert("content-digest", digest.parse().unwrap());
    h.insert("signature-input", format!("sig1={raw}").parse().unwrap());
    h.insert("signature", sig.parse().unwrap());
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_form_request_is_accepted_and_the_debugger_says_so() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let tok = grant_token(
        &c,
        &ase.base,
        json!([{"type": "incoming-payment", "actions": ["create", "read"], "identifier": ase.url("/bob")}]),
    )
    .await;
    let url = ase.url("/incoming-payments");
    let body = serde_json::to_vec(&json!({"walletAddress": ase.url("/bob")})).unwrap();
    let pem = std::fs::read_to_string(ase.dir.path().join("demo-client.pem")).unwrap();
    let key = jwk::from_pkcs8_pem(&pem).unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();

    let h = sdk_headers(&key, c.keyid(), "POST", &url, &tok, &body, now);
    let r = c.send_raw(Method::POST, &url, h, body.clone()).await.unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let d = newest(&ase).await;
    assert_eq!(d["report"]["verdict"]["outcome"], "ok", "{d}");
    let form = d["report"]["form"].as_str().unwrap_or_default();
    assert!(
        form.starts_with("legacy Signature-Input form (accepted as the reference ASE does)"),
        "{d}"
    );
    let id = d["id"].as_str().unwrap().to_owned();
    let (dir, listen) = (ase.dir.path().to_owned(), ase.addr.to_string());
    let out = tokio::task::spawn_blocking(move || opdesk(&dir, &listen, &["requests", "show", &id]))
        .await
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("legacy Signature-Input form (accepted as the reference ASE does)"),
        "{text}"
    );

    // Signed for another method, URL, token or body than the request sent: refused.
    for (method, target, token, b) in [
        ("PUT", url.as_str(), tok.as_str(), body.as_slice()),
        ("POST", &*format!("{url}?x=1"), tok.as_str(), body.as_slice()),
        ("POST", url.as_str(), "other", body.as_slice()),
        (
            "POST",
            url.as_str(),
            tok.as_str(),
            br#"{"walletAddress":"x"}"#.as_slice(),
        ),
    ] {
        let mut h = sdk_headers(&key, c.keyid(), method, target, token, b, now);
        h.insert("authorization", format!("GNAP {tok}").parse().unwrap());
        let r = c.send_raw(Method::POST, &url, h, body.clone()).await.unwrap();
        assert_eq!(r.status, 401, "{method} {target} {token}: {}", r.body);
    }
    // Malformed headers in either form, and both forms mixed: 401, never a 5xx.
    let good = sdk_headers(&key, c.keyid(), "POST", &url, &tok, &body, now);
    let input = good["signature-input"].to_str().unwrap().to_owned();
    let bare = good["signature"].to_str().unwrap().to_owned();
    // Each other covered part changed after signing — the content type, `created`, the key id: refused.
    let keyid = format!("keyid=\"{}\"", c.keyid());
    assert!(
        input.contains(&format!("created={now}")) && input.contains(&keyid),
        "{input}"
    );
    for (what, header, value) in [
        (
            "content-type",
            "content-type",
            "application/json; charset=utf-8".to_owned(),
        ),
        (
            "created",
            "signature-input",
            input.replace(&format!("created={now}"), &format!("created={}", now - 1)),
        ),
        (
            "keyid",
            "signature-input",
            input.replace(&keyid, "keyid=\"someone-else\""),
        ),
    ] {
        let mut h = good.clone();
        h.insert(header, value.parse().unwrap());
        let r = c.send_raw(Method::POST, &url, h, body.clone()).await.unwrap();
        assert_eq!(r.status, 401, "{what} changed: {}", r.body);
    }
    for (si, sig) in [
        (input.replace("sig1=(", "sig1=( "), bare.clone()),
        (format!("{input}, sig2=(@method);keyid=\"x\""), bare.clone()),
        (input.replace(";keyid=", ";alg=\"hmac-sha256\";keyid="), bare.clone()),
        (input.replace("keyid=\"", "keyid=").replace("\"", ""), bare.clone()),
        (input.clone(), format!("{bare}, {bare}")),
        (input.clone(), bare[..40].to_owned()),
        (input.clone(), "sig1=".to_owned()),
        (input.replace("sig1=", "sig2="), format!("sig2={bare}")),
        ("sig1=()".to_owned(), bare.clone()),
        ("sig1=(@method".to_owned(), bare.clone()),
        ("(@method)".to_owned(), bare.clone()),
        (input.clone(), format!("sig1=:{bare}")),
    ] {
        let mut h = good.clone();
        h.insert("signature-input", si.parse().unwrap());
        h.insert("signature", sig.parse().unwrap());
        let r = c.send_raw(Method::POST, &url, h, body.clone()).await.unwrap();
        assert_eq!(r.status, 401, "{si} / {sig}: {}", r.body);
    }

    // A strict request right after: no form note.
    let h = c.sign(&Method::POST, &url, Some(&tok), &body, now).unwrap();
    let r = c.send_raw(Method::POST, &url, h, body.clone()).await.unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(newest(&ase).await["report"].get("form").is_none());
}
