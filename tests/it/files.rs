//! File modes of the data dir: `opdesk serve` (a real process, under umask 000 so nothing comes out private
//! by luck) makes the dir 0700 and the database, its `-wal`/`-shm` and every secret file 0600 — on a fresh
//! start in a dir that already existed 0755 with 0644 secrets in it, and on a restart after a kill left
//! loosened files behind — and warns in the log whenever it had to change a mode.

#![cfg(unix)]

use std::{os::unix::fs::PermissionsExt, path::Path, process::Stdio};

use crate::common::Proc;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

fn chmod(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

const SECRETS: [&str; 5] = [
    "admin.token",
    "ilp.secret",
    "webhook.secret",
    "ase-client.pem",
    "demo-client.pem",
];

/// `opdesk serve` on `dir` under umask 000 with an empty config, its log (warn level, no colours) appended
/// to `log`.
async fn serve(dir: &Path, config: &Path, log: &Path) -> Proc {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stderr = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg("umask 000; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_opdesk"))
        .args(Proc::serve_args(dir, port))
        .env("OPDESK_CONFIG", config)
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(stderr);
    Proc::spawn(cmd, dir, port).await
}

/// The dir is 0700, the database files and the secrets 0600 (`webhook.secret` only exists once used).
fn assert_private(dir: &Path) {
    assert_eq!(mode(dir), 0o700, "the data dir");
    for f in ["ase.sqlite3", "ase.sqlite3-wal", "ase.sqlite3-shm"]
        .iter()
        .chain(SECRETS.iter())
    {
        if *f == "webhook.secret" && !dir.join(f).exists() {
            continue;
        }
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_dir_and_every_secret_are_owner_only() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let log = root.path().join("serve.log");
    let config = root.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o755);
    // A file of the operator's: not ours, its mode is left alone.
    std::fs::write(dir.join("notes.txt"), "").unwrap();
    chmod(&dir.join("notes.txt"), 0o644);
    // Secrets that already exist, world-readable.
    std::fs::write(dir.join("admin.token"), "an-admin-token-from-before").unwrap();
    std::fs::write(dir.join("ilp.secret"), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").unwrap();
    std::fs::write(dir.join("webhook.secret"), "a-webhook-secret").unwrap();
    let key = opdesk::httpsig::jwk::generate().unwrap();
    std::fs::write(dir.join("ase-client.pem"), opdesk::httpsig::jwk::to_pkcs8_pem(&key)).unwrap();
    for f in ["admin.token", "ilp.secret", "webhook.secret", "ase-client.pem"] {
        chmod(&dir.join(f), 0o644);
    }

    let server = serve(&dir, &config, &log).await;
    assert_eq!(server.admin_token, "an-admin-token-from-before");
    server.admin("/balances").await;
    assert_private(&dir);
    assert_eq!(mode(&dir.join("notes.txt")), 0o644);
    let text = std::fs::read_to_string(&log).unwrap();
    let warned = |what: &str, old: &str| {
        text.lines()
            .any(|l| l.contains("WARN") && l.contains(what) && l.contains(old))
    };
    assert!(warned("the data dir", "0755"), "{text}");
    for f in ["admin.token", "ilp.secret", "webhook.secret", "ase-client.pem"] {
        assert!(warned(f, "0644"), "no warning about {f}: {text}");
    }

    // Killed: the -wal and -shm stay behind. Loosen everything, restart: all private again, with warnings.
    drop(server);
    assert!(dir.join("ase.sqlite3-wal").exists());
    std::fs::write(&log, "").unwrap();
    chmod(&dir, 0o755);
    for f in ["ase.sqlite3", "ase.sqlite3-wal", "ase.sqlite3-shm"]
        .iter()
        .chain(SECRETS.iter())
    {
        chmod(&dir.join(f), 0o644);
    }
    let server = serve(&dir, &config, &log).await;
    server.admin("/balances").await;
    assert_private(&dir);
    let text = std::fs::read_to_string(&log).unwrap();
    for f in ["ase.sqlite3", "ase.sqlite3-wal", "ase.sqlite3-shm", "demo-client.pem"] {
        assert!(
            text.lines().any(|l| l.contains("WARN") && l.contains(f)),
            "no warning about {f}: {text}"
        );
    }
    drop(server);

    // A fresh data dir the server creates itself is private from the start, without warnings.
    let fresh = root.path().join("fresh");
    let server = serve(&fresh, &config, &root.path().join("fresh.log")).await;
    server.admin("/balances").await;
    assert_private(&fresh);
    let text = std::fs::read_to_string(root.path().join("fresh.log")).unwrap();
    assert!(!text.contains("changed to"), "{text}");
}
