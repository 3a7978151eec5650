//! GNAP grant and access-token rows. State transitions are guarded in SQL (`WHERE state = ?`) so concurrent
//! continues, decisions and rotations stay exactly-once; callers check the rows affected.

use super::db::{Connection, OptionalExtension, Row, params};
use time::OffsetDateTime;

use super::Error;
use crate::states::GrantState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRow {
    pub id: crate::ids::GrantId,
    pub state: GrantState,
    pub client: Option<String>,
    pub client_jwk: Option<String>,
    pub access: String,
    pub subject: Option<String>,
    pub interactive: bool,
    pub finish_uri: Option<String>,
    pub client_nonce: Option<String>,
    pub interact_id: Option<String>,
    pub interact_nonce: Option<String>,
    pub as_finish_nonce: Option<String>,
    pub interact_ref: Option<String>,
    pub grant_endpoint: String,
    pub continue_id: String,
    pub continue_token_hash: String,
    pub wait_secs: i64,
    pub last_continued_at: OffsetDateTime,
    pub decision_reason: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    /// The client wallet's `publicName` when it is on another ASE, as its document showed it at the request.
    pub client_public_name: Option<String>,
}

const GRANT_COLS: &str = "id, state, client, client_jwk, access, subject, interactive, finish_uri, client_nonce, \
     interact_id, interact_nonce, as_finish_nonce, interact_ref, grant_endpoint, continue_id, continue_token_hash, \
     wait_secs, last_continued_at, decision_reason, created_at, updated_at, client_public_name";

fn grant_from_row(r: &Row<'_>) -> super::db::Result<GrantRow> {
    Ok(GrantRow {
        id: r.get(0)?,
        state: r.get(1)?,
        client: r.get(2)?,
        client_jwk: r.get(3)?,
        access: r.get(4)?,
        subject: r.get(5)?,
        interactive: r.get(6)?,
        finish_uri: r.get(7)?,
        client_nonce: r.get(8)?,
        interact_id: r.get(9)?,
        interact_nonce: r.get(10)?,
        as_finish_nonce: r.get(11)?,
        interact_ref: r.get(12)?,
        grant_endpoint: r.get(13)?,
        continue_id: r.get(14)?,
        continue_token_hash: r.get(15)?,
        wait_secs: r.get(16)?,
        last_continued_at: r.get(17)?,
        decision_reason: r.get(18)?,
        created_at: r.get(19)?,
        updated_at: r.get(20)?,
        client_public_name: r.get(21)?,
    })
}

pub fn insert_grant(conn: &Connection, g: &GrantRow) -> Result<(), Error> {
    let sql = format!(
        "INSERT INTO grants ({GRANT_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, \
         ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"
    );
    conn.prepare_cached(&sql)?.execute(params![
        g.id,
        g.state,
        g.client,
        g.client_jwk,
        g.access,
        g.subject,
        g.interactive,
        g.finish_uri,
        g.client_nonce,
        g.interact_id,
        g.interact_nonce,
        g.as_finish_nonce,
        g.interact_ref,
        g.grant_endpoint,
        g.continue_id,
        g.continue_token_hash,
        g.wait_secs,
        g.last_continued_at,
        g.decision_reason,
        g.created_at,
        g.updated_at,
        g.client_public_name
    ])?;
    Ok(())
}

fn grant_where(conn: &Connection, column: &str, value: &str) -> Result<Option<GrantRow>, Error> {
    let sql = format!("SELECT {GRANT_COLS} FROM grants WHERE {column} = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([value], grant_from_row)
        .optional()?)
}

pub fn grant(conn: &Connection, id: &str) -> Result<Option<GrantRow>, Error> {
    grant_where(conn, "id", id)
}

pub fn grant_by_continue_id(conn: &Connection, continue_id: &str) -> Result<Option<GrantRow>, Error> {
    grant_where(conn, "continue_id", continue_id)
}

pub fn grant_by_interact_id(conn: &Connection, interact_id: &str) -> Result<Option<GrantRow>, Error> {
    grant_where(conn, "interact_id", interact_id)
}

/// Grants newest first, optionally only those in `state`, at most `limit`; with `open_only`, none stored as
/// closed (revoked, rejected; see [`GrantState::is_closed`]).
pub fn grants(
    conn: &Connection,
    state: Option<GrantState>,
    open_only: bool,
    limit: u32,
) -> Result<Vec<GrantRow>, Error> {
    let sql = format!(
        "SELECT {GRANT_COLS} FROM grants WHERE (?1 IS NULL OR state = ?1) AND (?3 = 0 OR state NOT IN (?4, ?5)) \
         ORDER BY id DESC LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(
            params![state, limit, open_only, GrantState::Revoked, GrantState::Rejected],
            grant_from_row,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Moves a grant from `from` to `to`; returns whether it was in `from`.
pub fn transition(
    conn: &Connection,
    id: &str,
    from: &[GrantState],
    to: GrantState,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let placeholders = (0..from.len())
        .map(|i| format!("?{}", i + 4))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!("UPDATE grants SET state = ?2, updated_at = ?3 WHERE id = ?1 AND state IN ({placeholders})");
    let mut values: Vec<&dyn super::db::ToSql> = vec![&id, &to, &now];
    for f in from {
        values.push(f);
    }
    let n = conn.prepare_cached(&sql)?.execute(values.as_slice())?;
    Ok(n == 1)
}

/// Records the resource owner's decision on a pending grant.
pub fn decide(
    conn: &Connection,
    id: &str,
    to: GrantState,
    interact_ref: Option<&str>,
    reason: Option<&str>,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let n = conn
        .prepare_cached(
            "UPDATE grants SET state = ?2, interact_ref = ?3, decision_reason = ?4, updated_at = ?5 \
             WHERE id = ?1 AND state = 'pending'",
        )?
        .execute(params![id, to, interact_ref, reason, now])?;
    Ok(n == 1)
}

pub fn touch_continued(conn: &Connection, id: &str, now: OffsetDateTime) -> Result<(), Error> {
    conn.prepare_cached("UPDATE grants SET last_continued_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])?;
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub id: String,
    pub grant_id: crate::ids::GrantId,
    pub value_hash: String,
    pub value_hint: String,
    pub manage_id: String,
    pub expires_in: i64,
    pub created_at: OffsetDateTime,
    pub revoked_at: Option<OffsetDateTime>,
    pub rotated_from: Option<String>,
}

const TOKEN_COLS: &str =
    "id, grant_id, value_hash, value_hint, manage_id, expires_in, created_at, revoked_at, rotated_from";

fn token_from_row(r: &Row<'_>) -> super::db::Result<TokenRow> {
    Ok(TokenRow {
        id: r.get(0)?,
        grant_id: r.get(1)?,
        value_hash: r.get(2)?,
        value_hint: r.get(3)?,
        manage_id: r.get(4)?,
        expires_in: r.get(5)?,
        created_at: r.get(6)?,
        revoked_at: r.get(7)?,
        rotated_from: r.get(8)?,
    })
}

pub fn insert_token(conn: &Connection, t: &TokenRow) -> Result<(), Error> {
    let sql = format!("INSERT INTO access_tokens ({TOKEN_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    conn.prepare_cached(&sql)?.execute(params![
        t.id,
        t.grant_id,
        t.value_hash,
        t.value_hint,
        t.manage_id,
        t.expires_in,
        t.created_at,
        t.revoked_at,
        t.rotated_from
    ])?;
    Ok(())
}

pub fn token_by_hash(conn: &Connection, value_hash: &str) -> Result<Option<TokenRow>, Error> {
    let sql = format!("SELECT {TOKEN_COLS} FROM access_tokens WHERE value_hash = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([value_hash], token_from_row)
        .optional()?)
}

pub fn token_by_manage_id(conn: &Connection, manage_id: &str) -> Result<Option<TokenRow>, Error> {
    let sql = format!("SELECT {TOKEN_COLS} FROM access_tokens WHERE manage_id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([manage_id], token_from_row)
        .optional()?)
}

/// A token by id, with its grant.
pub fn token_with_grant(conn: &Connection, id: &str) -> Result<Option<(TokenRow, GrantRow)>, Error> {
    let sql = format!("SELECT {TOKEN_COLS} FROM access_tokens WHERE id = ?1");
    let Some(t) = conn.prepare_cached(&sql)?.query_row([id], token_from_row).optional()? else {
        return Ok(None);
    };
    let g = grant(conn, &t.grant_id)?.ok_or_else(|| Error::Corrupt(format!("token {id} has no grant")))?;
    Ok(Some((t, g)))
}

pub fn tokens_of_grant(conn: &Connection, grant_id: &str) -> Result<Vec<TokenRow>, Error> {
    let sql = format!("SELECT {TOKEN_COLS} FROM access_tokens WHERE grant_id = ?1 ORDER BY id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map([grant_id], token_from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Revokes one live token; returns whether it was live.
pub fn revoke_token(conn: &Connection, id: &str, now: OffsetDateTime) -> Result<bool, Error> {
    let n = conn
        .prepare_cached("UPDATE access_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL")?
        .execute(params![id, now])?;
    Ok(n == 1)
}

/// Revokes every live token of a grant; returns how many.
pub fn revoke_tokens_of_grant(conn: &Connection, grant_id: &str, now: OffsetDateTime) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("UPDATE access_tokens SET revoked_at = ?2 WHERE grant_id = ?1 AND revoked_at IS NULL")?
        .execute(params![grant_id, now])?)
}

/// One step of a grant's life (see `migrations/0012`); `detail` is JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRow {
    pub grant_id: crate::ids::GrantId,
    pub seq: i64,
    pub at: OffsetDateTime,
    pub last_at: OffsetDateTime,
    pub count: i64,
    pub kind: String,
    pub actor: String,
    pub request_id: Option<String>,
    pub last_request_id: Option<String>,
    pub detail: String,
}

/// What a new step says; the store numbers it.
#[derive(Debug, Clone, Copy)]
pub struct NewStep<'a> {
    pub at: OffsetDateTime,
    pub kind: &'a str,
    pub actor: &'a str,
    pub request_id: Option<&'a str>,
    pub detail: &'a str,
}

const STEP_COLS: &str = "grant_id, seq, at, last_at, count, kind, actor, request_id, last_request_id, detail";

fn step_from_row(r: &Row<'_>) -> super::db::Result<StepRow> {
    Ok(StepRow {
        grant_id: r.get(0)?,
        seq: r.get(1)?,
        at: r.get(2)?,
        last_at: r.get(3)?,
        count: r.get(4)?,
        kind: r.get(5)?,
        actor: r.get(6)?,
        request_id: r.get(7)?,
        last_request_id: r.get(8)?,
        detail: r.get(9)?,
    })
}

/// Appends a step to the grant's timeline.
pub fn insert_step(conn: &Connection, grant_id: &str, s: NewStep<'_>) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO grant_steps (grant_id, seq, at, last_at, count, kind, actor, request_id, detail) \
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM grant_steps WHERE grant_id = ?1), ?2, ?2, 1, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![grant_id, s.at, s.kind, s.actor, s.request_id, s.detail])?;
    Ok(())
}

/// Adds a repeat to the grant's last step when it is the same step (same kind and detail: a poll after a poll,
/// a page reload, the same refusal again); else appends the step. A client polling for ten minutes writes one
/// row.
pub fn repeat_step(conn: &Connection, grant_id: &str, s: NewStep<'_>) -> Result<(), Error> {
    let n = conn
        .prepare_cached(
            "UPDATE grant_steps SET count = count + 1, last_at = ?3, last_request_id = ?4 \
             WHERE grant_id = ?1 AND kind = ?2 AND detail = ?5 \
               AND seq = (SELECT MAX(seq) FROM grant_steps WHERE grant_id = ?1)",
        )?
        .execute(params![grant_id, s.kind, s.at, s.request_id, s.detail])?;
    if n == 0 {
        insert_step(conn, grant_id, s)?;
    }
    Ok(())
}

/// How many steps a grant has.
pub fn step_count(conn: &Connection, grant_id: &str) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached("SELECT COUNT(*) FROM grant_steps WHERE grant_id = ?1")?
        .query_row([grant_id], |r| r.get(0))?)
}

/// A grant's steps in order.
pub fn steps_of_grant(conn: &Connection, grant_id: &str) -> Result<Vec<StepRow>, Error> {
    let sql = format!("SELECT {STEP_COLS} FROM grant_steps WHERE grant_id = ?1 ORDER BY seq");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map([grant_id], step_from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
