//! tracing setup: stderr for headless runs and CLI commands, a non-blocking file in the state dir while a
//! console owns the terminal. `RUST_LOG` wins over the configured level.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{EnvFilter, fmt};

fn filter(level: &str) -> EnvFilter {
    EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Logs to stderr.
pub fn to_stderr(level: &str) {
    let _ = fmt()
        .with_env_filter(filter(level))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Logs to `file` (appending); keep the guard alive for as long as logs should be flushed.
pub fn to_file(level: &str, file: &Path) -> std::io::Result<WorkerGuard> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = file
        .file_name()
        .map(|n| n.to_owned())
        .unwrap_or_else(|| "opdesk.log".into());
    let (writer, guard) = tracing_appender::non_blocking(tracing_appender::rolling::never(dir, name));
    let _ = fmt()
        .with_env_filter(filter(level))
        .with_ansi(false)
        .with_writer(writer)
        .try_init();
    Ok(guard)
}
