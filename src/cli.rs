//! The command line's entry point: the clap definitions of the top level (`Cli`, the global flags, one
//! subcommand per command group), and [`run_operator`], which hands an operator command to its group. Each
//! command group (`cli/{wallets,grants,payments,peers,thresholds,webhooks,requests,backup,classroom}`) owns its clap enum,
//! its mapping to `control::Command`s and `control::Query`s, and how its results print; [`backend::Backend`]
//! runs them on the server that holds the data dir or, when none does, on the data dir itself, and says which
//! way it went. This module and `main.rs` are the only places allowed to print (never while a console owns the
//! terminal). Everything printed for people goes through [`print`], which strips control characters from every
//! cell and line: grants, payments and peers carry client- and peer-supplied text. `--json` output is serde's,
//! which escapes control characters.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod backend;
mod backup;
mod classroom;
mod grants;
mod migrate;
mod payments;
mod peers;
mod print;
mod requests;
mod thresholds;
mod wallets;
mod webhooks;

use std::{io::Write as _, path::PathBuf};

use clap::{Args, Parser, Subcommand};
use color_eyre::eyre::{Result, eyre};

use backend::Backend;
pub use backend::{HELD_WAIT, remote_token};
pub use backup::{BackupArgs, run_backup};
pub use grants::GrantsCmd;
pub use migrate::run_migrate;
pub use payments::{IncomingCmd, ListArgs, OutgoingCmd, QuotesCmd};
pub use peers::{LiquidityAction, PeerFields, PeersCmd, SettleDirection};
pub use requests::{RequestsCmd, SigCmd, SigExplainArgs, explain as sig_explain};
pub use wallets::{KeysCmd, MoveArgs, WalletsCmd};
pub use webhooks::WebhooksCmd;

use crate::{
    control::Query,
    ledger::Movement,
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
    /// Alert thresholds on peers' liquidity and credit and on wallets' balances, with their values now (set them
    /// with `peers set-threshold` and `wallets set-threshold`).
    Thresholds,
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

/// An amount argument: whole minor units of `whose` asset (`"the peer's"`), else a one-line refusal that says
/// so for `what` (`"amount"`).
fn minor(text: &str, what: &str, whose: &str) -> Result<crate::money::Value> {
    crate::money::Value::parse(text).map_err(|_| {
        let e = format!("the {what} must be whole minor units of {whose} asset, e.g. 1000 for 10.00 (got {text:?})");
        OneLine::new(e).into()
    })
}

/// `opdesk completions SHELL`: the completion script on stdout.
pub fn print_completions(shell: clap_complete::Shell) {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut Cli::command(), "opdesk", &mut std::io::stdout());
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

/// Runs an operator command through its group, on the server or the data dir ([`Backend`], which says which
/// way it went when the command changes something). A "not found" gets the hint of where to see what exists.
pub async fn run_operator(cmd: Command, settings: Settings, global: &Global) -> Result<()> {
    let b = Backend::connect(&settings, global).await?;
    let json = global.json;
    let on_wallets = Some(("wallets", "wallet addresses"));
    let (result, listed) = match cmd {
        Command::Serve
        | Command::Demo(_)
        | Command::Workshop(_)
        | Command::Backup(_)
        | Command::Migrate
        | Command::Completions { .. }
        | Command::Sig(_) => (Err(eyre!("not an operator command")), None),
        Command::Wallets(c) => (wallets::wallets(&b, c, json).await, on_wallets),
        Command::Keys(c) => (wallets::keys(&b, c, json).await, on_wallets),
        Command::Deposit(m) => (wallets::move_funds(&b, m, Movement::Deposit, json).await, on_wallets),
        Command::Withdraw(m) => (wallets::move_funds(&b, m, Movement::Withdrawal, json).await, on_wallets),
        Command::Balances => (b.show(Query::Balances, json).await, None),
        Command::Grants(c) => (grants::grants(&b, c, json).await, Some(("grants", "grants"))),
        Command::Incoming(c) => (
            payments::incoming(&b, c, json).await,
            Some(("incoming", "incoming payments")),
        ),
        Command::Outgoing(c) => (
            payments::outgoing(&b, c, json).await,
            Some(("outgoing", "outgoing payments")),
        ),
        Command::Quotes(c) => (payments::quotes(&b, c, json).await, Some(("quotes", "quotes"))),
        Command::Peers(c) => (peers::peers(&b, c, json).await, Some(("peers", "peers"))),
        Command::Webhooks(c) => (webhooks::webhooks(&b, c, json).await, Some(("webhooks", "deliveries"))),
        Command::Requests(c) => (
            requests::requests(&b, c, json).await,
            Some(("requests", "recent requests")),
        ),
        Command::Classroom => (b.show(Query::Class, json).await, None),
        Command::Thresholds => (b.show(Query::Thresholds, json).await, None),
    };
    b.close();
    result.map_err(|e| match (e.downcast::<OneLine>(), listed) {
        (Ok(line), Some((noun, what))) if line.hint.is_none() && line.status == Some(404) => {
            line.hint(format!("`opdesk {noun} list` shows the {what}")).into()
        }
        (Ok(line), _) => line.into(),
        (Err(e), _) => e,
    })
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
