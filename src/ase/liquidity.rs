//! Peer liquidity and credit limits, per ILP peer and in the peer's asset:
//!
//! - **position**: the peer's ledger account (`kind = peer`), positive when we owe the peer (we sent through
//!   it), negative when it owes us (it brought us money);
//! - **liquidity**: the peer's liquidity account (`kind = liquidity`, never below zero): what the peer lets us
//!   owe it. The operator deposits it from (and withdraws it to) the asset's settlement account;
//! - **sending rule**: a STREAM packet of `x` goes through a liquidity-limited peer only if
//!   `position + in flight + x ≤ liquidity`, else the payment waits (no attempt counted) with a reason that
//!   says so, and resumes by itself once there is room (a deposit or a settlement wakes it);
//! - **credit limit**: what the peer may owe us unsettled; a Prepare that would take `-position` past it is
//!   refused `T04` inside the transaction that would have credited it (see `ase::incoming`);
//! - **settlements**: money that changed hands outside ILP moves the position against the settlement account.
//!
//! Sending is limited once the operator first deposits liquidity for a peer (`peer_limits.send_limited`);
//! peers that never had a deposit send as before migration 0010. Limits are keyed by peer name, so config.toml
//! peers have them too.
//!
//! In flight counts packets handed to a peer whose outcome is not committed yet, on every node: each is a
//! claim, a row of `peer_claims` written in the transaction that checks the rule and ended in the one that
//! records the packet's outcome (or when it was not fulfilled). A claim its node could not end (the node died)
//! stops counting when it expires, after its packet did; the committed position is the truth then. Every
//! operator change is one `BEGIN IMMEDIATE` transaction with its durable event in the outbox.

use std::{collections::HashMap, sync::Arc};
use time::OffsetDateTime;

use crate::store::Connection;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::peers::Peer;
use crate::{
    clock::SharedClock,
    events::{DomainEvent, EventBus},
    ids,
    ledger::{self, LedgerError, Movement, NewTransfer, Transfer},
    money::{Asset, Value},
    store::{
        self, Store, ledger as ledger_repo, payments as pay_repo,
        peers::{self as peers_repo, PeerLimits},
    },
    thresholds::{Measure, ThresholdView},
};

/// The `failureReason` of a sending payment that waits for a peer's liquidity (it is not failed).
pub const WAIT_REASON: &str = "peer_liquidity";

/// How often a payment waiting for liquidity looks again (a deposit or settlement wakes it sooner).
pub const RECHECK_MS: i64 = 5_000;

/// What may still be sent through a peer: `liquidity - position - in_flight`, never below zero.
pub fn available_to_send(liquidity: i64, position: i64, in_flight: u64) -> u64 {
    let room = i128::from(liquidity) - i128::from(position) - i128::from(in_flight);
    u64::try_from(room.max(0)).unwrap_or(u64::MAX)
}

/// The sending rule: `position + in_flight + amount ≤ liquidity`.
pub fn fits(liquidity: i64, position: i64, in_flight: u64, amount: u64) -> bool {
    i128::from(position) + i128::from(in_flight) + i128::from(amount) <= i128::from(liquidity)
}

/// What the peer owes us now (the negative part of the position).
pub fn credit_used(position: i64) -> u64 {
    u64::try_from((-i128::from(position)).max(0)).unwrap_or(u64::MAX)
}

/// Whether a position passes the credit limit (`-position > limit`); no limit: never.
pub fn over_credit(position: i64, limit: Option<i64>) -> bool {
    limit.is_some_and(|l| -i128::from(position) > i128::from(l))
}

/// What may be withdrawn from a peer's liquidity: the liquidity less what we owe the peer now (the positive
/// part of the position, plus what is in flight).
pub fn withdrawable(liquidity: i64, position: i64, in_flight: u64) -> u64 {
    available_to_send(liquidity, position.max(0), in_flight)
}

/// A peer's limits and balances, in minor units of its asset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiquidityStatus {
    pub send_limited: bool,
    pub liquidity: i64,
    pub position: i64,
    pub in_flight: u64,
    /// None while sending is not limited.
    pub available_to_send: Option<u64>,
    pub credit_limit: Option<i64>,
    pub credit_used: u64,
}

impl LiquidityStatus {
    fn of(limits: &PeerLimits, liquidity: i64, position: i64, in_flight: u64) -> Self {
        Self {
            send_limited: limits.send_limited,
            liquidity,
            position,
            in_flight,
            available_to_send: limits
                .send_limited
                .then(|| available_to_send(liquidity, position, in_flight)),
            credit_limit: limits.credit_limit,
            credit_used: credit_used(position),
        }
    }
}

/// Who paid whom in a settlement recorded by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// We paid the peer: what we owe it goes down.
    Paid,
    /// The peer paid us: what it owes us goes down.
    Received,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paid => "paid",
            Self::Received => "received",
        }
    }
}

/// Why a liquidity or settlement change was refused; every one leaves the database unchanged.
#[derive(Debug, thiserror::Error)]
pub enum LiquidityError {
    /// The change is refused for a reason the operator can act on (said in words).
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl From<crate::store::db::Error> for LiquidityError {
    fn from(e: crate::store::db::Error) -> Self {
        Self::Store(e.into())
    }
}

/// The position (peer account) and liquidity of `peer` in `asset`, and its limits (0 for accounts not
/// created yet).
pub fn read(conn: &Connection, peer: &str, asset: &Asset) -> Result<(PeerLimits, i64, i64), store::Error> {
    let balance = |id: Option<String>| -> Result<i64, store::Error> {
        Ok(match id {
            Some(id) => ledger_repo::account(conn, &id)?.map_or(0, |a| a.balance),
            None => 0,
        })
    };
    let limits = peers_repo::limits(conn, peer)?;
    let liquidity = balance(ledger_repo::liquidity_account(conn, peer, &asset.code, asset.scale)?)?;
    let position = balance(ledger_repo::peer_account(conn, peer, &asset.code, asset.scale)?)?;
    Ok((limits, liquidity, position))
}

/// The credit check of a packet from `peer` inside the transaction that credits it (after its transfer):
/// `Some(why)` when the position now passes the peer's credit limit — the caller drops the transaction.
pub fn credit_refusal(conn: &Connection, peer: &str, asset: &Asset) -> Result<Option<String>, store::Error> {
    let limits = peers_repo::limits(conn, peer)?;
    if limits.credit_limit.is_none() {
        // no credit limit: the balances are not needed (most peers; this runs for every packet)
        return Ok(None);
    }
    let position = match ledger_repo::peer_account(conn, peer, &asset.code, asset.scale)? {
        Some(id) => ledger_repo::account(conn, &id)?.map_or(0, |a| a.balance),
        None => 0,
    };
    if !over_credit(position, limits.credit_limit) {
        return Ok(None);
    }
    let limit = limits.credit_limit.unwrap_or(0);
    Ok(Some(format!(
        "insufficient liquidity: peer {peer} would owe {}, past its credit limit of {}; settle or raise the limit",
        asset.format(credit_used(position).into()),
        asset.format(limit.into()),
    )))
}

/// The end of an operator's transfer for `peer` inside its transaction: the peer's figures after it, the event
/// `event` makes of them (liquidity, position) when the transfer is new (a replay records nothing), and the
/// commit.
fn commit_transfer(
    tx: store::Tx<'_>,
    peer: &str,
    asset: &Asset,
    in_flight: u64,
    now: OffsetDateTime,
    new: bool,
    event: impl FnOnce(i64, i64) -> DomainEvent,
) -> Result<(Option<crate::events::EventRecord>, LiquidityStatus), LiquidityError> {
    let (limits, liquidity, position) = read(&tx, peer, asset)?;
    let recorded = if new {
        Some(store::outbox::append(&tx, now, event(liquidity, position))?)
    } else {
        None
    };
    tx.commit()?;
    Ok((recorded, LiquidityStatus::of(&limits, liquidity, position, in_flight)))
}

/// A packet's claim on room through a peer (a row of `peer_claims`), ended with [`PeerLiquidity::release`] or
/// in the transaction that records the packet's outcome ([`unclaim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimId(u128);

impl ClaimId {
    fn new() -> Result<Self, store::Error> {
        let mut b = [0u8; 16];
        getrandom::fill(&mut b).map_err(|e| store::Error::Corrupt(format!("no randomness for a claim: {e}")))?;
        Ok(Self(u128::from_le_bytes(b)))
    }

    fn key(self) -> String {
        format!("{:032x}", self.0)
    }
}

/// Ends `claim` inside the caller's transaction (the one that records its packet's outcome).
pub fn unclaim(conn: &Connection, claim: ClaimId) -> Result<(), store::Error> {
    peers_repo::unclaim(conn, &claim.key())
}

/// What is in flight through `peer` at `now`, every node's packets counted.
fn in_flight_at(conn: &Connection, peer: &str, now: OffsetDateTime) -> Result<u64, store::Error> {
    Ok(u64::try_from(peers_repo::in_flight(conn, peer, now)?).unwrap_or(0))
}

/// What [`PeerLiquidity::claim`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The packet may be sent; it is in flight until its claim ends.
    Room(ClaimId),
    /// The peer has no room for it: why.
    NoRoom(String),
    /// The payment stopped sending (an operator cancelled it) before this packet could leave.
    Stopped,
}

/// The peer liquidity service: claims on room through peers and the operator's changes. Cheap to clone.
#[derive(Clone)]
pub struct PeerLiquidity {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    /// Wakes the payment engine (payments waiting for liquidity).
    wake: Arc<Notify>,
    /// How long a claim counts when nothing ends it (its node died): past its packet's expiry.
    claim_ttl: time::Duration,
}

impl std::fmt::Debug for PeerLiquidity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerLiquidity").finish_non_exhaustive()
    }
}

impl PeerLiquidity {
    /// `claim_ttl`: longer than a packet may take (its expiry and the transport's timeouts).
    pub fn new(store: Store, bus: EventBus, clock: SharedClock, wake: Arc<Notify>, claim_ttl: time::Duration) -> Self {
        Self {
            store,
            bus,
            clock,
            wake,
            claim_ttl,
        }
    }

    /// Claims room for a packet of `amount` of `payment` through `peer`, in one transaction with the check:
    /// every packet in flight, on any node, is a row there, so two claims never both take the last room. A
    /// payment that is no longer sending gets no claim, and one with a live claim is not cancelled (see
    /// `Engine::cancel`), so a packet never leaves for a payment whose fulfillment could not be booked.
    pub async fn claim(&self, peer: &Peer, amount: u64, payment: &str) -> Result<Claimed, store::Error> {
        let now = self.clock.now();
        let (name, asset, payment) = (peer.name.clone(), peer.asset.clone(), payment.to_owned());
        let (at, until) = (now, (now + self.claim_ttl));
        let id = ClaimId::new()?;
        let stored = i64::try_from(amount).unwrap_or(i64::MAX);
        self.store
            .call(move |c| {
                let tx = store::immediate(c)?;
                peers_repo::purge_claims(&tx, &name, at)?;
                let (limits, liquidity, position) = read(&tx, &name, &asset)?;
                let in_flight = in_flight_at(&tx, &name, at)?;
                if limits.send_limited && !fits(liquidity, position, in_flight, amount) {
                    return Ok(Claimed::NoRoom(format!(
                        "Peer {name} is out of liquidity: {} of {} available, the packet needs {}. Deposit liquidity to resume.",
                        asset.format(available_to_send(liquidity, position, in_flight).into()),
                        asset.format(liquidity.into()),
                        asset.format(amount.into()),
                    )));
                }
                if !peers_repo::claim(&tx, &id.key(), &name, stored, until, &payment)? {
                    return Ok(Claimed::Stopped);
                }
                tx.commit()?;
                Ok(Claimed::Room(id))
            })
            .await
    }

    /// Ends a claim whose packet was not fulfilled (or whose outcome was recorded without it). A claim that
    /// cannot be ended now stops counting when it expires.
    pub async fn release(&self, claim: ClaimId) {
        if let Err(e) = self.store.call(move |c| unclaim(c, claim)).await {
            tracing::warn!(error = %e, "a packet's claim on its peer's room could not be ended; it expires");
        }
    }

    /// The peer's limits and balances now.
    pub async fn status(&self, peer: &Peer) -> Result<LiquidityStatus, store::Error> {
        let (name, asset, now) = (peer.name.clone(), peer.asset.clone(), self.clock.now());
        let (limits, liquidity, position, in_flight) = self
            .store
            .call(move |c| {
                let (limits, liquidity, position) = read(c, &name, &asset)?;
                Ok::<_, store::Error>((limits, liquidity, position, in_flight_at(c, &name, now)?))
            })
            .await?;
        Ok(LiquidityStatus::of(&limits, liquidity, position, in_flight))
    }

    /// Every peer's limits (peers without a row are not limited).
    pub async fn all_limits(&self) -> Result<HashMap<String, PeerLimits>, store::Error> {
        Ok(self
            .store
            .call(|c| peers_repo::all_limits(c))
            .await?
            .into_iter()
            .collect())
    }

    /// Deposits (settlement → liquidity; the first one limits sending through the peer) or withdraws
    /// (liquidity → settlement; refused past what we do not owe the peer) `value` in the peer's asset.
    /// `transfer_id` makes it idempotent.
    pub async fn move_liquidity(
        &self,
        peer: &Peer,
        movement: Movement,
        value: Value,
        transfer_id: Option<String>,
    ) -> Result<(Transfer, LiquidityStatus), LiquidityError> {
        if let Some(id) = &transfer_id {
            ledger::check_transfer_id(id)?;
        }
        let now = self.clock.now();
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let moved = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let in_flight = in_flight_at(&tx, &name, now)?;
                let liquidity = ledger::ops::liquidity_account(&tx, &name, &asset, now)?;
                let settlement = ledger::ops::settlement_account(&tx, &asset, now)?;
                let id = transfer_id.clone().unwrap_or_else(ids::new_id);
                let (debit, credit, kind) = match movement {
                    Movement::Deposit => (settlement, liquidity, "liquidity_deposit"),
                    Movement::Withdrawal => (liquidity, settlement, "liquidity_withdrawal"),
                };
                let replay = ledger_repo::transfer(&tx, &id)?.is_some();
                if movement == Movement::Withdrawal && !replay {
                    let (_, have, position) = read(&tx, &name, &asset)?;
                    let may = withdrawable(have, position, in_flight);
                    if value.get() > may {
                        return Err(LiquidityError::Refused(format!(
                            "cannot withdraw {} from peer {name}'s liquidity: only {} can be withdrawn ({} deposited, {} owed to the peer)",
                            asset.format(value.get().into()),
                            asset.format(may.into()),
                            asset.format(have.into()),
                            asset.format((i128::from(position.max(0))) + i128::from(in_flight)),
                        )));
                    }
                }
                let t = NewTransfer {
                    id,
                    debit,
                    credit,
                    amount: value,
                    pending: false,
                    kind: kind.into(),
                    memo: Some(format!("liquidity of peer {name}")),
                };
                if movement == Movement::Deposit {
                    // before the transfer: the thresholds it evaluates see a limited peer's liquidity
                    peers_repo::set_send_limited(&tx, &name, now)?;
                }
                let (row, new) = ledger::ops::create_transfer(&tx, &t, now)?;
                if movement == Movement::Deposit {
                    pay_repo::wake_waiting(&tx, WAIT_REASON, now)?;
                }
                let (recorded, status) = commit_transfer(tx, &name, &asset, in_flight, now, new, |liquidity, _| {
                    DomainEvent::PeerLiquidityChanged {
                        peer: name.clone(),
                        change: kind.into(),
                        amount: value.as_i64(),
                        liquidity,
                        asset_code: asset.code.clone(),
                        asset_scale: asset.scale,
                    }
                })?;
                Ok::<_, LiquidityError>((row, recorded, status))
            })
            .await;
        let (row, recorded, status) = moved?;
        self.bus.publish_recorded(recorded);
        if movement == Movement::Deposit {
            self.wake.notify_one();
        }
        Ok((row.into(), status))
    }

    /// Records a settlement with the peer outside ILP: `Paid` (we paid it: peer account → settlement, the
    /// position goes down) or `Received` (it paid us: settlement → peer account, the position goes up).
    /// `id` makes it idempotent.
    pub async fn settle(
        &self,
        peer: &Peer,
        direction: Direction,
        value: Value,
        id: Option<String>,
    ) -> Result<(Transfer, LiquidityStatus), LiquidityError> {
        if let Some(id) = &id {
            ledger::check_transfer_id(id)?;
        }
        let now = self.clock.now();
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let (row, recorded, status) = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let in_flight = in_flight_at(&tx, &name, now)?;
                let account = ledger::ops::peer_account(&tx, &name, &asset, now)?;
                let settlement = ledger::ops::settlement_account(&tx, &asset, now)?;
                let (debit, credit) = match direction {
                    Direction::Paid => (account, settlement),
                    Direction::Received => (settlement, account),
                };
                let t = NewTransfer {
                    id: id.clone().unwrap_or_else(ids::new_id),
                    debit,
                    credit,
                    amount: value,
                    pending: false,
                    kind: "settlement".into(),
                    memo: Some(format!("settlement with peer {name}: {}", direction.as_str())),
                };
                let (row, new) = ledger::ops::create_transfer(&tx, &t, now)?;
                if direction == Direction::Paid {
                    pay_repo::wake_waiting(&tx, WAIT_REASON, now)?;
                }
                let (recorded, status) = commit_transfer(tx, &name, &asset, in_flight, now, new, |_, position| {
                    DomainEvent::PeerSettled {
                        peer: name.clone(),
                        direction: direction.as_str().into(),
                        amount: value.as_i64(),
                        position,
                        asset_code: asset.code.clone(),
                        asset_scale: asset.scale,
                    }
                })?;
                Ok::<_, LiquidityError>((row, recorded, status))
            })
            .await?;
        self.bus.publish_recorded(recorded);
        if direction == Direction::Paid {
            self.wake.notify_one();
        }
        Ok((row.into(), status))
    }

    /// Sets (or removes, `None`) an alert threshold on the peer's liquidity or credit used, in minor units of
    /// its asset; one set past the value now fires its event at once (see [`crate::thresholds`]).
    pub async fn set_threshold(
        &self,
        peer: &Peer,
        measure: Measure,
        threshold: Option<Value>,
    ) -> Result<Option<ThresholdView>, LiquidityError> {
        if measure == Measure::WalletBalance {
            return Err(LiquidityError::Refused(
                "a peer's thresholds are on its liquidity or its credit used".into(),
            ));
        }
        let now = self.clock.now();
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let (view, recorded) = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let out = crate::thresholds::set(&tx, measure, &name, &asset, threshold.map(Value::as_i64), now)?;
                tx.commit()?;
                Ok::<_, LiquidityError>(out)
            })
            .await?;
        self.bus.publish_recorded(recorded);
        Ok(view)
    }

    /// Sets (or clears, `None`) what the peer may owe us, in minor units of its asset.
    pub async fn set_credit_limit(&self, peer: &Peer, limit: Option<Value>) -> Result<LiquidityStatus, LiquidityError> {
        let now = self.clock.now();
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let (recorded, status) = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let in_flight = in_flight_at(&tx, &name, now)?;
                let limit = limit.map(Value::as_i64);
                peers_repo::set_credit_limit(&tx, &name, limit, now)?;
                let (limits, liquidity, position) = read(&tx, &name, &asset)?;
                let event = DomainEvent::PeerCreditLimitChanged {
                    peer: name.clone(),
                    credit_limit: limit,
                };
                let recorded = store::outbox::append(&tx, now, event)?;
                tx.commit()?;
                Ok::<_, LiquidityError>((recorded, LiquidityStatus::of(&limits, liquidity, position, in_flight)))
            })
            .await?;
        self.bus.publish_recorded([recorded]);
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sending_rule_counts_position_and_in_flight() {
        // 1000 of liquidity, we owe 300, 200 in flight: 500 left
        assert_eq!(available_to_send(1000, 300, 200), 500);
        assert!(fits(1000, 300, 200, 500));
        assert!(!fits(1000, 300, 200, 501));
        // the peer owes us 400: that adds to the room
        assert_eq!(available_to_send(1000, -400, 0), 1400);
        assert!(fits(1000, -400, 0, 1400));
        // past the liquidity (e.g. after a withdrawal raced a packet): no room, never negative
        assert_eq!(available_to_send(100, 300, 0), 0);
        assert!(!fits(100, 300, 0, 1));
        // no liquidity at all
        assert!(fits(0, 0, 0, 0));
        assert!(!fits(0, 0, 0, 1));
        // extremes do not overflow
        assert!(!fits(i64::MAX, i64::MAX, u64::MAX, u64::MAX));
        assert_eq!(available_to_send(i64::MAX, i64::MIN, 0), u64::MAX);
    }

    #[test]
    fn withdrawals_leave_what_we_owe() {
        assert_eq!(withdrawable(1000, 300, 200), 500);
        // the peer owing us does not make deposited liquidity withdrawable twice
        assert_eq!(withdrawable(1000, -400, 0), 1000);
        assert_eq!(withdrawable(1000, 1200, 0), 0);
    }

    fn usd_peer(name: &str) -> Peer {
        let def = crate::settings::PeerSettings {
            name: name.into(),
            asset_code: "USD".into(),
            asset_scale: 2,
            ..Default::default()
        };
        Peer::from_settings(
            &def,
            super::super::peers::PeerSource::Config,
            std::time::Duration::from_secs(1),
        )
    }

    /// The payment the tests' packets belong to (no such row: these tests claim room only).
    const PAYMENT: &str = "01a21805-0000-7000-8000-000000000001";

    fn room(c: Claimed) -> ClaimId {
        match c {
            Claimed::Room(id) => id,
            other => panic!("no room: {other:?}"),
        }
    }

    #[tokio::test]
    async fn claims_count_in_flight_until_released_and_withdrawals_leave_what_is_owed() {
        let (store, _) = Store::open_in_memory().unwrap();
        let clock: SharedClock = Arc::new(crate::clock::SystemClock);
        let ttl = time::Duration::seconds(60);
        let l = PeerLiquidity::new(store.clone(), EventBus::default(), clock, Arc::new(Notify::new()), ttl);
        let bank = usd_peer("bank");
        // not limited before the first deposit: anything goes (and is counted in flight)
        let c = room(l.claim(&bank, 5_000, PAYMENT).await.unwrap());
        assert_eq!(l.status(&bank).await.unwrap().in_flight, 5_000);
        l.release(c).await;
        assert_eq!(l.status(&bank).await.unwrap().in_flight, 0);

        let (t, st) = l
            .move_liquidity(&bank, Movement::Deposit, Value::new(1000).unwrap(), None)
            .await
            .unwrap();
        assert_eq!(
            (t.kind.as_str(), st.liquidity, st.available_to_send),
            ("liquidity_deposit", 1000, Some(1000))
        );
        let c600 = room(l.claim(&bank, 600, PAYMENT).await.unwrap());
        let Claimed::NoRoom(refused) = l.claim(&bank, 500, PAYMENT).await.unwrap() else {
            panic!("500 more fit")
        };
        assert!(
            refused.contains("4.00 USD of 10.00 USD available, the packet needs 5.00 USD"),
            "{refused}"
        );
        assert_eq!(l.status(&bank).await.unwrap().available_to_send, Some(400));
        // what is in flight is owed: it cannot be withdrawn
        let e = l
            .move_liquidity(&bank, Movement::Withdrawal, Value::new(401).unwrap(), None)
            .await
            .unwrap_err();
        assert!(matches!(e, LiquidityError::Refused(_)), "{e}");
        l.release(c600).await;
        let c = room(l.claim(&bank, 1000, PAYMENT).await.unwrap());
        l.release(c).await;

        // a settlement the peer paid us: we owe it that much, the room shrinks
        let (_, st) = l
            .settle(&bank, Direction::Received, Value::new(300).unwrap(), Some("s-1".into()))
            .await
            .unwrap();
        assert_eq!((st.position, st.available_to_send), (300, Some(700)));
        let (_, st) = l
            .settle(&bank, Direction::Received, Value::new(300).unwrap(), Some("s-1".into()))
            .await
            .unwrap();
        assert_eq!(st.position, 300, "the same id is applied once");
        let st = l.set_credit_limit(&bank, Some(Value::new(50).unwrap())).await.unwrap();
        assert_eq!((st.credit_limit, st.credit_used), (Some(50), 0));
        store
            .call(|c| {
                assert!(crate::ledger::audit(c).unwrap().is_empty());
                let sum: i64 = c.query_row("SELECT sum(balance) FROM accounts", [], |r| r.get(0))?;
                assert_eq!(sum, 0);
                Ok::<_, store::Error>(())
            })
            .await
            .unwrap();
    }

    /// Two nodes on one database are two services on one store: each counts the other's claims, and a claim
    /// whose node died stops counting once it expires.
    #[tokio::test]
    async fn claims_are_counted_by_every_node_and_expire_with_a_node_that_died() {
        let (store, _) = Store::open_in_memory().unwrap();
        let clock = Arc::new(crate::clock::FixedClock::new(
            time::macros::datetime!(2026-01-01 0:00 UTC),
        ));
        let ttl = time::Duration::seconds(40);
        let shared: SharedClock = clock.clone();
        let node = || {
            PeerLiquidity::new(
                store.clone(),
                EventBus::default(),
                shared.clone(),
                Arc::new(Notify::new()),
                ttl,
            )
        };
        let (a, b) = (node(), node());
        let bank = usd_peer("bank");
        a.move_liquidity(&bank, Movement::Deposit, Value::new(1000).unwrap(), None)
            .await
            .unwrap();
        let on_a = room(a.claim(&bank, 700, PAYMENT).await.unwrap());
        assert!(
            matches!(b.claim(&bank, 400, PAYMENT).await.unwrap(), Claimed::NoRoom(_)),
            "B counts A's packet"
        );
        let on_b = room(b.claim(&bank, 300, PAYMENT).await.unwrap());
        assert_eq!(a.status(&bank).await.unwrap().in_flight, 1000);
        b.release(on_b).await;
        // A dies with its packet in flight: its claim counts until it expires, then B has the room again
        clock.advance(time::Duration::seconds(39));
        assert!(matches!(
            b.claim(&bank, 301, PAYMENT).await.unwrap(),
            Claimed::NoRoom(_)
        ));
        clock.advance(time::Duration::seconds(2));
        let _ = on_a;
        let all = room(b.claim(&bank, 1000, PAYMENT).await.unwrap());
        assert_eq!(b.status(&bank).await.unwrap().in_flight, 1000);
        b.release(all).await;
        let left: i64 = store
            .call(|c| {
                c.query_row("SELECT COUNT(*) FROM peer_claims", [], |r| r.get(0))
                    .map_err(store::Error::from)
            })
            .await
            .unwrap();
        assert_eq!(left, 0, "the expired claim was purged, the others ended");
    }

    #[test]
    fn credit_is_the_negative_position() {
        assert_eq!(credit_used(500), 0);
        assert_eq!(credit_used(-500), 500);
        assert_eq!(credit_used(i64::MIN), 1u64 << 63);
        assert!(!over_credit(-500, None));
        assert!(!over_credit(-500, Some(500)));
        assert!(over_credit(-501, Some(500)));
        assert!(!over_credit(10, Some(0)));
        assert!(over_credit(-1, Some(0)));
    }
}
