//! The state every handler gets: cheap-to-clone handles to the services, the bus and the settings.

use std::sync::Arc;

use crate::{ase::wallet::Wallets, events::EventBus, ledger::Ledger, settings::Settings};

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub bus: EventBus,
    pub wallets: Wallets,
    pub ledger: Ledger,
    /// The admin API bearer token.
    pub admin_token: Arc<str>,
}
