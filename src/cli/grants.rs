//! Operator commands on grants (`grants list|show|approve|reject|revoke`) and how a grant reads for people.
//! Prints only through [`super::print`].

use color_eyre::eyre::Result;

use super::{
    Backend, GrantsCmd, dispatch,
    print::{emit, list},
};
use crate::{control, gnap::service::GrantView, states::TokenState};

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
        out.push_str(&format!(
            "  token {} {state}, expires {}\n",
            t.hint,
            crate::clock::format_ts(t.expires_at)
        ));
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
                    crate::clock::format_ts(g.created_at),
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
        GrantsCmd::Approve { id } => b.run(control::Command::ApproveGrant { id }).await?,
        GrantsCmd::Reject { id, reason } => b.run(control::Command::RejectGrant { id, reason }).await?,
        GrantsCmd::Revoke { id } => b.run(control::Command::RevokeGrant { id }).await?,
    };
    emit(json, &one, || grant_text(&one))
}
