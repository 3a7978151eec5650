//! Key/value facts about the database itself (e.g. when it was initialised and seeded).

use super::db::{Connection, OptionalExtension, params};

use super::Error;

pub fn get(conn: &Connection, key: &str) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?)
}

/// Sets `key` only if it is not set yet; returns whether it was set now.
pub fn set_once(conn: &Connection, key: &str, value: &str) -> Result<bool, Error> {
    let n = conn
        .prepare_cached("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING")?
        .execute(params![key, value])?;
    Ok(n == 1)
}

/// Sets `key` to `value`, replacing what was there.
pub fn set(conn: &Connection, key: &str, value: &str) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![key, value])?;
    Ok(())
}

/// Removes `key` (nothing if it is not set).
pub fn remove(conn: &Connection, key: &str) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM meta WHERE key = ?1")?.execute([key])?;
    Ok(())
}
