//! The Grants pane: the GNAP grants with pending ones in the danger style, a grant's access, tokens and
//! spending, its timeline (fetched when the detail opens), and approving, rejecting (with an optional reason)
//! and revoking — each behind a confirm. Closed grants (revoked, rejected, expired) are hidden unless `F`
//! (or `:grants all`) shows them.

use std::collections::HashMap;

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};

use super::{Cx, Out, Row, Table, View};
use crate::{
    ase::outgoing::GrantSpent,
    control::{Command, Found, Query},
    gnap::{
        service::GrantView,
        timeline::{GrantStep, short},
    },
    states::{GrantState, TokenState},
    text::sanitize,
    tui::{
        action::Action,
        effect::Effect,
        key::{Key, PaneKey},
        pane::Pane,
        theme::Theme,
        widgets::{kv::kv, prompt::PromptKind, short_id, table::table, time::relative},
    },
};

/// The pane's own keys (the keymap adds the global ones and applies `[keys]` overrides).
pub const KEYS: &[PaneKey] = &[
    PaneKey {
        keys: &[Key::ch('a')],
        action: Action::Approve,
        description: "approve the pending grant",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('x')],
        action: Action::Reject,
        description: "reject the pending grant (with an optional reason)",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('V')],
        action: Action::Revoke,
        description: "revoke the grant and its tokens",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('U')],
        action: Action::Unlock,
        description: "unlock the owner's sign-in on the page (after failed passphrases)",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('F')],
        action: Action::AllGrants,
        description: "show or hide closed grants (revoked, rejected, expired)",
        dangerous: false,
        hint: true,
    },
];

/// The Grants pane's state.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    pub table: Table<GrantView>,
    /// Spent amounts of outgoing-payment grants in their current interval.
    pub spent: HashMap<String, GrantSpent>,
    /// The timeline of the grant whose detail is open (grant id, steps), fetched when it opens.
    pub timeline: Option<(String, Vec<GrantStep>)>,
    /// Closed grants (revoked, rejected, expired) are shown too (`F`, `:grants all`).
    pub all: bool,
}

impl Row for GrantView {
    fn haystack(&self) -> String {
        format!(
            "{} {} {} {}",
            self.id,
            self.state,
            self.client,
            self.client_name.clone().unwrap_or_default()
        )
    }
    fn key(&self) -> String {
        self.id.clone()
    }
}

impl Grants {
    /// The timeline of grant `id`, when it was fetched.
    pub fn timeline_of(&self, id: &str) -> Option<&[GrantStep]> {
        self.timeline
            .as_ref()
            .filter(|(g, _)| g == id)
            .map(|(_, steps)| steps.as_slice())
    }

    /// Shows closed grants too (`:grants all`).
    pub fn show_all(&mut self) -> Vec<Out> {
        self.all = true;
        self.table.selected = 0;
        vec![Out::Show, Out::Reload]
    }

    /// Asks to forget the failed owner sign-ins on the selected grant (`U`, `:unlock`).
    fn unlock(&self) -> Vec<Out> {
        match self.table.selection() {
            Some(g) => vec![Out::Confirm(
                format!("Let the owner sign in again on grant {}?", short_id(&g.id)),
                Effect::Run(Command::UnlockSignIns {
                    grant: Some(g.id.clone()),
                    wallet: None,
                }),
            )],
            None => super::warn("select a grant first"),
        }
    }
}

impl View for Grants {
    listed_by_table!();
    fn narrowed(&self) -> Option<String> {
        self.all.then(|| "all".to_owned())
    }
    fn widen(&mut self) -> bool {
        std::mem::take(&mut self.all)
    }
    /// Open grants only, unless `F` shows them all.
    fn query(&self, _cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        Some(Query::Grants(crate::control::dto::GrantFilter {
            all: self.all,
            state: None,
        }))
    }
    /// The grants, then what each outgoing-payment grant has spent (asked for after them), and the timeline
    /// of the one whose detail is open.
    fn found(&mut self, found: Found, _append: bool, cx: &Cx<'_>) -> Vec<Out> {
        match found {
            Found::Grants(g) => {
                self.table.set(g, None, false);
                let mut out = vec![Out::Run(Effect::ask(Pane::Grants, Query::GrantSpending))];
                if cx.in_view && cx.detail_open {
                    out.extend(self.detail_needs(true).map(Out::Run));
                }
                return out;
            }
            Found::GrantSpending(spent) => self.spent = spent.into_iter().collect(),
            Found::Grant(g) => self.timeline = Some((g.id, g.timeline)),
            _ => {}
        }
        Vec::new()
    }
    fn detail_needs(&self, fresh: bool) -> Option<Effect> {
        let g = self.table.selection()?;
        let shown = self.timeline.as_ref().is_some_and(|(id, _)| *id == g.id);
        (fresh || !shown).then(|| Effect::ask(Pane::Grants, Query::Grant { id: g.id.clone() }))
    }

    /// The grants table.
    fn draw(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        let empty = if self.all {
            "nothing here yet"
        } else {
            "no open grants (F shows revoked, rejected and expired ones too)"
        };
        let tags: Vec<String> = self.narrowed().into_iter().collect();
        table(
            &w.view(Pane::Grants, &tags, empty),
            theme,
            f,
            area,
            &["ID", "STATE", "CLIENT", "ACCESS", "TOKENS", "CREATED"],
            &[
                Constraint::Length(9),
                Constraint::Length(10),
                Constraint::Min(16),
                Constraint::Length(22),
                Constraint::Length(7),
                Constraint::Length(10),
            ],
            (w.loaded, w.loading, w.items.len()),
            |i| {
                let g = &w.items[i];
                let live = g.tokens.iter().filter(|t| t.revoked_at.is_none()).count();
                let state_style = if g.state == GrantState::Pending {
                    theme.danger
                } else {
                    theme.state(g.state)
                };
                vec![
                    Cell::from(short_id(&g.id)),
                    Cell::from(g.state.as_str()).style(state_style),
                    Cell::from(sanitize(&g.client_name.clone().unwrap_or_else(|| g.client.clone()))),
                    Cell::from(g.access.iter().map(|a| a.type_name()).collect::<Vec<_>>().join(",")),
                    Cell::from(live.to_string()),
                    Cell::from(relative(&g.created_at, cx.now)).style(theme.dim),
                ]
            },
        );
    }

    fn crumb(&self) -> Option<String> {
        self.table.selection().map(|g| short_id(&g.id))
    }

    fn detail(&self, cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let g = self.table.selection()?;
        let mut lines: Vec<Line> = Vec::new();
        let title = format!(" grant {} ", short_id(&g.id));
        lines.push(Line::from(vec![
            Span::styled(format!("{:<14}", "state"), theme.dim),
            Span::styled(g.state.as_str(), theme.state(g.state)),
        ]));
        for f in &g.summary {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<14}", f.label), theme.dim),
                Span::raw(sanitize(&f.text)),
            ]));
            if let Some(u) = &f.url {
                lines.push(Line::from(Span::styled(
                    format!("{:<14}{}", "", sanitize(u)),
                    theme.dim,
                )));
            }
        }
        for d in &g.description {
            lines.push(Line::from(sanitize(d)));
        }
        lines.push(Line::from(""));
        lines.push(kv(theme, "id", g.id.clone()));
        lines.push(kv(theme, "created", crate::clock::format_ts(g.created_at)));
        if let Some(e) = g
            .interaction_expires_at
            .as_ref()
            .filter(|_| g.state == GrantState::Pending)
        {
            lines.push(kv(
                theme,
                "decide by",
                format!("{} ({})", crate::clock::format_ts(*e), relative(e, cx.now)),
            ));
        }
        if let Some(fu) = &g.finish_uri {
            lines.push(kv(theme, "finish", sanitize(fu)));
        }
        if let Some(r) = &g.decision_reason {
            lines.push(kv(theme, "reason", sanitize(r)));
        }
        if let Some(sp) = self.spent.get(&g.id) {
            let amount = |a: &Option<crate::money::Amount>| {
                a.as_ref().map(ToString::to_string).unwrap_or_else(|| "nothing".into())
            };
            lines.push(kv(
                theme,
                "spent",
                format!(
                    "{} debited, {} received (this interval)",
                    amount(&sp.spent_debit_amount),
                    amount(&sp.spent_receive_amount)
                ),
            ));
        }
        for t in &g.tokens {
            let state = TokenState::of(t.revoked_at.is_some());
            lines.push(Line::from(vec![
                Span::styled(format!("{:<14}", "token"), theme.dim),
                Span::raw(format!("{} ", t.hint)),
                Span::styled(state.as_str(), theme.state(state)),
                Span::styled(format!(" expires {}", relative(&t.expires_at, cx.now)), theme.dim),
            ]));
        }
        if g.state.can_decide() && !cx.readonly {
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled("a approve · x reject", theme.danger)));
        }
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled("timeline", theme.header)));
        match self.timeline_of(&g.id) {
            None => lines.push(Line::from(Span::styled("loading…", theme.dim))),
            Some([]) => lines.push(Line::from(Span::styled("no steps recorded", theme.dim))),
            Some(steps) => {
                for s in steps {
                    lines.extend(step_lines(theme, s));
                }
            }
        }
        Some((title, lines))
    }

    /// Approve, reject, revoke and unlock the selected grant; show or hide closed grants (`F`).
    fn act(&mut self, a: Action, _cx: &Cx<'_>) -> Vec<Out> {
        let already = |g: &GrantView| super::warn(format!("grant {} is already {}", short_id(&g.id), g.state));
        match a {
            Action::AllGrants => {
                self.all = !self.all;
                self.table.selected = 0;
                vec![Out::Reload]
            }
            Action::Approve => match self.table.selection() {
                Some(g) if g.state.can_decide() => {
                    let q = format!(
                        "Approve grant {} for {}?",
                        short_id(&g.id),
                        g.client_name.clone().unwrap_or_else(|| g.client.clone())
                    );
                    vec![Out::Confirm(q, Effect::Run(Command::ApproveGrant { id: g.id.clone() }))]
                }
                Some(g) => already(g),
                None => Vec::new(),
            },
            Action::Reject => match self.table.selection() {
                Some(g) if g.state.can_decide() => vec![Out::Prompt(PromptKind::Reason(g.id.clone()))],
                Some(g) => already(g),
                None => Vec::new(),
            },
            Action::Unlock => self.unlock(),
            Action::Revoke => match self.table.selection() {
                Some(g) if g.state.can_revoke() => vec![Out::Confirm(
                    format!("Revoke grant {} and all its tokens?", short_id(&g.id)),
                    Effect::Run(Command::RevokeGrant { id: g.id.clone() }),
                )],
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// `:unlock` forgets the failed owner sign-ins on the selected grant (a lockout on its interaction page).
    fn command(&mut self, head: &str, _rest: &str, cx: &Cx<'_>) -> Option<Vec<Out>> {
        if !matches!(head, "unlock" | "revoke-token") {
            return None;
        }
        if cx.readonly {
            return Some(super::warn("read-only mode"));
        }
        if head == "revoke-token" {
            let Some(g) = self.table.selection() else {
                return Some(super::warn("select a grant first"));
            };
            // the newest live token: the one its client uses now
            let live = g.tokens.iter().filter(|t| t.revoked_at.is_none());
            return Some(match live.max_by_key(|t| t.created_at) {
                Some(t) => vec![Out::Confirm(
                    format!("Revoke token {}… of grant {}?", sanitize(&t.hint), short_id(&g.id)),
                    Effect::Run(Command::RevokeToken { id: t.id.clone() }),
                )],
                None => super::warn("the grant has no live token"),
            });
        }
        Some(self.unlock())
    }

    fn commands(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "unlock",
                "forget the failed owner sign-ins on the selected grant (lift a lockout)",
            ),
            (
                "revoke-token",
                "revoke the selected grant's newest live access token (its client must ask for another)",
            ),
        ]
    }

    /// The reason typed for rejecting a grant: confirm before rejecting.
    fn submit(&mut self, kind: PromptKind, text: &str, _cx: &Cx<'_>) -> Vec<Out> {
        let PromptKind::Reason(grant) = kind else {
            return Vec::new();
        };
        let reason = Some(text.trim().to_owned()).filter(|r| !r.is_empty());
        vec![Out::Confirm(
            format!("Reject grant {}?", short_id(&grant)),
            Effect::Run(Command::RejectGrant { id: grant, reason }),
        )]
    }
}

/// A step of a grant's timeline: time, step, details (client text sanitized), `×N until` for repeats and the
/// short id of the HTTP request behind it; the raw request and the hash inputs on dim lines under it.
fn step_lines<'a>(theme: &Theme, s: &GrantStep) -> Vec<Line<'a>> {
    let (head, more) = s.lines();
    let mut spans = vec![
        Span::styled(format!("{}  ", GrantStep::clock(&s.at)), theme.dim),
        Span::raw(format!("{:<16}  ", s.kind.label())),
        Span::raw(sanitize(&head)),
    ];
    if s.count > 1 {
        let last = GrantStep::clock(s.last_at.as_ref().unwrap_or(&s.at));
        spans.push(Span::styled(format!("  ×{} until {last}", s.count), theme.pending));
    }
    if let Some(r) = &s.request_id {
        spans.push(Span::styled(format!("  [request {}]", short(r)), theme.dim));
    }
    let mut out = vec![Line::from(spans)];
    out.extend(
        more.iter()
            .map(|m| Line::from(Span::styled(format!("{:14}{}", "", sanitize(m)), theme.dim))),
    );
    out
}
