//! Operator actions as data: one [`Command`] per thing an operator can change, and [`execute`], the one place that
//! runs them over the [`Services`]. The admin API carries commands (`POST /admin/commands`, and its REST paths as
//! a table onto them), its client sends them, the console's effects and the CLI build them, and every desk — the
//! embedded server, an attached one, the workshop's two — runs them through `run(Command)`. Adding an action is a
//! variant here, its arm in [`execute`], and where a person gives it (a CLI subcommand, a console key).

use serde::{Deserialize, Serialize};

use super::{
    Cause, Error, Services,
    dto::{AddKey, CreateWallet, KeyAdded, LiquidityMove, Move, Moved, NewPeer, NewSettlement, PeerMoved, PeerView},
};
use crate::{
    ase::{incoming::IncomingView, liquidity::Direction, outgoing::OutgoingView, peers::PeerPatch},
    gnap::service::GrantView,
    ids::short_id,
    ledger::Movement,
    money::Asset,
    text::sanitize,
    wallet::Wallet,
    webhooks::DeliveryRow,
};

/// Something an operator changes. Serialised as `{"command": "approveGrant", "id": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Command {
    /// Approve a pending grant as the resource owner.
    ApproveGrant {
        id: String,
    },
    /// Reject a pending grant, optionally saying why.
    RejectGrant {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Revoke a grant and all its tokens.
    RevokeGrant {
        id: String,
    },
    /// Revoke one access token (the client must ask for a new one; its grant stays).
    RevokeToken {
        id: String,
    },
    /// Lift a lockout on the interaction page: forget the failed owner sign-ins on `grant`, or those of
    /// `wallet`'s owner on every page (one of the two).
    UnlockSignIns {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wallet: Option<String>,
    },
    /// Complete an incoming payment: it takes no more money.
    CompleteIncoming {
        id: String,
    },
    /// Send a failed outgoing payment again.
    RetryOutgoing {
        id: String,
    },
    /// Cancel an outgoing payment that has not finished.
    CancelOutgoing {
        id: String,
    },
    CreateWallet(CreateWallet),
    /// Set (or with `None` clear) the `publicName` a wallet address shows.
    SetPublicName {
        wallet: String,
        #[serde(default)]
        public_name: Option<String>,
    },
    /// Set, generate or remove a wallet owner's passphrase (the owner then decides the wallet's grants on
    /// the interaction page).
    SetOwnerPassphrase {
        wallet: String,
        passphrase: OwnerPassphrase,
    },
    /// Money into a wallet from outside the ASE.
    Deposit {
        wallet: String,
        funds: Move,
    },
    /// Money out of a wallet to outside the ASE.
    Withdraw {
        wallet: String,
        funds: Move,
    },
    /// Register a client key on a wallet, or generate a key pair.
    AddKey {
        wallet: String,
        key: AddKey,
    },
    RemoveKey {
        wallet: String,
        kid: String,
    },
    CreatePeer(NewPeer),
    UpdatePeer {
        name: String,
        patch: PeerPatch,
    },
    RemovePeer {
        name: String,
    },
    /// Deposit or withdraw a peer's liquidity.
    MovePeerLiquidity {
        peer: String,
        liquidity: LiquidityMove,
    },
    /// Record a settlement with a peer.
    SettlePeer {
        peer: String,
        settlement: NewSettlement,
    },
    /// Set (or with no `threshold` remove) an alert threshold: on a peer's liquidity or credit used
    /// (`subject` names the peer) or on a wallet's balance (`subject` names the wallet), in minor units of
    /// its asset.
    SetThreshold(super::dto::NewThreshold),
    /// Re-drive the webhook delivery of event `seq`.
    RetryWebhook {
        seq: i64,
    },
    /// Re-drive every dead webhook delivery.
    RetryDeadWebhooks,
}

/// What becomes of a wallet owner's passphrase. Serialised as `{"action": "set", "passphrase": "…"}`,
/// `{"action": "generate"}` or `{"action": "remove"}`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum OwnerPassphrase {
    Set { passphrase: String },
    Generate,
    Remove,
}

impl std::fmt::Debug for OwnerPassphrase {
    /// Never the passphrase itself (commands are logged).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Set { .. } => "Set { passphrase: \"…\" }",
            Self::Generate => "Generate",
            Self::Remove => "Remove",
        })
    }
}

/// A wallet owner's passphrase after [`Command::SetOwnerPassphrase`]: whether the wallet has one, and a
/// generated one (shown this once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PassphraseSet {
    pub wallet: String,
    pub has_passphrase: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<String>,
}

/// What a command came to. Serialised as `{"outcome": "grant", "value": …}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "value", rename_all = "camelCase")]
pub enum Outcome {
    Grant(Box<GrantView>),
    Incoming(Box<IncomingView>),
    Outgoing(Box<OutgoingView>),
    Wallet(Wallet),
    Moved(Box<Moved>),
    KeyAdded(KeyAdded),
    Peer(Box<PeerView>),
    PeerMoved(Box<PeerMoved>),
    Delivery(DeliveryRow),
    Passphrase(PassphraseSet),
    Threshold(Box<crate::thresholds::ThresholdView>),
    /// How many deliveries were re-driven.
    Retried(usize),
    Unlocked(super::dto::Unlocked),
    /// Done; nothing to show (a removal).
    Done,
}

impl Outcome {
    /// The JSON body the admin API's REST path for the command answers (none: `204 No Content`).
    pub fn body(&self) -> Option<String> {
        let v = match self {
            Self::Grant(g) => serde_json::to_string(g),
            Self::Incoming(i) => serde_json::to_string(i),
            Self::Outgoing(o) => serde_json::to_string(o),
            Self::Wallet(w) => serde_json::to_string(w),
            Self::Moved(m) => serde_json::to_string(m),
            Self::KeyAdded(k) => serde_json::to_string(k),
            Self::Peer(p) => serde_json::to_string(p),
            Self::PeerMoved(m) => serde_json::to_string(m),
            Self::Delivery(d) => serde_json::to_string(d),
            Self::Passphrase(p) => serde_json::to_string(p),
            Self::Threshold(t) => serde_json::to_string(t),
            Self::Retried(n) => Ok(serde_json::json!({ "retried": n }).to_string()),
            Self::Unlocked(u) => serde_json::to_string(u),
            Self::Done => return None,
        };
        // these types always serialise
        v.ok()
    }
}

impl Outcome {
    /// What `cmd` came to, in one sentence for people: the console's flash line, the CLI and the admin API's
    /// `message` alike. Text a client or peer supplied is sanitised; a generated secret is never in it.
    pub fn sentence(&self, cmd: &Command) -> String {
        match (cmd, self) {
            (Command::ApproveGrant { id }, _) => format!("grant {} approved", short_id(id)),
            (Command::RejectGrant { id, .. }, _) => format!("grant {} rejected", short_id(id)),
            (Command::RevokeGrant { id }, _) => format!("grant {} revoked", short_id(id)),
            (Command::CompleteIncoming { id }, _) => format!("incoming payment {} completed", short_id(id)),
            (Command::RetryOutgoing { id }, _) => format!("outgoing payment {} retried", short_id(id)),
            (Command::CancelOutgoing { id }, _) => format!("outgoing payment {} cancelled", short_id(id)),
            (_, Self::Wallet(w)) if matches!(cmd, Command::CreateWallet(_)) => {
                format!("created {} ({}/{})", w.url, w.asset_code, w.asset_scale)
            }
            (_, Self::Wallet(w)) => match &w.public_name {
                Some(p) => format!("{} shows the public name {:?}", w.url, sanitize(p)),
                None => format!("{} shows no public name", w.url),
            },
            (_, Self::Passphrase(p)) => match (&p.generated, p.has_passphrase) {
                (Some(_), _) => format!("{}'s owner has a generated passphrase (shown this once)", p.wallet),
                (None, true) => format!("{}'s owner now decides its grants with that passphrase", p.wallet),
                (None, false) => format!("{} has no owner passphrase: the operator decides its grants", p.wallet),
            },
            (Command::Deposit { wallet, .. } | Command::Withdraw { wallet, .. }, Self::Moved(m)) => {
                let (b, deposit) = (&m.balance, matches!(cmd, Command::Deposit { .. }));
                let asset = Asset {
                    code: b.asset_code.clone(),
                    scale: b.asset_scale,
                };
                format!(
                    "{} {} {} {}: balance {}",
                    if deposit { "deposited" } else { "withdrew" },
                    asset.format(m.transfer.amount.into()),
                    if deposit { "to" } else { "from" },
                    wallet,
                    asset.format(b.balance.into()),
                )
            }
            (Command::AddKey { wallet, .. }, Self::KeyAdded(k)) => {
                format!("added key {} to {wallet}", sanitize(&k.jwk.kid))
            }
            (Command::RevokeToken { id }, _) => format!("token {} revoked", short_id(id)),
            (Command::RemoveKey { wallet, kid }, _) => format!("removed key {} from {wallet}", sanitize(kid)),
            (Command::CreatePeer(_) | Command::UpdatePeer { .. }, Self::Peer(p)) => {
                format!("peer {} saved", sanitize(&p.name))
            }
            (Command::RemovePeer { name }, _) => format!("removed peer {}", sanitize(name)),
            (Command::MovePeerLiquidity { liquidity, .. }, Self::PeerMoved(m)) => {
                let p = &m.peer;
                let deposit = liquidity.deposit.is_some();
                let available = p.available_to_send.map_or_else(
                    || "sending not limited".to_owned(),
                    |a| format!("{} available to send", p.amount(a.into())),
                );
                format!(
                    "{} {} {} {}'s liquidity: now {}, {available}",
                    if deposit { "deposited" } else { "withdrew" },
                    p.amount(m.transfer.amount.into()),
                    if deposit { "into" } else { "from" },
                    sanitize(&p.name),
                    p.amount(p.liquidity.into()),
                )
            }
            (Command::SettlePeer { settlement, .. }, Self::PeerMoved(m)) => {
                let (p, amount) = (&m.peer, m.peer.amount(m.transfer.amount.into()));
                let who = match settlement.direction {
                    Direction::Paid => format!("we paid {} {amount}", sanitize(&p.name)),
                    Direction::Received => format!("{} paid us {amount}", sanitize(&p.name)),
                };
                format!("settlement recorded: {who}; now {}", p.position_words())
            }
            (_, Self::Delivery(d)) => format!("the webhook for event {} will be sent again", d.event_seq),
            (Command::SetThreshold(_), Self::Threshold(t)) => t.words(),
            (Command::SetThreshold(t), _) => {
                format!("{}: {} threshold removed", sanitize(&t.subject), t.measure.words())
            }
            (_, Self::Retried(0)) => "no dead webhook deliveries to re-drive".to_owned(),
            (_, Self::Retried(1)) => "1 dead webhook delivery will be sent again".to_owned(),
            (_, Self::Retried(n)) => format!("{n} dead webhook deliveries will be sent again"),
            (_, Self::Unlocked(u)) => u.words(),
            _ => "done".to_owned(),
        }
    }
}

/// An outcome of another kind than the command gives (a server of another version, or a bug).
#[derive(Debug, Clone, thiserror::Error)]
#[error("unexpected answer to a command: {0}")]
pub struct UnexpectedOutcome(pub String);

/// `T::try_from(outcome)`: the value of an outcome of the kind a caller expects.
macro_rules! outcome_values {
    ($($variant:ident => $t:ty, $unwrap:expr;)*) => {$(
        impl TryFrom<Outcome> for $t {
            type Error = UnexpectedOutcome;

            fn try_from(o: Outcome) -> Result<Self, UnexpectedOutcome> {
                match o {
                    Outcome::$variant(v) => Ok($unwrap(v)),
                    other => Err(UnexpectedOutcome(format!("{other:?}").chars().take(80).collect())),
                }
            }
        }
    )*};
}

outcome_values! {
    Grant => GrantView, |v: Box<GrantView>| *v;
    Incoming => IncomingView, |v: Box<IncomingView>| *v;
    Outgoing => OutgoingView, |v: Box<OutgoingView>| *v;
    Wallet => Wallet, |v| v;
    Moved => Moved, |v: Box<Moved>| *v;
    KeyAdded => KeyAdded, |v| v;
    Peer => PeerView, |v: Box<PeerView>| *v;
    PeerMoved => PeerMoved, |v: Box<PeerMoved>| *v;
    Delivery => DeliveryRow, |v| v;
    Passphrase => PassphraseSet, |v| v;
    Threshold => crate::thresholds::ThresholdView, |v: Box<crate::thresholds::ThresholdView>| *v;
    Retried => usize, |v| v;
    Unlocked => super::dto::Unlocked, |v| v;
}

impl TryFrom<Outcome> for () {
    type Error = UnexpectedOutcome;

    fn try_from(o: Outcome) -> Result<(), UnexpectedOutcome> {
        match o {
            Outcome::Done => Ok(()),
            other => Err(UnexpectedOutcome(format!("{other:?}").chars().take(80).collect())),
        }
    }
}

impl Command {
    /// Whether the command makes something new (its REST path answers `201 Created`).
    pub fn creates(&self) -> bool {
        matches!(self, Self::CreateWallet(_) | Self::AddKey { .. } | Self::CreatePeer(_))
    }
}

/// Runs `cmd` over the services; `by` says who gave it (grant decisions record it in the grant's timeline).
pub async fn execute(s: &Services, cmd: Command, by: Cause) -> Result<Outcome, Error> {
    use super::{funds, grants, keys, liquidity, payments, peers, wallets, webhooks};
    Ok(match cmd {
        Command::ApproveGrant { id } => Outcome::Grant(Box::new(grants::approve_grant(s, &id, by).await?)),
        Command::RejectGrant { id, reason } => {
            let body = super::dto::Reject { reason };
            Outcome::Grant(Box::new(grants::reject_grant(s, &id, body, by).await?))
        }
        Command::RevokeGrant { id } => Outcome::Grant(Box::new(grants::revoke_grant(s, &id, by).await?)),
        Command::RevokeToken { id } => {
            s.gnap.revoke_token(&id, by).await?;
            Outcome::Done
        }
        Command::UnlockSignIns { grant, wallet } => {
            Outcome::Unlocked(grants::unlock_sign_ins(s, grant.as_deref(), wallet.as_deref(), by).await?)
        }
        Command::CompleteIncoming { id } => Outcome::Incoming(Box::new(payments::complete_incoming(s, &id).await?)),
        Command::RetryOutgoing { id } => Outcome::Outgoing(Box::new(payments::retry_outgoing(s, &id).await?)),
        Command::CancelOutgoing { id } => Outcome::Outgoing(Box::new(payments::cancel_outgoing(s, &id).await?)),
        Command::CreateWallet(body) => Outcome::Wallet(wallets::create_wallet(s, body).await?),
        Command::SetPublicName { wallet, public_name } => {
            Outcome::Wallet(s.wallets.set_public_name(&wallet, public_name).await?)
        }
        Command::SetOwnerPassphrase { wallet, passphrase } => {
            use crate::passphrase::Origin;
            let (given, generated) = match passphrase {
                OwnerPassphrase::Set { passphrase } => (Some((passphrase, Origin::Chosen)), None),
                OwnerPassphrase::Generate => {
                    let p = crate::passphrase::generate().map_err(crate::wallet::WalletError::from)?;
                    (Some((p.clone(), Origin::Generated)), Some(p))
                }
                OwnerPassphrase::Remove => (None, None),
            };
            let has_passphrase = given.is_some();
            s.wallets.set_owner_passphrase(&wallet, given).await?;
            Outcome::Passphrase(PassphraseSet {
                wallet,
                has_passphrase,
                generated,
            })
        }
        Command::Deposit { wallet, funds } => {
            Outcome::Moved(Box::new(funds::move_funds(s, &wallet, funds, Movement::Deposit).await?))
        }
        Command::Withdraw { wallet, funds } => Outcome::Moved(Box::new(
            funds::move_funds(s, &wallet, funds, Movement::Withdrawal).await?,
        )),
        Command::AddKey { wallet, key } => Outcome::KeyAdded(keys::add_key(s, &wallet, key).await?),
        Command::RemoveKey { wallet, kid } => {
            keys::remove_key(s, &wallet, &kid).await?;
            Outcome::Done
        }
        Command::CreatePeer(body) => Outcome::Peer(Box::new(peers::create_peer(s, body).await?)),
        Command::UpdatePeer { name, patch } => Outcome::Peer(Box::new(peers::update_peer(s, &name, patch).await?)),
        Command::RemovePeer { name } => {
            peers::remove_peer(s, &name).await?;
            Outcome::Done
        }
        Command::MovePeerLiquidity { peer, liquidity: m } => {
            Outcome::PeerMoved(Box::new(liquidity::move_peer_liquidity(s, &peer, m).await?))
        }
        Command::SettlePeer { peer, settlement } => {
            Outcome::PeerMoved(Box::new(liquidity::settle_peer(s, &peer, settlement).await?))
        }
        Command::SetThreshold(t) => {
            match super::thresholds::set_threshold(s, t.measure, &t.subject, t.threshold).await? {
                Some(t) => Outcome::Threshold(Box::new(t)),
                None => Outcome::Done,
            }
        }
        Command::RetryWebhook { seq } => Outcome::Delivery(webhooks::retry_webhook(s, seq).await?),
        Command::RetryDeadWebhooks => Outcome::Retried(webhooks::retry_dead_webhooks(s).await?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_tagged_json() {
        let c: Command = serde_json::from_value(serde_json::json!({
            "command": "deposit", "wallet": "alice", "funds": {"value": "100", "transferId": "t-1"}
        }))
        .unwrap();
        assert!(
            matches!(&c, Command::Deposit { wallet, funds } if wallet == "alice" && funds.transfer_id.as_deref() == Some("t-1"))
        );
        let back = serde_json::to_value(&c).unwrap();
        assert_eq!(back["command"], "deposit");
        let c: Command =
            serde_json::from_value(serde_json::json!({"command": "setPublicName", "wallet": "bob"})).unwrap();
        assert!(matches!(c, Command::SetPublicName { public_name: None, .. }));
        assert!(serde_json::from_value::<Command>(serde_json::json!({"command": "launchMissiles"})).is_err());
        let o = serde_json::to_value(Outcome::Retried(3)).unwrap();
        assert_eq!(o, serde_json::json!({"outcome": "retried", "value": 3}));
        assert_eq!(Outcome::Retried(3).body().unwrap(), r#"{"retried":3}"#);
        assert!(Outcome::Done.body().is_none());
    }
}
