//! Ledger repo functions: rows of `accounts` and `transfers`. Plain SQL on a connection or transaction;
//! the rules (asset match, overdraft, idempotency) live in the `ledger` service module above the store.

use super::db::{Connection, OptionalExtension, Row, params};
use time::OffsetDateTime;

use super::Error;
use crate::states::TransferState;

/// An account row with its cached balances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRow {
    pub id: String,
    pub kind: String,
    pub asset_code: String,
    pub asset_scale: u8,
    pub balance: i64,
    pub pending_debits: i64,
    pub pending_credits: i64,
    pub no_overdraft: bool,
    pub created_at: OffsetDateTime,
    /// The wallet address name when the account belongs to one.
    pub wallet: Option<String>,
    /// The ILP peer of a peer account (None for peer accounts from before schema v5).
    pub peer: Option<String>,
}

/// A transfer row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRow {
    pub id: String,
    pub debit_account: String,
    pub credit_account: String,
    pub amount: i64,
    pub state: TransferState,
    pub posted_amount: Option<i64>,
    pub kind: String,
    pub memo: Option<String>,
    pub created_at: OffsetDateTime,
    pub resolved_at: Option<OffsetDateTime>,
}

const ACCOUNT_COLS: &str = "a.id, a.kind, a.asset_code, a.asset_scale, a.balance, a.pending_debits, \
     a.pending_credits, a.no_overdraft, a.created_at, w.name, a.peer";

fn account_from_row(r: &Row<'_>) -> super::db::Result<AccountRow> {
    Ok(AccountRow {
        id: r.get(0)?,
        kind: r.get(1)?,
        asset_code: r.get(2)?,
        asset_scale: r.get(3)?,
        balance: r.get(4)?,
        pending_debits: r.get(5)?,
        pending_credits: r.get(6)?,
        no_overdraft: r.get(7)?,
        created_at: r.get(8)?,
        wallet: r.get(9)?,
        peer: r.get(10)?,
    })
}

/// A new account row.
pub struct NewAccount<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    /// The ILP peer of a `peer` account.
    pub peer: Option<&'a str>,
    pub asset_code: &'a str,
    pub asset_scale: u8,
    pub no_overdraft: bool,
}

pub fn insert_account(conn: &Connection, a: &NewAccount<'_>, now: OffsetDateTime) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO accounts (id, kind, peer, asset_code, asset_scale, no_overdraft, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        a.id,
        a.kind,
        a.peer,
        a.asset_code,
        a.asset_scale,
        a.no_overdraft,
        now
    ])?;
    Ok(())
}

pub fn account(conn: &Connection, id: &str) -> Result<Option<AccountRow>, Error> {
    let sql = format!(
        "SELECT {ACCOUNT_COLS} FROM accounts a LEFT JOIN wallet_addresses w ON w.account_id = a.id \
         WHERE a.id = ?1"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], account_from_row)
        .optional()?)
}

pub fn settlement_account(conn: &Connection, code: &str, scale: u8) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT id FROM accounts WHERE kind = 'settlement' AND asset_code = ?1 AND asset_scale = ?2")?
        .query_row(params![code, scale], |r| r.get(0))
        .optional()?)
}

/// The account of ILP peer `peer` in an asset.
pub fn peer_account(conn: &Connection, peer: &str, code: &str, scale: u8) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM accounts WHERE kind = 'peer' AND peer = ?1 AND asset_code = ?2 AND asset_scale = ?3",
        )?
        .query_row(params![peer, code, scale], |r| r.get(0))
        .optional()?)
}

/// The liquidity account of ILP peer `peer` in an asset (migration 0010).
pub fn liquidity_account(conn: &Connection, peer: &str, code: &str, scale: u8) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM accounts WHERE kind = 'liquidity' AND peer = ?1 AND asset_code = ?2 AND asset_scale = ?3",
        )?
        .query_row(params![peer, code, scale], |r| r.get(0))
        .optional()?)
}

/// All accounts, wallets first by name, then settlement accounts by asset.
pub fn accounts(conn: &Connection) -> Result<Vec<AccountRow>, Error> {
    let sql = format!(
        "SELECT {ACCOUNT_COLS} FROM accounts a LEFT JOIN wallet_addresses w ON w.account_id = a.id \
         ORDER BY w.name IS NULL, w.name, a.asset_code, a.asset_scale"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], account_from_row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The accounts that stand — wallets, settlement, peers, liquidity — without the one each outgoing payment
/// gets for its money in flight (through the partial index `accounts_standing`), ordered as [`accounts`].
pub fn standing_accounts(conn: &Connection) -> Result<Vec<AccountRow>, Error> {
    let sql = format!(
        "SELECT {ACCOUNT_COLS} FROM accounts a LEFT JOIN wallet_addresses w ON w.account_id = a.id \
         WHERE a.kind <> 'payment' ORDER BY w.name IS NULL, w.name, a.asset_code, a.asset_scale"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], account_from_row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn set_balances(
    conn: &Connection,
    id: &str,
    balance: i64,
    pending_debits: i64,
    pending_credits: i64,
) -> Result<(), Error> {
    conn.prepare_cached("UPDATE accounts SET balance = ?2, pending_debits = ?3, pending_credits = ?4 WHERE id = ?1")?
        .execute(params![id, balance, pending_debits, pending_credits])?;
    Ok(())
}

fn transfer_from_row(r: &Row<'_>) -> super::db::Result<TransferRow> {
    Ok(TransferRow {
        id: r.get(0)?,
        debit_account: r.get(1)?,
        credit_account: r.get(2)?,
        amount: r.get(3)?,
        state: r.get(4)?,
        posted_amount: r.get(5)?,
        kind: r.get(6)?,
        memo: r.get(7)?,
        created_at: r.get(8)?,
        resolved_at: r.get(9)?,
    })
}

pub fn transfer(conn: &Connection, id: &str) -> Result<Option<TransferRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id, debit_account, credit_account, amount, state, posted_amount, kind, memo, \
             created_at, resolved_at FROM transfers WHERE id = ?1",
        )?
        .query_row([id], transfer_from_row)
        .optional()?)
}

pub fn insert_transfer(conn: &Connection, t: &TransferRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO transfers (id, debit_account, credit_account, amount, state, posted_amount, kind, \
         memo, created_at, resolved_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        t.id,
        t.debit_account,
        t.credit_account,
        t.amount,
        t.state,
        t.posted_amount,
        t.kind,
        t.memo,
        t.created_at,
        t.resolved_at
    ])?;
    Ok(())
}

/// Moves a pending transfer to `posted` (with `posted_amount`) or `voided`. Returns whether a pending row
/// was changed; `false` means it was not pending (already resolved) or does not exist.
pub fn resolve_pending(
    conn: &Connection,
    id: &str,
    state: TransferState,
    posted_amount: Option<i64>,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE transfers SET state = ?2, posted_amount = ?3, resolved_at = ?4 \
             WHERE id = ?1 AND state = 'pending'",
        )?
        .execute(params![id, state, posted_amount, now])?;
    Ok(n == 1)
}

/// Money moved from `from` until before `to` (timestamps, or their prefixes such as a minute
/// `YYYY-MM-DDTHH:MM`; `"~"` for no end): posted transfers summed per asset and per minute, as (asset code,
/// asset scale, minute `YYYY-MM-DDTHH:MM`, sum), oldest minute first. Reads only the transfers in between, through the partial index `transfers_moved` (migration 0013: the state is written out so the
/// planner can use it).
pub fn moved_per_minute(conn: &Connection, from: &str, to: &str) -> Result<Vec<(String, u8, String, i64)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT a.asset_code, a.asset_scale, substr(COALESCE(t.resolved_at, t.created_at), 1, 16) AS minute, \
         SUM(t.posted_amount) FROM transfers t JOIN accounts a ON a.id = t.debit_account \
         WHERE t.state = 'posted' AND COALESCE(t.resolved_at, t.created_at) >= ?1 \
         AND COALESCE(t.resolved_at, t.created_at) < ?2 \
         GROUP BY a.asset_code, a.asset_scale, minute ORDER BY minute, a.asset_code",
    )?;
    let rows = stmt.query_map(params![from, to], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Money moved at or after the instant `from` (a timestamp or a minute prefix): posted transfers summed per
/// asset and per timestamp, as (asset code, asset scale, timestamp, sum). What the open minutes of the money
/// moved are read from a little at a time (see [`crate::ledger::Ledger::moved_per_minute`]).
pub fn moved_since(conn: &Connection, from: &str) -> Result<Vec<(String, u8, String, i64)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT a.asset_code, a.asset_scale, COALESCE(t.resolved_at, t.created_at) AS at, SUM(t.posted_amount) \
         FROM transfers t JOIN accounts a ON a.id = t.debit_account \
         WHERE t.state = 'posted' AND COALESCE(t.resolved_at, t.created_at) >= ?1 \
         GROUP BY a.asset_code, a.asset_scale, at",
    )?;
    let rows = stmt.query_map(params![from], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Balances recomputed from the journal, per account: (id, balance, pending_debits, pending_credits).
/// Summed in `i128` in Rust: gross sums of a busy account can exceed `i64` even when its net cannot.
pub fn journal_balances(conn: &Connection) -> Result<Vec<(String, i128, i128, i128)>, Error> {
    let mut totals: std::collections::BTreeMap<String, (i128, i128, i128)> = std::collections::BTreeMap::new();
    let mut stmt = conn.prepare_cached("SELECT id FROM accounts")?;
    for id in stmt.query_map([], |r| r.get::<_, String>(0))? {
        totals.insert(id?, (0, 0, 0));
    }
    let mut stmt =
        conn.prepare_cached("SELECT debit_account, credit_account, amount, state, posted_amount FROM transfers")?;
    stmt.for_each_row((), |r| {
        let (debit, credit): (String, String) = (r.get(0)?, r.get(1)?);
        let amount = i128::from(r.get::<_, i64>(2)?);
        let state: TransferState = r.get(3)?;
        let posted = i128::from(r.get::<_, Option<i64>>(4)?.unwrap_or(0));
        let (d, c) = match state {
            TransferState::Posted => ((-posted, 0, 0), (posted, 0, 0)),
            TransferState::Pending => ((0, amount, 0), (0, 0, amount)),
            TransferState::Voided => ((0, 0, 0), (0, 0, 0)),
        };
        for (acct, delta) in [(debit, d), (credit, c)] {
            let e = totals.entry(acct).or_default();
            e.0 += delta.0;
            e.1 += delta.1;
            e.2 += delta.2;
        }
        Ok(())
    })?;
    Ok(totals.into_iter().map(|(id, (b, pd, pc))| (id, b, pd, pc)).collect())
}
