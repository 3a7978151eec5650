//! Quotes as data: the create body, the wire resource, a payment priced before it is stored (with the STREAM
//! plan for a receiver on another ASE), and why a quote cannot be made.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{
    ase::remote::{RemoteError, RemotePlan},
    money::{Amount, Asset},
    rates::RateError,
    store::{self, payments::IncomingRow, stream::StreamPlanRow},
};

/// `POST /quotes` body (the three spec variants in one shape; both amounts at once is refused).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateQuote {
    pub wallet_address: String,
    pub receiver: String,
    pub method: String,
    #[serde(default)]
    pub debit_amount: Option<Amount>,
    #[serde(default)]
    pub receive_amount: Option<Amount>,
}

/// The spec's `quote`: exactly these fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteDto {
    pub id: String,
    pub wallet_address: String,
    pub receiver: String,
    pub receive_amount: Amount,
    pub debit_amount: Amount,
    pub method: String,
    #[serde(with = "crate::clock::wire")]
    pub expires_at: time::OffsetDateTime,
    #[serde(with = "crate::clock::wire")]
    pub created_at: time::OffsetDateTime,
}

/// What a quote amounts to before it is stored (shared with outgoing payments created without a quote).
#[derive(Debug, Clone)]
pub struct Priced {
    /// The local receiver (None for a receiver on another ASE).
    pub receiver: Option<IncomingRow>,
    /// How to pay a receiver on another ASE.
    pub remote: Option<RemotePlan>,
    pub receive_asset: Asset,
    /// When the receiver expires, if it does.
    pub receiver_expires_at: Option<time::OffsetDateTime>,
    pub debit: u64,
    pub receive: u64,
    pub fee: u64,
    /// A receiver on another ASE: the wallet address it pays into and that wallet's public name, as read.
    pub payee_wallet: Option<String>,
    pub payee_name: Option<String>,
}

impl Priced {
    /// The `stream_plans` row for a remote receiver, stored under `id` (quote or payment id).
    pub fn plan_row(&self, id: &str, receiver: &str, now: OffsetDateTime) -> Option<StreamPlanRow> {
        let p = self.remote.as_ref()?;
        Some(StreamPlanRow {
            id: id.to_owned(),
            receiver: receiver.to_owned(),
            peer: p.peer.clone(),
            ilp_address: p.ilp_address.clone(),
            shared_secret: p.shared_secret.clone(),
            estimated_rate: p.estimated.to_string(),
            minimum_rate: p.minimum.to_string(),
            max_packet_amount: p.max_packet_amount.and_then(|m| i64::try_from(m).ok()),
            source_amount: i64::try_from(p.source_amount).unwrap_or(i64::MAX),
            created_at: now.to_owned(),
            link: p.link.as_ref().map(|l| crate::store::stream::PlanLink {
                asset_code: l.peer_asset.code.clone(),
                asset_scale: l.peer_asset.scale,
                rate: l.rate.to_string(),
                debit_source: i64::try_from(l.debit_source).unwrap_or(i64::MAX),
                sent: 0,
            }),
            fixed_send: p.fixed_send,
        })
    }
}

/// Why a quote cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum QuoteError {
    #[error("unknown quote")]
    NotFound,
    /// The receiver is unusable (unknown, completed, expired, malformed).
    #[error("{0}")]
    Receiver(String),
    /// The amounts cannot be priced.
    #[error("{0}")]
    Amount(String),
    /// The request is malformed.
    #[error("{0}")]
    Request(String),
    /// The debit delivers nothing after fees and conversion; `min_send` is the smallest debit (in the
    /// sender's `asset`) that delivers at least one unit, when there is one.
    #[error("{reason}")]
    TooSmall {
        reason: String,
        min_send: Option<u64>,
        asset: Asset,
    },
    /// A receiver on another ASE cannot be resolved or paid; its `detail` is for the operator.
    #[error(transparent)]
    Remote(RemoteError),
    #[error(transparent)]
    Rate(#[from] RateError),
    #[error(transparent)]
    Money(#[from] crate::money::MoneyError),
    #[error(transparent)]
    Store(#[from] store::Error),
}
