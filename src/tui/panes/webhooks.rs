//! The Webhooks pane: webhook deliveries newest first (event, type, state, attempts, when the next attempt
//! is due, what the last one came to), the `dead` filter (`F`, `:webhooks dead`), a delivery's detail, and
//! re-driving the selected delivery or every dead one (behind a confirm). It reloads at its own pace: after
//! durable events (which may queue deliveries) at most once a second, and every few seconds while in view
//! (attempts change deliveries without events), never with a load still unanswered.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    style::Style,
    text::{Line, Span},
    widgets::Cell,
};
use time::Duration;

use crate::{
    control::Command,
    states::DeliveryState,
    text::sanitize,
    tui::{
        action::Action,
        app::{App, Effect, Level},
        pane::{Pace, Pane},
        theme::Theme,
        widgets::{kv::kv, table::table, time::relative},
    },
    webhooks::DeliveryRow,
};

/// While in view: after durable events at most once a second, every five seconds anyway while webhooks are on.
const PACE: Pace = Pace {
    after_events: Duration::seconds(1),
    poll: Some(Duration::seconds(5)),
    give_up: Duration::seconds(10),
};

/// Draws the deliveries table into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let w = &app.webhooks;
    // event types run to 24 characters; narrow screens cut them to leave the last outcome some room
    let type_width = if area.width >= 100 { 26 } else { 18 };
    table(
        &app.table_view(Pane::Webhooks),
        theme,
        f,
        area,
        &["EVENT", "TYPE", "STATE", "ATTEMPTS", "NEXT ATTEMPT", "LAST"],
        &[
            Constraint::Length(7),
            Constraint::Length(type_width),
            Constraint::Length(9),
            Constraint::Length(8),
            Constraint::Length(12),
            Constraint::Min(10),
        ],
        (w.loaded, w.loading, w.items.len()),
        |i| {
            let d = &w.items[i];
            let (last, last_style) = last(d, theme);
            vec![
                Cell::from(d.event_seq.to_string()),
                Cell::from(sanitize(&d.kind)),
                Cell::from(d.state.as_str()).style(theme.state(d.state)),
                Cell::from(d.attempts.to_string()),
                Cell::from(next_attempt(app, d)).style(theme.pending),
                Cell::from(last).style(last_style),
            ]
        },
    );
}

/// When a pending delivery's next attempt is due, relative to now (nothing for the others).
fn next_attempt(app: &App, d: &DeliveryRow) -> String {
    if d.state == DeliveryState::Pending {
        relative(&d.next_attempt_at, app.now)
    } else {
        String::new()
    }
}

/// What the last attempt came to: the error (the receiver's or the connection's, sanitised), else the status.
fn last(d: &DeliveryRow, theme: &Theme) -> (String, Style) {
    match (&d.last_error, d.last_status) {
        (Some(e), _) => (sanitize(e), theme.failed),
        (None, Some(s)) if (200..300).contains(&s) => (s.to_string(), theme.ok),
        (None, Some(s)) => (s.to_string(), theme.failed),
        (None, None) => (String::new(), theme.dim),
    }
}

/// The text a `/` filter matches a row against.
pub fn haystack(d: &DeliveryRow) -> String {
    format!(
        "{} {} {} {} {}",
        d.event_seq,
        d.event_id,
        d.kind,
        d.state,
        d.last_error.as_deref().unwrap_or_default()
    )
}

/// The detail view's title and lines, if a delivery is selected.
pub fn detail<'a>(app: &'a App, theme: &Theme) -> Option<(String, Vec<Line<'a>>)> {
    let d = app.selected_webhook()?;
    let title = format!(" webhook for event {} ", d.event_seq);
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("{:<14}", "state"), theme.dim),
            Span::styled(d.state.as_str(), theme.state(d.state)),
        ]),
        kv(theme, "event", d.event_seq.to_string()),
        kv(theme, "event id", sanitize(&d.event_id)),
        kv(theme, "type", sanitize(&d.kind)),
        kv(theme, "attempts", d.attempts.to_string()),
    ];
    let next = if d.state == DeliveryState::Pending {
        format!(
            "{} ({})",
            crate::clock::format_ts(d.next_attempt_at),
            relative(&d.next_attempt_at, app.now)
        )
    } else {
        "(none)".to_owned()
    };
    lines.push(kv(theme, "next attempt", next));
    lines.push(kv(
        theme,
        "last status",
        d.last_status.map_or_else(|| "(none)".to_owned(), |s| s.to_string()),
    ));
    lines.push(Line::from(vec![
        Span::styled(format!("{:<14}", "last error"), theme.dim),
        match &d.last_error {
            Some(e) => Span::styled(sanitize(e), theme.failed),
            None => Span::raw("(none)"),
        },
    ]));
    lines.push(kv(theme, "created", crate::clock::format_ts(d.created_at)));
    lines.push(kv(theme, "updated", crate::clock::format_ts(d.updated_at)));
    if !app.info.webhooks_enabled {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "no webhook URL is configured ([webhooks] url): nothing is sent",
            theme.dim,
        )));
    }
    Some((title, lines))
}

/// Only dead deliveries (`F`), re-drive the selected one (`R`) or every dead one (`A`).
pub fn act(app: &mut App, a: Action) -> Vec<Effect> {
    match a {
        Action::DeadOnly => {
            app.dead_only = !app.dead_only;
            app.webhooks.selected = 0;
            vec![app.load(Pane::Webhooks)]
        }
        Action::Redrive => match app.selected_webhook() {
            Some(d) if d.state.can_redrive() => {
                let seq = d.event_seq;
                let question = format!("Re-drive the webhook for event {seq} ({})?", sanitize(&d.kind));
                app.ask(question, Effect::Run(Command::RetryWebhook { seq }))
            }
            Some(d) => {
                let seq = d.event_seq;
                app.flash(
                    Level::Warn,
                    format!("the webhook for event {seq} was already delivered"),
                );
                Vec::new()
            }
            None => Vec::new(),
        },
        Action::RedriveDead => {
            let w = &app.webhooks;
            let none_dead =
                w.loaded && w.next_cursor.is_none() && !w.items.iter().any(|d| d.state == DeliveryState::Dead);
            if none_dead {
                app.flash(Level::Info, "no dead webhook deliveries to re-drive");
                return Vec::new();
            }
            app.ask(
                "Re-drive every dead webhook delivery?".to_owned(),
                Effect::Run(Command::RetryDeadWebhooks),
            )
        }
        _ => Vec::new(),
    }
}

/// `:webhooks dead`: the Webhooks pane with only dead deliveries.
pub fn show_dead(app: &mut App) -> Vec<Effect> {
    app.dead_only = true;
    app.pane = Pane::Webhooks;
    app.webhooks.selected = 0;
    vec![app.load(Pane::Webhooks)]
}

/// The pane's reload, if one is due: only while it is in view and live, after durable events (stale) at most
/// once a second, every few seconds when webhooks are on, and never while a recent load is unanswered.
pub fn reload(app: &mut App) -> Option<Effect> {
    if app.pane != Pane::Webhooks || app.frozen {
        return None;
    }
    let stale = app.stale.contains(&Pane::Webhooks);
    let pace = Pace {
        poll: PACE.poll.filter(|_| app.info.webhooks_enabled),
        ..PACE
    };
    pace.due(app.now, app.webhooks_load_at, app.webhooks.loading, stale)
        .then(|| app.load(Pane::Webhooks))
}
