//! Key/value lines of the detail views (`key           value`) and the per-resource history block that the
//! Incoming and Outgoing details end with.

use ratatui::text::{Line, Span};

use crate::tui::theme::Theme;

/// `key` padded to a column, then `v`.
pub fn kv<'a>(theme: &Theme, k: &'a str, v: String) -> Line<'a> {
    Line::from(vec![Span::styled(format!("{k:<14}"), theme.dim), Span::raw(v)])
}

/// A blank line, a `history` heading and what this session saw happen to a resource (`seen`: when, what).
pub fn history<'a>(seen: &[(String, String)], theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![Line::from(""), Line::from(Span::styled("history", theme.header))];
    for (at, what) in seen.iter().cloned() {
        lines.push(Line::from(vec![
            Span::styled(format!("{} ", at.get(11..23).unwrap_or("")), theme.dim),
            Span::raw(what),
        ]));
    }
    lines
}
