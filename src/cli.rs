//! The command line: clap definitions, and the entry points of the operator commands (`wallets`, `keys`,
//! `deposit`, `withdraw`, `balances`, `grants`, payments, `peers`, `webhooks`), which talk to a running instance
//! through the admin API — or, when none answers, open the data dir directly and run the same commands and
//! queries in-process ([`Backend`]: `run(Command)` and `ask(Query)` either way); and `backup`, which copies the
//! database file on the server's host whether or not a server runs. Each noun group's commands live in a
//! submodule; output is a table or a card, or JSON with `--json`. This module and `main.rs` are the only places allowed to print (never
//! while a console owns the terminal). Everything printed for people goes through [`print`], which strips
//! control characters from every cell and line: grants, payments and peers carry client- and peer-supplied
//! text. `--json` output is serde's, which escapes control characters.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod backup;
mod classroom;
mod grants;

pub use grants::GrantsCmd;
mod payments;
mod peers;
mod print;
mod requests;
mod wallets;
mod webhooks;

use std::{io::Write as _, path::PathBuf, sync::Arc, time::Duration};

use clap::{Args, Parser, Subcommand};
use color_eyre::eyre::{Result, bail};

use crate::{
    admin::{self, AdminClient, Holder},
    app::{self, AppCore},
    clock::SystemClock,
    control,
    ledger::Movement,
    server::error::ApiError,
    settings::{Overrides, Settings},
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
    /// How logs on stderr look: text lines, or JSON lines (one object per line, e.g. for journald).
    #[arg(
        long,
        global = true,
        value_name = "FORMAT",
        value_parser = clap::builder::PossibleValuesParser::new(crate::logging::LogFormat::NAMES)
    )]
    pub log_format: Option<String>,
    /// Serve HTTPS with this certificate chain (PEM); goes with --tls-key. Sets tls.cert.
    #[arg(long, global = true, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert. Sets tls.key.
    #[arg(long, global = true, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Config file to use instead of config.toml in the config dir.
    #[arg(long, global = true, value_name = "FILE", env = "OPDESK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Console: hide and refuse every action that changes something (approve, reject, complete, …).
    #[arg(long, global = true)]
    pub readonly: bool,
    /// Operator commands: the server to command, by its base URL (e.g. through an SSH tunnel), instead of the
    /// one that holds the data dir. Needs the admin token: --token-file or OPDESK_ADMIN_TOKEN.
    #[arg(long, global = true, value_name = "URL")]
    pub connect: Option<String>,
    /// The file holding the admin token of the server named by --connect.
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Keep the ASE's state in this PostgreSQL database (postgres://…) instead of the data dir's SQLite file;
    /// every node of one ASE names the same one. Sets store.url.
    #[arg(long, global = true, value_name = "URL")]
    pub database: Option<String>,
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
            log_format: self.log_format.clone(),
            // relative to the current directory, as paths on a command line are (config.toml's are relative to
            // the data dir)
            tls_cert: self.tls_cert.as_deref().map(absolute),
            tls_key: self.tls_key.as_deref().map(absolute),
            database: self.database.clone(),
        }
    }
}

fn absolute(p: &std::path::Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server headless (logs to stderr) until Ctrl-C or SIGTERM.
    Serve,
    /// Drive the demo scenario against a running instance (grants, payments, failures to watch); with --to
    /// or --workshop, one payment from alice here to a wallet on another ASE, over ILP.
    Demo(DemoArgs),
    /// Two ASEs in one command, peered over ILP: cloud-nine (127.0.0.1:4000) and happy-life
    /// (127.0.0.1:4100), each a data dir under DIR, with one console over both (F2 switches desks). Without
    /// a terminal, or with --headless, it serves until Ctrl-C or SIGTERM.
    Workshop(WorkshopArgs),
    /// Copy the database to FILE, consistently, while the server keeps serving (run it on the server's host).
    Backup(BackupArgs),
    /// Bring the database's schema to this opdesk's version and say which it was (servers migrate at their
    /// start too): before rolling a new version out to nodes on PostgreSQL, say. A schema newer than this
    /// opdesk is refused.
    Migrate,
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
    /// Webhook deliveries: list them (e.g. the dead ones) and re-drive them.
    #[command(subcommand)]
    Webhooks(WebhooksCmd),
    /// A workshop's class: each seat's steps and what it does next (a desk of a running workshop: the whole class).
    Classroom,
    /// Print a shell completion script, e.g. `opdesk completions bash > ~/.local/share/bash-completion/completions/opdesk`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The running server's recent requests, with the signature debugger's report of a signed one.
    #[command(subcommand)]
    Requests(RequestsCmd),
    /// HTTP message signatures: explain a saved request's signature (no server needed).
    #[command(subcommand)]
    Sig(SigCmd),
}

#[derive(Debug, Subcommand)]
pub enum RequestsCmd {
    /// List the server's recent requests, newest first.
    List {
        /// Continue after this request id (from the previous page).
        #[arg(long)]
        cursor: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Show one request: its summary and, when signed, the signature report (components, parameters, key,
    /// digest, the signature base the server built, the verdict and every reason).
    Show { id: String },
}

#[derive(Debug, Subcommand)]
pub enum SigCmd {
    /// Print the signature base and verdict of a raw HTTP/1.1 request saved from your client (request line,
    /// headers, blank line, body). Exit 0 when it verifies (or with no --jwks), 1 when it does not.
    Explain(SigExplainArgs),
}

#[derive(Debug, Args)]
pub struct SigExplainArgs {
    /// The saved request.
    pub file: PathBuf,
    /// Check the signature with the key named by `keyid` in this JWKS (an http(s) URL or a file).
    #[arg(long, value_name = "URL|FILE")]
    pub jwks: Option<String>,
    /// The time to check `created` against (unix seconds; default now).
    #[arg(long, value_name = "UNIX")]
    pub now: Option<i64>,
    /// The scheme of `@target-uri` for an origin-form request target (`/path` plus Host).
    #[arg(long, default_value = "https", value_parser = ["https", "http"])]
    pub scheme: String,
}

impl Command {
    /// Whether the command changes something (and so says which way it went).
    pub fn changes_something(&self) -> bool {
        match self {
            Command::Serve
            | Command::Demo(_)
            | Command::Workshop(_)
            | Command::Backup(_)
            | Command::Migrate
            | Command::Completions { .. }
            | Command::Balances
            | Command::Classroom
            | Command::Quotes(_)
            | Command::Requests(_)
            | Command::Sig(_) => false,
            Command::Deposit(_) | Command::Withdraw(_) => true,
            Command::Wallets(c) => matches!(c, WalletsCmd::Create { .. }),
            Command::Keys(c) => !matches!(c, KeysCmd::List { .. }),
            Command::Grants(c) => !matches!(c, GrantsCmd::List { .. } | GrantsCmd::Show { .. }),
            Command::Incoming(c) => matches!(c, IncomingCmd::Complete { .. }),
            Command::Outgoing(c) => matches!(c, OutgoingCmd::Cancel { .. } | OutgoingCmd::Retry { .. }),
            Command::Peers(c) => !matches!(c, PeersCmd::List | PeersCmd::Show { .. }),
            Command::Webhooks(c) => matches!(c, WebhooksCmd::Retry { .. }),
        }
    }
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Pay this wallet address on another ASE (e.g. http://127.0.0.1:4100/bob) from alice on this one, over
    /// ILP, instead of running the scenario. The grant waits for your approval in this ASE's console.
    #[arg(long, value_name = "WALLET_URL", conflicts_with = "workshop")]
    pub to: Option<String>,
    /// The workshop's cross-ASE payment: from alice at cloud-nine to bob at happy-life (the running
    /// `opdesk workshop` in DIR; default: its default dir).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "")]
    pub workshop: Option<PathBuf>,
    /// With --to or --workshop: the amount the receiver gets, in minor units of its asset (2500 = 25.00).
    #[arg(long, default_value_t = 2500)]
    pub amount: u64,
}

#[derive(Debug, Args)]
pub struct WorkshopArgs {
    /// The workshop dir: the desks' data dirs are DIR/cloud-nine and DIR/happy-life, kept between runs
    /// (default: opdesk-workshop next to the default data dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// cloud-nine's port (on the --bind address).
    #[arg(long, default_value_t = 4000, value_name = "PORT")]
    pub cloud_nine_port: u16,
    /// happy-life's port (on the --bind address).
    #[arg(long, default_value_t = 4100, value_name = "PORT")]
    pub happy_life_port: u16,
    /// Serve without the console even on a terminal (one line per desk, then until Ctrl-C or SIGTERM).
    #[arg(long)]
    pub headless: bool,
    /// A class: N seats (1–60), each with its wallets, keys, owner passphrase and a handout in DIR/handout.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=60))]
    pub seats: Option<u8>,
    /// The address the desks listen on (0.0.0.0: every interface, for a room).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub bind: std::net::IpAddr,
    /// The host name or address the room reaches the desks by: every URL the desks and handouts give out.
    #[arg(long, value_name = "HOST")]
    pub public_host: Option<String>,
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where the copy goes (written next to it first, then renamed into place; mode 0600).
    pub file: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum WebhooksCmd {
    /// List deliveries, newest first.
    List {
        /// pending, delivered or dead.
        #[arg(long)]
        state: Option<String>,
        /// How many (default 50).
        #[arg(long)]
        first: Option<usize>,
    },
    /// Re-drive a dead (or pending) delivery by its event's sequence number, or every dead one.
    Retry {
        #[arg(required_unless_present = "dead", conflicts_with = "dead")]
        seq: Option<i64>,
        /// Every dead delivery.
        #[arg(long)]
        dead: bool,
    },
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
        /// What the peer may owe us unsettled, in the link's minor units (config peers too); past it, its
        /// packets are refused T04.
        #[arg(long, value_name = "AMOUNT")]
        credit_limit: Option<String>,
        /// Remove the credit limit.
        #[arg(long, conflicts_with = "credit_limit")]
        no_credit_limit: bool,
    },
    /// Deposit or withdraw a peer's liquidity: what the peer lets us owe it (amount in the link's minor
    /// units). After the first deposit nothing is sent through the peer beyond it.
    Liquidity {
        name: String,
        action: LiquidityAction,
        amount: String,
        /// Idempotency id: the same id is applied once.
        #[arg(long)]
        id: Option<String>,
    },
    /// Record a settlement with a peer made outside ILP: `paid` (we paid the peer) or `received` (the peer
    /// paid us), amount in the link's minor units.
    Settle {
        name: String,
        direction: SettleDirection,
        amount: String,
        /// Idempotency id: the same id is applied once.
        #[arg(long)]
        id: Option<String>,
    },
    /// Remove a peer added with `peers add` (refused while payments are sending through it).
    Remove { name: String },
}

/// `peers liquidity NAME deposit|withdraw AMOUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LiquidityAction {
    Deposit,
    Withdraw,
}

/// `peers settle NAME paid|received AMOUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SettleDirection {
    /// We paid the peer.
    Paid,
    /// The peer paid us.
    Received,
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
    /// List incoming payments, newest first. Shared secrets are masked; --reveal prints them.
    List {
        #[command(flatten)]
        list: ListArgs,
        /// pending, completed or expired.
        #[arg(long)]
        state: Option<String>,
        /// Print the ILP shared secrets (`sharedSecret`) instead of masking them.
        #[arg(long)]
        reveal: bool,
    },
    /// Show one (id or URL). Its shared secret is masked; --reveal prints it.
    Show {
        id: String,
        /// Print the ILP shared secret (`sharedSecret`) instead of masking it.
        #[arg(long)]
        reveal: bool,
    },
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

#[derive(Debug, Args)]
pub struct MoveArgs {
    pub wallet: String,
    /// Amount in the wallet's minor units (digits only).
    pub amount: String,
    /// Idempotency id: the same id is applied once.
    #[arg(long)]
    pub id: Option<String>,
}

pub use backup::run_backup;
pub use requests::explain as sig_explain;
pub use wallets::{KeysCmd, WalletsCmd};

/// A refusal or failure worded for the operator, with a hint where one helps. `main` prints every error as
/// one `error: …` line; this one adds its `hint: …` line.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct OneLine {
    pub message: String,
    pub hint: Option<String>,
    /// The HTTP status of a refusal by the admin API (or the status it would have answered offline).
    pub status: Option<u16>,
}

impl OneLine {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            status: None,
        }
    }

    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    fn refusal(status: u16, message: String) -> Self {
        Self {
            status: Some(status),
            ..Self::new(message)
        }
    }
}

/// `opdesk completions SHELL`: the completion script on stdout.
pub fn print_completions(shell: clap_complete::Shell) {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut Cli::command(), "opdesk", &mut std::io::stdout());
}

/// `opdesk migrate`: migrates the store's schema (under the data dir's lock on SQLite, so never behind a
/// running server) and prints one line: where, from which version to which.
pub async fn run_migrate(settings: &Settings) -> Result<()> {
    let opts = crate::store::Options::default();
    let (where_, lock) = if settings.store.url.is_empty() {
        let db = settings.paths.database();
        if !db.is_file() {
            return Err(OneLine::new(format!("no database at {} (is --data-dir right?)", db.display())).into());
        }
        let lock = crate::owner::DirLock::acquire(&settings.paths.data_dir).map_err(|e| OneLine::new(e.to_string()))?;
        (settings.paths.database().display().to_string(), Some(lock))
    } else {
        (crate::store::redact_url(&settings.store.url), None)
    };
    let path = settings.paths.database();
    let url = settings.store.url.clone();
    let (from, to) = tokio::task::spawn_blocking(move || {
        if url.is_empty() {
            crate::store::migrate_sqlite(&path, &opts)
        } else {
            crate::store::migrate_postgres(&url)
        }
    })
    .await
    .map_err(|e| OneLine::new(format!("the migration stopped: {e}")))?
    .map_err(|e| OneLine::new(format!("cannot migrate {where_}: {e}")))?;
    drop(lock);
    if from == to {
        println!("{where_}: schema at version {to}, nothing to do");
    } else {
        println!("{where_}: schema migrated from version {from} to {to}");
    }
    Ok(())
}

/// Prints the version and resolved paths.
pub fn print_version(settings: &Settings) {
    let text = format!(
        "opdesk {}\nconfig:   {}\ndata:     {}\ndatabase: {}\nlog:      {}\n",
        env!("CARGO_PKG_VERSION"),
        settings.paths.config_file.display(),
        settings.paths.data_dir.display(),
        settings.store_location(),
        settings.paths.log_file.display()
    );
    // a reader that stops early (`| head -1`) is no error
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// Where operator commands go.
enum Backend {
    Remote(AdminClient),
    Local(Box<AppCore>),
}

/// How long a command (or a console) waits for a data dir held by a process that does not answer (a server
/// starting or stopping, another offline command finishing) before it gives up.
pub const HELD_WAIT: Duration = Duration::from_secs(10);

impl Backend {
    /// The server `--connect` names; else the server that holds the data dir (found from its record there);
    /// else the data dir itself, held for the length of the command so that no server starts meanwhile.
    /// Also says which way it went, for the operator.
    async fn connect(settings: &Settings, global: &Global) -> Result<(Self, String)> {
        if let Some(url) = &global.connect {
            let client = AdminClient::new(url, &remote_token(global)?)?;
            client.answers(Duration::from_secs(10)).await.map_err(remote)?;
            let client = client.acting_as(crate::gnap::timeline::Actor::Cli);
            return Ok((Self::Remote(client), format!("via the server at {url}")));
        }
        let dir = &settings.paths.data_dir;
        match admin::find_holder(dir, &settings.paths.admin_token(), HELD_WAIT).await? {
            Holder::Free(lock) => {
                let core = AppCore::open_locked(settings.clone(), Arc::new(SystemClock), lock).await?;
                let way = format!("offline: no server holds {}", dir.display());
                Ok((Self::Local(Box::new(core)), way))
            }
            Holder::Server(client, r) => Ok((
                Self::Remote(client.acting_as(crate::gnap::timeline::Actor::Cli)),
                format!("via the server at {} (pid {})", r.admin, r.pid),
            )),
        }
    }
}

impl Backend {
    /// Runs an operator command on the server or on the data dir, whichever this is (errors worded alike), and
    /// takes the value of the kind `T` the command answers.
    async fn run<T>(&self, cmd: control::Command) -> Result<T>
    where
        T: TryFrom<control::Outcome, Error = control::command::UnexpectedOutcome>,
    {
        let outcome = match self {
            Self::Remote(c) => c.run(&cmd).await.map_err(remote)?,
            Self::Local(l) => control::execute(&l.state, cmd, control::Cause::cli())
                .await
                .map_err(api)?,
        };
        Ok(T::try_from(outcome)?)
    }

    /// Reads a view from the server or the data dir, whichever this is (errors worded alike).
    async fn ask(&self, q: control::Query) -> Result<control::Found> {
        Ok(match self {
            Self::Remote(c) => c.ask(&q).await.map_err(remote)?,
            Self::Local(l) => control::answer(&l.state, q).await.map_err(api)?,
        })
    }

    /// Reads a view and prints what it found.
    async fn show(&self, q: control::Query, json: bool) -> Result<()> {
        print::found(json, &self.ask(q).await?)
    }
}

/// The admin token for `--connect`: from `--token-file`, else `OPDESK_ADMIN_TOKEN`.
pub fn remote_token(global: &Global) -> Result<String> {
    if let Some(path) = &global.token_file {
        return app::read_admin_token(path)
            .ok_or_else(|| OneLine::new(format!("no admin token in {}", path.display())).into());
    }
    std::env::var("OPDESK_ADMIN_TOKEN")
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            OneLine::new("--connect needs the server's admin token")
                .hint("give --token-file FILE (the admin.token in the server's data dir) or set OPDESK_ADMIN_TOKEN")
                .into()
        })
}

/// An offline command's error, worded as the admin API would answer it: a refusal (4xx) is the description
/// alone, a failure names its code and status too.
fn api(e: control::Error) -> color_eyre::Report {
    let e = ApiError::from(e);
    let status = e.status.as_u16();
    if e.status.is_client_error() {
        OneLine::refusal(status, e.description).into()
    } else {
        OneLine::refusal(status, format!("{} ({}, HTTP {status})", e.description, e.code)).into()
    }
}

/// A command's error through the admin API, worded as [`api`] words it offline.
fn remote(e: admin::ClientError) -> color_eyre::Report {
    match e {
        admin::ClientError::Api {
            status, description, ..
        } if status < 500 => OneLine::refusal(status, description).into(),
        admin::ClientError::Unreachable(_) => OneLine::new(e.to_string())
            .hint("is the server still running? `opdesk serve` starts it; --connect names another")
            .into(),
        e => OneLine::new(e.to_string()).into(),
    }
}

/// The hint for a command's "not found": where to see what exists.
fn not_found_hint(cmd: &Command) -> Option<&'static str> {
    Some(match cmd {
        Command::Wallets(_) | Command::Keys(_) | Command::Deposit(_) | Command::Withdraw(_) => {
            "`opdesk wallets list` shows the wallet addresses"
        }
        Command::Grants(_) => "`opdesk grants list` shows the grants",
        Command::Incoming(_) => "`opdesk incoming list` shows the incoming payments",
        Command::Outgoing(_) => "`opdesk outgoing list` shows the outgoing payments",
        Command::Quotes(_) => "`opdesk quotes list` shows the quotes",
        Command::Peers(_) => "`opdesk peers list` shows the peers",
        Command::Webhooks(_) => "`opdesk webhooks list` shows the deliveries",
        Command::Requests(_) => "`opdesk requests list` shows the recent requests",
        _ => return None,
    })
}

/// Runs an operator command; a command that changes something says on stderr which way it went.
pub async fn run_operator(cmd: Command, settings: Settings, global: &Global) -> Result<()> {
    let (backend, way) = Backend::connect(&settings, global).await?;
    if cmd.changes_something() {
        let _ = writeln!(std::io::stderr(), "{way}");
    }
    let not_found = not_found_hint(&cmd);
    let hints = |e: color_eyre::Report| match (e.downcast::<OneLine>(), not_found) {
        (Ok(line), Some(h)) if line.hint.is_none() && line.status == Some(404) => line.hint(h).into(),
        (Ok(line), _) => line.into(),
        (Err(e), _) => e,
    };
    let result = operate(&backend, cmd, global.json).await.map_err(hints);
    if let Backend::Local(core) = &backend {
        core.close();
    }
    result
}

async fn operate(b: &Backend, cmd: Command, json: bool) -> Result<()> {
    match cmd {
        Command::Serve
        | Command::Demo(_)
        | Command::Workshop(_)
        | Command::Backup(_)
        | Command::Migrate
        | Command::Completions { .. }
        | Command::Sig(_) => {
            bail!("not an operator command")
        }
        Command::Wallets(c) => wallets::wallets(b, c, json).await,
        Command::Keys(c) => wallets::keys(b, c, json).await,
        Command::Deposit(m) => wallets::move_funds(b, m, Movement::Deposit, json).await,
        Command::Withdraw(m) => wallets::move_funds(b, m, Movement::Withdrawal, json).await,
        Command::Balances => b.show(control::Query::Balances, json).await,
        Command::Grants(c) => grants::grants(b, c, json).await,
        Command::Incoming(c) => payments::incoming(b, c, json).await,
        Command::Outgoing(c) => payments::outgoing(b, c, json).await,
        Command::Quotes(c) => payments::quotes(b, c, json).await,
        Command::Peers(c) => peers::peers(b, c, json).await,
        Command::Webhooks(c) => webhooks::webhooks(b, c, json).await,
        Command::Requests(c) => requests::requests(b, c, json).await,
        Command::Classroom => b.show(control::Query::Class, json).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let c = Cli::try_parse_from(["opdesk", "serve", "--log-format", "json"]).unwrap();
        assert_eq!(c.global.overrides().log_format.as_deref(), Some("json"));
        let e = Cli::try_parse_from(["opdesk", "serve", "--log-format", "xml"]).unwrap_err();
        assert!(e.to_string().contains("[possible values: text, json]"), "{e}");
        let c = Cli::try_parse_from(["opdesk", "backup", "/tmp/x.sqlite3", "--force"]).unwrap();
        assert!(matches!(
            c.command,
            Some(Command::Backup(BackupArgs { force: true, .. }))
        ));
    }
}
