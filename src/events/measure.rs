//! What an alert threshold watches (a peer's liquidity or credit used, a wallet's balance): named here, below
//! the thresholds service, because the events it raises carry it.

use serde::{Deserialize, Serialize};

/// What a threshold watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Measure {
    /// A peer's liquidity less what we owe it (what may still be sent through it): alert when under.
    PeerLiquidity,
    /// What a peer owes us: alert when over.
    PeerCredit,
    /// A wallet's balance less its reservations: alert when under.
    WalletBalance,
}

impl Measure {
    /// The stored name (`peer_liquidity`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PeerLiquidity => "peer_liquidity",
            Self::PeerCredit => "peer_credit",
            Self::WalletBalance => "wallet_balance",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::PeerLiquidity, Self::PeerCredit, Self::WalletBalance]
            .into_iter()
            .find(|m| m.as_str() == s)
    }

    /// Whether `value` is past `threshold`: under it, or for credit over it.
    pub fn past(self, value: i64, threshold: i64) -> bool {
        match self {
            Self::PeerCredit => value > threshold,
            Self::PeerLiquidity | Self::WalletBalance => value < threshold,
        }
    }

    /// In words, for the console and the CLI (`liquidity`, `credit used`, `balance`).
    pub fn words(self) -> &'static str {
        match self {
            Self::PeerLiquidity => "liquidity",
            Self::PeerCredit => "credit used",
            Self::WalletBalance => "balance",
        }
    }
}
