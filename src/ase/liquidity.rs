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
//! In flight is transient by nature: it counts packets handed to a peer whose outcome is not committed yet,
//! in this process only (claimed under one async gate, released after the outcome committed or the packet
//! failed). After a crash nothing is in flight and the committed position in the store is the truth. Every
//! operator change is one `BEGIN IMMEDIATE` transaction with its durable event in the outbox.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use crate::store::Connection;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::peers::Peer;
use crate::{
    clock::{SharedClock, format_ts},
    events::{DomainEvent, EventBus},
    ids,
    ledger::{self, LedgerError, Movement, NewTransfer, Transfer},
    money::{Asset, Value},
    store::{
        self, Store, ledger as ledger_repo, payments as pay_repo,
        peers::{self as peers_repo, PeerLimits},
    },
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
    now: &str,
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

/// The peer liquidity service: the in-flight counters and the operator's changes. Cheap to clone.
#[derive(Clone)]
pub struct PeerLiquidity {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    /// Wakes the payment engine (payments waiting for liquidity).
    wake: Arc<Notify>,
    /// Serialises claims: the store read and the counter update of one claim see no other claim.
    gate: Arc<tokio::sync::Mutex<()>>,
    /// Sent but not yet recorded, per peer name (this process only).
    in_flight: Arc<Mutex<HashMap<String, u64>>>,
    /// Peers read as not limited for sending (no liquidity deposited yet), so a claim through them reads
    /// nothing. `send_limited` only ever turns on, by a deposit, which clears this under the claim gate.
    unlimited: Arc<Mutex<std::collections::HashSet<String>>>,
}

impl std::fmt::Debug for PeerLiquidity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerLiquidity").finish_non_exhaustive()
    }
}

impl PeerLiquidity {
    pub fn new(store: Store, bus: EventBus, clock: SharedClock, wake: Arc<Notify>) -> Self {
        Self {
            store,
            bus,
            clock,
            wake,
            gate: Arc::new(tokio::sync::Mutex::new(())),
            in_flight: Arc::new(Mutex::new(HashMap::new())),
            unlimited: Arc::new(Mutex::new(std::collections::HashSet::new())),
        }
    }

    fn known_unlimited(&self, peer: &str) -> bool {
        // several nodes on PostgreSQL: a deposit on another node limits the peer behind this one's back
        if self.store.is_postgres() {
            return false;
        }
        match self.unlimited.lock() {
            Ok(s) => s.contains(peer),
            Err(poisoned) => poisoned.into_inner().contains(peer),
        }
    }

    fn set_unlimited(&self, peer: &str, unlimited: bool) {
        let mut s = match self.unlimited.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if unlimited {
            s.insert(peer.to_owned());
        } else {
            s.remove(peer);
        }
    }

    /// What is in flight through `peer` now.
    pub fn in_flight(&self, peer: &str) -> u64 {
        match self.in_flight.lock() {
            Ok(m) => m.get(peer).copied().unwrap_or(0),
            Err(poisoned) => poisoned.into_inner().get(peer).copied().unwrap_or(0),
        }
    }

    fn add(&self, peer: &str, amount: u64) {
        let mut m = match self.in_flight.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let v = m.entry(peer.to_owned()).or_insert(0);
        *v = v.saturating_add(amount);
    }

    /// Claims room for a packet of `amount` through `peer`: `Ok(None)` when it may be sent (it is then in
    /// flight until [`Self::release`]), `Ok(Some(why))` when the peer has no room for it. The in-flight
    /// total is read before the store: a packet released meanwhile was committed before, so the position read
    /// counts it (counting a packet twice only errs on the safe side).
    pub async fn claim(&self, peer: &Peer, amount: u64) -> Result<Option<String>, store::Error> {
        let _gate = self.gate.lock().await;
        if self.known_unlimited(&peer.name) {
            self.add(&peer.name, amount);
            return Ok(None);
        }
        let in_flight = self.in_flight(&peer.name);
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let (limits, liquidity, position) = self.store.call(move |c| read(c, &name, &asset)).await?;
        if !limits.send_limited {
            self.set_unlimited(&peer.name, true);
        }
        if limits.send_limited && !fits(liquidity, position, in_flight, amount) {
            let a = &peer.asset;
            return Ok(Some(format!(
                "Peer {} is out of liquidity: {} of {} available, the packet needs {}. Deposit liquidity to resume.",
                peer.name,
                a.format(available_to_send(liquidity, position, in_flight).into()),
                a.format(liquidity.into()),
                a.format(amount.into()),
            )));
        }
        self.add(&peer.name, amount);
        Ok(None)
    }

    /// A claimed packet's outcome is committed (or it was not sent): it is no longer in flight.
    pub fn release(&self, peer: &str, amount: u64) {
        if amount == 0 {
            return;
        }
        let mut m = match self.in_flight.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(v) = m.get_mut(peer) {
            *v = v.saturating_sub(amount);
            if *v == 0 {
                m.remove(peer);
            }
        }
    }

    /// The peer's limits and balances now.
    pub async fn status(&self, peer: &Peer) -> Result<LiquidityStatus, store::Error> {
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let (limits, liquidity, position) = self.store.call(move |c| read(c, &name, &asset)).await?;
        Ok(LiquidityStatus::of(
            &limits,
            liquidity,
            position,
            self.in_flight(&peer.name),
        ))
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
        let now = format_ts(self.clock.now());
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        // a deposit turns sending limits on: no claim runs until the cache says so
        let _gate = match movement {
            Movement::Deposit => Some(self.gate.lock().await),
            Movement::Withdrawal => None,
        };
        let in_flight = self.in_flight(&peer.name);
        let moved = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let liquidity = ledger::ops::liquidity_account(&tx, &name, &asset, &now)?;
                let settlement = ledger::ops::settlement_account(&tx, &asset, &now)?;
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
                let (row, new) = ledger::ops::create_transfer(&tx, &t, &now)?;
                if movement == Movement::Deposit {
                    peers_repo::set_send_limited(&tx, &name, &now)?;
                    pay_repo::wake_waiting(&tx, WAIT_REASON, &now)?;
                }
                let (recorded, status) = commit_transfer(tx, &name, &asset, in_flight, &now, new, |liquidity, _| {
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
        if movement == Movement::Deposit {
            // committed or not: the next claim reads the store
            self.set_unlimited(&peer.name, false);
        }
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
        let now = format_ts(self.clock.now());
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let in_flight = self.in_flight(&peer.name);
        let (row, recorded, status) = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let account = ledger::ops::peer_account(&tx, &name, &asset, &now)?;
                let settlement = ledger::ops::settlement_account(&tx, &asset, &now)?;
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
                let (row, new) = ledger::ops::create_transfer(&tx, &t, &now)?;
                if direction == Direction::Paid {
                    pay_repo::wake_waiting(&tx, WAIT_REASON, &now)?;
                }
                let (recorded, status) = commit_transfer(tx, &name, &asset, in_flight, &now, new, |_, position| {
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

    /// Sets (or clears, `None`) what the peer may owe us, in minor units of its asset.
    pub async fn set_credit_limit(&self, peer: &Peer, limit: Option<Value>) -> Result<LiquidityStatus, LiquidityError> {
        let now = format_ts(self.clock.now());
        let (name, asset) = (peer.name.clone(), peer.asset.clone());
        let in_flight = self.in_flight(&peer.name);
        let (recorded, status) = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let limit = limit.map(Value::as_i64);
                peers_repo::set_credit_limit(&tx, &name, limit, &now)?;
                let (limits, liquidity, position) = read(&tx, &name, &asset)?;
                let event = DomainEvent::PeerCreditLimitChanged {
                    peer: name.clone(),
                    credit_limit: limit,
                };
                let recorded = store::outbox::append(&tx, &now, event)?;
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

    #[tokio::test]
    async fn claims_count_in_flight_until_released_and_withdrawals_leave_what_is_owed() {
        let (store, _) = Store::open_in_memory().unwrap();
        let clock: SharedClock = Arc::new(crate::clock::SystemClock);
        let l = PeerLiquidity::new(store.clone(), EventBus::default(), clock, Arc::new(Notify::new()));
        let bank = usd_peer("bank");
        // not limited before the first deposit: anything goes (and is counted in flight)
        assert_eq!(l.claim(&bank, 5_000).await.unwrap(), None);
        assert_eq!(l.in_flight("bank"), 5_000);
        l.release("bank", 5_000);
        assert_eq!(l.in_flight("bank"), 0);

        let (t, st) = l
            .move_liquidity(&bank, Movement::Deposit, Value::new(1000).unwrap(), None)
            .await
            .unwrap();
        assert_eq!(
            (t.kind.as_str(), st.liquidity, st.available_to_send),
            ("liquidity_deposit", 1000, Some(1000))
        );
        assert_eq!(l.claim(&bank, 600).await.unwrap(), None);
        let refused = l.claim(&bank, 500).await.unwrap().unwrap();
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
        l.release("bank", 600);
        assert_eq!(l.claim(&bank, 1000).await.unwrap(), None);
        l.release("bank", 1000);

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
