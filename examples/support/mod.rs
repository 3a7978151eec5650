//! What the load examples share: the loopback check, percentiles, a process's CPU time, a peer added for a
//! run, STREAM connections into incoming payments, non-interactive grants, and a desk's balances.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method, header};
use opdesk::client::SignedClient;
use serde_json::{Value, json};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Refuses any URL that is not on this machine.
pub fn require_loopback(url: &str) -> Result<(), BoxError> {
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
        Err(format!("{url} is not a loopback URL; the load examples only talk to loopback").into())
    }
}

/// Nearest-rank percentile of sorted data.
pub fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A process's CPU time so far (user + system), from `/proc/PID/stat`.
pub fn cpu_time(pid: u32, ticks_per_sec: f64) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // fields after the command name, which is in parentheses and may hold spaces
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name and state
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / ticks_per_sec))
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux when that cannot be asked).
pub fn ticks_per_sec() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(100.0)
}

/// A peer added for the run through the admin API: its name, the bearer token it presents at `/ilp`, and how
/// to remove it.
pub struct RunPeer {
    pub name: String,
    pub token: String,
    admin: String,
    admin_token: String,
}

impl RunPeer {
    pub async fn add(http: &reqwest::Client, data_dir: &std::path::Path) -> Result<Self, BoxError> {
        let record =
            opdesk::owner::read_record(data_dir).ok_or("no server.json in the data dir: is the server running?")?;
        let admin_token =
            opdesk::app::read_admin_token(&data_dir.join("admin.token")).ok_or("no admin.token in the data dir")?;
        let name = format!("loadgen-{}", std::process::id());
        let token = opdesk::ids::random_secret(24)?;
        let body = json!({"name": name, "assetCode": "USD", "assetScale": 2, "incomingTokens": [token]});
        let admin = record.admin.trim_end_matches('/').to_owned();
        let r = http
            .post(format!("{admin}/admin/peers"))
            .bearer_auth(&admin_token)
            .json(&body)
            .send()
            .await?;
        if !r.status().is_success() {
            return Err(format!("adding the peer answered {}: {}", r.status(), r.text().await?).into());
        }
        Ok(Self {
            name,
            token,
            admin,
            admin_token,
        })
    }

    pub async fn remove(&self, http: &reqwest::Client) {
        let r = http
            .delete(format!("{}/admin/peers/{}", self.admin, self.name))
            .bearer_auth(&self.admin_token)
            .send()
            .await;
        if !r.is_ok_and(|r| r.status().is_success()) {
            eprintln!(
                "could not remove the peer {} (remove it with `opdesk peers remove`)",
                self.name
            );
        }
    }
}

/// A STREAM connection to a new incoming payment of bob's (room for every packet a run can send).
pub async fn ilp_connection(
    client: &SignedClient,
    base: &str,
    token: &str,
    peer: &RunPeer,
    timeout: Duration,
) -> Result<opdesk::ilp::sender::Connection, BoxError> {
    use base64::Engine as _;
    use opdesk::ilp::{
        Address,
        sender::{Connection, HttpTransport},
    };
    let body = json!({
        "walletAddress": format!("{base}/bob"),
        "incomingAmount": {"value": "1000000000000", "assetCode": "USD", "assetScale": 2},
    });
    let r = client
        .send(
            Method::POST,
            &format!("{base}/incoming-payments"),
            Some(token),
            Some(&body),
        )
        .await?;
    if r.status != 201 {
        return Err(format!("creating an incoming payment answered {}: {}", r.status, r.body).into());
    }
    let method = &r.body["methods"][0];
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(
        method["sharedSecret"]
            .as_str()
            .ok_or("no sharedSecret")?
            .trim_end_matches('='),
    )?;
    let address = Address::new(method["ilpAddress"].as_str().ok_or("no ilpAddress")?)?;
    let transport = std::sync::Arc::new(HttpTransport::new(&format!("{base}/ilp"), &peer.token, timeout));
    let mut conn = Connection::new(transport, address, &secret, None, Duration::from_secs(30));
    conn.connect().await?;
    Ok(conn)
}

/// The demo client's signing key (from `demo-client.pem` in the data dir) and its key id (from its JWKS).
pub async fn demo_key(base: &str, data_dir: &std::path::Path) -> Result<(ed25519_dalek::SigningKey, String), BoxError> {
    let pem_path = data_dir.join("demo-client.pem");
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
    Ok((key, kid))
}

/// A grant requested at `{base}/auth` as `{base}/demo-client` for `access` (and `interact`, if any): the
/// response.
pub async fn request_grant(
    client: &SignedClient,
    base: &str,
    access: Value,
    interact: Option<Value>,
) -> Result<Value, BoxError> {
    let mut grant = json!({"access_token": {"access": access}, "client": format!("{base}/demo-client")});
    if let Some(i) = interact {
        grant["interact"] = i;
    }
    let r = client
        .send(Method::POST, &format!("{base}/auth"), None, Some(&grant))
        .await?;
    if r.status != 200 {
        return Err(format!("grant request answered {}: {}", r.status, r.body).into());
    }
    Ok(r.body)
}

/// A non-interactive grant's access token.
pub async fn grant_token(client: &SignedClient, base: &str, access: Value) -> Result<String, BoxError> {
    let body = request_grant(client, base, access, None).await?;
    Ok(body["access_token"]["value"]
        .as_str()
        .ok_or_else(|| format!("no access_token.value in the grant: {body}"))?
        .to_owned())
}

/// The whole machine's busy CPU time so far (every core: user, nice, system, irq, softirq, steal; from
/// `/proc/stat`): over a window, what the server, the generator and anything else (PostgreSQL) used.
pub fn machine_busy(ticks_per_sec: f64) -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let f: Vec<u64> = line.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)? + f.get(7).copied().unwrap_or(0);
    Some(Duration::from_secs_f64(busy as f64 / ticks_per_sec))
}

/// Microseconds as milliseconds with one decimal.
pub fn ms(us: u32) -> String {
    format!("{:.1}", f64::from(us) / 1000.0)
}

/// `p50 / p90 / p99 / max` of `v` (µs), in ms.
pub fn spread(v: &mut [u32]) -> [String; 4] {
    v.sort_unstable();
    let max = v.last().copied().unwrap_or(0);
    [percentile(v, 50.0), percentile(v, 90.0), percentile(v, 99.0), max].map(ms)
}

/// Each wallet's (posted balance, pending debits) on one desk.
pub type Balances = BTreeMap<String, (i64, i64)>;

/// One desk's admin API (its URL from `server.json`, its token from the data dir), for checks around a run.
pub struct DeskAdmin {
    url: String,
    token: String,
}

impl DeskAdmin {
    pub fn of(data_dir: &std::path::Path) -> Option<Self> {
        let record = opdesk::owner::read_record(data_dir)?;
        let token = opdesk::app::read_admin_token(&data_dir.join("admin.token"))?;
        require_loopback(&record.admin).ok()?;
        Some(Self {
            url: record.admin.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// Each wallet's (posted balance, pending debits).
    pub async fn balances(&self, http: &opdesk::egress::Egress) -> Result<Balances, BoxError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {}", self.token))?,
        );
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let r = http
            .send(
                Method::GET,
                &format!("{}/admin/balances", self.url),
                headers,
                Vec::new(),
            )
            .await?;
        let v: Value = serde_json::from_slice(&r.body)?;
        let mut out = BTreeMap::new();
        for b in v.as_array().ok_or("the balances are not a list")? {
            if let Some(w) = b["wallet"].as_str() {
                let e: &mut (i64, i64) = out.entry(w.to_owned()).or_default();
                e.0 += b["balance"].as_i64().unwrap_or(0);
                e.1 += b["pendingDebits"].as_i64().unwrap_or(0);
            }
        }
        Ok(out)
    }
}

/// One payment for [`check_ledgers`]: the paying wallet and what it sent, the paid wallet and what it received.
pub struct Paid {
    pub wallet_name: String,
    pub shop_name: String,
    pub sent: i64,
    pub received: i64,
}

/// How long the ledgers may take to release what a payment had reserved and did not send.
const SETTLE_WAIT: Duration = Duration::from_secs(15);

/// The ledger check after payments from wallets of desk `desks.0` to wallets of `desks.1`, balances taken
/// `before`: each payer went down by exactly what it sent, nothing left reserved; each payee up by exactly what
/// it received. The problems found.
pub async fn check_ledgers(
    http: &opdesk::egress::Egress,
    desks: &(DeskAdmin, DeskAdmin),
    before: &(Balances, Balances),
    paid: &[Paid],
) -> Result<Vec<String>, BoxError> {
    let until = std::time::Instant::now() + SETTLE_WAIT;
    let mut after;
    loop {
        after = desks.0.balances(http).await?;
        let reserved = paid.iter().any(|p| after.get(&p.wallet_name).is_some_and(|b| b.1 != 0));
        if !reserved || std::time::Instant::now() > until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let shops_after = desks.1.balances(http).await?;
    let mut problems = Vec::new();
    for p in paid {
        let (b0, a) = (before.0.get(&p.wallet_name), after.get(&p.wallet_name));
        match (b0, a) {
            (Some(b0), Some(a)) if b0.0 - a.0 == p.sent && a.1 == 0 => {}
            _ => problems.push(format!(
                "{}: balance {b0:?} → {a:?} (balance, reserved), sent {}",
                p.wallet_name, p.sent
            )),
        }
        let (s0, s) = (before.1.get(&p.shop_name), shops_after.get(&p.shop_name));
        match (s0, s) {
            (Some(s0), Some(s)) if s.0 - s0.0 == p.received => {}
            _ => problems.push(format!(
                "{}: balance {s0:?} → {s:?}, received {}",
                p.shop_name, p.received
            )),
        }
    }
    Ok(problems)
}
