//! The test harness: `TestAse::spawn()` starts the embedded ASE on 127.0.0.1:0 over a temp data dir, and
//! helpers validate bodies against the Open Payments OpenAPI schemas in `../shared/openapi`.

use std::{net::SocketAddr, path::Path, sync::Arc};

use opdesk::{
    app::{self, AppCore},
    settings::Settings,
};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The PostgreSQL cluster the suite runs on (`OPDESK_TEST_POSTGRES`, a `postgres://` URL of a throwaway
/// cluster such as `scripts/pg-cluster.sh` starts), or `None` for SQLite.
pub fn postgres() -> Option<String> {
    std::env::var("OPDESK_TEST_POSTGRES").ok().filter(|u| !u.is_empty())
}

/// On PostgreSQL, gives the data dir a fresh database of its own, named in its `config.toml` (`[store] url`);
/// a data dir that has one keeps it (a restart finds its state). Nothing on SQLite.
pub fn use_postgres_for(dir: &Path) {
    let Some(cluster) = postgres() else { return };
    let cfg = dir.join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap_or_default();
    if text.contains("postgres://") {
        return;
    }
    let name = format!("opdesk_t_{}", opdesk::ids::new_id().replace('-', ""));
    // a collation that does not compare by bytes, as most clusters' (`en_US.UTF-8`) and managed services'
    // do: ICU's English puts `~` before digits, so every range, page and bound the schema means in byte order
    // is checked to say so (migration 0020)
    let create =
        format!("CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'");
    let admin = cluster.clone();
    std::thread::spawn(move || {
        opdesk::store::db::Connection::connect_postgres(&admin)
            .and_then(|c| c.execute_batch(&create))
            .expect("create the test database")
    })
    .join()
    .expect("create the test database");
    let base = cluster.rsplit_once('/').map_or(cluster.as_str(), |(b, _)| b);
    let line = format!("url = \"{base}/{name}\"");
    let text = if text.lines().any(|l| l.trim() == "[store]") {
        text.replacen("[store]", &format!("[store]\n{line}"), 1)
    } else {
        format!("{text}\n[store]\n{line}\n")
    };
    std::fs::write(&cfg, text).expect("config.toml");
}

/// The `[store]` table that points a config file at the data dir's database: empty on SQLite (the data dir
/// says it all), the PostgreSQL URL [`use_postgres_for`] chose otherwise. For commands run with a config
/// file of their own.
pub fn store_config(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("config.toml")).unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("url = \"postgres://"))
        .map(|l| format!("[store]\n{l}\n"))
        .unwrap_or_default()
}

pub struct TestAse {
    pub addr: SocketAddr,
    pub base: String,
    pub dir: Arc<tempfile::TempDir>,
    pub admin_token: String,
    pub http: reqwest::Client,
    pub state: opdesk::server::AppState,
    shutdown: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl TestAse {
    pub async fn spawn() -> Self {
        Self::spawn_in(Arc::new(tempfile::tempdir().expect("tempdir")), None).await
    }

    /// Starts with `config` written as the data dir's config.toml.
    pub async fn spawn_with(config: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("config.toml"), config).expect("config");
        Self::spawn_in(Arc::new(dir), None).await
    }

    /// A client signing as `demo-client` with the key seeded into the data dir.
    pub async fn demo_client(&self) -> opdesk::client::SignedClient {
        let pem = std::fs::read_to_string(self.dir.path().join("demo-client.pem")).expect("pem");
        let key = opdesk::httpsig::jwk::from_pkcs8_pem(&pem).expect("key");
        let (_, jwks) = self.get("/demo-client/jwks.json").await;
        let kid = jwks["keys"][0]["kid"].as_str().expect("kid").to_owned();
        opdesk::client::SignedClient::new(key, &kid)
    }

    /// Starts on `dir` (reusing it), optionally on a fixed address (restarts keep their URLs).
    pub async fn spawn_in(dir: Arc<tempfile::TempDir>, addr: Option<SocketAddr>) -> Self {
        opdesk::egress::install_default_crypto_provider();
        // OPDESK_TEST_LOG=warn (a filter) shows the in-process servers' logs with the test's output
        if let Ok(filter) = std::env::var("OPDESK_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_test_writer()
                .try_init();
        }
        let listener = tokio::net::TcpListener::bind(addr.unwrap_or_else(|| "127.0.0.1:0".parse().expect("addr")))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        use_postgres_for(dir.path());
        let settings = Settings::for_data_dir(dir.path(), addr).expect("settings");
        let core = AppCore::open(settings).await.expect("open");
        let state = core.state.clone();
        let admin_token = state.admin_token.to_string();
        let shutdown = CancellationToken::new();
        let token = shutdown.clone();
        let task = tokio::spawn(async move {
            app::serve(core, listener, token).await.expect("serve");
        });
        Self {
            addr,
            base: format!("http://{addr}"),
            dir,
            admin_token,
            http: reqwest::Client::new(),
            state,
            shutdown,
            task: Some(task),
        }
    }

    /// Stops the server and waits until the store is closed.
    pub async fn stop(mut self) -> (Arc<tempfile::TempDir>, SocketAddr) {
        self.shutdown.cancel();
        if let Some(t) = self.task.take() {
            t.await.expect("server task");
        }
        (self.dir.clone(), self.addr)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let res = self.http.get(self.url(path)).send().await.expect("request");
        let status = res.status().as_u16();
        let body = res.json::<Value>().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// An admin request with the token; `body` is sent as raw bytes with the JSON content type.
    pub async fn admin(&self, method: reqwest::Method, path: &str, body: Option<&str>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, self.url(&format!("/admin{path}")))
            .bearer_auth(&self.admin_token);
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_owned());
        }
        let res = req.send().await.expect("request");
        let status = res.status().as_u16();
        let body = res.json::<Value>().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// Waits (bounded) until the outgoing payment `id_or_url` is completed, failed or cancelled; returns its
    /// operator view.
    pub async fn wait_outgoing(&self, id_or_url: &str) -> Value {
        let id = id_or_url.rsplit('/').next().unwrap_or(id_or_url).to_owned();
        for _ in 0..500 {
            let (s, v) = self
                .admin(reqwest::Method::GET, &format!("/outgoing-payments/{id}"), None)
                .await;
            assert_eq!(s, 200, "{v}");
            if matches!(v["state"].as_str(), Some("completed" | "failed" | "cancelled")) {
                return v;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("outgoing payment {id} did not finish");
    }

    /// The posted balance of a wallet (from the admin API).
    pub async fn balance(&self, wallet: &str) -> i64 {
        let (s, b) = self
            .admin(reqwest::Method::GET, &format!("/wallets/{wallet}"), None)
            .await;
        assert_eq!(s, 200, "{b}");
        b["balance"]["balance"].as_i64().expect("balance")
    }
}

impl Drop for TestAse {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Loads an OpenAPI file of `../shared/openapi` as JSON.
pub fn spec(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/openapi")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_norway::from_str(&text).expect("yaml")
}

/// Validates `body` against `components/schemas/{schema}` of the spec file (JSON Schema 2020-12, formats on).
pub fn assert_matches_schema(file: &str, schema: &str, body: &Value) {
    assert_matches_pointer(file, &format!("/components/schemas/{schema}"), body);
}

/// Validates `body` against the schema at a JSON pointer into the spec file, e.g. a response's schema:
/// `/paths/~1/post/responses/200/content/application~1json/schema`.
pub fn assert_matches_pointer(file: &str, pointer: &str, body: &Value) {
    let spec = spec(file);
    let root = serde_json::json!({
        "$ref": format!("#{pointer}"),
        "components": spec["components"],
        "paths": spec["paths"],
    });
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{body} does not match {pointer}: {errors:?}");
}

/// The error envelope: `{"error":{"code","description"}}` with non-empty strings.
pub fn assert_envelope(body: &Value, code: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["error"]["description"].as_str().is_some_and(|d| !d.is_empty()),
        "{body}"
    );
}

/// Validates a list response the way the official SDK does: `pagination` is a `page-info`, and each item is
/// the closed `{item_schema}` (the spec's `$ref` + sibling `additionalProperties: false`, which the SDK's
/// ref-parser merges into one closed object).
pub fn assert_list_matches(file: &str, item_schema: &str, body: &Value) {
    assert_matches_schema(file, "page-info", &body["pagination"]);
    for item in body["result"].as_array().expect("result array") {
        assert_closed_matches(file, item_schema, item);
    }
}

/// Validates `body` against `schema` closed to the properties it defines (see [`assert_list_matches`]).
pub fn assert_closed_matches(file: &str, schema: &str, body: &Value) {
    assert_matches_schema(file, schema, body);
    let spec = spec(file);
    let props = spec["components"]["schemas"][schema]["properties"]
        .as_object()
        .expect("properties");
    for key in body.as_object().expect("object").keys() {
        assert!(props.contains_key(key), "{key:?} is not a property of {schema}: {body}");
    }
}

/// A real `opdesk serve` child process on a data dir (its `config.toml` is the dir's own).
pub struct Proc {
    pub child: std::process::Child,
    pub base: String,
    pub admin_token: String,
}

impl Proc {
    /// Starts the binary on `127.0.0.1:{port}` and waits until it answers.
    pub async fn start(dir: &Path, port: u16) -> Self {
        use_postgres_for(dir);
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_opdesk"));
        cmd.args(Self::serve_args(dir, port))
            .env("OPDESK_CONFIG", dir.join("config.toml"))
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        Self::spawn(cmd, dir, port).await
    }

    /// `serve --data-dir {dir} --listen 127.0.0.1:{port}`.
    pub fn serve_args(dir: &Path, port: u16) -> Vec<String> {
        vec![
            "serve".into(),
            "--data-dir".into(),
            dir.to_str().expect("dir").into(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
        ]
    }

    /// Spawns `cmd` (an `opdesk serve` on `dir` and `port`, however wrapped) and waits until it answers.
    pub async fn spawn(mut cmd: std::process::Command, dir: &Path, port: u16) -> Self {
        opdesk::egress::install_default_crypto_provider();
        let child = cmd.spawn().expect("spawn opdesk");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        // answering, and recorded in the data dir (an answer alone may come from another test's server that
        // took the port in between)
        while reqwest::get(format!("{base}/healthz")).await.is_err() || opdesk::owner::read_record(dir).is_none() {
            assert!(std::time::Instant::now() < deadline, "opdesk did not start");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let admin_token = std::fs::read_to_string(dir.join("admin.token"))
            .expect("token")
            .trim()
            .to_owned();
        Self {
            child,
            base,
            admin_token,
        }
    }

    /// GET an admin path.
    pub async fn admin(&self, path: &str) -> Value {
        let r = reqwest::Client::new()
            .get(format!("{}/admin{path}", self.base))
            .bearer_auth(&self.admin_token)
            .send()
            .await
            .expect("admin request");
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.expect("json")
    }

    /// Waits (up to `within`) until no outgoing payment is sending, then returns them all, each completed or
    /// failed, and at least one.
    pub async fn wait_payments_ended(&self, within: std::time::Duration, what: &str) -> Vec<Value> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let sending = self.admin("/outgoing-payments?state=sending&first=500").await;
            if sending["items"].as_array().expect("items").is_empty() {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{what}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let all = self.admin("/outgoing-payments?first=500").await;
        let items = all["items"].as_array().expect("items").clone();
        assert!(!items.is_empty(), "some payments were created");
        for p in &items {
            assert!(matches!(p["state"].as_str(), Some("completed" | "failed")), "{p}");
        }
        items
    }

    /// A client signing as `demo-client` with the key seeded into `dir`.
    pub async fn demo_client(&self, dir: &Path) -> opdesk::client::SignedClient {
        opdesk::egress::install_default_crypto_provider();
        let key =
            opdesk::httpsig::jwk::from_pkcs8_pem(&std::fs::read_to_string(dir.join("demo-client.pem")).expect("pem"))
                .expect("key");
        let kid = opdesk::httpsig::jwk::thumbprint(&key.verifying_key());
        opdesk::client::SignedClient::new(key, &kid)
    }

    /// Per-asset sums of all balances are zero and no reservation is left.
    pub async fn assert_balanced(&self) -> Value {
        let balances = self.admin("/balances").await;
        let mut sums = std::collections::HashMap::<String, i64>::new();
        for b in balances.as_array().expect("array") {
            *sums
                .entry(b["assetCode"].as_str().expect("code").to_owned())
                .or_default() += b["balance"].as_i64().expect("i64");
            assert_eq!(b["pendingDebits"], 0, "{b}");
        }
        assert!(sums.values().all(|v| *v == 0), "{sums:?}");
        balances
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Finishes an approved interactive grant the way a client does: follows the interaction URL to the finish
/// redirect, takes `interact_ref`, continues, and returns the access token.
pub async fn finish_grant(client: &opdesk::client::SignedClient, grant_response: &Value) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let redirect = grant_response["interact"]["redirect"]
        .as_str()
        .expect("interact.redirect");
    let res = http.get(redirect).send().await.expect("interaction page");
    let loc = res.headers()["location"].to_str().expect("location").to_owned();
    let iref = url::Url::parse(&loc)
        .expect("finish URI")
        .query_pairs()
        .find(|(k, _)| k == "interact_ref")
        .expect("interact_ref")
        .1
        .into_owned();
    let c = client
        .send(
            reqwest::Method::POST,
            grant_response["continue"]["uri"].as_str().expect("continue.uri"),
            Some(
                grant_response["continue"]["access_token"]["value"]
                    .as_str()
                    .expect("continue token"),
            ),
            Some(&serde_json::json!({"interact_ref": iref})),
        )
        .await
        .expect("continue");
    assert_eq!(c.status, 200, "{}", c.body);
    c.body["access_token"]["value"]
        .as_str()
        .expect("access token")
        .to_owned()
}

/// A non-interactive grant for `access`, requested at `{base}/auth` as `{base}/demo-client`; the access token.
pub async fn grant_token(client: &opdesk::client::SignedClient, base: &str, access: Value) -> String {
    let body = serde_json::json!({"access_token": {"access": access}, "client": format!("{base}/demo-client")});
    let r = client
        .send(reqwest::Method::POST, &format!("{base}/auth"), None, Some(&body))
        .await
        .expect("grant request");
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["access_token"]["value"]
        .as_str()
        .expect("access token")
        .to_owned()
}

/// The posted balance of `wallet` in an admin `/balances` listing.
pub fn balance_of(balances: &Value, wallet: &str) -> i64 {
    balances
        .as_array()
        .expect("balances")
        .iter()
        .find(|b| b["wallet"] == wallet)
        .expect("wallet")["balance"]
        .as_i64()
        .expect("balance")
}

/// An outgoing-payment grant (create) for `wallet` at `base`, requested as `{base}/demo-client` with a finish
/// URI and finished by following the interaction; the server must approve it (`[gnap] auto_approve`).
pub async fn auto_approved_outgoing_token(client: &opdesk::client::SignedClient, base: &str, wallet: &str) -> String {
    let body = serde_json::json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": format!("{base}/{wallet}")}]},
        "client": format!("{base}/demo-client"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}},
    });
    let r = client
        .send(reqwest::Method::POST, &format!("{base}/auth"), None, Some(&body))
        .await
        .expect("grant request");
    finish_grant(client, &r.body).await
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
