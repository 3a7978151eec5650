//! The handlers, one file per resource: thin wrappers that check access, call one service operation and
//! turn its answer (or its typed error, through [`super::error`]) into HTTP.

pub mod gnap;
pub mod incoming;
pub mod interaction;
pub mod outgoing;
pub mod quotes;
pub mod wallet;
pub mod workshop;

use std::collections::HashMap;

use super::{AppState, error::ApiError, pagination::ListQuery, rs_auth::RsAuth};
use crate::{gnap::model::Action, store::payments::PageQuery, wallet::Wallet};

/// The wallet a request names, which must be one of ours.
pub async fn wallet_of(state: &AppState, url: &str) -> Result<Wallet, ApiError> {
    state
        .wallets
        .by_url(url)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("{url} is not a wallet address of this server")))
}

/// What a list request asks for: the wallet's id (one of ours, and listable with the token), the client whose
/// resources alone the token may list (`None`: all of the wallet's), and the page.
pub async fn list_request(
    s: &AppState,
    query: &HashMap<String, String>,
    auth: &RsAuth,
    type_name: &str,
) -> Result<(String, Option<String>, PageQuery), ApiError> {
    let q = ListQuery::parse(query)?;
    let wallet_url = crate::names::wallet_url(&q.wallet_address).to_owned();
    let scope = auth.require(type_name, Action::List, &wallet_url)?;
    let wallet = wallet_of(s, &wallet_url).await?;
    Ok((wallet.id.into(), auth.owner_filter(&scope), q.page))
}

pub fn parse_body<T: serde::de::DeserializeOwned>(auth: &RsAuth) -> Result<T, ApiError> {
    serde_json::from_slice(&auth.signed.body)
        .map_err(|e| ApiError::bad_request("invalid_request", format!("invalid request body: {e}")))
}
