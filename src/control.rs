//! The command layer: every operator action — wallets, keys, funds, grant decisions, payment actions,
//! peers — as one function over the running ASE's [`Services`]. The admin API handlers, the CLI when no
//! server holds the data dir, and the console all call these, so an action means the same wherever it is
//! given. Commands answer typed [`Error`]s and know nothing of HTTP or terminals; `dto` holds the bodies
//! the admin API and its client share.

pub mod classroom;
pub mod command;
pub mod dto;
pub mod events;
pub mod funds;
pub mod grants;
pub mod keys;
pub mod liquidity;
pub mod payments;
pub mod peers;
pub mod query;
pub mod thresholds;
pub mod views;
pub mod wallets;
pub mod webhooks;

use std::sync::{Arc, atomic::AtomicUsize};

use tokio_util::sync::CancellationToken;

/// Who gives a command (console, CLI, admin API) and the admin request behind it, for the grant's timeline.
pub use crate::gnap::timeline::{Actor, Cause};
pub use command::{Command, Outcome, execute};
pub use liquidity::move_peer_liquidity;
pub use payments::list_incoming;
pub use peers::{create_peer, ensure_client_wallet, list_peers, update_peer};
pub use query::{Found, Query, answer};
pub use views::{overview, server_view};
pub use wallets::create_wallet;

use crate::{
    ase::{
        engine::Engine,
        incoming::{IncomingError, IncomingPayments},
        liquidity::{LiquidityError, PeerLiquidity},
        outgoing::{OutgoingError, OutgoingPayments},
        peers::{PeerError, Peers},
        quotes::{QuoteError, Quotes},
        remote::Remote,
        stream_receiver::Receiver,
    },
    clock::SharedClock,
    events::EventBus,
    gnap::{Gnap, GnapError},
    ledger::{Ledger, LedgerError},
    money::MoneyError,
    settings::Settings,
    store::{self, Store},
    wallet::{WalletError, Wallets},
    webhooks::{WebhookError, Webhooks},
};

/// The running ASE: its services, the bus and the settings, wired over one data dir by `crate::app`.
pub struct Services {
    pub settings: Arc<Settings>,
    pub bus: EventBus,
    pub wallets: Wallets,
    pub ledger: Ledger,
    pub gnap: Gnap,
    pub incoming: IncomingPayments,
    pub quotes: Quotes,
    pub outgoing: OutgoingPayments,
    pub engine: Engine,
    /// The STREAM receiver behind `POST /ilp`.
    pub ilp: Receiver,
    /// SPSP credentials for wallet addresses, and the money paid over them.
    pub spsp: crate::ase::spsp::Spsp,
    /// The ILP peers (config and admin).
    pub peers: Peers,
    /// The peers' liquidity, credit limits and settlements.
    pub liquidity: PeerLiquidity,
    /// Receivers on other ASEs, and the ASE's own Open Payments client identity.
    pub remote: Remote,
    pub clock: SharedClock,
    /// Webhook deliveries (the deliverer runs while serving with a URL configured).
    pub webhooks: Webhooks,
    /// How many readers take an event per request (`GET /admin/events?live=true`): while any does, the
    /// request log captures every exchange and publishes it.
    pub capture: Arc<AtomicUsize>,
    /// How many consoles follow the event stream (`live=summary`): while any does, the request log keeps
    /// exchanges (raw, masked when someone opens one).
    pub consoles: Arc<AtomicUsize>,
    /// The server's recent requests (its HTTP edge keeps them; none when no server runs here).
    pub requests: std::sync::OnceLock<Arc<dyn RequestRing>>,
    /// The store, for reading the event outbox (services remain its only writers).
    pub store: Store,
    /// Cancelled when the server stops: event streams end so the listener can close.
    pub stopping: CancellationToken,
    /// The class this desk seats under `opdesk workshop --seats N` (empty otherwise).
    pub room: classroom::Room,
}

/// The server's recent requests as the HTTP edge keeps them (`server::request_log::RequestLog`), read by
/// [`Query::Requests`] and [`Query::Request`]: a page of summaries, or one request with its exchange and
/// signature report, built when asked for.
pub trait RequestRing: Send + Sync {
    /// Up to `limit` requests, newest first, after the one with id `cursor`, and the next page's cursor.
    /// Reading the first page says someone watches the log: for a few seconds, exchanges are captured.
    fn page(
        &self,
        cursor: Option<&str>,
        limit: usize,
    ) -> (Vec<crate::events::requests::RequestSummary>, Option<String>);
    /// One request, if the ring still has it.
    fn detail(&self, id: &str) -> Option<crate::events::requests::RequestDetail>;
}

/// Why an operator command was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command's input is malformed; `code` says what (`invalid_request`, `invalid_amount`).
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    #[error("{0}")]
    NotFound(String),
    /// A grant decision on a grant that was already decided (by another console, the CLI, or expiry).
    #[error("grant {id} is already {state}")]
    AlreadyDecided {
        id: String,
        state: crate::states::GrantState,
    },
    #[error(transparent)]
    Wallet(#[from] WalletError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error(transparent)]
    Incoming(#[from] IncomingError),
    #[error(transparent)]
    Outgoing(#[from] OutgoingError),
    #[error(transparent)]
    Quote(#[from] QuoteError),
    #[error(transparent)]
    Grant(#[from] GnapError),
    #[error(transparent)]
    Peer(#[from] PeerError),
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    #[error(transparent)]
    Liquidity(#[from] LiquidityError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl Error {
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            code,
            message: message.into(),
        }
    }
}
