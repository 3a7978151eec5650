#![allow(clippy::print_stdout, clippy::print_stderr)]
//! Soak: minutes of mixed load against a real `opdesk serve` that this program starts, sampling the server's
//! footprint, then an independent audit of the ledger.
//!
//! ```sh
//! cargo build --release --bin opdesk --example soak
//! target/release/examples/soak --minutes 10                        # SQLite in a fresh data dir
//! target/release/examples/soak --minutes 10 --database postgres://…  # PostgreSQL (an empty database)
//! ```
//!
//! The load, each kind on its own connections, back to back until the deadline: signed creates
//! (`POST /incoming-payments`), signed list pages (`GET /incoming-payments?first=20`), one-unit STREAM money
//! packets into `POST /ilp` (through a peer added for the run), and local payments (alice pays an incoming
//! payment of bob's: a signed create at bob, then a signed `POST /outgoing-payments` with `incomingPayment`
//! and `debitAmount`, settled by the engine). With `--console` (and tmux on the machine) a real console
//! attaches to the server in a detached tmux session for the whole run, as an operator's would.
//!
//! Every `--sample-secs` it prints one row: the WAL and database files' sizes (SQLite) or the database's size
//! and dead tuples (PostgreSQL), the server's RSS and open file descriptors, and per kind the completions per
//! second and p99 latency over that interval. At the end it lets the engine finish, stops the server with
//! SIGTERM and audits what is stored with its own SQL (not opdesk's): every account's cached balance and
//! reservations equal the journal, each asset's balances sum to zero, no wallet is overdrawn, nothing is
//! still reserved, and every completed local payment moved exactly its amount. It passes when the WAL never
//! passed its ceiling, the RSS after the warm-up grew by less than `--rss-slack-mib`, the file descriptors
//! did not grow, no request failed and the audit is clean; it exits 1 otherwise. Loopback only; every loop is
//! bounded in time and count.

mod support;

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use clap::Parser;
use http::Method;
use opdesk::client::SignedClient;
use serde_json::{Value, json};
use support::{BoxError, RunPeer, demo_key, grant_token, ilp_connection, percentile, request_grant};

/// How long one request may take before it counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound on requests per worker, so every loop is bounded in count as well as in time.
const MAX_REQUESTS_PER_WORKER: u64 = 100_000_000;

#[derive(Parser, Debug)]
#[command(about = "Mixed-load soak of opdesk serve: footprint over time, then a ledger audit")]
struct Args {
    /// The opdesk binary (default: `opdesk` beside this example's directory, i.e. the same profile's).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Measured minutes (after the warm-up).
    #[arg(long, default_value_t = 10)]
    minutes: u64,
    /// Warm-up seconds: RSS and file descriptors are compared against the sample at its end.
    #[arg(long, default_value_t = 60)]
    warmup_secs: u64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 10)]
    sample_secs: u64,
    /// PostgreSQL URL of an empty database (default: SQLite in the data dir).
    #[arg(long)]
    database: Option<String>,
    /// Data dir (default: a fresh temporary one, removed at the end).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// `store.wal_max_bytes` for the server.
    #[arg(long, default_value_t = 64 << 20)]
    wal_max_bytes: u64,
    /// Connections per kind: creates, list pages, STREAM packets, local payments.
    #[arg(long, value_delimiter = ',', default_value = "4,2,2,2")]
    connections: Vec<usize>,
    /// Attach a real console (`opdesk` in a detached tmux session, 120x40) for the whole run.
    #[arg(long)]
    console: bool,
    /// How much the server's RSS may grow after the warm-up, in MiB.
    #[arg(long, default_value_t = 32)]
    rss_slack_mib: u64,
}

/// The load's kinds, in the order of `--connections`.
const KINDS: [&str; 4] = ["create", "list", "ilp", "pay"];

/// What the workers of one kind completed since the last sample.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    ok_total: u64,
    errors: u64,
    first_errors: Vec<String>,
}

type Tallies = Arc<[Mutex<Tally>; 4]>;

fn note(tallies: &Tallies, kind: usize, started: Instant, outcome: Result<(), String>) {
    let Ok(mut t) = tallies[kind].lock() else { return };
    match outcome {
        Ok(()) => {
            t.ok_total += 1;
            t.latencies_us
                .push(u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX));
        }
        Err(e) => {
            t.errors += 1;
            if t.first_errors.len() < 5 {
                t.first_errors.push(e);
            }
        }
    }
}

/// One signed request; `Ok` when it answered `expect`.
async fn signed(
    client: &SignedClient,
    method: Method,
    url: &str,
    token: &str,
    body: Option<&Value>,
    expect: u16,
) -> Result<Value, String> {
    match tokio::time::timeout(REQUEST_TIMEOUT, client.send(method, url, Some(token), body)).await {
        Ok(Ok(r)) if r.status == expect => Ok(r.body),
        Ok(Ok(r)) => Err(format!("{url}: {} {}", r.status, r.body)),
        Ok(Err(e)) => Err(format!("{url}: {e}")),
        Err(_) => Err(format!("{url}: no answer within {REQUEST_TIMEOUT:?}")),
    }
}

/// The tokens the workers use.
#[derive(Clone)]
struct Tokens {
    incoming: String,
    outgoing: String,
}

/// One worker of `kind` until `deadline`.
async fn worker(kind: usize, base: String, client: SignedClient, tokens: Tokens, tallies: Tallies, deadline: Instant) {
    let incoming = format!("{base}/incoming-payments");
    let bob = format!("{base}/bob");
    let mut n = 0u64;
    while n < MAX_REQUESTS_PER_WORKER && Instant::now() < deadline {
        n += 1;
        let started = Instant::now();
        let outcome = match kind {
            0 => {
                let body = json!({"walletAddress": bob, "incomingAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}});
                signed(&client, Method::POST, &incoming, &tokens.incoming, Some(&body), 201)
                    .await
                    .map(drop)
            }
            1 => {
                let url = format!("{incoming}?wallet-address={bob}&first=20");
                signed(&client, Method::GET, &url, &tokens.incoming, None, 200)
                    .await
                    .map(drop)
            }
            _ => local_payment(&client, &base, &tokens).await,
        };
        let failed = outcome.is_err();
        note(&tallies, kind, started, outcome);
        if failed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// alice pays 1.00 USD into a new incoming payment of bob's: two signed requests; the engine settles it.
async fn local_payment(client: &SignedClient, base: &str, tokens: &Tokens) -> Result<(), String> {
    let body = json!({"walletAddress": format!("{base}/bob"), "incomingAmount": {"value": "100", "assetCode": "USD", "assetScale": 2}});
    let ip = signed(
        client,
        Method::POST,
        &format!("{base}/incoming-payments"),
        &tokens.incoming,
        Some(&body),
        201,
    )
    .await?;
    let body = json!({
        "walletAddress": format!("{base}/alice"),
        "incomingPayment": ip["id"],
        "debitAmount": {"value": "100", "assetCode": "USD", "assetScale": 2},
    });
    signed(
        client,
        Method::POST,
        &format!("{base}/outgoing-payments"),
        &tokens.outgoing,
        Some(&body),
        201,
    )
    .await
    .map(drop)
}

/// One STREAM connection sending one-unit packets until `deadline`.
async fn ilp_worker(mut conn: opdesk::ilp::sender::Connection, tallies: Tallies, deadline: Instant) {
    use opdesk::ilp::sender::Verdict;
    let mut n = 0u64;
    while n < MAX_REQUESTS_PER_WORKER && Instant::now() < deadline {
        n += 1;
        let started = Instant::now();
        let outcome = match tokio::time::timeout(REQUEST_TIMEOUT, conn.send_money(1, 1)).await {
            Ok(Ok(Verdict::Fulfilled { .. })) => Ok(()),
            Ok(Ok(v)) => Err(format!("{v:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("no answer".into()),
        };
        let failed = outcome.is_err();
        note(&tallies, 2, started, outcome);
        if failed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    conn.close().await;
}

/// The server's footprint now.
#[derive(Debug, Clone, Copy, Default)]
struct Footprint {
    wal: u64,
    db: u64,
    rss: u64,
    fds: u64,
    /// PostgreSQL: dead tuples over all of opdesk's tables.
    dead: u64,
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn fd_count(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// Samples the footprint: files for SQLite, `pg_database_size` and dead tuples for PostgreSQL.
fn footprint(pid: u32, dir: &Path, pg: Option<&mut postgres::Client>) -> Footprint {
    let mut f = Footprint {
        rss: rss_bytes(pid),
        fds: fd_count(pid),
        ..Footprint::default()
    };
    match pg {
        None => {
            f.wal = file_len(&dir.join("ase.sqlite3-wal"));
            f.db = file_len(&dir.join("ase.sqlite3"));
        }
        Some(c) => {
            if let Ok(r) = c.query_one(
                "SELECT pg_database_size(current_database())::bigint, \
                 (SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM pg_stat_user_tables)",
                &[],
            ) {
                f.db = u64::try_from(r.get::<_, i64>(0)).unwrap_or(0);
                f.dead = u64::try_from(r.get::<_, i64>(1)).unwrap_or(0);
            }
        }
    }
    f
}

fn mib(b: u64) -> f64 {
    b as f64 / f64::from(1u32 << 20)
}

/// The server process: started with the given data dir, store and WAL ceiling; stopped with SIGTERM.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    async fn start(bin: &Path, dir: &Path, database: Option<&str>, wal_max: u64) -> Result<Self, BoxError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let config = dir.join("config.toml");
        let store = match database {
            Some(url) => format!("url = \"{url}\"\n"),
            None => format!("wal_max_bytes = {wal_max}\n"),
        };
        // tokens live through the run (a client would rotate them; the soak measures the server, not that)
        std::fs::write(
            &config,
            format!("[gnap]\nauto_approve = true\naccess_token_expires_in_secs = 86400\n\n[store]\n{store}"),
        )?;
        let child = Command::new(bin)
            .args(["serve", "--log-level", "warn", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(dir)
            .env("OPDESK_CONFIG", &config)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", bin.display()))?;
        let base = format!("http://127.0.0.1:{port}");
        let server = Self { child, base };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if reqwest::get(format!("{}/healthz", server.base)).await.is_ok() {
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err("the server did not answer within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then up to 30 s for a clean exit.
    fn stop(mut self) -> Result<std::process::ExitStatus, BoxError> {
        Command::new("kill").args(["-TERM", &self.pid().to_string()]).status()?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return Err("the server did not stop within 30 s of SIGTERM".into());
            }
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

/// The audit's queries, written here from the schema and not taken from opdesk: each returns rows only where
/// something is wrong.
const AUDIT: [(&str, &str); 5] = [
    (
        "cached balances equal the journal",
        "SELECT CAST(a.id AS TEXT) FROM accounts a LEFT JOIN (
             SELECT account, sum(bal) AS bal, sum(pd) AS pd, sum(pc) AS pc FROM (
                 SELECT credit_account AS account, coalesce(posted_amount, 0) AS bal, 0 AS pd,
                        CASE WHEN state = 'pending' THEN amount ELSE 0 END AS pc FROM transfers
                 UNION ALL
                 SELECT debit_account, -coalesce(posted_amount, 0),
                        CASE WHEN state = 'pending' THEN amount ELSE 0 END, 0 FROM transfers
             ) moves GROUP BY account
         ) j ON j.account = a.id
         WHERE a.balance <> coalesce(j.bal, 0) OR a.pending_debits <> coalesce(j.pd, 0)
            OR a.pending_credits <> coalesce(j.pc, 0)",
    ),
    (
        "each asset's balances sum to zero",
        "SELECT CAST(asset_code AS TEXT) FROM accounts GROUP BY asset_code, asset_scale HAVING sum(balance) <> 0",
    ),
    (
        "no wallet is overdrawn",
        "SELECT CAST(id AS TEXT) FROM accounts WHERE kind = 'wallet' AND balance - pending_debits < 0",
    ),
    (
        "nothing is still reserved",
        "SELECT CAST(id AS TEXT) FROM transfers WHERE state = 'pending'",
    ),
    (
        "every local payment completed and moved exactly its amount into its incoming payment",
        "SELECT CAST(o.id AS TEXT) FROM outgoing_payments o
         LEFT JOIN incoming_payments i ON o.incoming_payment_id = i.id
         WHERE o.state <> 'completed' OR o.sent_amount <> o.debit_amount
            OR o.delivered_amount <> o.receive_amount OR coalesce(i.received_amount, -1) <> o.delivered_amount",
    ),
];

/// Runs [`AUDIT`] on the stopped server's store; the failed checks with a few offending ids.
fn audit(dir: &Path, database: Option<&str>) -> Result<Vec<String>, BoxError> {
    let mut failed = Vec::new();
    match database {
        None => {
            let c = rusqlite::Connection::open_with_flags(
                dir.join("ase.sqlite3"),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )?;
            for (what, sql) in AUDIT {
                let mut st = c.prepare(sql)?;
                let bad: Vec<String> = st
                    .query_map([], |r| r.get::<_, String>(0))?
                    .take(3)
                    .collect::<Result<_, _>>()?;
                if !bad.is_empty() {
                    failed.push(format!("{what}: {bad:?}"));
                }
            }
        }
        Some(url) => {
            let mut c = postgres::Client::connect(url, postgres::NoTls)?;
            for (what, sql) in AUDIT {
                let bad: Vec<String> = c.query(sql, &[])?.iter().take(3).map(|r| r.get(0)).collect();
                if !bad.is_empty() {
                    failed.push(format!("{what}: {bad:?}"));
                }
            }
        }
    }
    Ok(failed)
}

async fn run(args: Args) -> Result<bool, BoxError> {
    opdesk::egress::install_default_crypto_provider();
    if !(1..=120).contains(&args.minutes) || args.sample_secs == 0 || args.warmup_secs > 3600 {
        return Err("--minutes must be 1..=120, --sample-secs at least 1, --warmup-secs at most 3600".into());
    }
    if args.connections.len() != 4 || args.connections.iter().any(|c| *c > 256) {
        return Err("--connections takes four counts (create,list,ilp,pay), each at most 256".into());
    }
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .and_then(Path::parent)
            .map(|d| d.join("opdesk"))
            .ok_or("cannot tell where opdesk is: give --bin")?,
    };
    let temp = tempfile::tempdir()?;
    let dir = args.data_dir.clone().unwrap_or_else(|| temp.path().to_owned());
    std::fs::create_dir_all(&dir)?;
    let database = args.database.as_deref();
    let server = Server::start(&bin, &dir, database, args.wal_max_bytes).await?;
    let base = server.base.clone();
    support::require_loopback(&base)?;
    let pid = server.pid();

    // the grants, alice's money and the run's peer
    let (key, kid) = demo_key(&base, &dir).await?;
    let client = SignedClient::new(key.clone(), &kid);
    let bob = format!("{base}/bob");
    let alice = format!("{base}/alice");
    let incoming = grant_token(
        &client,
        &base,
        json!([{"type": "incoming-payment", "actions": ["create", "read", "list"], "identifier": bob}]),
    )
    .await?;
    let outgoing = outgoing_token(&client, &base, &alice).await?;
    let tokens = Tokens { incoming, outgoing };
    let admin = Admin::new(&dir)?;
    admin
        .post(
            "/wallets/alice/deposit",
            json!({"value": "100000000000", "assetCode": "USD", "assetScale": 2}),
        )
        .await?;
    let plain = reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build()?;
    let peer = RunPeer::add(&plain, &dir).await?;
    let mut ilp = Vec::new();
    for _ in 0..args.connections[2] {
        ilp.push(ilp_connection(&client, &base, &tokens.incoming, &peer, REQUEST_TIMEOUT).await?);
    }
    let console = args.console.then(|| Console::attach(&bin, &dir)).flatten();

    let warmup = Duration::from_secs(args.warmup_secs);
    let measured = Duration::from_secs(args.minutes * 60);
    let started = Instant::now();
    let deadline = started + warmup + measured;
    let tallies: Tallies = Arc::new(Default::default());
    let mut handles = Vec::new();
    for conn in ilp {
        handles.push(tokio::spawn(ilp_worker(conn, tallies.clone(), deadline)));
    }
    for kind in [0, 1, 3] {
        for _ in 0..args.connections[kind] {
            // one client per worker: its own keep-alive connection
            let c = SignedClient::new(key.clone(), &kid);
            handles.push(tokio::spawn(worker(
                kind,
                base.clone(),
                c,
                tokens.clone(),
                tallies.clone(),
                deadline,
            )));
        }
    }
    println!(
        "soak: {} min + {} s warm-up, {} connections (create,list,ilp,pay = {:?}), {}, server pid {pid}, console {}",
        args.minutes,
        args.warmup_secs,
        args.connections.iter().sum::<usize>(),
        args.connections,
        match database {
            Some(_) => "PostgreSQL".to_owned(),
            None => format!("SQLite, WAL ceiling {:.0} MiB", mib(args.wal_max_bytes)),
        },
        if console.is_some() { "attached" } else { "none" },
    );
    println!(
        "{:>5} | {:>9} | {:>9} | {:>8} | {:>4} | {}",
        "t s",
        if database.is_some() { "dead tup" } else { "WAL MiB" },
        "db MiB",
        "RSS MiB",
        "fds",
        KINDS
            .iter()
            .map(|k| format!("{k:>6}/s {k:>4} p99"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    // the synchronous PostgreSQL client runs a runtime of its own: off this one's worker (block_in_place)
    let mut pg = match database {
        Some(url) => Some(tokio::task::block_in_place(|| {
            postgres::Client::connect(url, postgres::NoTls)
        })?),
        None => None,
    };
    let mut samples: Vec<(Duration, Footprint)> = Vec::new();
    let mut peak_wal = 0u64;
    let mut errors = 0u64;
    let mut first_errors = Vec::new();
    let mut totals = [0u64; 4];
    let interval = Duration::from_secs(args.sample_secs);
    let mut next = started + interval;
    // the WAL is watched more often than a row is printed, so that a peak between rows is seen
    while Instant::now() < deadline + Duration::from_millis(500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak_wal = peak_wal.max(file_len(&dir.join("ase.sqlite3-wal")));
        if Instant::now() < next {
            continue;
        }
        next += interval;
        let f = tokio::task::block_in_place(|| footprint(pid, &dir, pg.as_mut()));
        let mut cells = Vec::new();
        for (k, t) in tallies.iter().enumerate() {
            let Ok(mut t) = t.lock() else { continue };
            let mut l = std::mem::take(&mut t.latencies_us);
            l.sort_unstable();
            cells.push(format!(
                "{:>8.0} {:>5.1} ms",
                l.len() as f64 / interval.as_secs_f64(),
                f64::from(percentile(&l, 99.0)) / 1000.0
            ));
            totals[k] = t.ok_total;
            errors += std::mem::take(&mut t.errors);
            let room = 5usize.saturating_sub(first_errors.len());
            first_errors.extend(t.first_errors.drain(..).take(room));
        }
        let at = started.elapsed();
        println!(
            "{:>5} | {:>9} | {:>9.1} | {:>8.1} | {:>4} | {}",
            at.as_secs(),
            if database.is_some() {
                f.dead.to_string()
            } else {
                format!("{:.1}", mib(f.wal))
            },
            mib(f.db),
            mib(f.rss),
            f.fds,
            cells.join(" | ")
        );
        samples.push((at, f));
    }
    for h in handles {
        h.await?;
    }
    peer.remove(&plain).await;
    let settled = admin.wait_settled(Duration::from_secs(120)).await;
    let overview = admin.get("/overview").await.unwrap_or(Value::Null);
    if let Some(c) = console {
        c.detach();
    }
    let status = server.stop()?;
    tokio::task::block_in_place(move || drop(pg));
    let audit = tokio::task::block_in_place(|| audit(&dir, database))?;

    // the verdict
    let after_warmup: Vec<&(Duration, Footprint)> = samples.iter().filter(|(t, _)| *t >= warmup).collect();
    let base_fp = after_warmup.first().map(|(_, f)| *f).unwrap_or_default();
    let last_fp = samples.last().map(|(_, f)| *f).unwrap_or_default();
    let max_rss = after_warmup.iter().map(|(_, f)| f.rss).max().unwrap_or(0);
    let rss_growth = max_rss.saturating_sub(base_fp.rss);
    let mut failures = Vec::new();
    if database.is_none() && peak_wal > args.wal_max_bytes {
        failures.push(format!(
            "the WAL reached {:.1} MiB, past its ceiling of {:.1} MiB",
            mib(peak_wal),
            mib(args.wal_max_bytes)
        ));
    }
    if rss_growth > args.rss_slack_mib << 20 {
        failures.push(format!(
            "RSS grew by {:.1} MiB after the warm-up (allowed {} MiB)",
            mib(rss_growth),
            args.rss_slack_mib
        ));
    }
    if last_fp.fds > base_fp.fds + 4 {
        failures.push(format!("file descriptors grew from {} to {}", base_fp.fds, last_fp.fds));
    }
    if errors > 0 {
        failures.push(format!("{errors} requests failed, first: {first_errors:?}"));
    }
    if !settled {
        failures.push("payments were still sending two minutes after the load stopped".into());
    }
    if !status.success() {
        failures.push(format!("the server exited with {status} on SIGTERM"));
    }
    failures.extend(audit.into_iter().map(|a| format!("audit: {a}")));
    let secs = (warmup + measured).as_secs_f64();
    println!(
        "totals: {} creates, {} list pages, {} STREAM packets, {} local payments ({:.0}/{:.0}/{:.0}/{:.0} per s over the run)",
        totals[0],
        totals[1],
        totals[2],
        totals[3],
        totals[0] as f64 / secs,
        totals[1] as f64 / secs,
        totals[2] as f64 / secs,
        totals[3] as f64 / secs
    );
    println!("store at the end: {}", overview["wal"]);
    println!(
        "SUMMARY | {} | {} min | {} | db {:.0} MiB | RSS {:.1} → {:.1} MiB (max {:.1}) | fds {} → {} | {errors} errors | audit {} | {}",
        if database.is_some() { "PostgreSQL" } else { "SQLite" },
        args.minutes,
        match database {
            Some(_) => "no WAL ceiling".to_owned(),
            None => format!(
                "peak WAL {:.1} MiB (ceiling {:.0})",
                mib(peak_wal),
                mib(args.wal_max_bytes)
            ),
        },
        mib(last_fp.db),
        mib(base_fp.rss),
        mib(last_fp.rss),
        mib(max_rss),
        base_fp.fds,
        last_fp.fds,
        if failures.iter().any(|f| f.starts_with("audit")) {
            "FAILED"
        } else {
            "clean"
        },
        if failures.is_empty() { "PASS" } else { "FAIL" },
    );
    for f in &failures {
        println!("  {f}");
    }
    Ok(failures.is_empty())
}

/// An outgoing-payment grant for `wallet` without limits, approved by the server's `auto_approve` when the
/// client follows the interaction redirect; the access token.
async fn outgoing_token(client: &SignedClient, base: &str, wallet: &str) -> Result<String, BoxError> {
    let grant = request_grant(
        client,
        base,
        json!([{"type": "outgoing-payment", "actions": ["create", "read"], "identifier": wallet}]),
        Some(json!({"start": ["redirect"], "finish": {"method": "redirect", "uri": "http://127.0.0.1:9/cb", "nonce": "soak"}})),
    )
    .await?;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .build()?;
    let redirect = grant["interact"]["redirect"].as_str().ok_or("no interact.redirect")?;
    let res = http.get(redirect).send().await?;
    let location = res
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .ok_or("the interaction did not redirect (is auto_approve on?)")?;
    let interact_ref = url::Url::parse(location)?
        .query_pairs()
        .find(|(k, _)| k == "interact_ref")
        .map(|(_, v)| v.into_owned())
        .ok_or("no interact_ref in the finish redirect")?;
    let r = client
        .send(
            Method::POST,
            grant["continue"]["uri"].as_str().ok_or("no continue.uri")?,
            grant["continue"]["access_token"]["value"].as_str(),
            Some(&json!({"interact_ref": interact_ref})),
        )
        .await?;
    r.body["access_token"]["value"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("continuing the grant answered {}: {}", r.status, r.body).into())
}

/// The admin API of the server holding the data dir.
struct Admin {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Admin {
    fn new(dir: &Path) -> Result<Self, BoxError> {
        let record = opdesk::owner::read_record(dir).ok_or("no server.json in the data dir")?;
        let token = opdesk::app::read_admin_token(&dir.join("admin.token")).ok_or("no admin.token in the data dir")?;
        Ok(Self {
            http: reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build()?,
            base: format!("{}/admin", record.admin.trim_end_matches('/')),
            token,
        })
    }

    async fn get(&self, path: &str) -> Result<Value, BoxError> {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await?;
        Ok(r.error_for_status()?.json().await?)
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, BoxError> {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await?;
        let status = r.status();
        let text = r.text().await?;
        if !status.is_success() {
            return Err(format!("POST {path} answered {status}: {text}").into());
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Waits (at most `within`) until no outgoing payment is sending.
    async fn wait_settled(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(o) = self.get("/overview").await
                && o["activity"]["sending"].as_u64() == Some(0)
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        false
    }
}

/// A real console attached to the server, in a detached tmux session.
struct Console {
    session: String,
}

impl Console {
    fn attach(bin: &Path, dir: &Path) -> Option<Self> {
        let session = format!("opdesk-soak-{}", std::process::id());
        let cmd = format!("{} --data-dir {}", bin.display(), dir.display());
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-x", "120", "-y", "40", "-s", &session, &cmd])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("soak: no console (tmux could not start one)");
        }
        ok.then_some(Self { session })
    }

    /// Prints the console's Overview as it is now, then quits it.
    fn detach(self) {
        if let Ok(out) = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
        {
            println!("the attached console at the end:");
            println!("{}", String::from_utf8_lossy(&out.stdout));
        }
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

fn main() {
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    };
    match rt.block_on(run(args)) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    }
}
