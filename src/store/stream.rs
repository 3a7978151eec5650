//! Rows of `stream_plans`: how to pay a receiver on another ASE by STREAM (see `migrations/0004`).

use rusqlite::{Connection, OptionalExtension, params};

use super::Error;

/// One plan: the peer, the receiver's ILP credentials and the quoted rates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPlanRow {
    /// The quote id, or the outgoing payment id for a payment created without a quote.
    pub id: String,
    pub receiver: String,
    pub peer: String,
    pub ilp_address: String,
    pub shared_secret: String,
    pub estimated_rate: String,
    pub minimum_rate: String,
    pub max_packet_amount: Option<i64>,
    pub source_amount: i64,
    pub created_at: String,
}

pub fn insert_plan(conn: &Connection, p: &StreamPlanRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO stream_plans (id, receiver, peer, ilp_address, shared_secret, estimated_rate, minimum_rate, \
         max_packet_amount, source_amount, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        p.id,
        p.receiver,
        p.peer,
        p.ilp_address,
        p.shared_secret,
        p.estimated_rate,
        p.minimum_rate,
        p.max_packet_amount,
        p.source_amount,
        p.created_at
    ])?;
    Ok(())
}

pub fn plan(conn: &Connection, id: &str) -> Result<Option<StreamPlanRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id, receiver, peer, ilp_address, shared_secret, estimated_rate, minimum_rate, \
             max_packet_amount, source_amount, created_at FROM stream_plans WHERE id = ?1",
        )?
        .query_row([id], |r| {
            Ok(StreamPlanRow {
                id: r.get(0)?,
                receiver: r.get(1)?,
                peer: r.get(2)?,
                ilp_address: r.get(3)?,
                shared_secret: r.get(4)?,
                estimated_rate: r.get(5)?,
                minimum_rate: r.get(6)?,
                max_packet_amount: r.get(7)?,
                source_amount: r.get(8)?,
                created_at: r.get(9)?,
            })
        })
        .optional()?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrations::migrate(&mut conn).unwrap();
        let p = StreamPlanRow {
            id: "q1".into(),
            receiver: "http://b.test/incoming-payments/x".into(),
            peer: "b".into(),
            ilp_address: "test.b.token".into(),
            shared_secret: "c2VjcmV0".into(),
            estimated_rate: "1/1".into(),
            minimum_rate: "99/100".into(),
            max_packet_amount: Some(1000),
            source_amount: 500,
            created_at: "2026-01-01T00:00:00.000Z".into(),
        };
        insert_plan(&conn, &p).unwrap();
        assert_eq!(plan(&conn, "q1").unwrap(), Some(p));
        assert_eq!(plan(&conn, "q2").unwrap(), None);
    }
}
