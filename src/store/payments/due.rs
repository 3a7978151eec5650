//! Sending payments by due time: which are due, the leases one node takes on them while it works on them
//! (several nodes on one database), and when the next is due.

use time::OffsetDateTime;

use super::super::{
    Error,
    db::{Connection, params},
};

/// `outgoing_payments` read through `outgoing_due`, the partial index of sending payments by due time.
/// SQLite's planner, with no statistics, prefers `outgoing_by_state (state, id)` for the engine's queries,
/// and then reads and sorts every sending payment on each round; PostgreSQL plans from statistics and has no
/// `INDEXED BY`.
fn sending_by_due(conn: &Connection) -> &'static str {
    if conn.is_postgres() {
        "outgoing_payments"
    } else {
        "outgoing_payments INDEXED BY outgoing_due"
    }
}

/// Ids of sending payments due at `now`, oldest due first.
pub fn due_outgoing(conn: &Connection, now: OffsetDateTime, limit: u32) -> Result<Vec<String>, Error> {
    let sql = format!(
        "SELECT id FROM {} WHERE state = 'sending' AND next_attempt_at <= ?1 ORDER BY next_attempt_at LIMIT ?2",
        sending_by_due(conn)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params![now, limit], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(rows)
}

/// Claims a sending payment for `until` (a lease: no other node finds it due before then); false when it
/// is no longer sending.
pub fn lease_outgoing(conn: &Connection, id: &str, until: OffsetDateTime) -> Result<bool, Error> {
    let n = conn
        .prepare_cached("UPDATE outgoing_payments SET next_attempt_at = ?2 WHERE id = ?1 AND state = 'sending'")?
        .execute(params![id, until])?;
    Ok(n == 1)
}

/// Renews a lease this node holds until `held` to last until `until`; false when it is no longer this
/// node's (it ran out and another node leased the payment, or the payment stopped sending).
pub fn renew_outgoing(conn: &Connection, id: &str, held: OffsetDateTime, until: OffsetDateTime) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE outgoing_payments SET next_attempt_at = ?3 WHERE id = ?1 AND state = 'sending' \
             AND next_attempt_at = ?2",
        )?
        .execute(params![id, held, until])?;
    Ok(n == 1)
}

/// Gives a lease back: the payment is due again at `due`, unless its work moved it on meanwhile (its next
/// attempt is no longer the lease's end).
pub fn release_outgoing(
    conn: &Connection,
    id: &str,
    until: OffsetDateTime,
    due: Option<OffsetDateTime>,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE outgoing_payments SET next_attempt_at = ?3 WHERE id = ?1 AND state = 'sending' \
         AND next_attempt_at = ?2",
    )?
    .execute(params![id, until, due])?;
    Ok(())
}

/// When the next sending payment is due, if any.
pub fn next_due(conn: &Connection) -> Result<Option<OffsetDateTime>, Error> {
    let sql = format!(
        "SELECT MIN(next_attempt_at) FROM {} WHERE state = 'sending'",
        sending_by_due(conn)
    );
    Ok(conn.prepare_cached(&sql)?.query_row([], |r| r.get(0))?)
}
