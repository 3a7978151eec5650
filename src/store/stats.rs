//! What the metrics read from the database at scrape time: grants, incoming and outgoing payments and webhook
//! deliveries counted by state, and the money received and sent summed by asset. Grouped reads in one read
//! transaction; restart-safe because they are the stored truth, not counters kept in memory.

use crate::store::Connection;
use time::OffsetDateTime;

use super::Error;
use crate::states::{DeliveryState, GrantState, IncomingState, OutgoingState};

/// Counts by state (every state, zero when none) and sums by asset (`CODE/scale`, minor units).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Grant states as the views show them: a pending grant past its interaction window is `expired`.
    pub grants: Vec<(GrantState, u64)>,
    pub incoming: Vec<(IncomingState, u64)>,
    pub outgoing: Vec<(OutgoingState, u64)>,
    pub deliveries: Vec<(DeliveryState, u64)>,
    /// Received into incoming payments, by the receiving wallet's asset.
    pub received: Vec<(String, u64)>,
    /// Sent by outgoing payments, by the paying wallet's (debit) asset.
    pub sent: Vec<(String, u64)>,
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Every state of `all` with its count in `rows` (zero when absent).
fn by_state<S: Copy + PartialEq>(all: &[S], rows: &[(S, i64)]) -> Vec<(S, u64)> {
    all.iter()
        .map(|s| (*s, rows.iter().filter(|(r, _)| r == s).map(|(_, n)| count(*n)).sum()))
        .collect()
}

fn grouped<S: super::db::FromSql>(conn: &Connection, sql: &str) -> Result<Vec<(S, i64)>, Error> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn sums(conn: &Connection, table: &str, column: &str) -> Result<Vec<(String, u64)>, Error> {
    let sql = format!(
        "SELECT a.asset_code, a.asset_scale, SUM(t.{column}) FROM {table} t \
         JOIN wallet_addresses w ON w.id = t.wallet_id JOIN accounts a ON a.id = w.account_id \
         GROUP BY a.asset_code, a.asset_scale ORDER BY a.asset_code, a.asset_scale"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((
            format!("{}/{}", r.get::<_, String>(0)?, r.get::<_, i64>(1)?),
            count(r.get(2)?),
        ))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Reads the snapshot at `now` (incoming payments past their `expires_at` then count as expired), with
/// pending grants created at or before `window_start` shown as expired (their interaction window has passed).
pub fn snapshot(conn: &mut Connection, now: OffsetDateTime, window_start: OffsetDateTime) -> Result<Snapshot, Error> {
    let tx = conn.savepoint()?;
    let grants: Vec<(GrantState, i64)> = {
        let mut stmt =
            tx.prepare_cached("SELECT state, created_at <= ?1 AS lapsed, count(*) FROM grants GROUP BY state, lapsed")?;
        let rows = stmt.query_map([window_start], |r| {
            Ok((r.get::<_, GrantState>(0)?.shown(r.get(1)?), r.get::<_, i64>(2)?))
        })?;
        rows.collect::<Result<_, _>>()?
    };
    let outgoing = grouped::<OutgoingState>(&tx, "SELECT state, count(*) FROM outgoing_payments GROUP BY state")?;
    let deliveries = grouped::<DeliveryState>(&tx, "SELECT state, count(*) FROM webhook_deliveries GROUP BY state")?;
    let incoming: Vec<(IncomingState, i64)> = {
        let mut stmt = tx.prepare_cached(
            "SELECT completed, expires_at IS NOT NULL AND expires_at <= ?1 AS expired, count(*) \
             FROM incoming_payments GROUP BY completed, expired",
        )?;
        let rows = stmt.query_map([now], |r| {
            Ok((IncomingState::of(r.get(0)?, r.get(1)?), r.get::<_, i64>(2)?))
        })?;
        rows.collect::<Result<_, _>>()?
    };
    let received = sums(&tx, "incoming_payments", "received_amount")?;
    let sent = sums(&tx, "outgoing_payments", "sent_amount")?;
    tx.commit()?;
    Ok(Snapshot {
        grants: by_state(GrantState::ALL, &grants),
        incoming: by_state(IncomingState::ALL, &incoming),
        outgoing: by_state(OutgoingState::ALL, &outgoing),
        deliveries: by_state(DeliveryState::ALL, &deliveries),
        received,
        sent,
    })
}
