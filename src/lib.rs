//! opdesk: a terminal console that embeds a small Open Payments Account Servicing Entity.
//!
//! The crate root holds the module tree and [`run`], which turns a parsed command line into the console,
//! the headless server or an operator command. `main.rs` only parses, installs hooks and calls [`run`].

pub mod admin;
pub mod app;
pub mod ase;
pub mod cli;
pub mod client;
pub mod clock;
pub mod events;
pub mod gnap;
pub mod httpsig;
pub mod ids;
pub mod ilp;
pub mod interval;
pub mod ledger;
pub mod logging;
pub mod money;
pub mod seed;
pub mod server;
pub mod settings;
pub mod store;
pub mod webhooks;

use color_eyre::eyre::Result;
use tokio_util::sync::CancellationToken;

use cli::{Cli, Command};
use settings::Settings;

/// Runs what the command line asks for.
pub async fn run(cli: Cli) -> Result<()> {
    httpsig::keys::install_default_crypto_provider();
    let settings = Settings::load(&cli.global.overrides())?;
    if cli.version {
        cli::print_version(&settings);
        return Ok(());
    }
    match cli.command {
        None => {
            logging::to_stderr(&settings.log_level);
            tracing::warn!(
                "the console is not built yet: serving headless on {} (same as `opdesk serve`)",
                settings.public_url
            );
            serve(settings).await
        }
        Some(Command::Serve) => {
            logging::to_stderr(&settings.log_level);
            serve(settings).await
        }
        Some(cmd) => {
            logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("warn"));
            cli::run_operator(cmd, settings, cli.global.json).await
        }
    }
}

/// Opens the ASE (migrations before binding), binds, and serves until Ctrl-C or SIGTERM.
async fn serve(settings: Settings) -> Result<()> {
    let core = app::AppCore::open(settings.clone()).await?;
    let listener = app::bind(&settings).await?;
    tracing::info!(
        public_url = %settings.public_url,
        data_dir = %settings.paths.data_dir.display(),
        "opdesk serving on {}",
        listener.local_addr()?
    );
    let shutdown = CancellationToken::new();
    app::cancel_on_signals(shutdown.clone());
    app::serve(core, listener, shutdown).await
}
