//! Rows of `thresholds` (see `migrations/0026`): the operator's alert thresholds on peers and wallets, and
//! whether each is crossed now. Plain SQL; when a threshold counts as crossed, and the event it appends, are
//! the `thresholds` service module's.

use super::db::{Connection, Row, params};
use time::OffsetDateTime;

use super::Error;

/// One threshold row. `measure` is `peer_liquidity`, `peer_credit` or `wallet_balance`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThresholdRow {
    pub measure: String,
    pub subject: String,
    pub asset_code: String,
    pub asset_scale: u8,
    pub threshold: i64,
    pub crossed: bool,
    pub updated_at: OffsetDateTime,
}

const COLS: &str = "measure, subject, asset_code, asset_scale, threshold, crossed, updated_at";

fn from_row(r: &Row<'_>) -> super::db::Result<ThresholdRow> {
    Ok(ThresholdRow {
        measure: r.get(0)?,
        subject: r.get(1)?,
        asset_code: r.get(2)?,
        asset_scale: r.get(3)?,
        threshold: r.get(4)?,
        crossed: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

/// The thresholds on `subject` (a peer's or a wallet's name), by measure. Runs in every transaction that moves
/// a wallet's or a peer's money: one lookup by primary key prefix.
pub fn of(conn: &Connection, subject: &str) -> Result<Vec<ThresholdRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM thresholds WHERE subject = ?1 ORDER BY measure"
    ))?;
    let rows = stmt.query_map([subject], from_row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Every threshold, by subject and measure.
pub fn all(conn: &Connection) -> Result<Vec<ThresholdRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLS} FROM thresholds ORDER BY subject, measure"))?;
    let rows = stmt.query_map([], from_row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Sets a threshold (its crossed flag cleared: the caller evaluates it next, in the same transaction).
pub fn set(conn: &Connection, row: &ThresholdRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO thresholds (measure, subject, asset_code, asset_scale, threshold, crossed, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6) \
         ON CONFLICT (subject, measure) DO UPDATE SET asset_code = excluded.asset_code, \
         asset_scale = excluded.asset_scale, threshold = excluded.threshold, crossed = 0, \
         updated_at = excluded.updated_at",
    )?
    .execute(params![
        row.measure,
        row.subject,
        row.asset_code,
        row.asset_scale,
        row.threshold,
        row.updated_at
    ])?;
    Ok(())
}

/// Removes a threshold; whether there was one.
pub fn remove(conn: &Connection, measure: &str, subject: &str) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM thresholds WHERE subject = ?1 AND measure = ?2")?
        .execute(params![subject, measure])?
        == 1)
}

/// Flips the crossed flag to `crossed`, guarded by its current value: whether this call flipped it (two
/// transactions that cross one threshold at once flip it once; the other finds it flipped).
pub fn flip(conn: &Connection, measure: &str, subject: &str, crossed: bool) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("UPDATE thresholds SET crossed = ?3 WHERE subject = ?1 AND measure = ?2 AND crossed = ?4")?
        .execute(params![subject, measure, crossed, !crossed])?
        == 1)
}

/// The balance less reservations of the wallet named `wallet`, with its asset (none: no such wallet).
pub fn wallet_available(conn: &Connection, wallet: &str) -> Result<Option<(i64, String, u8)>, Error> {
    use super::db::OptionalExtension;
    Ok(conn
        .prepare_cached(
            "SELECT a.balance - a.pending_debits, a.asset_code, a.asset_scale FROM wallet_addresses w \
             JOIN accounts a ON a.id = w.account_id WHERE w.name = ?1",
        )?
        .query_row([wallet], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?)
}
