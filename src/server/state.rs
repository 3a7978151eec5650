//! The state every handler gets: cheap-to-clone handles to the services, the bus and the settings.

use std::sync::Arc;

use super::signed::Verifier;
use crate::{
    ase::{
        engine::Engine, incoming::IncomingPayments, outgoing::OutgoingPayments, peers::Peers, quotes::Quotes,
        remote::Remote, stream_receiver::Receiver, wallet::Wallets,
    },
    clock::SharedClock,
    events::EventBus,
    gnap::Gnap,
    ledger::Ledger,
    settings::Settings,
};

/// Shared by every request: cloning is one reference-count increment.
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// The services, the bus and the settings.
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
    /// The ILP peers (config and admin).
    pub peers: Peers,
    /// Receivers on other ASEs, and the ASE's own Open Payments client identity.
    pub remote: Remote,
    /// Checks request signatures against client keys.
    pub verifier: Arc<Verifier>,
    pub clock: SharedClock,
    /// Whether the request log captures headers and bodies (on while a console shows them).
    pub capture: Arc<std::sync::atomic::AtomicBool>,
    /// The admin API bearer token.
    pub admin_token: Arc<str>,
}
