//! The `opdesk` binary: operator commands against a running server through the admin API, the direct
//! data-dir fallback when none runs, `--version` paths, and clear errors.

use std::process::{Command, Output};

use crate::common::TestAse;

fn opdesk(ase_dir: &std::path::Path, listen: &str, args: &[&str]) -> Output {
    // an empty config file of our own keeps the user's config.toml out of the test
    let cfg = ase_dir.join("test-config.toml");
    std::fs::write(&cfg, "").unwrap();
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
