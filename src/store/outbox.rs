//! The event outbox (`events`): durable domain events appended inside the transaction of the change they
//! describe, read back by sequence number, and pruned by age and count.

use time::OffsetDateTime;

use super::db::{Connection, OptionalExtension, params};

use super::Error;
use crate::events::{DomainEvent, EventRecord};

/// The type of a row that carries no event, only a sequence number (see `migrations/0011`): readers skip it.
const MARK: &str = "_mark";

/// The advisory lock PostgreSQL's sequencer holds while it numbers events ([`sequence`]).
const APPEND_LOCK: i64 = 0x6f70_6465_736b_0002;

/// Appends `event` at `at` inside the caller's transaction. Publish the returned record only after commit.
///
/// Readers follow the outbox by sequence number, so numbers must become visible in order. SQLite has one
/// writer, so they do: the event goes straight into `events` with its number. On PostgreSQL concurrent
/// transactions would commit out of order (11 visible after 12, and a reader past 12 never sees 11), so the
/// event goes into `events_pending`, without a number, a lock or a notification (a `NOTIFY` serialises the
/// commits of every transaction that sends one); this node's event follower, woken in process when the
/// record is published, numbers it with [`sequence`] once it has committed, and tells the other nodes. The
/// record has no number (`seq: None`).
pub fn append(conn: &Connection, at: OffsetDateTime, event: DomainEvent) -> Result<EventRecord, Error> {
    let id = crate::ids::new_id();
    let payload = serde_json::to_string(&event).map_err(|e| Error::Corrupt(format!("event payload: {e}")))?;
    let seq = if conn.is_postgres() {
        conn.prepare_cached("INSERT INTO events_pending (id, at, type, payload) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![id, at, event.kind(), payload])?;
        None
    } else {
        let seq: i64 = conn
            .prepare_cached("INSERT INTO events (id, at, type, payload) VALUES (?1, ?2, ?3, ?4) RETURNING seq")?
            .query_row(params![id, at, event.kind(), payload], |r| r.get(0))?;
        Some(seq)
    };
    Ok(EventRecord {
        seq,
        id: Some(id),
        at,
        event,
    })
}

/// PostgreSQL: numbers the events that have committed to `events_pending`, moving them into `events` in id
/// order: how many it moved, or `None` when another node holds the sequencer's lock (it will number what had
/// committed before it began; what committed after is the caller's to try again). Run as a job of its own:
/// the lock is held to its commit, and the job sees only committed rows, so numbers become visible in the
/// order they are drawn. Run it with `Store::call_alone`, never in a commit group: a group that rolled back
/// after the numbers were drawn would leave a hole in the numbering. The other nodes are told when there are
/// new numbers. Nothing on SQLite.
pub fn sequence(conn: &Connection) -> Result<Option<usize>, Error> {
    if !conn.is_postgres() {
        return Ok(Some(0));
    }
    let locked: bool = conn.query_row(&format!("SELECT pg_try_advisory_xact_lock({APPEND_LOCK})"), [], |r| {
        r.get(0)
    })?;
    if !locked {
        return Ok(None);
    }
    let moved = conn.execute(
        "WITH moved AS (DELETE FROM events_pending RETURNING id, at, type, payload) \
         INSERT INTO events (id, at, type, payload) SELECT id, at, type, payload FROM moved ORDER BY id",
        [],
    )?;
    if moved > 0 {
        super::notify::tell(conn, super::notify::Channel::Events)?;
    }
    Ok(Some(moved))
}

/// Up to `limit` events after `seq`, oldest first (marks skipped).
pub fn after(conn: &Connection, seq: i64, limit: usize) -> Result<Vec<EventRecord>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, id, at, payload FROM events WHERE seq > ?1 AND type <> ?3 ORDER BY seq LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![seq, i64::try_from(limit).unwrap_or(i64::MAX), MARK], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, OffsetDateTime>(2)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, id, at, payload) = row?;
        let event =
            serde_json::from_str(&payload).map_err(|e| Error::Corrupt(format!("event {seq} does not parse: {e}")))?;
        out.push(EventRecord {
            seq: Some(seq),
            id: Some(id),
            at,
            event,
        });
    }
    Ok(out)
}

/// The oldest retained sequence number (none when the outbox is empty) and the newest ever given out (0 before
/// the first; pruning never removes the newest row, so it is never given out again).
pub fn bounds(conn: &Connection) -> Result<(Option<i64>, i64), Error> {
    let (oldest, newest): (Option<i64>, Option<i64>) = conn
        .prepare_cached("SELECT min(seq), max(seq) FROM events")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok((oldest, newest.unwrap_or(0)))
}

/// Deletes, from the oldest end, events older than `before` and beyond the newest `keep` — never the newest
/// event, and never those after `floor` (events a reader such as the webhook deliverer has not taken yet).
/// Events are appended in time order, so the age cut is found by walking from the oldest. At most `at_most`
/// go at once, so that each call is a bounded transaction (its pages, its share of the WAL, the writer's
/// time); the caller calls again while that many went. Returns how many went.
pub fn prune(
    conn: &Connection,
    before: OffsetDateTime,
    keep: u64,
    floor: Option<i64>,
    at_most: u32,
) -> Result<usize, Error> {
    let (oldest, newest) = bounds(conn)?;
    if oldest.is_none() {
        return Ok(0);
    }
    // the first event young enough to stay, and the first within the newest `keep`
    let by_age: Option<i64> = conn
        .prepare_cached("SELECT seq FROM events WHERE at >= ?1 ORDER BY seq LIMIT 1")?
        .query_row([before], |r| r.get(0))
        .optional()?;
    let keep = i64::try_from(keep.max(1)).unwrap_or(i64::MAX);
    let by_count = newest.saturating_sub(keep) + 1;
    let cut = by_age.unwrap_or(newest).max(by_count).min(newest);
    let cut = floor.map_or(cut, |f| cut.min(f + 1));
    // the oldest `at_most` of them: one bounded transaction, the rest in the next
    let cut = oldest.map_or(cut, |o| cut.min(o.saturating_add(i64::from(at_most))));
    Ok(conn
        .prepare_cached("DELETE FROM events WHERE seq < ?1")?
        .execute([cut])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::migrations::migrate(&mut c).unwrap();
        c
    }

    fn created(n: u32) -> DomainEvent {
        DomainEvent::WalletCreated {
            id: n.to_string(),
            name: format!("w{n}"),
        }
    }

    #[test]
    fn events_come_back_in_order_after_a_sequence_number() {
        let c = db();
        for n in 0..5 {
            let r = append(&c, crate::clock::ts(&format!("2026-01-01T00:00:0{n}.000Z")), created(n)).unwrap();
            assert_eq!(r.seq, Some(i64::from(n) + 1));
        }
        let got = after(&c, 2, 10).unwrap();
        assert_eq!(got.iter().map(|r| r.seq.unwrap()).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(got[0].event, created(2));
        assert_eq!(after(&c, 0, 2).unwrap().len(), 2);
        assert_eq!(bounds(&c).unwrap(), (Some(1), 5));
    }

    #[test]
    fn pruning_keeps_the_newest_and_what_a_reader_still_needs() {
        let c = db();
        for n in 0..10 {
            append(&c, crate::clock::ts(&format!("2026-01-01T00:00:0{n}.000Z")), created(n)).unwrap();
        }
        // by age: the first three are older than :03
        assert_eq!(
            prune(&c, crate::clock::ts("2026-01-01T00:00:03.000Z"), 100, None, 1000).unwrap(),
            3
        );
        // by count, but the reader has only taken up to 5
        assert_eq!(
            prune(&c, crate::clock::ts("2000-01-01T00:00:00.000Z"), 2, Some(5), 1000).unwrap(),
            2
        );
        assert_eq!(bounds(&c).unwrap(), (Some(6), 10));
        // a batch at a time
        assert_eq!(
            prune(&c, crate::clock::ts("2000-01-01T00:00:00.000Z"), 2, None, 2).unwrap(),
            2
        );
        assert_eq!(
            prune(&c, crate::clock::ts("2000-01-01T00:00:00.000Z"), 2, None, 2).unwrap(),
            1
        );
        assert_eq!(
            prune(&c, crate::clock::ts("2000-01-01T00:00:00.000Z"), 2, None, 2).unwrap(),
            0
        );
        assert_eq!(bounds(&c).unwrap(), (Some(9), 10));
        // sequence numbers are never reused
        assert_eq!(
            append(&c, crate::clock::ts("2026-01-02T00:00:00.000Z"), created(11))
                .unwrap()
                .seq,
            Some(11)
        );
    }
}
