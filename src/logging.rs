//! tracing setup: stderr for headless runs and CLI commands, a non-blocking file in the state dir while a
//! console owns the terminal. `RUST_LOG` wins over the configured level.
//!
//! Log fields carry client- and peer-supplied text (client names, finish URIs, reject messages, request
//! paths), so every output formats its fields with [`EscapedFields`]: control characters in any field value
//! or message are escaped (`\u{1b}`), and no log line can drive a terminal or forge another line.

use std::{io::IsTerminal, path::Path};

use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{
    EnvFilter,
    field::RecordFields,
    fmt,
    fmt::{FormatFields, format::Writer},
    layer::SubscriberExt,
    util::SubscriberInitExt,
};

use crate::text::escape_controls;

/// Formats event and span fields like tracing's default (`message` bare, the others `name=value`, separated
/// by spaces), with control characters in every value escaped.
#[derive(Debug, Clone, Copy, Default)]
pub struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> std::fmt::Result {
        let mut visitor = EscapingVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct EscapingVisitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: std::fmt::Result,
}

impl EscapingVisitor<'_> {
    fn write(&mut self, field: &Field, value: &str) {
        let name = field.name();
        // `log` crate metadata that the formatter shows elsewhere
        if self.result.is_err() || name.starts_with("log.") {
            return;
        }
        if !std::mem::take(&mut self.first) {
            self.result = self.writer.write_char(' ');
        }
        let value = escape_controls(value);
        self.result = self.result.and_then(|()| match name {
            "message" => self.writer.write_str(&value),
            name => write!(self.writer, "{}={value}", name.strip_prefix("r#").unwrap_or(name)),
        });
    }
}

impl Visit for EscapingVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.write(field, value);
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.write(field, &format!("{value:?}"));
    }
}

fn filter(level: &str) -> EnvFilter {
    EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Logs to stderr.
pub fn to_stderr(level: &str) {
    let _ = fmt()
        .with_env_filter(filter(level))
        .fmt_fields(EscapedFields)
        .with_ansi(std::io::stderr().is_terminal())
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
        .fmt_fields(EscapedFields)
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
        .with(
            fmt::layer()
                .fmt_fields(EscapedFields)
                .with_ansi(false)
                .with_writer(writer),
        )
        .with(
            fmt::layer()
                .fmt_fields(EscapedFields)
                .with_ansi(false)
                .without_time()
                .with_target(false)
                .with_writer(move || console.clone()),
        )
        .try_init();
    Ok((guard, rx))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn control_characters_in_fields_and_messages_are_escaped() {
        let buf = Buffer::default();
        let out = buf.clone();
        let subscriber = fmt()
            .fmt_fields(EscapedFields)
            .with_ansi(false)
            .with_writer(move || buf.clone())
            .finish();
        let hostile = "Shop\u{1b}]0;owned\u{7}\u{9b}2J\r\nINFO forged line";
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", path = %hostile);
            let _in = span.enter();
            tracing::warn!(client = %hostile, finish = hostile, other = ?hostile, "grant from {hostile}");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "one line: {text}");
        assert!(text.trim_end_matches('\n').chars().all(|c| !c.is_control()), "{text:?}");
        assert!(
            text.contains("client=Shop\\u{1b}]0;owned\\u{7}\\u{9b}2J\\r\\nINFO forged line"),
            "{text}"
        );
        assert!(text.contains("request{path=Shop\\u{1b}"), "{text}");
        assert!(text.contains("grant from Shop\\u{1b}"), "{text}");
    }
}
