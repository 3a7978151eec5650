//! Rows of `peers`: the ILP peers added through the admin API (see `migrations/0005`), and of `peer_limits`:
//! every peer's sending limit flag and credit limit, keyed by name (see `migrations/0010`).

use super::db::{Connection, OptionalExtension, Row, params};
use time::OffsetDateTime;

use super::Error;

/// One stored peer. Lists are JSON arrays in the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerRow {
    pub name: String,
    pub ilp_address: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    /// base64url SHA-256 of each incoming token.
    pub incoming_token_hashes: Vec<String>,
    pub outgoing_endpoint: Option<String>,
    pub outgoing_token: Option<String>,
    pub routes: Vec<String>,
    pub max_packet_amount: Option<i64>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

const COLS: &str = "name, ilp_address, asset_code, asset_scale, incoming_token_hashes, outgoing_endpoint, \
     outgoing_token, routes, max_packet_amount, created_at, updated_at";

fn list_of(text: String, column: usize) -> super::db::Result<Vec<String>> {
    serde_json::from_str(&text).map_err(|e| super::db::Error::convert(column, e))
}

fn from_row(r: &Row<'_>) -> super::db::Result<PeerRow> {
    Ok(PeerRow {
        name: r.get(0)?,
        ilp_address: r.get(1)?,
        asset_code: r.get(2)?,
        asset_scale: r.get(3)?,
        incoming_token_hashes: list_of(r.get(4)?, 4)?,
        outgoing_endpoint: r.get(5)?,
        outgoing_token: r.get(6)?,
        routes: list_of(r.get(7)?, 7)?,
        max_packet_amount: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

fn json(list: &[String]) -> String {
    serde_json::Value::from(list.to_vec()).to_string()
}

pub fn peers(conn: &Connection) -> Result<Vec<PeerRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLS} FROM peers ORDER BY name"))?;
    let rows = stmt.query_map([], from_row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn peer(conn: &Connection, name: &str) -> Result<Option<PeerRow>, Error> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLS} FROM peers WHERE name = ?1"))?
        .query_row([name], from_row)
        .optional()?)
}

/// Inserts `p`, or replaces the row of the same name (keeping its `created_at`).
pub fn upsert(conn: &Connection, p: &PeerRow) -> Result<(), Error> {
    conn.prepare_cached(&format!(
        "INSERT INTO peers ({COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
         ON CONFLICT (name) DO UPDATE SET ilp_address = excluded.ilp_address, asset_code = excluded.asset_code, \
         asset_scale = excluded.asset_scale, incoming_token_hashes = excluded.incoming_token_hashes, \
         outgoing_endpoint = excluded.outgoing_endpoint, outgoing_token = excluded.outgoing_token, \
         routes = excluded.routes, max_packet_amount = excluded.max_packet_amount, updated_at = excluded.updated_at"
    ))?
    .execute(params![
        p.name,
        p.ilp_address,
        p.asset_code,
        p.asset_scale,
        json(&p.incoming_token_hashes),
        p.outgoing_endpoint,
        p.outgoing_token,
        json(&p.routes),
        p.max_packet_amount,
        p.created_at,
        p.updated_at
    ])?;
    super::notify::tell(conn, super::notify::Channel::Peers)
}

/// Deletes the peer; false when there was none.
pub fn delete(conn: &Connection, name: &str) -> Result<bool, Error> {
    let deleted = conn
        .prepare_cached("DELETE FROM peers WHERE name = ?1")?
        .execute([name])?
        > 0;
    if deleted {
        super::notify::tell(conn, super::notify::Channel::Peers)?;
    }
    Ok(deleted)
}

/// Outgoing payments still sending (or waiting to) through the peer `name`.
pub fn payments_in_flight(conn: &Connection, name: &str) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT COUNT(*) FROM outgoing_payments o JOIN stream_plans p ON p.id IN (o.id, o.quote_id) \
             WHERE p.peer = ?1 AND o.state = 'sending'",
        )?
        .query_row([name], |r| r.get(0))?)
}

/// What peer `name` still holds in an asset or scale other than `code`/`scale`, from a link it had before:
/// its peer and liquidity accounts there that are not at zero or hold a reservation, as (code, scale,
/// balance).
pub fn held_in_another_asset(
    conn: &Connection,
    name: &str,
    code: &str,
    scale: u8,
) -> Result<Vec<(String, u8, i64)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT asset_code, asset_scale, balance FROM accounts WHERE peer = ?1 AND kind IN ('peer', 'liquidity') \
         AND (asset_code <> ?2 OR asset_scale <> ?3) AND (balance <> 0 OR pending_debits <> 0 OR pending_credits <> 0) \
         ORDER BY asset_code, asset_scale",
    )?;
    let rows = stmt
        .query_map(params![name, code, scale], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Whether peer `name`'s credit limit was set for a link in another asset or scale than `code`/`scale` (so
/// it counts that link's minor units): it has one and ledger accounts, none of them in that asset.
pub fn limits_in_another_asset(conn: &Connection, name: &str, code: &str, scale: u8) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM peer_limits WHERE peer = ?1 AND credit_limit IS NOT NULL) \
             AND EXISTS (SELECT 1 FROM accounts WHERE peer = ?1 AND kind IN ('peer', 'liquidity')) \
             AND NOT EXISTS (SELECT 1 FROM accounts WHERE peer = ?1 AND kind IN ('peer', 'liquidity') \
                             AND asset_code = ?2 AND asset_scale = ?3)",
        )?
        .query_row(params![name, code, scale], |r| r.get(0))?)
}

/// Forgets peer `name`'s limits: whether its sending is limited, and its credit limit.
pub fn forget_limits(conn: &Connection, name: &str) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM peer_limits WHERE peer = ?1")?
        .execute([name])?;
    Ok(())
}

/// Quotes not yet expired nor paid, and payments sending, planned through the peer `name` in another asset or
/// scale than `code`/`scale` (the plan's link, else the paying wallet's asset).
pub fn planned_in_another_asset(
    conn: &Connection,
    name: &str,
    code: &str,
    scale: u8,
    now: OffsetDateTime,
) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT COUNT(*) FROM stream_plans p \
             LEFT JOIN outgoing_payments o ON p.id IN (o.id, o.quote_id) \
             LEFT JOIN quotes q ON q.id = p.id \
             JOIN wallet_addresses w ON w.id = COALESCE(o.wallet_id, q.wallet_id) \
             JOIN accounts a ON a.id = w.account_id \
             WHERE p.peer = ?1 AND (o.state = 'sending' OR (o.id IS NULL AND q.expires_at > ?4)) \
             AND (COALESCE(p.link_asset_code, a.asset_code) <> ?2 OR COALESCE(p.link_asset_scale, a.asset_scale) <> ?3)",
        )?
        .query_row(params![name, code, scale, now], |r| r.get(0))?)
}

/// A peer's limits (no row: not limited, no credit limit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerLimits {
    /// Sending through the peer is limited by its liquidity (set by the first liquidity deposit).
    pub send_limited: bool,
    /// What the peer may owe us, in minor units of its asset; None: no limit.
    pub credit_limit: Option<i64>,
}

/// Claims `amount` in flight through `peer` until `expires_at` for a packet of `payment` (migrations 0015,
/// 0017); false, claiming nothing, when that payment has stopped sending (it was cancelled or failed).
pub fn claim(
    conn: &Connection,
    id: &str,
    peer: &str,
    amount: i64,
    expires_at: OffsetDateTime,
    payment: &str,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "INSERT INTO peer_claims (id, peer, amount, expires_at, payment) \
             SELECT CAST(?1 AS TEXT), CAST(?2 AS TEXT), CAST(?3 AS BIGINT), CAST(?4 AS TEXT), CAST(?5 AS TEXT) \
             WHERE NOT EXISTS (SELECT 1 FROM outgoing_payments WHERE id = ?5 AND state <> 'sending')",
        )?
        .execute(params![id, peer, amount, expires_at, payment])?;
    Ok(n == 1)
}

/// Whether a packet of `payment` may be on its way at `now`: a claim of it has not ended or expired.
pub fn payment_in_flight(conn: &Connection, payment: &str, now: OffsetDateTime) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM peer_claims WHERE payment = ?1 AND expires_at > ?2)")?
        .query_row(params![payment, now], |r| r.get(0))?)
}

/// Ends a claim (its packet's outcome is committed, or it was not fulfilled); gone already is fine.
pub fn unclaim(conn: &Connection, id: &str) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM peer_claims WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// What is in flight through `peer` at `now`: its claims not expired yet.
pub fn in_flight(conn: &Connection, peer: &str, now: OffsetDateTime) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached("SELECT COALESCE(SUM(amount), 0) FROM peer_claims WHERE peer = ?1 AND expires_at > ?2")?
        .query_row(params![peer, now], |r| r.get(0))?)
}

/// Deletes every claim: on SQLite at start, when the process that made them is gone (the data dir is held by
/// one process). Returns how many there were.
pub fn drop_claims(conn: &Connection) -> Result<usize, Error> {
    Ok(conn.prepare_cached("DELETE FROM peer_claims")?.execute([])?)
}

/// Deletes `peer`'s claims that expired by `now` (their packets expired with a node that died).
pub fn purge_claims(conn: &Connection, peer: &str, now: OffsetDateTime) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM peer_claims WHERE peer = ?1 AND expires_at <= ?2")?
        .execute(params![peer, now])?)
}

pub fn limits(conn: &Connection, peer: &str) -> Result<PeerLimits, Error> {
    Ok(conn
        .prepare_cached("SELECT send_limited, credit_limit FROM peer_limits WHERE peer = ?1")?
        .query_row(params![peer], |r| {
            Ok(PeerLimits {
                send_limited: r.get(0)?,
                credit_limit: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// Every peer's limits, by name.
pub fn all_limits(conn: &Connection) -> Result<Vec<(String, PeerLimits)>, Error> {
    let mut stmt = conn.prepare_cached("SELECT peer, send_limited, credit_limit FROM peer_limits ORDER BY peer")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                PeerLimits {
                    send_limited: r.get(1)?,
                    credit_limit: r.get(2)?,
                },
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Marks sending through `peer` as limited by its liquidity (idempotent).
pub fn set_send_limited(conn: &Connection, peer: &str, now: OffsetDateTime) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO peer_limits (peer, send_limited, updated_at) VALUES (?1, 1, ?2) \
         ON CONFLICT (peer) DO UPDATE SET send_limited = 1, updated_at = excluded.updated_at",
    )?
    .execute(params![peer, now])?;
    Ok(())
}

/// Sets or clears (`None`) what `peer` may owe us.
pub fn set_credit_limit(conn: &Connection, peer: &str, limit: Option<i64>, now: OffsetDateTime) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO peer_limits (peer, credit_limit, updated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (peer) DO UPDATE SET credit_limit = excluded.credit_limit, updated_at = excluded.updated_at",
    )?
    .execute(params![peer, limit, now])?;
    Ok(())
}
