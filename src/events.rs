//! Domain events: small facts about committed changes, fanned out on a broadcast bus as [`EventRecord`]s.
//!
//! Durable events (see [`DomainEvent::is_durable`]) are appended to the outbox (`store::outbox`) in the
//! transaction of the change they describe and carry its sequence number; live-only ones (the request log,
//! payment progress, balances) are published as they happen. Services publish only after their transaction
//! committed; subscribers must treat a lagged receiver as "resync" (from the outbox or a snapshot).
//! Publishing never blocks and never fails the caller. On PostgreSQL, where several nodes append to one
//! outbox, durable events reach the bus from the outbox instead (`control::events::follow_outbox`), so that
//! every node's events arrive on every node, in sequence order.

pub mod measure;
pub mod requests;

pub use measure::Measure;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, broadcast};

/// A fact about something that already happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DomainEvent {
    WalletCreated {
        id: String,
        name: String,
    },
    KeyAdded {
        wallet: String,
        kid: String,
    },
    KeyRemoved {
        wallet: String,
        kid: String,
    },
    /// The posted balance or pending debits of an account changed.
    #[serde(rename_all = "camelCase")]
    BalanceChanged {
        account_id: String,
        /// The wallet name when the account belongs to a wallet address.
        wallet: Option<String>,
        balance: i64,
        pending_debits: i64,
    },
    /// An interactive grant waits for the resource owner's decision.
    #[serde(rename_all = "camelCase")]
    GrantPending {
        id: String,
        client: String,
        /// The wallet whose owner decides it on the interaction page (none: the operator decides).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
    /// `by`: who decided (`owner` on the interaction page, `console`, `cli`, `admin_api`, `policy`).
    GrantApproved {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    GrantRejected {
        id: String,
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    GrantRevoked {
        id: String,
    },
    #[serde(rename_all = "camelCase")]
    TokenIssued {
        grant_id: String,
    },
    #[serde(rename_all = "camelCase")]
    TokenRotated {
        grant_id: String,
    },
    #[serde(rename_all = "camelCase")]
    TokenRevoked {
        grant_id: String,
    },
    IncomingPaymentCreated {
        id: String,
        wallet: String,
    },
    IncomingPaymentCompleted {
        id: String,
    },
    IncomingPaymentExpired {
        id: String,
    },
    QuoteCreated {
        id: String,
        wallet: String,
    },
    OutgoingPaymentCreated {
        id: String,
        wallet: String,
    },
    /// Progress of a payment being sent (coalesced: not every packet).
    OutgoingPaymentProgress {
        id: String,
        sent: i64,
    },
    OutgoingPaymentCompleted {
        id: String,
    },
    OutgoingPaymentFailed {
        id: String,
        reason: String,
    },
    OutgoingPaymentCancelled {
        id: String,
    },
    /// Money arrived (coalesced like progress).
    IncomingPaymentReceived {
        id: String,
        received: i64,
    },
    /// The operator deposited or withdrew a peer's liquidity (`change`: `liquidity_deposit` or
    /// `liquidity_withdrawal`); `liquidity` is the balance after it, in minor units of the peer's asset.
    #[serde(rename_all = "camelCase")]
    PeerLiquidityChanged {
        peer: String,
        change: String,
        amount: i64,
        liquidity: i64,
        asset_code: String,
        asset_scale: u8,
    },
    /// The operator recorded a settlement with a peer (`direction`: `paid` or `received`); `position` is the
    /// peer account after it (positive: we owe the peer).
    #[serde(rename_all = "camelCase")]
    PeerSettled {
        peer: String,
        direction: String,
        amount: i64,
        position: i64,
        asset_code: String,
        asset_scale: u8,
    },
    /// The operator moved money into a wallet (`deposit`) or out of it (`withdrawal`): the amount, the
    /// transfer's id (the idempotency id the operator gave, if any) and the wallet's balance after.
    #[serde(rename_all = "camelCase")]
    WalletFundsMoved {
        wallet: String,
        movement: String,
        amount: i64,
        transfer_id: String,
        balance: i64,
        asset_code: String,
        asset_scale: u8,
    },
    /// Money arrived at a wallet address over an SPSP connection (coalesced: at most one event per connection
    /// and second): `amount` since the connection's previous event, `received` in all over it.
    #[serde(rename_all = "camelCase")]
    WalletReceived {
        wallet: String,
        connection: String,
        amount: i64,
        received: i64,
        asset_code: String,
        asset_scale: u8,
    },
    /// The operator set (or cleared) what a peer may owe us.
    #[serde(rename_all = "camelCase")]
    PeerCreditLimitChanged {
        peer: String,
        credit_limit: Option<i64>,
    },
    /// What may still be sent through a peer (its liquidity less what we owe it) went under the operator's
    /// threshold, in the transaction that took it there (again only after it was back over it).
    #[serde(rename_all = "camelCase")]
    PeerLiquidityLow {
        peer: String,
        liquidity: i64,
        threshold: i64,
        asset_code: String,
        asset_scale: u8,
    },
    /// What a peer owes us went over the operator's threshold (again only after it was back under it).
    #[serde(rename_all = "camelCase")]
    PeerCreditHigh {
        peer: String,
        credit_used: i64,
        threshold: i64,
        asset_code: String,
        asset_scale: u8,
    },
    /// A wallet's balance less its reservations went under the operator's threshold (again only after it was
    /// back over it).
    #[serde(rename_all = "camelCase")]
    WalletBalanceLow {
        wallet: String,
        balance: i64,
        threshold: i64,
        asset_code: String,
        asset_scale: u8,
    },
    /// The operator set (or with `None` removed) an alert threshold on a peer or a wallet.
    #[serde(rename_all = "camelCase")]
    ThresholdChanged {
        measure: Measure,
        subject: String,
        threshold: Option<i64>,
        asset_code: String,
        asset_scale: u8,
    },
    #[serde(rename_all = "camelCase")]
    HttpRequest {
        /// The request's id (time-ordered, unique across restarts): what a grant's timeline links to.
        id: String,
        /// When the request arrived (microseconds; strictly increasing in arrival order).
        #[serde(with = "crate::clock::wire::micros")]
        received_at: time::OffsetDateTime,
        method: String,
        path: String,
        status: u16,
        latency_us: u64,
        /// The signing client, when the request was signed by one.
        #[serde(skip_serializing_if = "Option::is_none")]
        client: Option<String>,
        /// `ok`, or why the signature was refused; none for unsigned requests.
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Headers and bodies, secrets masked — captured only while the console shows them.
        #[serde(skip_serializing_if = "Option::is_none")]
        exchange: Option<Box<Exchange>>,
    },
    /// The request log, coalesced: what was served since the last one (published a few times a second at
    /// most, and only while requests are served and someone listens). What consoles show live; a request's
    /// exchange is pulled from the server's ring (`GET /admin/requests/{id}`) when someone opens it.
    #[serde(rename_all = "camelCase")]
    RequestsServed {
        /// Requests served in all since the server started (the admin API's own not counted).
        total: u64,
        /// How many arrived in each second (unix seconds, count), oldest first.
        arrivals: Vec<(i64, u32)>,
        /// The refused ones (answered 400 and up) among them, newest by arrival first; at most
        /// [`requests::REFUSED_PER_UPDATE`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        refused: Vec<requests::RequestSummary>,
    },
}

/// One HTTP exchange as the request log shows it: headers and bodies with secrets masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    pub target: String,
    pub request_headers: Vec<(String, String)>,
    pub request_body: String,
    pub response_headers: Vec<(String, String)>,
    pub response_body: String,
    /// Why the request failed, for the operator only (e.g. what a fetch of a client-named URL ran into).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The signature debugger's report of a signed request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_report: Option<requests::SignatureReport>,
}

/// An event as `GET /admin/events` streams it: the outbox sequence number and time of a durable event (none
/// for live-only ones: the request log, payment progress, balances), and the event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRecord {
    pub seq: Option<i64>,
    /// A durable event's unique id (webhook receivers de-duplicate by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(with = "crate::clock::wire")]
    pub at: time::OffsetDateTime,
    pub event: DomainEvent,
}

impl DomainEvent {
    /// The event's `type` as it is serialised (`grantApproved`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::WalletCreated { .. } => "walletCreated",
            Self::KeyAdded { .. } => "keyAdded",
            Self::KeyRemoved { .. } => "keyRemoved",
            Self::BalanceChanged { .. } => "balanceChanged",
            Self::GrantPending { .. } => "grantPending",
            Self::GrantApproved { .. } => "grantApproved",
            Self::GrantRejected { .. } => "grantRejected",
            Self::GrantRevoked { .. } => "grantRevoked",
            Self::TokenIssued { .. } => "tokenIssued",
            Self::TokenRotated { .. } => "tokenRotated",
            Self::TokenRevoked { .. } => "tokenRevoked",
            Self::IncomingPaymentCreated { .. } => "incomingPaymentCreated",
            Self::IncomingPaymentCompleted { .. } => "incomingPaymentCompleted",
            Self::IncomingPaymentExpired { .. } => "incomingPaymentExpired",
            Self::QuoteCreated { .. } => "quoteCreated",
            Self::OutgoingPaymentCreated { .. } => "outgoingPaymentCreated",
            Self::OutgoingPaymentProgress { .. } => "outgoingPaymentProgress",
            Self::OutgoingPaymentCompleted { .. } => "outgoingPaymentCompleted",
            Self::OutgoingPaymentFailed { .. } => "outgoingPaymentFailed",
            Self::OutgoingPaymentCancelled { .. } => "outgoingPaymentCancelled",
            Self::IncomingPaymentReceived { .. } => "incomingPaymentReceived",
            Self::PeerLiquidityChanged { .. } => "peerLiquidityChanged",
            Self::PeerSettled { .. } => "peerSettled",
            Self::PeerCreditLimitChanged { .. } => "peerCreditLimitChanged",
            Self::PeerLiquidityLow { .. } => "peerLiquidityLow",
            Self::PeerCreditHigh { .. } => "peerCreditHigh",
            Self::WalletBalanceLow { .. } => "walletBalanceLow",
            Self::ThresholdChanged { .. } => "thresholdChanged",
            Self::WalletFundsMoved { .. } => "walletFundsMoved",
            Self::WalletReceived { .. } => "walletReceived",
            Self::HttpRequest { .. } => "httpRequest",
            Self::RequestsServed { .. } => "requestsServed",
        }
    }

    /// Whether the event goes to the outbox: lifecycle facts do; the request log, payment progress and
    /// balance changes (coalesced, derivable from the resources) are live-only.
    pub fn is_durable(&self) -> bool {
        !matches!(
            self,
            Self::HttpRequest { .. }
                | Self::RequestsServed { .. }
                | Self::BalanceChanged { .. }
                | Self::OutgoingPaymentProgress { .. }
                | Self::IncomingPaymentReceived { .. }
        )
    }
}

/// Whether a request path is the operator's own traffic — the admin API (consoles polling, the event stream)
/// and metrics scrapes — which the request log does not keep and consoles do not show.
pub fn is_operator_path(path: &str) -> bool {
    path == "/admin" || path.starts_with("/admin/") || path == "/metrics"
}

/// Cheap-to-clone handle to the broadcast bus.
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<EventRecord>,
    /// Set when durable events come from the outbox: woken instead of publishing them.
    follower: Option<Arc<Notify>>,
}

impl EventBus {
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(16));
        Self { tx, follower: None }
    }

    /// A bus whose durable events come from the outbox, read by `control::events::follow_outbox` when
    /// `follower` wakes it.
    pub fn following_outbox(follower: Arc<Notify>) -> Self {
        Self {
            follower: Some(follower),
            ..Self::default()
        }
    }

    /// Publishes a live-only fact as it happens; having no subscriber is fine. Durable events go through
    /// the outbox and [`Self::publish_recorded`] instead.
    pub fn publish(&self, event: DomainEvent) {
        debug_assert!(!event.is_durable(), "{} must be appended to the outbox", event.kind());
        // the request log publishes on every request: no reader, no timestamp to format
        if self.tx.receiver_count() == 0 {
            return;
        }
        let _ = self.tx.send(EventRecord {
            seq: None,
            id: None,
            at: crate::clock::to_millis(time::OffsetDateTime::now_utc()),
            event,
        });
    }

    pub fn publish_all(&self, events: impl IntoIterator<Item = DomainEvent>) {
        for e in events {
            self.publish(e);
        }
    }

    /// Publishes events the outbox recorded, once their transaction committed; on a bus that follows the
    /// outbox, wakes its follower instead, which publishes them in their turn.
    pub fn publish_recorded(&self, records: impl IntoIterator<Item = EventRecord>) {
        match &self.follower {
            Some(f) => f.notify_one(),
            None => self.send_recorded(records),
        }
    }

    /// Sends outbox records on the bus as they are (the outbox follower's).
    pub fn send_recorded(&self, records: impl IntoIterator<Item = EventRecord>) {
        for r in records {
            let _ = self.tx.send(r);
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<EventRecord> {
        self.tx.subscribe()
    }
}

impl Default for EventBus {
    /// Room for a few seconds of a flood's events, so a stream reader starved of CPU for a moment does not
    /// fall behind (it would be told to resync, and reload).
    fn default() -> Self {
        Self::new(16_384)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_operators_own_traffic_is_the_admin_api_and_metrics() {
        for p in ["/admin", "/admin/events", "/metrics"] {
            assert!(super::is_operator_path(p), "{p}");
        }
        for p in ["/administrator", "/alice", "/metrics/x", "/incoming-payments"] {
            assert!(!super::is_operator_path(p), "{p}");
        }
    }
}
