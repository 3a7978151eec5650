//! The Overview pane: server facts and counters, wallet balances, and the most recent domain events.

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::Style,
    text::{Line, Span},
    widgets::{Cell, Paragraph, Row, Table},
};

use crate::{
    money::format_minor,
    text::sanitize,
    tui::{app::App, theme::Theme, widgets::table::pane_block},
};

/// Draws the overview into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let [top, bottom] = Layout::vertical([Constraint::Length(9), Constraint::Min(3)]).areas(area);
    let [left, right] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    let uptime = (app.now - app.started_at).whole_seconds().max(0);
    let o = &app.overview;
    let counters = vec![
        Line::from(vec![
            Span::styled("server   ", theme.dim),
            Span::styled(app.info.public_url.clone(), theme.accent),
        ]),
        Line::from(vec![
            Span::styled("listen   ", theme.dim),
            Span::raw(app.info.listen.clone()),
        ]),
        Line::from(vec![
            Span::styled("ILP      ", theme.dim),
            Span::raw(
                app.info
                    .ilp_address
                    .clone()
                    .unwrap_or_else(|| "(not configured)".into()),
            ),
        ]),
        Line::from(vec![
            Span::styled("uptime   ", theme.dim),
            Span::raw(format!(
                "{}h {:02}m {:02}s",
                uptime / 3600,
                (uptime % 3600) / 60,
                uptime % 60
            )),
            Span::styled("   requests ", theme.dim),
            Span::raw(format!("{:.1}/s", app.request_rate())),
        ]),
        Line::from(vec![
            Span::styled("pending grants ", theme.dim),
            Span::styled(
                o.pending_grants.to_string(),
                if o.pending_grants > 0 {
                    theme.danger
                } else {
                    Style::new()
                },
            ),
            Span::styled("   open incoming ", theme.dim),
            Span::raw(o.open_incoming.to_string()),
            Span::styled("   failed outgoing ", theme.dim),
            Span::styled(
                o.failed_outgoing.to_string(),
                if o.failed_outgoing > 0 {
                    theme.failed
                } else {
                    Style::new()
                },
            ),
        ]),
    ];
    f.render_widget(
        Paragraph::new(counters).block(pane_block(" Overview ".into(), String::new(), theme)),
        left,
    );
    let balances: Vec<Row> = o
        .balances
        .iter()
        .filter(|b| b.kind == "wallet")
        .map(|b| {
            Row::new(vec![
                Cell::from(sanitize(&b.wallet.clone().unwrap_or_default())),
                Cell::from(format!(
                    "{} {}",
                    format_minor(b.balance.into(), b.asset_scale),
                    b.asset_code
                )),
                Cell::from(format_minor(b.pending_debits.into(), b.asset_scale)).style(theme.dim),
            ])
        })
        .collect();
    f.render_widget(
        Table::new(
            balances,
            [Constraint::Length(14), Constraint::Length(18), Constraint::Min(8)],
        )
        .header(Row::new(vec!["WALLET", "BALANCE", "RESERVED"]).style(theme.header))
        .block(pane_block(" Balances ".into(), String::new(), theme)),
        right,
    );
    let height = usize::from(bottom.height.saturating_sub(2));
    let events: Vec<Line> = app
        .recent
        .iter()
        .take(height)
        .map(|(at, what)| {
            Line::from(vec![
                Span::styled(format!("{} ", at.get(11..19).unwrap_or("")), theme.dim),
                Span::raw(sanitize(what)),
            ])
        })
        .collect();
    f.render_widget(
        Paragraph::new(events).block(pane_block(" Recent events ".into(), String::new(), theme)),
        bottom,
    );
}

/// A balance changed: update the overview's balance of that account in place.
pub fn on_balance_changed(app: &mut App, account_id: &str, balance: i64, pending_debits: i64) {
    for b in app.overview.balances.iter_mut().filter(|b| b.account_id == account_id) {
        b.balance = balance;
        b.pending_debits = pending_debits;
        b.available = balance - pending_debits;
    }
}
