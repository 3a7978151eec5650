#![allow(clippy::print_stdout, clippy::print_stderr)]
//! Load generator: signed Open Payments requests against a running opdesk — throughput, latency and the
//! server's CPU time per request.
//!
//! ```sh
//! cargo build --release --bin opdesk --example loadgen
//! target/release/opdesk serve --data-dir "$DIR" --listen 127.0.0.1:4310 --log-level warn &
//! target/release/examples/loadgen --url http://127.0.0.1:4310 --data-dir "$DIR" --connections 32
//! target/release/examples/loadgen --url http://127.0.0.1:4310 --data-dir "$DIR" --workload list
//! ```
//!
//! Signs as `demo-client` (key from `demo-client.pem` in the data dir), takes one non-interactive
//! incoming-payment grant for `bob`, then runs `--connections` workers, each with its own connection, that
//! send back to back until the deadline: `create` makes incoming payments (`POST /incoming-payments`), `list`
//! reads the first page of bob's (`GET /incoming-payments?wallet-address=…&first=20`, after filling a page),
//! `ilp` sends one-unit STREAM money packets into `POST /ilp` — each worker a STREAM connection of its own to
//! an incoming payment of its own, as a peer added for the run (through the admin API, token from the data
//! dir; removed at the end), one packet in flight per connection.
//! Only requests that complete after the warm-up and before the deadline are measured; latency is the HTTP
//! round trip (signing excluded), in microseconds. The server's CPU time (user + system, from
//! `/proc/PID/stat`) over the measured window, divided by the requests completed in it, is the CPU per
//! request; the pid comes from `--server-pid` or the data dir's `server.json`. The generator's own CPU per
//! request is measured the same way: on one machine the two share the cores, so the rate any server could
//! reach there is at most cores ÷ (server + generator CPU per request). Loopback only: the URL must point at
//! 127.0.0.1, ::1 or localhost.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::Parser;
use http::Method;
use opdesk::client::SignedClient;
use serde_json::json;

mod support;

use support::{
    BoxError, RunPeer, cpu_time, demo_key, grant_token, ilp_connection, machine_busy, percentile, require_loopback,
    ticks_per_sec,
};

/// Upper bound on requests per worker, so every loop is bounded in count as well as in time.
const MAX_REQUESTS_PER_WORKER: u64 = 50_000_000;
/// How long one request may take before it counts as a transport error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Error bodies each worker keeps for the report.
const KEEP_ERROR_BODIES: usize = 3;

#[derive(Parser, Debug)]
#[command(about = "Signed POST /incoming-payments load generator for opdesk")]
struct Args {
    /// Base URL of the running opdesk (its public URL).
    #[arg(long, default_value = "http://127.0.0.1:4000")]
    url: String,
    /// The server's data dir (to read `demo-client.pem`).
    #[arg(long)]
    data_dir: std::path::PathBuf,
    /// Concurrent connections (one worker task each).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Measured window, in seconds.
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// Warm-up before the measured window, in seconds.
    #[arg(long, default_value_t = 2)]
    warmup_secs: u64,
    /// What each request does: `create` (signed POST /incoming-payments), `list` (a signed list page) or
    /// `ilp` (a STREAM money packet into /ilp).
    #[arg(long, value_enum, default_value_t = Workload::Create)]
    workload: Workload,
    /// The server's pid, for its CPU time (default: the pid in the data dir's `server.json`); several nodes
    /// behind one URL: their pids, comma-separated, CPU summed.
    #[arg(long, value_delimiter = ',')]
    server_pid: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Workload {
    Create,
    List,
    Ilp,
}

impl Workload {
    fn describe(self) -> &'static str {
        match self {
            Self::Create => "signed POST /incoming-payments",
            Self::List => "signed GET /incoming-payments?first=20",
            Self::Ilp => "STREAM money packets into POST /ilp",
        }
    }

    fn expected_status(self) -> u16 {
        match self {
            Self::Create => 201,
            Self::List | Self::Ilp => 200,
        }
    }
}

/// What one worker saw.
#[derive(Default)]
struct WorkerStats {
    /// Latencies (µs) of the successes completed inside the measured window.
    latencies_us: Vec<u32>,
    /// All requests sent, warm-up included.
    sent_total: u64,
    /// Non-201 statuses (0 = transport error or timeout), warm-up included.
    errors_total: BTreeMap<u16, u64>,
    /// Errors completed inside the measured window.
    errors_measured: u64,
    /// A few error bodies.
    error_bodies: Vec<String>,
}

fn ms(us: u32) -> String {
    format!("{:.2} ms", f64::from(us) / 1000.0)
}

/// One request of the workload: method, URL and body.
fn request(workload: Workload, base: &str, id: usize, n: u64) -> Result<(Method, String, Vec<u8>), serde_json::Error> {
    let wallet = format!("{base}/bob");
    Ok(match workload {
        Workload::Create => {
            let body = json!({
                "walletAddress": wallet,
                "incomingAmount": {"value": "100", "assetCode": "USD", "assetScale": 2},
                "metadata": {"w": id, "n": n},
            });
            (
                Method::POST,
                format!("{base}/incoming-payments"),
                serde_json::to_vec(&body)?,
            )
        }
        Workload::List | Workload::Ilp => {
            let url = format!("{base}/incoming-payments?wallet-address={wallet}&first=20");
            (Method::GET, url, Vec::new())
        }
    })
}

#[allow(clippy::too_many_arguments)]
async fn worker(
    id: usize,
    workload: Workload,
    client: SignedClient,
    base: String,
    token: String,
    measure_from: Instant,
    deadline: Instant,
) -> WorkerStats {
    let mut stats = WorkerStats::default();
    let mut n: u64 = 0;
    while n < MAX_REQUESTS_PER_WORKER && Instant::now() < deadline {
        n += 1;
        let (method, url, bytes) = match request(workload, &base, id, n) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("worker {id}: serialising the body failed: {e}");
                break;
            }
        };
        let created = time::OffsetDateTime::now_utc().unix_timestamp();
        let headers = match client.sign(&method, &url, Some(&token), &bytes, created) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("worker {id}: signing failed: {e}");
                break;
            }
        };
        stats.sent_total += 1;
        let start = Instant::now();
        let res = tokio::time::timeout(REQUEST_TIMEOUT, client.send_unparsed(method, &url, headers, bytes)).await;
        let done = Instant::now();
        let in_window = done >= measure_from && done <= deadline;
        let failure = match res {
            Ok(Ok(r)) if r.status == workload.expected_status() => {
                if in_window {
                    let us = done.duration_since(start).as_micros();
                    stats.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                }
                None
            }
            Ok(Ok(r)) => Some((r.status, String::from_utf8_lossy(&r.body).into_owned())),
            Ok(Err(e)) => Some((0, format!("transport: {e}"))),
            Err(_) => Some((0, format!("timeout after {REQUEST_TIMEOUT:?}"))),
        };
        if let Some((status, text)) = failure {
            *stats.errors_total.entry(status).or_default() += 1;
            if in_window {
                stats.errors_measured += 1;
            }
            if stats.error_bodies.len() < KEEP_ERROR_BODIES {
                stats.error_bodies.push(format!("worker {id} req {n}: {status} {text}"));
            }
            if status == 0 {
                // Do not spin on a dead server.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    stats
}

/// One STREAM connection sending one-unit money packets back to back until the deadline.
async fn ilp_worker(
    mut conn: opdesk::ilp::sender::Connection,
    measure_from: Instant,
    deadline: Instant,
) -> WorkerStats {
    use opdesk::ilp::sender::Verdict;
    let mut stats = WorkerStats::default();
    let mut n: u64 = 0;
    while n < MAX_REQUESTS_PER_WORKER && Instant::now() < deadline {
        n += 1;
        stats.sent_total += 1;
        let start = Instant::now();
        let res = tokio::time::timeout(REQUEST_TIMEOUT, conn.send_money(1, 1)).await;
        let done = Instant::now();
        let in_window = done >= measure_from && done <= deadline;
        let failure = match res {
            Ok(Ok(Verdict::Fulfilled { .. })) => {
                if in_window {
                    let us = done.duration_since(start).as_micros();
                    stats.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                }
                None
            }
            Ok(Ok(v)) => Some(format!("{v:?}")),
            Ok(Err(e)) => Some(format!("{e}")),
            Err(_) => Some(format!("timeout after {REQUEST_TIMEOUT:?}")),
        };
        if let Some(text) = failure {
            *stats.errors_total.entry(0).or_default() += 1;
            if in_window {
                stats.errors_measured += 1;
            }
            if stats.error_bodies.len() < KEEP_ERROR_BODIES {
                stats.error_bodies.push(format!("packet {n}: {text}"));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    conn.close().await;
    stats
}

async fn run(args: Args) -> Result<(), BoxError> {
    opdesk::egress::install_default_crypto_provider();
    let base = args.url.trim_end_matches('/').to_owned();
    require_loopback(&base)?;
    if args.connections == 0 || args.connections > 4096 {
        return Err("--connections must be 1..=4096".into());
    }
    if args.duration_secs == 0 || args.duration_secs > 3600 || args.warmup_secs > 3600 {
        return Err("--duration-secs must be 1..=3600 and --warmup-secs at most 3600".into());
    }

    let (key, kid) = demo_key(&base, &args.data_dir).await?;
    let grant_client = SignedClient::new(key.clone(), &kid);
    let token = grant_token(
        &grant_client,
        &base,
        json!([{"type": "incoming-payment", "actions": ["create", "read", "list"], "identifier": format!("{base}/bob")}]),
    )
    .await?;
    let plain = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;

    if args.workload == Workload::List {
        // a full first page to read
        for n in 0..20 {
            let (method, url, bytes) = request(Workload::Create, &base, 0, n)?;
            let created = time::OffsetDateTime::now_utc().unix_timestamp();
            let headers = grant_client.sign(&method, &url, Some(&token), &bytes, created)?;
            let r = grant_client.send_raw(method, &url, headers, bytes).await?;
            if r.status != 201 {
                return Err(format!("filling the page: {} {}", r.status, String::from_utf8_lossy(&r.raw)).into());
            }
        }
    }
    let ticks = ticks_per_sec();
    let mut server_pids = args.server_pid.clone();
    if server_pids.is_empty() {
        server_pids.extend(opdesk::owner::read_record(&args.data_dir).map(|r| r.pid));
    }
    server_pids.retain(|pid| cpu_time(*pid, 100.0).is_some());
    let cpu_of =
        move |pids: &[u32]| -> Option<Duration> { pids.iter().map(|p| cpu_time(*p, ticks)).sum::<Option<Duration>>() };

    println!(
        "loadgen: {} connections, {} s warm-up + {} s measured, {} as demo-client (kid {kid}), server pid {}",
        args.connections,
        args.warmup_secs,
        args.duration_secs,
        args.workload.describe(),
        match &server_pids[..] {
            [] => "unknown (no CPU figures)".to_owned(),
            pids => pids.iter().map(u32::to_string).collect::<Vec<_>>().join("+"),
        }
    );

    // STREAM connections are set up before the clock starts
    let peer = match args.workload {
        Workload::Ilp => Some(RunPeer::add(&plain, &args.data_dir).await?),
        _ => None,
    };
    let mut connections = Vec::new();
    if let Some(peer) = &peer {
        for _ in 0..args.connections {
            connections.push(ilp_connection(&grant_client, &base, &token, peer, REQUEST_TIMEOUT).await?);
        }
    }

    let t0 = Instant::now();
    let measure_from = t0 + Duration::from_secs(args.warmup_secs);
    let deadline = measure_from + Duration::from_secs(args.duration_secs);
    // the server's and this generator's CPU time at the start and the end of the measured window
    let me = std::process::id();
    let cpu = tokio::spawn(async move {
        let server = || (!server_pids.is_empty()).then(|| cpu_of(&server_pids)).flatten();
        tokio::time::sleep_until(measure_from.into()).await;
        let start = (server(), cpu_time(me, ticks), machine_busy(ticks));
        tokio::time::sleep_until(deadline.into()).await;
        let used = |from: Option<Duration>, to: Option<Duration>| Some(to?.saturating_sub(from?));
        (
            used(start.0, server()),
            used(start.1, cpu_time(me, ticks)),
            used(start.2, machine_busy(ticks)),
        )
    });
    let mut handles = Vec::with_capacity(args.connections);
    for conn in connections {
        handles.push(tokio::spawn(ilp_worker(conn, measure_from, deadline)));
    }
    for w in (0..args.connections).filter(|_| peer.is_none()) {
        // One SignedClient per worker: its own reqwest pool, so exactly one keep-alive connection each.
        let client = SignedClient::new(key.clone(), &kid);
        handles.push(tokio::spawn(worker(
            w,
            args.workload,
            client,
            base.clone(),
            token.clone(),
            measure_from,
            deadline,
        )));
    }

    let mut latencies = Vec::new();
    let mut sent_total = 0u64;
    let mut errors_total: BTreeMap<u16, u64> = BTreeMap::new();
    let mut errors_measured = 0u64;
    let mut bodies = Vec::new();
    for h in handles {
        let s = h.await?;
        latencies.extend(s.latencies_us);
        sent_total += s.sent_total;
        for (status, count) in s.errors_total {
            *errors_total.entry(status).or_default() += count;
        }
        errors_measured += s.errors_measured;
        bodies.extend(s.error_bodies);
    }
    latencies.sort_unstable();
    let (server_cpu, own_cpu, machine_cpu) = cpu.await?;
    if let Some(peer) = &peer {
        peer.remove(&plain).await;
    }

    let ok = latencies.len() as u64;
    let window = args.duration_secs as f64;
    let rps = ok as f64 / window;
    let p50 = percentile(&latencies, 50.0);
    let p90 = percentile(&latencies, 90.0);
    let p99 = percentile(&latencies, 99.0);
    let max = latencies.last().copied().unwrap_or(0);
    let mean = if latencies.is_empty() {
        0.0
    } else {
        latencies.iter().map(|&l| f64::from(l)).sum::<f64>() / latencies.len() as f64 / 1000.0
    };
    let errors_all: u64 = errors_total.values().sum();
    let by_status = if errors_total.is_empty() {
        "none".to_owned()
    } else {
        errors_total
            .iter()
            .map(|(s, c)| {
                if *s == 0 {
                    format!("transport={c}")
                } else {
                    format!("{s}={c}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };

    println!("requests sent (incl. warm-up): {sent_total}");
    println!(
        "measured window: {} s, successes: {ok}, errors: {errors_measured}",
        args.duration_secs
    );
    let per_request = |cpu: Option<Duration>| match cpu {
        Some(cpu) if ok > 0 => format!("{:.0} µs", cpu.as_secs_f64() * 1e6 / ok as f64),
        _ => "n/a".to_owned(),
    };
    let cpu_per_request = per_request(server_cpu);
    let own_per_request = per_request(own_cpu);
    let machine_per_request = per_request(machine_cpu);
    let cpu_share = server_cpu.map_or_else(
        || "n/a".to_owned(),
        |cpu| format!("{:.2} cores", cpu.as_secs_f64() / window),
    );
    println!("throughput: {rps:.0} requests/s");
    println!("server CPU: {cpu_per_request} per request ({cpu_share} busy)");
    println!("load generator CPU: {own_per_request} per request (it shares the machine with the server)");
    println!(
        "whole machine CPU: {machine_per_request} per request (server, generator and anything else, e.g. PostgreSQL)"
    );
    println!(
        "latency: mean {mean:.2} ms, p50 {}, p90 {}, p99 {}, max {}",
        ms(p50),
        ms(p90),
        ms(p99),
        ms(max)
    );
    println!("errors by status (incl. warm-up): {by_status}");
    for b in bodies.iter().take(5) {
        println!("  error: {}", b.chars().take(300).collect::<String>());
    }
    println!(
        "SUMMARY | {} | {} conns | {} s (+{} s warm-up) | {rps:.0} req/s | CPU {cpu_per_request}/req | generator CPU {own_per_request}/req | machine CPU {machine_per_request}/req | p50 {} | p90 {} | p99 {} | max {} | {ok} ok | {errors_all} errors ({by_status}) |",
        args.workload.describe(),
        args.connections,
        args.duration_secs,
        args.warmup_secs,
        ms(p50),
        ms(p90),
        ms(p99),
        ms(max)
    );
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run(args))
}
