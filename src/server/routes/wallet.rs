//! The wallet address server (open, unauthenticated): `GET /{name}`, `/{name}/jwks.json` and
//! `/{name}/did.json` over [`crate::wallet`], cacheable for `wallet_cache_max_age_secs`.

use axum::{
    Router,
    extract::{Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde::Serialize;

use crate::server::{error::ApiError, state::AppState};

/// Routes of the wallet address server (open, unauthenticated).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/{name}", get(document))
        .route("/{name}/jwks.json", get(jwks))
        .route("/{name}/did.json", get(did))
}

fn cacheable(state: &AppState, body: impl Serialize) -> Response {
    let value = format!("public, max-age={}", state.settings.wallet_cache_max_age_secs);
    let mut res = crate::server::extract::Json(body).into_response();
    if let Ok(v) = HeaderValue::from_str(&value) {
        res.headers_mut().insert(header::CACHE_CONTROL, v);
    }
    res
}

async fn document(State(state): State<AppState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    let w = state.wallets.get(&name).await?;
    Ok(cacheable(&state, state.wallets.document(&w)))
}

async fn jwks(State(state): State<AppState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    let keys = state.wallets.keys(&name).await?;
    Ok(cacheable(&state, keys))
}

async fn did(State(state): State<AppState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    state.wallets.get(&name).await?;
    Err(ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "not_implemented",
        "DID documents are not implemented",
    ))
}
