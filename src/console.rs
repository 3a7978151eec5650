//! The console as a command: it attaches to the server that holds the data dir (or the one `--connect`
//! names), or embeds a server when none runs. Owns that decision (through [`admin::find_holder`], the one
//! the operator commands use) and the attached implementation of the console's [`tui::desk::Desk`]
//! ([`remote`]: the admin API and its event stream, with reconnection); the console itself is `crate::tui`.
//! Quitting an attached console leaves the server running; quitting an embedding one stops its server.

pub mod remote;

use std::sync::Arc;

use color_eyre::eyre::{Result, WrapErr, eyre};
use tokio_util::sync::CancellationToken;

use crate::{
    admin::{self, AdminClient, Holder},
    app::{self, AppCore},
    cli::{self, Global},
    clock::SystemClock,
    logging,
    owner::DirLock,
    settings::Settings,
    tui,
};
use remote::{Remote, Source};

/// Runs the console: attached to `--connect`'s server, or to the data dir's, or embedding one.
pub async fn run(settings: Settings, global: &Global) -> Result<()> {
    use std::io::IsTerminal;
    // checked before taking the data dir: without a terminal there is nothing to draw on
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(cli::OneLine::new(
            "the console needs a terminal; `opdesk serve` runs the server without one, and operator commands \
             (`opdesk wallets list`, …) print to pipes",
        )
        .into());
    }
    let opts = tui::Options {
        readonly: global.readonly,
        no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        keys: settings.keys.clone(),
        theme: settings.theme.clone(),
        classroom: false,
    };
    if let Some(url) = &global.connect {
        let client = AdminClient::new(url, &cli::remote_token(global)?)?;
        client
            .answers(std::time::Duration::from_secs(10))
            .await
            .map_err(|e| eyre!(e))?;
        return attached(&settings, Remote::new(client, Source::Fixed), opts).await;
    }
    let dir = &settings.paths.data_dir;
    match admin::find_holder(dir, &settings.paths.admin_token(), cli::HELD_WAIT).await? {
        Holder::Free(lock) => embedded(settings, lock, opts).await,
        Holder::Server(client, record) => {
            let source = Source::DataDir {
                dir: dir.clone(),
                token_file: settings.paths.admin_token(),
                record,
            };
            attached(&settings, Remote::new(client, source), opts).await
        }
    }
}

/// The console over a server another process runs; the server keeps running after it. A desk of a workshop
/// with seats opens on the Classroom, as the workshop's own console does.
async fn attached(settings: &Settings, desk: Remote, mut opts: tui::Options) -> Result<()> {
    use crate::tui::desk::Desk as _;
    if let Ok(crate::control::Found::Classroom(seats)) = desk.ask(crate::control::Query::Class).await {
        opts.classroom = !seats.is_empty();
    }
    let (_guard, logs) = logging::to_file_and_console(&settings.log_level, &settings.paths.log_file)
        .wrap_err_with(|| format!("cannot open the log file {}", settings.paths.log_file.display()))?;
    tracing::info!(server = %desk.url(), "opdesk console attached");
    let shutdown = CancellationToken::new();
    app::cancel_on_signals(shutdown.clone());
    tui::run(desk, opts, logs, shutdown).await
}

/// The console over a server embedded in this process, on the data dir `lock` holds; quitting stops it.
async fn embedded(settings: Settings, lock: DirLock, opts: tui::Options) -> Result<()> {
    let (_guard, logs) = logging::to_file_and_console(&settings.log_level, &settings.paths.log_file)
        .wrap_err_with(|| format!("cannot open the log file {}", settings.paths.log_file.display()))?;
    let core = AppCore::open_locked(settings.clone(), Arc::new(SystemClock), lock).await?;
    let listener = app::bind(&settings).await?;
    tracing::info!(public_url = %settings.public_url, "opdesk console serving on {}", listener.local_addr()?);
    let services = core.state.services.clone();
    let shutdown = CancellationToken::new();
    app::cancel_on_signals(shutdown.clone());
    let server = tokio::spawn(app::serve(core, listener, shutdown.clone()));
    let result = tui::run(services, opts, logs, shutdown.clone()).await;
    shutdown.cancel();
    server.await.wrap_err("the server task failed")??;
    result
}
