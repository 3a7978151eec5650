//! An owner's passphrase never reaches a capture, however the body that carries it is written: raw spaces,
//! quotes, `!`, `%`, non-ASCII, bytes that are not URL-encoded, a content type the route refuses, a field
//! given twice. A real `opdesk serve` (its log at debug level in a file) is watched live while the owner signs
//! in; the live stream, the ring (`GET /admin/requests`), `opdesk requests show` (text and `--json`), the log
//! file and every file of the data dir are searched for each secret.

use std::{path::Path, process::Stdio};

use reqwest::{Method, header};
use serde_json::{Value, json};

use crate::{common::Proc, events::Stream};

/// Each secret carries a marker that appears in no encoding of anything else.
const RIGHT: &str = "bob's secret! 42 Mk7RightPass";

/// What is posted (after `csrf=…&`), its content type, the status the page answers, and the marker.
const POSTS: &[(&[u8], &str, u16, &str)] = &[
    (b"passphrase=bob's wrong! 42 Mk7Apos", FORM, 401, "Mk7Apos"),
    (b"passphrase=\"double\" 'single' Mk7Quote", FORM, 401, "Mk7Quote"),
    (b"passphrase=100% sure %zz Mk7Pct%", FORM, 401, "Mk7Pct"),
    ("passphrase=pässwörd ✓ секрет Mk7Utf".as_bytes(), FORM, 401, "Mk7Utf"),
    (b"passphrase=\xff\xfe Mk7Raw \x80", FORM, 401, "Mk7Raw"),
    (b"passphrase=Mk7Enc%20%21%27%22", FORM, 401, "Mk7Enc"),
    (b"passphrase=Mk7Plain", "text/plain", 415, "Mk7Plain"),
    (b"passphrase=Mk7Twice1&passphrase=Mk7Twice2", FORM, 422, "Mk7Twice"),
    // The right one, raw: the owner is signed in (post, redirect, get).
    (b"passphrase=bob's secret! 42 Mk7RightPass", FORM, 303, "Mk7RightPass"),
];

const FORM: &str = "application/x-www-form-urlencoded";

fn opdesk(dir: &Path, base: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args([
            "--data-dir",
            dir.to_str().unwrap(),
            "--listen",
            base.trim_start_matches("http://"),
        ])
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .env("OPDESK_CONFIG", dir.join("config.toml"))
        .output()
        .expect("run opdesk")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_passphrase_reaches_a_capture_whatever_its_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::fs::write(dir.join("config.toml"), "[consent]\nmax_failures_per_grant = 50\n").unwrap();
    let log = dir.join("serve.log");
    let port = crate::common::free_port();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_opdesk"));
    cmd.args(Proc::serve_args(dir, port))
        .env("OPDESK_CONFIG", dir.join("config.toml"))
        .env("RUST_LOG", "debug")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut server = Proc::spawn(cmd, dir, port).await;
    let base = server.base.clone();
    let admin = reqwest::Client::new();
    let body = json!({"command": "setOwnerPassphrase", "wallet": "alice",
                      "passphrase": {"action": "set", "passphrase": RIGHT}});
    let r = admin
        .post(format!("{base}/admin/commands"))
        .bearer_auth(&server.admin_token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // A console watches: every request is captured.
    let mut live = Stream::open(&base, &server.admin_token, "?live=true", None).await;

    let client = server.demo_client(dir).await;
    let grant = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create", "read"],
            "identifier": format!("{base}/alice"),
            "limits": {"debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}}}]},
        "client": {"walletAddress": format!("{base}/demo-client")},
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/done", "nonce": "n-1"}},
    });
    let r = client
        .send(Method::POST, &format!("{base}/auth"), None, Some(&grant))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let page = r.body["interact"]["redirect"].as_str().unwrap().to_owned();

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut cookie = String::new();
    let mut requests = 1; // the grant request
    for (posted, content_type, status, marker) in POSTS {
        let mut get = http.get(&page);
        if !cookie.is_empty() {
            get = get.header(header::COOKIE, &cookie);
        }
        let res = get.send().await.unwrap();
        if let Some(c) = res.headers().get(header::SET_COOKIE) {
            cookie = c.to_str().unwrap().split(';').next().unwrap().to_owned();
        }
        let html = res.text().await.unwrap();
        let at = html.find("name=\"csrf\" value=\"").expect("a sign-in form") + 19;
        let csrf = html[at..].split('"').next().unwrap().to_owned();
        let body = [format!("csrf={csrf}&").as_bytes(), posted].concat();
        let res = http
            .post(&page)
            .header(header::COOKIE, &cookie)
            .header(header::CONTENT_TYPE, *content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), *status, "{marker}");
        if let Some(c) = res.headers().get(header::SET_COOKIE) {
            cookie = c.to_str().unwrap().split(';').next().unwrap().to_owned();
        }
        requests += 2;
    }

    // The live stream: every exchange, the page's posts kept masked or withheld.
    let events = live.until(requests, |m| m.event == "httpRequest").await;
    let posts: Vec<Value> = events
        .iter()
        .map(|m| serde_json::from_str::<Value>(&m.data).unwrap()["event"].clone())
        .filter(|e| e["method"] == "POST" && e["path"].as_str().unwrap().starts_with("/auth/interact/"))
        .collect();
    assert_eq!(posts.len(), POSTS.len());
    let kept: Vec<&str> = posts
        .iter()
        .map(|e| {
            e["exchange"]["requestBody"]
                .as_str()
                .unwrap_or_else(|| panic!("captured: {e}"))
        })
        .collect();
    assert_eq!(
        kept.iter().filter(|b| b.starts_with("(body withheld")).count(),
        2,
        "{kept:?}"
    );
    assert!(
        kept.iter()
            .filter(|b| !b.starts_with("(body withheld"))
            .all(|b| b.contains("passphrase=%E2%80%A6%28masked%29")),
        "{kept:?}"
    );
    let mut seen = events.iter().map(|m| m.data.clone()).collect::<Vec<_>>().join("\n");
    drop(live);

    // The ring, and the CLI through the server, text and JSON.
    let list: Value = admin
        .get(format!("{base}/admin/requests?limit=100"))
        .bearer_auth(&server.admin_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["method"] == "POST")
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), POSTS.len() + 1, "{list}");
    for id in &ids {
        let detail = admin
            .get(format!("{base}/admin/requests/{id}"))
            .bearer_auth(&server.admin_token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        seen.push_str(&detail);
    }
    let (d, b, shown) = (dir.to_owned(), base.clone(), ids.clone());
    let cli = tokio::task::spawn_blocking(move || {
        let mut out = String::new();
        for id in &shown {
            for args in [
                &["requests", "show", id.as_str()][..],
                &["requests", "show", id.as_str(), "--json"],
            ] {
                let o = opdesk(&d, &b, args);
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                out.push_str(&String::from_utf8_lossy(&o.stdout));
            }
        }
        out
    })
    .await
    .unwrap();
    assert!(cli.contains("(masked)"), "{cli}");
    seen.push_str(&cli);

    // The log file and every file of the data dir, after the server stopped.
    let _ = server.child.kill();
    let _ = server.child.wait();
    let mut files = vec![log.clone()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            files.push(path);
        }
    }
    let mut raw: Vec<(String, Vec<u8>)> = vec![("captures".into(), seen.into_bytes())];
    for f in files {
        raw.push((f.display().to_string(), std::fs::read(&f).unwrap()));
    }
    assert!(
        raw.iter().any(|(n, b)| n.ends_with("serve.log") && !b.is_empty()),
        "the log was written"
    );
    let mut markers: Vec<&str> = POSTS.iter().map(|p| p.3).collect();
    markers.push("Mk7RightPass");
    for marker in markers {
        for (name, bytes) in &raw {
            assert!(
                !bytes.windows(marker.len()).any(|w| w == marker.as_bytes()),
                "{marker} found in {name}"
            );
        }
    }
}
