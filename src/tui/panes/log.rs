//! The Log pane: the console's own tracing lines, newest first, kept in a ring.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    widgets::Cell,
};

use super::{Cx, Out, Table, View};
use crate::{
    control::{Found, Query},
    text::sanitize,
    tui::{pane::Pane, theme::Theme, widgets::table::table},
};

/// Log lines kept.
pub const RING: usize = 2000;

/// The Log pane's state: the lines, newest first.
#[derive(Debug, Clone)]
pub struct Log {
    pub table: Table<String>,
}

impl Default for Log {
    fn default() -> Self {
        Self { table: Table::live() }
    }
}

impl Log {
    /// A new line goes on top; the oldest fall off the ring.
    pub fn on_line(&mut self, line: String) {
        self.table.items.insert(0, line);
        self.table.items.truncate(RING);
    }
}

impl View for Log {
    listed_by_table!();
    /// The console fills it itself.
    fn query(&self, _cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        None
    }
    fn found(&mut self, _found: Found, _append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        Vec::new()
    }
    /// A line has no more to it than the table shows.
    fn detail(&self, _cx: &Cx<'_>, _theme: &Theme) -> Option<(String, Vec<ratatui::text::Line<'_>>)> {
        None
    }

    /// The log lines.
    fn draw(&self, _cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        table(
            &w.view(Pane::Log, &[], "nothing here yet"),
            theme,
            f,
            area,
            &["LINE"],
            &[Constraint::Min(10)],
            (true, false, w.items.len()),
            |i| vec![Cell::from(sanitize(&w.items[i]))],
        );
    }
}
