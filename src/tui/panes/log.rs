//! The Log pane: the console's own tracing lines, newest first, kept in a ring.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    widgets::Cell,
};

use crate::{
    text::sanitize,
    tui::{
        app::{App, RING},
        pane::Pane,
        theme::Theme,
        widgets::table::table,
    },
};

/// Draws the log lines into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let w = &app.log;
    table(
        &app.table_view(Pane::Log),
        theme,
        f,
        area,
        &["LINE"],
        &[Constraint::Min(10)],
        (true, false, w.items.len()),
        |i| vec![Cell::from(sanitize(&w.items[i]))],
    );
}

/// The text a `/` filter matches a line against.
pub fn haystack(line: &str) -> String {
    line.to_owned()
}

/// A new log line goes on top; the oldest fall off the ring.
pub fn on_line(app: &mut App, line: String) {
    app.log.items.insert(0, line);
    app.log.items.truncate(RING);
}
