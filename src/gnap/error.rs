//! GNAP errors and their statuses: the AS envelope `{"error":{"code","description"}}` with the spec's codes.

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::store;

/// An AS error. The description is for client developers; never internal details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {description}")]
pub struct GnapError {
    pub status: StatusCode,
    pub code: &'static str,
    pub description: String,
}

impl GnapError {
    fn new(status: StatusCode, code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status,
            code,
            description: description.into(),
        }
    }
    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", d)
    }
    /// A body over the server's limit: 413 with the `invalid_request` code.
    pub fn too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            "request body is too large",
        )
    }
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_client", d)
    }
    /// A request whose signature or key proof failed.
    pub fn unauthorized_client(d: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_client", d)
    }
    pub fn request_denied(d: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "request_denied", d)
    }
    pub fn too_fast(wait: i64) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "too_fast",
            format!("continue no sooner than {wait} s after the last request"),
        )
    }
    pub fn invalid_continuation(status: StatusCode, d: impl Into<String>) -> Self {
        Self::new(status, "invalid_continuation", d)
    }
    pub fn invalid_rotation(d: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_rotation", d)
    }
    pub fn not_found(d: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request", d)
    }
    pub fn conflict(d: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "invalid_request", d)
    }
    /// A server-side failure: logged, answered generically; a full store answers 503 `service_unavailable`
    /// (nothing was written; `Retry-After` says when to try again).
    pub fn internal<E: std::fmt::Display + 'static>(cause: &E) -> Self {
        if crate::server::error::storage_full(cause) {
            tracing::warn!(error = %cause, "authorization server write refused: the database or the disk is full");
            return Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::server::error::SERVICE_UNAVAILABLE,
                crate::server::error::STORAGE_FULL,
            );
        }
        tracing::error!(error = %cause, "authorization server failure");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "request_denied",
            "internal server error",
        )
    }
}

impl From<store::Error> for GnapError {
    fn from(e: store::Error) -> Self {
        Self::internal(&e)
    }
}

impl From<rusqlite::Error> for GnapError {
    fn from(e: rusqlite::Error) -> Self {
        Self::internal(&e)
    }
}

impl IntoResponse for GnapError {
    fn into_response(self) -> Response {
        let mut res = (
            self.status,
            Json(json!({ "error": { "code": self.code, "description": self.description } })),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("GNAP"));
        }
        crate::server::error::retry_after(&mut res);
        res
    }
}
