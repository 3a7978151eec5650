//! `/auth` handlers: thin wrappers that take a signed request, resolve whose key must have signed it, verify,
//! and call one service operation. Every failure is a GNAP error envelope.

use axum::{
    Extension, Router,
    extract::{FromRequest, Path, Request, State},
    http::StatusCode,
    response::IntoResponse,
    routing::{get, post},
};
use serde::Deserialize;

use super::interaction;
use crate::server::extract::Json;
use crate::{
    gnap::{
        GnapError,
        model::{Client, GrantRequest},
        service::client_of,
        timeline::Cause,
    },
    httpsig,
    server::{
        AppState,
        request_log::{RequestId, masked_json},
        signed::{Signed, SignedError},
    },
};

/// The GNAP client, by this request (its id links the grant's timeline to the request log).
fn by_client(rid: Option<Extension<RequestId>>) -> Cause {
    Cause::client(rid.map(|Extension(r)| r.id))
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/auth", post(grant_request))
        .route("/auth/continue/{id}", post(continue_grant).delete(cancel))
        .route("/auth/token/{id}", post(rotate).delete(revoke))
        .route(
            "/auth/interact/{id}/{nonce}",
            get(interaction::get_page).post(interaction::post_page),
        )
}

/// A signed request whose key-independent checks passed; failures are GNAP `invalid_client` errors.
pub struct GnapSigned(pub Signed);

impl FromRequest<AppState> for GnapSigned {
    type Rejection = GnapError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        Signed::from_request(req, state)
            .await
            .map(GnapSigned)
            .map_err(|e| match e {
                SignedError::TooLarge => GnapError::too_large(),
                SignedError::Body(d) => GnapError::invalid_request(d),
                SignedError::Signature(s) => {
                    tracing::info!(error = %s, "AS request signature refused");
                    GnapError::unauthorized_client(format!("invalid signature: {s}"))
                }
            })
    }
}

async fn verify(state: &AppState, signed: &Signed, client: &Client) -> Result<(), GnapError> {
    state.verifier.verify(signed, client).await.map_err(|e| {
        tracing::info!(error = %e, "AS request signature refused");
        match e {
            httpsig::Error::KeysUnavailable(_) | httpsig::Error::UnknownKey(_) => {
                GnapError::undetermined_client(format!("invalid signature: {e}"))
            }
            e => GnapError::unauthorized_client(format!("invalid signature: {e}")),
        }
    })
}

async fn grant_request(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    GnapSigned(signed): GnapSigned,
) -> Result<impl IntoResponse, GnapError> {
    let req: GrantRequest = serde_json::from_slice(&signed.body)
        .map_err(|e| GnapError::invalid_request(format!("invalid grant request: {e}")))?;
    let client = req.client.clone().resolve()?;
    verify(&state, &signed, &client).await?;
    let raw = masked_json(&signed.body);
    Ok(Json(state.gnap.request(req, client, by_client(rid), raw).await?))
}

/// Members the spec does not define are ignored (GNAP lets requests carry extensions).
#[derive(Debug, Deserialize)]
struct ContinueBody {
    #[serde(default)]
    interact_ref: Option<String>,
}

fn continuation_token(signed: &Signed) -> Result<String, GnapError> {
    signed
        .gnap_token()
        .map(str::to_owned)
        .ok_or_else(|| GnapError::invalid_continuation("missing Authorization: GNAP <continuation token>"))
}

async fn continue_grant(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    Path(id): Path<String>,
    GnapSigned(signed): GnapSigned,
) -> Result<impl IntoResponse, GnapError> {
    let token = continuation_token(&signed)?;
    let grant = state.gnap.grant_for_continue(&id, &token).await?;
    verify(&state, &signed, &client_of(&grant)?).await?;
    let body = if signed.body.iter().all(u8::is_ascii_whitespace) {
        ContinueBody { interact_ref: None }
    } else {
        serde_json::from_slice(&signed.body)
            .map_err(|e| GnapError::invalid_request(format!("invalid continue request: {e}")))?
    };
    Ok(Json(
        state
            .gnap
            .continue_grant(&grant.id, body.interact_ref, token, by_client(rid))
            .await?,
    ))
}

async fn cancel(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    Path(id): Path<String>,
    GnapSigned(signed): GnapSigned,
) -> Result<StatusCode, GnapError> {
    let token = continuation_token(&signed)?;
    let grant = state.gnap.grant_for_continue(&id, &token).await?;
    verify(&state, &signed, &client_of(&grant)?)
        .await
        .map_err(GnapError::unauthenticated)?;
    state.gnap.revoke_grant(&grant.id, by_client(rid)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn rotate(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    Path(id): Path<String>,
    GnapSigned(signed): GnapSigned,
) -> Result<impl IntoResponse, GnapError> {
    let (t, grant) = state.gnap.token_for_manage(&id, signed.gnap_token()).await?;
    verify(&state, &signed, &client_of(&grant)?)
        .await
        .map_err(GnapError::unauthenticated)?;
    Ok(Json(state.gnap.rotate(&t.id, by_client(rid)).await?))
}

async fn revoke(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    Path(id): Path<String>,
    GnapSigned(signed): GnapSigned,
) -> Result<StatusCode, GnapError> {
    let (t, grant) = state.gnap.token_for_manage(&id, signed.gnap_token()).await?;
    verify(&state, &signed, &client_of(&grant)?)
        .await
        .map_err(GnapError::unauthenticated)?;
    state.gnap.revoke_token(&t.id, by_client(rid)).await?;
    Ok(StatusCode::NO_CONTENT)
}
