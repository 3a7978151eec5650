//! The Outgoing pane: outgoing payments with sent/debit gauges and failure reasons, the `failed` filter
//! (`F`, `:outgoing failed`), a payment's detail and state history, and retry and cancel (behind a confirm).

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};

use crate::{
    ase::outgoing::OutgoingView,
    control::Command,
    text::sanitize,
    tui::{
        action::Action,
        app::{App, Effect, Level, short_id},
        pane::Pane,
        theme::Theme,
        widgets::{
            gauge::gauge,
            kv::{history, kv},
            table::table,
        },
    },
};

/// Draws the outgoing payments table into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let w = &app.outgoing;
    let gauge_width = if area.width >= 110 { 16 } else { 8 };
    table(
        &app.table_view(Pane::Outgoing),
        theme,
        f,
        area,
        &["ID", "FROM", "STATE", "SENT", "PROGRESS", "FAILURE"],
        &[
            Constraint::Length(9),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(14),
            Constraint::Length(u16::try_from(gauge_width + 5).unwrap_or(13)),
            Constraint::Min(10),
        ],
        (w.loaded, w.loading, w.items.len()),
        |i| {
            let p = &w.items[i];
            vec![
                Cell::from(short_id(&p.payment.id)),
                Cell::from(sanitize(&p.wallet)),
                Cell::from(p.state.as_str()).style(theme.state(p.state)),
                Cell::from(p.payment.sent_amount.to_string()),
                Cell::from(gauge(
                    p.payment.sent_amount.value.get(),
                    p.payment.debit_amount.value.get(),
                    gauge_width,
                ))
                .style(theme.state(p.state)),
                Cell::from(p.failure_reason.clone().unwrap_or_default()).style(theme.failed),
            ]
        },
    );
}

/// The text a `/` filter matches a row against.
pub fn haystack(p: &OutgoingView) -> String {
    format!(
        "{} {} {} {} {} {}",
        p.payment.id,
        p.wallet,
        p.state,
        p.failure_reason.clone().unwrap_or_default(),
        p.payment.receiver,
        p.grant_id.as_deref().unwrap_or_default()
    )
}

/// The detail view's title and lines, if a payment is selected.
pub fn detail<'a>(app: &'a App, theme: &Theme) -> Option<(String, Vec<Line<'a>>)> {
    let p = app.selected_outgoing()?;
    let mut lines: Vec<Line> = Vec::new();
    let title = format!(" outgoing payment {} ", short_id(&p.payment.id));
    lines.push(Line::from(vec![
        Span::styled(format!("{:<14}", "state"), theme.dim),
        Span::styled(p.state.as_str(), theme.state(p.state)),
    ]));
    if let Some(reason) = &p.failure_reason {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<14}", "failure"), theme.dim),
            Span::styled(reason.clone(), theme.failed),
        ]));
        lines.push(Line::from(Span::styled(
            sanitize(&p.failure_message.clone().unwrap_or_default()),
            theme.failed,
        )));
    }
    lines.push(kv(theme, "from", p.payment.wallet_address.clone()));
    lines.push(kv(theme, "to", sanitize(&p.payment.receiver)));
    lines.push(kv(theme, "debit", p.payment.debit_amount.to_string()));
    lines.push(kv(theme, "receive", p.payment.receive_amount.to_string()));
    lines.push(kv(theme, "sent", p.payment.sent_amount.to_string()));
    lines.push(kv(theme, "delivered", p.delivered_amount.to_string()));
    lines.push(kv(
        theme,
        "progress",
        gauge(
            p.payment.sent_amount.value.get(),
            p.payment.debit_amount.value.get(),
            30,
        ),
    ));
    lines.push(kv(theme, "attempts", p.attempts.to_string()));
    lines.push(kv(
        theme,
        "quote",
        p.payment.quote_id.clone().unwrap_or_else(|| "(none)".into()),
    ));
    lines.push(kv(
        theme,
        "grant",
        p.grant_id.clone().unwrap_or_else(|| "(none)".into()),
    ));
    lines.push(kv(theme, "created", crate::clock::format_ts(p.payment.created_at)));
    lines.push(kv(theme, "updated", crate::clock::format_ts(p.updated_at)));
    lines.extend(history(app.history_of(&p.payment.id), theme));
    Some((title, lines))
}

/// Only failed payments (`F`) and retry or cancel the selected payment.
pub fn act(app: &mut App, a: Action) -> Vec<Effect> {
    match a {
        Action::FailedOnly => {
            app.failed_only = !app.failed_only;
            app.outgoing.selected = 0;
            vec![app.load(Pane::Outgoing)]
        }
        Action::Retry => match app.selected_outgoing() {
            Some(p) if p.state.can_retry() => {
                let id = p.payment.id.rsplit('/').next().unwrap_or("").to_owned();
                app.ask(
                    format!("Retry outgoing payment {}?", short_id(&id)),
                    Effect::Run(Command::RetryOutgoing { id }),
                )
            }
            Some(_) => {
                app.flash(Level::Warn, "only failed payments can be retried");
                Vec::new()
            }
            None => Vec::new(),
        },
        Action::Cancel => match app.selected_outgoing() {
            Some(p) if p.state.can_cancel(p.payment.sent_amount.value.is_zero()) => {
                let id = p.payment.id.rsplit('/').next().unwrap_or("").to_owned();
                app.ask(
                    format!("Cancel outgoing payment {}?", short_id(&id)),
                    Effect::Run(Command::CancelOutgoing { id }),
                )
            }
            Some(_) => {
                app.flash(Level::Warn, "only payments that have sent nothing can be cancelled");
                Vec::new()
            }
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// `:outgoing failed`: the Outgoing pane with only failed payments.
pub fn show_failed(app: &mut App) -> Vec<Effect> {
    app.failed_only = true;
    app.pane = Pane::Outgoing;
    vec![app.load(Pane::Outgoing)]
}

/// A payment sent more: update the row in place, or mark the pane stale if it is not loaded.
pub fn on_progress(app: &mut App, id: &str, sent: i64) {
    if let Some(row) = app.outgoing.items.iter_mut().find(|r| r.payment.id.ends_with(id)) {
        if let Ok(v) = crate::money::Value::from_i64(sent) {
            row.payment.sent_amount.value = v;
        }
    } else {
        app.stale.insert(Pane::Outgoing);
    }
}
