//! `/quotes`: create and read over [`crate::ase::quotes`].

use axum::{
    Router,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post},
};

use super::{parse_body, wallet_of};
use crate::server::extract::Json;
use crate::{
    ase::quotes::CreateQuote,
    gnap::model::Action,
    server::{AppState, error::ApiError, rs_auth::RsAuth},
};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/quotes", post(create))
        .route("/quotes/{id}", get(read))
}

async fn create(State(s): State<AppState>, auth: RsAuth) -> Result<Response, ApiError> {
    let req: CreateQuote = parse_body(&auth)?;
    let wallet_url = crate::names::wallet_url(&req.wallet_address).to_owned();
    auth.require("quote", Action::Create, &wallet_url)?;
    let wallet = wallet_of(&s, &wallet_url).await?;
    let q = s.quotes.create(&wallet, Some(auth.client_id.clone()), req).await?;
    Ok((StatusCode::CREATED, Json(s.quotes.dto(&q))).into_response())
}

async fn read(State(s): State<AppState>, Path(id): Path<String>, auth: RsAuth) -> Result<Response, ApiError> {
    let q = s.quotes.get(&id).await?;
    let wallet_url = format!("{}/{}", s.settings.public_url, q.wallet_name);
    let scope = auth.require("quote", Action::Read, &wallet_url)?;
    if !auth.sees(&scope, q.client.as_deref()) {
        return Err(ApiError::not_found("unknown quote"));
    }
    Ok(Json(s.quotes.dto(&q)).into_response())
}
