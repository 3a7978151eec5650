//! `opdesk workshop`: a two-ASE Interledger network in one process. Two desks, `cloud-nine` and
//! `happy-life`, each a full opdesk data dir under the workshop dir (its own lock, `server.json`, admin token,
//! demo wallets and demo-client key, ILP address `test.NAME`), each serving on its own port and peered with
//! the other over ILP-over-HTTP: it receives from the other with a token, sends to the other's `/ilp` with
//! the other's token, and routes the other's ILP prefix there. Peering is idempotent: the tokens are kept in
//! the workshop dir (`peering.json`) and every start brings both peers to the same definition. Then the
//! console opens over both desks ([`crate::tui::desks::Desks`]), or — without a terminal, or with
//! `--headless` — it serves until SIGINT/SIGTERM and prints one line per desk.
//! This module owns that set-up; it moves no money (see [`fund_peer`]).

pub mod seats;

use std::{
    collections::BTreeMap,
    io::{IsTerminal as _, Write as _},
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
};

use color_eyre::eyre::{Result, WrapErr, eyre};
use tokio_util::sync::CancellationToken;

use crate::{
    app::{self, AppCore},
    ase::peers::PeerPatch,
    cli::Global,
    control::{
        self, Services,
        dto::{LiquidityMove, NewPeer},
    },
    files, logging,
    money::Value,
    settings::Settings,
    tui::{self, desks::Desks},
};

/// The two desks: names and default ports.
pub const DESKS: [(&str, u16); 2] = [("cloud-nine", 4000), ("happy-life", 4100)];

/// The asset of the link between the desks (the demo wallets alice and bob hold it).
const LINK_ASSET: (&str, u8) = ("USD", 2);
/// The largest packet either desk sends the other (10.00 USD), so a payment visibly streams in packets.
const MAX_PACKET: u64 = 1000;
/// What each desk may owe the other, and lets the other owe it (1,000.00 USD).
const LIQUIDITY: u64 = 100_000;

/// What `opdesk workshop` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workshop dir (the desks' data dirs are inside).
    pub dir: PathBuf,
    /// The desks' ports, in [`DESKS`] order.
    pub ports: [u16; 2],
    /// Serve without the console even on a terminal.
    pub headless: bool,
    /// Seats of a class (0: none), see [`seats`].
    pub seats: u8,
    /// Where the desks listen and how the room reaches them.
    pub net: Net,
}

/// Where the desks listen (`--bind`) and the host name the room reaches them by (`--public-host`, in every
/// URL the desks and the handouts give out).
#[derive(Debug, Clone)]
pub struct Net {
    pub bind: std::net::IpAddr,
    pub public_host: Option<String>,
}

impl Default for Net {
    fn default() -> Self {
        Self {
            bind: std::net::IpAddr::from([127, 0, 0, 1]),
            public_host: None,
        }
    }
}

impl Net {
    /// The address the desks reach each other at (ILP-over-HTTP): the bound one, or loopback when all are.
    fn reach(&self) -> std::net::IpAddr {
        if self.bind.is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            self.bind
        }
    }

    /// The URL of the desk on `port` as the desks reach each other.
    fn reach_url(&self, port: u16) -> String {
        format!("http://{}", SocketAddr::new(self.reach(), port))
    }

    /// The public base URL of the desk on `port`.
    fn public_url(&self, port: u16) -> String {
        match &self.public_host {
            Some(host) => format!("http://{host}:{port}"),
            None => self.reach_url(port),
        }
    }
}

/// The top-level settings a `--config`/`OPDESK_CONFIG` file may give `opdesk workshop`: the console's own (its
/// keys, theme and log level). Each desk reads its own `DIR/<desk>/config.toml`.
const CONSOLE_SETTINGS: [&str; 4] = ["keys", "theme", "log_level", "log_format"];

/// What the `--config` file `path` sets that the desks would not read (each reads `DIR/<desk>/config.toml`): the
/// workshop refuses such a file rather than ignore it.
pub fn settings_for_desks(path: &Path) -> Result<Vec<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).wrap_err_with(|| format!("cannot read {}", path.display())),
    };
    let table: toml::Table = toml::from_str(&text).wrap_err_with(|| format!("{}", path.display()))?;
    Ok(table
        .keys()
        .filter(|k| !CONSOLE_SETTINGS.contains(&k.as_str()))
        .cloned()
        .collect())
}

/// The default workshop dir: `opdesk-workshop` next to the data dir.
pub fn default_dir(settings: &Settings) -> PathBuf {
    let data = &settings.paths.data_dir;
    data.parent().unwrap_or(data).join("opdesk-workshop")
}

/// The data dir of desk `name` in the workshop dir `dir`.
pub fn desk_dir(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// The ILP address a desk gets on first start (kept in its config.toml, which the operator may edit).
fn ilp_address(name: &str) -> String {
    format!("test.{name}")
}

/// A desk's settings: its data dir's own config.toml (written on first start), listening on `port` of `net`.
fn desk_settings(dir: &Path, name: &str, port: u16, log_level: &str, net: &Net) -> Result<Settings> {
    let data = desk_dir(dir, name);
    files::private_dir(&data).wrap_err_with(|| format!("cannot create {}", data.display()))?;
    let config = data.join("config.toml");
    if !config.exists() {
        let text = format!(
            "# The {name} desk of `opdesk workshop` (this file is its config.toml; the workshop listens on the\n\
             # port given on its command line and peers the desks itself).\n\n[ilp]\naddress = \"{}\"\n",
            ilp_address(name)
        );
        std::fs::write(&config, text).wrap_err_with(|| format!("cannot write {}", config.display()))?;
    }
    let listen = SocketAddr::new(net.bind, port);
    let mut settings = Settings::for_data_dir(&data, listen).wrap_err_with(|| format!("{}", config.display()))?;
    log_level.clone_into(&mut settings.log_level);
    settings.public_url = net.public_url(port);
    if !net.reach().is_loopback() || net.public_host.is_some() {
        // a room on a LAN: the desks fetch the seats' client keys (and pay each other) at private addresses
        settings.egress.allow_private = toml::Value::Boolean(true);
    }
    // the class's signing helper lives where the seats' client apps do
    settings.workshop_signer = name == DESKS[1].0;
    Ok(settings)
}

/// The bearer tokens between the desks, `"FROM->TO"` → the token FROM presents at TO's `/ilp`; made once and
/// kept in the workshop dir so a second start peers the same way.
fn tokens(dir: &Path) -> Result<BTreeMap<String, String>> {
    let path = dir.join("peering.json");
    let mut map: BTreeMap<String, String> = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).wrap_err_with(|| format!("{} is not a token map", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(e) => return Err(e).wrap_err_with(|| format!("cannot read {}", path.display())),
    };
    let mut changed = false;
    for (from, _) in DESKS {
        for (to, _) in DESKS {
            if from != to && !map.contains_key(&link(from, to)) {
                map.insert(link(from, to), random_token()?);
                changed = true;
            }
        }
    }
    if changed {
        let text = serde_json::to_vec_pretty(&map).wrap_err("token map")?;
        files::write_private(&path, &text).wrap_err_with(|| format!("cannot write {}", path.display()))?;
    }
    Ok(map)
}

fn link(from: &str, to: &str) -> String {
    format!("{from}->{to}")
}

fn random_token() -> Result<String> {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| eyre!("no randomness: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// One side of the link, as desk `me` sees the other.
struct Link<'a> {
    other: &'a str,
    other_address: String,
    /// The other's `/ilp`.
    other_endpoint: String,
    /// What the other presents at our `/ilp`.
    incoming_token: String,
    /// What we present at the other's `/ilp`.
    outgoing_token: String,
}

/// Makes desk `me` peer with the other desk as `link` says: adds the peer, or brings an existing one
/// (added by an earlier start) to this definition — never a second one. A peer of that name defined in
/// config.toml is the operator's and is left alone.
async fn ensure_peer(me: &Services, link: &Link<'_>) -> Result<()> {
    let endpoint = link.other_endpoint.clone();
    let existing = control::list_peers(me).await?;
    match existing.iter().find(|p| p.name == link.other) {
        Some(p) if p.source == "config" => {
            tracing::info!(peer = link.other, "the peer is defined in config.toml; left as it is");
        }
        Some(_) => {
            let patch = PeerPatch {
                ilp_address: Some(Some(link.other_address.clone())),
                incoming_tokens: Some(vec![link.incoming_token.clone()]),
                generate_incoming_token: false,
                outgoing_endpoint: Some(Some(endpoint)),
                outgoing_token: Some(Some(link.outgoing_token.clone())),
                routes: Some(vec![link.other_address.clone()]),
                max_packet_amount: Some(Some(MAX_PACKET)),
                credit_limit: None,
            };
            control::update_peer(me, link.other, patch).await?;
        }
        None => {
            control::create_peer(
                me,
                NewPeer {
                    name: link.other.to_owned(),
                    ilp_address: Some(link.other_address.clone()),
                    asset_code: LINK_ASSET.0.to_owned(),
                    asset_scale: LINK_ASSET.1,
                    incoming_tokens: vec![link.incoming_token.clone()],
                    generate_incoming_token: false,
                    outgoing_endpoint: Some(endpoint),
                    outgoing_token: Some(link.outgoing_token.clone()),
                    routes: vec![link.other_address.clone()],
                    max_packet_amount: Some(MAX_PACKET),
                },
            )
            .await?;
        }
    }
    fund_peer(me, link.other).await
}

/// The peer's liquidity and credit limit, as a workshop's pair of ASEs would agree them: each desk may owe the
/// other up to [`LIQUIDITY`] (deposited once, under a fixed transfer id, so a second start adds nothing) and
/// lets the other owe it as much. Participants see sending stop when it runs out (`opdesk peers liquidity`).
async fn fund_peer(me: &Services, peer: &str) -> Result<()> {
    let amount = Value::new(LIQUIDITY)?;
    control::move_peer_liquidity(
        me,
        peer,
        LiquidityMove {
            deposit: Some(amount),
            withdraw: None,
            transfer_id: Some(format!("workshop-liquidity-{peer}")),
        },
    )
    .await?;
    let limit = PeerPatch {
        credit_limit: Some(Some(amount)),
        ..PeerPatch::default()
    };
    control::update_peer(me, peer, limit).await?;
    Ok(())
}

/// One desk, opened and peered, not yet serving.
struct Desk {
    name: &'static str,
    core: AppCore,
    settings: Settings,
}

/// Runs the workshop until the console quits or SIGINT/SIGTERM.
pub async fn run(opts: Options, global: &Global, base: &Settings) -> Result<()> {
    let console = !opts.headless && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let log_level = base.log_level.clone();
    files::private_dir(&opts.dir).wrap_err_with(|| format!("cannot create {}", opts.dir.display()))?;
    let (_log, logs) = if console {
        let file = opts.dir.join("workshop.log");
        let (guard, logs) = logging::to_file_and_console(&log_level, &file)
            .wrap_err_with(|| format!("cannot open the log file {}", file.display()))?;
        (guard, Some(logs))
    } else {
        (logging::to_stderr(&log_level, base.log_format), None)
    };

    let mut desks = Vec::new();
    for ((name, _), port) in DESKS.iter().zip(opts.ports) {
        let settings = desk_settings(&opts.dir, name, port, &log_level, &opts.net)?;
        let core = AppCore::open(settings.clone())
            .await
            .wrap_err_with(|| format!("cannot open the {name} desk"))?;
        desks.push(Desk { name, core, settings });
    }
    let tokens = tokens(&opts.dir)?;
    for (i, me) in desks.iter().enumerate() {
        for (j, other) in desks.iter().enumerate() {
            if i == j {
                continue;
            }
            let token = |from: &str, to: &str| tokens.get(&link(from, to)).cloned().unwrap_or_default();
            let l = Link {
                other: other.name,
                other_address: other.settings.ilp.address.clone(),
                other_endpoint: format!("{}/ilp", opts.net.reach_url(opts.ports[j])),
                incoming_token: token(other.name, me.name),
                outgoing_token: token(me.name, other.name),
            };
            ensure_peer(&me.core.state.services, &l)
                .await
                .wrap_err_with(|| format!("cannot peer {} with {}", me.name, other.name))?;
        }
    }

    let mut class = None;
    if let [cloud, happy] = desks.as_slice()
        && opts.seats > 0
    {
        let bases = seats::Bases {
            cloud_nine: cloud.settings.public_url.clone(),
            happy_life: happy.settings.public_url.clone(),
        };
        let made = seats::provision(
            &opts.dir,
            opts.seats,
            &cloud.core.state.services,
            &happy.core.state.services,
            &bases,
        )
        .await
        .wrap_err("cannot seat the class")?;
        let handouts: Arc<dyn control::classroom::Handouts> = Arc::new(seats::SeatHandouts { dir: opts.dir.clone() });
        let both = [cloud.core.state.services.clone(), happy.core.state.services.clone()];
        for d in &both {
            d.room.seat(&both, handouts.clone());
        }
        let kept = if made.len() > usize::from(opts.seats) {
            format!(" ({} asked; the seats seated before are kept)", opts.seats)
        } else {
            String::new()
        };
        class = Some(format!(
            "{} seats{kept}: cards to print in {}; handouts at {} (the code on each card); \
             the class page for the projector at {}/workshop/class",
            made.len(),
            opts.dir.join("handout").join("index.html").display(),
            seats::handout_url(&bases),
            bases.happy_life,
        ));
    }

    let shutdown = CancellationToken::new();
    app::cancel_on_signals(shutdown.clone());
    // both ports first: a taken one stops the workshop before either desk serves
    let mut bound = Vec::new();
    for d in desks {
        let listener = app::bind(&d.settings).await?;
        bound.push((d, listener));
    }
    let mut servers = Vec::new();
    let mut shown = Vec::new();
    let mut lines = Vec::new();
    for (d, listener) in bound {
        let addr = listener.local_addr()?;
        lines.push(format!(
            "{}: {} (ILP {}, data dir {})",
            d.name,
            d.settings.public_url,
            d.settings.ilp.address,
            d.settings.paths.data_dir.display()
        ));
        tracing::info!(desk = d.name, public_url = %d.settings.public_url, "opdesk workshop serving on {addr}");
        shown.push((d.name.to_owned(), d.core.state.services.clone()));
        servers.push(tokio::spawn(app::serve(d.core, listener, shutdown.clone())));
    }

    let result = match logs {
        Some(logs) => {
            let desks: Desks<Arc<Services>> = Desks::new(shown)?;
            let opts = tui::Options {
                readonly: global.readonly,
                no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
                keys: base.keys.clone(),
                theme: base.theme.clone(),
                classroom: opts.seats > 0,
            };
            let r = tui::run(desks, opts, logs, shutdown.clone()).await;
            shutdown.cancel();
            r
        }
        None => {
            let mut out = std::io::stdout().lock();
            for l in lines.iter().chain(&class) {
                writeln!(out, "{l}")?;
            }
            writeln!(out, "opdesk workshop: serving both desks until Ctrl-C or SIGTERM")?;
            out.flush()?;
            drop(out);
            shutdown.cancelled().await;
            Ok(())
        }
    };
    for s in servers {
        s.await.wrap_err("a desk's server task failed")??;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_made_once_per_direction_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = tokens(dir.path()).unwrap();
        assert_eq!(
            first.keys().cloned().collect::<Vec<_>>(),
            ["cloud-nine->happy-life", "happy-life->cloud-nine"]
        );
        assert_ne!(first["cloud-nine->happy-life"], first["happy-life->cloud-nine"]);
        assert_eq!(tokens(dir.path()).unwrap(), first, "a second start peers the same way");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join("peering.json"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "private: {mode:o}");
        }
    }

    #[test]
    fn a_config_file_for_the_desks_is_named_and_one_for_the_console_passes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("base.toml");
        assert!(settings_for_desks(&f).unwrap().is_empty(), "no file");
        std::fs::write(&f, "").unwrap();
        assert!(settings_for_desks(&f).unwrap().is_empty());
        std::fs::write(&f, "log_level = \"debug\"\n[keys]\nquit = \"Q\"\n").unwrap();
        assert!(settings_for_desks(&f).unwrap().is_empty());
        std::fs::write(&f, "[gnap]\nauto_approve = true\n[consent]\ndecide = \"owner\"\n").unwrap();
        assert_eq!(settings_for_desks(&f).unwrap(), ["consent", "gnap"]);
    }

    #[test]
    fn a_desk_gets_its_ilp_address_once_and_keeps_the_operators_edits() {
        let dir = tempfile::tempdir().unwrap();
        let s = desk_settings(dir.path(), "cloud-nine", 4711, "warn", &Net::default()).unwrap();
        assert_eq!(s.ilp.address, "test.cloud-nine");
        assert_eq!(s.public_url, "http://127.0.0.1:4711");
        assert_eq!(s.paths.data_dir, dir.path().join("cloud-nine"));
        let config = dir.path().join("cloud-nine/config.toml");
        std::fs::write(&config, "[ilp]\naddress = \"test.elsewhere\"\n").unwrap();
        let s = desk_settings(dir.path(), "cloud-nine", 4712, "warn", &Net::default()).unwrap();
        assert_eq!((s.ilp.address.as_str(), s.listen.port()), ("test.elsewhere", 4712));
    }
}
