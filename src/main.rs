//! The `opdesk` binary: parse the command line, run, and print an error as one `error: …` line (with its
//! `hint: …`), exit status 1; usage mistakes are clap's, status 2. `OPDESK_REPORT=1` prints the full report
//! (causes, location, backtrace under `RUST_BACKTRACE`) instead, for a bug report.

use std::{
    io::{IsTerminal as _, Write as _},
    process::ExitCode,
};

use clap::Parser;
use color_eyre::config::{HookBuilder, Theme};

/// mimalloc instead of the system allocator: a signed create allocates a few hundred times, and glibc's
/// malloc took ~17 % of the server's CPU under load (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Colour on stderr: only on a terminal, and never with `NO_COLOR` set.
fn colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// One line for any error: its causes after it, each only when the message before does not already say it.
fn one_line(e: &color_eyre::Report) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line
}

fn main() -> ExitCode {
    let colour = colour();
    let theme = if colour { Theme::dark() } else { Theme::new() };
    let _ = HookBuilder::default().theme(theme).install();
    let cli = opdesk::cli::Cli::parse();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(color_eyre::Report::from)
        .and_then(|runtime| runtime.block_on(opdesk::run(cli)));
    let Err(e) = result else {
        return ExitCode::SUCCESS;
    };
    let mut err = std::io::stderr().lock();
    if std::env::var_os("OPDESK_REPORT").is_some_and(|v| !v.is_empty() && v != "0") {
        let _ = writeln!(err, "{e:?}");
        return ExitCode::FAILURE;
    }
    let (error, hint) = if colour {
        ("\x1b[1;31merror\x1b[0m", "\x1b[1;36mhint\x1b[0m")
    } else {
        ("error", "hint")
    };
    let _ = writeln!(err, "{error}: {}", opdesk::text::sanitize(&one_line(&e)));
    if let Some(h) = e.downcast_ref::<opdesk::cli::OneLine>().and_then(|l| l.hint.as_deref()) {
        let _ = writeln!(err, "{hint}: {}", opdesk::text::sanitize(h));
    }
    ExitCode::FAILURE
}
