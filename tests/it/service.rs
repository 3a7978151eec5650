//! opdesk owns its data dir: one server at a time (a second is refused in one line naming the first), a
//! killed server's data dir is taken over, operator commands find the server from the data dir (no
//! `--listen`) and say which way they went, and never write offline while a server holds the data dir.
//! Running it as a service: `opdesk backup FILE` copies the database while the server serves (and the copy
//! restores on a fresh data dir), and `--log-format json` logs JSON lines on stderr.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::common::{Proc, free_port};

/// A data dir with an empty config.toml (what `Proc::start` points `OPDESK_CONFIG` at).
fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    dir
}

/// `opdesk ARGS --data-dir DIR` with the test's empty config, no `--listen`; killed after `limit`.
fn opdesk(dir: &Path, args: &[&str], limit: Duration) -> Output {
    let cfg = dir.join("test-config.toml");
    if !cfg.exists() {
        std::fs::write(&cfg, crate::common::store_config(dir)).unwrap();
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
    // a console without a terminal says it needs one, in one line, and touches nothing
    let d = dir.path().to_owned();
    let console = tokio::task::spawn_blocking(move || opdesk(&d, &[], Duration::from_secs(15)))
        .await
        .unwrap();
    assert_eq!(console.status.code(), Some(1), "{console:?}");
    assert_eq!(stderr(&console).lines().count(), 1, "{console:?}");
    assert!(stderr(&console).contains("the console needs a terminal"), "{console:?}");
    assert!(console.stdout.is_empty(), "nothing drawn: {console:?}");
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

/// `opdesk wallets create dave --asset USD` on `dir`, off the async runtime.
async fn create_dave(dir: &Path) -> Output {
    let d = dir.to_owned();
    tokio::task::spawn_blocking(move || {
        opdesk(
            &d,
            &["wallets", "create", "dave", "--asset", "USD"],
            Duration::from_secs(30),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_offline_write_while_a_server_holds_the_data_dir() {
    let dir = data_dir();
    let port = free_port();
    let mut server = Proc::start(dir.path(), port).await;
    let pid = server.child.id().to_string();
    // the server holds the data dir but cannot answer
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let out = create_dave(dir.path()).await;
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
    let out = create_dave(dir.path()).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stderr(&out),
        format!("offline: no server holds {}", dir.path().display())
    );
}

/// `opdesk backup FILE` while the server serves: one line on stdout, a 0600 file that is the database as of the
/// backup; FILE is not replaced without --force; --connect is refused. The copy, alone in a fresh data dir as
/// ase.sqlite3, serves the same wallets and balances on a second server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serving_restores_on_a_second_server() {
    let dir = data_dir();
    let server = Proc::start(dir.path(), free_port()).await;
    let run = |args: Vec<String>| {
        let d = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            opdesk(&d, &args, Duration::from_secs(30))
        })
    };
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let dep = run(args(&["deposit", "alice", "1234"])).await.unwrap();
    assert!(dep.status.success(), "{dep:?}");
    assert!(stderr(&dep).starts_with("via the server at"), "{dep:?}");
    let before = crate::common::balance_of(&server.admin("/balances").await, "alice");
    assert!(before >= 1234, "{before}");

    let out_dir = tempfile::tempdir().unwrap();
    let file = out_dir.path().join("opdesk-backup.sqlite3");
    let f = file.to_str().unwrap().to_owned();
    let out = run(args(&["backup", &f])).await.unwrap();
    if crate::common::postgres().is_some() {
        // PostgreSQL is backed up with its own tools: the command says so and writes nothing
        assert!(!out.status.success(), "{out:?}");
        assert!(stderr(&out).contains("pg_dump"), "{out:?}");
        assert!(!file.exists());
        return;
    }
    assert!(out.status.success(), "{out:?}");
    let line = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(line.lines().count(), 1, "{line}");
    let db = dir.path().join("ase.sqlite3");
    assert!(
        line.starts_with(&format!("backed up {} to {f} (", db.display())) && line.trim_end().ends_with(" KiB)"),
        "{line}"
    );
    assert!(line.contains(" pages, "), "{line}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let leftovers: Vec<_> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["opdesk-backup.sqlite3"], "no temp files left");

    // the server served on, and what it did after the backup is not in it
    let dep = run(args(&["deposit", "alice", "777"])).await.unwrap();
    assert!(dep.status.success(), "{dep:?}");
    assert_eq!(
        crate::common::balance_of(&server.admin("/balances").await, "alice"),
        before + 777
    );

    // an existing file is not replaced without --force; --force replaces it
    let size = std::fs::metadata(&file).unwrap().len();
    let again = run(args(&["backup", &f])).await.unwrap();
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    let err = stderr(&again);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("already exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size);
    let forced = out_dir.path().join("forced.sqlite3");
    std::fs::write(&forced, b"old").unwrap();
    let out = run(args(&["backup", forced.to_str().unwrap(), "--force"]))
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_ne!(std::fs::read(&forced).unwrap(), b"old");
    // never over the live database
    let live = run(args(&["backup", db.to_str().unwrap(), "--force"])).await.unwrap();
    assert_eq!(live.status.code(), Some(1), "{live:?}");
    assert!(stderr(&live).contains("live database"), "{live:?}");
    // a remote server's database cannot be copied from here
    let remote = run(args(&[
        "backup",
        "/tmp/never-written.sqlite3",
        "--connect",
        &server.base,
    ]))
    .await
    .unwrap();
    assert_eq!(remote.status.code(), Some(1), "{remote:?}");
    let err = stderr(&remote);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("server's host"), "{err}");
    assert!(!Path::new("/tmp/never-written.sqlite3").exists());

    // restore: a fresh data dir holding only the copy as ase.sqlite3
    let restored = data_dir();
    std::fs::copy(&file, restored.path().join("ase.sqlite3")).unwrap();
    let second = Proc::start(restored.path(), free_port()).await;
    let wallet = reqwest::get(format!("{}/alice", second.base)).await.unwrap();
    assert_eq!(wallet.status().as_u16(), 200);
    let doc: serde_json::Value = wallet.json().await.unwrap();
    assert_eq!(doc["id"], format!("{}/alice", second.base), "{doc}");
    let r = restored.path().to_owned();
    let out = tokio::task::spawn_blocking(move || opdesk(&r, &["balances", "--json"], Duration::from_secs(30)))
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let balances: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        crate::common::balance_of(&balances, "alice"),
        before,
        "the deposit before the backup is there, the one after is not"
    );
    drop(second);
    drop(server);
}

/// `serve --log-format json`: every stderr line is a JSON object (the startup line included); an unknown
/// format is refused by the flag and by the config file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_json_lines_with_log_format_json() {
    let dir = data_dir();
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opdesk"));
    cmd.args(Proc::serve_args(dir.path(), port))
        .args(["--log-format", "json"])
        .env("OPDESK_CONFIG", dir.path().join("config.toml"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = Proc::spawn(cmd, dir.path(), port).await;
    let err = server.child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(err).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
        lines.push(line);
    }
    assert!(!lines.is_empty(), "no log lines");
    let parsed: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect();
    let started = parsed
        .iter()
        .find(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("opdesk serving on"))
        })
        .unwrap_or_else(|| panic!("no startup line: {lines:?}"));
    assert_eq!(started["level"], "INFO", "{started}");
    assert_eq!(started["public_url"], format!("http://127.0.0.1:{port}"), "{started}");
    assert!(started["timestamp"].is_string(), "{started}");

    let bad = opdesk(dir.path(), &["serve", "--log-format", "xml"], Duration::from_secs(15));
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(stderr(&bad).contains("possible values: text, json"), "{bad:?}");
    let cfg = dir.path().join("test-config.toml");
    std::fs::write(&cfg, "log_format = \"yaml\"\n").unwrap();
    let bad = opdesk(dir.path(), &["serve"], Duration::from_secs(15));
    assert!(!bad.status.success(), "{bad:?}");
    let err = stderr(&bad);
    assert!(
        err.contains("log_format") && err.contains("\"text\" or \"json\""),
        "{err}"
    );
}
