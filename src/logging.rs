//! tracing setup: stderr for headless runs and CLI commands, a non-blocking file in the state dir while a
//! console owns the terminal. `RUST_LOG` wins over the configured level.

use std::path::Path;

use tokio::sync::mpsc;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{EnvFilter, fmt, layer::SubscriberExt, util::SubscriberInitExt};

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

/// A writer that forwards each formatted line to the console's Log pane (dropping lines when it lags).
#[derive(Clone)]
struct ChannelWriter(mpsc::Sender<String>);

impl std::io::Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let line = String::from_utf8_lossy(buf).trim_end().to_owned();
        if !line.is_empty() {
            let _ = self.0.try_send(line);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Logs to `file` and to the returned channel (the console's Log pane); nothing goes to the terminal.
pub fn to_file_and_console(level: &str, file: &Path) -> std::io::Result<(WorkerGuard, mpsc::Receiver<String>)> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = file
        .file_name()
        .map(|n| n.to_owned())
        .unwrap_or_else(|| "opdesk.log".into());
    let (writer, guard) = tracing_appender::non_blocking(tracing_appender::rolling::never(dir, name));
    let (tx, rx) = mpsc::channel(1024);
    let console = ChannelWriter(tx);
    let _ = tracing_subscriber::registry()
        .with(filter(level))
        .with(fmt::layer().with_ansi(false).with_writer(writer))
        .with(
            fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_target(false)
                .with_writer(move || console.clone()),
        )
        .try_init();
    Ok((guard, rx))
}
