//! Rows of `stream_plans`: how to pay a receiver on another ASE by STREAM (see `migrations/0004`).

use super::db::{Connection, OptionalExtension, params};
use time::OffsetDateTime;

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
    /// In the peer's asset (the debit asset unless `link` says otherwise).
    pub source_amount: i64,
    pub created_at: OffsetDateTime,
    /// A cross-currency link through a peer in another asset (see `migrations/0009`).
    pub link: Option<PlanLink>,
    /// Quoted fixed-send: the payment sends its whole source, the receiver gets what it buys (`0024`).
    pub fixed_send: bool,
}

/// The ASE's own conversion from the debit asset into the peer's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanLink {
    pub asset_code: String,
    pub asset_scale: u8,
    /// Peer minor units per debit minor unit, "num/den".
    pub rate: String,
    /// The debit units the plan's source stands for.
    pub debit_source: i64,
    /// Sent so far, in the peer's asset.
    pub sent: i64,
}

pub fn insert_plan(conn: &Connection, p: &StreamPlanRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO stream_plans (id, receiver, peer, ilp_address, shared_secret, estimated_rate, minimum_rate, \
         max_packet_amount, source_amount, created_at, link_asset_code, link_asset_scale, link_rate, \
         link_debit_source, fixed_send) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
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
        p.created_at,
        p.link.as_ref().map(|l| &l.asset_code),
        p.link.as_ref().map(|l| l.asset_scale),
        p.link.as_ref().map(|l| &l.rate),
        p.link.as_ref().map(|l| l.debit_source),
        i64::from(p.fixed_send),
    ])?;
    Ok(())
}

/// Sets what the payment of a cross-currency plan has sent in the peer's asset.
pub fn set_link_sent(conn: &Connection, id: &str, sent: i64) -> Result<(), Error> {
    conn.prepare_cached("UPDATE stream_plans SET link_sent = ?2 WHERE id = ?1 AND link_rate IS NOT NULL")?
        .execute(params![id, sent])?;
    Ok(())
}

pub fn plan(conn: &Connection, id: &str) -> Result<Option<StreamPlanRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id, receiver, peer, ilp_address, shared_secret, estimated_rate, minimum_rate, \
             max_packet_amount, source_amount, created_at, link_asset_code, link_asset_scale, link_rate, \
             link_debit_source, link_sent, fixed_send FROM stream_plans WHERE id = ?1",
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
                link: match (
                    r.get::<_, Option<String>>(10)?,
                    r.get::<_, Option<u8>>(11)?,
                    r.get::<_, Option<String>>(12)?,
                    r.get::<_, Option<i64>>(13)?,
                ) {
                    (Some(asset_code), Some(asset_scale), Some(rate), Some(debit_source)) => Some(PlanLink {
                        asset_code,
                        asset_scale,
                        rate,
                        debit_source,
                        sent: r.get(14)?,
                    }),
                    _ => None,
                },
                fixed_send: r.get::<_, i64>(15)? == 1,
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
            created_at: crate::clock::ts("2026-01-01T00:00:00.000Z"),
            link: None,
            fixed_send: false,
        };
        insert_plan(&conn, &p).unwrap();
        assert_eq!(plan(&conn, "q1").unwrap(), Some(p.clone()));
        assert_eq!(plan(&conn, "q2").unwrap(), None);
        let mut linked = StreamPlanRow {
            id: "q3".into(),
            fixed_send: true,
            link: Some(PlanLink {
                asset_code: "EUR".into(),
                asset_scale: 2,
                rate: "9/10".into(),
                debit_source: 556,
                sent: 0,
            }),
            ..p
        };
        insert_plan(&conn, &linked).unwrap();
        set_link_sent(&conn, "q3", 120).unwrap();
        set_link_sent(&conn, "q1", 120).unwrap();
        if let Some(l) = linked.link.as_mut() {
            l.sent = 120;
        }
        assert_eq!(plan(&conn, "q3").unwrap(), Some(linked));
        assert_eq!(
            plan(&conn, "q1").unwrap().unwrap().link,
            None,
            "only linked plans count peer units"
        );
    }
}
