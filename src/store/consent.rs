//! Rows of the owner's consent (see `migrations/0022`): a wallet owner's passphrase hash, the interaction page's
//! sessions (a browser bound to one grant, signed in or not) and failed sign-ins; and the quote a grant
//! request is for, which the consent words read ([`quote_for`]).

use time::OffsetDateTime;

use super::db::{Connection, OptionalExtension, params};

use super::Error;

/// The Argon2id hash of `wallet_id`'s owner passphrase, if it has one.
pub fn passphrase(conn: &Connection, wallet_id: &str) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT hash FROM owner_passphrases WHERE wallet_id = ?1")?
        .query_row([wallet_id], |r| r.get(0))
        .optional()?)
}

/// Sets (`Some`) or removes (`None`) `wallet_id`'s owner passphrase hash; true when something changed.
pub fn set_passphrase(
    conn: &Connection,
    wallet_id: &str,
    hash: Option<&str>,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = match hash {
        Some(h) => conn
            .prepare_cached(
                "INSERT INTO owner_passphrases (wallet_id, hash, set_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (wallet_id) DO UPDATE SET hash = excluded.hash, set_at = excluded.set_at",
            )?
            .execute(params![wallet_id, h, now])?,
        None => conn
            .prepare_cached("DELETE FROM owner_passphrases WHERE wallet_id = ?1")?
            .execute([wallet_id])?,
    };
    Ok(n > 0)
}

/// The names of the wallets whose owners have a passphrase.
pub fn wallets_with_passphrase(conn: &Connection) -> Result<Vec<String>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT w.name FROM owner_passphrases o JOIN wallet_addresses w ON w.id = o.wallet_id ORDER BY w.name",
    )?;
    let names = stmt.query_map([], |r| r.get(0))?.collect::<Result<Vec<_>, _>>()?;
    Ok(names)
}

/// The quote an outgoing-payment grant is for, as the consent words read it: what it debits, what the payee
/// receives, and the payee: its wallet's name (when the incoming payment is one of ours) and public name (of
/// ours, or as the other ASE's wallet address document showed it when the quote was made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotedFor {
    pub receiver: String,
    pub debit_amount: i64,
    pub receive_amount: i64,
    pub receive_asset_code: String,
    pub receive_asset_scale: u8,
    pub payee_name: Option<String>,
    pub payee_public_name: Option<String>,
}

/// The newest quote of `wallet_id` to `receiver` (any receiver when `None`) debiting `debit` (any amount when
/// `None`).
pub fn quote_for(
    conn: &Connection,
    wallet_id: &str,
    receiver: Option<&str>,
    debit: Option<i64>,
) -> Result<Option<QuotedFor>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT q.receiver, q.debit_amount, q.receive_amount, q.receive_asset_code, q.receive_asset_scale, \
             w.name, COALESCE(w.public_name, q.receiver_public_name) FROM quotes q \
             LEFT JOIN incoming_payments i ON i.id = q.incoming_payment_id \
             LEFT JOIN wallet_addresses w ON w.id = i.wallet_id \
             WHERE q.wallet_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR q.receiver = ?2) \
             AND (CAST(?3 AS BIGINT) IS NULL OR q.debit_amount = ?3) ORDER BY q.id DESC LIMIT 1",
        )?
        .query_row(params![wallet_id, receiver, debit], |r| {
            Ok(QuotedFor {
                receiver: r.get(0)?,
                debit_amount: r.get(1)?,
                receive_amount: r.get(2)?,
                receive_asset_code: r.get(3)?,
                receive_asset_scale: r.get(4)?,
                payee_name: r.get(5)?,
                payee_public_name: r.get(6)?,
            })
        })
        .optional()?)
}

/// A browser's visit to a grant's interaction page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub grant_id: String,
    pub csrf: String,
    /// The wallet whose owner signed in (none: not signed in).
    pub wallet_id: Option<String>,
    pub expires_at: OffsetDateTime,
}

/// Opens a session for `grant_id`, known by `token_hash`.
pub fn open(
    conn: &Connection,
    token_hash: &str,
    grant_id: &str,
    csrf: &str,
    now: OffsetDateTime,
    expires_at: OffsetDateTime,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO consent_sessions (token_hash, grant_id, csrf, wallet_id, created_at, expires_at) \
         VALUES (?1, ?2, ?3, NULL, ?4, ?5)",
    )?
    .execute(params![token_hash, grant_id, csrf, now, expires_at])?;
    Ok(())
}

/// The session known by `token_hash`, unless it expired before `now`.
pub fn session(conn: &Connection, token_hash: &str, now: OffsetDateTime) -> Result<Option<Session>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT grant_id, csrf, wallet_id, expires_at FROM consent_sessions \
             WHERE token_hash = ?1 AND expires_at > ?2",
        )?
        .query_row(params![token_hash, now], |r| {
            Ok(Session {
                grant_id: r.get(0)?,
                csrf: r.get(1)?,
                wallet_id: r.get(2)?,
                expires_at: r.get(3)?,
            })
        })
        .optional()?)
}

/// Signs session `old` in as `wallet_id`'s owner under a new token (`new`) and CSRF token: the token a browser
/// had before signing in never counts as signed in.
pub fn sign_in(conn: &Connection, old: &str, new: &str, csrf: &str, wallet_id: &str) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("UPDATE consent_sessions SET token_hash = ?2, csrf = ?3, wallet_id = ?4 WHERE token_hash = ?1")?
        .execute(params![old, new, csrf, wallet_id])?
        > 0)
}

/// Ends every session of `grant_id` (it was decided).
pub fn close_grant(conn: &Connection, grant_id: &str) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM consent_sessions WHERE grant_id = ?1")?
        .execute([grant_id])?)
}

/// Records a failed sign-in for `wallet_id`'s owner on `grant_id`'s page.
pub fn fail(conn: &Connection, id: &str, wallet_id: &str, grant_id: &str, at: OffsetDateTime) -> Result<(), Error> {
    conn.prepare_cached("INSERT INTO consent_failures (id, wallet_id, grant_id, at) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![id, wallet_id, grant_id, at])?;
    Ok(())
}

/// Forgets the attempt `id` (recorded as failed until its passphrase checked out).
pub fn forget_failure(conn: &Connection, id: &str) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM consent_failures WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Failed sign-ins: on `grant_id`'s page since `grant_since`, and for `wallet_id`'s owner on any page since
/// `since`.
pub fn failures(
    conn: &Connection,
    grant_id: &str,
    wallet_id: &str,
    grant_since: OffsetDateTime,
    since: OffsetDateTime,
) -> Result<(u32, u32), Error> {
    let count = |sql: &str, key: &str, since: OffsetDateTime| -> Result<u32, Error> {
        let n: i64 = conn.prepare_cached(sql)?.query_row(params![key, since], |r| r.get(0))?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    };
    Ok((
        count(
            "SELECT COUNT(*) FROM consent_failures WHERE grant_id = ?1 AND at >= ?2",
            grant_id,
            grant_since,
        )?,
        count(
            "SELECT COUNT(*) FROM consent_failures WHERE wallet_id = ?1 AND at >= ?2",
            wallet_id,
            since,
        )?,
    ))
}

/// Forgets the failed sign-ins on `grant_id`'s page, or (with `None`) those of `wallet_id`'s owner; how many.
pub fn unlock(conn: &Connection, grant_id: Option<&str>, wallet_id: Option<&str>) -> Result<usize, Error> {
    Ok(match (grant_id, wallet_id) {
        (Some(g), _) => conn
            .prepare_cached("DELETE FROM consent_failures WHERE grant_id = ?1")?
            .execute([g])?,
        (None, Some(w)) => conn
            .prepare_cached("DELETE FROM consent_failures WHERE wallet_id = ?1")?
            .execute([w])?,
        (None, None) => 0,
    })
}

/// Deletes up to `limit` sessions that expired before `now` and failures older than `before`.
pub fn prune(conn: &Connection, now: OffsetDateTime, before: OffsetDateTime, limit: u32) -> Result<usize, Error> {
    let sessions = conn
        .prepare_cached(
            "DELETE FROM consent_sessions WHERE token_hash IN \
             (SELECT token_hash FROM consent_sessions WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)",
        )?
        .execute(params![now, limit])?;
    let failures = conn
        .prepare_cached(
            "DELETE FROM consent_failures WHERE id IN \
             (SELECT id FROM consent_failures WHERE at < ?1 ORDER BY at LIMIT ?2)",
        )?
        .execute(params![before, limit])?;
    Ok(sessions + failures)
}
