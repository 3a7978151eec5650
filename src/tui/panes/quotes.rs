//! The Quotes pane: quotes with their debit and receive amounts and an expiry countdown (expired in the
//! failed style).

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    widgets::Cell,
};

use crate::{
    ase::quotes::QuoteDto,
    tui::{
        app::{App, short_id},
        pane::Pane,
        theme::Theme,
        widgets::{table::table, time::relative},
    },
};

/// Draws the quotes table into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let w = &app.quotes;
    table(
        app,
        theme,
        f,
        area,
        Pane::Quotes,
        &["ID", "FROM", "DEBIT", "RECEIVE", "EXPIRES"],
        &[
            Constraint::Length(9),
            Constraint::Length(12),
            Constraint::Length(16),
            Constraint::Length(16),
            Constraint::Min(12),
        ],
        (w.loaded, w.loading, w.items.len()),
        |i| {
            let q = &w.items[i];
            let exp = relative(&q.expires_at, app.now);
            let style = if exp.ends_with("ago") {
                theme.failed
            } else {
                theme.pending
            };
            vec![
                Cell::from(short_id(&q.id)),
                Cell::from(short_id(&q.wallet_address)),
                Cell::from(q.debit_amount.to_string()),
                Cell::from(q.receive_amount.to_string()),
                Cell::from(exp).style(style),
            ]
        },
    );
}

/// The text a `/` filter matches a row against.
pub fn haystack(q: &QuoteDto) -> String {
    format!("{} {} {}", q.id, q.wallet_address, q.receiver)
}
