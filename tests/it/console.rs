//! The console end to end: the real binary in a tmux pseudo-terminal. Embedded: a client requests an
//! interactive grant from outside; it appears in the Grants pane; the keys a person would press approve it;
//! the client's continue then succeeds; quitting stops the server. Attached: the same against an
//! `opdesk serve` that keeps serving after the console quits; two consoles see each other's decisions; a
//! console rides out a server restart (on another port) and shows current data again. The two desks (in
//! process and over the admin API) load every pane alike, webhook deliveries included. `opdesk workshop`'s
//! console switches between its two desks (F2, `:desk NAME`) and shows each one's peers; from the Peers pane
//! the operator deposits a peer's liquidity, is refused a withdrawal beyond it, and records a settlement.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use opdesk::{
    ase::liquidity::Direction,
    client::SignedClient,
    control::{
        Command as OpCommand, Found,
        dto::{AddKey, CreateWallet, LiquidityMove, Move, NewSettlement},
    },
    money::Value as MoneyValue,
    tui::desk::Feed,
};

use crate::common::free_port;
use reqwest::Method;
use serde_json::{Value, json};

/// The console's effect for a peer liquidity deposit (or withdrawal) of `amount` minor units.
fn liquidity(peer: &str, deposit: bool, amount: u64) -> opdesk::tui::app::Effect {
    opdesk::tui::app::Effect::Run(OpCommand::MovePeerLiquidity {
        peer: peer.into(),
        liquidity: LiquidityMove::of(deposit, MoneyValue::new(amount).unwrap()),
    })
}

/// The console's effect for a settlement: we `paid` the peer (or it paid us) `amount` minor units.
fn settlement(peer: &str, paid: bool, amount: u64) -> opdesk::tui::app::Effect {
    opdesk::tui::app::Effect::Run(OpCommand::SettlePeer {
        peer: peer.into(),
        settlement: NewSettlement {
            direction: if paid { Direction::Paid } else { Direction::Received },
            amount: MoneyValue::new(amount).unwrap(),
            id: None,
        },
    })
}

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
    wait_until(session, what, |s| s.contains(what)).await
}

/// Waits (at most 20 s) until the screen of `session` satisfies `ok`; `what` describes it.
async fn wait_until(session: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = screen(session);
        if ok(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "the console never showed {what:?}; it shows:\n{s}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn keys(session: &str, keys: &str) {
    tmux(&["send-keys", "-t", session, keys]);
}

/// A console in a tmux session, killed when dropped.
struct Console(String);

impl Console {
    /// `opdesk ARGS` on the data dir `dir` in a 120×40 terminal.
    fn start(name: &str, dir: &Path, args: &str) -> Self {
        let session = format!("opdesk-e2e-{name}-{}", free_port());
        let cmd = format!(
            "OPDESK_CONFIG={cfg} {bin} --data-dir {dir} {args}",
            cfg = dir.join("config.toml").display(),
            bin = env!("CARGO_BIN_EXE_opdesk"),
            dir = dir.display(),
        );
        // a session started while another test kills the last one can land on a tmux server that is exiting
        // and vanish with it: start it again (a few times at most) until it is there
        let console = Self(session);
        for _ in 0..5 {
            tmux(&["new-session", "-d", "-s", &console.0, "-x", "120", "-y", "40", &cmd]);
            if console.running() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        console
    }

    fn session(&self) -> &str {
        &self.0
    }

    /// Whether the session (and so the console in it) is still there.
    fn running(&self) -> bool {
        Command::new("tmux")
            .args(["has-session", "-t", &self.0])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).output();
    }
}

/// `opdesk serve` on the data dir `dir`, killed when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    async fn start(dir: &Path, port: u16) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_opdesk"))
            .args(["serve", "--data-dir"])
            .arg(dir)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("OPDESK_CONFIG", dir.join("config.toml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("opdesk serve starts");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while reqwest::get(format!("{base}/healthz")).await.is_err() {
            assert!(Instant::now() < deadline, "the server did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self { child, base }
    }

    /// SIGTERM, then waits (at most 15 s) for the process to end.
    fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(Instant::now() < deadline, "the server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn data_dir() -> tempfile::TempDir {
    opdesk::egress::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    dir
}

/// The demo client (its key is seeded into the data dir) asks for an outgoing-payment grant for alice;
/// returns the client and the AS's answer.
async fn request_grant(base: &str, dir: &Path) -> (SignedClient, Value) {
    let key =
        opdesk::httpsig::jwk::from_pkcs8_pem(&std::fs::read_to_string(dir.join("demo-client.pem")).unwrap()).unwrap();
    let kid = opdesk::httpsig::jwk::thumbprint(&key.verifying_key());
    let client = SignedClient::new(key, &kid);
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
    (client, r.body)
}

/// The client continues its grant: once approved it gets its access token.
async fn continue_grant(client: &SignedClient, grant: &Value) {
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let c = client
        .send(
            Method::POST,
            grant["continue"]["uri"].as_str().unwrap(),
            Some(grant["continue"]["access_token"]["value"].as_str().unwrap()),
            None,
        )
        .await
        .unwrap();
    assert_eq!(c.status, 200, "{}", c.body);
    assert!(c.body["access_token"]["value"].is_string(), "{}", c.body);
}

/// In the console: Grants pane, open the pending grant, approve it, confirm.
async fn approve_with_keys(session: &str) {
    wait_for(session, "grant(s) pending").await;
    keys(session, "4");
    wait_for(session, "outgoing-payment").await;
    keys(session, "Enter");
    wait_for(session, "up to 5.00 USD debited").await;
    keys(session, "a");
    wait_for(session, "Approve grant").await;
    keys(session, "y");
    wait_for(session, "approved").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_approves_a_grant_with_the_keyboard() {
    let dir = data_dir();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let console = Console::start("embedded", dir.path(), &format!("--listen 127.0.0.1:{port}"));
    let session = console.session();
    wait_for(session, "embedded").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while reqwest::get(format!("{base}/healthz")).await.is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // a client asks for an outgoing-payment grant for alice; it shows up and the keys approve it
    let (client, grant) = request_grant(&base, dir.path()).await;
    approve_with_keys(session).await;
    // the client's continue now gets its token
    continue_grant(&client, &grant).await;

    // the request log shows the client's signed requests with their verdict, and the exchange on Enter
    keys(session, "Escape");
    tokio::time::sleep(Duration::from_millis(200)).await;
    keys(session, "7");
    let log = wait_for(session, "/auth/continue/").await;
    assert!(log.contains("demo-client") && log.contains(" ok "), "{log}");
    keys(session, "Enter");
    wait_for(session, "request  POST").await;

    // quitting restores the terminal and stops the server
    keys(session, "Escape");
    tokio::time::sleep(Duration::from_millis(200)).await;
    keys(session, "q");
    let deadline = Instant::now() + Duration::from_secs(10);
    while reqwest::get(format!("{base}/healthz")).await.is_ok() {
        assert!(Instant::now() < deadline, "the server kept running after q");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_attaches_to_the_running_server_and_quitting_leaves_it_serving() {
    let dir = data_dir();
    let port = free_port();
    let server = Server::start(dir.path(), port).await;
    let pid = server.child.id();

    // no flags but the data dir: it attaches to the server that holds it
    let console = Console::start("attach", dir.path(), "");
    let session = console.session();
    wait_for(session, &format!("attached to {} (pid {pid})", server.base)).await;
    // the request log shows requests to the server (the event stream carries them), not the console's own
    keys(session, "7");
    reqwest::get(format!("{}/alice", server.base)).await.unwrap();
    let log = wait_for(session, "/alice").await;
    assert!(!log.contains("/admin/"), "{log}");

    let (client, grant) = request_grant(&server.base, dir.path()).await;
    approve_with_keys(session).await;
    keys(session, "Escape");
    tokio::time::sleep(Duration::from_millis(200)).await;
    keys(session, "7");
    let log = wait_for(session, "POST    /auth").await;
    assert!(log.contains("demo-client") && log.contains(" ok "), "{log}");
    // with the exchange the server captured for the console
    keys(session, "Enter");
    wait_for(session, "request  POST").await;
    // and the signature debugger's report, carried on the event stream to an attached console
    let detail = wait_for(session, "signature base").await;
    assert!(detail.contains("verdict       ok"), "{detail}");
    keys(session, "Escape");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // the Webhooks pane: this server has no webhook URL, and says so (GET /admin/server)
    keys(session, "9");
    wait_for(session, "no webhook URL is configured").await;

    // quitting leaves the server serving: the client's continue succeeds
    keys(session, "q");
    let deadline = Instant::now() + Duration::from_secs(10);
    while console.running() {
        assert!(Instant::now() < deadline, "the console did not quit on q");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let health = reqwest::get(format!("{}/healthz", server.base)).await.unwrap();
    assert!(health.status().is_success());
    continue_grant(&client, &grant).await;

    // a second console attaches and sees the decision
    let second = Console::start("attach2", dir.path(), "");
    let s2 = second.session();
    wait_for(s2, "attached to").await;
    keys(s2, "4");
    let screen = wait_until(s2, "the grant, decided", |s| {
        s.contains("outgoing-payment") && (s.contains("finalized") || s.contains("approved"))
    })
    .await;
    assert!(!screen.contains("grant(s) pending"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_consoles_see_each_others_decisions() {
    let dir = data_dir();
    let server = Server::start(dir.path(), free_port()).await;
    let a = Console::start("a", dir.path(), "");
    let b = Console::start("b", dir.path(), "");
    wait_for(a.session(), "attached to").await;
    wait_for(b.session(), "attached to").await;

    let _grant = request_grant(&server.base, dir.path()).await;
    // b is about to approve it too: its confirm dialog is open
    wait_for(b.session(), "grant(s) pending").await;
    keys(b.session(), "4");
    wait_for(b.session(), "outgoing-payment").await;
    keys(b.session(), "a");
    wait_for(b.session(), "Approve grant").await;

    // a approves it; it leaves b's pending queue
    approve_with_keys(a.session()).await;
    wait_until(b.session(), "no pending grants", |s| !s.contains("grant(s) pending")).await;

    // b's late approval says the grant is already decided
    keys(b.session(), "y");
    wait_for(b.session(), "is already approved").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_console_rides_out_a_server_restart() {
    let dir = data_dir();
    let mut server = Server::start(dir.path(), free_port()).await;
    let console = Console::start("restart", dir.path(), "");
    let session = console.session();
    wait_for(session, "attached to").await;
    keys(session, "2");
    wait_for(session, "alice").await;

    server.stop();
    wait_for(session, "disconnected — reconnecting").await;

    // while no server runs, an operator command changes the data dir offline
    let out = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(["wallets", "create", "dave", "--asset", "USD", "--data-dir"])
        .arg(dir.path())
        .env("OPDESK_CONFIG", dir.path().join("config.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // the server comes back on another port: the console finds it through server.json and resyncs
    let again = Server::start(dir.path(), free_port()).await;
    let screen = wait_for(
        session,
        &format!("attached to {} (pid {})", again.base, again.child.id()),
    )
    .await;
    assert!(!screen.contains("disconnected"), "{screen}");
    wait_for(session, "dave").await;
}

/// The next feed message that is not the request log, within 10 s.
async fn next_feed(rx: &mut tokio::sync::mpsc::Receiver<Feed>) -> Feed {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let f = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("the feed said something within 10 s")
            .expect("the feed is open");
        if !matches!(
            f,
            Feed::Event(
                opdesk::events::DomainEvent::HttpRequest { .. } | opdesk::events::DomainEvent::RequestsServed { .. }
            )
        ) {
            return f;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_and_the_attached_desk_answer_alike() {
    use opdesk::{
        admin::AdminClient,
        console::remote::{Remote, Source},
        tui::{
            app::{Effect, Reply, short_id},
            control::run,
            desk::Desk,
            pane::Pane,
            panes::Panes,
        },
    };
    let ase = crate::common::TestAse::spawn().await;
    let local = ase.state.services.clone();
    let remote = Remote::new(AdminClient::new(&ase.base, &ase.admin_token).unwrap(), Source::Fixed);

    // the attached feed says it is up (the console then loads everything), then carries events
    let mut remote_feed = remote.feed();
    let mut local_feed = local.feed();
    let Feed::Up(info) = next_feed(&mut remote_feed).await else {
        panic!("the attached feed starts with Up")
    };
    let attached = info.attached.clone().expect("attached");
    assert_eq!(
        (attached.as_str(), info.server.pid),
        (ase.base.as_str(), std::process::id())
    );
    let embedded = local.info().await.unwrap();
    assert_eq!(embedded.attached, None);
    assert_eq!(
        opdesk::tui::app::ServerInfo { attached: None, ..info },
        embedded,
        "the same server described alike"
    );

    // a pending grant, so every pane has something to show
    let client = ase.demo_client().await;
    let grant = client
        .send(
            Method::POST,
            &ase.url("/auth"),
            None,
            Some(&json!({
                "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": ase.url("/alice"),
                    "limits": {"debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}}}]},
                "client": ase.url("/demo-client"),
                "interact": {"start": ["redirect"]},
            })),
        )
        .await
        .unwrap();
    assert_eq!(grant.status, 200, "{}", grant.body);
    for feed in [&mut remote_feed, &mut local_feed] {
        assert!(
            matches!(
                next_feed(feed).await,
                Feed::Event(opdesk::events::DomainEvent::GrantPending { .. })
            ),
            "both feeds carry the new grant"
        );
    }

    // the panes' loads, the narrowed ones (failed payments, dead deliveries) as such
    let mut narrowed = Panes::default();
    narrowed.outgoing.failed_only = true;
    narrowed.webhooks.dead_only = true;
    let first_page = |pane: Pane| Panes::default().first_page(pane, None).expect("a load");
    for pane in [
        Pane::Overview,
        Pane::Wallets,
        Pane::Incoming,
        Pane::Grants,
        Pane::Outgoing,
        Pane::Quotes,
        Pane::Webhooks,
    ] {
        let load = narrowed.first_page(pane, None).expect("a load");
        let (mut l, mut r) = (run(&local, load.clone()).await, run(&remote, load.clone()).await);
        if pane == Pane::Overview && l != r {
            // the overview's activity is per minute: the minute may have turned between the two loads
            (l, r) = (run(&local, load.clone()).await, run(&remote, load).await);
        }
        assert!(!matches!(l, Some(Reply::Failed(_))), "{l:?}");
        assert_eq!(l, r, "{pane:?} loads alike in both modes");
    }
    // the `/` filter of a pane paged from the store is asked of the store, alike in both modes
    for (pane, q) in [
        (Pane::Incoming, "bob"),
        (Pane::Incoming, "pending"),
        (Pane::Outgoing, "alice"),
        (Pane::Quotes, "nothing-matches-this"),
    ] {
        let load = Panes::default().first_page(pane, Some(q.into())).expect("a load");
        let (mut l, mut r) = (run(&local, load.clone()).await, run(&remote, load.clone()).await);
        if pane == Pane::Overview && l != r {
            // the overview's activity is per minute: the minute may have turned between the two loads
            (l, r) = (run(&local, load.clone()).await, run(&remote, load).await);
        }
        assert!(!matches!(l, Some(Reply::Failed(_))), "{l:?}");
        assert_eq!(l, r, "{pane:?} /{q} loads alike in both modes");
    }
    let Some(Reply::Found { found, .. }) = run(&remote, first_page(Pane::Overview)).await else {
        panic!("the overview loads")
    };
    let Found::Overview(o) = *found else { panic!("overview") };
    assert_eq!(o.pending_grants, 1);

    // a decision in one mode; deciding again says it is already decided, worded alike in both
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        run(&remote, Effect::Run(OpCommand::ApproveGrant { id: id.clone() })).await,
        Some(Reply::Done(format!("grant {} approved", short_id(&id))))
    );
    let again = run(&local, Effect::Run(OpCommand::ApproveGrant { id: id.clone() })).await;
    assert_eq!(again, Some(Reply::Failed(format!("grant {id} is already approved"))));
    assert_eq!(
        run(&remote, Effect::Run(OpCommand::ApproveGrant { id: id.clone() })).await,
        again
    );
    assert_eq!(
        run(
            &remote,
            Effect::Run(OpCommand::RejectGrant {
                id: id.clone(),
                reason: None
            })
        )
        .await,
        again,
        "a rejection too"
    );
    let (status, body) = ase
        .admin(Method::POST, &format!("/grants/{id}/approve"), Some("{}"))
        .await;
    assert_eq!(status, 409);
    crate::common::assert_envelope(&body, "already_decided");
    for feed in [&mut remote_feed, &mut local_feed] {
        assert_eq!(
            next_feed(feed).await,
            Feed::Event(opdesk::events::DomainEvent::GrantApproved {
                id: id.clone(),
                by: Some("console".into()),
            }),
            "both feeds carry the decision, and who made it"
        );
    }

    // other refusals are worded alike too
    for e in [
        Effect::Run(OpCommand::RevokeGrant {
            id: "no-such-grant".into(),
        }),
        Effect::Run(OpCommand::CompleteIncoming {
            id: "no-such-payment".into(),
        }),
        Effect::Run(OpCommand::RetryOutgoing {
            id: "no-such-payment".into(),
        }),
        Effect::Run(OpCommand::RetryWebhook { seq: 424_242 }),
        Effect::Run(OpCommand::AddKey {
            wallet: "no-such-wallet".into(),
            key: AddKey {
                jwk: None,
                generate: true,
            },
        }),
        Effect::Run(OpCommand::Withdraw {
            wallet: "alice".into(),
            funds: Move::of(MoneyValue::new(u64::MAX / 2).unwrap()),
        }),
        Effect::Run(OpCommand::CreateWallet(CreateWallet {
            name: "alice".into(),
            asset_code: "USD".into(),
            asset_scale: 2,
            public_name: None,
        })),
    ] {
        let (l, r) = (run(&local, e.clone()).await, run(&remote, e.clone()).await);
        assert!(matches!(l, Some(Reply::Failed(_))), "{e:?}: {l:?}");
        assert_eq!(l, r, "{e:?}");
    }

    // peer liquidity and settlements: the same outcome and the same refusals in both modes
    let (status, added) = ase
        .admin(
            Method::POST,
            "/peers",
            Some(r#"{"name":"runtime","assetCode":"USD","assetScale":2,"incomingTokens":["console-peer-token"]}"#),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    let deposit = liquidity("runtime", true, 1000);
    assert_eq!(
        run(&remote, deposit.clone()).await,
        Some(Reply::Done(
            "deposited 10.00 USD into runtime's liquidity: now 10.00 USD, 10.00 USD available to send".into()
        ))
    );
    let Some(Reply::Done(text)) = run(&local, deposit).await else {
        panic!("the embedded desk deposits too")
    };
    assert!(text.ends_with("now 20.00 USD, 20.00 USD available to send"), "{text}");
    let settle = settlement("runtime", false, 250);
    let (l, r) = (run(&local, settle.clone()).await, run(&remote, settle).await);
    assert_eq!(
        l,
        Some(Reply::Done(
            "settlement recorded: runtime paid us 2.50 USD; now we owe runtime 2.50 USD".into()
        ))
    );
    assert_eq!(
        r,
        Some(Reply::Done(
            "settlement recorded: runtime paid us 2.50 USD; now we owe runtime 5.00 USD".into()
        ))
    );
    for e in [
        liquidity("runtime", false, 5000),
        liquidity("no-such-peer", true, 1),
        settlement("no-such-peer", true, 1),
    ] {
        let (l, r) = (run(&local, e.clone()).await, run(&remote, e.clone()).await);
        assert!(matches!(l, Some(Reply::Failed(_))), "{e:?}: {l:?}");
        assert_eq!(l, r, "{e:?}");
    }
    let Some(Reply::Failed(text)) = run(&remote, liquidity("runtime", false, 5000)).await else {
        panic!("a withdrawal past the liquidity is refused")
    };
    assert!(
        text.starts_with("cannot withdraw 50.00 USD from peer runtime's liquidity"),
        "{text}"
    );
    let load = first_page(Pane::Peers);
    let (l, r) = (run(&local, load.clone()).await, run(&remote, load).await);
    assert_eq!(l, r, "the Peers pane loads alike in both modes");
    let Some(Reply::Found { found, .. }) = l else {
        panic!("peers: {l:?}")
    };
    let Found::Peers(peers) = *found else {
        panic!("peers: {found:?}")
    };
    let p = peers.iter().find(|p| p.name == "runtime").expect("the peer");
    assert_eq!((p.liquidity, p.position, p.available_to_send), (2000, 500, Some(1500)));

    // the demo signs with the data dir's key: not through --connect
    let Some(Reply::Failed(text)) = run(&remote, Effect::Demo).await else {
        panic!("the demo is refused with --connect")
    };
    assert!(text.contains("--connect"), "{text}");
}

/// With a webhook URL nobody answers and a budget of one attempt, a delivery dies; the console lists it
/// (alike through both desks) and re-driving makes it pending again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_webhook_shows_in_the_console_and_re_driving_makes_it_pending() {
    use opdesk::{
        admin::AdminClient,
        console::remote::{Remote, Source},
        states::DeliveryState,
        tui::{
            app::{Effect, Reply},
            control::run,
            desk::Desk,
            pane::Pane,
            panes::Panes,
        },
        webhooks::DeliveryRow,
    };
    /// The dead deliveries a desk's Webhooks pane loads.
    fn dead_rows(r: Option<Reply>) -> Vec<DeliveryRow> {
        match r {
            Some(Reply::Found { found, .. }) => match *found {
                Found::Webhooks(rows) => rows,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }
    let ase = crate::common::TestAse::spawn_with(&format!(
        "[webhooks]\nurl = \"http://127.0.0.1:{}/hook\"\nmax_attempts = 1\ntimeout_ms = 1000\n",
        free_port()
    ))
    .await;
    let local = ase.state.services.clone();
    let remote = Remote::new(AdminClient::new(&ase.base, &ase.admin_token).unwrap(), Source::Fixed);
    assert!(local.info().await.unwrap().server.webhooks_enabled);
    assert!(
        remote.info().await.unwrap().server.webhooks_enabled,
        "the admin API says so too"
    );

    let (status, body) = ase
        .admin(
            Method::POST,
            "/wallets",
            Some(r#"{"name":"hooked","assetCode":"USD","assetScale":2}"#),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let mut panes = Panes::default();
    panes.webhooks.dead_only = true;
    let dead = panes.first_page(Pane::Webhooks, None).expect("a load");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let rows = loop {
        let rows = dead_rows(run(&local, dead.clone()).await);
        if !rows.is_empty() {
            break rows;
        }
        assert!(tokio::time::Instant::now() < deadline, "no dead delivery within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let d = rows[0].clone();
    assert_eq!(
        (d.kind.as_str(), d.state, d.attempts),
        ("walletCreated", DeliveryState::Dead, 1)
    );
    assert!(d.last_error.is_some(), "{d:?}");
    assert_eq!(dead_rows(run(&remote, dead.clone()).await), rows);

    // re-driven: pending again with a fresh budget (the deliverer then tries it at once)
    let again: opdesk::webhooks::DeliveryRow = local
        .run(OpCommand::RetryWebhook { seq: d.event_seq })
        .await
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!((again.state, again.attempts), (DeliveryState::Pending, 0));
    // it dies again (one attempt); re-driving through the console's effects says what happened
    loop {
        if !dead_rows(run(&remote, dead.clone()).await).is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline + Duration::from_secs(10),
            "it died again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        run(&remote, Effect::Run(OpCommand::RetryDeadWebhooks)).await,
        Some(Reply::Done("1 dead webhook delivery will be sent again".into()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readonly_console_connects_by_url() {
    let dir = data_dir();
    let server = Server::start(dir.path(), free_port()).await;
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("config.toml"), "").unwrap();
    let args = format!(
        "--connect {} --token-file {} --readonly",
        server.base,
        dir.path().join("admin.token").display()
    );
    let console = Console::start("connect", elsewhere.path(), &args);
    let session = console.session();
    wait_for(
        session,
        &format!("attached to {} (pid {})", server.base, server.child.id()),
    )
    .await;
    wait_for(session, "READONLY").await;

    // the demo signs with the data dir's key, which --connect does not have
    keys(session, "D");
    wait_for(session, "not available with --connect").await;

    // read-only: the grant shows, approving it is not offered
    request_grant(&server.base, dir.path()).await;
    wait_for(session, "grant(s) pending").await;
    keys(session, "4");
    wait_for(session, "outgoing-payment").await;
    keys(session, "a");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = screen(session);
    assert!(!s.contains("Approve grant"), "{s}");

    keys(session, "q");
    let deadline = Instant::now() + Duration::from_secs(10);
    while console.running() {
        assert!(Instant::now() < deadline, "the console did not quit on q");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let health = reqwest::get(format!("{}/healthz", server.base)).await.unwrap();
    assert!(health.status().is_success(), "the server keeps serving");
}

/// The first line of the screen (the header).
fn header(session: &str) -> String {
    screen(session).lines().next().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workshop_console_switches_between_its_two_desks() {
    let dir = data_dir();
    let (nine, happy) = (free_port(), free_port());
    let console = Console::start(
        "workshop",
        dir.path(),
        &format!(
            "workshop --dir {} --cloud-nine-port {nine} --happy-life-port {happy}",
            dir.path().join("ws").display()
        ),
    );
    let session = console.session();
    let on = |desk: &'static str, other: &'static str, port: u16| {
        move |s: &str| {
            let h = s.lines().next().unwrap_or_default();
            h.contains(&format!(" {desk} ")) && h.contains(&format!("F2: {other}")) && h.contains(&port.to_string())
        }
    };
    wait_until(session, "cloud-nine in view", on("cloud-nine", "happy-life", nine)).await;
    // the Peers pane (0) of cloud-nine lists happy-life, with the liquidity the workshop deposited
    keys(session, "0");
    wait_for(session, "test.happy-life").await;
    wait_for(session, "1000.00").await;
    // + asks for an amount, then for a confirmation; yes deposits it and the pane shows the new liquidity
    keys(session, "+");
    wait_for(session, "deposit liquidity for happy-life").await;
    keys(session, "25");
    keys(session, "Enter");
    wait_for(session, "Deposit 25.00 USD of liquidity for peer happy-life?").await;
    keys(session, "y");
    wait_for(session, "1025.00").await;
    // a withdrawal beyond what may be withdrawn is refused in the ASE's words, and nothing moves
    keys(session, "-");
    keys(session, "5000");
    keys(session, "Enter");
    wait_for(session, "of peer happy-life's liquidity?").await;
    keys(session, "y");
    let refused = wait_for(session, "cannot withdraw").await;
    let row = refused
        .lines()
        .find(|l| l.contains("test.happy-life"))
        .unwrap_or_default();
    assert!(row.contains("1025.00"), "the liquidity stays:\n{refused}");
    // a settlement: the peer paid us
    keys(session, "S");
    keys(session, "received 1");
    keys(session, "Enter");
    wait_for(session, "Record that peer happy-life paid us 1.00 USD outside ILP?").await;
    keys(session, "y");
    wait_for(session, "settlement recorded: happy-life paid us 1.00 USD").await;
    // the pane reloads: the position moved by the settlement (positive: we owe it)
    wait_until(session, "the position after the settlement", |s| {
        s.lines()
            .find(|l| l.contains("test.happy-life"))
            .is_some_and(|row| row.contains("1.00") && row.contains("1024.00"))
    })
    .await;
    keys(session, "F2");
    wait_until(session, "happy-life in view", on("happy-life", "cloud-nine", happy)).await;
    let peers = wait_for(session, "test.cloud-nine").await;
    assert!(
        !peers.contains("test.happy-life"),
        "happy-life's own peers only:\n{peers}"
    );
    keys(session, ":");
    keys(session, "desk cloud-nine");
    keys(session, "Enter");
    wait_until(session, "cloud-nine again", on("cloud-nine", "happy-life", nine)).await;
    wait_for(session, "test.happy-life").await;
    assert!(header(session).contains("cloud-nine"));

    // quitting stops both desks
    keys(session, "q");
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in [nine, happy] {
        while reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await.is_ok() {
            assert!(Instant::now() < deadline, "a desk kept running after q");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The next feed message that is not the request log, or none within `wait`.
async fn feed_within(rx: &mut tokio::sync::mpsc::Receiver<Feed>, wait: Duration) -> Option<Feed> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let f = tokio::time::timeout_at(deadline, rx.recv()).await.ok()??;
        if !matches!(
            f,
            Feed::Event(
                opdesk::events::DomainEvent::HttpRequest { .. } | opdesk::events::DomainEvent::RequestsServed { .. }
            )
        ) {
            return Some(f);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn desks_run_every_operation_on_the_desk_in_view_and_tell_of_the_others() {
    use opdesk::{
        control::{self, dto::CreateWallet},
        events::DomainEvent,
        tui::{desk::Desk, desks::Desks},
    };
    let (a, b) = (
        crate::common::TestAse::spawn().await,
        crate::common::TestAse::spawn().await,
    );
    let desks = Desks::new(vec![
        ("a".to_owned(), a.state.services.clone()),
        ("b".to_owned(), b.state.services.clone()),
    ])
    .unwrap();
    assert!(Desks::new(vec![("a".to_owned(), a.state.services.clone()); 2]).is_err());
    assert_eq!(
        desks.desks().map(|d| d.names),
        Some(vec!["a".to_owned(), "b".to_owned()])
    );
    assert_eq!(desks.info().await.unwrap().server.public_url, a.base);
    let mut feed = desks.feed();
    let wallet = |name: &str| CreateWallet {
        name: name.into(),
        asset_code: "USD".into(),
        asset_scale: 2,
        public_name: None,
    };

    // in view: its events pass; the other's plain events do not
    // (an embedded feed starts from the outbox's newest event once its task has read it: wallets are made
    // until one comes through)
    'ready: for n in 0..40 {
        let name = format!("dora{n}");
        desks.run(OpCommand::CreateWallet(wallet(&name))).await.unwrap();
        while let Some(f) = feed_within(&mut feed, Duration::from_millis(500)).await {
            if matches!(&f, Feed::Event(DomainEvent::WalletCreated { name: w, .. }) if *w == name) {
                break 'ready;
            }
        }
        assert!(n < 39, "the desk in view's events did not pass");
    }
    control::create_wallet(&b.state.services, wallet("emil")).await.unwrap();
    while let Some(f) = feed_within(&mut feed, Duration::from_millis(700)).await {
        assert!(
            !matches!(f, Feed::Event(DomainEvent::WalletCreated { .. })),
            "the other desk's wallet came through: {f:?}"
        );
    }

    // a grant waiting on the other desk is told, with the desk's name
    let client = b.demo_client().await;
    let body = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": format!("{}/alice", b.base)}]},
        "client": format!("{}/demo-client", b.base),
        "interact": {"start": ["redirect"]},
    });
    let r = client
        .send(Method::POST, &format!("{}/auth", b.base), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let told = loop {
        match feed_within(&mut feed, Duration::from_secs(10)).await {
            Some(Feed::Elsewhere(desk, e)) => break (desk, e),
            Some(_) => continue,
            None => panic!("the other desk's pending grant was not told"),
        }
    };
    assert!(
        matches!(&told, (d, DomainEvent::GrantPending { .. }) if d == "b"),
        "{told:?}"
    );

    // switched: operations and events follow the desk in view
    let (info, list) = desks.switch("b").await.unwrap();
    assert_eq!(
        (info.server.public_url.as_str(), list.current()),
        (b.base.as_str(), "b")
    );
    let Ok(opdesk::control::Found::Wallets(wallets)) = desks.ask(opdesk::control::Query::Wallets).await else {
        panic!("the wallets of the desk in view")
    };
    let names: Vec<String> = wallets.into_iter().map(|w| w.wallet.name).collect();
    assert!(
        names.contains(&"emil".to_owned()) && !names.contains(&"dora".to_owned()),
        "{names:?}"
    );
    assert!(matches!(
        desks.ask(opdesk::control::Query::Peers).await,
        Ok(opdesk::control::Found::Peers(p)) if p.is_empty()
    ));
    control::create_wallet(&b.state.services, wallet("fritz"))
        .await
        .unwrap();
    loop {
        match feed_within(&mut feed, Duration::from_secs(10)).await {
            Some(Feed::Event(DomainEvent::WalletCreated { name, .. })) if name == "fritz" => break,
            Some(_) => continue,
            None => panic!("the desk in view's events did not pass"),
        }
    }
    assert!(desks.switch("nowhere").await.is_err());
}

/// A console attached to a workshop desk (`opdesk --data-dir DIR/cloud-nine` while `opdesk workshop` serves)
/// opens on the Classroom with every seat, as the workshop's own console does; a seat whose owner is locked
/// out of its grant's page says so, and `U` on that grant in the Grants pane lets the owner sign in again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_workshop_console_opens_on_the_classroom_and_u_lifts_a_lockout() {
    opdesk::egress::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let (nine, happy) = (free_port(), free_port());
    let mut workshop = Command::new(env!("CARGO_BIN_EXE_opdesk"))
        .args(["workshop", "--headless", "--seats", "2", "--dir"])
        .arg(&ws)
        .args([
            "--cloud-nine-port",
            &nine.to_string(),
            "--happy-life-port",
            &happy.to_string(),
        ])
        .env_remove("OPDESK_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("opdesk workshop starts");
    let base = format!("http://127.0.0.1:{nine}");
    let deadline = Instant::now() + Duration::from_secs(30);
    for port in [nine, happy] {
        while reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await.is_err() {
            assert!(Instant::now() < deadline, "the workshop did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let desk = ws.join("cloud-nine");
    let console = Console::start("attached-class", &desk, "");
    let session = console.session();
    let class = wait_until(session, "the Classroom with both seats", |s| {
        s.contains("seat01") && s.contains("seat02") && s.contains("INCOMING")
    })
    .await;
    assert!(
        header(session).contains("Classroom") || class.contains("Classroom"),
        "{class}"
    );

    // seat01's app asks for a grant with the key from its handout; five wrong passphrases lock its page
    let env = std::fs::read_to_string(ws.join("handout/seat01/.env")).unwrap();
    let var = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap()
            .to_owned()
    };
    let pem = std::fs::read_to_string(ws.join("handout/seat01/private.key")).unwrap();
    let app = SignedClient::new(opdesk::httpsig::jwk::from_pkcs8_pem(&pem).unwrap(), &var("KEY_ID"));
    let wallet = var("WALLET_ADDRESS");
    let doc: Value = reqwest::get(&wallet).await.unwrap().json().await.unwrap();
    let grant = json!({
        "access_token": {"access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": wallet,
            "limits": {"debitAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}}}]},
        "client": var("CLIENT_WALLET_ADDRESS"),
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "n"}},
    });
    let r = app
        .send(Method::POST, doc["authServer"].as_str().unwrap(), None, Some(&grant))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let page = r.body["interact"]["redirect"].as_str().unwrap().to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let first = http.get(&page).send().await.unwrap();
    let cookie = first.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let html = first.text().await.unwrap();
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = html[at..].split('"').next().unwrap().to_owned();
    for _ in 0..5 {
        let r = http
            .post(&page)
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("csrf={csrf}&passphrase=wrong+wrong"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    keys(session, "r");
    wait_for(session, "locked out — unlock").await;

    // the Grants pane, the seat's grant, U, confirm: the lockout is lifted and the Classroom says so
    keys(session, "4");
    wait_for(session, "outgoing-payment").await;
    keys(session, "U");
    wait_for(session, "Let the owner sign in again on grant").await;
    keys(session, "y");
    let lifted = wait_until(session, "the lockout lifted", |s| {
        !s.contains("Let the owner sign in again")
    })
    .await;
    assert!(!lifted.contains("read-only"), "{lifted}");
    let token = std::fs::read_to_string(desk.join("admin.token")).unwrap();
    let c: Value = reqwest::Client::new()
        .post(format!("{base}/admin/queries"))
        .bearer_auth(token.trim())
        .json(&json!({"query": "class"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let seat = c["value"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["seat"] == 1)
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (seat["failedSignIns"].as_u64(), seat["lockedOut"].as_bool()),
        (Some(0), Some(false)),
        "{c}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &workshop.id().to_string()])
        .status();
    let _ = workshop.wait();
}
