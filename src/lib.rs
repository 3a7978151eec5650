//! opdesk: a small Open Payments Account Servicing Entity with a terminal console that attaches to it (or
//! embeds it).
//!
//! The crate root holds the module tree and [`run`], which turns a parsed command line into the console,
//! the headless server or an operator command. `main.rs` only parses, installs hooks and calls [`run`].

pub mod admin;
pub mod app;
pub mod ase;
pub mod cli;
pub mod client;
pub mod clock;
pub mod console;
pub mod control;
pub mod demo;
pub mod egress;
pub mod events;
pub mod files;
pub mod gnap;
pub mod httpsig;
pub mod ids;
pub mod ilp;
pub mod interval;
pub mod ledger;
pub mod logging;
pub mod money;
pub mod names;
pub mod owner;
pub mod rates;
pub mod seed;
pub mod server;
pub mod settings;
pub mod states;
pub mod store;
pub mod text;
pub mod tui;
pub mod wallet;
pub mod webhooks;

use color_eyre::eyre::{Result, WrapErr};
use tokio_util::sync::CancellationToken;

use cli::{Cli, Command};
use settings::Settings;

/// Runs what the command line asks for.
pub async fn run(cli: Cli) -> Result<()> {
    egress::install_default_crypto_provider();
    let settings = Settings::load(&cli.global.overrides())?;
    if cli.version {
        cli::print_version(&settings);
        return Ok(());
    }
    match cli.command {
        None => console::run(settings, &cli.global).await,
        Some(Command::Demo) => {
            logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("info"), settings.log_format);
            let pem = std::fs::read_to_string(settings.paths.demo_client_key())
                .wrap_err("the demo signs as demo-client: its key (demo-client.pem) is missing from the data dir")?;
            demo::run_against(&settings.public_url, &pem).await
        }
        Some(Command::Serve) => {
            logging::to_stderr(&settings.log_level, settings.log_format);
            serve(settings).await
        }
        Some(Command::Backup(args)) => {
            logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("warn"), settings.log_format);
            cli::run_backup(args, &settings, &cli.global).await
        }
        Some(cmd) => {
            logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("warn"), settings.log_format);
            cli::run_operator(cmd, settings, &cli.global).await
        }
    }
}

/// Checks TLS (certificate and key, when `[tls]` is set), opens the ASE (migrations before binding), binds,
/// and serves until Ctrl-C or SIGTERM; SIGHUP re-reads the TLS certificate and key (and is ignored without).
async fn serve(settings: Settings) -> Result<()> {
    // a certificate or key that cannot be used stops the start before the database is touched
    let certs = app::Tls::check(&settings)?;
    let core = app::AppCore::open(settings.clone()).await?;
    let listener = app::bind(&settings).await?;
    let tls = app::Tls::bind(&settings, certs).await?;
    tracing::info!(
        public_url = %settings.public_url,
        data_dir = %settings.paths.data_dir.display(),
        "opdesk serving on {}",
        listener.local_addr()?
    );
    let shutdown = CancellationToken::new();
    app::cancel_on_signals(shutdown.clone());
    app::reload_on_sighup(tls.as_ref().map(|t| t.certs.clone()), shutdown.clone())?;
    app::serve_with(core, listener, tls, shutdown).await
}
