//! Webhook deliveries (`webhook_deliveries`) and the deliverer's cursor over the outbox: rows are taken from
//! the outbox in order, claimed when due, and settled as delivered, retried later or dead.

use super::db::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{Error, meta, outbox};
use crate::states::DeliveryState;

const CURSOR: &str = "webhook_cursor";

/// One event's delivery, as the operator sees it (`opdesk webhooks list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRow {
    pub event_seq: i64,
    pub event_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// The exact JSON body every attempt sends.
    #[serde(skip)]
    pub body: String,
    pub state: DeliveryState,
    pub attempts: i64,
    #[serde(with = "crate::clock::wire")]
    pub next_attempt_at: OffsetDateTime,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    #[serde(with = "crate::clock::wire")]
    pub created_at: OffsetDateTime,
    #[serde(with = "crate::clock::wire")]
    pub updated_at: OffsetDateTime,
}

const COLUMNS: &str = "event_seq, event_id, type, body, state, attempts, next_attempt_at, last_status, last_error, \
                       created_at, updated_at";

fn row(r: &Row<'_>) -> super::db::Result<DeliveryRow> {
    Ok(DeliveryRow {
        event_seq: r.get(0)?,
        event_id: r.get(1)?,
        kind: r.get(2)?,
        body: r.get(3)?,
        state: r.get(4)?,
        attempts: r.get(5)?,
        next_attempt_at: r.get(6)?,
        last_status: r.get(7)?,
        last_error: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

/// How far deliveries were taken from the outbox; none before the first run with a webhook URL.
pub fn cursor(conn: &Connection) -> Result<Option<i64>, Error> {
    meta::get(conn, CURSOR)?
        .map(|v| v.parse().map_err(|_| Error::Corrupt(format!("{CURSOR} is {v:?}"))))
        .transpose()
}

/// Starts the cursor at the newest outbox event unless it is set: configuring a webhook does not replay
/// history, and events from now on are delivered.
pub fn start(conn: &Connection) -> Result<(), Error> {
    if cursor(conn)?.is_none() {
        // what committed before now is history too (PostgreSQL numbers it first)
        outbox::sequence(conn)?;
        let (_, newest) = outbox::bounds(conn)?;
        meta::set(conn, CURSOR, &newest.to_string())?;
    }
    Ok(())
}

/// Turns up to `limit` outbox events after the cursor into pending deliveries (due at `now`), with `body`
/// building each one's JSON, and moves the cursor. The first run starts at the newest event: configuring a
/// webhook does not replay history. Returns how many were queued.
pub fn take_from_outbox(
    conn: &Connection,
    now: OffsetDateTime,
    limit: usize,
    body: impl Fn(&crate::events::EventRecord) -> String,
) -> Result<usize, Error> {
    let Some(from) = cursor(conn)? else {
        start(conn)?;
        return Ok(0);
    };
    let events = outbox::after(conn, from, limit)?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO webhook_deliveries (event_seq, event_id, type, body, state, next_attempt_at, created_at, \
         updated_at) VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5, ?5) ON CONFLICT (event_seq) DO NOTHING",
    )?;
    let mut last = from;
    for e in &events {
        let seq = e.seq.unwrap_or(last);
        insert.execute(params![
            seq,
            e.id.as_deref().unwrap_or_default(),
            e.event.kind(),
            body(e),
            now
        ])?;
        last = seq;
    }
    if last != from {
        meta::set(conn, CURSOR, &last.to_string())?;
    }
    Ok(events.len())
}

/// Pending deliveries due at `now`, oldest first; with `lease`, claimed until then (several nodes on one
/// database: no other node finds them due before the lease runs out, or their attempt is recorded).
pub fn due(
    conn: &Connection,
    now: OffsetDateTime,
    limit: usize,
    lease: Option<OffsetDateTime>,
) -> Result<Vec<DeliveryRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?1 \
         ORDER BY next_attempt_at, event_seq LIMIT ?2"
    ))?;
    let rows: Vec<DeliveryRow> = stmt
        .query_map(params![now, i64::try_from(limit).unwrap_or(i64::MAX)], row)?
        .collect::<Result<_, _>>()?;
    if let Some(until) = lease {
        let mut claim = conn.prepare_cached(
            "UPDATE webhook_deliveries SET next_attempt_at = ?2 WHERE event_seq = ?1 AND state = 'pending'",
        )?;
        for d in &rows {
            claim.execute(params![d.event_seq, until])?;
        }
    }
    Ok(rows)
}

/// When the next pending delivery is due, if any.
pub fn next_due(conn: &Connection) -> Result<Option<OffsetDateTime>, Error> {
    Ok(conn
        .prepare_cached("SELECT min(next_attempt_at) FROM webhook_deliveries WHERE state = 'pending'")?
        .query_row([], |r| r.get(0))
        .optional()?
        .flatten())
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    Delivered(i64),
    /// Not delivered: the status (if the receiver answered) and why, retried at `next` or dead when none.
    Failed {
        status: Option<i64>,
        error: String,
        next: Option<OffsetDateTime>,
    },
}

/// Records an attempt on a pending delivery.
pub fn settle(conn: &Connection, seq: i64, attempt: &Attempt, now: OffsetDateTime) -> Result<(), Error> {
    match attempt {
        Attempt::Delivered(status) => conn
            .prepare_cached(
                "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = ?2, \
                 last_error = NULL, updated_at = ?3 WHERE event_seq = ?1 AND state = 'pending'",
            )?
            .execute(params![seq, status, now])?,
        Attempt::Failed { status, error, next } => conn
            .prepare_cached(
                "UPDATE webhook_deliveries SET state = CASE WHEN CAST(?4 AS TEXT) IS NULL THEN 'dead' ELSE 'pending' END, \
                 attempts = attempts + 1, last_status = ?2, last_error = ?3, next_attempt_at = coalesce(?4, \
                 next_attempt_at), updated_at = ?5 WHERE event_seq = ?1 AND state = 'pending'",
            )?
            .execute(params![seq, status, error, next, now])?,
    };
    Ok(())
}

/// How many deliveries are in `state`.
pub fn count(conn: &Connection, state: DeliveryState) -> Result<usize, Error> {
    // a counter kept by triggers (`migrations/0014`): no count over every delivery
    super::payments::counted(conn, &format!("webhooks:{}", state.as_str()))
}

/// Deliveries newest first, optionally in one state, after `before` (a sequence number) for paging.
pub fn list(
    conn: &Connection,
    state: Option<DeliveryState>,
    before: Option<i64>,
    limit: usize,
) -> Result<Vec<DeliveryRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM webhook_deliveries WHERE (?1 IS NULL OR state = ?1) AND event_seq < ?2 \
         ORDER BY event_seq DESC LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![
            state,
            before.unwrap_or(i64::MAX),
            i64::try_from(limit).unwrap_or(i64::MAX)
        ],
        row,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn get(conn: &Connection, seq: i64) -> Result<Option<DeliveryRow>, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM webhook_deliveries WHERE event_seq = ?1"
        ))?
        .query_row([seq], row)
        .optional()?)
}

/// Re-drives a dead (or pending) delivery: pending again with a fresh attempt budget, due at `now`.
/// Returns whether it changed (a delivered one stays delivered).
pub fn redrive(conn: &Connection, seq: i64, now: OffsetDateTime) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?2, updated_at = ?2 \
             WHERE event_seq = ?1 AND state IN ('pending', 'dead')",
        )?
        .execute(params![seq, now])?;
    Ok(n == 1)
}

/// Re-drives every dead delivery; returns how many.
pub fn redrive_dead(conn: &Connection, now: OffsetDateTime) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?1, updated_at = ?1 \
             WHERE state = 'dead'",
        )?
        .execute([now])?)
}

/// Deletes delivered deliveries last touched before `before`.
pub fn prune_delivered(conn: &Connection, before: OffsetDateTime, at_most: u32) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM webhook_deliveries WHERE event_seq IN (SELECT event_seq FROM webhook_deliveries \
             WHERE state = 'delivered' AND updated_at < ?1 ORDER BY event_seq LIMIT ?2)",
        )?
        .execute(params![before, i64::from(at_most)])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::DomainEvent;

    /// The `n`th second of a test day.
    fn t(n: u8) -> OffsetDateTime {
        crate::clock::ts("2026-01-02T00:00:00.000Z") + time::Duration::seconds(i64::from(n))
    }

    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::migrations::migrate(&mut c).unwrap();
        c
    }

    fn event(c: &Connection, n: u32) {
        let e = DomainEvent::WalletCreated {
            id: n.to_string(),
            name: format!("w{n}"),
        };
        outbox::append(c, crate::clock::ts("2026-01-01T00:00:00.000Z"), e).unwrap();
    }

    #[test]
    fn deliveries_start_at_the_newest_event_then_follow_the_outbox_once() {
        let c = db();
        event(&c, 1);
        let body = |e: &crate::events::EventRecord| format!("{}", e.seq.unwrap());
        assert_eq!(
            take_from_outbox(&c, t(0), 100, body).unwrap(),
            0,
            "history is not replayed"
        );
        event(&c, 2);
        event(&c, 3);
        assert_eq!(take_from_outbox(&c, t(1), 100, body).unwrap(), 2);
        assert_eq!(take_from_outbox(&c, t(1), 100, body).unwrap(), 0, "each event once");
        let due = due(&c, t(1), 10, None).unwrap();
        assert_eq!(due.iter().map(|d| d.event_seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(due[0].body, "2");
        assert!(
            super::due(&c, t(0), 10, None).unwrap().is_empty(),
            "not due before its time"
        );
    }

    #[test]
    fn failures_retry_until_dead_and_the_operator_redrives() {
        let c = db();
        take_from_outbox(&c, t(0), 10, |_| String::new()).unwrap();
        event(&c, 1);
        take_from_outbox(&c, t(0), 10, |_| "{}".into()).unwrap();
        let fail = |next: Option<OffsetDateTime>| Attempt::Failed {
            status: Some(500),
            error: "HTTP 500".into(),
            next,
        };
        settle(&c, 1, &fail(Some(t(5))), t(1)).unwrap();
        let d = get(&c, 1).unwrap().unwrap();
        assert_eq!((d.state.as_str(), d.attempts, d.next_attempt_at), ("pending", 1, t(5)));
        settle(&c, 1, &fail(None), t(6)).unwrap();
        assert_eq!(get(&c, 1).unwrap().unwrap().state, DeliveryState::Dead);
        assert!(due(&c, t(9), 10, None).unwrap().is_empty());
        assert_eq!(list(&c, Some(DeliveryState::Dead), None, 10).unwrap().len(), 1);
        assert!(redrive(&c, 1, t(7)).unwrap());
        let d = get(&c, 1).unwrap().unwrap();
        assert_eq!((d.state, d.attempts), (DeliveryState::Pending, 0));
        settle(&c, 1, &Attempt::Delivered(204), t(8)).unwrap();
        assert!(!redrive(&c, 1, t(9)).unwrap(), "a delivered event stays delivered");
        assert_eq!(prune_delivered(&c, t(9), 100).unwrap(), 1);
    }
}
