//! The Outgoing pane: outgoing payments with sent/debit gauges and failure reasons, the `failed` filter
//! (`F`, `:outgoing failed`), a payment's detail and state history, and retry and cancel (behind a confirm).

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};

use super::{Cx, Out, Row, Table, View, list::page_of};
use crate::{
    ase::outgoing::OutgoingView,
    control::{Command, Found, Query, dto::PaymentFilter},
    states::OutgoingState,
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
        },
    },
};

/// The pane's own keys (the keymap adds the global ones and applies `[keys]` overrides).
pub const KEYS: &[PaneKey] = &[
    PaneKey {
        keys: &[Key::ch('F')],
        action: Action::FailedOnly,
        description: "show only failed payments",
        dangerous: false,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('R')],
        action: Action::Retry,
        description: "retry the failed payment",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('C')],
        action: Action::Cancel,
        description: "cancel the unsent payment",
        dangerous: true,
        hint: true,
    },
];

/// The Outgoing pane's state.
#[derive(Debug, Clone, Default)]
pub struct Outgoing {
    pub table: Table<OutgoingView>,
    /// Only failed payments (`F`, `:outgoing failed`).
    pub failed_only: bool,
}

impl Row for OutgoingView {
    /// The text a `/` filter matches a row against.
    fn haystack(&self) -> String {
        let p = self;
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
    fn key(&self) -> String {
        self.payment.id.clone()
    }
}

impl Outgoing {
    /// `:outgoing failed`: only failed payments.
    pub fn show_failed(&mut self) -> Vec<Out> {
        self.failed_only = true;
        vec![Out::Show, Out::Reload]
    }

    /// Payment `id` sent more: its row updated in place; false when it is not loaded.
    pub fn on_progress(&mut self, id: &str, sent: i64) -> bool {
        let Some(row) = self.table.items.iter_mut().find(|r| r.payment.id.ends_with(id)) else {
            return false;
        };
        if let Ok(v) = crate::money::Value::from_i64(sent) {
            row.payment.sent_amount.value = v;
        }
        true
    }
}

impl View for Outgoing {
    listed_by_table!();
    fn searches_store(&self) -> bool {
        true
    }
    fn narrowed(&self) -> Option<String> {
        self.failed_only.then(|| OutgoingState::Failed.to_string())
    }
    fn widen(&mut self) -> bool {
        std::mem::take(&mut self.failed_only)
    }
    fn query(&self, cursor: Option<String>, q: Option<String>) -> Option<Query> {
        let state = self.failed_only.then(|| OutgoingState::Failed.to_string());
        Some(Query::Outgoing {
            filter: PaymentFilter {
                state,
                ..page_of(cursor, q)
            },
        })
    }
    fn found(&mut self, found: Found, append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        if let Found::Outgoing(l) = found {
            self.table.set(l.items, l.next_cursor, append);
        }
        Vec::new()
    }

    /// Draws the outgoing payments table into `area`.
    fn draw(&self, _cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        let tags: Vec<String> = self.narrowed().into_iter().collect();
        let gauge_width = if area.width >= 110 { 16 } else { 8 };
        table(
            &w.view(Pane::Outgoing, &tags, "nothing here yet"),
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

    fn crumb(&self) -> Option<String> {
        self.table.selection().map(|p| short_id(&p.payment.id))
    }

    /// The detail view's title and lines, if a payment is selected.
    fn detail(&self, cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let p = self.table.selection()?;
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
        lines.extend(history(cx.history.of(&p.payment.id), theme));
        Some((title, lines))
    }

    /// Only failed payments (`F`) and retry or cancel the selected payment.
    fn act(&mut self, a: Action, _cx: &Cx<'_>) -> Vec<Out> {
        match a {
            Action::FailedOnly => {
                self.failed_only = !self.failed_only;
                self.table.selected = 0;
                vec![Out::Reload]
            }
            Action::Retry => match self.table.selection() {
                Some(p) if p.state.can_retry() => {
                    let id = p.payment.id.rsplit('/').next().unwrap_or("").to_owned();
                    vec![Out::Confirm(
                        format!("Retry outgoing payment {}?", short_id(&id)),
                        Effect::Run(Command::RetryOutgoing { id }),
                    )]
                }
                Some(_) => super::warn("only failed payments can be retried"),
                None => Vec::new(),
            },
            Action::Cancel => match self.table.selection() {
                Some(p) if p.state.can_cancel(p.payment.sent_amount.value.is_zero()) => {
                    let id = p.payment.id.rsplit('/').next().unwrap_or("").to_owned();
                    vec![Out::Confirm(
                        format!("Cancel outgoing payment {}?", short_id(&id)),
                        Effect::Run(Command::CancelOutgoing { id }),
                    )]
                }
                Some(_) => super::warn("only payments that have sent nothing can be cancelled"),
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
}
