//! The Incoming pane: live incoming payments with received/expected gauges and expiry, the payment's
//! detail and session history, revealing the shared secret, and completing a payment (behind a confirm).

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};

use crate::{
    ase::incoming::IncomingView,
    control::Command,
    states::IncomingState,
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
            time::relative,
        },
    },
};

/// Draws the incoming payments table into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let w = &app.incoming;
    let gauge_width = if area.width >= 110 { 20 } else { 10 };
    table(
        &app.table_view(Pane::Incoming),
        theme,
        f,
        area,
        &["ID", "WALLET", "STATE", "RECEIVED", "PROGRESS", "EXPIRES"],
        &[
            Constraint::Length(9),
            Constraint::Length(12),
            Constraint::Length(10),
            Constraint::Length(14),
            Constraint::Min(u16::try_from(gauge_width + 5).unwrap_or(15)),
            Constraint::Length(12),
        ],
        (w.loaded, w.loading, w.items.len()),
        |i| {
            let p = &w.items[i];
            let progress = match &p.payment.incoming_amount {
                Some(total) => gauge(p.payment.received_amount.value.get(), total.value.get(), gauge_width),
                None => "open amount".to_owned(),
            };
            let expires = match (p.state, &p.payment.expires_at) {
                (IncomingState::Pending, Some(e)) => relative(e, app.now),
                _ => String::new(),
            };
            vec![
                Cell::from(short_id(&p.payment.id)),
                Cell::from(sanitize(&p.wallet)),
                Cell::from(p.state.as_str()).style(theme.state(p.state)),
                Cell::from(p.payment.received_amount.to_string()),
                Cell::from(progress).style(theme.state(p.state)),
                Cell::from(expires).style(theme.dim),
            ]
        },
    );
}

/// The text a `/` filter matches a row against.
pub fn haystack(p: &IncomingView) -> String {
    let metadata = p.payment.metadata.as_ref().map(|m| m.to_string()).unwrap_or_default();
    format!(
        "{} {} {} {} {metadata}",
        p.payment.id,
        p.wallet,
        p.state,
        p.client.as_deref().unwrap_or_default()
    )
}

/// The detail view's title and lines, if a payment is selected.
pub fn detail<'a>(app: &'a App, theme: &Theme) -> Option<(String, Vec<Line<'a>>)> {
    let p = app.selected_incoming()?;
    let mut lines: Vec<Line> = Vec::new();
    let title = format!(" incoming payment {} ", short_id(&p.payment.id));
    lines.push(kv(theme, "id", p.payment.id.clone()));
    lines.push(kv(theme, "wallet", p.payment.wallet_address.clone()));
    lines.push(Line::from(vec![
        Span::styled(format!("{:<14}", "state"), theme.dim),
        Span::styled(p.state.as_str(), theme.state(p.state)),
    ]));
    lines.push(kv(theme, "received", p.payment.received_amount.to_string()));
    lines.push(kv(
        theme,
        "expected",
        p.payment
            .incoming_amount
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "an open amount".into()),
    ));
    if let Some(total) = &p.payment.incoming_amount {
        lines.push(kv(
            theme,
            "progress",
            gauge(p.payment.received_amount.value.get(), total.value.get(), 30),
        ));
    }
    lines.push(kv(
        theme,
        "expires",
        p.payment
            .expires_at
            .map(|e| format!("{} ({})", crate::clock::format_ts(e), relative(&e, app.now)))
            .unwrap_or_default(),
    ));
    lines.push(kv(theme, "created", crate::clock::format_ts(p.payment.created_at)));
    lines.push(kv(
        theme,
        "client",
        p.client.clone().unwrap_or_else(|| "(operator)".into()),
    ));
    if let Some(m) = &p.payment.metadata {
        lines.push(kv(theme, "metadata", sanitize(&m.to_string())));
    }
    lines.push(kv(
        theme,
        "methods",
        if app.reveal_secret {
            "ilp (secret shown: s hides)".into()
        } else {
            "ilp secrets masked (s reveals)".into()
        },
    ));
    lines.extend(history(app.history_of(&p.payment.id), theme));
    Some((title, lines))
}

/// Complete the selected payment (after a confirm) and reveal/mask the shared secret.
pub fn act(app: &mut App, a: Action) -> Vec<Effect> {
    match a {
        Action::Reveal => {
            app.reveal_secret = !app.reveal_secret;
            Vec::new()
        }
        Action::Complete => match app.selected_incoming() {
            Some(p) if p.state.is_open() => {
                let id = p.payment.id.rsplit('/').next().unwrap_or("").to_owned();
                app.ask(
                    format!(
                        "Complete incoming payment {}? It will accept no more money.",
                        short_id(&id)
                    ),
                    Effect::Run(Command::CompleteIncoming { id }),
                )
            }
            Some(p) => {
                let s = p.state;
                app.flash(Level::Warn, format!("this incoming payment is {s}"));
                Vec::new()
            }
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Money arrived: update the row in place, or mark the pane stale if it is not loaded.
pub fn on_received(app: &mut App, id: &str, received: i64) {
    if let Some(row) = app.incoming.items.iter_mut().find(|r| r.payment.id.ends_with(id)) {
        if let Ok(v) = crate::money::Value::from_i64(received) {
            row.payment.received_amount.value = v;
        }
    } else {
        app.stale.insert(Pane::Incoming);
    }
}
