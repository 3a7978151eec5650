#![allow(clippy::print_stdout, clippy::print_stderr)]
//! Load generator: signed `POST /incoming-payments` throughput and latency against a running opdesk.
//!
//! ```sh
//! cargo build --release --bin opdesk --example loadgen
//! target/release/opdesk serve --data-dir "$DIR" --listen 127.0.0.1:4310 --log-level warn &
//! target/release/examples/loadgen --url http://127.0.0.1:4310 --data-dir "$DIR" --connections 32
//! ```
//!
//! Signs as `demo-client` (key from `demo-client.pem` in the data dir), takes one non-interactive
//! incoming-payment grant for `bob`, then runs `--connections` workers, each with its own connection, that
//! create incoming payments back to back until the deadline. Only requests that complete after the warm-up
//! and before the deadline are measured; latency is the HTTP round trip (signing excluded), in microseconds.
//! Loopback only: the URL must point at 127.0.0.1, ::1 or localhost.

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, Instant};

use clap::Parser;
use http::Method;
use opdesk::client::SignedClient;
use serde_json::{Value, json};

type BoxError = Box<dyn Error + Send + Sync>;

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
}

/// What one worker saw.
#[derive(Default)]
struct WorkerStats {
    /// Latencies (µs) of the 201s completed inside the measured window.
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

fn require_loopback(url: &str) -> Result<(), BoxError> {
    let parsed = url::Url::parse(url)?;
    let ok = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{url} is not a loopback URL; loadgen only talks to loopback").into())
    }
}

/// Nearest-rank percentile of sorted data.
fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(us: u32) -> String {
    format!("{:.2} ms", f64::from(us) / 1000.0)
}

async fn worker(
    id: usize,
    client: SignedClient,
    base: String,
    token: String,
    measure_from: Instant,
    deadline: Instant,
) -> WorkerStats {
    let url = format!("{base}/incoming-payments");
    let wallet = format!("{base}/bob");
    let mut stats = WorkerStats::default();
    let mut n: u64 = 0;
    while n < MAX_REQUESTS_PER_WORKER && Instant::now() < deadline {
        n += 1;
        let body = json!({
            "walletAddress": wallet,
            "incomingAmount": {"value": "100", "assetCode": "USD", "assetScale": 2},
            "metadata": {"w": id, "n": n},
        });
        let bytes = match serde_json::to_vec(&body) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("worker {id}: serialising the body failed: {e}");
                break;
            }
        };
        let created = time::OffsetDateTime::now_utc().unix_timestamp();
        let headers = match client.sign(&Method::POST, &url, Some(&token), &bytes, created) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("worker {id}: signing failed: {e}");
                break;
            }
        };
        stats.sent_total += 1;
        let start = Instant::now();
        let res = tokio::time::timeout(REQUEST_TIMEOUT, client.send_raw(Method::POST, &url, headers, bytes)).await;
        let done = Instant::now();
        let in_window = done >= measure_from && done <= deadline;
        let failure = match res {
            Ok(Ok(r)) if r.status == 201 => {
                if in_window {
                    let us = done.duration_since(start).as_micros();
                    stats.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                }
                None
            }
            Ok(Ok(r)) => Some((r.status, String::from_utf8_lossy(&r.raw).into_owned())),
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

    let pem_path = args.data_dir.join("demo-client.pem");
    let pem = std::fs::read_to_string(&pem_path).map_err(|e| format!("reading {}: {e}", pem_path.display()))?;
    let key = opdesk::httpsig::jwk::from_pkcs8_pem(&pem)?;

    let plain = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    let jwks: Value = plain
        .get(format!("{base}/demo-client/jwks.json"))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let kid = jwks["keys"][0]["kid"]
        .as_str()
        .ok_or("no kid in the demo-client JWKS")?
        .to_owned();

    let grant_client = SignedClient::new(key.clone(), &kid);
    let grant = json!({
        "access_token": {"access": [{
            "type": "incoming-payment",
            "actions": ["create", "read"],
            "identifier": format!("{base}/bob"),
        }]},
        "client": format!("{base}/demo-client"),
    });
    let r = grant_client
        .send(Method::POST, &format!("{base}/auth"), None, Some(&grant))
        .await?;
    if r.status != 200 {
        return Err(format!("grant request answered {}: {}", r.status, r.body).into());
    }
    let token = r.body["access_token"]["value"]
        .as_str()
        .ok_or_else(|| format!("no access_token.value in the grant: {}", r.body))?
        .to_owned();

    println!(
        "loadgen: {} connections, {} s warm-up + {} s measured, POST {base}/incoming-payments as demo-client (kid {kid})",
        args.connections, args.warmup_secs, args.duration_secs
    );

    let t0 = Instant::now();
    let measure_from = t0 + Duration::from_secs(args.warmup_secs);
    let deadline = measure_from + Duration::from_secs(args.duration_secs);
    let mut handles = Vec::with_capacity(args.connections);
    for w in 0..args.connections {
        // One SignedClient per worker: its own reqwest pool, so exactly one keep-alive connection each.
        let client = SignedClient::new(key.clone(), &kid);
        handles.push(tokio::spawn(worker(
            w,
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
        "measured window: {} s, 201s completed: {ok}, errors: {errors_measured}",
        args.duration_secs
    );
    println!("throughput: {rps:.0} creates/s");
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
        "SUMMARY | signed POST /incoming-payments | {} conns | {} s (+{} s warm-up) | {rps:.0} req/s | p50 {} | p90 {} | p99 {} | max {} | {ok} ok | {errors_all} errors ({by_status}) |",
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
