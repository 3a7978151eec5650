//! The one place where errors become HTTP responses: the Open Payments error envelope
//! `{"error":{"code","description"}}`. Server-side failures get a generic description; the cause is logged.
//! What went wrong behind a generic client-facing error (a fetch that failed, say) travels as an
//! [`OperatorDetail`] response extension to the request log, never to the client.

use axum::{
    Json,
    http::{StatusCode, Uri},
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::{ase::wallet::WalletError, gnap::GnapError, ilp::peers::PeerError, ledger::LedgerError, money::MoneyError};

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

    /// A 500 whose cause is logged, not sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "internal server error",
        )
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
