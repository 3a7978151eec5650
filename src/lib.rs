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
pub mod metrics;
pub mod money;
pub mod names;
pub mod owner;
pub mod passphrase;
pub mod rates;
pub mod seed;
pub mod server;
pub mod settings;
pub mod states;
pub mod store;
pub mod text;
pub mod thresholds;
pub mod tui;
pub mod wallet;
pub mod webhooks;
pub mod workshop;

use color_eyre::eyre::{Result, WrapErr};
use tokio_util::sync::CancellationToken;

use cli::{Cli, Command};
use settings::Settings;

/// Runs what the command line asks for.
pub async fn run(cli: Cli) -> Result<()> {
    if let Some(Command::Completions { shell }) = cli.command {
        cli::print_completions(shell);
        return Ok(());
    }
    egress::install_default_crypto_provider();
    let settings = Settings::load(&cli.global.overrides())?;
    if cli.version {
        cli::print_version(&settings);
        return Ok(());
    }
    match cli.command {
        None => console::run(settings, &cli.global).await,
        Some(Command::Demo(args)) => {
            let _log = logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("info"), settings.log_format);
            run_demo(args, &settings).await
        }
        Some(Command::Workshop(args)) => {
            let g = &cli.global;
            if g.listen.is_some() || g.public_url.is_some() || g.connect.is_some() {
                return Err(cli::OneLine::new(
                    "opdesk workshop runs both desks on 127.0.0.1 itself: choose their ports with \
                     --cloud-nine-port and --happy-life-port (--listen, --public-url and --connect do not apply)",
                )
                .into());
            }
            if let Some(path) = &g.config {
                let desks = workshop::settings_for_desks(path)?;
                if !desks.is_empty() {
                    return Err(cli::OneLine::new(format!(
                        "{} sets {} for the desks, which opdesk workshop does not read from it: each desk reads \
                         its own DIR/cloud-nine/config.toml and DIR/happy-life/config.toml (--config gives the \
                         console its keys, theme and log level only)",
                        path.display(),
                        desks.join(", ")
                    ))
                    .into());
                }
            }
            let opts = workshop::Options {
                dir: args.dir.unwrap_or_else(|| workshop::default_dir(&settings)),
                ports: [args.cloud_nine_port, args.happy_life_port],
                headless: args.headless,
                seats: args.seats.unwrap_or(0),
                net: workshop::Net {
                    bind: args.bind,
                    public_host: args.public_host,
                },
            };
            workshop::run(opts, &cli.global, &settings).await
        }
        Some(Command::Serve) => {
            let _log = logging::to_stderr(&settings.log_level, settings.log_format);
            serve(settings).await
        }
        Some(Command::Backup(args)) => {
            let _log = logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("warn"), settings.log_format);
            cli::run_backup(args, &settings, &cli.global).await
        }
        Some(Command::Migrate) => {
            let _log = logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("warn"), settings.log_format);
            cli::run_migrate(&settings).await
        }
        Some(Command::Sig(cli::SigCmd::Explain(args))) => {
            let _log = logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("warn"), settings.log_format);
            cli::sig_explain(args, cli.global.json).await
        }
        Some(cmd) => {
            let _log = logging::to_stderr(cli.global.log_level.as_deref().unwrap_or("warn"), settings.log_format);
            cli::run_operator(cmd, settings, &cli.global).await
        }
    }
}

/// `opdesk demo`: the scenario against the data dir's server, or one payment across ASEs (`--to`,
/// `--workshop`).
async fn run_demo(args: cli::DemoArgs, settings: &Settings) -> Result<()> {
    use std::io::Write as _;
    let (dir, public_url, to) = match (&args.workshop, &args.to) {
        (Some(w), _) => {
            let w = if w.as_os_str().is_empty() {
                workshop::default_dir(settings)
            } else {
                w.clone()
            };
            let [(from, _), (to, _)] = workshop::DESKS;
            let record = |name: &str| {
                let dir = workshop::desk_dir(&w, name);
                owner::read_record(&dir).ok_or_else(|| {
                    color_eyre::eyre::eyre!(
                        "no workshop desk runs in {} (start `opdesk workshop --dir {}` first)",
                        dir.display(),
                        w.display()
                    )
                })
            };
            let (here, there) = (record(from)?, record(to)?);
            (
                workshop::desk_dir(&w, from),
                here.public_url,
                Some(format!("{}/bob", there.public_url)),
            )
        }
        (None, to) => {
            let dir = settings.paths.data_dir.clone();
            // the server that holds the data dir, wherever it listens (its record), as every command finds it
            let url = owner::read_record(&dir).map_or_else(|| settings.public_url.clone(), |r| r.public_url);
            (dir, url, to.clone())
        }
    };
    let pem = std::fs::read_to_string(dir.join("demo-client.pem"))
        .wrap_err("the demo signs as demo-client: its key (demo-client.pem) is missing from the data dir")?;
    let Some(to) = to else {
        demo::run_against(&public_url, &pem).await?;
        writeln!(
            std::io::stdout(),
            "the demo scenario ran against {public_url}: payments, a tip, euros and two failures (see the console)"
        )?;
        return Ok(());
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "alice at {public_url} pays {to}; approve the grant in that desk's console (Grants, 4)"
    )?;
    out.flush()?;
    drop(out);
    let paid = demo::pay_across(&public_url, &pem, &to, args.amount).await?;
    writeln!(
        std::io::stdout(),
        "{} received {} {}: incoming payment {}",
        text::sanitize(&to),
        money::format_minor(i128::from(paid.received), paid.asset_scale),
        text::sanitize(&paid.asset_code),
        text::sanitize(&paid.incoming_payment)
    )?;
    Ok(())
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
