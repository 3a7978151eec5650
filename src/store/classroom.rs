//! What a class (`opdesk workshop --seats N`) has done, read from the rows its flow leaves: per seat wallet
//! (`seat…`), the first time and how often each step of the flow happened on this ASE. One read; the Classroom
//! pane polls it while it shows.

use time::OffsetDateTime;

use super::{Error, db::Connection};

/// One step of one wallet's flow, as this ASE's rows show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRow {
    /// The wallet's name for payments and quotes; the client's wallet address URL for grants.
    pub who: String,
    /// `incoming`, `quote`, `grant`, `approval`, `paid`; or `open`: its interactive grants still undecided
    /// (`first_at` the newest one's creation); or `sign_in_failures`: failed owner sign-ins on its undecided grants.
    pub step: String,
    pub first_at: OffsetDateTime,
    pub count: i64,
    /// Of `approval`: how many of the approvals the wallet's owner gave on the interaction page.
    pub by_owner: i64,
}

/// Every step a `seat…` wallet (or a `seat…` client) took on this ASE: incoming payments created for it,
/// quotes and completed outgoing payments from it, interactive grants its client asked for and the approvals.
pub fn steps(conn: &Connection) -> Result<Vec<StepRow>, Error> {
    const SQL: &str = "\
        SELECT w.name, 'incoming', MIN(p.created_at), COUNT(*), CAST(0 AS BIGINT) FROM incoming_payments p \
            JOIN wallet_addresses w ON w.id = p.wallet_id WHERE w.name LIKE 'seat%' GROUP BY w.name \
        UNION ALL \
        SELECT w.name, 'quote', MIN(q.created_at), COUNT(*), CAST(0 AS BIGINT) FROM quotes q \
            JOIN wallet_addresses w ON w.id = q.wallet_id WHERE w.name LIKE 'seat%' GROUP BY w.name \
        UNION ALL \
        SELECT w.name, 'paid', MIN(o.updated_at), COUNT(*), CAST(0 AS BIGINT) FROM outgoing_payments o \
            JOIN wallet_addresses w ON w.id = o.wallet_id \
            WHERE w.name LIKE 'seat%' AND o.state = 'completed' GROUP BY w.name \
        UNION ALL \
        SELECT g.client, 'grant', MIN(g.created_at), COUNT(*), CAST(0 AS BIGINT) FROM grants g \
            WHERE g.interactive = 1 AND g.client LIKE '%/seat%' GROUP BY g.client \
        UNION ALL \
        SELECT g.client, 'open', MAX(g.created_at), COUNT(*), CAST(0 AS BIGINT) FROM grants g \
            WHERE g.interactive = 1 AND g.state = 'pending' AND g.client LIKE '%/seat%' GROUP BY g.client \
        UNION ALL \
        SELECT w.name, 'sign_in_failures', MAX(f.at), COUNT(*), CAST(0 AS BIGINT) FROM consent_failures f \
            JOIN wallet_addresses w ON w.id = f.wallet_id JOIN grants g ON g.id = f.grant_id \
            WHERE g.state = 'pending' AND w.name LIKE 'seat%' GROUP BY w.name \
        UNION ALL \
        SELECT g.client, 'approval', MIN(s.at), COUNT(*), SUM(CASE WHEN s.actor = 'owner' THEN 1 ELSE 0 END) FROM grant_steps s \
            JOIN grants g ON g.id = s.grant_id \
            WHERE s.kind = 'decided' AND s.detail LIKE '%\"outcome\":\"approved\"%' AND g.client LIKE '%/seat%' \
            GROUP BY g.client";
    let mut stmt = conn.prepare_cached(SQL)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(StepRow {
                who: r.get(0)?,
                step: r.get(1)?,
                first_at: r.get(2)?,
                count: r.get(3)?,
                by_owner: r.get(4)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
