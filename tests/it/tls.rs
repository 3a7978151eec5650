//! `opdesk serve` with `[tls]` (here by `--tls-cert`/`--tls-key`): the public listener speaks only HTTPS, ids
//! and signature target URIs are the https public URL, operator commands still reach the admin API (on its
//! plain-HTTP loopback listener, which server.json records), SIGHUP swaps the certificate for new connections
//! and a broken one keeps the old, and a certificate or key that cannot be used stops the start in one line.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{Proc, free_port};

/// A self-signed certificate for 127.0.0.1 and localhost.
struct Pair {
    cert: String,
    key: String,
    der: Vec<u8>,
}

fn self_signed(cn: &str) -> Pair {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    let cert = params.self_signed(&key).unwrap();
    Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
        der: cert.der().to_vec(),
    }
}

fn install(dir: &Path, pair: &Pair) {
    std::fs::write(dir.join("cert.pem"), &pair.cert).unwrap();
    std::fs::write(dir.join("key.pem"), &pair.key).unwrap();
}

/// A client trusting only `trusted`, reporting the server's certificate, opening a new connection per request.
fn https(trusted: &[&Pair]) -> reqwest::Client {
    opdesk::egress::install_default_crypto_provider();
    reqwest::Client::builder()
        .tls_certs_only(
            trusted
                .iter()
                .map(|p| reqwest::Certificate::from_pem(p.cert.as_bytes()).unwrap()),
        )
        .tls_info(true)
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// The DER certificate the server presented for `res`.
fn peer_cert(res: &reqwest::Response) -> Vec<u8> {
    res.extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|i| i.peer_certificate())
        .expect("TLS info")
        .to_vec()
}

/// `opdesk serve` over HTTPS on `port`, logging to `serve.log` in the data dir; killed when dropped.
struct TlsServer {
    child: Child,
    base: String,
    dir: PathBuf,
}

impl TlsServer {
    async fn start(dir: &Path, port: u16, trusted: &Pair) -> Self {
        std::fs::write(dir.join("config.toml"), "").unwrap();
        let log = std::fs::File::create(dir.join("serve.log")).unwrap();
        let base = format!("https://127.0.0.1:{port}");
        let child = Command::new(env!("CARGO_BIN_EXE_opdesk"))
            .args(["serve", "--data-dir", dir.to_str().unwrap()])
            .args(["--listen", &format!("127.0.0.1:{port}"), "--public-url", &base])
            .args(["--tls-cert", dir.join("cert.pem").to_str().unwrap()])
            .args(["--tls-key", dir.join("key.pem").to_str().unwrap()])
            .env("OPDESK_CONFIG", dir.join("config.toml"))
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn opdesk");
        let server = Self {
            child,
            base,
            dir: dir.to_owned(),
        };
        let client = https(&[trusted]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while client.get(server.url("/healthz")).send().await.is_err() {
            assert!(Instant::now() < deadline, "opdesk did not start: {}", server.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }

    fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([name, &pid]).status().unwrap().success());
    }

    /// Waits (bounded) until the log has `n` lines containing `text`.
    async fn wait_log(&self, text: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.log().matches(text).count() < n {
            assert!(Instant::now() < deadline, "no {text:?} in the log: {}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `opdesk ARGS --data-dir DIR` with the data dir's empty config; killed after 20 s.
fn opdesk(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(args)
        .args(["--data-dir", dir.to_str().unwrap()])
        .env_remove("RUST_LOG")
        .env_remove("OPDESK_ADMIN_TOKEN")
        .env("OPDESK_CONFIG", dir.join("config.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run opdesk");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("opdesk {args:?} did not finish within 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Signs as `demo-client` (its key is seeded into the data dir) and sends over `http`.
async fn signed(
    http: &reqwest::Client,
    dir: &Path,
    method: Method,
    url: &str,
    token: Option<&str>,
    body: &Value,
) -> (u16, Value) {
    let key =
        opdesk::httpsig::jwk::from_pkcs8_pem(&std::fs::read_to_string(dir.join("demo-client.pem")).unwrap()).unwrap();
    let kid = opdesk::httpsig::jwk::thumbprint(&key.verifying_key());
    let client = opdesk::client::SignedClient::new(key, &kid);
    let bytes = serde_json::to_vec(body).unwrap();
    let created = time::OffsetDateTime::now_utc().unix_timestamp();
    let headers = client.sign(&method, url, token, &bytes, created).unwrap();
    let res = http
        .request(method, url)
        .headers(headers)
        .header("accept", "application/json")
        .body(bytes)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_open_payments_and_commands_still_reach_the_admin_api() {
    let dir = tempfile::tempdir().unwrap();
    let pair = self_signed("opdesk test");
    install(dir.path(), &pair);
    let port = free_port();
    let mut server = TlsServer::start(dir.path(), port, &pair).await;
    let http = https(&[&pair]);

    // the wallet address document names https ids
    let res = http.get(server.url("/alice")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(peer_cert(&res), pair.der);
    let wallet: Value = res.json().await.unwrap();
    assert_eq!(wallet["id"], server.url("/alice"), "{wallet}");
    assert!(
        wallet["authServer"].as_str().unwrap().starts_with("https://"),
        "{wallet}"
    );

    // signatures over https target URIs verify: a grant, then an incoming payment
    let grant = json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["create", "read"]}]},
        "client": server.url("/demo-client"),
    });
    let (status, g) = signed(&http, dir.path(), Method::POST, &server.url("/auth"), None, &grant).await;
    assert_eq!(status, 200, "{g}");
    let token = g["access_token"]["value"].as_str().unwrap().to_owned();
    let body = json!({"walletAddress": server.url("/alice"), "incomingAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}});
    let url = server.url("/incoming-payments");
    let (status, ip) = signed(&http, dir.path(), Method::POST, &url, Some(&token), &body).await;
    assert_eq!(status, 201, "{ip}");
    assert!(ip["id"].as_str().unwrap().starts_with(&format!("{url}/")), "{ip}");
    // the same request signed for the http URL does not verify: the target URI is the public URL's
    let http_url = format!("http://127.0.0.1:{port}/incoming-payments");
    let key =
        opdesk::httpsig::jwk::from_pkcs8_pem(&std::fs::read_to_string(dir.path().join("demo-client.pem")).unwrap())
            .unwrap();
    let kid = opdesk::httpsig::jwk::thumbprint(&key.verifying_key());
    let bytes = serde_json::to_vec(&body).unwrap();
    let created = time::OffsetDateTime::now_utc().unix_timestamp();
    let headers = opdesk::client::SignedClient::new(key, &kid)
        .sign(&Method::POST, &http_url, Some(&token), &bytes, created)
        .unwrap();
    let res = http.post(&url).headers(headers).body(bytes).send().await.unwrap();
    assert_eq!(res.status(), 401);

    // plain HTTP on the TLS port gets nowhere
    let plain = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let refused = plain.get(format!("http://127.0.0.1:{port}/healthz")).send().await;
    assert!(refused.is_err(), "{refused:?}");

    // the record names the plain-HTTP loopback admin listener, and commands go through it
    let rec: Value = serde_json::from_slice(&std::fs::read(dir.path().join("server.json")).unwrap()).unwrap();
    assert_eq!(rec["publicUrl"], server.base);
    let admin = rec["admin"].as_str().unwrap().to_owned();
    assert!(admin.starts_with("http://127.0.0.1:"), "{rec}");
    assert_ne!(admin, format!("http://127.0.0.1:{port}"), "{rec}");
    let d = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || opdesk(&d, &["wallets", "list", "--json"]))
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "went through the server: {out:?}");
    let wallets: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        wallets.as_array().unwrap().iter().any(|w| w["name"] == "alice"),
        "{wallets}"
    );
    // that listener serves the admin API and nothing of Open Payments
    let res = plain.get(format!("{admin}/alice")).send().await.unwrap();
    assert_eq!(res.status(), 404);
    let token = std::fs::read_to_string(dir.path().join("admin.token")).unwrap();
    let res = plain
        .get(format!("{admin}/admin/balances"))
        .bearer_auth(token.trim())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // the peer address still reaches handlers over TLS: the admin API there answers a loopback client
    let res = http
        .get(server.url("/admin/balances"))
        .bearer_auth(token.trim())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // /metrics reaches a loopback scraper on both listeners (the peer address comes through TLS too), and
    // counted the HTTPS traffic above by route template
    for base in [server.base.clone(), admin.clone()] {
        let client = if base.starts_with("https") { &http } else { &plain };
        let res = client.get(format!("{base}/metrics")).send().await.unwrap();
        assert_eq!(res.status(), 200, "{base}");
        let text = res.text().await.unwrap();
        assert!(
            text.contains(r#"opdesk_http_requests_total{route="/incoming-payments",method="POST",status="201"} 1"#),
            "{base}: {text}"
        );
    }

    // a clean stop
    server.signal("-TERM");
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!dir.path().join("server.json").exists());
    let log = server.log();
    assert!(
        log.contains("serving HTTPS") && log.contains("subject CN=opdesk test"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_swaps_the_certificate_and_a_broken_one_keeps_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (self_signed("first"), self_signed("second"));
    install(dir.path(), &first);
    let server = TlsServer::start(dir.path(), free_port(), &first).await;
    // a fresh client each time: one client would resume its TLS session, and a resumed session shows no
    // certificate (its client reports the one of the session it resumed)
    let presented = || async {
        let res = https(&[&first, &second])
            .get(server.url("/healthz"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        peer_cert(&res)
    };
    assert_eq!(presented().await, first.der);

    install(dir.path(), &second);
    server.signal("-HUP");
    server.wait_log("TLS certificate reloaded", 1).await;
    assert_eq!(
        presented().await,
        second.der,
        "a new connection sees the new certificate"
    );
    assert!(server.log().contains("subject CN=second"), "{}", server.log());

    std::fs::write(
        dir.path().join("key.pem"),
        "-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    server.signal("-HUP");
    server.wait_log("TLS certificate not reloaded", 1).await;
    assert_eq!(presented().await, second.der, "the certificate in use stays");
    let line = server
        .log()
        .lines()
        .find(|l| l.contains("not reloaded"))
        .unwrap()
        .to_owned();
    assert!(line.contains("key.pem"), "{line}");

    // a key of another certificate is refused too, and a good pair after it is taken
    install(dir.path(), &first);
    std::fs::write(dir.path().join("key.pem"), &second.key).unwrap();
    server.signal("-HUP");
    server.wait_log("TLS certificate not reloaded", 2).await;
    assert!(
        server.log().contains("does not match the certificate"),
        "{}",
        server.log()
    );
    assert_eq!(presented().await, second.der);
    install(dir.path(), &first);
    server.signal("-HUP");
    server.wait_log("TLS certificate reloaded", 2).await;
    assert_eq!(presented().await, first.der);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_certificate_or_key_stops_the_start_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let (a, b) = (self_signed("a"), self_signed("b"));
    std::fs::write(dir.path().join("cert.pem"), &a.cert).unwrap();
    std::fs::write(dir.path().join("key.pem"), &b.key).unwrap();
    let port = free_port().to_string();
    let d = dir.path().to_owned();
    let run = move |cert: &str| {
        opdesk(
            &d,
            &[
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--tls-cert",
                d.join(cert).to_str().unwrap(),
                "--tls-key",
                d.join("key.pem").to_str().unwrap(),
            ],
        )
    };
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let out = tokio::task::spawn_blocking({
        let run = run.clone();
        move || (run("cert.pem"), run("missing.pem"))
    })
    .await
    .unwrap();
    for (o, want) in [
        (
            &out.0,
            format!(
                "error: tls.key {} does not match the certificate in {}",
                key.display(),
                cert.display()
            ),
        ),
        (
            &out.1,
            format!(
                "error: tls.cert {}: no such file",
                dir.path().join("missing.pem").display()
            ),
        ),
    ] {
        assert!(!o.status.success(), "{o:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr).trim(), want);
    }
    assert!(!dir.path().join("server.json").exists());
    assert!(
        !dir.path().join("ase.sqlite3").exists(),
        "refused before the database is opened"
    );
}

/// Without `[tls]`, SIGHUP (a service manager's reload) leaves the server serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_without_tls_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let mut server = Proc::start(dir.path(), free_port()).await;
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(server.child.try_wait().unwrap().is_none(), "serve died of SIGHUP");
    let ok = reqwest::get(format!("{}/healthz", server.base)).await.unwrap();
    assert_eq!(ok.status(), 200);
}
