//! `/outgoing-payments` (create, list, read) and `/outgoing-payment-grant` over [`crate::ase::outgoing`].
//! Creation is idempotent per signed request: the service keeps the answer to each signature, and this edge
//! hands it the refusals it answered, so their replays are refused alike.

use std::collections::HashMap;

use axum::{
    Router,
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post},
};

use super::{list_request, parse_body, wallet_of};
use crate::server::extract::Json;
use crate::{
    ase::outgoing::{CreateOutgoing, GrantContext, RequestKey, Source},
    gnap::model::{AccessItem, Action},
    server::{AppState, error::ApiError, pagination::ListResponse, rs_auth::RsAuth},
};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/outgoing-payments", post(create).get(list))
        .route("/outgoing-payments/{id}", get(read))
        .route("/outgoing-payment-grant", get(spent))
}

async fn create(State(s): State<AppState>, auth: RsAuth) -> Result<Response, ApiError> {
    let req: CreateOutgoing = parse_body(&auth)?;
    let wallet_url = crate::names::wallet_url(&req.wallet_address).to_owned();
    let scope = auth.require("outgoing-payment", Action::Create, &wallet_url)?;
    let source = match (req.quote_id, req.incoming_payment, req.debit_amount) {
        (Some(q), None, None) => Source::Quote(q),
        (None, Some(receiver), Some(debit)) => Source::Incoming { receiver, debit },
        _ => {
            return Err(ApiError::bad_request(
                "invalid_request",
                "give quoteId, or incomingPayment with debitAmount",
            ));
        }
    };
    let wallet = wallet_of(&s, &wallet_url).await?;
    let limits = match &scope.item {
        AccessItem::OutgoingPayment { limits, .. } => limits.clone(),
        _ => None,
    };
    let grant = GrantContext {
        grant_id: auth.token.grant_id.clone(),
        limits,
    };
    let request = RequestKey {
        signature_digest: auth.signed.signature_digest(),
        created: auth.signed.sig.created.unwrap_or_default(),
        window_secs: s.verifier.policy.max_skew_secs,
    };
    let created = s
        .outgoing
        .create(
            &wallet,
            Some(auth.client_id.clone()),
            Some(grant),
            source,
            req.metadata,
            Some(request.clone()),
        )
        .await
        .map_err(ApiError::from);
    match created {
        Ok(dto) => Ok((StatusCode::CREATED, Json(dto)).into_response()),
        Err(e) => {
            // a refusal is remembered, so that a replay of this request is refused alike once the reason is gone
            if e.status.is_client_error() && e.verbatim.is_none() {
                s.outgoing
                    .remember_refusal(&request, e.status.as_u16(), e.envelope().to_string())
                    .await;
            }
            Err(e)
        }
    }
}

async fn list(
    State(s): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
    auth: RsAuth,
) -> Result<Response, ApiError> {
    let (wallet, client, page) = list_request(&s, &q, &auth, "outgoing-payment").await?;
    let page = s.outgoing.list(Some(&wallet), client, None, page).await?;
    Ok(Json(ListResponse::from_page(
        page,
        |r| r.id.clone().into(),
        |r| s.outgoing.dto(&r),
    ))
    .into_response())
}

async fn read(State(s): State<AppState>, Path(id): Path<String>, auth: RsAuth) -> Result<Response, ApiError> {
    let row = s.outgoing.get(&id).await?;
    let wallet_url = format!("{}/{}", s.settings.public_url, row.wallet_name);
    let scope = auth.require("outgoing-payment", Action::Read, &wallet_url)?;
    if !auth.sees(&scope, row.client.as_deref()) {
        return Err(ApiError::not_found("unknown outgoing payment"));
    }
    Ok(Json(s.outgoing.dto(&row)).into_response())
}

async fn spent(State(s): State<AppState>, auth: RsAuth) -> Result<Response, ApiError> {
    let item = auth
        .token
        .access
        .iter()
        .find(|i| matches!(i, AccessItem::OutgoingPayment { .. }))
        .ok_or_else(|| ApiError::forbidden(&s.gnap.grant_endpoint(), "the token is not for outgoing payments"))?;
    let (limits, wallet_asset) = match item {
        AccessItem::OutgoingPayment { limits, identifier, .. } => {
            let asset = s.wallets.by_url(identifier).await?.map(|w| w.asset());
            (limits.clone(), asset)
        }
        _ => (None, None),
    };
    let spent = s
        .outgoing
        .grant_spent(&auth.token.grant_id, limits.as_ref(), wallet_asset)
        .await?;
    Ok(Json(spent).into_response())
}
