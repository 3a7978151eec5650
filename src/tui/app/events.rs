//! Domain events into the view model: rows updated in place where the event carries enough, panes marked
//! stale otherwise (reloaded on the next tick), the recent-events list and each resource's history, and
//! counting while frozen. Pane-specific row updates live in the pane files.

use super::{App, Effect, HttpRow, Level, short_id};
use crate::{events::DomainEvent, money::Asset, tui::pane::Pane};

impl App {
    /// Resource `id` had `what` happen now: its history, and the Overview's recent events.
    fn remember(&mut self, id: &str, what: String) {
        let at = crate::clock::format_ts(self.now);
        self.history.remember(id, at.clone(), what.clone());
        self.panes.overview.remember(at, what);
    }

    /// Requests were served (told a few times a second, coalesced): the Overview counts them and keeps the
    /// refused ones; the Requests pane, in view, reads its page again (at its pace).
    fn on_served(
        &mut self,
        arrivals: &[(i64, u32)],
        refused: &[crate::events::requests::RequestSummary],
    ) -> Vec<Effect> {
        if self.frozen {
            self.missed += arrivals.iter().map(|(_, n)| u64::from(*n)).sum::<u64>();
            self.stale.insert(Pane::Requests);
            return Vec::new();
        }
        let refused = refused.iter().cloned().map(HttpRow::from).collect();
        self.panes.overview.on_served(self.now, arrivals, refused);
        self.stale.insert(Pane::Requests);
        self.reload_if_due(Pane::Requests).into_iter().collect()
    }

    pub(super) fn on_event(&mut self, e: DomainEvent) -> Vec<Effect> {
        match &e {
            DomainEvent::RequestsServed { arrivals, refused, .. } => return self.on_served(arrivals, refused),
            // per-request events are for the admin API's `live=true` readers, not consoles
            DomainEvent::HttpRequest { .. } => return Vec::new(),
            _ => {}
        }
        // a durable event may have queued a webhook delivery or moved a seat of a class (both panes reload at
        // their own pace)
        if e.is_durable() {
            self.stale.insert(Pane::Webhooks);
            self.stale.insert(Pane::Classroom);
        }
        if self.frozen {
            self.missed += 1;
            for p in affected(&e) {
                self.stale.insert(p);
            }
            return Vec::new();
        }
        match &e {
            DomainEvent::IncomingPaymentReceived { id, received } => {
                if !self.panes.incoming.on_received(id, *received) {
                    self.stale.insert(Pane::Incoming);
                }
                self.remember(id, format!("received {received}"));
            }
            DomainEvent::OutgoingPaymentProgress { id, sent } => {
                if !self.panes.outgoing.on_progress(id, *sent) {
                    self.stale.insert(Pane::Outgoing);
                }
                self.remember(id, format!("sent {sent}"));
            }
            DomainEvent::BalanceChanged {
                account_id,
                wallet,
                balance,
                pending_debits,
            } => {
                self.panes
                    .wallets
                    .on_balance_changed(account_id, *balance, *pending_debits);
                self.panes
                    .overview
                    .on_balance_changed(account_id, *balance, *pending_debits);
                // not a wallet's: a peer's position or liquidity may have moved (the pane paces its reload)
                if wallet.is_none() {
                    self.stale.insert(Pane::Peers);
                }
            }
            other => {
                let text = describe_event(other);
                if let Some(id) = event_id(other) {
                    self.remember(&id, text);
                }
                if let DomainEvent::GrantPending { client, owner, .. } = other {
                    let words = match owner {
                        Some(w) => format!("a grant from {client} waits for the owner of {w} (Grants, 4)"),
                        None => format!("a grant from {client} waits for your decision (Grants, 4)"),
                    };
                    self.flash(Level::Info, words);
                }
                for p in affected(other) {
                    self.stale.insert(p);
                }
            }
        }
        Vec::new()
    }
}

/// Which panes an event makes stale.
fn affected(e: &DomainEvent) -> Vec<Pane> {
    use DomainEvent::*;
    match e {
        WalletCreated { .. } | KeyAdded { .. } | KeyRemoved { .. } => vec![Pane::Wallets],
        // a peer's account moves with every payment through it
        BalanceChanged { .. } => vec![Pane::Wallets, Pane::Overview, Pane::Peers],
        GrantPending { .. }
        | GrantApproved { .. }
        | GrantRejected { .. }
        | GrantRevoked { .. }
        | TokenIssued { .. }
        | TokenRotated { .. }
        | TokenRevoked { .. } => vec![Pane::Grants, Pane::Overview],
        IncomingPaymentCreated { .. }
        | IncomingPaymentCompleted { .. }
        | IncomingPaymentExpired { .. }
        | IncomingPaymentReceived { .. } => vec![Pane::Incoming, Pane::Overview],
        QuoteCreated { .. } => vec![Pane::Quotes],
        OutgoingPaymentCreated { .. }
        | OutgoingPaymentCompleted { .. }
        | OutgoingPaymentFailed { .. }
        | OutgoingPaymentCancelled { .. }
        | OutgoingPaymentProgress { .. } => vec![Pane::Outgoing, Pane::Overview],
        PeerLiquidityChanged { .. }
        | PeerSettled { .. }
        | PeerCreditLimitChanged { .. }
        | PeerLiquidityLow { .. }
        | PeerCreditHigh { .. } => {
            vec![Pane::Peers, Pane::Overview]
        }
        WalletBalanceLow { .. } => vec![Pane::Wallets, Pane::Overview],
        ThresholdChanged { .. } => vec![Pane::Peers, Pane::Wallets, Pane::Overview],
        WalletFundsMoved { .. } | WalletReceived { .. } => vec![Pane::Wallets, Pane::Overview],
        HttpRequest { .. } | RequestsServed { .. } => vec![],
    }
}

fn event_id(e: &DomainEvent) -> Option<String> {
    use DomainEvent::*;
    Some(match e {
        GrantPending { id, .. } | GrantApproved { id, .. } | GrantRejected { id, .. } | GrantRevoked { id } => {
            id.clone()
        }
        TokenIssued { grant_id } | TokenRotated { grant_id } | TokenRevoked { grant_id } => grant_id.clone(),
        IncomingPaymentCreated { id, .. } | IncomingPaymentCompleted { id } | IncomingPaymentExpired { id } => {
            id.clone()
        }
        OutgoingPaymentCreated { id, .. }
        | OutgoingPaymentCompleted { id }
        | OutgoingPaymentFailed { id, .. }
        | OutgoingPaymentCancelled { id } => id.clone(),
        QuoteCreated { id, .. } => id.clone(),
        // money moved: the operator's transfer, or the SPSP connection it arrived over
        WalletFundsMoved { transfer_id, .. } => transfer_id.clone(),
        WalletReceived { connection, .. } => connection.clone(),
        _ => return None,
    })
}

/// `v` minor units of an event's asset, in words (`12.34 USD`); the bare number when the asset is not one.
fn minor(v: i64, code: &str, scale: u8) -> String {
    Asset::new(code, scale).map_or_else(|_| v.to_string(), |a| a.format(v.into()))
}

/// Who decided a grant, in words: ` by the owner on the page`, ` with the CLI` (nothing when unknown).
fn decided_by(by: Option<&str>) -> &'static str {
    use crate::gnap::timeline::Actor;
    match by.and_then(|b| b.parse::<Actor>().ok()) {
        Some(Actor::Owner) => " by the owner on the page",
        Some(Actor::Console) => " in the console",
        Some(Actor::Cli) => " with the CLI",
        Some(Actor::AdminApi) => " through the admin API",
        Some(Actor::Policy) => " by auto_approve",
        _ => "",
    }
}

/// A domain event in a few words.
pub fn describe_event(e: &DomainEvent) -> String {
    use DomainEvent::*;
    match e {
        WalletCreated { name, .. } => format!("wallet {name} created"),
        KeyAdded { wallet, kid } => format!("key {} added to {wallet}", short_id(kid)),
        KeyRemoved { wallet, kid } => format!("key {} removed from {wallet}", short_id(kid)),
        BalanceChanged { wallet, balance, .. } => format!(
            "balance of {} is {balance}",
            wallet.clone().unwrap_or_else(|| "an ASE account".into())
        ),
        GrantPending { id, client, .. } => format!("grant {} from {client} is pending", short_id(id)),
        GrantApproved { id, by } => format!("grant {} approved{}", short_id(id), decided_by(by.as_deref())),
        GrantRejected { id, by, .. } => format!("grant {} rejected{}", short_id(id), decided_by(by.as_deref())),
        GrantRevoked { id } => format!("grant {} revoked", short_id(id)),
        TokenIssued { grant_id } => format!("token issued for grant {}", short_id(grant_id)),
        TokenRotated { grant_id } => format!("token rotated for grant {}", short_id(grant_id)),
        TokenRevoked { grant_id } => format!("token revoked for grant {}", short_id(grant_id)),
        IncomingPaymentCreated { id, wallet } => format!("incoming payment {} for {wallet}", short_id(id)),
        IncomingPaymentCompleted { id } => format!("incoming payment {} completed", short_id(id)),
        IncomingPaymentExpired { id } => format!("incoming payment {} expired", short_id(id)),
        IncomingPaymentReceived { id, received } => format!("incoming payment {} received {received}", short_id(id)),
        QuoteCreated { id, wallet } => format!("quote {} for {wallet}", short_id(id)),
        OutgoingPaymentCreated { id, wallet } => format!("outgoing payment {} from {wallet}", short_id(id)),
        OutgoingPaymentProgress { id, sent } => format!("outgoing payment {} sent {sent}", short_id(id)),
        OutgoingPaymentCompleted { id } => format!("outgoing payment {} completed", short_id(id)),
        OutgoingPaymentFailed { id, reason } => format!("outgoing payment {} failed: {reason}", short_id(id)),
        OutgoingPaymentCancelled { id } => format!("outgoing payment {} cancelled", short_id(id)),
        WalletFundsMoved {
            wallet,
            movement,
            amount,
            balance,
            asset_code,
            asset_scale,
            ..
        } => {
            let money = |v: &i64| minor(*v, asset_code, *asset_scale);
            format!(
                "{movement} of {} for {wallet}, balance {}",
                money(amount),
                money(balance)
            )
        }
        WalletReceived {
            wallet,
            connection,
            amount,
            received,
            asset_code,
            asset_scale,
        } => {
            let money = |v: &i64| minor(*v, asset_code, *asset_scale);
            format!(
                "{wallet} received {} (SPSP), {} in all on connection {}",
                money(amount),
                money(received),
                short_id(connection)
            )
        }
        PeerLiquidityChanged {
            peer,
            change,
            amount,
            asset_code,
            asset_scale,
            ..
        } => format!(
            "peer {peer}: {} of {}",
            change.replace('_', " "),
            Asset::new(asset_code, *asset_scale).map_or_else(|_| amount.to_string(), |a| a.format((*amount).into()))
        ),
        PeerSettled {
            peer,
            direction,
            amount,
            asset_code,
            asset_scale,
            ..
        } => format!(
            "peer {peer}: settlement {direction} {}",
            Asset::new(asset_code, *asset_scale).map_or_else(|_| amount.to_string(), |a| a.format((*amount).into()))
        ),
        PeerCreditLimitChanged { peer, credit_limit } => match credit_limit {
            Some(l) => format!("peer {peer}: credit limit set to {l}"),
            None => format!("peer {peer}: credit limit removed"),
        },
        PeerLiquidityLow {
            peer,
            liquidity,
            threshold,
            asset_code,
            asset_scale,
        } => format!(
            "peer {peer}: liquidity {} is under its threshold of {}",
            minor(*liquidity, asset_code, *asset_scale),
            minor(*threshold, asset_code, *asset_scale)
        ),
        PeerCreditHigh {
            peer,
            credit_used,
            threshold,
            asset_code,
            asset_scale,
        } => format!(
            "peer {peer}: credit used {} is over its threshold of {}",
            minor(*credit_used, asset_code, *asset_scale),
            minor(*threshold, asset_code, *asset_scale)
        ),
        WalletBalanceLow {
            wallet,
            balance,
            threshold,
            asset_code,
            asset_scale,
        } => format!(
            "wallet {wallet}: balance {} is under its threshold of {}",
            minor(*balance, asset_code, *asset_scale),
            minor(*threshold, asset_code, *asset_scale)
        ),
        ThresholdChanged {
            measure,
            subject,
            threshold,
            asset_code,
            asset_scale,
        } => match threshold {
            Some(t) => format!(
                "{subject}: {} threshold set to {}",
                measure.words(),
                minor(*t, asset_code, *asset_scale)
            ),
            None => format!("{subject}: {} threshold removed", measure.words()),
        },
        HttpRequest {
            method, path, status, ..
        } => format!("{method} {path} → {status}"),
        RequestsServed { arrivals, .. } => format!(
            "{} requests served",
            arrivals.iter().map(|(_, n)| u64::from(*n)).sum::<u64>()
        ),
    }
}
