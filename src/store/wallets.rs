//! Wallet address and wallet key rows.

use super::db::{Connection, OptionalExtension, Row, params};
use time::OffsetDateTime;

use super::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletRow {
    pub id: crate::ids::WalletId,
    pub name: String,
    pub public_name: Option<String>,
    pub account_id: String,
    pub asset_code: String,
    pub asset_scale: u8,
    pub demo: bool,
    pub created_at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub id: String,
    pub wallet_id: crate::ids::WalletId,
    pub kid: String,
    pub x: String,
    pub created_at: OffsetDateTime,
}

const COLS: &str = "w.id, w.name, w.public_name, w.account_id, a.asset_code, a.asset_scale, w.demo, w.created_at";

fn from_row(r: &Row<'_>) -> super::db::Result<WalletRow> {
    Ok(WalletRow {
        id: r.get(0)?,
        name: r.get(1)?,
        public_name: r.get(2)?,
        account_id: r.get(3)?,
        asset_code: r.get(4)?,
        asset_scale: r.get(5)?,
        demo: r.get(6)?,
        created_at: r.get(7)?,
    })
}

pub fn insert(conn: &Connection, w: &WalletRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO wallet_addresses (id, name, public_name, account_id, demo, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![w.id, w.name, w.public_name, w.account_id, w.demo, w.created_at])?;
    Ok(())
}

pub fn by_name(conn: &Connection, name: &str) -> Result<Option<WalletRow>, Error> {
    let sql = format!("SELECT {COLS} FROM wallet_addresses w JOIN accounts a ON a.id = w.account_id WHERE w.name = ?1");
    Ok(conn.prepare_cached(&sql)?.query_row([name], from_row).optional()?)
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<WalletRow>, Error> {
    let sql = format!("SELECT {COLS} FROM wallet_addresses w JOIN accounts a ON a.id = w.account_id WHERE w.id = ?1");
    Ok(conn.prepare_cached(&sql)?.query_row([id], from_row).optional()?)
}

/// Sets the public name of wallet `name`; false if there is none.
pub fn set_public_name(conn: &Connection, name: &str, public_name: Option<&str>) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("UPDATE wallet_addresses SET public_name = ?2 WHERE name = ?1")?
        .execute(params![name, public_name])?
        == 1)
}

pub fn list(conn: &Connection) -> Result<Vec<WalletRow>, Error> {
    let sql = format!("SELECT {COLS} FROM wallet_addresses w JOIN accounts a ON a.id = w.account_id ORDER BY w.name");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], from_row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn insert_key(conn: &Connection, k: &KeyRow) -> Result<(), Error> {
    conn.prepare_cached("INSERT INTO wallet_keys (id, wallet_id, kid, x, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![k.id, k.wallet_id, k.kid, k.x, k.created_at])?;
    Ok(())
}

pub fn keys(conn: &Connection, wallet_id: &str) -> Result<Vec<KeyRow>, Error> {
    let mut stmt = conn
        .prepare_cached("SELECT id, wallet_id, kid, x, created_at FROM wallet_keys WHERE wallet_id = ?1 ORDER BY id")?;
    let rows = stmt
        .query_map([wallet_id], |r| {
            Ok(KeyRow {
                id: r.get(0)?,
                wallet_id: r.get(1)?,
                kid: r.get(2)?,
                x: r.get(3)?,
                created_at: r.get(4)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn key_exists(conn: &Connection, wallet_id: &str, kid: &str) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM wallet_keys WHERE wallet_id = ?1 AND kid = ?2")?
        .query_row(params![wallet_id, kid], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn delete_key(conn: &Connection, wallet_id: &str, kid: &str) -> Result<bool, Error> {
    let n = conn
        .prepare_cached("DELETE FROM wallet_keys WHERE wallet_id = ?1 AND kid = ?2")?
        .execute(params![wallet_id, kid])?;
    Ok(n == 1)
}
