//! ILP-over-HTTP (RFC 35, the synchronous mode Rafiki speaks; STREAM.md §3.1): `POST /ilp` with
//! `Authorization: Bearer <peer incoming token>` and an OER ILP Prepare as an `application/octet-stream`
//! body, answered `200` with the OER Fulfill or Reject. HTTP errors are only for the transport: `401` for a
//! missing or unknown token (checked before the body is read), `415` for another content type, `413` for a
//! body larger than any Prepare can be. Everything about the packet itself is an ILP Reject.

use axum::{
    Router,
    body::Bytes,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};

use crate::ilp::packet::{MAX_ADDRESS_LEN, MAX_DATA_LEN, TIMESTAMP_LEN};
use crate::server::{AppState, error::ApiError};

/// The largest OER Prepare: type byte, a 3-byte length prefix, then amount, expiry, condition, and the
/// destination and data with their 3-byte length prefixes.
pub const MAX_PREPARE_LEN: usize = 1 + 3 + 8 + TIMESTAMP_LEN + 32 + 3 + MAX_ADDRESS_LEN + 3 + MAX_DATA_LEN;

const OCTET_STREAM: &str = "application/octet-stream";

pub fn routes() -> Router<AppState> {
    Router::new().route("/ilp", post(ilp))
}

/// The bearer token of an `Authorization` header (scheme case-insensitive).
fn bearer(req: &Request) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn is_octet_stream(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case(OCTET_STREAM))
}

async fn ilp(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let Some(peer) = bearer(&req).and_then(|token| s.ilp.authenticate(token)) else {
        return Err(ApiError {
            challenge: Some("Bearer realm=\"ilp\"".into()),
            ..ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a peer's bearer token is required",
            )
        });
    };
    if !is_octet_stream(&req) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request",
            "the body must be an application/octet-stream ILP Prepare",
        ));
    }
    let body: Bytes = axum::body::to_bytes(req.into_body(), MAX_PREPARE_LEN)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                format!("an ILP Prepare is at most {MAX_PREPARE_LEN} bytes"),
            )
        })?;
    let reply = s.ilp.handle(&peer, &body).await;
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static(OCTET_STREAM))], reply).into_response())
}
