//! tracing setup: stderr for headless runs and CLI commands, a non-blocking file in the state dir while a
//! console owns the terminal. `RUST_LOG` wins over the configured level.
//!
//! Log fields carry client- and peer-supplied text (client names, finish URIs, reject messages, request
//! paths), so every output formats its fields with [`EscapedFields`]: control characters in any field value
//! or message are escaped (`\u{1b}`), and no log line can drive a terminal or forge another line.
//!
//! Stderr logs can be JSON lines instead ([`LogFormat::Json`], for journald and log shippers). JSON strings
//! already escape C0 control characters (ESC, BEL, CR, LF, …); [`JsonSafe`] escapes what JSON leaves raw —
//! DEL, C1 controls such as U+009B and bidi controls — as `\u…`, so a JSON line stays one line, stays valid
//! JSON, decodes to what was sent, and carries no raw control character.

use std::{io::IsTerminal, path::Path, str::FromStr};

use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{
    EnvFilter,
    field::RecordFields,
    fmt,
    fmt::{FormatFields, MakeWriter, format::Writer},
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

/// How stderr log lines look: tracing's text lines (the default) or one JSON object per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl LogFormat {
    /// The accepted names, for `--log-format` and `log_format`.
    pub const NAMES: [&'static str; 2] = ["text", "json"];
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("{other:?} is not a log format: use \"text\" or \"json\"")),
        }
    }
}

/// Logs to stderr, as text or JSON lines, through a writer thread: a request never waits for the terminal or
/// the pipe (a line is dropped, not waited for, when the writer is far behind). Keep the guard alive for as
/// long as logs should be flushed.
#[must_use = "logs are flushed only while the guard lives"]
pub fn to_stderr(level: &str, format: LogFormat) -> WorkerGuard {
    let ansi = std::io::stderr().is_terminal();
    let (writer, guard) = tracing_appender::non_blocking(std::io::stderr());
    let _ = match format {
        LogFormat::Text => fmt()
            .with_env_filter(filter(level))
            .fmt_fields(EscapedFields)
            .with_ansi(ansi)
            .with_writer(writer)
            .try_init(),
        LogFormat::Json => json_lines(fmt().with_env_filter(filter(level)))
            .with_writer(JsonSafe(writer))
            .try_init(),
    };
    guard
}

/// The JSON line format: `{"timestamp","level","message",…fields,"target","span","spans"}`.
fn json_lines<F, W>(
    b: fmt::SubscriberBuilder<fmt::format::DefaultFields, fmt::format::Format, F, W>,
) -> fmt::SubscriberBuilder<fmt::format::JsonFields, fmt::format::Format<fmt::format::Json>, F, W> {
    b.json().flatten_event(true).with_ansi(false)
}

/// A [`MakeWriter`] for JSON lines that escapes, as `\u…`, the characters JSON strings may carry raw but a
/// terminal or log viewer may act on: DEL, C1 controls and bidi controls. These only ever occur inside
/// strings (JSON's own syntax is ASCII), so the line stays valid JSON with the same content.
#[derive(Debug, Clone, Copy)]
pub struct JsonSafe<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for JsonSafe<M> {
    type Writer = JsonSafeWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        JsonSafeWriter(self.0.make_writer())
    }
}

/// See [`JsonSafe`].
#[derive(Debug)]
pub struct JsonSafeWriter<W>(W);

fn raw_in_json(c: char) -> bool {
    c >= '\u{7f}' && (c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
}

impl<W: std::io::Write> std::io::Write for JsonSafeWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // the formatter hands over whole lines, so a character is never split between two writes
        match std::str::from_utf8(buf) {
            Ok(s) if s.chars().any(raw_in_json) => {
                let mut out = String::with_capacity(s.len() + 16);
                for c in s.chars() {
                    if raw_in_json(c) {
                        out.push_str(&format!("\\u{:04x}", u32::from(c)));
                    } else {
                        out.push(c);
                    }
                }
                self.0.write_all(out.as_bytes())?;
            }
            _ => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
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

    #[test]
    fn json_lines_are_valid_json_with_no_raw_control_characters() {
        let buf = Buffer::default();
        let out = buf.clone();
        let subscriber = json_lines(fmt()).with_writer(JsonSafe(move || buf.clone())).finish();
        let hostile = "Shop\u{1b}[31m\u{1b}]0;owned\u{7}\u{9b}2J\u{7f}\u{202e}\r\nINFO forged line";
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", path = %hostile);
            let _in = span.enter();
            tracing::warn!(client = %hostile, finish = hostile, "grant from {hostile}");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "one line: {text}");
        let line = text.trim_end_matches('\n');
        assert!(!line.contains('\u{1b}'), "no raw ESC: {line:?}");
        assert!(line.chars().all(|c| !c.is_control() && !raw_in_json(c)), "{line:?}");
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["level"], "WARN", "{v}");
        assert_eq!(v["client"], hostile, "decodes to what was sent: {v}");
        assert_eq!(v["finish"], hostile);
        assert_eq!(v["message"], format!("grant from {hostile}"));
        assert_eq!(v["span"]["path"], hostile);
        assert!(v["timestamp"].is_string() && v["target"].is_string(), "{v}");
    }

    #[test]
    fn log_formats_parse() {
        assert_eq!("text".parse(), Ok(LogFormat::Text));
        assert_eq!("json".parse(), Ok(LogFormat::Json));
        assert_eq!(LogFormat::default(), LogFormat::Text);
        let e = "JSON".parse::<LogFormat>().unwrap_err();
        assert!(e.contains("\"text\" or \"json\""), "{e}");
        for name in LogFormat::NAMES {
            assert!(name.parse::<LogFormat>().is_ok());
        }
    }
}
