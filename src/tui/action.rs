//! UI intents: what a key (or a mouse click, or a `:` command) asks the console to do. `update` turns them
//! into state changes and effects; the keymap maps keys to them.

use serde::{Deserialize, Serialize};

use super::pane::Pane;

/// An intent of the person at the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Quit,
    Help,
    Command,
    Filter,
    NextPane,
    PrevPane,
    Goto(Pane),
    Up,
    Down,
    Top,
    Bottom,
    PageUp,
    PageDown,
    HalfPageUp,
    HalfPageDown,
    Open,
    Back,
    Freeze,
    Resync,
    RawJson,
    Reveal,
    FailedOnly,
    Approve,
    Reject,
    Revoke,
    /// Grants: let the owner sign in again (forget the failed sign-ins that locked the page).
    Unlock,
    Complete,
    Retry,
    Cancel,
    NewWallet,
    Deposit,
    Withdraw,
    GenerateKey,
    /// Wallets: register a client's public key (JWK JSON, or the Web Monetization extension's base64).
    AddKey,
    Demo,
    /// Webhooks: only dead deliveries.
    DeadOnly,
    /// Grants: show closed grants (revoked, rejected, expired) too, or hide them again.
    AllGrants,
    /// Webhooks: re-drive the selected delivery.
    Redrive,
    /// Webhooks: re-drive every dead delivery.
    RedriveDead,
    /// A console over several desks: show the next one.
    NextDesk,
    /// Peers: deposit liquidity for the selected peer.
    PeerDeposit,
    /// Peers: withdraw liquidity of the selected peer.
    PeerWithdraw,
    /// Leave the terminal to the shell (Ctrl-Z); `fg` brings the console back.
    Suspend,
    /// Peers: record a settlement with the selected peer (paid or received).
    Settle,
}

impl Action {
    /// The name used in `config.toml` `[keys]` and in the help overlay.
    pub fn name(self) -> String {
        match self {
            Self::Goto(p) => format!("goto-{}", p.name()),
            other => serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        }
    }

    /// Parses a name from `[keys]`.
    pub fn from_name(name: &str) -> Option<Self> {
        if let Some(p) = name.strip_prefix("goto-") {
            return Pane::EVERY.iter().copied().find(|x| x.name() == p).map(Self::Goto);
        }
        serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
    }
}
