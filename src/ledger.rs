//! The double-entry ledger: accounts per asset, transfers between two accounts of the same asset, and
//! two-phase transfers (reserve → post | void, exactly once).
//!
//! The `ops` functions hold every rule and run inside a caller's `BEGIN IMMEDIATE` transaction, so other
//! services (payments) can move money atomically with their own writes. Cached balances are updated in the
//! same statement set as the journal row, so they always equal the journal ([`audit`] proves it). Wallet
//! accounts never go below zero counting reservations; settlement accounts are the ASE's side and may.
//! [`Ledger`] is the async service for stand-alone movements (deposits, withdrawals); it publishes
//! `BalanceChanged` after commit. Every transfer, posted or resolved, ends with the alert thresholds of the
//! wallets and peers it moved (`crate::thresholds::after_transfer`), in the same transaction.

use crate::store::Connection;
use serde::{Deserialize, Serialize};

use crate::{
    clock::SharedClock,
    events::{DomainEvent, EventBus},
    ids,
    money::{Asset, MoneyError, Value},
    states::TransferState,
    store::{
        self, Store,
        ledger::{AccountRow, TransferRow},
    },
};

/// Ledger failures; every one leaves the database unchanged.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("unknown account {0}")]
    UnknownAccount(String),
    #[error("unknown transfer {0}")]
    UnknownTransfer(String),
    #[error("accounts have different assets ({0} and {1})")]
    AssetMismatch(Asset, Asset),
    #[error("a transfer must be between two different accounts")]
    SameAccount,
    #[error("insufficient balance: {available} available, {requested} requested")]
    InsufficientBalance { available: i64, requested: u64 },
    #[error("transfer {0} already exists with different details")]
    Conflict(String),
    #[error("transfer {id} is already {state}")]
    AlreadyResolved { id: String, state: String },
    #[error("transfer id must be 1 to 128 characters of A-Z a-z 0-9 . _ : -")]
    BadTransferId,
    #[error("post amount {requested} exceeds the reserved {reserved}")]
    PostExceedsReserved { requested: u64, reserved: u64 },
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl From<crate::store::db::Error> for LedgerError {
    fn from(e: crate::store::db::Error) -> Self {
        Self::Store(e.into())
    }
}

/// What kind of account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountKind {
    /// A customer wallet: never overdrawn.
    Wallet,
    /// The ASE's account for an asset: the other side of deposits and withdrawals.
    Settlement,
    /// One outgoing payment's funds while it is being sent: never overdrawn.
    Payment,
    /// One ILP peer's side, per asset: credited by STREAM packets sent through the peer (what we owe it),
    /// debited by STREAM packets received from it (what it owes us). May go negative, like settlement.
    Peer,
    /// One ILP peer's liquidity, per asset: what the peer lets us owe it (deposited by the operator from the
    /// settlement account). Never overdrawn.
    Liquidity,
}

impl AccountKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Wallet => "wallet",
            Self::Settlement => "settlement",
            Self::Payment => "payment",
            Self::Peer => "peer",
            Self::Liquidity => "liquidity",
        }
    }
}

/// A new transfer. `id` makes it idempotent: the same id with the same details is a no-op.
#[derive(Debug, Clone)]
pub struct NewTransfer {
    pub id: String,
    pub debit: String,
    pub credit: String,
    pub amount: Value,
    /// Two-phase: reserve now, post or void later.
    pub pending: bool,
    /// What the transfer is for (`deposit`, `withdrawal`, `payment`, …).
    pub kind: String,
    pub memo: Option<String>,
}

/// An account's balances, as reported to operators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Balance {
    pub account_id: String,
    pub kind: String,
    pub wallet: Option<String>,
    /// The ILP peer of a peer account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    /// Posted balance (credits minus debits).
    pub balance: i64,
    /// Reserved by pending outgoing transfers.
    pub pending_debits: i64,
    /// Incoming by pending transfers.
    pub pending_credits: i64,
    /// `balance - pending_debits`.
    pub available: i64,
}

impl From<AccountRow> for Balance {
    fn from(a: AccountRow) -> Self {
        Self {
            available: a.balance.saturating_sub(a.pending_debits),
            account_id: a.id,
            kind: a.kind,
            wallet: a.wallet,
            peer: a.peer,
            asset_code: a.asset_code,
            asset_scale: a.asset_scale,
            balance: a.balance,
            pending_debits: a.pending_debits,
            pending_credits: a.pending_credits,
        }
    }
}

impl Balance {
    pub fn event(&self) -> DomainEvent {
        DomainEvent::BalanceChanged {
            account_id: self.account_id.clone(),
            wallet: self.wallet.clone(),
            balance: self.balance,
            pending_debits: self.pending_debits,
        }
    }
}

/// A transfer as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transfer {
    pub id: String,
    pub debit_account: String,
    pub credit_account: String,
    pub amount: i64,
    pub state: TransferState,
    pub posted_amount: Option<i64>,
    pub kind: String,
    #[serde(with = "crate::clock::wire")]
    pub created_at: time::OffsetDateTime,
    #[serde(default, with = "crate::clock::wire::option")]
    pub resolved_at: Option<time::OffsetDateTime>,
}

impl From<TransferRow> for Transfer {
    fn from(t: TransferRow) -> Self {
        Self {
            id: t.id,
            debit_account: t.debit_account,
            credit_account: t.credit_account,
            amount: t.amount,
            state: t.state,
            posted_amount: t.posted_amount,
            kind: t.kind,
            created_at: t.created_at,
            resolved_at: t.resolved_at,
        }
    }
}

mod moved;

/// Rules that run inside a caller's transaction. Callers must hold a `BEGIN IMMEDIATE` transaction.
pub mod ops {
    use time::OffsetDateTime;

    use super::{AccountKind, Balance, LedgerError, NewTransfer};
    use crate::{
        ids,
        money::{Asset, MoneyError, Value},
        states::TransferState,
        store::{
            Connection,
            ledger::{self as repo, AccountRow, TransferRow},
        },
    };

    pub fn create_account(
        conn: &Connection,
        kind: AccountKind,
        asset: &Asset,
        now: OffsetDateTime,
    ) -> Result<String, LedgerError> {
        insert(conn, kind, None, asset, now)
    }

    fn insert(
        conn: &Connection,
        kind: AccountKind,
        peer: Option<&str>,
        asset: &Asset,
        now: OffsetDateTime,
    ) -> Result<String, LedgerError> {
        let id = ids::new_id();
        repo::insert_account(
            conn,
            &repo::NewAccount {
                id: &id,
                kind: kind.as_str(),
                peer,
                asset_code: &asset.code,
                asset_scale: asset.scale,
                no_overdraft: !matches!(kind, AccountKind::Settlement | AccountKind::Peer),
            },
            now,
        )?;
        Ok(id)
    }

    /// The settlement account of `asset`, created on first use.
    pub fn settlement_account(conn: &Connection, asset: &Asset, now: OffsetDateTime) -> Result<String, LedgerError> {
        if let Some(id) = repo::settlement_account(conn, &asset.code, asset.scale)? {
            return Ok(id);
        }
        create_account(conn, AccountKind::Settlement, asset, now)
    }

    /// The account of ILP peer `peer` in `asset`, created on first use.
    pub fn peer_account(
        conn: &Connection,
        peer: &str,
        asset: &Asset,
        now: OffsetDateTime,
    ) -> Result<String, LedgerError> {
        if let Some(id) = repo::peer_account(conn, peer, &asset.code, asset.scale)? {
            return Ok(id);
        }
        insert(conn, AccountKind::Peer, Some(peer), asset, now)
    }

    /// Money a STREAM packet brought in: `paid` of the link's asset `link` from the account of the peer that
    /// carried it, and `credited` of `to` into `account`, with `memo`. Within one asset and scale that is one
    /// transfer (the two amounts are equal); across assets or scales it goes through the ASE's exchange, as
    /// cross-currency payments do: the peer's account → the settlement account of `link`, and the settlement
    /// account of `to` → `account`, so every asset still sums to zero and the peer's account moves in its
    /// own asset. Returns the peer's account.
    #[allow(clippy::too_many_arguments)]
    pub fn credit_from_peer(
        conn: &Connection,
        peer: &str,
        link: &Asset,
        paid: Value,
        to: &Asset,
        account: &str,
        credited: Value,
        memo: String,
        now: OffsetDateTime,
    ) -> Result<String, LedgerError> {
        let peer_account = peer_account(conn, peer, link, now)?;
        let id = crate::ids::new_id();
        let transfer = |id: String, debit: String, credit: String, amount: Value, memo: String| NewTransfer {
            id,
            debit,
            credit,
            amount,
            pending: false,
            kind: "payment".into(),
            memo: Some(memo),
        };
        if link == to {
            debug_assert_eq!(paid, credited, "one asset and scale: the packet credits what it paid");
            let t = transfer(
                format!("ilp-{id}"),
                peer_account.clone(),
                account.to_owned(),
                paid,
                memo,
            );
            create_transfer(conn, &t, now)?;
            return Ok(peer_account);
        }
        let into = settlement_account(conn, link, now)?;
        let out = settlement_account(conn, to, now)?;
        let t = transfer(format!("ilp-{id}"), peer_account.clone(), into, paid, memo.clone());
        create_transfer(conn, &t, now)?;
        let t = transfer(format!("ilp-{id}-x"), out, account.to_owned(), credited, memo);
        create_transfer(conn, &t, now)?;
        Ok(peer_account)
    }

    /// The liquidity account of ILP peer `peer` in `asset`, created on first use.
    pub fn liquidity_account(
        conn: &Connection,
        peer: &str,
        asset: &Asset,
        now: OffsetDateTime,
    ) -> Result<String, LedgerError> {
        if let Some(id) = repo::liquidity_account(conn, peer, &asset.code, asset.scale)? {
            return Ok(id);
        }
        insert(conn, AccountKind::Liquidity, Some(peer), asset, now)
    }

    pub fn account(conn: &Connection, id: &str) -> Result<AccountRow, LedgerError> {
        repo::account(conn, id)?.ok_or_else(|| LedgerError::UnknownAccount(id.to_owned()))
    }

    fn asset_of(a: &AccountRow) -> Asset {
        Asset {
            code: a.asset_code.clone(),
            scale: a.asset_scale,
        }
    }

    fn checked(r: Option<i64>) -> Result<i64, LedgerError> {
        r.ok_or(LedgerError::Money(MoneyError::Overflow))
    }

    /// Creates a posted or pending transfer. Returns the transfer and whether it was new.
    pub fn create_transfer(
        conn: &Connection,
        t: &NewTransfer,
        now: OffsetDateTime,
    ) -> Result<(TransferRow, bool), LedgerError> {
        if let Some(existing) = repo::transfer(conn, &t.id)? {
            let was_pending = existing.state.is_pending() || existing.resolved_at.is_some();
            let same = existing.debit_account == t.debit
                && existing.credit_account == t.credit
                && existing.amount == t.amount.as_i64()
                && existing.kind == t.kind
                && was_pending == t.pending;
            return if same {
                Ok((existing, false))
            } else {
                Err(LedgerError::Conflict(t.id.clone()))
            };
        }
        if t.debit == t.credit {
            return Err(LedgerError::SameAccount);
        }
        if t.amount.is_zero() {
            return Err(MoneyError::Zero.into());
        }
        let debit = account(conn, &t.debit)?;
        let credit = account(conn, &t.credit)?;
        if asset_of(&debit) != asset_of(&credit) {
            return Err(LedgerError::AssetMismatch(asset_of(&debit), asset_of(&credit)));
        }
        let amount = t.amount.as_i64();
        if debit.no_overdraft {
            let available = checked(debit.balance.checked_sub(debit.pending_debits))?;
            if available < amount {
                return Err(LedgerError::InsufficientBalance {
                    available,
                    requested: t.amount.get(),
                });
            }
        }
        if t.pending {
            repo::set_balances(
                conn,
                &debit.id,
                debit.balance,
                checked(debit.pending_debits.checked_add(amount))?,
                debit.pending_credits,
            )?;
            repo::set_balances(
                conn,
                &credit.id,
                credit.balance,
                credit.pending_debits,
                checked(credit.pending_credits.checked_add(amount))?,
            )?;
        } else {
            repo::set_balances(
                conn,
                &debit.id,
                checked(debit.balance.checked_sub(amount))?,
                debit.pending_debits,
                debit.pending_credits,
            )?;
            repo::set_balances(
                conn,
                &credit.id,
                checked(credit.balance.checked_add(amount))?,
                credit.pending_debits,
                credit.pending_credits,
            )?;
        }
        let row = TransferRow {
            id: t.id.clone(),
            debit_account: t.debit.clone(),
            credit_account: t.credit.clone(),
            amount,
            state: if t.pending {
                TransferState::Pending
            } else {
                TransferState::Posted
            },
            posted_amount: if t.pending { None } else { Some(amount) },
            kind: t.kind.clone(),
            memo: t.memo.clone(),
            created_at: now.to_owned(),
            resolved_at: None,
        };
        repo::insert_transfer(conn, &row)?;
        crate::thresholds::after_transfer(conn, &[&debit, &credit], now)?;
        Ok((row, true))
    }

    /// Posts a pending transfer, moving `amount` (default: all of it) and releasing the rest. Exactly once.
    pub fn post(
        conn: &Connection,
        id: &str,
        amount: Option<Value>,
        now: OffsetDateTime,
    ) -> Result<TransferRow, LedgerError> {
        resolve(conn, id, amount, true, now)
    }

    /// Voids a pending transfer, releasing the reservation. Exactly once.
    pub fn void(conn: &Connection, id: &str, now: OffsetDateTime) -> Result<TransferRow, LedgerError> {
        resolve(conn, id, None, false, now)
    }

    fn resolve(
        conn: &Connection,
        id: &str,
        amount: Option<Value>,
        post: bool,
        now: OffsetDateTime,
    ) -> Result<TransferRow, LedgerError> {
        let t = repo::transfer(conn, id)?.ok_or_else(|| LedgerError::UnknownTransfer(id.to_owned()))?;
        if !t.state.is_pending() {
            return Err(LedgerError::AlreadyResolved {
                id: id.to_owned(),
                state: t.state.to_string(),
            });
        }
        let moved = match (post, amount) {
            (false, _) => 0,
            (true, None) => t.amount,
            (true, Some(v)) if v.is_zero() => return Err(MoneyError::Zero.into()),
            (true, Some(v)) if v.as_i64() > t.amount => {
                return Err(LedgerError::PostExceedsReserved {
                    requested: v.get(),
                    reserved: u64::try_from(t.amount).unwrap_or(0),
                });
            }
            (true, Some(v)) => v.as_i64(),
        };
        let state = if post {
            TransferState::Posted
        } else {
            TransferState::Voided
        };
        let posted_amount = post.then_some(moved);
        if !repo::resolve_pending(conn, id, state, posted_amount, now)? {
            return Err(LedgerError::AlreadyResolved {
                id: id.to_owned(),
                state: "resolved".into(),
            });
        }
        let debit = account(conn, &t.debit_account)?;
        let credit = account(conn, &t.credit_account)?;
        repo::set_balances(
            conn,
            &debit.id,
            checked(debit.balance.checked_sub(moved))?,
            checked(debit.pending_debits.checked_sub(t.amount))?,
            debit.pending_credits,
        )?;
        repo::set_balances(
            conn,
            &credit.id,
            checked(credit.balance.checked_add(moved))?,
            credit.pending_debits,
            checked(credit.pending_credits.checked_sub(t.amount))?,
        )?;
        crate::thresholds::after_transfer(conn, &[&debit, &credit], now)?;
        // the row as `resolve_pending` wrote it (no second read)
        Ok(TransferRow {
            state,
            posted_amount,
            resolved_at: Some(now.to_owned()),
            ..t
        })
    }

    /// Balances of the given accounts (for events after commit).
    pub fn balances(conn: &Connection, ids: &[&str]) -> Result<Vec<Balance>, LedgerError> {
        ids.iter().map(|id| account(conn, id).map(Balance::from)).collect()
    }
}

/// A difference between the cached balances and the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditMismatch {
    pub account_id: String,
    pub cached: (i128, i128, i128),
    pub journal: (i128, i128, i128),
}

/// Recomputes every account from the journal and reports accounts whose cache differs (empty = consistent).
pub fn audit(conn: &Connection) -> Result<Vec<AuditMismatch>, LedgerError> {
    let mut out = Vec::new();
    for (id, bal, pd, pc) in store::ledger::journal_balances(conn)? {
        let a = ops::account(conn, &id)?;
        let cached = (a.balance.into(), a.pending_debits.into(), a.pending_credits.into());
        if cached != (bal, pd, pc) {
            out.push(AuditMismatch {
                account_id: id,
                cached,
                journal: (bal, pd, pc),
            });
        }
    }
    Ok(out)
}

/// An operator-given transfer id: 1 to 128 characters of `A-Z a-z 0-9 . _ : -`.
pub fn check_transfer_id(id: &str) -> Result<(), LedgerError> {
    if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b)) {
        return Err(LedgerError::BadTransferId);
    }
    Ok(())
}

/// The async ledger service for operator movements.
#[derive(Clone)]
pub struct Ledger {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    /// Money moved per minute as far as it was read (see [`Ledger::moved_per_minute`]).
    moved: std::sync::Arc<tokio::sync::Mutex<moved::Moved>>,
}

/// Direction of an operator movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Movement {
    Deposit,
    Withdrawal,
}

impl Ledger {
    pub fn new(store: Store, bus: EventBus, clock: SharedClock) -> Self {
        Self {
            store,
            bus,
            clock,
            moved: Default::default(),
        }
    }

    /// Moves `value` between the account and its asset's settlement account, in one transaction.
    /// `expect_asset`, when given, must equal the account's asset. `transfer_id` makes it idempotent.
    pub async fn move_funds(
        &self,
        account_id: String,
        movement: Movement,
        value: Value,
        expect_asset: Option<Asset>,
        transfer_id: Option<String>,
    ) -> Result<(Transfer, Balance), LedgerError> {
        if let Some(id) = &transfer_id {
            check_transfer_id(id)?;
        }
        let now = self.clock.now();
        let (transfer, balances, new, recorded) = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let account = ops::account(&tx, &account_id)?;
                let asset = Asset {
                    code: account.asset_code.clone(),
                    scale: account.asset_scale,
                };
                if let Some(expected) = expect_asset.clone()
                    && expected != asset
                {
                    return Err(MoneyError::AssetMismatch {
                        expected: asset,
                        found: expected,
                    }
                    .into());
                }
                let settlement = ops::settlement_account(&tx, &asset, now)?;
                let (debit, credit, kind) = match movement {
                    Movement::Deposit => (settlement, account_id.clone(), "deposit"),
                    Movement::Withdrawal => (account_id.clone(), settlement, "withdrawal"),
                };
                let t = NewTransfer {
                    id: transfer_id.clone().unwrap_or_else(ids::new_id),
                    debit,
                    credit,
                    amount: value,
                    pending: false,
                    kind: kind.into(),
                    memo: None,
                };
                let (row, new) = ops::create_transfer(&tx, &t, now)?;
                let balances = ops::balances(&tx, &[&t.debit, &t.credit])?;
                // a durable event, once: a repeat of the same transfer id moves nothing and says nothing
                let recorded = match balances.iter().find(|b| b.kind == "wallet") {
                    Some(b) if new => Some(store::outbox::append(
                        &tx,
                        now,
                        DomainEvent::WalletFundsMoved {
                            wallet: b.wallet.clone().unwrap_or_default(),
                            movement: kind.into(),
                            amount: value.as_i64(),
                            transfer_id: row.id.clone(),
                            balance: b.balance,
                            asset_code: asset.code.clone(),
                            asset_scale: asset.scale,
                        },
                    )?),
                    _ => None,
                };
                tx.commit()?;
                Ok::<_, LedgerError>((row, balances, new, recorded))
            })
            .await?;
        self.bus.publish_recorded(recorded);
        if new {
            self.bus.publish_all(balances.iter().map(Balance::event));
        }
        let mine = balances
            .into_iter()
            .find(|b| b.kind == "wallet")
            .ok_or_else(|| LedgerError::Store(store::Error::Corrupt("wallet balance missing".into())))?;
        Ok((transfer.into(), mine))
    }

    /// One account's balances.
    pub async fn balance(&self, account_id: &str) -> Result<Balance, LedgerError> {
        let id = account_id.to_owned();
        self.store.call(move |conn| Ok(ops::account(conn, &id)?.into())).await
    }

    /// Recomputes every balance from the journal; empty when the cached balances agree.
    pub async fn audit(&self) -> Result<Vec<AuditMismatch>, LedgerError> {
        self.store.call(|conn| audit(conn)).await
    }

    /// Money moved since `since`: per asset and minute, as (asset code, asset scale, minute, sum) — see
    /// `moved::Moved::look`. One look at a time: the open minutes' reading goes on from where the last left it.
    pub async fn moved_per_minute(
        &self,
        since: time::OffsetDateTime,
    ) -> Result<Vec<(String, u8, String, i64)>, LedgerError> {
        let mut moved = self.moved.lock().await;
        moved.look(&self.store, self.clock.now(), since).await
    }

    /// The balances of the accounts that stand: wallets, settlement, peers and liquidity, not the account of
    /// each outgoing payment (one per payment ever made).
    pub async fn standing_balances(&self) -> Result<Vec<Balance>, LedgerError> {
        self.store
            .call(|conn| {
                Ok(store::ledger::standing_accounts(conn)?
                    .into_iter()
                    .map(Balance::from)
                    .collect())
            })
            .await
    }

    /// All account balances.
    pub async fn balances(&self) -> Result<Vec<Balance>, LedgerError> {
        self.store
            .call(|conn| Ok(store::ledger::accounts(conn)?.into_iter().map(Balance::from).collect()))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;

    fn at(hm: &str, s: u32) -> String {
        format!("2026-11-25T{hm}:{s:02}.000Z")
    }

    fn post(store: &Store, id: &str, amount: i64, when: &str) {
        let (id, when) = (id.to_owned(), when.to_owned());
        store
            .call_blocking(move |c| {
                c.execute(
                    "INSERT INTO transfers (id, debit_account, credit_account, amount, state, posted_amount, kind, \
                     created_at) VALUES (?1, 's', 'w', ?2, 'posted', ?2, 'deposit', ?3)",
                    crate::store::db::params![id, amount, when],
                )?;
                Ok::<_, store::Error>(())
            })
            .unwrap();
    }

    /// Past minutes are summed once, a few per look, and kept; the open minutes are read on every look. Once
    /// every minute has been summed the answer is the journal's.
    #[tokio::test]
    async fn money_moved_sums_each_past_minute_once() {
        let (store, _) = Store::open_in_memory().unwrap();
        store
            .call_blocking(|c| {
                c.execute_batch(
                    "INSERT INTO accounts (id, kind, asset_code, asset_scale, balance, no_overdraft, created_at) \
                     VALUES ('w', 'wallet', 'USD', 2, 0, 1, 't'), ('s', 'settlement', 'USD', 2, 0, 0, 't');",
                )?;
                Ok::<_, store::Error>(())
            })
            .unwrap();
        for (n, m) in ["09:46", "09:50", "09:55", "09:59", "10:00"].iter().enumerate() {
            post(&store, &format!("t{n}"), 100 + n as i64, &at(m, 5));
        }
        let now = time::macros::datetime!(2026-11-25 10:00:30 UTC);
        let clock = FixedClock::new(now);
        let ledger = Ledger::new(store.clone(), EventBus::new(16), std::sync::Arc::new(clock.clone()));
        let since = time::macros::datetime!(2026-11-25 09:46:00 UTC);
        let journal = |store: &Store| {
            store
                .call_blocking(|c| store::ledger::moved_per_minute(c, "2026-11-25T09:46", "~"))
                .unwrap()
        };
        // 14 past minutes, three a look: the fifth look has them all
        let first = ledger.moved_per_minute(since).await.unwrap();
        assert!(first.len() < journal(&store).len(), "{first:?}");
        let mut last = first;
        for _ in 0..4 {
            last = ledger.moved_per_minute(since).await.unwrap();
        }
        assert_eq!(last, journal(&store));
        // the open minute is read again; a summed minute is not
        post(&store, "late", 7, &at("09:50", 30));
        post(&store, "now", 9, &at("10:00", 20));
        let again = ledger.moved_per_minute(since).await.unwrap();
        let sum = |rows: &[(String, u8, String, i64)], minute: &str| {
            rows.iter().filter(|r| r.2.ends_with(minute)).map(|r| r.3).sum::<i64>()
        };
        assert_eq!(sum(&again, "T09:50"), 101, "summed once");
        assert_eq!(sum(&again, "T10:00"), 104 + 9, "the open minute is current");
        // the open minute is read on from the last look: nothing counted twice, a transfer at the stamp the
        // last look ended on counted once
        let unchanged = ledger.moved_per_minute(since).await.unwrap();
        assert_eq!(sum(&unchanged, "T10:00"), 104 + 9);
        post(&store, "same stamp", 5, &at("10:00", 20));
        let same = ledger.moved_per_minute(since).await.unwrap();
        assert_eq!(sum(&same, "T10:00"), 104 + 9 + 5);
        assert_eq!(
            sum(&ledger.moved_per_minute(since).await.unwrap(), "T10:00"),
            104 + 9 + 5
        );
        // a transfer committed late with an older stamp: the open minute misses it, the summed minute has it
        post(&store, "late in the open minute", 11, &at("10:00", 10));
        assert_eq!(
            sum(&ledger.moved_per_minute(since).await.unwrap(), "T10:00"),
            104 + 9 + 5
        );
        clock.advance(time::Duration::minutes(1));
        assert_eq!(
            sum(&ledger.moved_per_minute(since).await.unwrap(), "T10:00"),
            104 + 9 + 5 + 11
        );
        clock.advance(time::Duration::minutes(-1));
        // minutes before the window are forgotten
        clock.advance(time::Duration::minutes(10));
        let later = ledger
            .moved_per_minute(since + time::Duration::minutes(10))
            .await
            .unwrap();
        assert!(later.iter().all(|r| r.2.as_str() >= "2026-11-25T09:56"), "{later:?}");
        assert!(
            ledger
                .moved
                .lock()
                .await
                .summed
                .keys()
                .all(|m| m.as_str() >= "2026-11-25T09:56")
        );
    }
}
