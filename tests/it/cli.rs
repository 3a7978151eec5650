//! The `opdesk` binary: operator commands against a running server through the admin API, the direct
//! data-dir fallback when none runs, `--version` paths, and clear errors.

use std::process::{Command, Output};

use crate::common::TestAse;

fn opdesk(ase_dir: &std::path::Path, listen: &str, args: &[&str]) -> Output {
    // an empty config file of our own keeps the user's config.toml out of the test
    let cfg = ase_dir.join("test-config.toml");
    std::fs::write(&cfg, crate::common::store_config(ase_dir)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(["--data-dir", ase_dir.to_str().unwrap(), "--listen", listen])
        .args(args)
        .env_remove("RUST_LOG")
        .env("OPDESK_CONFIG", &cfg)
        .output()
        .expect("run opdesk")
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_commands_work_against_a_running_server() {
    let ase = TestAse::spawn().await;
    let dir = ase.dir.path().to_owned();
    let listen = ase.addr.to_string();
    let run = move |args: Vec<&'static str>| {
        let (d, l) = (dir.clone(), listen.clone());
        tokio::task::spawn_blocking(move || opdesk(&d, &l, &args))
    };
    let out = run(vec!["wallets", "create", "dave", "--asset", "USD", "--scale", "2"])
        .await
        .unwrap();
    assert!(ok(&out).contains("/dave"));
    let out = run(vec!["deposit", "dave", "1000"]).await.unwrap();
    assert!(ok(&out).contains("10.00 USD"));
    let out = run(vec!["balances"]).await.unwrap();
    let table = ok(&out);
    assert!(
        table.lines().any(|l| l.starts_with("dave") && l.contains("10.00")),
        "{table}"
    );
    let out = run(vec!["balances", "--json"]).await.unwrap();
    let json: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .any(|b| b["wallet"] == "dave" && b["balance"] == 1000)
    );
    // the server saw it: the change went through the running instance
    assert_eq!(ase.balance("dave").await, 1000);

    let out = run(vec!["keys", "generate", "dave"]).await.unwrap();
    assert!(ok(&out).contains("BEGIN PRIVATE KEY"));
    let out = run(vec!["wallets", "show", "dave", "--json"]).await.unwrap();
    let d: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(d["keys"].as_array().unwrap().len(), 1);

    for bad in [
        vec!["deposit", "dave", "01"],
        vec!["deposit", "dave", "-5"],
        vec!["withdraw", "dave", "999999"],
    ] {
        let out = run(bad.clone()).await.unwrap();
        assert!(!out.status.success(), "{bad:?} should fail");
        assert!(!out.stderr.is_empty());
    }
    assert_eq!(ase.balance("dave").await, 1000);
}

/// An action added as a command (`wallets public-name`) works through a running server and on the data dir alone,
/// and the wallet address document shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wallets_public_name_is_set_and_cleared_from_the_cli() {
    let ase = TestAse::spawn().await;
    let (d, l) = (ase.dir.path().to_owned(), ase.addr.to_string());
    let out = tokio::task::spawn_blocking(move || opdesk(&d, &l, &["wallets", "public-name", "bob", "Bob's Bikes"]))
        .await
        .unwrap();
    assert!(ok(&out).contains("shows the public name \"Bob's Bikes\""));
    let (_, doc) = ase.get("/bob").await;
    assert_eq!(doc["publicName"], "Bob's Bikes");
    // bad input is refused in the ASE's words, and changes nothing
    let (d, l) = (ase.dir.path().to_owned(), ase.addr.to_string());
    let out = tokio::task::spawn_blocking(move || opdesk(&d, &l, &["wallets", "public-name", "bob", "a\u{7}bell"]))
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("public name"));
    let (_, doc) = ase.get("/bob").await;
    assert_eq!(doc["publicName"], "Bob's Bikes");
    let (dir, addr) = ase.stop().await;
    let (d, l) = (dir.path().to_owned(), addr.to_string());
    let out = tokio::task::spawn_blocking(move || opdesk(&d, &l, &["wallets", "public-name", "bob", "--json"]))
        .await
        .unwrap();
    let w: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert!(w.get("publicName").is_none_or(serde_json::Value::is_null), "{w}");
    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    let (_, doc) = ase.get("/bob").await;
    assert!(doc.get("publicName").is_none(), "{doc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_fall_back_to_the_data_dir_when_no_server_runs() {
    let ase = TestAse::spawn().await;
    let (dir, addr) = ase.stop().await;
    let d = dir.path().to_owned();
    let l = addr.to_string();
    let out = tokio::task::spawn_blocking(move || {
        let a = opdesk(&d, &l, &["deposit", "carol", "5"]);
        let b = opdesk(&d, &l, &["balances", "--json"]);
        (a, b)
    })
    .await
    .unwrap();
    ok(&out.0);
    let json: serde_json::Value = serde_json::from_str(&ok(&out.1)).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .any(|b| b["wallet"] == "carol" && b["balance"] == 50_005)
    );
    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    assert_eq!(ase.balance("carol").await, 50_005);
}

#[test]
fn version_prints_resolved_paths() {
    let dir = tempfile::tempdir().unwrap();
    let out = opdesk(dir.path(), "127.0.0.1:4999", &["--version"]);
    let text = ok(&out);
    assert!(text.starts_with(&format!("opdesk {}", env!("CARGO_PKG_VERSION"))));
    for label in ["config:", "data:", "log:"] {
        assert!(text.contains(label), "{text}");
    }
    assert!(text.contains(dir.path().to_str().unwrap()));
}

#[test]
fn bad_config_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "listen = 5\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "--data-dir",
            dir.path().to_str().unwrap(),
            "balances",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("listen"), "{err}");
}

#[test]
fn serve_shuts_down_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("test-config.toml");
    std::fs::write(&cfg, "").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args([
            "serve",
            "--data-dir",
            dir.path().to_str().unwrap(),
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .env("OPDESK_CONFIG", &cfg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "server did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "server did not stop on SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(exit.success(), "exit status {exit:?}");
    // the store closed cleanly: the WAL was checkpointed and removed on close
    assert!(!dir.path().join("ase.sqlite3-wal").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_can_be_listed_shown_and_approved_from_the_cli() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let body = serde_json::json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/alice"),
            "limits": {"debitAmount": {"value": "250", "assetCode": "USD", "assetScale": 2}}}]},
        "client": ase.url("/demo-client"),
        "interact": {"start": ["redirect"]},
    });
    let r = client
        .send(reqwest::Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let dir = ase.dir.path().to_owned();
    let listen = ase.addr.to_string();
    let run = move |args: Vec<String>| {
        let (d, l) = (dir.clone(), listen.clone());
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            opdesk(&d, &l, &args)
        })
    };
    let out = run(vec![
        "grants".into(),
        "list".into(),
        "--state".into(),
        "pending".into(),
        "--json".into(),
    ])
    .await
    .unwrap();
    let list: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let out = run(vec!["grants".into(), "show".into(), id.clone()]).await.unwrap();
    let text = ok(&out);
    assert!(text.contains("up to 2.50 USD debited"), "{text}");
    assert!(text.contains("[pending]"), "{text}");
    let out = run(vec!["grants".into(), "approve".into(), id.clone()]).await.unwrap();
    assert!(ok(&out).contains("[approved]"));
    let out = run(vec!["grants".into(), "reject".into(), id.clone()]).await.unwrap();
    assert!(!out.status.success(), "an approved grant cannot be rejected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payments_can_be_listed_shown_and_completed_from_the_cli() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let grant = serde_json::json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["create"], "identifier": ase.url("/bob")}]},
        "client": ase.url("/demo-client"),
    });
    let r = client
        .send(reqwest::Method::POST, &ase.url("/auth"), None, Some(&grant))
        .await
        .unwrap();
    let token = r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let body = serde_json::json!({"walletAddress": ase.url("/bob"), "incomingAmount": {"value": "1234", "assetCode": "USD", "assetScale": 2}});
    let r = client
        .send(
            reqwest::Method::POST,
            &ase.url("/incoming-payments"),
            Some(&token),
            Some(&body),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201);
    let url = r.body["id"].as_str().unwrap().to_owned();
    let dir = ase.dir.path().to_owned();
    let listen = ase.addr.to_string();
    let run = move |args: Vec<String>| {
        let (d, l) = (dir.clone(), listen.clone());
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            opdesk(&d, &l, &args)
        })
    };
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let out = run(s(&["incoming", "list", "--wallet", "bob", "--state", "pending"]))
        .await
        .unwrap();
    let text = ok(&out);
    assert!(text.contains("12.34 USD") && text.contains("pending"), "{text}");
    let out = run(s(&["incoming", "complete", &url])).await.unwrap();
    assert!(ok(&out).contains("[completed]"));
    let out = run(s(&["incoming", "list", "--state", "completed", "--json"]))
        .await
        .unwrap();
    let l: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(l["items"][0]["id"], url.as_str());
    let out = run(s(&["outgoing", "list", "--state", "failed"])).await.unwrap();
    assert!(ok(&out).starts_with("ID"));
    let out = run(s(&["incoming", "list", "--state", "bogus"])).await.unwrap();
    assert!(!out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_can_be_added_changed_and_removed_from_the_cli() {
    // No server running: the peer goes into the data dir and the next start loads it.
    let ase = TestAse::spawn().await;
    let (dir, addr) = ase.stop().await;
    let (d, l) = (dir.path().to_owned(), addr.to_string());
    let (added, bad) = tokio::task::spawn_blocking(move || {
        let added = opdesk(
            &d,
            &l,
            &[
                "peers",
                "add",
                "rafiki",
                "--asset",
                "USD",
                "--ilp-address",
                "test.rafiki",
                "--generate-incoming-token",
                "--outgoing-endpoint",
                "http://127.0.0.1:9/ilp",
                "--outgoing-token",
                "to-rafiki",
            ],
        );
        let bad = opdesk(
            &d,
            &l,
            &["peers", "add", "no way", "--asset", "USD", "--incoming-token", "x"],
        );
        (added, bad)
    })
    .await
    .unwrap();
    let text = ok(&added);
    assert!(
        text.contains("rafiki (admin)") && text.contains("test.rafiki"),
        "{text}"
    );
    assert!(text.contains("generated incoming token"), "{text}");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("1 to 64"), "{bad:?}");

    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    let peer = ase.state.peers.current().get("rafiki").expect("loaded at start");
    assert_eq!(peer.routes(), ["test.rafiki"]);
    let dir = ase.dir.path().to_owned();
    let listen = ase.addr.to_string();
    let run = move |args: Vec<&'static str>| {
        let (d, l) = (dir.clone(), listen.clone());
        tokio::task::spawn_blocking(move || opdesk(&d, &l, &args))
    };
    let list = ok(&run(vec!["peers", "list"]).await.unwrap());
    assert!(
        list.lines()
            .any(|l| l.starts_with("rafiki") && l.contains("admin") && l.contains("yes (1 token)")),
        "{list}"
    );
    let out = run(vec![
        "peers",
        "update",
        "rafiki",
        "--max-packet-amount",
        "500",
        "--no-outgoing",
        "--json",
    ])
    .await
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(json["maxPacketAmount"], 500);
    assert_eq!(json["outgoingEndpoint"], serde_json::Value::Null);
    assert_eq!(json["routes"], serde_json::json!([]));
    assert!(
        ase.state.peers.current().get("rafiki").unwrap().outgoing().is_none(),
        "the running server changed"
    );
    ok(&run(vec!["peers", "remove", "rafiki"]).await.unwrap());
    assert!(ase.state.peers.current().get("rafiki").is_none());
    let out = run(vec!["peers", "remove", "rafiki"]).await.unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no peer named"),
        "{out:?}"
    );
}

/// Text with everything a terminal acts on: CSI and OSC sequences, BEL, the C1 CSI (U+009B), DEL, CR and a
/// bidi override.
const HOSTILE: &str = "\u{1b}[31m\u{1b}]0;owned\u{7}\u{9b}2J\u{7f}\r\u{202e}";

/// No control character but `\n` (no C0, no DEL, no C1) and no bidi control.
fn assert_clean(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| (c.is_control() && *c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        .collect();
    assert!(bad.is_empty(), "{what} printed {bad:?}: {text:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_never_reaches_the_terminal() {
    use reqwest::Method;
    use serde_json::json;

    use crate::common::{Proc, finish_grant};

    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let log = root.path().join("serve.log");
    let config = root.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opdesk"));
    cmd.args(Proc::serve_args(&dir, port))
        .env("OPDESK_CONFIG", &config)
        .env("RUST_LOG", "opdesk=debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let server = Proc::spawn(cmd, &dir, port).await;
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let admin = |method: Method, path: &str, body: serde_json::Value| {
        http.request(method, format!("{base}/admin{path}"))
            .bearer_auth(&server.admin_token)
            .json(&body)
            .send()
    };

    // A client wallet of this ASE whose public name carries what a wallet name may (a bidi override).
    let r = admin(
        Method::POST,
        "/wallets",
        json!({"name": "shop", "assetCode": "USD", "assetScale": 2, "publicName": "Shop\u{202e}gnp.exe"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
    let key: serde_json::Value = admin(Method::POST, "/wallets/shop/keys", json!({"generate": true}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client = opdesk::client::SignedClient::new(
        opdesk::httpsig::jwk::from_pkcs8_pem(key["privateKeyPem"].as_str().unwrap()).unwrap(),
        key["jwk"]["kid"].as_str().unwrap(),
    );
    let client_url = format!("{base}/shop");
    let grant = |access: serde_json::Value, interact: Option<serde_json::Value>| {
        let mut body = json!({"access_token": {"access": access}, "client": {"walletAddress": client_url}});
        if let Some(i) = interact {
            body["interact"] = i;
        }
        let (client, auth) = (&client, format!("{base}/auth"));
        async move {
            let r = client.send(Method::POST, &auth, None, Some(&body)).await.unwrap();
            assert_eq!(r.status, 200, "{}", r.body);
            r.body
        }
    };
    let token = |g: &serde_json::Value| g["access_token"]["value"].as_str().unwrap().to_owned();

    // Grants whose finish URI and limits receiver carry the hostile text, one rejected with a reason.
    let hostile_finish = format!("http://127.0.0.1:9/cb?state={HOSTILE}");
    let hostile_receiver = format!("http://127.0.0.1:9/incoming-payments/{HOSTILE}");
    let limited = json!([{"type": "outgoing-payment", "actions": ["create"], "identifier": format!("{base}/alice"),
        "limits": {"receiver": hostile_receiver, "debitAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}}}]);
    grant(
        limited.clone(),
        Some(json!({"start": ["redirect"], "finish": {"method": "redirect", "uri": hostile_finish, "nonce": HOSTILE}})),
    )
    .await;
    grant(limited, Some(json!({"start": ["redirect"]}))).await;
    let grants: serde_json::Value = server.admin("/grants?state=pending").await;
    let rejected = grants[0]["id"].as_str().unwrap().to_owned();
    let r = admin(
        Method::POST,
        &format!("/grants/{rejected}/reject"),
        json!({"reason": "not this one"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);

    // Incoming and outgoing payments with hostile metadata, and an outgoing payment that runs.
    let inc = token(&grant(json!([{"type": "incoming-payment", "actions": ["create"]}]), None).await);
    let quo = token(&grant(json!([{"type": "quote", "actions": ["create"]}]), None).await);
    let g = grant(
        json!([{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": format!("{base}/alice")}]),
        Some(json!({"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}})),
    )
    .await;
    let pending: serde_json::Value = server.admin("/grants?state=pending").await;
    let approve = pending
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["finishUri"] == "http://127.0.0.1:9/cb")
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .unwrap();
    let r = admin(Method::POST, &format!("/grants/{approve}/approve"), json!({}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let out = finish_grant(&client, &g).await;
    let metadata = json!({"description": HOSTILE, HOSTILE: [HOSTILE]});
    let r = client
        .send(
            Method::POST,
            &format!("{base}/incoming-payments"),
            Some(&inc),
            Some(&json!({"walletAddress": format!("{base}/bob"), "metadata": metadata,
                "incomingAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let incoming = r.body["id"].as_str().unwrap().to_owned();
    let quote = client
        .send(
            Method::POST,
            &format!("{base}/quotes"),
            Some(&quo),
            Some(&json!({"walletAddress": format!("{base}/alice"), "receiver": incoming, "method": "ilp"})),
        )
        .await
        .unwrap();
    assert_eq!(quote.status, 201, "{}", quote.body);
    let r = client
        .send(
            Method::POST,
            &format!("{base}/outgoing-payments"),
            Some(&out),
            Some(&json!({"walletAddress": format!("{base}/alice"), "quoteId": quote.body["id"], "metadata": metadata})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let outgoing = r.body["id"].as_str().unwrap().to_owned();

    // Every operator view, as tables/details and as JSON, through the real binary in a pipe.
    let all: serde_json::Value = server.admin("/grants?all=true").await;
    let mut commands: Vec<Vec<String>> = vec![
        vec!["grants".into(), "list".into()],
        vec!["incoming".into(), "list".into()],
        vec!["incoming".into(), "show".into(), incoming.clone()],
        vec!["outgoing".into(), "list".into()],
        vec!["outgoing".into(), "show".into(), outgoing.clone()],
        vec!["quotes".into(), "list".into()],
        vec!["wallets".into(), "list".into()],
        vec!["wallets".into(), "show".into(), "shop".into()],
    ];
    for g in all.as_array().unwrap() {
        commands.push(vec!["grants".into(), "show".into(), g["id"].as_str().unwrap().into()]);
    }
    let (d, l) = (dir.clone(), format!("127.0.0.1:{port}"));
    let outputs = tokio::task::spawn_blocking(move || {
        let mut outputs = Vec::new();
        for c in commands {
            let args: Vec<&str> = c.iter().map(String::as_str).collect();
            let human = ok(&opdesk(&d, &l, &args));
            let mut with_json = args.clone();
            with_json.push("--json");
            let json = ok(&opdesk(&d, &l, &with_json));
            outputs.push((c.join(" "), human, json));
        }
        outputs
    })
    .await
    .unwrap();
    let mut saw_finish = false;
    for (what, human, json) in &outputs {
        assert_clean(what, human);
        assert!(!human.trim().is_empty(), "{what}");
        // JSON stays valid JSON and keeps what was sent, escaped.
        let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: {e}: {json}"));
        assert!(!json.bytes().any(|b| b < 0x20 && b != b'\n'), "{what}: {json:?}");
        saw_finish |= human.contains("finish: http://127.0.0.1:9/cb?state=[31m]0;owned2J");
        if what.starts_with("incoming show") || what.starts_with("outgoing show") {
            assert_eq!(v["metadata"]["description"], HOSTILE, "{what}");
            assert!(human.contains(r#""description":"\u001b[31m"#), "{what}: {human}");
        }
    }
    assert!(saw_finish, "the finish URI is shown, stripped: {outputs:#?}");

    // Shared secrets are masked (the JSON keeps its shape) unless --reveal; closed grants (the rejected one)
    // are hidden unless --all.
    let masked = opdesk::server::request_log::MASKED;
    for (what, human, json) in &outputs {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let payments = match what.as_str() {
            "incoming list" => v["items"].as_array().unwrap().clone(),
            w if w.starts_with("incoming show") => vec![v.clone()],
            _ => vec![],
        };
        for p in &payments {
            assert_eq!(p["methods"][0]["type"], "ilp", "{what}: {json}");
            assert_eq!(p["methods"][0]["sharedSecret"], masked, "{what}: {json}");
            assert!(p["methods"][0]["ilpAddress"].is_string(), "{what}: {json}");
        }
        assert!(
            !human.contains("sharedSecret") || human.contains(masked),
            "{what}: {human}"
        );
        if what == "grants list" {
            assert!(!json.contains(&rejected) && !human.contains(&rejected), "{json}");
            assert!(
                v.as_array().unwrap().len() + 1 == all.as_array().unwrap().len(),
                "{json}"
            );
        }
    }
    let (d, l, inc) = (dir.clone(), format!("127.0.0.1:{port}"), incoming.clone());
    let (revealed, listed_all, help) = tokio::task::spawn_blocking(move || {
        (
            ok(&opdesk(&d, &l, &["incoming", "show", &inc, "--json", "--reveal"])),
            ok(&opdesk(&d, &l, &["grants", "list", "--all", "--json"])),
            ok(&opdesk(&d, &l, &["incoming", "list", "--help"])),
        )
    })
    .await
    .unwrap();
    let revealed: serde_json::Value = serde_json::from_str(&revealed).unwrap();
    let secret = revealed["methods"][0]["sharedSecret"].as_str().unwrap();
    assert_eq!(secret.len(), 43, "32 bytes of base64url: {secret}");
    assert!(help.contains("--reveal"), "{help}");
    let listed_all: serde_json::Value = serde_json::from_str(&listed_all).unwrap();
    assert_eq!(listed_all.as_array().unwrap().len(), all.as_array().unwrap().len());
    assert!(listed_all.to_string().contains(&rejected));

    // The server's log (a file, as when stderr is redirected): no control characters either (fields are
    // escaped by the log formatter; see logging.rs for hostile fields).
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("grant waits for the resource owner"), "{text}");
    assert_clean("the server log", &text);
}

/// The operator's mistakes are one `error: …` line each on stderr, with a `hint: …` line where one helps, and
/// no report, location or colour, even with `RUST_BACKTRACE=1` set and stderr a pipe; the same words offline
/// and through a server; exit status 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_are_one_line_without_a_report_offline_and_through_a_server() {
    let cases: [(&[&str], &str, Option<&str>); 5] = [
        (
            &["deposit", "nobody", "100"],
            "error: unknown wallet address \"nobody\"",
            Some("hint: `opdesk wallets list` shows the wallet addresses"),
        ),
        (
            &["deposit", "alice", "1.5"],
            "error: the amount must be whole minor units of the wallet's asset, e.g. 1000 for 10.00 (got \"1.5\")",
            None,
        ),
        (
            &["wallets", "create", "dora", "--asset", "usd"],
            "error: asset codes are upper case (ISO 4217 style): \"usd\" would be another asset than \"USD\"",
            Some("hint: --asset USD"),
        ),
        (
            &["wallets", "create", "dora", "--asset", "USDC1"],
            "error: an asset code is 3 to 12 letters A-Z (ISO 4217 style, e.g. USD), got \"USDC1\"",
            None,
        ),
        (
            &["peers", "update", "nobank", "--credit-limit", "5"],
            "error: no peer named \"nobank\"",
            Some("hint: `opdesk peers list` shows the peers"),
        ),
    ];
    let check = move |dir: &std::path::Path, listen: &str, way: &str| {
        for (args, want, hint) in &cases {
            let cfg = dir.join("test-config.toml");
            std::fs::write(&cfg, "").unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_opdesk"))
                .args(["--data-dir", dir.to_str().unwrap(), "--listen", listen])
                .args(*args)
                .env_remove("RUST_LOG")
                .env_remove("NO_COLOR")
                .env("RUST_BACKTRACE", "1")
                .env("OPDESK_CONFIG", &cfg)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let err = String::from_utf8(out.stderr).unwrap();
            let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with(way)).collect();
            let mut expected = vec![*want];
            expected.extend(*hint);
            assert_eq!(lines, expected, "{args:?} ({way}): {err}");
            assert!(!err.contains("Location") && !err.contains('\u{1b}'), "{args:?}: {err}");
        }
    };
    let dir = tempfile::tempdir().unwrap();
    // a data dir opdesk makes itself (0700): no warning about an open one in the way
    let fresh = dir.path().join("d");
    std::fs::create_dir(&fresh).unwrap();
    std::fs::set_permissions(&fresh, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    check(&fresh, "127.0.0.1:1", "offline: ");
    let ase = TestAse::spawn().await;
    let listen = ase.addr.to_string();
    let dir = ase.dir.path().to_owned();
    tokio::task::spawn_blocking(move || check(&dir, &listen, "via the server"))
        .await
        .unwrap();
}

/// Usage mistakes are clap's (exit status 2); `completions` prints a script for each shell; `--connect`
/// without a token is one line with the hint where to find one.
#[test]
fn usage_errors_exit_2_completions_print_scripts_and_connect_needs_a_token() {
    let bin = env!("CARGO_BIN_EXE_opdesk");
    let out = Command::new(bin).args(["wallets", "frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8(out.stderr).unwrap().contains('\u{1b}'));
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef opdesk"),
        ("fish", "complete -c opdesk"),
    ] {
        let out = Command::new(bin).args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(marker) && text.contains("deposit"), "{shell}: {text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "").unwrap();
    let out = Command::new(bin)
        .args(["--data-dir", dir.path().to_str().unwrap()])
        .args(["--connect", "http://127.0.0.1:1", "wallets", "list"])
        .env_remove("OPDESK_ADMIN_TOKEN")
        .env("OPDESK_CONFIG", &cfg)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "error: --connect needs the server's admin token\n\
         hint: give --token-file FILE (the admin.token in the server's data dir) or set OPDESK_ADMIN_TOKEN\n"
    );
}

/// The Web Monetization extension's shown key: `btoa(JSON.stringify({kty, crv, x, kid}))` (standard padded
/// base64 of a JWK without `alg`, kid a UUID).
fn extension_key(key: &ed25519_dalek::SigningKey, kid: &str) -> String {
    use base64::Engine as _;
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    let json = format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"{kid}"}}"#);
    base64::engine::general_purpose::STANDARD.encode(json)
}

/// A non-interactive incoming-payment grant requested as `{base}/{wallet}`, signed with `key` under `kid`:
/// the AS's status (200 only when the signature verifies against the wallet's published key).
async fn grant_status(base: &str, wallet: &str, key: ed25519_dalek::SigningKey, kid: &str) -> u16 {
    let client = opdesk::client::SignedClient::new(key, kid);
    let body = serde_json::json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["create"]}]},
        "client": format!("{base}/{wallet}"),
    });
    let r = client
        .send(reqwest::Method::POST, &format!("{base}/auth"), None, Some(&body))
        .await
        .expect("grant request");
    r.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extensions_shown_key_is_added_and_its_signatures_verify() {
    use std::io::Write as _;
    let ase = TestAse::spawn().await;
    let base = ase.url("");
    let (dir, listen) = (ase.dir.path().to_owned(), ase.addr.to_string());

    // the CLI, the key text piped in on stdin exactly as the extension shows it
    let alice_key = opdesk::httpsig::jwk::generate().unwrap();
    let alice_kid = "3b241101-e2bb-4255-8caf-4136c566a962";
    let shown = extension_key(&alice_key, alice_kid);
    assert!(shown.starts_with("eyJrdHkiOiJPS1AiLCJjcnYiOiJFZDI1NTE5Ii"), "{shown}");
    let out = tokio::task::spawn_blocking(move || {
        let cfg = dir.join("test-config.toml");
        std::fs::write(&cfg, "").unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_opdesk"))
            .args(["--data-dir", dir.to_str().unwrap(), "--listen", &listen])
            .args(["keys", "add", "alice", "--jwk", "-"])
            .env_remove("RUST_LOG")
            .env("OPDESK_CONFIG", &cfg)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run opdesk");
        writeln!(child.stdin.take().unwrap(), "{shown}").unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(ok(&out).contains(alice_kid));
    let (_, jwks) = ase.get("/alice/jwks.json").await;
    crate::common::assert_matches_schema("wallet-address-server.yaml", "json-web-key-set", &jwks);
    let served = jwks["keys"].as_array().unwrap();
    assert_eq!(served.len(), 1);
    assert_eq!(served[0]["kid"], alice_kid);
    assert_eq!(served[0]["alg"], "EdDSA", "the served key keeps alg");
    assert_eq!(grant_status(&base, "alice", alice_key, alice_kid).await, 200);
    // a different private key under the same kid does not verify
    let stranger = opdesk::httpsig::jwk::generate().unwrap();
    assert_ne!(grant_status(&base, "alice", stranger, alice_kid).await, 200);

    // the admin API, the same text as the `jwk` string
    let bob_key = opdesk::httpsig::jwk::generate().unwrap();
    let bob_kid = "9f1c7d2a-52e4-4c1e-8a3b-0d6e5f4a3b2c";
    let body = serde_json::json!({ "jwk": extension_key(&bob_key, bob_kid) }).to_string();
    let (s, k) = ase.admin(reqwest::Method::POST, "/wallets/bob/keys", Some(&body)).await;
    assert_eq!(s, 201, "{k}");
    assert_eq!(k["jwk"]["alg"], "EdDSA");
    assert_eq!(ase.get("/bob/jwks.json").await.1["keys"][0]["alg"], "EdDSA");
    assert_eq!(grant_status(&base, "bob", bob_key, bob_kid).await, 200);

    // another algorithm is still refused, saying why
    let x =
        opdesk::httpsig::jwk::Jwk::from_verifying_key("k", &opdesk::httpsig::jwk::generate().unwrap().verifying_key())
            .x;
    let es =
        serde_json::json!({"jwk": {"kid": "es", "kty": "OKP", "crv": "Ed25519", "alg": "ES256", "x": x}}).to_string();
    let (s, e) = ase.admin(reqwest::Method::POST, "/wallets/bob/keys", Some(&es)).await;
    assert_eq!(s, 400, "{e}");
    assert_eq!(e["error"]["code"], "invalid_key", "{e}");
    assert!(e.to_string().contains("ES256"), "{e}");
    assert_eq!(ase.get("/bob/jwks.json").await.1["keys"].as_array().unwrap().len(), 1);
}

/// `opdesk migrate` says where the schema was; on SQLite it will not migrate behind a running server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_reports_the_schema_version_and_never_runs_behind_a_server() {
    let ase = TestAse::spawn().await;
    let (d, l) = (ase.dir.path().to_owned(), ase.addr.to_string());
    let run = |args: &'static [&'static str]| {
        let (d, l) = (d.clone(), l.clone());
        tokio::task::spawn_blocking(move || opdesk(&d, &l, args))
    };
    let behind = run(&["migrate"]).await.unwrap();
    if crate::common::postgres().is_none() {
        assert!(!behind.status.success(), "{behind:?}");
        assert!(
            String::from_utf8_lossy(&behind.stderr).contains("holds the data dir"),
            "{behind:?}"
        );
    } else {
        // nodes share the database: migrating beside them is what a rollout does
        assert!(ok(&behind).contains("nothing to do"), "{behind:?}");
    }
    let _kept = ase.stop().await;
    let out = run(&["migrate"]).await.unwrap();
    let line = ok(&out);
    assert!(
        line.contains(": schema at version ") && line.trim_end().ends_with("nothing to do"),
        "{line}"
    );

    if crate::common::postgres().is_some() {
        // a fresh database is brought from nothing to the newest version, once
        let fresh = tempfile::tempdir().unwrap();
        crate::common::use_postgres_for(fresh.path());
        let f = fresh.path().to_owned();
        let first = tokio::task::spawn_blocking(move || opdesk(&f, "127.0.0.1:9", &["migrate"]))
            .await
            .unwrap();
        assert!(ok(&first).contains("schema migrated from version 0 to "), "{first:?}");
    }
}

/// `opdesk demo --data-dir D` finds the server that holds D from its record, wherever it listens, as every
/// operator command does: here on a port that is not the default, with no `--listen` given to the demo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_finds_the_server_of_its_data_dir_on_any_port() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[gnap]\nauto_approve = true\n").unwrap();
    let port = crate::common::free_port();
    let server = crate::common::Proc::start(dir.path(), port).await;
    let d = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_opdesk"))
            .args(["demo", "--data-dir", d.to_str().unwrap()])
            .env_remove("RUST_LOG")
            .env("OPDESK_CONFIG", d.join("config.toml"))
            .output()
            .expect("run opdesk demo")
    })
    .await
    .unwrap();
    let stdout = ok(&out);
    assert!(stdout.contains(&format!("127.0.0.1:{port}")), "{stdout}");
    // the demo's payments are on the server it found
    let grants = server.admin("/grants").await;
    assert!(!grants.as_array().unwrap().is_empty(), "{grants}");
}

/// An action added end to end (`revokeToken`: the command, `grants revoke-token`, the Grants pane's
/// `:revoke-token`): the CLI revokes an access token by its id in the outcome's own words, the admin API runs
/// the same command and says the same sentence, and both tokens show revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_token_is_revoked_from_the_cli_and_the_admin_api() {
    let ase = TestAse::spawn().await;
    let c = ase.demo_client().await;
    let access = serde_json::json!([{"type": "incoming-payment", "actions": ["create", "read"]}]);
    for _ in 0..2 {
        crate::common::grant_token(&c, &ase.base, access.clone()).await;
    }
    let token_ids = |grants: &serde_json::Value| -> Vec<(String, bool)> {
        let grants = grants.as_array().unwrap().iter();
        grants
            .flat_map(|g| g["tokens"].as_array().unwrap().clone())
            .map(|t| (t["id"].as_str().unwrap().to_owned(), !t["revokedAt"].is_null()))
            .collect()
    };
    let (_, grants) = ase.admin(reqwest::Method::GET, "/grants", None).await;
    let ids: Vec<String> = token_ids(&grants).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids.len(), 2, "{grants}");
    let short = |id: &str| opdesk::ids::short_id(id);
    let (d, l, id) = (ase.dir.path().to_owned(), ase.addr.to_string(), ids[0].clone());
    let out = tokio::task::spawn_blocking(move || opdesk(&d, &l, &["grants", "revoke-token", &id]))
        .await
        .unwrap();
    assert_eq!(ok(&out), format!("token {} revoked\n", short(&ids[0])));
    let body = serde_json::json!({"command": "revokeToken", "id": ids[1]}).to_string();
    let (s, o) = ase.admin(reqwest::Method::POST, "/commands", Some(&body)).await;
    assert_eq!((s, o["outcome"].as_str()), (200, Some("done")), "{o}");
    assert_eq!(o["message"], format!("token {} revoked", short(&ids[1])));
    let (_, grants) = ase.admin(reqwest::Method::GET, "/grants", None).await;
    assert!(token_ids(&grants).iter().all(|(_, revoked)| *revoked), "{grants}");
}
