//! opdesk owns its data dir: one server at a time (a second is refused in one line naming the first), a
//! killed server's data dir is taken over, operator commands find the server from the data dir (no
//! `--listen`) and say which way they went, and never write offline while a server holds the data dir.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::common::Proc;

/// A data dir with an empty config.toml (what `Proc::start` points `OPDESK_CONFIG` at).
fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `opdesk ARGS --data-dir DIR` with the test's empty config, no `--listen`; killed after `limit`.
fn opdesk(dir: &Path, args: &[&str], limit: Duration) -> Output {
    let cfg = dir.join("test-config.toml");
    if !cfg.exists() {
        std::fs::write(&cfg, "").unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(args)
        .args(["--data-dir", dir.to_str().unwrap()])
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .env_remove("OPDESK_ADMIN_TOKEN")
        .env("OPDESK_CONFIG", &cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run opdesk");
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("opdesk {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_owned()
}

/// The server's record in the data dir.
fn record(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("server.json")).expect("server.json")).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_a_held_data_dir_is_refused_in_one_line() {
    let dir = data_dir();
    let port = free_port();
    let mut first = Proc::start(dir.path(), port).await;
    let rec = record(dir.path());
    assert_eq!(rec["pid"], first.child.id());
    assert_eq!(rec["admin"], format!("http://127.0.0.1:{port}"));
    let other = free_port();
    let d = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        opdesk(
            &d,
            &["serve", "--listen", &format!("127.0.0.1:{other}")],
            Duration::from_secs(15),
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = stderr(&out);
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert!(
        line.contains(&format!("pid {}", first.child.id())) && line.contains(&format!("127.0.0.1:{port}")),
        "{line}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", other)).is_err(),
        "the second server never listened"
    );
    // the console is refused alike rather than failing on the port
    let d = dir.path().to_owned();
    let console = tokio::task::spawn_blocking(move || opdesk(&d, &[], Duration::from_secs(15)))
        .await
        .unwrap();
    assert_eq!(console.status.code(), Some(1), "{console:?}");
    assert!(stderr(&console).contains(&format!("pid {}", first.child.id())));
    assert_eq!(
        record(dir.path())["pid"],
        first.child.id(),
        "the first server's record stands"
    );
    first.child.kill().unwrap();
    first.child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_servers_data_dir_is_taken_over() {
    let dir = data_dir();
    let mut first = Proc::start(dir.path(), free_port()).await;
    let dead = first.child.id();
    first.child.kill().unwrap(); // SIGKILL: no cleanup, the record stays behind
    first.child.wait().unwrap();
    assert_eq!(record(dir.path())["pid"], dead, "a stale record");
    let port = free_port();
    let mut second = Proc::start(dir.path(), port).await;
    let rec = record(dir.path());
    assert_eq!(rec["pid"], second.child.id());
    assert_eq!(rec["admin"], format!("http://127.0.0.1:{port}"));
    // a clean stop takes the record with it
    let pid = second.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(15);
    while second.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!dir.path().join("server.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_find_the_server_from_the_data_dir_and_say_so() {
    let dir = data_dir();
    // not the default port: the commands below are given no --listen
    let port = free_port();
    let mut server = Proc::start(dir.path(), port).await;
    let d = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        opdesk(
            &d,
            &["peers", "add", "edge", "--asset", "USD", "--generate-incoming-token"],
            Duration::from_secs(20),
        )
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stderr(&out),
        format!("via the server at http://127.0.0.1:{port} (pid {})", server.child.id())
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let token = text
        .lines()
        .skip_while(|l| !l.contains("generated incoming token"))
        .nth(1)
        .expect("the generated token")
        .trim()
        .to_owned();
    // the running server knows the peer at once: its token passes /ilp's authentication
    let ilp = reqwest::Client::new()
        .post(format!("{}/ilp", server.base))
        .bearer_auth(&token)
        .header("content-type", "application/octet-stream")
        .body(vec![0u8; 4])
        .send()
        .await
        .unwrap();
    assert_ne!(ilp.status().as_u16(), 401, "the server saw the new peer");
    let wrong = reqwest::Client::new()
        .post(format!("{}/ilp", server.base))
        .bearer_auth("not-a-token")
        .body(vec![0u8; 4])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    // reading commands say nothing about the way
    let d = dir.path().to_owned();
    let list = tokio::task::spawn_blocking(move || opdesk(&d, &["peers", "list"], Duration::from_secs(20)))
        .await
        .unwrap();
    assert!(list.status.success() && stderr(&list).is_empty(), "{list:?}");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_offline_write_while_a_server_holds_the_data_dir() {
    let dir = data_dir();
    let port = free_port();
    let mut server = Proc::start(dir.path(), port).await;
    let pid = server.child.id().to_string();
    // the server holds the data dir but cannot answer
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let d = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        opdesk(
            &d,
            &["wallets", "create", "dave", "--asset", "USD"],
            Duration::from_secs(30),
        )
    })
    .await
    .unwrap();
    assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = stderr(&out);
    assert!(
        line.contains("holds the data dir") && line.contains(&format!("pid {pid}")),
        "{line}"
    );
    let wallets = server.admin("/wallets").await;
    assert!(
        !wallets.as_array().unwrap().iter().any(|w| w["name"] == "dave"),
        "nothing was written behind the server's back: {wallets}"
    );
    // once the server is gone, the command works on the data dir and says so
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let d = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        opdesk(
            &d,
            &["wallets", "create", "dave", "--asset", "USD"],
            Duration::from_secs(30),
        )
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stderr(&out),
        format!("offline: no server holds {}", dir.path().display())
    );
}
