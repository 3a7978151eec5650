//! Operator commands on grants (`grants list|show|approve|reject|revoke`) and how a grant reads for people.
//! Prints only through [`super::print`].

use color_eyre::eyre::Result;

use super::{
    Backend, GrantsCmd, dispatch,
    print::{emit, list},
};
use crate::{
    control::{self, dto::Reject},
    gnap::service::GrantView,
    states::TokenState,
};

/// A grant, for people: what it asks for in plain words, its decision and its tokens.
fn grant_text(g: &GrantView) -> String {
    let mut out = format!("grant {}  [{}]\n", g.id, g.state);
    for line in &g.description {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(f) = &g.finish_uri {
        out.push_str(&format!("  finish: {f}\n"));
    }
    if let Some(r) = &g.decision_reason {
        out.push_str(&format!("  reason: {r}\n"));
    }
    for t in &g.tokens {
        let state = TokenState::of(t.revoked_at.is_some());
        out.push_str(&format!("  token {} {state}, expires {}\n", t.hint, t.expires_at));
    }
    out
}

/// A grant's timeline, for people: one line per step, `HH:MM:SS.mmm  step  details  [request <id>]` (UTC),
/// with the raw request and the finish hash's inputs on the lines under their steps.
fn timeline_text(g: &GrantView) -> String {
    let mut out = format!("grant {}  [{}]  {}\n", g.id, g.state, g.client);
    for step in &g.timeline {
        for line in step.text() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// `grants list|show|approve|reject|revoke`.
pub(super) async fn grants(b: &Backend, cmd: GrantsCmd, json: bool) -> Result<()> {
    let one = match cmd {
        GrantsCmd::List { state, all } => {
            let gs = dispatch!(b, c => c.list_grants(state.as_deref(), all), l => control::list_grants(&l.state, state.clone(), all))?;
            return list(json, &gs, &["ID", "STATE", "CLIENT", "ACCESS", "CREATED"], |g| {
                vec![
                    g.id.clone(),
                    g.state.to_string(),
                    g.client_name.clone().unwrap_or_else(|| g.client.clone()),
                    g.access.iter().map(|a| a.type_name()).collect::<Vec<_>>().join(","),
                    g.created_at.clone(),
                ]
            });
        }
        GrantsCmd::Show { id, timeline } => {
            let g = dispatch!(b, c => c.show_grant(&id), l => control::show_grant(&l.state, &id))?;
            if timeline {
                return emit(json, &g.timeline, || timeline_text(&g));
            }
            g
        }
        GrantsCmd::Approve { id } => {
            dispatch!(b, c => c.approve_grant(&id), l => control::approve_grant(&l.state, &id, control::Cause::cli()))?
        }
        GrantsCmd::Reject { id, reason } => {
            let body = Reject { reason };
            dispatch!(b, c => c.reject_grant(&id, &body), l => control::reject_grant(&l.state, &id, body.clone(), control::Cause::cli()))?
        }
        GrantsCmd::Revoke { id } => {
            dispatch!(b, c => c.revoke_grant(&id), l => control::revoke_grant(&l.state, &id, control::Cause::cli()))?
        }
    };
    emit(json, &one, || grant_text(&one))
}
