//! `[consent]`: who decides interactive grants — the operator, the wallet's owner on the interaction page, or
//! either — and how failed sign-ins on that page are slowed.

use serde::Deserialize;

/// Who decides an interactive grant (`[consent] decide`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decider {
    /// The operator only: the console, the CLI, the admin API.
    Operator,
    /// The wallet's owner on the interaction page, for wallets with an owner passphrase (the operator decides
    /// for the others).
    Owner,
    /// Whoever comes first: the owner on the page (wallets with a passphrase) or the operator.
    Either,
}

/// `[consent]`: who decides interactive grants, and how failed sign-ins on the interaction page are slowed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsentSettings {
    pub decide: Decider,
    /// Failed sign-ins allowed on one grant's page within `failure_window_secs`.
    pub max_failures_per_grant: u32,
    /// Failed sign-ins allowed for one wallet's owner, on any page, within `failure_window_secs`.
    pub max_failures_per_wallet: u32,
    pub failure_window_secs: u32,
}
