//! The command line: clap definitions, and the operator commands (`wallets`, `keys`, `deposit`, `withdraw`,
//! `balances`) that talk to a running instance through the admin API — or, when none answers, open the data
//! dir directly and call the same operations in-process. Output is a table, or JSON with `--json`.
//! This module and `main.rs` are the only places allowed to print (never while a console owns the terminal).
//! Everything printed for people goes through [`emit`] and [`table`], which strip control characters from
//! every cell and line: grants, payments and peers carry client- and peer-supplied text. `--json` output is
//! serde's, which escapes control characters.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use color_eyre::eyre::{Result, WrapErr, bail, eyre};
use serde::Serialize;

use crate::{
    admin::{AdminClient, ClientError},
    app::{self, AppCore},
    ase::peers::PeerPatch,
    control::{
        self,
        dto::{AddKey, CreateWallet, Move, NewPeer, PaymentFilter, PeerView, Reject},
    },
    gnap::service::GrantView,
    httpsig::jwk::Jwk,
    ledger::{Balance, Movement},
    money::{Value, format_minor},
    server::error::ApiError,
    settings::{Overrides, Settings},
    states::TokenState,
    text,
};

#[derive(Debug, Parser)]
#[command(
    name = "opdesk",
    about = "A terminal console that embeds a small Open Payments ASE",
    disable_version_flag = true
)]
pub struct Cli {
    /// Print the version and the resolved config, data and log paths.
    #[arg(short = 'V', long)]
    pub version: bool,
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Address to listen on (default 127.0.0.1:4000).
    #[arg(long, global = true, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Public base URL ids are built from (default: derived from --listen).
    #[arg(long, global = true, value_name = "URL")]
    pub public_url: Option<String>,
    /// Data directory (database, admin token, demo keys).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Log filter, e.g. info or opdesk=debug.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Config file to use instead of config.toml in the config dir.
    #[arg(long, global = true, value_name = "FILE", env = "OPDESK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Console: hide and refuse every action that changes something (approve, reject, complete, …).
    #[arg(long, global = true)]
    pub readonly: bool,
}

impl Global {
    pub fn overrides(&self) -> Overrides {
        Overrides {
            config_required: self.config.is_some(),
            config: self.config.clone(),
            listen: self.listen.clone(),
            public_url: self.public_url.clone(),
            data_dir: self.data_dir.clone(),
            log_level: self.log_level.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server headless (logs to stderr) until Ctrl-C or SIGTERM.
    Serve,
    /// Drive the demo scenario against a running instance (grants, payments, failures to watch).
    Demo,
    /// List, create and show wallet addresses.
    #[command(subcommand)]
    Wallets(WalletsCmd),
    /// Manage the public keys a wallet address publishes in its JWKS.
    #[command(subcommand)]
    Keys(KeysCmd),
    /// Credit a wallet from the ASE's settlement account (amount in minor units, e.g. 1000 = 10.00 USD).
    Deposit(MoveArgs),
    /// Debit a wallet to the ASE's settlement account (amount in minor units).
    Withdraw(MoveArgs),
    /// Show every account's balance.
    Balances,
    /// Grants: the consent queue and issued grants. You act as the resource owner.
    #[command(subcommand)]
    Grants(GrantsCmd),
    /// Incoming payments: list, show, complete.
    #[command(subcommand)]
    Incoming(IncomingCmd),
    /// Outgoing payments: list (e.g. only failed ones) and show.
    #[command(subcommand)]
    Outgoing(OutgoingCmd),
    /// Quotes: list and show.
    #[command(subcommand)]
    Quotes(QuotesCmd),
    /// ILP peers: who may send to /ilp, where payments to other ASEs go (config.toml or added here).
    #[command(subcommand)]
    Peers(PeersCmd),
}

#[derive(Debug, Subcommand)]
pub enum PeersCmd {
    /// List the peers (tokens are never shown) with their account balances.
    List,
    /// Show one peer.
    Show { name: String },
    /// Add a peer (stored in the database; `[[ilp.peers]]` in config.toml is the other way).
    Add {
        name: String,
        /// The link's asset code, e.g. USD.
        #[arg(long)]
        asset: String,
        /// The link's asset scale.
        #[arg(long, default_value_t = 2)]
        scale: u8,
        #[command(flatten)]
        fields: PeerFields,
    },
    /// Change a peer added with `peers add` (flags not given stay as they are).
    Update {
        name: String,
        #[command(flatten)]
        fields: PeerFields,
        /// Forget the peer's ILP address.
        #[arg(long, conflicts_with = "ilp_address")]
        no_ilp_address: bool,
        /// Stop sending through the peer (forget its outgoing endpoint and token).
        #[arg(long, conflicts_with_all = ["outgoing_endpoint", "outgoing_token", "route"])]
        no_outgoing: bool,
        /// Remove the packet limit.
        #[arg(long, conflicts_with = "max_packet_amount")]
        no_max_packet_amount: bool,
    },
    /// Remove a peer added with `peers add` (refused while payments are sending through it).
    Remove { name: String },
}

/// What `peers add` and `peers update` set.
#[derive(Debug, Clone, Args)]
pub struct PeerFields {
    /// The peer's own ILP address (told to it by IL-DCP; its route when no --route is given).
    #[arg(long)]
    pub ilp_address: Option<String>,
    /// A token the peer presents at POST /ilp (repeat for several; on update, replaces them all).
    #[arg(long = "incoming-token", value_name = "TOKEN")]
    pub incoming_tokens: Vec<String>,
    /// Generate an incoming token and print it once (give it to the peer).
    #[arg(long)]
    pub generate_incoming_token: bool,
    /// The peer's ILP-over-HTTP endpoint, for payments we send through it.
    #[arg(long)]
    pub outgoing_endpoint: Option<String>,
    /// The bearer token we present at the outgoing endpoint.
    #[arg(long)]
    pub outgoing_token: Option<String>,
    /// An ILP address prefix reached through the peer (repeat for several; on update, replaces them all).
    #[arg(long)]
    pub route: Vec<String>,
    /// The largest packet amount, in the link's minor units.
    #[arg(long)]
    pub max_packet_amount: Option<u64>,
}

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Only this wallet's.
    #[arg(long)]
    pub wallet: Option<String>,
    /// Continue after this id (the previous page's next cursor).
    #[arg(long)]
    pub cursor: Option<String>,
    /// How many (default 50).
    #[arg(long)]
    pub first: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum IncomingCmd {
    /// List incoming payments, newest first.
    List {
        #[command(flatten)]
        list: ListArgs,
        /// pending, completed or expired.
        #[arg(long)]
        state: Option<String>,
    },
    /// Show one (id or URL).
    Show { id: String },
    /// Complete a pending incoming payment: it accepts no more money.
    Complete { id: String },
}

#[derive(Debug, Subcommand)]
pub enum OutgoingCmd {
    /// List outgoing payments, newest first.
    List {
        #[command(flatten)]
        list: ListArgs,
        /// sending, completed, failed or cancelled.
        #[arg(long)]
        state: Option<String>,
    },
    /// Show one (id or URL), with its failure reason if it failed.
    Show { id: String },
    /// Cancel a payment that has not sent anything yet; its reservation is released.
    Cancel { id: String },
    /// Retry a failed payment (a new attempt) when its quote and receiver still allow it.
    Retry { id: String },
}

#[derive(Debug, Subcommand)]
pub enum QuotesCmd {
    /// List quotes, newest first.
    List {
        #[command(flatten)]
        list: ListArgs,
    },
    /// Show one (id or URL).
    Show { id: String },
}

#[derive(Debug, Subcommand)]
pub enum GrantsCmd {
    /// List grants, newest first.
    List {
        /// pending, approved, finalized, rejected, revoked or expired.
        #[arg(long)]
        state: Option<String>,
    },
    /// Show a grant: who asks for what, in plain words, and its tokens.
    Show { id: String },
    /// Approve a pending grant as the resource owner.
    Approve { id: String },
    /// Reject a pending grant, optionally saying why.
    Reject {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Revoke a grant and all its tokens.
    Revoke { id: String },
}

#[derive(Debug, Subcommand)]
pub enum WalletsCmd {
    /// List wallet addresses.
    List,
    /// Create a wallet address.
    Create {
        name: String,
        /// Asset code, e.g. USD.
        #[arg(long)]
        asset: String,
        /// Asset scale (decimal places of the minor unit).
        #[arg(long, default_value_t = 2)]
        scale: u8,
        /// Name shown to payers.
        #[arg(long)]
        public_name: Option<String>,
    },
    /// Show a wallet address with its keys and balance.
    Show { name: String },
}

#[derive(Debug, Subcommand)]
pub enum KeysCmd {
    /// List a wallet's published keys.
    List { wallet: String },
    /// Register a public Ed25519 JWK (JSON text, or @FILE).
    Add {
        wallet: String,
        #[arg(long, value_name = "JSON|@FILE")]
        jwk: String,
    },
    /// Generate a key pair, publish the public key and write the private key (PKCS#8 PEM).
    Generate {
        wallet: String,
        /// File for the private key (default: print it).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Remove a key by its kid.
    Remove { wallet: String, kid: String },
}

#[derive(Debug, Args)]
pub struct MoveArgs {
    pub wallet: String,
    /// Amount in the wallet's minor units (digits only).
    pub amount: String,
    /// Idempotency id: the same id is applied once.
    #[arg(long)]
    pub id: Option<String>,
}

/// Prints the version and resolved paths.
pub fn print_version(settings: &Settings) {
    println!("opdesk {}", env!("CARGO_PKG_VERSION"));
    println!("config:   {}", settings.paths.config_file.display());
    println!("data:     {}", settings.paths.data_dir.display());
    println!("database: {}", settings.paths.database().display());
    println!("log:      {}", settings.paths.log_file.display());
}

/// Where operator commands go.
enum Backend {
    Remote(AdminClient),
    Local(Box<AppCore>),
}

impl Backend {
    async fn connect(settings: &Settings) -> Result<Self> {
        let token = app::read_admin_token(&settings.paths.admin_token());
        let mut addr = settings.listen;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        if let Some(token) = token {
            let client = AdminClient::new(&format!("http://{addr}"), &token)?;
            match client.balances().await {
                Ok(_) => return Ok(Self::Remote(client)),
                Err(ClientError::Unreachable(_)) => {}
                Err(e) => return Err(eyre!(e)),
            }
        }
        tracing::info!("no server answers on {addr}; using the data dir directly");
        Ok(Self::Local(Box::new(AppCore::open(settings.clone()).await?)))
    }
}

/// An offline command's error, worded as the admin API would answer it.
fn api(e: control::Error) -> color_eyre::Report {
    let e = ApiError::from(e);
    eyre!("{} ({}, HTTP {})", e.description, e.code, e.status.as_u16())
}

macro_rules! dispatch {
    ($backend:expr, $remote:ident => $r:expr, $local:ident => $l:expr) => {
        match $backend {
            Backend::Remote($remote) => $r.await.map_err(|e| eyre!(e)),
            Backend::Local($local) => $l.await.map_err(api),
        }
    };
}

/// Runs an operator command.
pub async fn run_operator(cmd: Command, settings: Settings, json: bool) -> Result<()> {
    let backend = Backend::connect(&settings).await?;
    let result = operate(&backend, cmd, json).await;
    if let Backend::Local(core) = &backend {
        core.close();
    }
    result
}

async fn operate(b: &Backend, cmd: Command, json: bool) -> Result<()> {
    match cmd {
        Command::Serve | Command::Demo => bail!("not an operator command"),
        Command::Wallets(WalletsCmd::List) => {
            let ws = dispatch!(b, c => c.list_wallets(), l => control::list_wallets(&l.state))?;
            emit(json, &ws, || {
                table(
                    &["NAME", "ASSET", "URL", "PUBLIC NAME", "DEMO"],
                    ws.iter()
                        .map(|w| {
                            vec![
                                w.name.clone(),
                                format!("{}/{}", w.asset_code, w.asset_scale),
                                w.url.clone(),
                                w.public_name.clone().unwrap_or_default(),
                                if w.demo { "demo".into() } else { String::new() },
                            ]
                        })
                        .collect(),
                )
            })
        }
        Command::Wallets(WalletsCmd::Create {
            name,
            asset,
            scale,
            public_name,
        }) => {
            let body = CreateWallet {
                name,
                asset_code: asset,
                asset_scale: scale,
                public_name,
            };
            let w = dispatch!(b, c => c.create_wallet(&body), l => control::create_wallet(&l.state, body.clone()))?;
            emit(json, &w, || {
                format!("created {} ({}/{})\n", w.url, w.asset_code, w.asset_scale)
            })
        }
        Command::Wallets(WalletsCmd::Show { name }) => {
            let d = dispatch!(b, c => c.show_wallet(&name), l => control::show_wallet(&l.state, &name))?;
            emit(json, &d, || {
                let mut out = format!(
                    "{}\n  asset:     {}/{}\n  balance:   {}\n  available: {}\n  keys:\n",
                    d.wallet.url,
                    d.wallet.asset_code,
                    d.wallet.asset_scale,
                    money(d.balance.balance, &d.balance),
                    money(d.balance.available, &d.balance),
                );
                for k in &d.keys {
                    out.push_str(&format!("    {}\n", k.kid));
                }
                out
            })
        }
        Command::Keys(KeysCmd::List { wallet }) => {
            let ks = dispatch!(b, c => c.list_keys(&wallet), l => control::list_keys(&l.state, &wallet))?;
            emit(json, &ks, || {
                table(
                    &["KID", "ALG", "X"],
                    ks.keys
                        .iter()
                        .map(|k| vec![k.kid.clone(), k.alg.clone(), k.x.clone()])
                        .collect(),
                )
            })
        }
        Command::Keys(KeysCmd::Add { wallet, jwk }) => {
            let text = match jwk.strip_prefix('@') {
                Some(path) => std::fs::read_to_string(path).wrap_err_with(|| format!("cannot read {path}"))?,
                None => jwk,
            };
            let jwk: Jwk = serde_json::from_str(&text).wrap_err("--jwk is not a JWK")?;
            let body = AddKey {
                jwk: Some(jwk),
                generate: false,
            };
            let k =
                dispatch!(b, c => c.add_key(&wallet, &body), l => control::add_key(&l.state, &wallet, body.clone()))?;
            emit(json, &k, || format!("added key {} to {wallet}\n", k.jwk.kid))
        }
        Command::Keys(KeysCmd::Generate { wallet, out }) => {
            let body = AddKey {
                jwk: None,
                generate: true,
            };
            let k =
                dispatch!(b, c => c.add_key(&wallet, &body), l => control::add_key(&l.state, &wallet, body.clone()))?;
            let pem = k
                .private_key_pem
                .clone()
                .ok_or_else(|| eyre!("the server returned no private key"))?;
            match out {
                Some(path) => {
                    crate::files::write_private(&path, pem.as_bytes())
                        .wrap_err_with(|| format!("cannot write {}", path.display()))?;
                    emit(json, &k.jwk, || {
                        format!(
                            "added key {} to {wallet}; private key in {}\n",
                            k.jwk.kid,
                            path.display()
                        )
                    })
                }
                None => emit(json, &k, || {
                    format!("added key {} to {wallet}; private key (shown once):\n{pem}", k.jwk.kid)
                }),
            }
        }
        Command::Keys(KeysCmd::Remove { wallet, kid }) => {
            dispatch!(b, c => c.remove_key(&wallet, &kid), l => control::remove_key(&l.state, &wallet, &kid))?;
            emit(json, &serde_json::json!({"removed": kid}), || {
                format!("removed key {kid} from {wallet}\n")
            })
        }
        Command::Grants(g) => grants(b, g, json).await,
        Command::Incoming(c) => incoming(b, c, json).await,
        Command::Outgoing(c) => outgoing(b, c, json).await,
        Command::Quotes(c) => quotes(b, c, json).await,
        Command::Peers(PeersCmd::Show { name }) => {
            let p = dispatch!(b, c => c.show_peer(&name), l => control::show_peer(&l.state, &name))?;
            emit(json, &p, || peer_text(&p))
        }
        Command::Peers(PeersCmd::Add {
            name,
            asset,
            scale,
            fields,
        }) => {
            let body = NewPeer {
                name,
                ilp_address: fields.ilp_address,
                asset_code: asset,
                asset_scale: scale,
                incoming_tokens: fields.incoming_tokens,
                generate_incoming_token: fields.generate_incoming_token,
                outgoing_endpoint: fields.outgoing_endpoint,
                outgoing_token: fields.outgoing_token,
                routes: fields.route,
                max_packet_amount: fields.max_packet_amount,
            };
            let p = dispatch!(b, c => c.create_peer(&body), l => control::create_peer(&l.state, body.clone()))?;
            emit(json, &p, || peer_text(&p))
        }
        Command::Peers(PeersCmd::Update {
            name,
            fields,
            no_ilp_address,
            no_outgoing,
            no_max_packet_amount,
        }) => {
            let patch = PeerPatch {
                ilp_address: if no_ilp_address {
                    Some(None)
                } else {
                    fields.ilp_address.map(Some)
                },
                incoming_tokens: (!fields.incoming_tokens.is_empty()).then_some(fields.incoming_tokens),
                generate_incoming_token: fields.generate_incoming_token,
                outgoing_endpoint: if no_outgoing {
                    Some(None)
                } else {
                    fields.outgoing_endpoint.map(Some)
                },
                outgoing_token: if no_outgoing {
                    Some(None)
                } else {
                    fields.outgoing_token.map(Some)
                },
                routes: if no_outgoing {
                    Some(Vec::new())
                } else {
                    (!fields.route.is_empty()).then_some(fields.route)
                },
                max_packet_amount: if no_max_packet_amount {
                    Some(None)
                } else {
                    fields.max_packet_amount.map(Some)
                },
            };
            let p = dispatch!(b, c => c.update_peer(&name, &patch), l => control::update_peer(&l.state, &name, patch.clone()))?;
            emit(json, &p, || peer_text(&p))
        }
        Command::Peers(PeersCmd::Remove { name }) => {
            dispatch!(b, c => c.remove_peer(&name), l => control::remove_peer(&l.state, &name))?;
            emit(json, &serde_json::json!({ "removed": name }), || {
                format!("removed peer {name}\n")
            })
        }
        Command::Peers(PeersCmd::List) => {
            let ps = dispatch!(b, c => c.list_peers(), l => control::list_peers(&l.state))?;
            emit(json, &ps, || {
                let rows = ps
                    .iter()
                    .map(|p| {
                        vec![
                            p.name.clone(),
                            format!("{}/{}", p.asset_code, p.asset_scale),
                            p.source.clone(),
                            if p.receives {
                                format!(
                                    "yes ({} token{})",
                                    p.incoming_tokens,
                                    if p.incoming_tokens == 1 { "" } else { "s" }
                                )
                            } else {
                                "no".into()
                            },
                            p.outgoing_endpoint.clone().unwrap_or_default(),
                            p.routes.join(","),
                            format_minor(p.peer_account_balance.into(), p.asset_scale),
                        ]
                    })
                    .collect();
                table(
                    &["NAME", "ASSET", "SOURCE", "RECEIVES", "SENDS TO", "ROUTES", "BALANCE"],
                    rows,
                )
            })
        }
        Command::Deposit(m) => move_funds(b, m, Movement::Deposit, json).await,
        Command::Withdraw(m) => move_funds(b, m, Movement::Withdrawal, json).await,
        Command::Balances => {
            let bs = dispatch!(b, c => c.balances(), l => control::balances(&l.state))?;
            emit(json, &bs, || {
                table(
                    &["ACCOUNT", "KIND", "ASSET", "BALANCE", "RESERVED", "AVAILABLE"],
                    bs.iter()
                        .map(|x| {
                            vec![
                                x.wallet.clone().unwrap_or_else(|| match &x.peer {
                                    Some(peer) => format!("(peer {peer})"),
                                    None => format!("({})", x.kind),
                                }),
                                x.kind.clone(),
                                format!("{}/{}", x.asset_code, x.asset_scale),
                                format_minor(x.balance.into(), x.asset_scale),
                                format_minor(x.pending_debits.into(), x.asset_scale),
                                format_minor(x.available.into(), x.asset_scale),
                            ]
                        })
                        .collect(),
                )
            })
        }
    }
}

/// An id from an id or a resource URL.
fn id_of(s: &str) -> String {
    s.trim_end_matches('/').rsplit('/').next().unwrap_or(s).to_owned()
}

fn filter(list: ListArgs, state: Option<String>) -> PaymentFilter {
    PaymentFilter {
        wallet: list.wallet,
        state,
        cursor: list.cursor,
        first: list.first,
    }
}

fn next_page(next: &Option<String>) -> String {
    next.as_ref()
        .map(|c| format!("(more: --cursor {c})\n"))
        .unwrap_or_default()
}

async fn incoming(b: &Backend, cmd: IncomingCmd, json: bool) -> Result<()> {
    let one = match cmd {
        IncomingCmd::List { list, state } => {
            let f = filter(list, state);
            let l = dispatch!(b, c => c.list_incoming(&f), l => control::list_incoming(&l.state, f.clone()))?;
            return emit(json, &l, || {
                let rows = l
                    .items
                    .iter()
                    .map(|p| {
                        vec![
                            id_of(&p.payment.id),
                            p.wallet.clone(),
                            p.state.to_string(),
                            p.payment.received_amount.to_string(),
                            p.payment
                                .incoming_amount
                                .as_ref()
                                .map(ToString::to_string)
                                .unwrap_or_else(|| "open".into()),
                            p.payment.expires_at.clone().unwrap_or_default(),
                        ]
                    })
                    .collect();
                table(&["ID", "WALLET", "STATE", "RECEIVED", "EXPECTED", "EXPIRES"], rows) + &next_page(&l.next_cursor)
            });
        }
        IncomingCmd::Show { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.show_incoming(&id), l => control::show_incoming(&l.state, &id))?
        }
        IncomingCmd::Complete { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.complete_incoming(&id), l => control::complete_incoming(&l.state, &id))?
        }
    };
    emit(json, &one, || {
        let mut out = format!(
            "{}  [{}]\n  wallet:   {}\n  received: {} of {}\n  expires:  {}\n  client:   {}\n",
            one.payment.id,
            one.state,
            one.payment.wallet_address,
            one.payment.received_amount,
            one.payment
                .incoming_amount
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_else(|| "an open amount".into()),
            one.payment.expires_at.clone().unwrap_or_else(|| "never".into()),
            one.client.clone().unwrap_or_else(|| "(operator)".into()),
        );
        out.push_str(&metadata_line("metadata: ", one.payment.metadata.as_ref()));
        out
    })
}

/// The client's metadata as one line of JSON (control characters escaped), if there is any.
fn metadata_line(label: &str, m: Option<&serde_json::Value>) -> String {
    m.map(|m| format!("  {label}{m}\n")).unwrap_or_default()
}

async fn outgoing(b: &Backend, cmd: OutgoingCmd, json: bool) -> Result<()> {
    let one = match cmd {
        OutgoingCmd::List { list, state } => {
            let f = filter(list, state);
            let l = dispatch!(b, c => c.list_outgoing(&f), l => control::list_outgoing(&l.state, f.clone()))?;
            return emit(json, &l, || {
                let rows = l
                    .items
                    .iter()
                    .map(|p| {
                        vec![
                            id_of(&p.payment.id),
                            p.wallet.clone(),
                            p.state.to_string(),
                            p.payment.sent_amount.to_string(),
                            p.payment.debit_amount.to_string(),
                            p.failure_reason.clone().unwrap_or_default(),
                        ]
                    })
                    .collect();
                table(&["ID", "WALLET", "STATE", "SENT", "DEBIT", "FAILURE"], rows) + &next_page(&l.next_cursor)
            });
        }
        OutgoingCmd::Show { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.show_outgoing(&id), l => control::show_outgoing(&l.state, &id))?
        }
        OutgoingCmd::Cancel { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.cancel_outgoing(&id), l => control::cancel_outgoing(&l.state, &id))?
        }
        OutgoingCmd::Retry { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.retry_outgoing(&id), l => control::retry_outgoing(&l.state, &id))?
        }
    };
    emit(json, &one, || {
        let mut out = format!(
            "{}  [{}]\n  from:      {}\n  to:        {}\n  debit:     {}\n  receive:   {}\n  sent:      {}\n  delivered: {}\n  attempts:  {}\n  created:   {}\n  updated:   {}\n",
            one.payment.id,
            one.state,
            one.payment.wallet_address,
            one.payment.receiver,
            one.payment.debit_amount,
            one.payment.receive_amount,
            one.payment.sent_amount,
            one.delivered_amount,
            one.attempts,
            one.payment.created_at,
            one.updated_at,
        );
        if let Some(r) = &one.failure_reason {
            out.push_str(&format!(
                "  failure:   {r}: {}\n",
                one.failure_message.clone().unwrap_or_default()
            ));
        }
        out.push_str(&metadata_line("metadata:  ", one.payment.metadata.as_ref()));
        out
    })
}

async fn quotes(b: &Backend, cmd: QuotesCmd, json: bool) -> Result<()> {
    let one = match cmd {
        QuotesCmd::List { list } => {
            let f = filter(list, None);
            let l = dispatch!(b, c => c.list_quotes(&f), l => control::list_quotes(&l.state, f.clone()))?;
            return emit(json, &l, || {
                let rows = l
                    .items
                    .iter()
                    .map(|q| {
                        vec![
                            id_of(&q.id),
                            id_of(&q.wallet_address),
                            q.debit_amount.to_string(),
                            q.receive_amount.to_string(),
                            q.expires_at.clone(),
                        ]
                    })
                    .collect();
                table(&["ID", "WALLET", "DEBIT", "RECEIVE", "EXPIRES"], rows) + &next_page(&l.next_cursor)
            });
        }
        QuotesCmd::Show { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.show_quote(&id), l => control::show_quote(&l.state, &id))?
        }
    };
    emit(json, &one, || {
        format!(
            "{}\n  from:    {}\n  to:      {}\n  debit:   {}\n  receive: {}\n  expires: {}\n",
            one.id, one.wallet_address, one.receiver, one.debit_amount, one.receive_amount, one.expires_at
        )
    })
}

fn grant_text(g: &GrantView) -> String {
    let mut out = format!("grant {}  [{}]\n", g.id, g.state);
    for line in &g.description {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(f) = &g.finish_uri {
        out.push_str(&format!("  finish: {f}\n"));
    }
    if let Some(r) = &g.decision_reason {
        out.push_str(&format!("  reason: {r}\n"));
    }
    for t in &g.tokens {
        let state = TokenState::of(t.revoked_at.is_some());
        out.push_str(&format!("  token {} {state}, expires {}\n", t.hint, t.expires_at));
    }
    out
}

async fn grants(b: &Backend, cmd: GrantsCmd, json: bool) -> Result<()> {
    let one = match cmd {
        GrantsCmd::List { state } => {
            let gs =
                dispatch!(b, c => c.list_grants(state.as_deref()), l => control::list_grants(&l.state, state.clone()))?;
            return emit(json, &gs, || {
                table(
                    &["ID", "STATE", "CLIENT", "ACCESS", "CREATED"],
                    gs.iter()
                        .map(|g| {
                            vec![
                                g.id.clone(),
                                g.state.to_string(),
                                g.client_name.clone().unwrap_or_else(|| g.client.clone()),
                                g.access.iter().map(|a| a.type_name()).collect::<Vec<_>>().join(","),
                                g.created_at.clone(),
                            ]
                        })
                        .collect(),
                )
            });
        }
        GrantsCmd::Show { id } => dispatch!(b, c => c.show_grant(&id), l => control::show_grant(&l.state, &id))?,
        GrantsCmd::Approve { id } => {
            dispatch!(b, c => c.approve_grant(&id), l => control::approve_grant(&l.state, &id))?
        }
        GrantsCmd::Reject { id, reason } => {
            let body = Reject { reason };
            dispatch!(b, c => c.reject_grant(&id, &body), l => control::reject_grant(&l.state, &id, body.clone()))?
        }
        GrantsCmd::Revoke { id } => dispatch!(b, c => c.revoke_grant(&id), l => control::revoke_grant(&l.state, &id))?,
    };
    emit(json, &one, || grant_text(&one))
}

async fn move_funds(b: &Backend, m: MoveArgs, movement: Movement, json: bool) -> Result<()> {
    let value = Value::parse(&m.amount).wrap_err("the amount must be whole minor units, e.g. 1000 for 10.00")?;
    let body = Move {
        value,
        asset_code: None,
        asset_scale: None,
        transfer_id: m.id,
    };
    let wallet = m.wallet;
    let moved = match movement {
        Movement::Deposit => {
            dispatch!(b, c => c.deposit(&wallet, &body), l => control::move_funds(&l.state, &wallet, body.clone(), movement))?
        }
        Movement::Withdrawal => {
            dispatch!(b, c => c.withdraw(&wallet, &body), l => control::move_funds(&l.state, &wallet, body.clone(), movement))?
        }
    };
    let verb = if movement == Movement::Deposit {
        "deposited"
    } else {
        "withdrew"
    };
    emit(json, &moved, || {
        format!(
            "{verb} {} {} {wallet}; balance {}\n",
            money(moved.transfer.amount, &moved.balance),
            if movement == Movement::Deposit { "to" } else { "from" },
            money(moved.balance.balance, &moved.balance)
        )
    })
}

fn money(v: i64, b: &Balance) -> String {
    let asset = crate::money::Asset {
        code: b.asset_code.clone(),
        scale: b.asset_scale,
    };
    asset.format(v.into())
}

/// One peer, for people; a generated token is printed once, with what to do with it.
fn peer_text(p: &PeerView) -> String {
    let mut out = format!(
        "{} ({})\n  asset:           {}/{}\n  ILP address:     {}\n  incoming tokens: {}\n  sends to:        {}\n  routes:          {}\n  max packet:      {}\n  balance:         {}\n",
        p.name,
        p.source,
        p.asset_code,
        p.asset_scale,
        p.ilp_address.as_deref().unwrap_or("-"),
        p.incoming_tokens,
        p.outgoing_endpoint.as_deref().unwrap_or("-"),
        if p.routes.is_empty() {
            "-".into()
        } else {
            p.routes.join(", ")
        },
        p.max_packet_amount.map_or_else(|| "no limit".into(), |m| m.to_string()),
        format_minor(p.peer_account_balance.into(), p.asset_scale),
    );
    for t in &p.generated_incoming_tokens {
        out.push_str(&format!(
            "  generated incoming token (shown once; the peer sends it as its bearer token to our /ilp):\n    {t}\n"
        ));
    }
    out
}

/// Prints `value` as JSON, or the text `human` builds with control characters stripped from every line.
fn emit<T: Serialize>(json: bool, value: &T, human: impl FnOnce() -> String) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", text::sanitize_lines(&human()));
    }
    Ok(())
}

/// Renders rows as left-aligned columns separated by two spaces; cells are sanitised before they are
/// measured, so hostile text neither reaches the terminal nor skews the columns.
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.iter().map(|c| text::sanitize(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join("  ");
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(headers.iter().map(|h| (*h).to_owned()).collect());
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let t = table(&["A", "BB"], vec![vec!["xxx".into(), "y".into()]]);
        assert_eq!(t, "A    BB\nxxx  y\n");
    }

    #[test]
    fn table_cells_are_sanitised_before_measuring() {
        let t = table(&["A", "B"], vec![vec!["x\u{1b}[2J\u{7}".into(), "y\u{9b}\nz".into()]]);
        assert_eq!(t, "A     B\nx[2J  yz\n");
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let c = Cli::try_parse_from(["opdesk", "wallets", "create", "dave", "--asset", "USD", "--json"]).unwrap();
        assert!(c.global.json);
        assert!(matches!(
            c.command,
            Some(Command::Wallets(WalletsCmd::Create { scale: 2, .. }))
        ));
    }
}
