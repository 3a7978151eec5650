//! Operator commands on grants (`grants list|show|approve|reject|revoke|revoke-token|unlock`) and how a grant reads for people.
//! Prints only through [`super::print`].

use clap::Subcommand;
use color_eyre::eyre::{Result, bail};

use super::{
    Backend,
    print::{Columns, Human, emit},
};
use crate::{
    control::{
        Command, Found, Query,
        dto::{GrantFilter, Unlocked},
    },
    gnap::service::GrantView,
    states::TokenState,
};

#[derive(Debug, Subcommand)]
pub enum GrantsCmd {
    /// List grants, newest first. Closed grants (revoked, rejected, expired) are hidden; --all shows them.
    List {
        /// pending, approved, finalized, rejected, revoked or expired.
        #[arg(long)]
        state: Option<String>,
        /// Include closed grants (revoked, e.g. cancelled by their client; rejected; expired).
        #[arg(long, conflicts_with = "state")]
        all: bool,
    },
    /// Show a grant: who asks for what, in plain words, and its tokens.
    Show {
        id: String,
        /// The grant's life step by step (request, interaction page, decision, finish redirect, continue,
        /// tokens, revocation or expiry), each with its time and the id of the HTTP request behind it.
        #[arg(long)]
        timeline: bool,
    },
    /// Approve a pending grant as the resource owner.
    Approve { id: String },
    /// Reject a pending grant, optionally saying why.
    Reject {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Revoke a grant and all its tokens.
    Revoke { id: String },
    /// Revoke one access token by its id (`grants show` lists a grant's tokens): its client must ask for
    /// another; the grant stays.
    RevokeToken { id: String },
    /// Lift a lockout on the interaction page: forget the failed owner sign-ins on grant ID, or (with
    /// --wallet) those of that wallet's owner on every page.
    Unlock {
        #[arg(required_unless_present = "wallet", conflicts_with = "wallet")]
        id: Option<String>,
        #[arg(long)]
        wallet: Option<String>,
    },
}

impl Human for GrantView {
    const COLUMNS: Columns<Self> = &[
        ("ID", |g| g.id.clone()),
        ("STATE", |g| g.state.to_string()),
        ("CLIENT", |g| g.client_name.clone().unwrap_or_else(|| g.client.clone())),
        ("ACCESS", |g| {
            g.access.iter().map(|a| a.type_name()).collect::<Vec<_>>().join(",")
        }),
        ("CREATED", |g| crate::clock::format_ts(g.created_at)),
    ];

    /// What it asks for in plain words, its decision and its tokens.
    fn card(&self) -> String {
        let mut out = format!("grant {}  [{}]\n", self.id, self.state);
        for fact in &self.summary {
            out.push_str(&format!("  {}\n", fact.line()));
        }
        if !self.summary.is_empty() {
            out.push_str("  in detail:\n");
        }
        for line in &self.description {
            out.push_str(&format!("  {line}\n"));
        }
        if let Some(f) = &self.finish_uri {
            out.push_str(&format!("  finish: {f}\n"));
        }
        if let Some(r) = &self.decision_reason {
            out.push_str(&format!("  reason: {r}\n"));
        }
        for t in &self.tokens {
            let state = TokenState::of(t.revoked_at.is_some());
            out.push_str(&format!(
                "  token {} ({}…) {state}, expires {}\n",
                t.id,
                t.hint,
                crate::clock::format_ts(t.expires_at)
            ));
        }
        out
    }
}

/// A grant's timeline, for people: one line per step, `HH:MM:SS.mmm  step  details  [request <id>]` (UTC),
/// with the raw request and the finish hash's inputs on the lines under their steps.
fn timeline_text(g: &GrantView) -> String {
    let mut out = format!("grant {}  [{}]  {}\n", g.id, g.state, g.client);
    for line in g.timeline.iter().flat_map(|step| step.text()) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `grants list|show|approve|reject|revoke|revoke-token|unlock`.
pub(super) async fn grants(b: &Backend, cmd: GrantsCmd, json: bool) -> Result<()> {
    match cmd {
        GrantsCmd::List { state, all } => b.show(Query::Grants(GrantFilter { all, state }), json).await,
        GrantsCmd::Show { id, timeline: false } => b.show(Query::Grant { id }, json).await,
        GrantsCmd::Show { id, timeline: true } => {
            let Found::Grant(g) = b.ask(Query::Grant { id }).await? else {
                bail!("an unexpected answer to a query")
            };
            emit(json, &g.timeline, || timeline_text(&g))
        }
        GrantsCmd::Approve { id } => b.report::<GrantView>(Command::ApproveGrant { id }, json).await,
        GrantsCmd::Reject { id, reason } => b.report::<GrantView>(Command::RejectGrant { id, reason }, json).await,
        GrantsCmd::Revoke { id } => b.report::<GrantView>(Command::RevokeGrant { id }, json).await,
        GrantsCmd::RevokeToken { id } => {
            let ((), said) = b.said(Command::RevokeToken { id: id.clone() }).await?;
            emit(json, &serde_json::json!({ "revokedToken": id }), || format!("{said}\n"))
        }
        GrantsCmd::Unlock { id, wallet } => {
            b.tell::<Unlocked>(Command::UnlockSignIns { grant: id, wallet }, json)
                .await
        }
    }
}
