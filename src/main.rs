//! The `opdesk` binary: parse the command line, install error reporting, run.

use std::io::Write as _;

use clap::Parser;

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = opdesk::cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(opdesk::run(cli));
    // a data dir another opdesk holds is one line naming it, not a report
    if let Err(e) = &result
        && let Some(owner) = e.downcast_ref::<opdesk::owner::Error>()
    {
        let _ = writeln!(std::io::stderr(), "opdesk: {owner}");
        std::process::exit(1);
    }
    result
}
