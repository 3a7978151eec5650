//! The Grants pane: the GNAP grants with pending ones in the danger style, a grant's access, tokens and
//! spending, its timeline (fetched when the detail opens), and approving, rejecting (with an optional reason)
//! and revoking — each behind a confirm. Closed grants (revoked, rejected, expired) are hidden unless `F`
//! (or `:grants all`) shows them.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};

use crate::{
    control::Command,
    gnap::{
        service::GrantView,
        timeline::{GrantStep, short},
    },
    states::{GrantState, TokenState},
    text::sanitize,
    tui::{
        action::Action,
        app::{App, Effect, Level, short_id},
        pane::Pane,
        theme::Theme,
        widgets::{kv::kv, prompt::PromptKind, table::table, time::relative},
    },
};

/// Draws the grants table into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let w = &app.grants;
    table(
        &app.table_view(Pane::Grants),
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
                Cell::from(relative(&g.created_at, app.now)).style(theme.dim),
            ]
        },
    );
}

/// The text a `/` filter matches a row against.
pub fn haystack(g: &GrantView) -> String {
    format!(
        "{} {} {} {}",
        g.id,
        g.state,
        g.client,
        g.client_name.clone().unwrap_or_default()
    )
}

/// The detail view's title and lines, if a grant is selected.
pub fn detail<'a>(app: &'a App, theme: &Theme) -> Option<(String, Vec<Line<'a>>)> {
    let g = app.selected_grant()?;
    let mut lines: Vec<Line> = Vec::new();
    let title = format!(" grant {} ", short_id(&g.id));
    lines.push(Line::from(vec![
        Span::styled(format!("{:<14}", "state"), theme.dim),
        Span::styled(g.state.as_str(), theme.state(g.state)),
    ]));
    for d in &g.description {
        lines.push(Line::from(sanitize(d)));
    }
    lines.push(Line::from(""));
    lines.push(kv(theme, "id", g.id.clone()));
    lines.push(kv(theme, "created", crate::clock::format_ts(g.created_at)));
    if let Some(e) = &g.interaction_expires_at {
        lines.push(kv(
            theme,
            "decide by",
            format!("{} ({})", crate::clock::format_ts(*e), relative(e, app.now)),
        ));
    }
    if let Some(fu) = &g.finish_uri {
        lines.push(kv(theme, "finish", sanitize(fu)));
    }
    if let Some(r) = &g.decision_reason {
        lines.push(kv(theme, "reason", sanitize(r)));
    }
    if let Some(sp) = app.grant_spent.get(&g.id) {
        let amount =
            |a: &Option<crate::money::Amount>| a.as_ref().map(ToString::to_string).unwrap_or_else(|| "nothing".into());
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
            Span::styled(format!(" expires {}", relative(&t.expires_at, app.now)), theme.dim),
        ]));
    }
    if g.state.can_decide() && !app.readonly {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled("a approve · x reject", theme.danger)));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("timeline", theme.header)));
    match app.timeline_of(&g.id) {
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

/// Approve, reject and revoke the selected grant; show or hide closed grants (`F`).
pub fn act(app: &mut App, a: Action) -> Vec<Effect> {
    match a {
        Action::AllGrants => {
            app.all_grants = !app.all_grants;
            app.grants.selected = 0;
            vec![app.load(Pane::Grants)]
        }
        Action::Approve => match app.selected_grant() {
            Some(g) if g.state.can_decide() => {
                let q = format!(
                    "Approve grant {} for {}?",
                    short_id(&g.id),
                    g.client_name.clone().unwrap_or_else(|| g.client.clone())
                );
                let e = Effect::Run(Command::ApproveGrant { id: g.id.clone() });
                app.ask(q, e)
            }
            Some(g) => {
                let text = format!("grant {} is already {}", short_id(&g.id), g.state);
                app.flash(Level::Warn, text);
                Vec::new()
            }
            None => Vec::new(),
        },
        Action::Reject => match app.selected_grant() {
            Some(g) if g.state.can_decide() => {
                let id = g.id.clone();
                app.open_prompt(PromptKind::Reason(id))
            }
            Some(g) => {
                let text = format!("grant {} is already {}", short_id(&g.id), g.state);
                app.flash(Level::Warn, text);
                Vec::new()
            }
            None => Vec::new(),
        },
        Action::Revoke => match app.selected_grant() {
            Some(g) if g.state.can_revoke() => {
                let (q, e) = (
                    format!("Revoke grant {} and all its tokens?", short_id(&g.id)),
                    Effect::Run(Command::RevokeGrant { id: g.id.clone() }),
                );
                app.ask(q, e)
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// `:grants all`: the Grants pane with closed grants (revoked, rejected, expired) too.
pub fn show_all(app: &mut App) -> Vec<Effect> {
    app.all_grants = true;
    app.pane = Pane::Grants;
    app.grants.selected = 0;
    vec![app.load(Pane::Grants)]
}

/// The reason typed for rejecting `grant`: confirm before rejecting.
pub fn submit_reason(app: &mut App, grant: String, text: &str) -> Vec<Effect> {
    let reason = Some(text.trim().to_owned()).filter(|r| !r.is_empty());
    app.ask(
        format!("Reject grant {}?", short_id(&grant)),
        Effect::Run(Command::RejectGrant { id: grant, reason }),
    )
}
