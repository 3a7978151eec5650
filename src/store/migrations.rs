//! Embedded, forward-only schema migrations (`migrations/NNNN_*.sql`), applied in order at start-up.
//! A shipped migration is never edited; changes are new files.

use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

use super::Error;

const MIGRATIONS: &[M<'static>] = &[
    M::up(include_str!("../../migrations/0001_init.sql")),
    M::up(include_str!("../../migrations/0002_gnap.sql")),
    M::up(include_str!("../../migrations/0003_payments.sql")),
    M::up(include_str!("../../migrations/0004_stream_plans.sql")),
    M::up(include_str!("../../migrations/0005_peers.sql")),
    M::up(include_str!("../../migrations/0006_stream_receipts.sql")),
    M::up(include_str!("../../migrations/0007_outgoing_replays.sql")),
    M::up(include_str!("../../migrations/0008_outbox.sql")),
    M::up(include_str!("../../migrations/0010_peer_links.sql")),
];

fn migrations() -> Migrations<'static> {
    Migrations::from_slice(MIGRATIONS)
}

/// The schema version (0 = empty database).
pub fn current_version(conn: &Connection) -> Result<usize, Error> {
    let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    usize::try_from(v).map_err(|_| Error::Corrupt(format!("negative user_version {v}")))
}

pub fn migrate(conn: &mut Connection) -> Result<(), Error> {
    migrations().to_latest(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        assert!(migrations().validate().is_ok());
    }

    #[test]
    fn migrate_is_idempotent_and_sets_the_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(current_version(&conn).unwrap(), MIGRATIONS.len());
    }
}
