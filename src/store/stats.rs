//! What the metrics read from the database at scrape time: grants, incoming and outgoing payments and webhook
//! deliveries counted by state, the money received and sent summed by asset, each peer's liquidity and credit
//! used against its thresholds, wallet balances per asset, grants waiting and payments failed lately. Grouped reads in one read
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
    /// Each ILP peer with ledger accounts: its liquidity, credit used and thresholds.
    pub peers: Vec<PeerFigures>,
    /// Per asset (`CODE/scale`): wallet balances summed, and how many wallets are under their threshold.
    pub wallets: Vec<(String, i64, u64)>,
    /// Grants waiting for a decision (pending, within their interaction window).
    pub waiting: Waiting,
    /// Outgoing payments that failed in the last hour.
    pub failed_last_hour: u64,
}

/// One peer's figures for the metrics, in minor units of its asset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerFigures {
    pub peer: String,
    /// Its liquidity less what we owe it; none while sending through it is not limited.
    pub liquidity: Option<i64>,
    /// What it owes us.
    pub credit_used: i64,
    pub liquidity_threshold: Option<i64>,
    pub credit_threshold: Option<i64>,
}

/// Grants waiting for a decision within their interaction window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Waiting {
    pub count: u64,
    /// How long the oldest has waited, in seconds (0 when none waits).
    pub oldest_seconds: i64,
    /// How many have waited past half their window.
    pub past_half_window: u64,
}

/// The grants waiting at `now` for a decision: pending and created after `window_start` (the interaction
/// window's start for a grant created now).
pub fn waiting(conn: &Connection, now: OffsetDateTime, window_start: OffsetDateTime) -> Result<Waiting, Error> {
    let half = window_start + (now - window_start) / 2;
    let (count, oldest, past): (i64, Option<OffsetDateTime>, Option<i64>) = conn
        .prepare_cached(
            "SELECT count(*), min(created_at), sum(CASE WHEN created_at <= ?2 THEN 1 ELSE 0 END) FROM grants \
             WHERE state = 'pending' AND created_at > ?1",
        )?
        .query_row(super::db::params![window_start, half], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    Ok(Waiting {
        count: count_of(count),
        oldest_seconds: oldest.map_or(0, |t| (now - t).whole_seconds().max(0)),
        past_half_window: count_of(past.unwrap_or(0)),
    })
}

/// Outgoing payments that failed since `since` (by their last change).
pub fn failed_since(conn: &Connection, since: OffsetDateTime) -> Result<u64, Error> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM outgoing_payments WHERE state = 'failed' AND updated_at >= ?1")?
        .query_row([since], |r| r.get(0))?;
    Ok(count_of(n))
}

fn count_of(n: i64) -> u64 {
    count(n)
}

/// Each peer with ledger accounts (by name), with its thresholds.
fn peers(conn: &Connection) -> Result<Vec<PeerFigures>, Error> {
    use std::collections::BTreeMap;
    let mut by_peer: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT peer, kind, balance FROM accounts WHERE kind IN ('peer', 'liquidity') AND peer IS NOT NULL",
    )?;
    for row in stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?))
    })? {
        let (peer, kind, balance) = row?;
        let e = by_peer.entry(peer).or_default();
        if kind == "peer" {
            e.0 = e.0.saturating_add(balance);
        } else {
            e.1 = e.1.saturating_add(balance);
        }
    }
    let limited: Vec<String> = {
        let mut stmt = conn.prepare_cached("SELECT peer FROM peer_limits WHERE send_limited = 1")?;
        stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?
    };
    let thresholds = super::thresholds::all(conn)?;
    let threshold = |peer: &str, measure: &str| {
        thresholds
            .iter()
            .find(|t| t.subject == peer && t.measure == measure)
            .map(|t| t.threshold)
    };
    Ok(by_peer
        .into_iter()
        .map(|(peer, (position, liquidity))| PeerFigures {
            liquidity: limited.contains(&peer).then(|| liquidity.saturating_sub(position)),
            credit_used: position.saturating_neg().max(0),
            liquidity_threshold: threshold(&peer, "peer_liquidity"),
            credit_threshold: threshold(&peer, "peer_credit"),
            peer,
        })
        .collect())
}

/// Per asset: the wallets' balances summed and how many are under their threshold.
fn wallets(conn: &Connection) -> Result<Vec<(String, i64, u64)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT a.asset_code, a.asset_scale, SUM(a.balance), \
         SUM(CASE WHEN t.threshold IS NOT NULL AND a.balance - a.pending_debits < t.threshold THEN 1 ELSE 0 END) \
         FROM wallet_addresses w JOIN accounts a ON a.id = w.account_id \
         LEFT JOIN thresholds t ON t.subject = w.name AND t.measure = 'wallet_balance' \
         AND t.asset_code = a.asset_code AND t.asset_scale = a.asset_scale \
         GROUP BY a.asset_code, a.asset_scale ORDER BY a.asset_code, a.asset_scale",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            format!("{}/{}", r.get::<_, String>(0)?, r.get::<_, i64>(1)?),
            r.get::<_, i64>(2)?,
            count(r.get(3)?),
        ))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
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
    let peers = peers(&tx)?;
    let wallets = wallets(&tx)?;
    let waiting = waiting(&tx, now, window_start)?;
    let failed_last_hour = failed_since(&tx, now - time::Duration::HOUR)?;
    tx.commit()?;
    Ok(Snapshot {
        grants: by_state(GrantState::ALL, &grants),
        incoming: by_state(IncomingState::ALL, &incoming),
        outgoing: by_state(OutgoingState::ALL, &outgoing),
        deliveries: by_state(DeliveryState::ALL, &deliveries),
        received,
        sent,
        peers,
        wallets,
        waiting,
        failed_last_hour,
    })
}
