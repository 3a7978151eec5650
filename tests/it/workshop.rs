//! `opdesk workshop --headless` as a real process: both desks answer on their ports, each is its own data
//! dir peered with the other; `opdesk demo --workshop DIR` pays bob at happy-life from alice at cloud-nine
//! over ILP (the grant approved through cloud-nine's admin API, as an operator would) and both sides show
//! exact amounts; SIGTERM stops it; a second start reuses the dirs and peers without duplicating them.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::common::{balance_of, free_port};

/// A desk's admin API, with the token from its data dir.
struct Desk {
    base: String,
    token: String,
}

impl Desk {
    fn of(dir: &Path, port: u16) -> Self {
        Self {
            base: format!("http://127.0.0.1:{port}"),
            token: std::fs::read_to_string(dir.join("admin.token"))
                .expect("admin token")
                .trim()
                .to_owned(),
        }
    }

    async fn admin(&self, method: reqwest::Method, path: &str) -> Value {
        let r = reqwest::Client::new()
            .request(method, format!("{}/admin{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .expect("admin request");
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.unwrap_or(Value::Null)
    }

    async fn get(&self, path: &str) -> Value {
        self.admin(reqwest::Method::GET, path).await
    }
}

/// The workshop process, killed when dropped (a failed assertion leaves nothing running).
struct Workshop(Child);

impl Drop for Workshop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `opdesk workshop --headless` on `dir` and the two ports; waits until both desks answer.
async fn start(dir: &Path, ports: (u16, u16)) -> Workshop {
    start_with(dir, ports, &[]).await
}

/// [`start`] with more arguments (`--seats N`).
async fn start_with(dir: &Path, ports: (u16, u16), more: &[&str]) -> Workshop {
    start_on(dir, ports, "127.0.0.1", more).await
}

/// [`start_with`], waiting for the desks at `host` (`--bind`).
async fn start_on(dir: &Path, ports: (u16, u16), host: &str, more: &[&str]) -> Workshop {
    let child = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(["workshop", "--headless", "--dir"])
        .arg(dir)
        .args(more)
        .args([
            "--cloud-nine-port",
            &ports.0.to_string(),
            "--happy-life-port",
            &ports.1.to_string(),
        ])
        .env("OPDESK_CONFIG", dir.join("base.toml"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("opdesk workshop starts");
    let child = Workshop(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    for port in [ports.0, ports.1] {
        while reqwest::get(format!("http://{host}:{port}/healthz")).await.is_err() {
            assert!(Instant::now() < deadline, "the workshop did not start on {port}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    child
}

/// SIGTERM, then waits (at most 15 s) for the process to end.
fn stop(Workshop(child): &mut Workshop) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().ok().flatten().is_none() {
        assert!(Instant::now() < deadline, "the workshop did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The desk's one peer: its name and its account balance.
async fn only_peer(d: &Desk) -> (String, i64) {
    let peers = d.get("/peers").await;
    let peers = peers.as_array().expect("peers");
    assert_eq!(peers.len(), 1, "exactly one peer: {peers:?}");
    (
        peers[0]["name"].as_str().expect("name").to_owned(),
        peers[0]["peerAccountBalance"].as_i64().expect("balance"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workshop_pays_across_its_two_desks_and_restarts_on_the_same_dirs() {
    opdesk::egress::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), "").unwrap();
    let ports = (free_port(), free_port());
    let mut child = start(dir.path(), ports).await;
    let (nine_dir, happy_dir) = (dir.path().join("cloud-nine"), dir.path().join("happy-life"));
    let nine = Desk::of(&nine_dir, ports.0);
    let happy = Desk::of(&happy_dir, ports.1);
    assert_eq!(only_peer(&nine).await, ("happy-life".to_owned(), 0));
    assert_eq!(only_peer(&happy).await, ("cloud-nine".to_owned(), 0));
    // each desk may owe the other 1,000.00 and lets the other owe it as much
    for d in [&nine, &happy] {
        let p = d.get("/peers").await[0].clone();
        assert_eq!(
            (&p["liquidity"], &p["sendLimited"], &p["creditLimit"]),
            (
                &serde_json::json!(100_000),
                &serde_json::json!(true),
                &serde_json::json!(100_000)
            ),
            "{p}"
        );
    }
    let info = nine.get("/server").await;
    assert_eq!(info["ilpAddress"], "test.cloud-nine", "{info}");

    // the demo's cross-ASE payment; the operator approves its grant on cloud-nine
    let demo = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(["demo", "--workshop"])
        .arg(dir.path())
        .env("OPDESK_CONFIG", dir.path().join("base.toml"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("opdesk demo starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    let pending = loop {
        let grants = nine.get("/grants").await;
        let found = grants
            .as_array()
            .expect("grants")
            .iter()
            .find(|g| g["state"] == "pending")
            .map(|g| g["id"].as_str().expect("id").to_owned());
        if let Some(id) = found {
            break id;
        }
        assert!(Instant::now() < deadline, "no grant waited for approval: {grants}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    nine.admin(reqwest::Method::POST, &format!("/grants/{pending}/approve"))
        .await;
    let out = tokio::task::spawn_blocking(move || demo.wait_with_output())
        .await
        .unwrap()
        .expect("the demo ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("/bob received 25.00 USD"), "{stdout}");

    // exact amounts on both sides
    let incoming = happy.get("/incoming-payments").await;
    let ip = &incoming["items"][0];
    assert_eq!(ip["state"], "completed", "{incoming}");
    assert_eq!(ip["receivedAmount"]["value"], "2500", "{ip}");
    let outgoing = nine.get("/outgoing-payments").await;
    let op = &outgoing["items"][0];
    assert_eq!(op["state"], "completed", "{outgoing}");
    // same asset both sides: alice pays exactly what bob gets (the quote's debit allows for slippage; what
    // was not sent is released)
    assert_eq!(op["receiveAmount"]["value"], "2500", "{op}");
    assert_eq!(op["sentAmount"]["value"], "2500", "{op}");
    assert_eq!(balance_of(&nine.get("/balances").await, "alice"), 100_000 - 2500);
    assert_eq!(balance_of(&happy.get("/balances").await, "bob"), 50_000 + 2500);
    assert_eq!(
        only_peer(&nine).await,
        ("happy-life".to_owned(), 2500),
        "cloud-nine owes happy-life"
    );
    assert_eq!(only_peer(&happy).await, ("cloud-nine".to_owned(), -2500));

    // SIGTERM stops both desks; a second start reuses the dirs: the same peers, once each, balances kept
    stop(&mut child);
    for port in [ports.0, ports.1] {
        assert!(reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await.is_err());
    }
    let mut child = start(dir.path(), ports).await;
    let nine = Desk::of(&nine_dir, ports.0);
    let happy = Desk::of(&happy_dir, ports.1);
    assert_eq!(only_peer(&nine).await, ("happy-life".to_owned(), 2500));
    assert_eq!(only_peer(&happy).await, ("cloud-nine".to_owned(), -2500));
    assert_eq!(balance_of(&happy.get("/balances").await, "bob"), 50_000 + 2500);
    let p = nine.get("/peers").await[0].clone();
    assert_eq!(
        (&p["liquidity"], &p["availableToSend"]),
        (&serde_json::json!(100_000), &serde_json::json!(100_000 - 2500)),
        "the liquidity is deposited once, and the payment used some: {p}"
    );
    stop(&mut child);
}

/// A seat's handout file.
fn handout(dir: &Path, seat: &str, file: &str) -> String {
    std::fs::read_to_string(dir.join("handout").join(seat).join(file)).unwrap_or_else(|e| panic!("{seat}/{file}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_gets_seats_and_handouts_and_keeps_them_across_starts() {
    opdesk::egress::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), "").unwrap();
    let ports = (free_port(), free_port());
    let mut child = start_with(dir.path(), ports, &["--seats", "2"]).await;
    let nine = Desk::of(&dir.path().join("cloud-nine"), ports.0);
    let happy = Desk::of(&dir.path().join("happy-life"), ports.1);
    let (c9, hl) = (
        format!("http://127.0.0.1:{}", ports.0),
        format!("http://127.0.0.1:{}", ports.1),
    );
    let mut first = Vec::new();
    for seat in ["seat01", "seat02"] {
        let bru = handout(dir.path(), seat, "opdesk.bru");
        let env = handout(dir.path(), seat, ".env");
        let card = handout(dir.path(), seat, "card.txt");
        let pem = handout(dir.path(), seat, "private.key");
        assert!(bru.contains(&format!("senderWalletAddress: {c9}/{seat}\n")), "{bru}");
        assert!(
            bru.contains(&format!("receiverWalletAddress: {hl}/{seat}-shop\n")),
            "{bru}"
        );
        assert!(bru.contains(&format!("signatureUrl: {hl}/workshop/sign\n")), "{bru}");
        assert!(
            env.contains(&format!("WALLET_ADDRESS={c9}/{seat}\n")) && env.contains("PRIVATE_KEY_PATH=private.key\n")
        );
        let kid = env
            .lines()
            .find_map(|l| l.strip_prefix("KEY_ID="))
            .expect("KEY_ID")
            .to_owned();
        assert!(bru.contains(&format!("clientKeyId: {kid}\n")));
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(pem.as_bytes());
        assert!(
            bru.contains(&format!("clientPrivateKey: {b64}\n")),
            "the key as base64 of its PEM"
        );
        // the key the handout holds is the one the app wallet publishes
        let key = opdesk::httpsig::jwk::from_pkcs8_pem(&pem).expect("a PKCS#8 key");
        let jwks: Value = reqwest::get(format!("{hl}/{seat}-app/jwks.json"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let published = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kid"] == kid.as_str())
            .expect("published");
        let x = opdesk::httpsig::jwk::Jwk::from_verifying_key("", &key.verifying_key()).x;
        assert_eq!(published["x"], x.as_str());
        let passphrase = card
            .lines()
            .find_map(|l| l.strip_prefix("passphrase: "))
            .expect("a passphrase line")
            .to_owned();
        assert_eq!(passphrase.len(), 19, "{passphrase}");
        assert_eq!(balance_of(&nine.get("/balances").await, seat), 10_000);
        assert!(happy.get(&format!("/wallets/{seat}-shop")).await.is_object());
        first.push((seat, passphrase, pem));
    }
    let index = std::fs::read_to_string(dir.path().join("handout/index.html")).unwrap();
    assert_eq!(index.matches("<pre>").count(), 2);

    // the signing helper signs a grant request as seat01's app, and happy-life accepts the signature
    let env = handout(dir.path(), "seat01", ".env");
    let kid = env.lines().find_map(|l| l.strip_prefix("KEY_ID=")).unwrap().to_owned();
    use base64::Engine as _;
    let key64 = base64::engine::general_purpose::STANDARD.encode(handout(dir.path(), "seat01", "private.key"));
    let body = serde_json::json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["create", "read"]}]},
        "client": format!("{hl}/seat01-app"),
    })
    .to_string();
    let ask = |key_id: &str, key: &str| {
        serde_json::json!({"keyId": key_id, "base64Key": key, "request": {
            "url": format!("{hl}/auth"), "method": "POST",
            // a script's unset variable arrives as null: left out
            "headers": {"content-type": "application/json", "host": null}, "body": body}})
    };
    let http = reqwest::Client::new();
    let signed: Value = http
        .post(format!("{hl}/workshop/sign"))
        .json(&ask(&kid, &key64))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut req = http
        .post(format!("{hl}/auth"))
        .header("content-type", "application/json")
        .body(body.clone());
    for h in ["Signature", "Signature-Input", "Content-Digest"] {
        req = req.header(h, signed[h].as_str().unwrap_or_else(|| panic!("{h} in {signed}")));
    }
    let grant = req.send().await.unwrap();
    assert_eq!(grant.status(), 200, "{}", grant.text().await.unwrap());
    // any other key is refused: a stranger's, or seat01's id with another private key; cloud-nine has no helper
    let stranger = opdesk::httpsig::jwk::to_pkcs8_pem(&opdesk::httpsig::jwk::generate().unwrap());
    let stranger = base64::engine::general_purpose::STANDARD.encode(stranger);
    let r = http
        .post(format!("{hl}/workshop/sign"))
        .json(&ask(&kid, &stranger))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = http
        .post(format!("{c9}/workshop/sign"))
        .json(&ask(&kid, &key64))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    // again with a third seat: the first two keep their passphrases, keys and money; one more is seated
    stop(&mut child);
    let mut child = start_with(dir.path(), ports, &["--seats", "3"]).await;
    for (seat, passphrase, pem) in &first {
        assert!(handout(dir.path(), seat, "card.txt").contains(&format!("passphrase: {passphrase}\n")));
        assert_eq!(&handout(dir.path(), seat, "private.key"), pem);
        assert_eq!(balance_of(&nine.get("/balances").await, seat), 10_000, "funded once");
        let keys = happy.get(&format!("/wallets/{seat}-app/keys")).await;
        assert_eq!(keys["keys"].as_array().map(Vec::len), Some(1), "{keys}");
    }
    assert!(handout(dir.path(), "seat03", "card.txt").contains("passphrase: "));
    stop(&mut child);

    // fewer seats asked of a class seated before: every seat is kept, and every view shows all three
    let mut child = start_with(dir.path(), ports, &["--seats", "1"]).await;
    let index = std::fs::read_to_string(dir.path().join("handout/index.html")).unwrap();
    assert_eq!(index.matches("<pre>").count(), 3, "all three cards");
    let class: String = reqwest::get(format!("{hl}/workshop/class"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(class.contains("0 of 3 seats have paid"), "{class}");
    stop(&mut child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_reaches_the_desks_at_the_bound_address_by_the_public_host() {
    opdesk::egress::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), "").unwrap();
    let ports = (free_port(), free_port());
    let host = "127.0.0.2";
    let args = ["--bind", host, "--public-host", host, "--seats", "1"];
    let mut child = start_on(dir.path(), ports, host, &args).await;
    let (c9, hl) = (
        format!("http://{host}:{}", ports.0),
        format!("http://{host}:{}", ports.1),
    );
    // every URL the desks give out names the public host
    let wallet: Value = reqwest::get(format!("{c9}/seat01"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wallet["id"], format!("{c9}/seat01"));
    assert_eq!(wallet["authServer"], format!("{c9}/auth"));
    assert!(handout(dir.path(), "seat01", "opdesk.bru").contains(&format!("signatureUrl: {hl}/workshop/sign")));
    assert!(handout(dir.path(), "seat01", ".env").contains(&format!("RECEIVER={hl}/seat01-shop")));
    // nothing listens on 127.0.0.1, and the desks pay each other at the bound address
    assert!(
        reqwest::get(format!("http://127.0.0.1:{}/healthz", ports.0))
            .await
            .is_err()
    );
    let nine = Desk {
        base: c9.clone(),
        token: std::fs::read_to_string(dir.path().join("cloud-nine/admin.token"))
            .unwrap()
            .trim()
            .to_owned(),
    };
    let peers = nine.get("/peers").await;
    assert_eq!(peers[0]["outgoingEndpoint"], format!("{hl}/ilp"), "{peers}");
    stop(&mut child);
}

/// The entries of a stored zip (as the workshop makes them): name → bytes.
fn unzip(z: &[u8]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut at = 0;
    let le16 = |i: usize| usize::from(u16::from_le_bytes([z[i], z[i + 1]]));
    let le32 = |i: usize| u32::from_le_bytes([z[i], z[i + 1], z[i + 2], z[i + 3]]) as usize;
    while z[at..].starts_with(b"PK\x03\x04") {
        assert_eq!(le16(at + 8), 0, "stored");
        let (size, name_len, extra) = (le32(at + 18), le16(at + 26), le16(at + 28));
        let name = String::from_utf8(z[at + 30..at + 30 + name_len].to_vec()).unwrap();
        let data = at + 30 + name_len + extra;
        out.insert(name, z[data..data + size].to_vec());
        at = data + size;
    }
    assert!(z[at..].starts_with(b"PK\x01\x02"), "the central directory follows");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_opens_its_handout_over_http_with_the_code_on_its_card_and_the_room_sees_the_class_page() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), "").unwrap();
    let ports = (free_port(), free_port());
    let mut child = start_with(dir.path(), ports, &["--seats", "2"]).await;
    let (c9, hl) = (
        format!("http://127.0.0.1:{}", ports.0),
        format!("http://127.0.0.1:{}", ports.1),
    );
    let card = handout(dir.path(), "seat01", "card.txt");
    assert!(
        card.contains(&format!("Your files: open {hl}/workshop/handout\n")),
        "{card}"
    );
    let code = card
        .lines()
        .find_map(|l| l.strip_prefix("and type the code"))
        .expect("a code line")
        .trim()
        .to_owned();
    assert_eq!(code.len(), 14, "{code}");
    let http = reqwest::Client::new();
    let post = |path: &str, form: Vec<(&str, String)>| {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        http.post(format!("{hl}{path}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };

    let ask = http.get(format!("{hl}/workshop/handout")).send().await.unwrap();
    assert_eq!(ask.status(), 200);
    let csp = ask.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(
        csp.starts_with("default-src 'none'") && !csp.contains("unsafe"),
        "{csp}"
    );
    assert!(ask.text().await.unwrap().contains("name=\"code\""));

    // the code, typed in lower case with spaces: the seat's page, its card and a button per file
    let typed = code.to_lowercase().replace('-', " ");
    let page = post("/workshop/handout", vec![("code", typed.clone())]).await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("<strong>seat01</strong>"), "{html}");
    for file in ["zip", ".env", "private.key", "opdesk.bru", "card.txt"] {
        assert!(
            html.contains(&format!("name=\"file\" value=\"{file}\"")),
            "{file} in {html}"
        );
    }
    assert!(!html.contains("action=\"/workshop/handout?"), "no code in any URL");

    // the zip holds the four files as they are in the seat's folder
    let zip = post(
        "/workshop/handout/file",
        vec![("code", typed.clone()), ("file", "zip".into())],
    )
    .await
    .unwrap();
    assert_eq!(zip.status(), 200);
    assert_eq!(zip.headers()["content-type"], "application/zip");
    assert_eq!(
        zip.headers()["content-disposition"],
        "attachment; filename=\"seat01.zip\""
    );
    let entries = unzip(&zip.bytes().await.unwrap());
    assert_eq!(
        entries.keys().cloned().collect::<Vec<_>>(),
        [
            "seat01/.env",
            "seat01/card.txt",
            "seat01/opdesk.bru",
            "seat01/private.key"
        ]
    );
    for (name, bytes) in &entries {
        let file = name.strip_prefix("seat01/").unwrap();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            handout(dir.path(), "seat01", file),
            "{name}"
        );
    }
    let env = post(
        "/workshop/handout/file",
        vec![("code", code.clone()), ("file", ".env".into())],
    )
    .await
    .unwrap();
    assert_eq!(env.text().await.unwrap(), handout(dir.path(), "seat01", ".env"));

    // the class page: both seats, none paid, no secret of either
    let class = http.get(format!("{hl}/workshop/class")).send().await.unwrap();
    assert_eq!(class.status(), 200);
    assert!(
        class.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .starts_with("default-src 'none'")
    );
    let html = class.text().await.unwrap();
    assert!(html.contains("<h1>0 of 2 seats have paid</h1>"), "{html}");
    assert!(html.contains("<td>seat01</td>") && html.contains("<td>seat02</td>"));
    assert!(html.contains("http-equiv=\"refresh\"") && !html.contains("<script"));
    for seat in ["seat01", "seat02"] {
        let card = handout(dir.path(), seat, "card.txt");
        let passphrase = card.lines().find_map(|l| l.strip_prefix("passphrase: ")).unwrap();
        assert!(
            !html.contains(passphrase) && !html.contains(&code),
            "no secrets on the projector"
        );
    }
    // the CLI has the class too, on either desk's data dir while the workshop runs
    let out = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .arg("--data-dir")
        .arg(dir.path().join("cloud-nine"))
        .arg("classroom")
        .env("OPDESK_CONFIG", dir.path().join("base.toml"))
        .output()
        .expect("opdesk classroom");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text} {}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.starts_with("SEAT ") && text.contains("NEXT") && text.contains("seat02"),
        "{text}"
    );
    // only happy-life serves them
    let r = http.get(format!("{c9}/workshop/handout")).send().await.unwrap();
    assert_eq!(r.status(), 404);

    // wrong codes: refused, then too many from this address, even the right one
    for i in 0..10 {
        let r = post("/workshop/handout", vec![("code", format!("AAAA-AAAA-AAA{i}"))])
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "try {i}");
    }
    let r = post("/workshop/handout", vec![("code", code.clone())]).await.unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.text().await.unwrap().contains("Too many wrong codes"));
    stop(&mut child);
}

#[test]
fn a_config_file_the_desks_would_not_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("base.toml");
    std::fs::write(&config, "[consent]\ndecide = \"owner\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(["workshop", "--headless", "--dir"])
        .arg(dir.path().join("w"))
        .arg("--config")
        .arg(&config)
        .output()
        .expect("opdesk workshop");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sets consent for the desks") && err.contains("DIR/cloud-nine/config.toml"),
        "{err}"
    );
    assert!(!dir.path().join("w").exists(), "refused before anything was made");
}
