//! The one place where errors become HTTP responses: the Open Payments error envelope
//! `{"error":{"code","description"}}`. Server-side failures get a generic description; the cause is logged.
//! What went wrong behind a generic client-facing error (a fetch that failed, say) travels as an
//! [`OperatorDetail`] response extension to the request log, never to the client.
//!
//! A store that is full (disk or `store.max_db_pages`) is not a server bug but a temporary condition: every
//! server-side failure whose cause is [`crate::store::Error::Full`] answers 503 `service_unavailable` with
//! `Retry-After` (see [`storage_full`]), wherever the error was built.

use std::any::Any;

use axum::{
    Json,
    http::{StatusCode, Uri},
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::{ase::peers::PeerError, ase::wallet::WalletError, gnap::GnapError, ledger::LedgerError, money::MoneyError};

/// An error answered with the envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub description: String,
    /// A `WWW-Authenticate` challenge to send with the error.
    pub challenge: Option<String>,
    /// What the operator may see and the client must not (the request log shows it).
    pub detail: Option<String>,
    /// An answer given before, sent again byte for byte instead of the envelope (idempotent replays).
    pub verbatim: Option<String>,
}

/// The operator-only story behind an error response, for the request log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorDetail(pub String);

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status,
            code,
            description: description.into(),
            challenge: None,
            detail: None,
            verbatim: None,
        }
    }

    /// The answer `body` given with `status` to the same request before, sent again as it was.
    pub fn verbatim(status: StatusCode, body: String) -> Self {
        Self {
            verbatim: Some(body),
            ..Self::new(status, "replayed", "")
        }
    }

    /// The error envelope this error is answered with.
    pub fn envelope(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "description": self.description } })
    }

    /// Keeps `detail` for the operator's request log.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// 401 with `WWW-Authenticate: GNAP as_uri=<grant endpoint>`.
    pub fn unauthorized(as_uri: &str, description: impl Into<String>) -> Self {
        Self {
            challenge: Some(format!("GNAP as_uri=\"{as_uri}\"")),
            ..Self::new(StatusCode::UNAUTHORIZED, "unauthorized", description)
        }
    }

    /// 403 with the same challenge.
    pub fn forbidden(as_uri: &str, description: impl Into<String>) -> Self {
        Self {
            challenge: Some(format!("GNAP as_uri=\"{as_uri}\"")),
            ..Self::new(StatusCode::FORBIDDEN, "forbidden", description)
        }
    }

    pub fn bad_request(code: &'static str, description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, description)
    }

    pub fn not_found(description: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", description)
    }

    /// A 500 whose cause is logged, not sent; a 503 [`ApiError::storage_full`] when the cause is a full store.
    pub fn internal<E: std::fmt::Display + 'static>(cause: &E) -> Self {
        if storage_full(cause) {
            tracing::warn!(error = %cause, "write refused: the database or the disk is full");
            return Self::storage_full();
        }
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "internal server error",
        )
    }

    /// 503: the store is full; nothing was written. Answered with `Retry-After`.
    pub fn storage_full() -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, SERVICE_UNAVAILABLE, STORAGE_FULL)
    }
}

/// The error code of a 503.
pub const SERVICE_UNAVAILABLE: &str = "service_unavailable";
/// What a client is told when the store is full.
pub const STORAGE_FULL: &str = "the ASE's storage is full; try again later";
/// `Retry-After` of every 503, in seconds.
pub const RETRY_AFTER_SECS: u32 = 30;

/// Whether `cause` is (or wraps) a store refusing a write for lack of space. `cause` is any error value
/// handed to an `internal` constructor; the error types that carry store errors are looked through.
pub fn storage_full(cause: &dyn Any) -> bool {
    let as_error: Option<&(dyn std::error::Error + 'static)> =
        if let Some(e) = cause.downcast_ref::<crate::store::Error>() {
            Some(e)
        } else if let Some(e) = cause.downcast_ref::<rusqlite::Error>() {
            Some(e)
        } else if let Some(e) = cause.downcast_ref::<LedgerError>() {
            Some(e)
        } else if let Some(e) = cause.downcast_ref::<WalletError>() {
            Some(e)
        } else if let Some(e) = cause.downcast_ref::<PeerError>() {
            Some(e)
        } else if let Some(e) = cause.downcast_ref::<crate::ase::engine::EngineError>() {
            Some(e)
        } else {
            None
        };
    as_error.is_some_and(crate::store::full_in)
}

/// Adds `Retry-After` to a 503.
pub fn retry_after(res: &mut Response) {
    if res.status() == StatusCode::SERVICE_UNAVAILABLE {
        res.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from(RETRY_AFTER_SECS),
        );
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = match self.verbatim {
            Some(ref body) => (
                self.status,
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body.clone(),
            )
                .into_response(),
            None => (self.status, Json(self.envelope())).into_response(),
        };
        if let Some(c) = self.challenge.and_then(|c| axum::http::HeaderValue::from_str(&c).ok()) {
            res.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, c);
        }
        if let Some(d) = self.detail {
            res.extensions_mut().insert(OperatorDetail(d));
        }
        retry_after(&mut res);
        res
    }
}

pub async fn not_found(uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {}", uri.path()))
}

impl From<MoneyError> for ApiError {
    fn from(e: MoneyError) -> Self {
        match e {
            MoneyError::Overflow => Self::bad_request("invalid_amount", "amount arithmetic would overflow"),
            other => Self::bad_request("invalid_amount", other.to_string()),
        }
    }
}

impl From<LedgerError> for ApiError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Money(m) => m.into(),
            LedgerError::InsufficientBalance { .. } => {
                Self::new(StatusCode::CONFLICT, "insufficient_balance", e.to_string())
            }
            LedgerError::Conflict(_) | LedgerError::AlreadyResolved { .. } => {
                Self::new(StatusCode::CONFLICT, "conflict", e.to_string())
            }
            LedgerError::AssetMismatch(..)
            | LedgerError::SameAccount
            | LedgerError::BadTransferId
            | LedgerError::PostExceedsReserved { .. } => Self::bad_request("invalid_request", e.to_string()),
            LedgerError::UnknownAccount(_) | LedgerError::UnknownTransfer(_) => Self::not_found(e.to_string()),
            LedgerError::Store(s) => Self::internal(&s),
        }
    }
}

impl From<WalletError> for ApiError {
    fn from(e: WalletError) -> Self {
        match e {
            WalletError::NotFound(_) | WalletError::KeyNotFound { .. } => Self::not_found(e.to_string()),
            WalletError::Exists(_) | WalletError::KeyExists { .. } => {
                Self::new(StatusCode::CONFLICT, "conflict", e.to_string())
            }
            WalletError::BadName { .. } | WalletError::BadPublicName => {
                Self::bad_request("invalid_request", e.to_string())
            }
            WalletError::Key(k) => Self::bad_request("invalid_key", k.to_string()),
            WalletError::Money(m) => m.into(),
            WalletError::Ledger(l) => l.into(),
            WalletError::Store(s) => Self::internal(&s),
        }
    }
}

impl From<PeerError> for ApiError {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Invalid(_) => Self::bad_request("invalid_request", e.to_string()),
            PeerError::NotFound(_) => Self::not_found(e.to_string()),
            PeerError::Conflict(_) => Self::new(StatusCode::CONFLICT, "conflict", e.to_string()),
            PeerError::Store(s) => Self::internal(&s),
        }
    }
}

impl From<GnapError> for ApiError {
    fn from(e: GnapError) -> Self {
        Self {
            status: e.status,
            code: e.code,
            description: e.description,
            challenge: None,
            detail: None,
            verbatim: None,
        }
    }
}

impl From<crate::store::Error> for ApiError {
    fn from(e: crate::store::Error) -> Self {
        Self::internal(&e)
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        Self::internal(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None)
    }

    #[test]
    fn a_full_store_is_503_with_retry_after_wherever_it_is_wrapped() {
        let wrapped = [
            ApiError::internal(&full()),
            ApiError::from(crate::store::Error::from(full())),
            ApiError::from(LedgerError::Store(full().into())),
            ApiError::from(WalletError::Store(full().into())),
            ApiError::from(GnapError::from(crate::store::Error::from(full()))),
            ApiError::from(crate::ase::engine::EngineError::Store(full().into())),
        ];
        for e in wrapped {
            assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE, "{e:?}");
            assert_eq!(e.code, SERVICE_UNAVAILABLE);
            let res = e.into_response();
            assert_eq!(res.headers()[axum::http::header::RETRY_AFTER], "30");
        }
        let other = ApiError::internal(&crate::store::Error::Closed);
        assert_eq!(other.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            other
                .into_response()
                .headers()
                .get(axum::http::header::RETRY_AFTER)
                .is_none()
        );
    }
}
