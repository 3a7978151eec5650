//! The `opdesk` binary: parse the command line, install error reporting, run.

use std::io::Write as _;

use clap::Parser;

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = opdesk::cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(opdesk::run(cli));
    // a data dir another opdesk holds is one line naming it, not a report; so is a refusal worded for the
    // operator, and a TLS certificate or key that cannot be used
    if let Err(e) = &result {
        let line = e
            .downcast_ref::<opdesk::owner::Error>()
            .map(ToString::to_string)
            .or_else(|| e.downcast_ref::<opdesk::cli::OneLine>().map(ToString::to_string))
            .or_else(|| {
                e.downcast_ref::<opdesk::server::tls::TlsError>()
                    .map(ToString::to_string)
            });
        if let Some(line) = line {
            let _ = writeln!(std::io::stderr(), "opdesk: {line}");
            std::process::exit(1);
        }
    }
    result
}
