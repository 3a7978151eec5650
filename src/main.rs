//! The `opdesk` binary: parse the command line, install error reporting, run.

use clap::Parser;

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = opdesk::cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(opdesk::run(cli))
}
