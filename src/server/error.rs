//! The one place where errors become HTTP responses: the Open Payments error envelope
//! `{"error":{"code","description","details"}}` (`details` only when there is something in it: opdesk's own
//! wording goes there whenever `description` is the reference ASE's exact string, which clients match on). Server-side failures get a generic description; the cause is logged.
//! What went wrong behind a generic client-facing error (a fetch that failed, say) travels as an
//! [`OperatorDetail`] response extension to the request log, never to the client.
//!
//! The services answer typed errors and know no HTTP; the `From` impls below are where each becomes a status
//! and a code.
//!
//! A store that is full (disk or `store.max_db_pages`) is not a server bug but a temporary condition: every
//! server-side failure whose cause is [`crate::store::Error::Full`] answers 503 `service_unavailable` with
//! `Retry-After`, wherever the error was built.

use axum::{
    Json,
    http::{HeaderValue, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::{
    ase::{
        engine::EngineError, incoming::IncomingError, liquidity::LiquidityError, outgoing::OutgoingError,
        peers::PeerError, quotes::QuoteError, remote::RemoteError,
    },
    control,
    gnap::{
        GnapError,
        error::{Details, Fault},
    },
    ledger::LedgerError,
    money::MoneyError,
    rates::RateError,
    store,
    wallet::WalletError,
};

/// An error answered with the envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub description: String,
    /// The envelope's `details` object; omitted when empty.
    pub details: Details,
    /// A `WWW-Authenticate` challenge to send with the error.
    pub challenge: Option<Box<str>>,
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
            details: None,
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
        envelope(self.code, &self.description, self.details.as_deref())
    }

    /// Adds `key` to the envelope's `details`.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.details
            .get_or_insert_default()
            .insert(key.to_owned(), value.into());
        self
    }

    /// Adds `details.reason`: opdesk's own wording when `description` is the reference ASE's string.
    pub fn because(self, reason: impl Into<String>) -> Self {
        self.with("reason", reason.into())
    }

    /// Keeps `detail` for the operator's request log.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// 401 with `WWW-Authenticate: GNAP as_uri=<grant endpoint>`.
    pub fn unauthorized(as_uri: &str, description: impl Into<String>) -> Self {
        Self {
            challenge: Some(format!("GNAP as_uri=\"{as_uri}\"").into()),
            ..Self::new(StatusCode::UNAUTHORIZED, "unauthorized", description)
        }
    }

    /// 403 with the same challenge.
    pub fn forbidden(as_uri: &str, description: impl Into<String>) -> Self {
        Self {
            challenge: Some(format!("GNAP as_uri=\"{as_uri}\"").into()),
            ..Self::new(StatusCode::FORBIDDEN, "forbidden", description)
        }
    }

    pub fn bad_request(code: &'static str, description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, description)
    }

    pub fn not_found(description: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", description)
    }

    /// A 500 whose cause is logged, not sent; a 503 when the cause is a full store ([`ApiError::storage_full`])
    /// or a write given up under contention.
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> Self {
        if store::full_in(cause) {
            tracing::warn!(error = %cause, "write refused: the database or the disk is full");
            return Self::storage_full();
        }
        if store::busy_in(cause) {
            tracing::warn!(error = %cause, "write given up under contention");
            return Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::gnap::error::SERVICE_UNAVAILABLE,
                crate::gnap::error::STORE_BUSY,
            );
        }
        if store::conflict_in(cause) {
            // the store runs the job again (and counts it): no failure to page anyone for
            tracing::debug!(error = %cause, "a write lost a serialization race; it runs again");
            return Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::gnap::error::SERVICE_UNAVAILABLE,
                crate::gnap::error::STORE_BUSY,
            );
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
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            crate::gnap::error::SERVICE_UNAVAILABLE,
            crate::gnap::error::STORAGE_FULL,
        )
    }
}

/// `{"error":{"code","description","details"}}`, `details` left out when empty.
pub fn envelope(
    code: &str,
    description: &str,
    details: Option<&serde_json::Map<String, serde_json::Value>>,
) -> serde_json::Value {
    let mut error = json!({ "code": code, "description": description });
    if let Some(details) = details.filter(|d| !d.is_empty())
        && let Some(e) = error.as_object_mut()
    {
        e.insert("details".to_owned(), serde_json::Value::Object(details.clone()));
    }
    json!({ "error": error })
}

/// 400 for a receiver that cannot be paid (unknown, expired, completed, unresolvable): the reference ASE's
/// exact description (clients make a new incoming payment on it); opdesk's wording goes into `details.reason`.
pub const INVALID_RECEIVER: &str = "invalid receiver";
/// 400 for a quote whose debit delivers nothing (clients probe larger amounts, or take `details.minSendAmount`).
pub const NON_POSITIVE_RECEIVE_AMOUNT: &str = "non-positive receive amount";
/// 400 for an outgoing payment (from an incoming payment) whose debit delivers nothing.
pub const NEGATIVE_RECEIVE_AMOUNT: &str = "negative receive amount";
/// 403 for an outgoing payment the grant's limits do not allow (clients take it as "out of funds").
pub const OVER_GRANT: &str = "unauthorized";

fn invalid_receiver(reason: String) -> ApiError {
    ApiError::bad_request("invalid_receiver", INVALID_RECEIVER).because(reason)
}

/// `Retry-After` of every 503, in seconds.
pub const RETRY_AFTER_SECS: u32 = 30;

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
            e @ (MoneyError::BadAssetCode(_) | MoneyError::LowerCaseAssetCode(_) | MoneyError::AssetCodeShape(_)) => {
                Self::bad_request("invalid_request", e.to_string())
            }
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

impl From<crate::ase::spsp::SpspError> for ApiError {
    fn from(e: crate::ase::spsp::SpspError) -> Self {
        match e {
            crate::ase::spsp::SpspError::ReceiptHeaders(_) => Self::bad_request("invalid_request", e.to_string()),
            crate::ase::spsp::SpspError::Credentials(_) => {
                tracing::error!(error = %e, "cannot make SPSP credentials");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "internal error")
            }
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
            WalletError::Passphrase(crate::passphrase::PassphraseError::Shape) => {
                Self::bad_request("invalid_request", e.to_string())
            }
            WalletError::Passphrase(p) => Self::internal(&p),
            WalletError::Money(m) => m.into(),
            WalletError::Ledger(l) => l.into(),
            WalletError::Store(s) => Self::internal(&s),
        }
    }
}

impl From<LiquidityError> for ApiError {
    fn from(e: LiquidityError) -> Self {
        match e {
            LiquidityError::Refused(m) => Self::new(StatusCode::CONFLICT, "insufficient_liquidity", m),
            LiquidityError::Ledger(l) => l.into(),
            LiquidityError::Store(s) => s.into(),
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

/// The status of a GNAP failure.
pub fn gnap_status(f: Fault) -> StatusCode {
    match f {
        Fault::Invalid => StatusCode::BAD_REQUEST,
        Fault::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Fault::Unauthenticated => StatusCode::UNAUTHORIZED,
        Fault::Unknown => StatusCode::NOT_FOUND,
        Fault::Conflict => StatusCode::CONFLICT,
        Fault::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Fault::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<GnapError> for ApiError {
    fn from(e: GnapError) -> Self {
        Self {
            details: e.details,
            ..Self::new(gnap_status(e.fault), e.code, e.description)
        }
    }
}

/// The AS answers with its own envelope; a 401 carries `WWW-Authenticate: GNAP`.
impl IntoResponse for GnapError {
    fn into_response(self) -> Response {
        let status = gnap_status(self.fault);
        let mut res = (
            status,
            Json(envelope(self.code, &self.description, self.details.as_deref())),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("GNAP"));
        }
        retry_after(&mut res);
        res
    }
}

impl From<IncomingError> for ApiError {
    fn from(e: IncomingError) -> Self {
        match e {
            IncomingError::NotFound => Self::not_found(e.to_string()),
            IncomingError::ZeroAmount => Self::bad_request("invalid_amount", e.to_string()),
            IncomingError::BadExpiry(_) | IncomingError::BadStateFilter => {
                Self::bad_request("invalid_request", e.to_string())
            }
            IncomingError::Expired => Self::bad_request("invalid_state", e.to_string()),
            IncomingError::Money(m) => m.into(),
            IncomingError::Credentials(_) => Self::internal(&e),
            IncomingError::Store(s) => Self::internal(&s),
        }
    }
}

impl From<RateError> for ApiError {
    fn from(e: RateError) -> Self {
        Self::bad_request("invalid_amount", e.to_string())
    }
}

/// The client learns only the generic line; the operator's request log gets the detail.
impl From<RemoteError> for ApiError {
    fn from(e: RemoteError) -> Self {
        match e {
            RemoteError::NoSendingPeer => invalid_receiver(e.to_string()),
            RemoteError::RateTooLow(_) => Self::bad_request("rate_too_low", e.to_string()).with_detail(e.detail()),
            _ => invalid_receiver(e.to_string()).with_detail(e.detail()),
        }
    }
}

impl From<QuoteError> for ApiError {
    fn from(e: QuoteError) -> Self {
        match e {
            QuoteError::NotFound => Self::not_found(e.to_string()),
            QuoteError::Receiver(d) => invalid_receiver(d),
            QuoteError::TooSmall {
                reason,
                min_send,
                asset,
            } => {
                let e = Self::bad_request("invalid_amount", NON_POSITIVE_RECEIVE_AMOUNT).because(reason);
                match min_send {
                    Some(v) => e.with(
                        "minSendAmount",
                        json!({ "value": v.to_string(), "assetCode": asset.code, "assetScale": asset.scale }),
                    ),
                    None => e,
                }
            }
            QuoteError::Amount(d) => Self::bad_request("invalid_amount", d),
            QuoteError::Request(d) => Self::bad_request("invalid_request", d),
            QuoteError::Remote(r) => r.into(),
            QuoteError::Rate(r) => r.into(),
            QuoteError::Money(m) => m.into(),
            QuoteError::Store(s) => Self::internal(&s),
        }
    }
}

impl From<OutgoingError> for ApiError {
    fn from(e: OutgoingError) -> Self {
        match e {
            OutgoingError::NotFound => Self::not_found(e.to_string()),
            // the reference ASE's descriptions; the spec lists 400 (the reference answers an unknown one 404)
            OutgoingError::UnknownQuote => Self::bad_request("invalid_quote", "unknown quote"),
            OutgoingError::Quote(d) => Self::bad_request("invalid_quote", "invalid quote").because(d),
            OutgoingError::Request(d) => Self::bad_request("invalid_request", d),
            OutgoingError::Grant(d) => Self::new(StatusCode::FORBIDDEN, "forbidden", OVER_GRANT).because(d),
            OutgoingError::Refused { reason, message } => Self::new(StatusCode::CONFLICT, reason, message),
            OutgoingError::Replayed { status, body } => match StatusCode::from_u16(status) {
                Ok(status) => Self::verbatim(status, body),
                Err(e) => Self::internal(&e),
            },
            OutgoingError::Pricing(QuoteError::TooSmall { reason, .. }) => {
                Self::bad_request("invalid_amount", NEGATIVE_RECEIVE_AMOUNT).because(reason)
            }
            OutgoingError::Pricing(q) => q.into(),
            OutgoingError::Ledger(l) => l.into(),
            OutgoingError::Engine(en) => en.into(),
            OutgoingError::Money(m) => m.into(),
            OutgoingError::Store(s) => Self::internal(&s),
            OutgoingError::Internal(_) => Self::internal(&e),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Ledger(l) => l.into(),
            EngineError::Money(m) => m.into(),
            EngineError::Store(s) => Self::internal(&s),
            e @ (EngineError::Moved(_) | EngineError::Internal(_)) => Self::internal(&e),
            // an operator's cancel or retry: worded as the payment's own refusals
            e @ (EngineError::NotFound | EngineError::Refused { .. }) => OutgoingError::from(e).into(),
        }
    }
}

impl From<control::Error> for ApiError {
    fn from(e: control::Error) -> Self {
        match e {
            control::Error::Invalid { code, message } => Self::bad_request(code, message),
            control::Error::NotFound(d) => Self::not_found(d),
            e @ control::Error::AlreadyDecided { .. } => {
                Self::new(StatusCode::CONFLICT, "already_decided", e.to_string())
            }
            control::Error::Wallet(e) => e.into(),
            control::Error::Ledger(e) => e.into(),
            control::Error::Money(e) => e.into(),
            control::Error::Incoming(e) => e.into(),
            control::Error::Outgoing(e) => e.into(),
            control::Error::Quote(e) => e.into(),
            control::Error::Grant(e) => e.into(),
            control::Error::Peer(e) => e.into(),
            control::Error::Webhook(e) => e.into(),
            control::Error::Liquidity(e) => e.into(),
            control::Error::Store(e) => e.into(),
        }
    }
}

impl From<crate::webhooks::WebhookError> for ApiError {
    fn from(e: crate::webhooks::WebhookError) -> Self {
        use crate::webhooks::WebhookError as W;
        match e {
            W::NotFound(_) => Self::not_found(e.to_string()),
            W::Delivered(_) => Self::new(StatusCode::CONFLICT, "conflict", e.to_string()),
            W::BadState(_) => Self::bad_request("invalid_request", e.to_string()),
            W::Store(s) => s.into(),
        }
    }
}

impl From<store::Error> for ApiError {
    fn from(e: store::Error) -> Self {
        Self::internal(&e)
    }
}

impl From<crate::store::db::Error> for ApiError {
    fn from(e: crate::store::db::Error) -> Self {
        Self::internal(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> crate::store::db::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None).into()
    }

    #[test]
    fn a_full_store_is_503_with_retry_after_wherever_it_is_wrapped() {
        let wrapped = [
            ApiError::internal(&full()),
            ApiError::from(crate::store::Error::from(full())),
            ApiError::from(LedgerError::Store(full().into())),
            ApiError::from(WalletError::Store(full().into())),
            ApiError::from(GnapError::from(crate::store::Error::from(full()))),
            ApiError::from(EngineError::Store(full().into())),
            ApiError::from(OutgoingError::Store(full().into())),
            ApiError::from(IncomingError::Store(full().into())),
            ApiError::from(QuoteError::Store(full().into())),
        ];
        for e in wrapped {
            assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE, "{e:?}");
            assert_eq!(e.code, crate::gnap::error::SERVICE_UNAVAILABLE);
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
