//! `/incoming-payments`: create, list, read (with `methods`, or the public view without `Authorization`) and
//! complete, over [`crate::ase::incoming`]. Access is checked here; the service decides everything else.

use std::collections::HashMap;

use axum::{
    Router,
    extract::{FromRequest, Path, Query, Request, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post},
};

use super::{list_request, parse_body, wallet_of};
use crate::server::extract::Json;
use crate::{
    ase::incoming::CreateIncoming,
    gnap::model::Action,
    server::{AppState, error::ApiError, pagination::ListResponse, rs_auth::RsAuth},
};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/incoming-payments", post(create).get(list))
        .route("/incoming-payments/{id}", get(read))
        .route("/incoming-payments/{id}/complete", post(complete))
}

async fn create(State(s): State<AppState>, auth: RsAuth) -> Result<Response, ApiError> {
    let req: CreateIncoming = parse_body(&auth)?;
    let wallet_url = crate::names::wallet_url(&req.wallet_address).to_owned();
    auth.require("incoming-payment", Action::Create, &wallet_url)?;
    let wallet = wallet_of(&s, &wallet_url).await?;
    let row = s.incoming.create(&wallet, Some(auth.client_id.clone()), req).await?;
    Ok((StatusCode::CREATED, Json(s.incoming.dto_with_methods(&row)?)).into_response())
}

async fn list(
    State(s): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
    auth: RsAuth,
) -> Result<Response, ApiError> {
    let (wallet, client, page) = list_request(&s, &q, &auth, "incoming-payment").await?;
    let page = s.incoming.list(Some(&wallet), client, None, page).await?;
    Ok(Json(ListResponse::from_page(
        page,
        |r| r.id.clone().into(),
        |r| s.incoming.dto(&r),
    ))
    .into_response())
}

/// Authenticated: the full resource with `methods`. Without `Authorization`: the public view.
async fn read(State(s): State<AppState>, Path(id): Path<String>, req: Request) -> Result<Response, ApiError> {
    if !req.headers().contains_key(axum::http::header::AUTHORIZATION) {
        let row = s.incoming.get(&id).await?;
        let dto = s.incoming.dto(&row);
        return Ok(Json(serde_json::json!({
            "authServer": s.gnap.grant_endpoint(),
            "receivedAmount": dto.received_amount,
        }))
        .into_response());
    }
    let auth = RsAuth::from_request(req, &s).await?;
    let row = s.incoming.get(&id).await?;
    let wallet_url = format!("{}/{}", s.settings.public_url, row.wallet_name);
    let scope = auth.require("incoming-payment", Action::Read, &wallet_url)?;
    if !auth.sees(&scope, row.client.as_deref()) {
        return Err(ApiError::not_found("unknown incoming payment"));
    }
    Ok(Json(s.incoming.dto_with_methods(&row)?).into_response())
}

async fn complete(State(s): State<AppState>, Path(id): Path<String>, auth: RsAuth) -> Result<Response, ApiError> {
    let row = s.incoming.get(&id).await?;
    let wallet_url = format!("{}/{}", s.settings.public_url, row.wallet_name);
    let scope = auth.require("incoming-payment", Action::Complete, &wallet_url)?;
    if !auth.manages(&scope, row.client.as_deref()) {
        return Err(ApiError::not_found("unknown incoming payment"));
    }
    let row = s.incoming.complete(&row.id).await?;
    Ok(Json(s.incoming.dto(&row)).into_response())
}
