//! The Incoming pane: live incoming payments with received/expected gauges and expiry, the payment's
//! detail and session history, revealing the shared secret, and completing a payment (behind a confirm).

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};

use super::{Cx, Out, Row, Table, View, list::page_of};
use crate::{
    ase::incoming::IncomingView,
    control::{Command, Found, Query},
    states::IncomingState,
    text::sanitize,
    tui::{
        action::Action,
        effect::Effect,
        key::{Key, PaneKey},
        pane::Pane,
        theme::Theme,
        widgets::{
            gauge::gauge,
            kv::{history, kv},
            short_id,
            table::table,
            time::relative,
        },
    },
};

/// The pane's own keys (the keymap adds the global ones and applies `[keys]` overrides).
pub const KEYS: &[PaneKey] = &[
    PaneKey {
        keys: &[Key::ch('s')],
        action: Action::Reveal,
        description: "reveal or mask the shared secret",
        dangerous: false,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('c')],
        action: Action::Complete,
        description: "complete the incoming payment",
        dangerous: true,
        hint: true,
    },
];

/// The Incoming pane's state.
#[derive(Debug, Clone, Default)]
pub struct Incoming {
    pub table: Table<IncomingView>,
    /// The detail shows that the shared secret would be revealed (`s`).
    pub reveal_secret: bool,
}

impl Row for IncomingView {
    fn haystack(&self) -> String {
        let metadata = self
            .payment
            .metadata
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default();
        format!(
            "{} {} {} {} {metadata}",
            self.payment.id,
            self.wallet,
            self.state,
            self.client.as_deref().unwrap_or_default()
        )
    }
    fn key(&self) -> String {
        self.payment.id.clone()
    }
}

impl Incoming {
    /// Money arrived at payment `id`: its row updated in place; false when it is not loaded.
    pub fn on_received(&mut self, id: &str, received: i64) -> bool {
        let Some(row) = self.table.items.iter_mut().find(|r| r.payment.id.ends_with(id)) else {
            return false;
        };
        if let Ok(v) = crate::money::Value::from_i64(received) {
            row.payment.received_amount.value = v;
        }
        true
    }
}

impl View for Incoming {
    listed_by_table!();
    fn searches_store(&self) -> bool {
        true
    }
    /// A filter naming a state asks for that state (an incoming payment's state is worked out, not stored).
    fn query(&self, cursor: Option<String>, q: Option<String>) -> Option<Query> {
        let mut filter = page_of(cursor, None);
        match q.as_deref().map(str::parse::<IncomingState>) {
            Some(Ok(state)) => filter.state = Some(state.to_string()),
            _ => filter.q = q,
        }
        Some(Query::Incoming { filter })
    }
    fn found(&mut self, found: Found, append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        if let Found::Incoming(l) = found {
            self.table.set(l.items, l.next_cursor, append);
        }
        Vec::new()
    }

    /// The incoming payments table.
    fn draw(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        let gauge_width = if area.width >= 110 { 20 } else { 10 };
        table(
            &w.view(Pane::Incoming, &[], "nothing here yet"),
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
                    (IncomingState::Pending, Some(e)) => relative(e, cx.now),
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

    fn crumb(&self) -> Option<String> {
        self.table.selection().map(|p| short_id(&p.payment.id))
    }

    fn detail(&self, cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let p = self.table.selection()?;
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
                .map(|e| format!("{} ({})", crate::clock::format_ts(e), relative(&e, cx.now)))
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
            if self.reveal_secret {
                "ilp (secret shown: s hides)".into()
            } else {
                "ilp secrets masked (s reveals)".into()
            },
        ));
        lines.extend(history(cx.history.of(&p.payment.id), theme));
        Some((title, lines))
    }

    /// Complete the selected payment (after a confirm) and reveal/mask the shared secret.
    fn act(&mut self, a: Action, _cx: &Cx<'_>) -> Vec<Out> {
        match a {
            Action::Reveal => {
                self.reveal_secret = !self.reveal_secret;
                Vec::new()
            }
            Action::Complete => match self.table.selection() {
                Some(p) if p.state.is_open() => {
                    let id = p.payment.id.rsplit('/').next().unwrap_or("").to_owned();
                    vec![Out::Confirm(
                        format!(
                            "Complete incoming payment {}? It will accept no more money.",
                            short_id(&id)
                        ),
                        Effect::Run(Command::CompleteIncoming { id }),
                    )]
                }
                Some(p) => super::warn(format!("this incoming payment is {}", p.state)),
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
}
