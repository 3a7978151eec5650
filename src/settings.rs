//! Layered settings: embedded defaults (`assets/config.toml`) < `config.toml` in the config dir (or
//! `--config FILE`) < `OPDESK_*` environment < command-line flags; and the resolved filesystem paths.
//!
//! Owns the whole configuration surface; unknown keys are errors that name the key.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;
use toml::{Table, Value};

mod consent;
mod ilp;

pub use consent::{ConsentSettings, Decider};
pub use ilp::{IlpSettings, PeerSettings, decode_secret};

const DEFAULTS: &str = include_str!("../assets/config.toml");

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("no home directory: pass --data-dir and --config")]
    NoHome,
}

/// Paths the process uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The config file consulted (it may not exist).
    pub config_file: PathBuf,
    pub data_dir: PathBuf,
    pub log_file: PathBuf,
}

impl Paths {
    pub fn database(&self) -> PathBuf {
        self.data_dir.join("ase.sqlite3")
    }
    pub fn admin_token(&self) -> PathBuf {
        self.data_dir.join("admin.token")
    }
    pub fn demo_client_key(&self) -> PathBuf {
        self.data_dir.join("demo-client.pem")
    }
    pub fn webhook_secret(&self) -> PathBuf {
        self.data_dir.join("webhook.secret")
    }
    pub fn ilp_secret(&self) -> PathBuf {
        self.data_dir.join("ilp.secret")
    }
    /// The ASE's own Open Payments client key (for reading incoming payments on other ASEs).
    pub fn ase_client_key(&self) -> PathBuf {
        self.data_dir.join("ase-client.pem")
    }
    /// Every file of the data dir only the owner may read: the database with its journal files (peer
    /// tokens, STREAM state) and the secrets.
    pub fn private_files(&self) -> Vec<PathBuf> {
        let db = self.database().into_os_string();
        let mut files: Vec<PathBuf> = ["", "-wal", "-shm", "-journal"]
            .iter()
            .map(|suffix| {
                let mut p = db.clone();
                p.push(suffix);
                PathBuf::from(p)
            })
            .collect();
        files.extend([
            self.admin_token(),
            self.webhook_secret(),
            self.ilp_secret(),
            self.ase_client_key(),
            self.demo_client_key(),
        ]);
        files
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    listen: String,
    public_url: String,
    data_dir: String,
    log_level: String,
    log_format: String,
    demo: DemoSettings,
    store: StoreSettings,
    server: ServerSettings,
    metrics: RawMetrics,
    gnap: GnapSettings,
    consent: ConsentSettings,
    client_keys: ClientKeySettings,
    egress: EgressSettings,
    resource_server: ResourceServerSettings,
    engine: EngineSettings,
    webhooks: WebhookSettings,
    ilp: IlpSettings,
    tls: RawTls,
    keys: std::collections::BTreeMap<String, String>,
    theme: std::collections::BTreeMap<String, String>,
    rates: std::collections::BTreeMap<String, String>,
    exchange_rates: ExchangeRateSettings,
    fees: std::collections::BTreeMap<String, crate::rates::FeeRule>,
}

/// `[tls]` as written: paths relative to the data dir, or absolute.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert: String,
    key: String,
    admin_listen: String,
}

/// `[tls]`, resolved: the public listener speaks HTTPS with this certificate chain and key (PEM files, re-read
/// on SIGHUP); the admin API is then served in plain HTTP on the loopback address `admin_listen`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub admin_listen: SocketAddr,
}

/// `[exchange_rates]`: a rates service in the reference ASE's shape (`GET {url}?base=USD` →
/// `{"base":"USD","rates":{"EUR":0.9}}`) laid over `[rates]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRateSettings {
    /// Empty: `[rates]` alone.
    pub url: String,
    /// How long the rates for one base currency are reused.
    pub cache_secs: u64,
    pub timeout_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    pub url: String,
    pub secret: String,
    /// Attempts per event before its delivery is dead (the operator can re-drive it).
    pub max_attempts: u32,
    pub timeout_ms: u64,
    /// Backoff between attempts: doubling from `retry_base_ms`, capped at `retry_max_ms`.
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
}

/// SQLite's largest `max_page_count`.
const MAX_DB_PAGES: u64 = 4_294_967_294;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSettings {
    pub preset: String,
    pub packets_per_payment: u32,
    pub packet_interval_ms: u64,
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
    pub max_attempts: u32,
}

impl EngineSettings {
    /// Packets per payment and the pause between them, after applying the preset.
    pub fn pacing(&self) -> (u32, u64) {
        match self.preset.as_str() {
            "demo" => (20, 150),
            "custom" => (self.packets_per_payment.max(1), self.packet_interval_ms),
            _ => (1, 0),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceServerSettings {
    pub incoming_max_lifetime_secs: u64,
    pub quote_lifetime_secs: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnapSettings {
    pub auto_approve: bool,
    pub wait_secs: u32,
    pub access_token_expires_in_secs: u32,
    pub interaction_expires_in_secs: u32,
    pub signature_window_secs: u32,
    /// Grants with a `list-all` action need the resource owner's consent (and an `identifier`).
    pub list_all_interaction: bool,
    /// Grants with a `read-all` action need the resource owner's consent (and, for incoming payments, an
    /// `identifier`). Off by default: other ASEs look receivers up with non-interactive `read-all` grants.
    pub read_all_interaction: bool,
}

/// `[client_keys]`: how long client key sets (and failures to fetch them) are remembered.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientKeySettings {
    pub cache_ttl_secs: u64,
    pub failure_cache_secs: u64,
    pub refetch_interval_secs: u64,
}

/// `[egress]`: where outbound requests to client-named URLs may go, and how much they may cost.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressSettings {
    /// `"auto"`, `true` or `false` (a string or a boolean in TOML).
    pub allow_loopback: toml::Value,
    /// `"auto"`, `true` or `false`.
    pub allow_private: toml::Value,
    pub connect_timeout_ms: u64,
    pub timeout_ms: u64,
    pub max_body_bytes: usize,
}

impl EgressSettings {
    /// The address policy for client-named URLs; `"auto"` means `local_development` (see
    /// [`Settings::local_development`]).
    pub fn policy(&self, local_development: bool) -> crate::egress::Policy {
        let flag = |v: &toml::Value| match v {
            toml::Value::Boolean(b) => *b,
            _ => local_development,
        };
        crate::egress::Policy {
            allow_loopback: flag(&self.allow_loopback),
            allow_private: flag(&self.allow_private),
            allow_http: false,
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            total_timeout: Duration::from_millis(self.timeout_ms),
            max_body_bytes: self.max_body_bytes,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemoSettings {
    pub seed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    /// Empty: the SQLite file in the data dir. Else a PostgreSQL URL (`postgres://…`) every node shares.
    pub url: String,
    /// PostgreSQL: connections (each serving one transaction at a time); 0: as many as the machine has cores.
    pub connections: usize,
    pub busy_timeout_ms: u64,
    pub synchronous: String,
    /// An operator quota on the database size in pages (`PRAGMA max_page_count` on the writer connection);
    /// 0: no quota. Writes past it fail like a full disk.
    pub max_db_pages: u64,
    /// SQLite: the ceiling on the WAL file in bytes; past half of it the writer catches the WAL up.
    pub wal_max_bytes: u64,
    /// The event outbox keeps events this many days, and at most this many (the newest).
    pub events_retain_days: u32,
    pub events_retain_count: u64,
}

/// `[metrics]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    enabled: bool,
    allow: Vec<String>,
}

/// `[metrics]`: whether `GET /metrics` is served, and to which peers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    pub enabled: bool,
    /// The networks whose addresses may scrape; an empty list lets nobody in.
    pub allow: Vec<Cidr>,
}

impl MetricsSettings {
    /// Whether a peer at `ip` may scrape (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn allows(&self, ip: std::net::IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.enabled && self.allow.iter().any(|c| c.contains(ip))
    }
}

/// A network: an address and a prefix length (`10.0.0.0/8`, `::1/128`; a bare address is the host alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: std::net::IpAddr,
    pub prefix: u8,
}

impl Cidr {
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr;
        let masked = |bits: u128, width: u8| {
            let shift = u32::from(width - self.prefix.min(width));
            bits.checked_shr(shift).unwrap_or(0)
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                masked(u128::from(u32::from(net)), 32) == masked(u128::from(u32::from(ip)), 32)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => masked(u128::from(net), 128) == masked(u128::from(ip), 128),
            _ => false,
        }
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, prefix) = s.split_once('/').map_or((s, None), |(a, p)| (a, Some(p)));
        let addr: std::net::IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not a network like 10.0.0.0/8 or ::1/128"))?;
        let width = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => width,
            Some(p) => match p.trim().parse::<u8>() {
                Ok(n) if n <= width => n,
                _ => return Err(format!("{s:?}: the prefix length must be 0 to {width}")),
            },
        };
        Ok(Self {
            addr: addr.to_canonical(),
            prefix,
        })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    pub body_limit_bytes: usize,
    pub request_timeout_secs: u64,
    pub wallet_cache_max_age_secs: u64,
    /// Origins allowed to call the public routes from a browser: `*` alone for any, else exact origins.
    pub cors_origins: Vec<String>,
    /// How many recent requests the server keeps for `GET /admin/requests` and `opdesk requests`.
    #[serde(default = "default_request_log_size")]
    pub request_log_size: usize,
}

fn default_request_log_size() -> usize {
    1000
}

/// Checks `[server] cors_origins`: `"*"` alone, or origins (`https://host[:port]`, nothing after).
fn check_cors_origins(origins: &[String]) -> Result<(), String> {
    if origins.iter().any(|o| o == "*") {
        return if origins.len() == 1 {
            Ok(())
        } else {
            Err("\"*\" allows every origin: give it alone".into())
        };
    }
    for o in origins {
        let url = url::Url::parse(o).map_err(|_| format!("{o:?} is not an origin like https://wallet.example"))?;
        let origin = url.origin().ascii_serialization();
        if !matches!(url.scheme(), "http" | "https") || origin != *o {
            return Err(format!(
                "{o:?} is not an origin like https://wallet.example (scheme, host and port only)"
            ));
        }
    }
    Ok(())
}

/// The resolved settings.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    /// Public base URL without a trailing slash.
    pub public_url: String,
    pub log_level: String,
    /// How `serve` (and commands) log to stderr: text lines or JSON lines.
    pub log_format: crate::logging::LogFormat,
    pub demo: DemoSettings,
    pub store: StoreSettings,
    pub server: ServerSettings,
    pub metrics: MetricsSettings,
    pub gnap: GnapSettings,
    pub consent: ConsentSettings,
    pub client_keys: ClientKeySettings,
    pub egress: EgressSettings,
    pub resource_server: ResourceServerSettings,
    pub engine: EngineSettings,
    pub webhooks: WebhookSettings,
    /// Serve `POST /workshop/sign`, the class's signing helper: set by `opdesk workshop` on its happy-life desk,
    /// never by a config file.
    pub workshop_signer: bool,
    /// Console key overrides (`[keys]`) and colours (`[theme]`).
    pub keys: std::collections::BTreeMap<String, String>,
    pub theme: std::collections::BTreeMap<String, String>,
    pub ilp: IlpSettings,
    /// HTTPS on the public listener, when `[tls]` names a certificate and key.
    pub tls: Option<TlsSettings>,
    /// Exchange rates and fees, validated.
    pub rates: crate::rates::Rates,
    pub exchange_rates: ExchangeRateSettings,
    pub paths: Paths,
    pub wallet_cache_max_age_secs: u64,
}

/// Values given on the command line (highest layer).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The config file to read instead of the one in the config dir.
    pub config: Option<PathBuf>,
    /// Whether a missing `config` file is an error (true when the user named it with `--config`).
    pub config_required: bool,
    pub listen: Option<String>,
    pub public_url: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub log_level: Option<String>,
    /// `text` or `json`.
    pub log_format: Option<String>,
    /// `tls.cert` and `tls.key` (absolute, or relative to the data dir).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// `store.url`: a PostgreSQL URL.
    pub database: Option<String>,
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("org", "opdesk", "opdesk")
}

/// Deep-merges `over` into `base`.
fn merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// `OPDESK_A__B=v` → `{a: {b: v}}`; values parse as TOML scalars when they can, else strings.
/// Variables whose first segment names no setting (say `OPDESK_BIN` of some script) are not ours: skipped.
fn env_layer(vars: impl Iterator<Item = (String, String)>, known: &Table) -> Table {
    let mut out = Table::new();
    for (k, v) in vars {
        let Some(rest) = k.strip_prefix("OPDESK_") else {
            continue;
        };
        if rest == "CONFIG" || rest.is_empty() {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        if !path.first().is_some_and(|p| known.contains_key(p)) {
            continue;
        }
        let value = format!("x = {v}")
            .parse::<Table>()
            .ok()
            .and_then(|mut t| t.remove("x"))
            .filter(|x| !x.is_table() && !x.is_array())
            .unwrap_or(Value::String(v));
        let mut t = &mut out;
        for (i, seg) in path.iter().enumerate() {
            if i + 1 == path.len() {
                t.insert(seg.clone(), value.clone());
            } else {
                let entry = t.entry(seg.clone()).or_insert_with(|| Value::Table(Table::new()));
                match entry {
                    Value::Table(inner) => t = inner,
                    _ => break,
                }
            }
        }
    }
    out
}

fn parse_table(text: &str, origin: &str) -> Result<Table, SettingsError> {
    text.parse::<Table>().map_err(|e| SettingsError::Invalid {
        origin: origin.to_owned(),
        message: e.to_string(),
    })
}

/// `[tls]` resolved against the data dir: both files or neither, and a loopback admin address.
fn tls_settings(raw: &RawTls, data_dir: &Path) -> Result<Option<TlsSettings>, (&'static str, String)> {
    let admin_listen: SocketAddr = raw.admin_listen.parse().map_err(|e| {
        (
            "tls.admin_listen",
            format!("{:?} is not an address like 127.0.0.1:0: {e}", raw.admin_listen),
        )
    })?;
    if !admin_listen.ip().is_loopback() {
        return Err((
            "tls.admin_listen",
            format!("{admin_listen} is not a loopback address (the admin API is served without TLS)"),
        ));
    }
    match (raw.cert.is_empty(), raw.key.is_empty()) {
        (true, true) => Ok(None),
        (false, false) => Ok(Some(TlsSettings {
            cert: data_dir.join(&raw.cert),
            key: data_dir.join(&raw.key),
            admin_listen,
        })),
        (false, true) => Err(("tls.key", "tls.cert is set: set tls.key too (or neither)".into())),
        (true, false) => Err(("tls.cert", "tls.key is set: set tls.cert too (or neither)".into())),
    }
}

impl Settings {
    /// Resolves settings from all layers, reading the process environment.
    pub fn load(o: &Overrides) -> Result<Self, SettingsError> {
        Self::load_from(o, std::env::vars())
    }

    /// Resolves settings with an explicit environment (tests).
    pub fn load_from(o: &Overrides, env: impl Iterator<Item = (String, String)>) -> Result<Self, SettingsError> {
        let dirs = project_dirs();
        let config_file = match (&o.config, &dirs) {
            (Some(p), _) => p.clone(),
            (None, Some(d)) => d.config_dir().join("config.toml"),
            (None, None) => return Err(SettingsError::NoHome),
        };
        let mut table = parse_table(DEFAULTS, "built-in defaults")?;
        match std::fs::read_to_string(&config_file) {
            Ok(text) => merge(&mut table, parse_table(&text, &config_file.display().to_string())?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !o.config_required => {}
            Err(source) => {
                return Err(SettingsError::Read {
                    path: config_file,
                    source,
                });
            }
        }
        let known = table.clone();
        merge(&mut table, env_layer(env, &known));
        let mut flags = Table::new();
        if let Some(v) = &o.listen {
            flags.insert("listen".into(), Value::String(v.clone()));
        }
        if let Some(v) = &o.public_url {
            flags.insert("public_url".into(), Value::String(v.clone()));
        }
        if let Some(v) = &o.data_dir {
            flags.insert("data_dir".into(), Value::String(v.display().to_string()));
        }
        if let Some(v) = &o.log_level {
            flags.insert("log_level".into(), Value::String(v.clone()));
        }
        if let Some(v) = &o.log_format {
            flags.insert("log_format".into(), Value::String(v.clone()));
        }
        let mut tls = Table::new();
        for (key, v) in [("cert", &o.tls_cert), ("key", &o.tls_key)] {
            if let Some(v) = v {
                tls.insert(key.into(), Value::String(v.display().to_string()));
            }
        }
        if !tls.is_empty() {
            flags.insert("tls".into(), Value::Table(tls));
        }
        if let Some(v) = &o.database {
            let mut store = Table::new();
            store.insert("url".into(), Value::String(v.clone()));
            flags.insert("store".into(), Value::Table(store));
        }
        merge(&mut table, flags);
        let raw: Raw = Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| SettingsError::Invalid {
                origin: "configuration".into(),
                message: e.to_string(),
            })?;
        Self::resolve(raw, config_file, dirs.as_ref())
    }

    fn resolve(raw: Raw, config_file: PathBuf, dirs: Option<&directories::ProjectDirs>) -> Result<Self, SettingsError> {
        let invalid = |key: &str, message: String| SettingsError::Invalid {
            origin: key.to_owned(),
            message,
        };
        let listen: SocketAddr = raw.listen.parse().map_err(|e| {
            invalid(
                "listen",
                format!("{:?} is not an address like 127.0.0.1:4000: {e}", raw.listen),
            )
        })?;
        let tls_on = !raw.tls.cert.is_empty() || !raw.tls.key.is_empty();
        let public_url = if raw.public_url.is_empty() {
            format!("{}://{listen}", if tls_on { "https" } else { "http" })
        } else {
            let u = url::Url::parse(&raw.public_url)
                .map_err(|e| invalid("public_url", format!("{:?}: {e}", raw.public_url)))?;
            if !matches!(u.scheme(), "http" | "https") || u.host().is_none() || u.query().is_some() {
                return Err(invalid(
                    "public_url",
                    "must be an http(s) URL with a host and no query".into(),
                ));
            }
            if tls_on && u.scheme() != "https" {
                return Err(invalid(
                    "public_url",
                    "must be an https URL when [tls] serves HTTPS".into(),
                ));
            }
            crate::names::base_url(&raw.public_url)
        };
        let (data_dir, log_file) = if raw.data_dir.is_empty() {
            let d = dirs.ok_or(SettingsError::NoHome)?;
            let state = d.state_dir().unwrap_or_else(|| d.cache_dir()).to_path_buf();
            (d.data_dir().to_path_buf(), state.join("opdesk.log"))
        } else {
            let d = PathBuf::from(&raw.data_dir);
            (d.clone(), d.join("opdesk.log"))
        };
        if !matches!(
            raw.store.synchronous.to_ascii_uppercase().as_str(),
            "NORMAL" | "FULL" | "EXTRA"
        ) {
            return Err(invalid("store.synchronous", "must be NORMAL, FULL or EXTRA".into()));
        }
        let url = raw.store.url.as_str();
        if !(url.is_empty() || url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(invalid(
                "store.url",
                "must be empty (SQLite in the data dir) or a postgres:// URL".into(),
            ));
        }
        if !raw.store.url.is_empty() && raw.store.max_db_pages > 0 {
            return Err(invalid(
                "store.max_db_pages",
                "is a quota on the SQLite file; with store.url (PostgreSQL) set it to 0".into(),
            ));
        }
        if raw.store.connections > 256 {
            return Err(invalid(
                "store.connections",
                "must be between 0 (automatic) and 256".into(),
            ));
        }
        if raw.store.wal_max_bytes < crate::store::wal::MIN_MAX_BYTES {
            return Err(invalid(
                "store.wal_max_bytes",
                format!("must be at least {} (1 MiB)", crate::store::wal::MIN_MAX_BYTES),
            ));
        }
        if raw.store.max_db_pages > MAX_DB_PAGES {
            return Err(invalid(
                "store.max_db_pages",
                format!("must be at most {MAX_DB_PAGES} (0: no quota)"),
            ));
        }
        for (key, v) in [
            ("egress.allow_loopback", &raw.egress.allow_loopback),
            ("egress.allow_private", &raw.egress.allow_private),
        ] {
            if !matches!(v, toml::Value::Boolean(_)) && v.as_str() != Some("auto") {
                return Err(invalid(key, "must be \"auto\", true or false".into()));
            }
        }
        if raw.egress.timeout_ms == 0 || raw.egress.connect_timeout_ms == 0 || raw.egress.max_body_bytes < 1024 {
            return Err(invalid(
                "egress",
                "timeouts must be at least 1 ms and max_body_bytes at least 1024".into(),
            ));
        }
        if raw.gnap.access_token_expires_in_secs == 0 || raw.gnap.interaction_expires_in_secs == 0 {
            return Err(invalid("gnap", "expiry times must be at least one second".into()));
        }
        if !matches!(raw.engine.preset.as_str(), "fast" | "demo" | "custom") {
            return Err(invalid(
                "engine.preset",
                "must be \"fast\", \"demo\" or \"custom\"".into(),
            ));
        }
        if !raw.webhooks.url.is_empty() {
            let u = url::Url::parse(&raw.webhooks.url)
                .map_err(|e| invalid("webhooks.url", format!("{:?}: {e}", raw.webhooks.url)))?;
            if !matches!(u.scheme(), "http" | "https") {
                return Err(invalid("webhooks.url", "must be an http(s) URL".into()));
            }
        }
        if !raw.exchange_rates.url.is_empty() {
            let u = url::Url::parse(&raw.exchange_rates.url)
                .map_err(|e| invalid("exchange_rates.url", format!("{:?}: {e}", raw.exchange_rates.url)))?;
            if !matches!(u.scheme(), "http" | "https") {
                return Err(invalid("exchange_rates.url", "must be an http(s) URL".into()));
            }
        }
        if raw.engine.max_attempts == 0 {
            return Err(invalid("engine.max_attempts", "must be at least 1".into()));
        }
        let rates = crate::rates::Rates::new(&raw.rates, &raw.fees).map_err(|e| invalid("rates", e.to_string()))?;
        if raw.resource_server.quote_lifetime_secs == 0 || raw.resource_server.incoming_max_lifetime_secs == 0 {
            return Err(invalid(
                "resource_server",
                "lifetimes must be at least one second".into(),
            ));
        }
        if raw.server.body_limit_bytes < 1024 {
            return Err(invalid("server.body_limit_bytes", "must be at least 1024".into()));
        }
        check_cors_origins(&raw.server.cors_origins).map_err(|e| invalid("server.cors_origins", e))?;
        raw.ilp.validate().map_err(|(key, message)| invalid(key, message))?;
        let metrics = MetricsSettings {
            enabled: raw.metrics.enabled,
            allow: raw
                .metrics
                .allow
                .iter()
                .map(|c| c.parse())
                .collect::<Result<_, _>>()
                .map_err(|e| invalid("metrics.allow", e))?,
        };
        let log_format = raw.log_format.parse().map_err(|e| invalid("log_format", e))?;
        let tls = tls_settings(&raw.tls, &data_dir).map_err(|(key, message)| invalid(key, message))?;
        Ok(Self {
            listen,
            public_url,
            log_level: raw.log_level,
            log_format,
            demo: raw.demo,
            wallet_cache_max_age_secs: raw.server.wallet_cache_max_age_secs,
            store: raw.store,
            server: raw.server,
            metrics,
            gnap: raw.gnap,
            consent: raw.consent,
            client_keys: raw.client_keys,
            egress: raw.egress,
            resource_server: raw.resource_server,
            engine: raw.engine,
            webhooks: raw.webhooks,
            workshop_signer: false,
            keys: raw.keys,
            theme: raw.theme,
            ilp: raw.ilp,
            tls,
            rates,
            exchange_rates: raw.exchange_rates,
            paths: Paths {
                config_file,
                data_dir,
                log_file,
            },
        })
    }

    /// Whether this is a local development setup: the public URL is on loopback. `"auto"` egress settings
    /// follow it — an ASE listening on loopback behind a reverse proxy has a public URL elsewhere, and must
    /// not let clients steer it to its own loopback services.
    pub fn local_development(&self) -> bool {
        url::Url::parse(&self.public_url).is_ok_and(|u| crate::egress::is_loopback_url(&u))
    }

    /// Settings for tests and embedding: defaults with the given data dir and listen address.
    /// Where the ASE's state lives, for people: the SQLite file of the data dir, or the PostgreSQL URL with
    /// its password hidden.
    pub fn store_location(&self) -> String {
        if self.store.url.is_empty() {
            self.paths.database().display().to_string()
        } else {
            crate::store::redact_url(&self.store.url)
        }
    }

    pub fn for_data_dir(data_dir: &Path, listen: SocketAddr) -> Result<Self, SettingsError> {
        let o = Overrides {
            config: Some(data_dir.join("config.toml")),
            config_required: false,
            listen: Some(listen.to_string()),
            data_dir: Some(data_dir.to_path_buf()),
            ..Overrides::default()
        };
        Self::load_from(&o, std::iter::empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn layers_apply_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.toml");
        std::fs::write(
            &cfg,
            "listen = \"127.0.0.1:5000\"\nlog_level = \"debug\"\n[demo]\nseed = false\n",
        )
        .unwrap();
        let o = Overrides {
            config: Some(cfg.clone()),
            config_required: true,
            data_dir: Some(dir.path().into()),
            ..Default::default()
        };
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:5000");
        assert_eq!(s.public_url, "http://127.0.0.1:5000");
        assert!(!s.demo.seed);
        assert_eq!(s.log_level, "debug");
        assert_eq!(s.log_format, crate::logging::LogFormat::Text, "text by default");
        assert_eq!(s.store.busy_timeout_ms, 5000);
        assert_eq!(s.store.max_db_pages, 0, "no quota by default");
        assert_eq!(s.store.wal_max_bytes, 64 << 20, "a 64 MiB WAL by default");
        assert!(s.gnap.list_all_interaction, "list-all needs consent by default");
        assert!(
            !s.gnap.read_all_interaction,
            "read-all stays open to other ASEs by default"
        );

        let s = Settings::load_from(
            &o,
            env(&[
                ("OPDESK_LISTEN", "127.0.0.1:6000"),
                ("OPDESK_DEMO__SEED", "true"),
                ("OPDESK_GNAP__LIST_ALL_INTERACTION", "false"),
                ("OPDESK_GNAP__READ_ALL_INTERACTION", "true"),
                ("OPDESK_STORE__MAX_DB_PAGES", "5000"),
                ("OPDESK_LOG_FORMAT", "json"),
            ]),
        )
        .unwrap();
        assert_eq!(s.listen.port(), 6000);
        assert!(s.demo.seed);
        assert_eq!(s.log_format, crate::logging::LogFormat::Json);
        assert!(!s.gnap.list_all_interaction);
        assert!(s.gnap.read_all_interaction);
        assert_eq!(s.store.max_db_pages, 5000);

        let o2 = Overrides {
            listen: Some("127.0.0.1:7000".into()),
            ..o
        };
        let s = Settings::load_from(&o2, env(&[("OPDESK_LISTEN", "127.0.0.1:6000"), ("OPDESK_BIN", "/x")])).unwrap();
        assert_eq!(s.listen.port(), 7000);
        assert_eq!(s.paths.database(), dir.path().join("ase.sqlite3"));
    }

    #[test]
    fn cors_origins_are_any_alone_or_exact_origins() {
        assert!(check_cors_origins(&["*".into()]).is_ok());
        assert!(check_cors_origins(&[]).is_ok());
        assert!(check_cors_origins(&["https://wallet.example".into(), "http://127.0.0.1:3000".into()]).is_ok());
        for bad in [
            "https://wallet.example/",
            "https://wallet.example/app",
            "wallet.example",
            "ftp://x.example",
        ] {
            assert!(check_cors_origins(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(check_cors_origins(&["*".into(), "https://wallet.example".into()]).is_err());
    }

    #[test]
    fn metrics_are_on_for_loopback_peers_by_default_and_the_allow_list_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.toml");
        let o = Overrides {
            config: Some(cfg.clone()),
            config_required: false,
            data_dir: Some(dir.path().into()),
            ..Default::default()
        };
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert!(s.metrics.enabled);
        assert!(s.metrics.allows(ip("127.0.0.1")));
        assert!(s.metrics.allows(ip("::1")));
        assert!(s.metrics.allows(ip("::ffff:127.0.0.1")), "IPv4-mapped loopback");
        assert!(!s.metrics.allows(ip("127.0.0.2")));
        assert!(!s.metrics.allows(ip("10.0.0.1")));
        assert!(!s.metrics.allows(ip("::2")));

        std::fs::write(
            &cfg,
            "[metrics]\nallow = [\"10.1.0.0/16\", \"192.0.2.7\", \"fd00::/8\"]\n",
        )
        .unwrap();
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert!(s.metrics.allows(ip("10.1.200.3")));
        assert!(!s.metrics.allows(ip("10.2.0.1")));
        assert!(s.metrics.allows(ip("192.0.2.7")));
        assert!(!s.metrics.allows(ip("192.0.2.8")));
        assert!(s.metrics.allows(ip("fd12::1")));
        assert!(!s.metrics.allows(ip("127.0.0.1")), "only the listed networks");
        assert_eq!(s.metrics.allow[0].to_string(), "10.1.0.0/16");

        std::fs::write(&cfg, "[metrics]\nallow = [\"0.0.0.0/0\"]\nenabled = false\n").unwrap();
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert!(!s.metrics.allows(ip("127.0.0.1")), "disabled");

        for bad in ["10.0.0.0/33", "::1/129", "localhost", "10.0.0.0/x"] {
            std::fs::write(&cfg, format!("[metrics]\nallow = [{bad:?}]\n")).unwrap();
            let e = Settings::load_from(&o, env(&[])).unwrap_err().to_string();
            assert!(e.contains("metrics.allow") && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.toml");
        std::fs::write(&cfg, "lisen = \"x\"\n").unwrap();
        let o = Overrides {
            config: Some(cfg.clone()),
            config_required: true,
            data_dir: Some(dir.path().into()),
            ..Default::default()
        };
        let e = Settings::load_from(&o, env(&[])).unwrap_err().to_string();
        assert!(e.contains("lisen"), "{e}");
        std::fs::write(&cfg, "public_url = \"ftp://x\"\n").unwrap();
        let e = Settings::load_from(&o, env(&[])).unwrap_err().to_string();
        assert!(e.contains("public_url"), "{e}");
        std::fs::write(&cfg, "log_format = \"xml\"\n").unwrap();
        let e = Settings::load_from(&o, env(&[])).unwrap_err().to_string();
        assert!(e.contains("log_format") && e.contains("\"text\" or \"json\""), "{e}");
        std::fs::write(&cfg, "log_format = \"json\"\n").unwrap();
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert_eq!(s.log_format, crate::logging::LogFormat::Json);
        let missing = Overrides {
            config: Some(dir.path().join("nope.toml")),
            ..o
        };
        assert!(matches!(
            Settings::load_from(&missing, env(&[])),
            Err(SettingsError::Read { .. })
        ));
    }

    #[test]
    fn public_url_loses_trailing_slash() {
        let dir = tempfile::tempdir().unwrap();
        let o = Overrides {
            config: Some(dir.path().join("absent.toml")),
            data_dir: Some(dir.path().into()),
            public_url: Some("https://pay.example/".into()),
            ..Default::default()
        };
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert_eq!(s.public_url, "https://pay.example");
    }

    #[test]
    fn tls_paths_both_or_neither_and_an_https_public_url() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.toml");
        let o = Overrides {
            config: Some(cfg.clone()),
            config_required: false,
            data_dir: Some(dir.path().into()),
            listen: Some("127.0.0.1:4443".into()),
            ..Default::default()
        };
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert_eq!(s.tls, None, "no TLS by default");
        assert_eq!(s.public_url, "http://127.0.0.1:4443");

        std::fs::write(&cfg, "[tls]\ncert = \"tls/cert.pem\"\nkey = \"/etc/opdesk/key.pem\"\n").unwrap();
        let s = Settings::load_from(&o, env(&[])).unwrap();
        let tls = s.tls.unwrap();
        assert_eq!(tls.cert, dir.path().join("tls/cert.pem"), "relative to the data dir");
        assert_eq!(tls.key, Path::new("/etc/opdesk/key.pem"));
        assert_eq!(tls.admin_listen.to_string(), "127.0.0.1:0");
        assert_eq!(s.public_url, "https://127.0.0.1:4443", "derived as https");

        let flags = Overrides {
            tls_cert: Some("/x/c.pem".into()),
            tls_key: Some("/x/k.pem".into()),
            public_url: Some("https://pay.example".into()),
            ..o.clone()
        };
        let s = Settings::load_from(&flags, env(&[("OPDESK_TLS__ADMIN_LISTEN", "[::1]:4999")])).unwrap();
        let tls = s.tls.unwrap();
        assert_eq!(
            (tls.cert.to_str(), tls.key.to_str()),
            (Some("/x/c.pem"), Some("/x/k.pem"))
        );
        assert_eq!(tls.admin_listen.to_string(), "[::1]:4999");

        for (config, flag_url, key) in [
            ("[tls]\ncert = \"c.pem\"\n", None, "tls.key"),
            ("[tls]\nkey = \"k.pem\"\n", None, "tls.cert"),
            (
                "[tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\nadmin_listen = \"0.0.0.0:0\"\n",
                None,
                "tls.admin_listen",
            ),
            (
                "[tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\n",
                Some("http://pay.example"),
                "public_url",
            ),
        ] {
            std::fs::write(&cfg, config).unwrap();
            let o = Overrides {
                public_url: flag_url.map(str::to_owned),
                ..o.clone()
            };
            let e = Settings::load_from(&o, env(&[])).unwrap_err().to_string();
            assert!(e.starts_with(key), "{key}: {e}");
        }
    }

    #[test]
    fn ilp_defaults_peers_and_validation() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.toml");
        let o = Overrides {
            config: Some(cfg.clone()),
            config_required: false,
            data_dir: Some(dir.path().into()),
            ..Default::default()
        };
        let s = Settings::load_from(&o, env(&[])).unwrap();
        assert_eq!(s.ilp.address, "test.opdesk");
        assert_eq!(s.ilp.secret, "");
        assert!(s.ilp.peers.is_empty());
        assert_eq!(s.paths.ilp_secret(), dir.path().join("ilp.secret"));

        let secret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
        let peers = format!(
            "[ilp]\naddress = \"test.desk-a\"\nsecret = \"{secret}\"\n\
             [[ilp.peers]]\nname = \"node\"\nincoming_tokens = [\"t1\", \"t2\"]\nmax_packet_amount = 1000\n\
             asset_code = \"USD\"\nasset_scale = 2\n\
             [[ilp.peers]]\nname = \"other\"\nincoming_tokens = [\"t3\"]\nasset_code = \"EUR\"\nasset_scale = 2\n"
        );
        std::fs::write(&cfg, &peers).unwrap();
        let s = Settings::load_from(&o, env(&[("OPDESK_ILP__ADDRESS", "test.desk-b")])).unwrap();
        assert_eq!(s.ilp.address, "test.desk-b");
        assert_eq!(decode_secret(&s.ilp.secret), Some(std::array::from_fn(|i| i as u8)));
        assert_eq!(s.ilp.peers.len(), 2);
        assert_eq!(s.ilp.peers[0].incoming_tokens, ["t1", "t2"]);
        assert_eq!(s.ilp.peers[0].max_packet_amount, Some(1000));
        assert_eq!(s.ilp.peers[1].max_packet_amount, None);
        assert_eq!(s.ilp.slippage_ppm(), 10_000);
        let send_only = peers.replace(
            "incoming_tokens = [\"t3\"]\n",
            "outgoing_endpoint = \"http://b.test/ilp\"\noutgoing_token = \"o1\"\nroutes = [\"test.b\", \"g\"]\n",
        );
        std::fs::write(&cfg, &send_only).unwrap();
        let s2 = Settings::load_from(&o, env(&[])).unwrap();
        assert_eq!(s2.ilp.peers[1].routes, ["test.b", "g"]);
        assert!(!format!("{:?}", s2.ilp).contains("\"o1\""));
        let shown = format!("{:?}", s.ilp);
        assert!(!shown.contains(secret) && !shown.contains("\"t1\""), "{shown}");

        for (bad, key) in [
            (peers.replace("test.desk-a", "nope.desk"), "ilp.address"),
            (peers.replace(secret, "c2hvcnQ"), "ilp.secret"),
            (peers.replace("\"t3\"", "\"t1\""), "incoming_tokens"),
            (peers.replace("[\"t3\"]", "[]"), "incoming_tokens"),
            (peers.replace("= 1000", "= 0"), "max_packet_amount"),
            (peers.replace("\"EUR\"", "\"E-R\""), "asset_code"),
            (peers.replace("\"other\"", "\"node\""), "ilp.peers.name"),
            (peers.replace("\"other\"", "\"a b\""), "ilp.peers.name"),
            (peers.replace("= 1000\n", "= 1000\nport = 1\n"), "port"),
            (
                peers.replace("= 1000\n", "= 1000\noutgoing_endpoint = \"http://b.test/ilp\"\n"),
                "outgoing_token",
            ),
            (
                peers.replace("= 1000\n", "= 1000\nroutes = [\"test.b\"]\n"),
                "ilp.peers.routes",
            ),
            (peers.replace("[ilp]\n", "[ilp]\nslippage = 1.5\n"), "ilp.slippage"),
            (
                peers.replace("[ilp]\n", "[ilp]\nclient_wallet = \"A B\"\n"),
                "ilp.client_wallet",
            ),
        ] {
            std::fs::write(&cfg, &bad).unwrap();
            let e = Settings::load_from(&o, env(&[])).unwrap_err().to_string();
            assert!(e.contains(key), "{key}: {e}");
        }
    }
}
