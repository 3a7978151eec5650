//! The resource owner's decisions on grants: list, show (with the grant's timeline), approve, reject, revoke.
//! Each decision says who made it ([`Cause`]: the console, the CLI or a direct admin API call, and the admin
//! request's id), and the grant's timeline records that.

use super::{Error, Services, dto::Reject};
use crate::{
    gnap::{GnapError, error::Fault, service::GrantView, timeline::Cause},
    states::GrantState,
};

/// Grants newest first: those in `state` if given, else every grant with `all`, else the open ones (closed
/// grants, [`GrantState::is_closed`], pile up as clients cancel theirs and are hidden by default).
pub async fn list_grants(s: &Services, state: Option<String>, all: bool) -> Result<Vec<GrantView>, Error> {
    let state = state.map(|st| st.parse::<GrantState>()).transpose().map_err(|_| {
        Error::invalid(
            "invalid_request",
            format!("state must be one of {:?}", GrantState::NAMES),
        )
    })?;
    let open_only = state.is_none() && !all;
    let views = s.gnap.list(state, open_only, 200).await?;
    Ok(s.gnap.with_summaries(views).await?)
}

pub async fn show_grant(s: &Services, id: &str) -> Result<GrantView, Error> {
    Ok(s.gnap.show(id).await?)
}

/// Approves a pending grant; one already decided is [`Error::AlreadyDecided`], saying how.
pub async fn approve_grant(s: &Services, id: &str, by: Cause) -> Result<GrantView, Error> {
    match s.gnap.approve(id, by).await {
        Err(e) => Err(decided(s, id, e).await),
        Ok(g) => Ok(g),
    }
}

/// Rejects a pending grant; one already decided is [`Error::AlreadyDecided`], saying how.
pub async fn reject_grant(s: &Services, id: &str, body: Reject, by: Cause) -> Result<GrantView, Error> {
    match s.gnap.reject(id, body.reason, by).await {
        Err(e) => Err(decided(s, id, e).await),
        Ok(g) => Ok(g),
    }
}

/// A refused decision in the operator's words: a grant no longer pending says what it is now.
async fn decided(s: &Services, id: &str, e: GnapError) -> Error {
    if e.fault == Fault::Conflict
        && let Ok(g) = s.gnap.show(id).await
        && g.state != GrantState::Pending
    {
        return Error::AlreadyDecided {
            id: g.id,
            state: g.state,
        };
    }
    e.into()
}

/// Forgets the failed owner sign-ins on grant `grant` or of `wallet`'s owner (exactly one of them).
pub async fn unlock_sign_ins(
    s: &Services,
    grant: Option<&str>,
    wallet: Option<&str>,
    by: Cause,
) -> Result<super::dto::Unlocked, Error> {
    let wallet_id = match (grant, wallet) {
        (Some(_), None) => None,
        (None, Some(w)) => Some(s.wallets.get(w).await?.id.to_string()),
        _ => return Err(Error::invalid("invalid_request", "name a grant or a wallet, not both")),
    };
    let forgotten = s.gnap.unlock(grant, wallet_id.as_deref(), by).await?;
    Ok(super::dto::Unlocked { forgotten })
}

pub async fn revoke_grant(s: &Services, id: &str, by: Cause) -> Result<GrantView, Error> {
    s.gnap.revoke_grant(id, by).await?;
    Ok(s.gnap.show(id).await?)
}
