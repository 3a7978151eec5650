//! The console end to end: the real binary in a tmux pseudo-terminal. A client requests an interactive
//! grant from outside; it appears in the Grants pane; the keys a person would press approve it; the client's
//! continue then succeeds.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::json;

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux (installed on this machine image) runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn screen(session: &str) -> String {
    tmux(&["capture-pane", "-t", session, "-p"])
}

async fn wait_for(session: &str, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = screen(session);
        if s.contains(what) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "the console never showed {what:?}; it shows:\n{s}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_approves_a_grant_with_the_keyboard() {
    opdesk::egress::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let session = format!("opdesk-e2e-{port}");
    let cmd = format!(
        "OPDESK_CONFIG={cfg} {bin} --data-dir {dir} --listen 127.0.0.1:{port}",
        cfg = dir.path().join("config.toml").display(),
        bin = env!("CARGO_BIN_EXE_opdesk"),
        dir = dir.path().display(),
    );
    tmux(&["new-session", "-d", "-s", &session, "-x", "120", "-y", "40", &cmd]);
    struct Kill(String);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).output();
        }
    }
    let _kill = Kill(session.clone());
    wait_for(&session, "Overview").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while reqwest::get(format!("{base}/healthz")).await.is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // a client asks for an outgoing-payment grant for alice
    let key =
        opdesk::httpsig::jwk::from_pkcs8_pem(&std::fs::read_to_string(dir.path().join("demo-client.pem")).unwrap())
            .unwrap();
    let kid = opdesk::httpsig::jwk::thumbprint(&key.verifying_key());
    let client = opdesk::client::SignedClient::new(key, &kid);
    let r = client
        .send(
            Method::POST,
            &format!("{base}/auth"),
            None,
            Some(&json!({
                "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": format!("{base}/alice"),
                    "limits": {"debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}}}]},
                "client": format!("{base}/demo-client"),
                "interact": {"start": ["redirect"]},
            })),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);

    // it shows up: the badge, then the Grants pane with the request in words
    wait_for(&session, "grant(s) pending").await;
    tmux(&["send-keys", "-t", &session, "4"]);
    wait_for(&session, "outgoing-payment").await;
    tmux(&["send-keys", "-t", &session, "Enter"]);
    wait_for(&session, "up to 5.00 USD debited").await;
    tmux(&["send-keys", "-t", &session, "a"]);
    wait_for(&session, "Approve grant").await;
    tmux(&["send-keys", "-t", &session, "y"]);
    wait_for(&session, "approved").await;

    // the client's continue now gets its token
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let c = client
        .send(
            Method::POST,
            r.body["continue"]["uri"].as_str().unwrap(),
            Some(r.body["continue"]["access_token"]["value"].as_str().unwrap()),
            None,
        )
        .await
        .unwrap();
    assert_eq!(c.status, 200, "{}", c.body);
    assert!(c.body["access_token"]["value"].is_string(), "{}", c.body);

    // the request log shows the client's signed requests with their verdict, and the exchange on Enter
    tmux(&["send-keys", "-t", &session, "Escape"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    tmux(&["send-keys", "-t", &session, "7"]);
    let log = wait_for(&session, "/auth/continue/").await;
    assert!(log.contains("demo-client") && log.contains(" ok "), "{log}");
    tmux(&["send-keys", "-t", &session, "Enter"]);
    wait_for(&session, "request  POST").await;

    // quitting restores the terminal and stops the server
    tmux(&["send-keys", "-t", &session, "Escape"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    tmux(&["send-keys", "-t", &session, "q"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while reqwest::get(format!("{base}/healthz")).await.is_ok() {
        assert!(Instant::now() < deadline, "the server kept running after q");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
