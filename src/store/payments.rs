//! Rows of incoming payments, quotes and outgoing payments, and keyset pagination over them (newest first;
//! the cursor is a row id; UUIDv7 ids sort in creation order, so no OFFSET and no created_at index).

use super::db::{Connection, OptionalExtension, Row, ToSql, params};
use time::OffsetDateTime;

use super::Error;
use crate::states::{IncomingState, OutgoingState};

mod due;
pub use due::{due_outgoing, lease_outgoing, next_due, release_outgoing, renew_outgoing};

/// Which page: `first` rows after `cursor` (older), or with `backward` the `last` rows before it (newer);
/// with `search`, only rows whose id or wallet name (and, per table, client and metadata, or state, receiver,
/// failure reason and grant) contain that text, case-insensitively (the operator's `/` filter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageQuery {
    pub cursor: Option<String>,
    pub backward: bool,
    pub limit: u32,
    pub search: Option<String>,
}

/// `text` as a LIKE pattern matching it anywhere, its own `%`, `_` and `\` taken literally (`ESCAPE '\'`).
pub fn contains_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// A page, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_next: bool,
    pub has_previous: bool,
}

/// An extra list condition: SQL that may use `?5`, and the value bound to it.
pub type Condition = (&'static str, String);

/// A joined table the lookups and lists read: `from` (the table aliased `t`, with its joins), the columns
/// selected, what a search matches (SQL over `?6`, a LIKE pattern), the row mapper and the row's id (the
/// keyset cursor).
struct Source<T> {
    from: &'static str,
    cols: &'static str,
    search: &'static str,
    map: fn(&Row<'_>) -> super::db::Result<T>,
    id: fn(&T) -> &str,
}

impl<T> Source<T> {
    /// The row whose `key` column equals `value`.
    fn one(&self, conn: &Connection, key: &str, value: &str) -> Result<Option<T>, Error> {
        let sql = format!("SELECT {} FROM {} WHERE {key} = ?1", self.cols, self.from);
        Ok(conn.prepare_cached(&sql)?.query_row([value], self.map).optional()?)
    }
}

/// Keyset pagination over `src`: optionally one wallet's rows, optionally one client's, optionally an extra
/// condition.
fn page<T>(
    conn: &Connection,
    src: &Source<T>,
    wallet_id: Option<&str>,
    client: Option<&str>,
    extra: Option<Condition>,
    q: &PageQuery,
) -> Result<Page<T>, Error> {
    let Source {
        from,
        cols,
        search,
        map,
        id,
    } = *src;
    let wallet_filter = if wallet_id.is_some() {
        "t.wallet_id = ?1"
    } else {
        "CAST(?1 AS TEXT) IS NULL"
    };
    let extra_filter = extra.as_ref().map(|(sql, _)| format!(" AND {sql}")).unwrap_or_default();
    let filter =
        format!("{wallet_filter} AND (?2 IS NULL OR t.client = ?2){extra_filter} AND (?6 IS NULL OR {search})");
    let pattern = q.search.as_deref().filter(|s| !s.is_empty()).map(contains_pattern);
    let args = |cursor: Option<&str>, n: i64| -> Vec<Box<dyn ToSql + '_>> {
        vec![
            Box::new(wallet_id),
            Box::new(client),
            Box::new(cursor.map(str::to_owned)),
            Box::new(n),
            Box::new(extra.as_ref().map(|(_, value)| value.as_str())),
            Box::new(pattern.as_deref()),
        ]
    };
    let query = |sql: &str, cursor: Option<&str>, n: i64| -> Result<Vec<T>, Error> {
        let a = args(cursor, n);
        let refs: Vec<&dyn ToSql> = a.iter().map(|b| b.as_ref()).collect();
        Ok(conn
            .prepare_cached(sql)?
            .query_map(refs.as_slice(), map)?
            .collect::<Result<Vec<_>, _>>()?)
    };
    let exists = |cmp: &str, anchor: Option<&str>| -> Result<bool, Error> {
        let Some(anchor) = anchor else {
            return Ok(false);
        };
        let sql = format!("SELECT 1 FROM {from} WHERE {filter} AND t.id {cmp} ?3 LIMIT ?4");
        let a = args(Some(anchor), 1);
        let refs: Vec<&dyn ToSql> = a.iter().map(|b| b.as_ref()).collect();
        Ok(conn
            .prepare_cached(&sql)?
            .query_row(refs.as_slice(), |_| Ok(()))
            .optional()?
            .is_some())
    };
    let (cmp, order) = if q.backward { (">", "ASC") } else { ("<", "DESC") };
    // the cursor bound only when there is one: `?3 IS NULL OR t.id < ?3` would keep SQLite from seeking to
    // it, and a page deep in a million rows would walk every row before it
    let after = if q.cursor.is_some() {
        format!("t.id {cmp} ?3")
    } else {
        "CAST(?3 AS TEXT) IS NULL".to_owned()
    };
    let sql = format!("SELECT {cols} FROM {from} WHERE {filter} AND {after} ORDER BY t.id {order} LIMIT ?4");
    let limit = q.limit as usize;
    let mut items = query(&sql, q.cursor.as_deref(), i64::from(q.limit) + 1)?;
    let more = items.len() > limit;
    items.truncate(limit);
    if q.backward {
        items.reverse();
    }
    let newest = items.first().map(id).or(q.cursor.as_deref());
    let oldest = items.last().map(id).or(q.cursor.as_deref());
    let (has_next, has_previous) = if q.backward {
        (exists("<", oldest)?, more)
    } else {
        (more, exists(">", newest)?)
    };
    Ok(Page {
        items,
        has_next,
        has_previous,
    })
}

/// The incoming-payment state filter at `now`.
pub fn incoming_state_condition(state: IncomingState, now: OffsetDateTime) -> Condition {
    let sql = match state {
        IncomingState::Completed => "t.completed = 1 AND CAST(?5 AS TEXT) IS NOT NULL",
        IncomingState::Expired => "t.completed = 0 AND t.expires_at <= ?5",
        IncomingState::Pending => "t.completed = 0 AND (t.expires_at IS NULL OR t.expires_at > ?5)",
    };
    (sql, crate::clock::format_ts(now))
}

// ---- incoming payments ----

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingRow {
    pub id: crate::ids::IncomingPaymentId,
    pub wallet_id: crate::ids::WalletId,
    pub wallet_name: String,
    pub account_id: String,
    pub asset_code: String,
    pub asset_scale: u8,
    pub client: Option<String>,
    pub incoming_amount: Option<i64>,
    pub received_amount: i64,
    pub completed: bool,
    pub expires_at: Option<OffsetDateTime>,
    pub metadata: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

const INCOMING: Source<IncomingRow> = Source {
    from: "incoming_payments t JOIN wallet_addresses w ON w.id = t.wallet_id JOIN accounts a ON a.id = w.account_id",
    cols: "t.id, t.wallet_id, w.name, w.account_id, a.asset_code, a.asset_scale, t.client, \
     t.incoming_amount, t.received_amount, t.completed, t.expires_at, t.metadata, t.created_at, t.updated_at",
    search: "(t.id LIKE ?6 ESCAPE '\\' OR w.name LIKE ?6 ESCAPE '\\' OR t.client LIKE ?6 ESCAPE '\\' \
     OR t.metadata LIKE ?6 ESCAPE '\\')",
    map: incoming_from_row,
    id: |r| &r.id,
};

fn incoming_from_row(r: &Row<'_>) -> super::db::Result<IncomingRow> {
    Ok(IncomingRow {
        id: r.get(0)?,
        wallet_id: r.get(1)?,
        wallet_name: r.get(2)?,
        account_id: r.get(3)?,
        asset_code: r.get(4)?,
        asset_scale: r.get(5)?,
        client: r.get(6)?,
        incoming_amount: r.get(7)?,
        received_amount: r.get(8)?,
        completed: r.get(9)?,
        expires_at: r.get(10)?,
        metadata: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
    })
}

pub fn insert_incoming(conn: &Connection, p: &IncomingRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO incoming_payments (id, wallet_id, client, incoming_amount, received_amount, completed, \
         expires_at, metadata, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        p.id,
        p.wallet_id,
        p.client,
        p.incoming_amount,
        p.received_amount,
        p.completed,
        p.expires_at,
        p.metadata,
        p.created_at,
        p.updated_at
    ])?;
    Ok(())
}

pub fn incoming(conn: &Connection, id: &str) -> Result<Option<IncomingRow>, Error> {
    INCOMING.one(conn, "t.id", id)
}

pub fn list_incoming(
    conn: &Connection,
    wallet_id: Option<&str>,
    client: Option<&str>,
    condition: Option<Condition>,
    q: &PageQuery,
) -> Result<Page<IncomingRow>, Error> {
    page(conn, &INCOMING, wallet_id, client, condition, q)
}

/// Marks an incoming payment completed; false if it already was.
pub fn complete_incoming(conn: &Connection, id: &str, now: OffsetDateTime) -> Result<bool, Error> {
    let n = conn
        .prepare_cached("UPDATE incoming_payments SET completed = 1, updated_at = ?2 WHERE id = ?1 AND completed = 0")?
        .execute(params![id, now])?;
    Ok(n == 1)
}

// ---- quotes ----

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuoteRow {
    pub id: crate::ids::QuoteId,
    pub wallet_id: crate::ids::WalletId,
    pub wallet_name: String,
    pub asset_code: String,
    pub asset_scale: u8,
    pub client: Option<String>,
    pub receiver: String,
    pub incoming_payment_id: Option<crate::ids::IncomingPaymentId>,
    pub debit_amount: i64,
    pub receive_amount: i64,
    pub receive_asset_code: String,
    pub receive_asset_scale: u8,
    pub fee: i64,
    pub expires_at: OffsetDateTime,
    pub created_at: OffsetDateTime,
    /// A receiver on another ASE: the wallet address it pays into and that wallet's public name (migration 0025).
    pub receiver_wallet: Option<String>,
    pub receiver_public_name: Option<String>,
}

const QUOTE: Source<QuoteRow> = Source {
    from: "quotes t JOIN wallet_addresses w ON w.id = t.wallet_id JOIN accounts a ON a.id = w.account_id",
    cols: "t.id, t.wallet_id, w.name, a.asset_code, a.asset_scale, t.client, t.receiver, \
     t.incoming_payment_id, t.debit_amount, t.receive_amount, t.receive_asset_code, t.receive_asset_scale, t.fee, \
     t.expires_at, t.created_at, t.receiver_wallet, t.receiver_public_name",
    search: "(t.id LIKE ?6 ESCAPE '\\' OR w.name LIKE ?6 ESCAPE '\\' OR t.receiver LIKE ?6 ESCAPE '\\')",
    map: quote_from_row,
    id: |r| &r.id,
};

fn quote_from_row(r: &Row<'_>) -> super::db::Result<QuoteRow> {
    Ok(QuoteRow {
        id: r.get(0)?,
        wallet_id: r.get(1)?,
        wallet_name: r.get(2)?,
        asset_code: r.get(3)?,
        asset_scale: r.get(4)?,
        client: r.get(5)?,
        receiver: r.get(6)?,
        incoming_payment_id: r.get(7)?,
        debit_amount: r.get(8)?,
        receive_amount: r.get(9)?,
        receive_asset_code: r.get(10)?,
        receive_asset_scale: r.get(11)?,
        fee: r.get(12)?,
        expires_at: r.get(13)?,
        created_at: r.get(14)?,
        receiver_wallet: r.get(15)?,
        receiver_public_name: r.get(16)?,
    })
}

pub fn insert_quote(conn: &Connection, q: &QuoteRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO quotes (id, wallet_id, client, receiver, incoming_payment_id, debit_amount, receive_amount, \
         receive_asset_code, receive_asset_scale, fee, expires_at, created_at, receiver_wallet, receiver_public_name) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        q.id,
        q.wallet_id,
        q.client,
        q.receiver,
        q.incoming_payment_id,
        q.debit_amount,
        q.receive_amount,
        q.receive_asset_code,
        q.receive_asset_scale,
        q.fee,
        q.expires_at,
        q.created_at,
        q.receiver_wallet,
        q.receiver_public_name
    ])?;
    Ok(())
}

pub fn quote(conn: &Connection, id: &str) -> Result<Option<QuoteRow>, Error> {
    QUOTE.one(conn, "t.id", id)
}

pub fn list_quotes(conn: &Connection, wallet_id: Option<&str>, q: &PageQuery) -> Result<Page<QuoteRow>, Error> {
    page(conn, &QUOTE, wallet_id, None, None, q)
}

// ---- outgoing payments ----

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingRow {
    pub id: crate::ids::OutgoingPaymentId,
    pub wallet_id: crate::ids::WalletId,
    pub wallet_name: String,
    pub account_id: String,
    pub asset_code: String,
    pub asset_scale: u8,
    pub client: Option<String>,
    pub grant_id: Option<crate::ids::GrantId>,
    pub quote_id: Option<crate::ids::QuoteId>,
    pub receiver: String,
    pub incoming_payment_id: Option<crate::ids::IncomingPaymentId>,
    pub debit_amount: i64,
    pub receive_amount: i64,
    pub receive_asset_code: String,
    pub receive_asset_scale: u8,
    pub sent_amount: i64,
    pub delivered_amount: i64,
    pub state: OutgoingState,
    pub reservation_id: Option<String>,
    pub payment_account_id: Option<String>,
    pub failure_reason: Option<String>,
    pub failure_message: Option<String>,
    pub attempts: i64,
    pub next_attempt_at: Option<OffsetDateTime>,
    pub metadata: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

const OUTGOING: Source<OutgoingRow> = Source {
    from: "outgoing_payments t JOIN wallet_addresses w ON w.id = t.wallet_id JOIN accounts a ON a.id = w.account_id",
    cols: "t.id, t.wallet_id, w.name, w.account_id, a.asset_code, a.asset_scale, t.client, \
     t.grant_id, t.quote_id, t.receiver, t.incoming_payment_id, t.debit_amount, t.receive_amount, \
     t.receive_asset_code, t.receive_asset_scale, t.sent_amount, t.delivered_amount, t.state, t.reservation_id, \
     t.account_id, t.failure_reason, t.failure_message, t.attempts, t.next_attempt_at, t.metadata, t.created_at, \
     t.updated_at",
    search: "(t.id LIKE ?6 ESCAPE '\\' OR w.name LIKE ?6 ESCAPE '\\' \
     OR t.state LIKE ?6 ESCAPE '\\' OR t.receiver LIKE ?6 ESCAPE '\\' OR t.failure_reason LIKE ?6 ESCAPE '\\' \
     OR t.grant_id LIKE ?6 ESCAPE '\\')",
    map: outgoing_from_row,
    id: |r| &r.id,
};

fn outgoing_from_row(r: &Row<'_>) -> super::db::Result<OutgoingRow> {
    Ok(OutgoingRow {
        id: r.get(0)?,
        wallet_id: r.get(1)?,
        wallet_name: r.get(2)?,
        account_id: r.get(3)?,
        asset_code: r.get(4)?,
        asset_scale: r.get(5)?,
        client: r.get(6)?,
        grant_id: r.get(7)?,
        quote_id: r.get(8)?,
        receiver: r.get(9)?,
        incoming_payment_id: r.get(10)?,
        debit_amount: r.get(11)?,
        receive_amount: r.get(12)?,
        receive_asset_code: r.get(13)?,
        receive_asset_scale: r.get(14)?,
        sent_amount: r.get(15)?,
        delivered_amount: r.get(16)?,
        state: r.get(17)?,
        reservation_id: r.get(18)?,
        payment_account_id: r.get(19)?,
        failure_reason: r.get(20)?,
        failure_message: r.get(21)?,
        attempts: r.get(22)?,
        next_attempt_at: r.get(23)?,
        metadata: r.get(24)?,
        created_at: r.get(25)?,
        updated_at: r.get(26)?,
    })
}

/// Inserts a payment; `grant_window` is the start of its grant's interval window now (`""`: a grant without
/// interval; `None`: no grant), under which [`grant_spent`] counts it.
pub fn insert_outgoing(conn: &Connection, p: &OutgoingRow, grant_window: Option<&str>) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO outgoing_payments (id, wallet_id, client, grant_id, quote_id, receiver, incoming_payment_id, \
         debit_amount, receive_amount, receive_asset_code, receive_asset_scale, sent_amount, delivered_amount, \
         state, reservation_id, account_id, failure_reason, failure_message, attempts, next_attempt_at, metadata, \
         created_at, updated_at, grant_window) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, \
         ?24)",
    )?
    .execute(params![
        p.id,
        p.wallet_id,
        p.client,
        p.grant_id,
        p.quote_id,
        p.receiver,
        p.incoming_payment_id,
        p.debit_amount,
        p.receive_amount,
        p.receive_asset_code,
        p.receive_asset_scale,
        p.sent_amount,
        p.delivered_amount,
        p.state,
        p.reservation_id,
        p.payment_account_id,
        p.failure_reason,
        p.failure_message,
        p.attempts,
        p.next_attempt_at,
        p.metadata,
        p.created_at,
        p.updated_at,
        grant_window
    ])?;
    Ok(())
}

pub fn outgoing(conn: &Connection, id: &str) -> Result<Option<OutgoingRow>, Error> {
    OUTGOING.one(conn, "t.id", id)
}

/// The answer (status, body) already given to the signed create request with this signature digest.
pub fn answered_outgoing_request(conn: &Connection, digest: &[u8]) -> Result<Option<(u16, String)>, Error> {
    Ok(conn
        .prepare_cached("SELECT status, response FROM outgoing_payment_requests WHERE signature_digest = ?1")?
        .query_row(params![digest], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Remembers the answer to a signed create request (`payment_id` when it created one), and forgets requests
/// whose signature was created before `forget_before`. A request already remembered keeps its first answer.
pub fn remember_outgoing_request(
    conn: &Connection,
    digest: &[u8],
    payment_id: Option<&str>,
    status: u16,
    response: &str,
    created: i64,
    forget_before: i64,
) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM outgoing_payment_requests WHERE created < ?1")?
        .execute(params![forget_before])?;
    conn.prepare_cached(
        "INSERT INTO outgoing_payment_requests (signature_digest, outgoing_payment_id, status, response, created) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (signature_digest) DO NOTHING",
    )?
    .execute(params![digest, payment_id, status, response, created])?;
    Ok(())
}

pub fn outgoing_by_quote(conn: &Connection, quote_id: &str) -> Result<Option<OutgoingRow>, Error> {
    OUTGOING.one(conn, "t.quote_id", quote_id)
}

pub fn list_outgoing(
    conn: &Connection,
    wallet_id: Option<&str>,
    client: Option<&str>,
    state: Option<OutgoingState>,
    q: &PageQuery,
) -> Result<Page<OutgoingRow>, Error> {
    let condition = state.map(|s| ("t.state = ?5", s.as_str().to_owned()));
    page(conn, &OUTGOING, wallet_id, client, condition, q)
}

/// Amounts counted against a grant in its windows that start between `from` (inclusive) and `to`
/// (exclusive) — one interval window, or `("", "~")` for all of them — with the receive asset of its first
/// payment there: a failed or cancelled payment counts what it sent and delivered, any other what it was
/// authorised for. `None` when the grant has no payment there. The triggers of migration 0018 keep the sums
/// per window; payments from before it carry no window and are summed from their rows (created between `from`
/// and `to`).
pub fn grant_spent(
    conn: &Connection,
    grant_id: &str,
    from: &str,
    to: &str,
) -> Result<Option<(i128, i128, String, u8)>, Error> {
    let mut acc: Option<(i128, i128, String, u8)> = None;
    let mut add = |debit: i64, receive: i64, code: String, scale: u8| {
        let e = acc.get_or_insert((0, 0, code, scale));
        e.0 += i128::from(debit);
        e.1 += i128::from(receive);
    };
    let mut before = conn.prepare_cached(
        "SELECT CASE WHEN state IN ('failed', 'cancelled') THEN sent_amount ELSE debit_amount END, \
         CASE WHEN state IN ('failed', 'cancelled') THEN delivered_amount ELSE receive_amount END, \
         receive_asset_code, receive_asset_scale FROM outgoing_payments \
         WHERE grant_id = ?1 AND grant_window IS NULL AND created_at >= ?2 AND created_at < ?3 ORDER BY created_at",
    )?;
    before.for_each_row(params![grant_id, from, to], |r| {
        add(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        Ok(())
    })?;
    let mut windows = conn.prepare_cached(
        "SELECT debit, receive, receive_asset_code, receive_asset_scale FROM grant_spent \
         WHERE grant_id = ?1 AND window_start >= ?2 AND window_start < ?3 ORDER BY window_start",
    )?;
    windows.for_each_row(params![grant_id, from, to], |r| {
        add(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        Ok(())
    })?;
    Ok(acc)
}

/// Records progress: what was sent and delivered, and when to work on the payment next.
pub fn update_progress(
    conn: &Connection,
    id: &str,
    sent: i64,
    delivered: i64,
    next_attempt_at: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE outgoing_payments SET sent_amount = ?2, delivered_amount = ?3, next_attempt_at = ?4, \
             updated_at = ?5 WHERE id = ?1 AND state = 'sending'",
        )?
        .execute(params![id, sent, delivered, next_attempt_at, now])?;
    Ok(n == 1)
}

/// Moves a payment from `from` to `to`, recording (or clearing) a failure.
pub fn set_state(
    conn: &Connection,
    id: &str,
    from: OutgoingState,
    to: OutgoingState,
    failure: Option<(&str, &str)>,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE outgoing_payments SET state = ?3, failure_reason = ?4, failure_message = ?5, \
             next_attempt_at = CASE WHEN ?3 = 'sending' THEN ?6 ELSE NULL END, updated_at = ?6 \
             WHERE id = ?1 AND state = ?2",
        )?
        .execute(params![id, from, to, failure.map(|f| f.0), failure.map(|f| f.1), now])?;
    Ok(n == 1)
}

/// A retry after a transient failure: one more attempt, not before `next`.
pub fn schedule_retry(
    conn: &Connection,
    id: &str,
    next: OffsetDateTime,
    message: &str,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE outgoing_payments SET attempts = attempts + 1, next_attempt_at = ?2, failure_message = ?3, \
             updated_at = ?4 WHERE id = ?1 AND state = 'sending'",
        )?
        .execute(params![id, next, message, now])?;
    Ok(n == 1)
}

/// A sending payment waits (no attempt counted) until `next`, with `reason` and `message` telling why.
pub fn wait(
    conn: &Connection,
    id: &str,
    next: OffsetDateTime,
    reason: &str,
    message: &str,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE outgoing_payments SET next_attempt_at = ?2, failure_reason = ?3, failure_message = ?4, \
             updated_at = ?5 WHERE id = ?1 AND state = 'sending'",
        )?
        .execute(params![id, next, reason, message, now])?;
    Ok(n == 1)
}

/// A sending payment that waited for `reason` goes on: the reason and its message are cleared.
pub fn end_wait(conn: &Connection, id: &str, reason: &str, now: OffsetDateTime) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE outgoing_payments SET failure_reason = NULL, failure_message = NULL, updated_at = ?3 \
             WHERE id = ?1 AND state = 'sending' AND failure_reason = ?2",
        )?
        .execute(params![id, reason, now])?;
    Ok(n == 1)
}

/// Every sending payment waiting for `reason` is due at `now`; returns how many.
pub fn wake_waiting(conn: &Connection, reason: &str, now: OffsetDateTime) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE outgoing_payments SET next_attempt_at = ?2 \
             WHERE state = 'sending' AND failure_reason = ?1 AND next_attempt_at > ?2",
        )?
        .execute(params![reason, now])?)
}

/// A new attempt at a failed payment with a fresh reservation.
pub fn restart(
    conn: &Connection,
    id: &str,
    reservation_id: &str,
    account_id: &str,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE outgoing_payments SET state = 'sending', reservation_id = ?2, account_id = ?3, \
             failure_reason = NULL, failure_message = NULL, attempts = attempts + 1, next_attempt_at = ?4, \
             updated_at = ?4 WHERE id = ?1 AND state = 'failed'",
        )?
        .execute(params![id, reservation_id, account_id, now])?;
    Ok(n == 1)
}

/// Credits an incoming payment; completes it when `complete`.
pub fn credit_incoming(
    conn: &Connection,
    id: &str,
    received: i64,
    complete: bool,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE incoming_payments SET received_amount = ?2, completed = CASE WHEN ?3 THEN 1 ELSE completed END, \
             updated_at = ?4 WHERE id = ?1 AND completed = 0",
        )?
        .execute(params![id, received, complete, now])?;
    Ok(n == 1)
}

/// Open incoming payments past their expiry that were not announced yet; marks them announced.
pub fn announce_expired(conn: &Connection, now: OffsetDateTime, limit: u32) -> Result<Vec<String>, Error> {
    let mut stmt = conn.prepare_cached(
        "UPDATE incoming_payments SET expiry_announced = 1 WHERE id IN (SELECT id FROM incoming_payments \
         WHERE completed = 0 AND expiry_announced = 0 AND expires_at <= ?1 LIMIT ?2) RETURNING id",
    )?;
    let rows = stmt
        .query_map(params![now, limit], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(rows)
}

/// Open (pending, unexpired) incoming payments.
pub fn count_open_incoming(conn: &Connection, now: OffsetDateTime) -> Result<usize, Error> {
    // waiting (neither completed nor announced expired, kept by triggers: `migrations/0014`) less those whose
    // expiry passed but is not announced yet (a short range of `incoming_open_by_expiry`)
    let n: i64 = conn
        .prepare_cached(
            "SELECT (SELECT n FROM row_counts WHERE key = 'incoming:waiting') \
             + (SELECT COALESCE(SUM(d), 0) FROM row_count_deltas WHERE key = 'incoming:waiting') \
             - (SELECT COUNT(*) FROM incoming_payments WHERE completed = 0 AND expiry_announced = 0 \
             AND expires_at <= ?1)",
        )?
        .query_row([now], |r| r.get::<_, Option<i64>>(0))?
        .unwrap_or(0);
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Outgoing payments in `state` (a counter kept by triggers: `migrations/0014`).
pub fn count_outgoing(conn: &Connection, state: OutgoingState) -> Result<usize, Error> {
    counted(conn, &format!("outgoing:{}", state.as_str()))
}

/// The counter `key` of `row_counts` (kept by triggers: `migrations/0014`) with the changes not folded into it
/// yet (`migrations/0016`); 0 when absent.
pub fn counted(conn: &Connection, key: &str) -> Result<usize, Error> {
    let n: Option<i64> = conn
        .prepare_cached(
            "SELECT n + (SELECT COALESCE(SUM(d), 0) FROM row_count_deltas WHERE key = ?1) FROM row_counts \
             WHERE key = ?1",
        )?
        .query_row([key], |r| r.get(0))
        .optional()?;
    Ok(usize::try_from(n.unwrap_or(0)).unwrap_or(0))
}

/// Folds the counters' pending changes into `row_counts` (PostgreSQL, where the triggers append them:
/// `migrations/pg/0016`); how many were folded. Nothing to do on SQLite.
pub fn fold_counts(conn: &Connection) -> Result<usize, Error> {
    if !conn.is_postgres() {
        return Ok(0);
    }
    Ok(conn
        .prepare_cached(
            "WITH moved AS (DELETE FROM row_count_deltas RETURNING key, d) \
             INSERT INTO row_counts (key, n) SELECT key, SUM(d) FROM moved GROUP BY key \
             ON CONFLICT (key) DO UPDATE SET n = row_counts.n + excluded.n",
        )?
        .execute([])?)
}

/// What STREAM connection `connection` has paid into incoming payment `id` (see `migrations/0006`).
pub fn connection_received(conn: &Connection, id: &str, connection: &str) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached("SELECT received FROM stream_receipts WHERE incoming_payment_id = ?1 AND connection_id = ?2")?
        .query_row(params![id, connection], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Adds `amount` to what `connection` has paid into `id`; returns the new total.
pub fn add_connection_received(
    conn: &Connection,
    id: &str,
    connection: &str,
    amount: i64,
    now: OffsetDateTime,
) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO stream_receipts (incoming_payment_id, connection_id, received, updated_at) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT (incoming_payment_id, connection_id) \
             DO UPDATE SET received = stream_receipts.received + excluded.received, updated_at = excluded.updated_at \
             RETURNING received",
        )?
        .query_row(params![id, connection, amount, now], |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::migrations::migrate(&mut c).unwrap();
        // the payments alone: no wallets, accounts, grants or transfers behind them
        c.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        c
    }

    fn payment(id: &str, created_at: &str, debit: i64, receive: i64) -> OutgoingRow {
        OutgoingRow {
            id: id.into(),
            wallet_id: "w".into(),
            wallet_name: "alice".into(),
            account_id: "a".into(),
            asset_code: "USD".into(),
            asset_scale: 2,
            client: None,
            grant_id: Some("g".into()),
            quote_id: None,
            receiver: format!("http://x/incoming-payments/{id}"),
            incoming_payment_id: None,
            debit_amount: debit,
            receive_amount: receive,
            receive_asset_code: "EUR".into(),
            receive_asset_scale: 2,
            sent_amount: 0,
            delivered_amount: 0,
            state: OutgoingState::Sending,
            reservation_id: None,
            payment_account_id: None,
            failure_reason: None,
            failure_message: None,
            attempts: 0,
            next_attempt_at: None,
            metadata: None,
            created_at: crate::clock::ts(created_at),
            updated_at: crate::clock::ts(created_at),
        }
    }

    /// What a grant spent, from the payment rows themselves (what `grant_spent` computed before migration 0018).
    fn scanned(c: &Connection, from: &str, to: &str) -> (i128, i128) {
        let mut out = (0, 0);
        c.prepare(
            "SELECT CASE WHEN state IN ('failed', 'cancelled') THEN sent_amount ELSE debit_amount END, \
             CASE WHEN state IN ('failed', 'cancelled') THEN delivered_amount ELSE receive_amount END \
             FROM outgoing_payments WHERE grant_id = 'g' AND created_at >= ?1 AND created_at < ?2",
        )
        .unwrap()
        .for_each_row(params![from, to], |r| {
            out.0 += i128::from(r.get::<_, i64>(0)?);
            out.1 += i128::from(r.get::<_, i64>(1)?);
            Ok(())
        })
        .unwrap();
        out
    }

    const DAY1: &str = "2026-01-01T00:00:00.000Z";
    const DAY2: &str = "2026-01-02T00:00:00.000Z";
    const DAY3: &str = "2026-01-03T00:00:00.000Z";

    /// The per-window sums kept by the triggers equal the rows through every transition that changes what a
    /// payment counts (fail with a partial send, retry, progress, cancel, delete), and rows from before the
    /// migration (no window) are still counted.
    #[test]
    fn grant_spent_sums_follow_every_transition_and_count_rows_without_a_window() {
        let c = db();
        let at = |day: &str, s: u32| format!("{}:{s:02}.000Z", &day[..16]);
        // from before migration 0018: no window
        insert_outgoing(&c, &payment("p0", &at(DAY1, 1), 7, 6), None).unwrap();
        insert_outgoing(&c, &payment("p1", &at(DAY1, 2), 100, 90), Some(DAY1)).unwrap();
        insert_outgoing(&c, &payment("p2", &at(DAY1, 3), 200, 180), Some(DAY1)).unwrap();
        insert_outgoing(&c, &payment("p3", &at(DAY2, 1), 300, 270), Some(DAY2)).unwrap();
        let mut failed_at_create = payment("p4", &at(DAY2, 2), 50, 45);
        failed_at_create.state = OutgoingState::Failed;
        insert_outgoing(&c, &failed_at_create, Some(DAY2)).unwrap();
        let check = |c: &Connection| {
            for (from, to) in [(DAY1, DAY2), (DAY2, DAY3), ("", "~")] {
                let (d, r, code, scale) = grant_spent(c, "g", from, to).unwrap().unwrap();
                assert_eq!((d, r), scanned(c, from, to), "window {from}..{to}");
                assert_eq!((code.as_str(), scale), ("EUR", 2));
            }
        };
        check(&c);
        assert_eq!(grant_spent(&c, "g", DAY1, DAY2).unwrap().unwrap().0, 307);
        // progress while sending changes nothing counted; failing after a partial send counts what was sent
        update_progress(&c, "p2", 60, 54, None, crate::clock::ts(DAY1)).unwrap();
        check(&c);
        set_state(
            &c,
            "p2",
            OutgoingState::Sending,
            OutgoingState::Failed,
            Some(("x", "y")),
            crate::clock::ts(DAY1),
        )
        .unwrap();
        check(&c);
        assert_eq!(grant_spent(&c, "g", DAY1, DAY2).unwrap().unwrap().0, 7 + 100 + 60);
        // a retry counts the whole payment again
        assert!(restart(&c, "p2", "r2", "acc2", crate::clock::ts(DAY1)).unwrap());
        check(&c);
        assert_eq!(grant_spent(&c, "g", DAY1, DAY2).unwrap().unwrap().0, 307);
        set_state(
            &c,
            "p3",
            OutgoingState::Sending,
            OutgoingState::Cancelled,
            None,
            crate::clock::ts(DAY2),
        )
        .unwrap();
        set_state(
            &c,
            "p1",
            OutgoingState::Sending,
            OutgoingState::Completed,
            None,
            crate::clock::ts(DAY1),
        )
        .unwrap();
        check(&c);
        c.execute("DELETE FROM outgoing_payments WHERE id = 'p1'", []).unwrap();
        check(&c);
        // another grant, and a window without payments
        assert_eq!(grant_spent(&c, "other", "", "~").unwrap(), None);
        assert_eq!(grant_spent(&c, "g", DAY3, "2026-01-04").unwrap(), None);
    }
}
