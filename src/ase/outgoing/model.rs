//! Outgoing payments as data: the create body, the wire resource (with the grant's spent amounts), the
//! operator's view, the grant and the signed request a create runs under, and why an operation was refused.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as JsonValue};

use crate::{
    ase::{engine::EngineError, quotes::QuoteError},
    gnap::model::Limits,
    ledger::LedgerError,
    money::{Amount, MoneyError},
    states::OutgoingState,
    store,
};

/// `POST /outgoing-payments` body: `{walletAddress, quoteId}` or `{walletAddress, incomingPayment,
/// debitAmount}`, each with optional `metadata`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateOutgoing {
    pub wallet_address: String,
    #[serde(default)]
    pub quote_id: Option<String>,
    #[serde(default)]
    pub incoming_payment: Option<String>,
    #[serde(default)]
    pub debit_amount: Option<Amount>,
    #[serde(default)]
    pub metadata: Option<Map<String, JsonValue>>,
}

/// The spec's `outgoing-payment` (and, with the grant amounts, `outgoing-payment-with-spent-amounts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutgoingPaymentDto {
    pub id: String,
    pub wallet_address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_id: Option<String>,
    pub failed: bool,
    pub receiver: String,
    pub receive_amount: Amount,
    pub debit_amount: Amount,
    pub sent_amount: Amount,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<crate::ase::metadata::Metadata>,
    #[serde(with = "crate::clock::wire")]
    pub created_at: time::OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_spent_debit_amount: Option<Amount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_spent_receive_amount: Option<Amount>,
}

/// An outgoing payment as operators see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutgoingView {
    #[serde(flatten)]
    pub payment: OutgoingPaymentDto,
    pub state: OutgoingState,
    pub wallet: String,
    pub grant_id: Option<String>,
    pub delivered_amount: Amount,
    pub failure_reason: Option<String>,
    pub failure_message: Option<String>,
    pub attempts: i64,
    #[serde(with = "crate::clock::wire")]
    pub updated_at: time::OffsetDateTime,
}

/// `GET /outgoing-payment-grant`: both keys always present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantSpent {
    pub spent_debit_amount: Option<Amount>,
    pub spent_receive_amount: Option<Amount>,
}

/// The grant a create runs under.
#[derive(Debug, Clone)]
pub struct GrantContext {
    pub grant_id: String,
    pub limits: Option<Limits>,
}

/// The signed request a create answers: the SHA-256 of its signature, the signature's `created` and the
/// signature window (seconds) a replay of it must pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKey {
    pub signature_digest: [u8; 32],
    pub created: i64,
    pub window_secs: i64,
}

/// How long after a signature's window has passed its answer is still kept: covers requests that were
/// checked just inside the window and reach the store later, and clock steps backwards.
const ANSWER_GRACE_SECS: i64 = 3600;

impl RequestKey {
    /// Answers to requests whose signature was created before this (at `now`) can be forgotten.
    pub(super) fn forget_before(&self, now: i64) -> i64 {
        now.saturating_sub(self.window_secs).saturating_sub(ANSWER_GRACE_SECS)
    }
}

/// Where the payment goes.
#[derive(Debug, Clone)]
pub enum Source {
    Quote(String),
    Incoming { receiver: String, debit: Amount },
}

/// The status stored with the answer to a request that created a payment (the wire's `201 Created`); a
/// refusal is stored with the status its edge answered.
pub const CREATED: u16 = 201;

/// Why an outgoing-payment operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum OutgoingError {
    #[error("unknown outgoing payment")]
    NotFound,
    /// No quote of this ASE has the id `quoteId` names (or it names none).
    #[error("unknown quote")]
    UnknownQuote,
    /// The quote named is another wallet's, expired or used.
    #[error("{0}")]
    Quote(String),
    /// The request is malformed.
    #[error("{0}")]
    Request(String),
    /// The grant does not allow this payment (limits, receiver, interval).
    #[error("{0}")]
    Grant(String),
    /// The payment's state refuses the operator's action (`reason` is the error code).
    #[error("{message}")]
    Refused { reason: &'static str, message: String },
    /// This signed request was answered before: the stored status and body, to be sent again as they were.
    #[error("a replayed request, answered before with {status}")]
    Replayed { status: u16, body: String },
    /// Pricing a payment without a quote failed.
    #[error(transparent)]
    Pricing(#[from] QuoteError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Engine(EngineError),
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error(transparent)]
    Store(#[from] store::Error),
    /// Stored data that does not read back (a server fault).
    #[error("{0}")]
    Internal(String),
}

/// The engine's refusals of an operator's cancel or retry are the payment's own; its faults stay its.
impl From<EngineError> for OutgoingError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound => Self::NotFound,
            EngineError::Refused { reason, message } => Self::Refused { reason, message },
            EngineError::Internal(m) => Self::Internal(m),
            e => Self::Engine(e),
        }
    }
}

impl From<crate::store::db::Error> for OutgoingError {
    fn from(e: crate::store::db::Error) -> Self {
        Self::Store(e.into())
    }
}
