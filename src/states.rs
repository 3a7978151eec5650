//! Typed lifecycle states of grants, access tokens, incoming and outgoing payments, ledger transfers and
//! webhook deliveries,
//! with their rules (which state may be cancelled, retried, revoked, …) in one place.
//!
//! This is the only place where a state's text (`"sending"`, `"pending"`, …) is written: the database, the
//! JSON the APIs and the CLI emit, and the console all go through [`as_str`](OutgoingState::as_str),
//! [`FromStr`](std::str::FromStr) or serde (lowercase names), so the wire stays byte-identical. A test
//! (`tests/it/states.rs`) fails when a state literal appears elsewhere in `src/`.
//!
//! A leaf module: it imports nothing from the crate, so the store, services, CLI and console can all use it.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// A state name that is not one of the type's states.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a {kind} state")]
pub struct UnknownState {
    pub kind: &'static str,
    pub value: String,
}

/// Writes a state enum with its text mapping: `ALL`, `NAMES` (same order), `as_str`, `Display`, `FromStr`.
macro_rules! states {
    ($(#[$doc:meta])* $name:ident, $kind:literal { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// Every state, in the order of [`Self::NAMES`].
            pub const ALL: &'static [Self] = &[$(Self::$variant,)+];
            /// Every state's text, in the order of [`Self::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($text,)+];

            /// The state's text, as stored and as the APIs show it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// A state equals its text (handy where text comes in, and in tests).
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl FromStr for $name {
            type Err = UnknownState;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(UnknownState {
                        kind: $kind,
                        value: s.to_owned(),
                    }),
                }
            }
        }
    };
}

states! {
    /// An outgoing payment: `sending` until it completes, fails (retryable by the operator) or is cancelled.
    OutgoingState, "outgoing payment" {
        Sending => "sending",
        Completed => "completed",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

impl OutgoingState {
    /// The operator may cancel a payment that is still sending and has sent nothing yet.
    pub fn can_cancel(self, nothing_sent: bool) -> bool {
        self == Self::Sending && nothing_sent
    }

    /// The operator may retry a failed payment (with a fresh reservation).
    pub fn can_retry(self) -> bool {
        self == Self::Failed
    }

    /// The engine works on the payment (sends, settles) only while it is sending.
    pub fn is_sending(self) -> bool {
        self == Self::Sending
    }

    /// The payment ended without completing (the Open Payments `failed` flag); its reservation is released,
    /// so it counts against its grant only what it sent and delivered.
    pub fn is_failed(self) -> bool {
        matches!(self, Self::Failed | Self::Cancelled)
    }

    /// No transition leaves this state (a failed payment may still be retried).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Cancelled)
    }
}

states! {
    /// A webhook delivery: `pending` (attempts go on with backoff) until the receiver takes it (`delivered`)
    /// or the retry budget is spent (`dead`, until the operator re-drives it).
    DeliveryState, "webhook delivery" {
        Pending => "pending",
        Delivered => "delivered",
        Dead => "dead",
    }
}

impl DeliveryState {
    /// The operator may re-drive it (a dead one, or a pending one now): a delivered one stays delivered.
    pub fn can_redrive(self) -> bool {
        self != Self::Delivered
    }
}

states! {
    /// An incoming payment at a given time: derived from its `completed` flag and its `expiresAt`, never stored.
    IncomingState, "incoming payment" {
        Pending => "pending",
        Completed => "completed",
        Expired => "expired",
    }
}

impl IncomingState {
    /// The state of a payment that is `completed` or not, whose expiry (if any) is `expired` or not.
    pub fn of(completed: bool, expired: bool) -> Self {
        if completed {
            Self::Completed
        } else if expired {
            Self::Expired
        } else {
            Self::Pending
        }
    }

    /// The payment still takes money and may be completed.
    pub fn is_open(self) -> bool {
        self == Self::Pending
    }

    /// No transition leaves this state.
    pub fn is_final(self) -> bool {
        !self.is_open()
    }
}

states! {
    /// A GNAP grant. [`Expired`](Self::Expired) is never stored: it is how views show a pending grant whose
    /// interaction window has passed.
    GrantState, "grant" {
        Pending => "pending",
        Approved => "approved",
        Finalized => "finalized",
        Rejected => "rejected",
        Revoked => "revoked",
        /// View only: a pending grant past its interaction window.
        Expired => "expired",
    }
}

impl GrantState {
    /// The states a grant row may hold (all but the view-only [`Expired`](Self::Expired)).
    pub const STORED: &'static [Self] = &[
        Self::Pending,
        Self::Approved,
        Self::Finalized,
        Self::Rejected,
        Self::Revoked,
    ];

    /// The stored state a filter on this state selects (`expired` grants are stored as pending).
    pub fn stored(self) -> Self {
        match self {
            Self::Expired => Self::Pending,
            s => s,
        }
    }

    /// How a grant stored in this state shows once its interaction window has passed or not.
    pub fn shown(self, window_passed: bool) -> Self {
        if self == Self::Pending && window_passed {
            Self::Expired
        } else {
            self
        }
    }

    /// The grant is over and gives nothing any more: revoked (by its client, e.g. a browser extension's
    /// cancelled grant, or the operator), rejected, or expired before a decision. Listings hide these
    /// unless asked for all grants (`grants list --all`, `?all=true`, the console's `F` on Grants).
    pub fn is_closed(self) -> bool {
        matches!(self, Self::Revoked | Self::Rejected | Self::Expired)
    }

    /// The operator may approve or reject the grant.
    pub fn can_decide(self) -> bool {
        self == Self::Pending
    }

    /// The grant may be revoked (a revoked grant already is).
    pub fn can_revoke(self) -> bool {
        self != Self::Revoked
    }

    /// The stored states a revoke moves from.
    pub fn revocable() -> Vec<Self> {
        Self::STORED.iter().copied().filter(|s| s.can_revoke()).collect()
    }

    /// Tokens were issued and the grant's tokens are usable.
    pub fn is_active(self) -> bool {
        self == Self::Finalized
    }

    /// No transition leaves this state.
    pub fn is_final(self) -> bool {
        self == Self::Revoked
    }
}

states! {
    /// An access token: live until revoked (or rotated, which revokes it).
    TokenState, "access token" {
        Live => "live",
        Revoked => "revoked",
    }
}

impl TokenState {
    /// The state of a token that was revoked or not.
    pub fn of(revoked: bool) -> Self {
        if revoked { Self::Revoked } else { Self::Live }
    }
}

states! {
    /// A ledger transfer: a pending reservation is later posted or voided; a direct transfer is posted at once.
    TransferState, "transfer" {
        Pending => "pending",
        Posted => "posted",
        Voided => "voided",
    }
}

impl TransferState {
    /// The transfer may still be posted or voided.
    pub fn is_pending(self) -> bool {
        self == Self::Pending
    }

    /// No transition leaves this state.
    pub fn is_final(self) -> bool {
        !self.is_pending()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>(all: &[T], names: &[&str])
    where
        T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr + Serialize,
    {
        assert_eq!(all.len(), names.len());
        for (s, n) in all.iter().zip(names) {
            assert_eq!(&s.to_string(), n);
            assert_eq!(n.parse::<T>().ok(), Some(*s));
            assert_eq!(serde_json::to_string(s).ok(), Some(format!("\"{n}\"")));
        }
        assert!("nope".parse::<T>().is_err());
    }

    #[test]
    fn every_state_maps_to_its_text_and_back() {
        round_trips(OutgoingState::ALL, OutgoingState::NAMES);
        round_trips(IncomingState::ALL, IncomingState::NAMES);
        round_trips(GrantState::ALL, GrantState::NAMES);
        round_trips(TokenState::ALL, TokenState::NAMES);
        round_trips(TransferState::ALL, TransferState::NAMES);
    }

    #[test]
    fn cancellable_means_sending_with_nothing_sent() {
        for &s in OutgoingState::ALL {
            assert_eq!(s.can_cancel(true), s == OutgoingState::Sending);
            assert!(!s.can_cancel(false));
        }
    }

    #[test]
    fn a_revoke_moves_from_every_stored_state_but_revoked() {
        assert_eq!(
            GrantState::revocable(),
            [
                GrantState::Pending,
                GrantState::Approved,
                GrantState::Finalized,
                GrantState::Rejected
            ]
        );
    }
}
