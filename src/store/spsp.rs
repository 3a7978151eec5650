//! Rows of `spsp_connections`: what each SPSP STREAM connection has paid into its wallet address, and how much
//! of it `walletReceived` events have announced (see `migrations/0021`).

use super::db::{Connection, OptionalExtension, params};
use time::OffsetDateTime;

use super::Error;

/// What SPSP connection `connection` has paid so far (0 for one that has paid nothing yet).
pub fn received(conn: &Connection, connection: &str) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached("SELECT received FROM spsp_connections WHERE connection_id = ?1")?
        .query_row([connection], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Adds `amount` to what `connection` has paid into `wallet_id`; returns the new total.
pub fn add_received(
    conn: &Connection,
    connection: &str,
    wallet_id: &str,
    amount: i64,
    now: OffsetDateTime,
) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO spsp_connections (connection_id, wallet_id, received, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (connection_id) \
             DO UPDATE SET received = spsp_connections.received + excluded.received, updated_at = excluded.updated_at \
             RETURNING received",
        )?
        .query_row(params![connection, wallet_id, amount, now], |r| r.get(0))?)
}

/// Money a connection paid that no event has announced yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreported {
    pub connection_id: String,
    pub wallet_id: String,
    /// What the connection has paid in all.
    pub received: i64,
    /// What it paid since the last report.
    pub amount: i64,
}

/// Claims up to `limit` connections' unannounced money: marks it announced and returns it, in one statement (on
/// PostgreSQL a second node's claim waits for this one and then finds nothing left to claim). The caller appends
/// the events in the same transaction.
pub fn take_unreported(conn: &Connection, limit: u32) -> Result<Vec<Unreported>, Error> {
    let mut stmt = conn.prepare_cached(
        "UPDATE spsp_connections SET reported = received, last_report = received - reported \
         WHERE connection_id IN (SELECT connection_id FROM spsp_connections WHERE received > reported \
                                 ORDER BY connection_id LIMIT ?1) \
           AND received > reported \
         RETURNING connection_id, wallet_id, received, last_report",
    )?;
    let rows = stmt
        .query_map([limit], |r| {
            Ok(Unreported {
                connection_id: r.get(0)?,
                wallet_id: r.get(1)?,
                received: r.get(2)?,
                amount: r.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Deletes up to `limit` connections whose money was all announced and that last paid before `before`.
pub fn prune(conn: &Connection, before: OffsetDateTime, limit: u32) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM spsp_connections WHERE connection_id IN (SELECT connection_id FROM spsp_connections \
             WHERE received = reported AND updated_at < ?1 ORDER BY updated_at LIMIT ?2)",
        )?
        .execute(params![before, limit])?)
}
