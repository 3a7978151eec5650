//! The wallet address server (open, unauthenticated): `GET /{name}`, `/{name}/jwks.json` and
//! `/{name}/did.json` over [`crate::wallet`], cacheable for `wallet_cache_max_age_secs`. `GET /{name}` asked
//! for `application/spsp4+json` answers SPSP credentials instead ([`crate::ase::spsp`]), never cached.

use axum::{
    Router,
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde::Serialize;

use crate::{
    ase::spsp::{SPSP_MEDIA_TYPE, receipt_setup},
    server::{error::ApiError, state::AppState},
};

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

async fn document(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let w = state.wallets.get(&name).await?;
    state.wallets.note_read(&w);
    if !state.spsp.enabled() {
        return Ok(cacheable(&state, state.wallets.document(&w)));
    }
    if !asks_for_spsp(&headers) {
        let mut res = cacheable(&state, state.wallets.document(&w));
        // the same URL answers SPSP to SPSP clients: caches must tell the two apart
        res.headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
        return Ok(res);
    }
    let text = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or_default());
    let receipt = receipt_setup(text("receipt-nonce"), text("receipt-secret"))?;
    let body = state.spsp.credentials(&w, receipt)?;
    let mut res = crate::server::extract::Json(body).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(SPSP_MEDIA_TYPE));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    Ok(res)
}

/// Whether `Accept` lists the SPSP media type (with a non-zero quality), as SPSP clients send it.
fn asks_for_spsp(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .is_some_and(|q| q.parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            media.eq_ignore_ascii_case(SPSP_MEDIA_TYPE) && !refused
        })
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
