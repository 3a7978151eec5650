//! Incoming payments as data: the create body, the wire resource, the operator's view, the lifecycle state of a
//! row at a moment, what crediting a STREAM packet did, and why an operation was refused.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::{
    ilp::receiver::Refusal,
    money::Amount,
    states::IncomingState,
    store::{self, payments::IncomingRow},
};

/// `POST /incoming-payments` body.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateIncoming {
    pub wallet_address: String,
    #[serde(default)]
    pub incoming_amount: Option<Amount>,
    /// Text on purpose: the client's own words, read by the service (`IncomingError::BadExpiry` says what is
    /// wrong with them, where a typed field would fail the whole body with a generic JSON error).
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// The wire form of an incoming payment (`methods` only where the spec puts it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IncomingPaymentDto {
    pub id: String,
    pub wallet_address: String,
    pub completed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming_amount: Option<Amount>,
    pub received_amount: Amount,
    #[serde(
        with = "crate::clock::wire::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<time::OffsetDateTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<crate::ase::metadata::Metadata>,
    #[serde(with = "crate::clock::wire")]
    pub created_at: time::OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<Value>>,
}

/// An incoming payment as operators see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IncomingView {
    #[serde(flatten)]
    pub payment: IncomingPaymentDto,
    pub state: IncomingState,
    pub wallet: String,
    pub client: Option<String>,
}

/// Why an incoming-payment operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum IncomingError {
    #[error("unknown incoming payment")]
    NotFound,
    #[error("incomingAmount must be greater than zero")]
    ZeroAmount,
    /// `expiresAt` unreadable, past or too far away.
    #[error("{0}")]
    BadExpiry(String),
    #[error("state must be pending, completed or expired")]
    BadStateFilter,
    #[error("the incoming payment has expired")]
    Expired,
    /// STREAM credentials could not be made (a server fault).
    #[error("STREAM credentials: {0}")]
    Credentials(String),
    #[error(transparent)]
    Money(#[from] crate::money::MoneyError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The lifecycle state of a row at `now`.
pub fn state_of(r: &IncomingRow, now: OffsetDateTime) -> IncomingState {
    let expired = r.expires_at.is_some_and(|e| e <= now);
    IncomingState::of(r.completed, expired)
}

/// What crediting one STREAM packet did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamCredit {
    /// Credited; the payment as committed, and what the connection has paid into it now.
    Credited(IncomingRow, u64),
    /// Nothing written: the payment (as read inside the transaction) takes no such amount.
    Refused(IncomingRow, u64, Refusal),
    /// Nothing written: the packet would take the peer past its credit limit (said in words; answered `T04`).
    OverCreditLimit(String),
    /// Nothing written: no exchange rate from the link's asset into the payment's (said in words; answered
    /// with a final `F07`).
    NoRate(String),
    /// No such payment.
    Unknown,
}
