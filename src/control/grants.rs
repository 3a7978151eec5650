//! The resource owner's decisions on grants: list, show, approve, reject, revoke.

use super::{Error, Services, dto::Reject};
use crate::{gnap::service::GrantView, states::GrantState};

pub async fn list_grants(s: &Services, state: Option<String>) -> Result<Vec<GrantView>, Error> {
    let state = state.map(|st| st.parse::<GrantState>()).transpose().map_err(|_| {
        Error::invalid(
            "invalid_request",
            format!("state must be one of {:?}", GrantState::NAMES),
        )
    })?;
    Ok(s.gnap.list(state, 200).await?)
}

pub async fn show_grant(s: &Services, id: &str) -> Result<GrantView, Error> {
    Ok(s.gnap.show(id).await?)
}

pub async fn approve_grant(s: &Services, id: &str) -> Result<GrantView, Error> {
    Ok(s.gnap.approve(id).await?)
}

pub async fn reject_grant(s: &Services, id: &str, body: Reject) -> Result<GrantView, Error> {
    Ok(s.gnap.reject(id, body.reason).await?)
}

pub async fn revoke_grant(s: &Services, id: &str) -> Result<GrantView, Error> {
    s.gnap.revoke_grant(id).await?;
    Ok(s.gnap.show(id).await?)
}
