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

use super::{Cx, Out, PAGE, Row, Table, View};
use crate::{
    control::{Command, Found, Query},
    states::DeliveryState,
    text::sanitize,
    tui::{
        action::Action,
        effect::Effect,
        key::{Key, PaneKey},
        pane::{Pace, Pane},
        theme::Theme,
        widgets::{kv::kv, table::table, time::relative},
    },
    webhooks::DeliveryRow,
};

/// The pane's own keys (the keymap adds the global ones and applies `[keys]` overrides).
pub const KEYS: &[PaneKey] = &[
    PaneKey {
        keys: &[Key::ch('F')],
        action: Action::DeadOnly,
        description: "show only dead deliveries",
        dangerous: false,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('R')],
        action: Action::Redrive,
        description: "re-drive the delivery (send it again, fresh attempts)",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('A')],
        action: Action::RedriveDead,
        description: "re-drive all dead deliveries",
        dangerous: true,
        hint: true,
    },
];

/// While in view: after durable events at most once a second, every five seconds anyway while webhooks are on.
const PACE: Pace = Pace {
    after_events: Duration::seconds(1),
    poll: Some(Duration::seconds(5)),
    give_up: Duration::seconds(10),
};

/// The Webhooks pane's state.
#[derive(Debug, Clone, Default)]
pub struct Webhooks {
    pub table: Table<DeliveryRow>,
    /// Only dead deliveries (`F`, `:webhooks dead`).
    pub dead_only: bool,
}

impl Row for DeliveryRow {
    /// The text a `/` filter matches a row against.
    fn haystack(&self) -> String {
        let d = self;
        format!(
            "{} {} {} {} {}",
            d.event_seq,
            d.event_id,
            d.kind,
            d.state,
            d.last_error.as_deref().unwrap_or_default()
        )
    }
    fn key(&self) -> String {
        self.event_seq.to_string()
    }
}

impl Webhooks {
    /// `:webhooks dead`: only dead deliveries.
    pub fn show_dead(&mut self) -> Vec<Out> {
        self.dead_only = true;
        self.table.selected = 0;
        vec![Out::Show, Out::Reload]
    }

    fn tags(&self, cx: &Cx<'_>) -> Vec<String> {
        let mut tags: Vec<String> = self.narrowed().into_iter().collect();
        if !cx.info.server.webhooks_enabled {
            tags.push("no webhook URL".to_owned());
        }
        tags
    }

    fn empty(&self, cx: &Cx<'_>) -> &'static str {
        if !cx.info.server.webhooks_enabled {
            "no webhook URL is configured: set [webhooks] url in config.toml"
        } else if self.dead_only {
            "no dead deliveries (F shows them all)"
        } else {
            "no deliveries yet: each durable event is delivered to the webhook URL"
        }
    }
}

impl View for Webhooks {
    listed_by_table!();
    fn narrowed(&self) -> Option<String> {
        self.dead_only.then(|| DeliveryState::Dead.to_string())
    }
    fn widen(&mut self) -> bool {
        std::mem::take(&mut self.dead_only)
    }
    fn query(&self, cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        Some(Query::Webhooks(crate::control::dto::WebhookPage {
            state: self.dead_only.then(|| DeliveryState::Dead.to_string()),
            before: cursor.as_deref().and_then(|c| c.parse::<i64>().ok()),
            first: usize::try_from(PAGE).unwrap_or(200),
        }))
    }
    /// A full page: the next one starts before the oldest shown.
    fn found(&mut self, found: Found, append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        if let Found::Webhooks(rows) = found {
            let full = u32::try_from(rows.len()).is_ok_and(|n| n == PAGE);
            let next = full.then(|| rows.last().map(|r| r.event_seq.to_string())).flatten();
            self.table.set(rows, next, append);
        }
        Vec::new()
    }
    /// Only while in view: after durable events (stale) at most once a second, every few seconds when
    /// webhooks are on, and never while a recent load is unanswered.
    fn pace(&self, cx: &Cx<'_>) -> Option<(Pace, bool)> {
        let poll = PACE.poll.filter(|_| cx.info.server.webhooks_enabled);
        Some((Pace { poll, ..PACE }, true))
    }

    /// Draws the deliveries table into `area`.
    fn draw(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        // event types run to 24 characters; narrow screens cut them to leave the last outcome some room
        let type_width = if area.width >= 100 { 26 } else { 18 };
        table(
            &w.view(Pane::Webhooks, &self.tags(cx), self.empty(cx)),
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
                    Cell::from(next_attempt(cx, d)).style(theme.pending),
                    Cell::from(last).style(last_style),
                ]
            },
        );
    }

    fn crumb(&self) -> Option<String> {
        self.table.selection().map(|d| format!("event {}", d.event_seq))
    }

    /// The detail view's title and lines, if a delivery is selected.
    fn detail(&self, cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let d = self.table.selection()?;
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
                relative(&d.next_attempt_at, cx.now)
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
        if !cx.info.server.webhooks_enabled {
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                "no webhook URL is configured ([webhooks] url): nothing is sent",
                theme.dim,
            )));
        }
        Some((title, lines))
    }

    /// Only dead deliveries (`F`), re-drive the selected one (`R`) or every dead one (`A`).
    fn act(&mut self, a: Action, _cx: &Cx<'_>) -> Vec<Out> {
        match a {
            Action::DeadOnly => {
                self.dead_only = !self.dead_only;
                self.table.selected = 0;
                vec![Out::Reload]
            }
            Action::Redrive => match self.table.selection() {
                Some(d) if d.state.can_redrive() => {
                    let seq = d.event_seq;
                    let question = format!("Re-drive the webhook for event {seq} ({})?", sanitize(&d.kind));
                    vec![Out::Confirm(question, Effect::Run(Command::RetryWebhook { seq }))]
                }
                Some(d) => super::warn(format!("the webhook for event {} was already delivered", d.event_seq)),
                None => Vec::new(),
            },
            Action::RedriveDead => {
                let w = &self.table;
                let none_dead =
                    w.loaded && w.next_cursor.is_none() && !w.items.iter().any(|d| d.state == DeliveryState::Dead);
                if none_dead {
                    return vec![Out::Flash(
                        super::Level::Info,
                        "no dead webhook deliveries to re-drive".to_owned(),
                    )];
                }
                vec![Out::Confirm(
                    "Re-drive every dead webhook delivery?".to_owned(),
                    Effect::Run(Command::RetryDeadWebhooks),
                )]
            }
            _ => Vec::new(),
        }
    }
}

/// When a pending delivery's next attempt is due, relative to now (nothing for the others).
fn next_attempt(cx: &Cx<'_>, d: &DeliveryRow) -> String {
    if d.state == DeliveryState::Pending {
        relative(&d.next_attempt_at, cx.now)
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
