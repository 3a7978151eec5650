//! The handlers, one file per resource: thin wrappers that check access, call one service operation and
//! turn its answer (or its typed error, through [`super::error`]) into HTTP.

pub mod gnap;
pub mod incoming;
pub mod interaction;
pub mod outgoing;
pub mod quotes;
pub mod wallet;

use super::{AppState, error::ApiError, rs_auth::RsAuth};
use crate::wallet::Wallet;

/// The wallet a request names, which must be one of ours.
pub async fn wallet_of(state: &AppState, url: &str) -> Result<Wallet, ApiError> {
    state
        .wallets
        .by_url(url)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("{url} is not a wallet address of this server")))
}

pub fn parse_body<T: serde::de::DeserializeOwned>(auth: &RsAuth) -> Result<T, ApiError> {
    serde_json::from_slice(&auth.signed.body)
        .map_err(|e| ApiError::bad_request("invalid_request", format!("invalid request body: {e}")))
}
