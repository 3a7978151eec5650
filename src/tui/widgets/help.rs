//! The `?` help overlay: every keymap row (dangerous ones hidden in read-only mode) with where it applies.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    style::Style,
    widgets::{Block, Cell, Clear, Row, Table},
};

use super::centered;
use crate::tui::{app::App, keymap::Scope, theme::Theme};

/// Draws the help table over the middle of `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let r = centered(area, 90, 90);
    f.render_widget(Clear, r);
    let mut rows = Vec::new();
    for b in &app.keymap.bindings {
        if app.readonly && b.dangerous {
            continue;
        }
        let scope = match b.scope {
            Scope::Global => "global".to_owned(),
            Scope::Pane(p) => p.name().to_owned(),
        };
        let keys = b.keys.iter().map(|k| k.label()).collect::<Vec<_>>().join(" ");
        let style = if b.dangerous { theme.danger } else { Style::new() };
        rows.push(Row::new(vec![
            Cell::from(keys),
            Cell::from(scope).style(theme.dim),
            Cell::from(b.description).style(style),
        ]));
    }
    let table = Table::new(
        rows,
        [Constraint::Length(12), Constraint::Length(10), Constraint::Min(10)],
    )
    .header(Row::new(vec!["KEYS", "WHERE", "WHAT"]).style(theme.header))
    .block(Block::bordered().title(" help — Esc, ? or q closes "));
    f.render_widget(table, r);
}
