//! Embedded, forward-only schema migrations, applied in order at start-up: `migrations/NNNN_*.sql` for SQLite
//! and their PostgreSQL twins `migrations/pg/NNNN_*.sql`, side by side with the same numbers (version N is
//! the same schema on both). A shipped migration is never edited; changes are new files, one per backend.
//! A database whose schema is newer than this build knows is refused, on both.

use rusqlite_migration::{M, Migrations};

use super::{Error, db::Connection};

const MIGRATIONS: &[M<'static>] = &[
    M::up(include_str!("../../migrations/0001_init.sql")),
    M::up(include_str!("../../migrations/0002_gnap.sql")),
    M::up(include_str!("../../migrations/0003_payments.sql")),
    M::up(include_str!("../../migrations/0004_stream_plans.sql")),
    M::up(include_str!("../../migrations/0005_peers.sql")),
    M::up(include_str!("../../migrations/0006_stream_receipts.sql")),
    M::up(include_str!("../../migrations/0007_outgoing_replays.sql")),
    M::up(include_str!("../../migrations/0008_outbox.sql")),
    M::up(include_str!("../../migrations/0009_peer_links.sql")),
    M::up(include_str!("../../migrations/0010_peer_liquidity.sql")).foreign_key_check(),
    M::up(include_str!("../../migrations/0011_outbox_sequence.sql")),
    M::up(include_str!("../../migrations/0012_grant_steps.sql")),
    M::up(include_str!("../../migrations/0013_transfers_moved.sql")),
    M::up(include_str!("../../migrations/0014_row_counts.sql")),
    M::up(include_str!("../../migrations/0015_peer_claims.sql")),
    M::up(include_str!("../../migrations/0016_row_count_deltas.sql")),
    M::up(include_str!("../../migrations/0017_claims_name_their_payment.sql")),
    M::up(include_str!("../../migrations/0018_grant_spent.sql")),
    M::up(include_str!("../../migrations/0019_standing_accounts.sql")),
    M::up(include_str!("../../migrations/0020_text_in_byte_order.sql")),
    M::up(include_str!("../../migrations/0021_spsp_connections.sql")),
    M::up(include_str!("../../migrations/0022_owner_consent.sql")),
    M::up(include_str!("../../migrations/0023_events_pending.sql")),
    M::up(include_str!("../../migrations/0024_fixed_send_plans.sql")),
    M::up(include_str!("../../migrations/0025_consent_names.sql")),
    M::up(include_str!("../../migrations/0026_thresholds.sql")),
];

/// The PostgreSQL twins of [`MIGRATIONS`], in the same order.
const PG_MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/pg/0001_init.sql"),
    include_str!("../../migrations/pg/0002_gnap.sql"),
    include_str!("../../migrations/pg/0003_payments.sql"),
    include_str!("../../migrations/pg/0004_stream_plans.sql"),
    include_str!("../../migrations/pg/0005_peers.sql"),
    include_str!("../../migrations/pg/0006_stream_receipts.sql"),
    include_str!("../../migrations/pg/0007_outgoing_replays.sql"),
    include_str!("../../migrations/pg/0008_outbox.sql"),
    include_str!("../../migrations/pg/0009_peer_links.sql"),
    include_str!("../../migrations/pg/0010_peer_liquidity.sql"),
    include_str!("../../migrations/pg/0011_outbox_sequence.sql"),
    include_str!("../../migrations/pg/0012_grant_steps.sql"),
    include_str!("../../migrations/pg/0013_transfers_moved.sql"),
    include_str!("../../migrations/pg/0014_row_counts.sql"),
    include_str!("../../migrations/pg/0015_peer_claims.sql"),
    include_str!("../../migrations/pg/0016_row_count_deltas.sql"),
    include_str!("../../migrations/pg/0017_claims_name_their_payment.sql"),
    include_str!("../../migrations/pg/0018_grant_spent.sql"),
    include_str!("../../migrations/pg/0019_standing_accounts.sql"),
    include_str!("../../migrations/pg/0020_text_in_byte_order.sql"),
    include_str!("../../migrations/pg/0021_spsp_connections.sql"),
    include_str!("../../migrations/pg/0022_owner_consent.sql"),
    include_str!("../../migrations/pg/0023_events_pending.sql"),
    include_str!("../../migrations/pg/0024_fixed_send_plans.sql"),
    include_str!("../../migrations/pg/0025_consent_names.sql"),
    include_str!("../../migrations/pg/0026_thresholds.sql"),
];

const _: () = assert!(
    PG_MIGRATIONS.len() == MIGRATIONS.len(),
    "every migration has its PostgreSQL twin"
);

/// The advisory lock nodes take while migrating, so that two starting at once migrate once.
const PG_MIGRATION_LOCK: i64 = 0x6f70_6465_736b_0001;

fn migrations() -> Migrations<'static> {
    Migrations::from_slice(MIGRATIONS)
}

/// The schema version (0 = empty database).
pub fn current_version(conn: &Connection) -> Result<usize, Error> {
    let v: i64 = if conn.is_postgres() {
        conn.execute_batch("CREATE TABLE IF NOT EXISTS opdesk_schema (version BIGINT NOT NULL)")?;
        conn.query_row("SELECT COALESCE(MAX(version), 0) FROM opdesk_schema", [], |r| r.get(0))?
    } else {
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))?
    };
    usize::try_from(v).map_err(|_| Error::Corrupt(format!("negative schema version {v}")))
}

/// Brings the schema to the newest version, or refuses a database newer than this build.
pub fn migrate(conn: &mut Connection) -> Result<(), Error> {
    if let Some(c) = conn.sqlite_mut() {
        return Ok(migrations().to_latest(c)?);
    }
    conn.execute_batch(&format!("SELECT pg_advisory_lock({PG_MIGRATION_LOCK})"))?;
    let done = migrate_postgres(conn);
    let unlocked = conn.execute_batch(&format!("SELECT pg_advisory_unlock({PG_MIGRATION_LOCK})"));
    done?;
    Ok(unlocked?)
}

/// Applies the PostgreSQL migrations after the current version, each in its own transaction with its version.
fn migrate_postgres(conn: &Connection) -> Result<(), Error> {
    let current = current_version(conn)?;
    if current > PG_MIGRATIONS.len() {
        return Err(too_new(current));
    }
    for (i, sql) in PG_MIGRATIONS.iter().enumerate().skip(current) {
        let version = i + 1;
        let tx = conn.transaction()?;
        tx.execute_batch(sql)
            .map_err(|e| Error::Schema(format!("PostgreSQL migration {version:04}: {e}")))?;
        tx.execute("INSERT INTO opdesk_schema (version) VALUES (?1)", [version])?;
        tx.commit()?;
        tracing::info!(version, "PostgreSQL schema migrated");
    }
    Ok(())
}

fn too_new(current: usize) -> Error {
    Error::Schema(format!(
        "the database's schema is version {current}, newer than this opdesk knows ({}): run a newer opdesk",
        PG_MIGRATIONS.len()
    ))
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

    #[test]
    fn money_moved_per_minute_reads_through_its_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO accounts (id, kind, asset_code, asset_scale, balance, no_overdraft, created_at) VALUES \
               ('w', 'wallet', 'USD', 2, 0, 1, 't'), ('s', 'settlement', 'USD', 2, 0, 0, 't'); \
             INSERT INTO transfers (id, debit_account, credit_account, amount, state, posted_amount, kind, \
               created_at, resolved_at) VALUES \
               ('t1', 's', 'w', 5, 'posted', 5, 'deposit', '2026-11-25T10:00:01.000Z', NULL), \
               ('t2', 's', 'w', 7, 'posted', 7, 'deposit', '2026-11-25T10:01:00.000Z', '2026-11-25T10:02:30.000Z'), \
               ('t3', 's', 'w', 9, 'pending', NULL, 'deposit', '2026-11-25T10:02:00.000Z', NULL), \
               ('t4', 's', 'w', 4, 'posted', 4, 'deposit', '2026-11-25T09:00:00.000Z', NULL);",
        )
        .unwrap();
        let moved = crate::store::ledger::moved_per_minute(&conn, "2026-11-25T10:00", "~").unwrap();
        assert_eq!(
            moved,
            vec![
                ("USD".into(), 2, "2026-11-25T10:00".into(), 5),
                ("USD".into(), 2, "2026-11-25T10:02".into(), 7)
            ]
        );
        let plan: Vec<String> = conn
            .prepare(
                "EXPLAIN QUERY PLAN SELECT t.posted_amount FROM transfers t \
                 WHERE t.state = 'posted' AND COALESCE(t.resolved_at, t.created_at) >= ?1",
            )
            .unwrap()
            .query_map(["x"], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(plan.iter().any(|p| p.contains("transfers_moved")), "{plan:?}");
    }

    #[test]
    fn standing_accounts_leave_payment_accounts_out_through_their_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO accounts (id, kind, asset_code, asset_scale, balance, no_overdraft, created_at) VALUES \
               ('w', 'wallet', 'USD', 2, 0, 1, '2026-01-01T00:00:00.000Z'), \
               ('s', 'settlement', 'USD', 2, 0, 0, '2026-01-01T00:00:00.000Z'), \
               ('p1', 'payment', 'USD', 2, 0, 1, '2026-01-01T00:00:00.000Z'), \
               ('p2', 'payment', 'USD', 2, 0, 1, '2026-01-01T00:00:00.000Z');",
        )
        .unwrap();
        let mut ids: Vec<String> = crate::store::ledger::standing_accounts(&conn)
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        ids.sort();
        assert_eq!(ids, ["s", "w"]);
        let plan: Vec<String> = conn
            .prepare("EXPLAIN QUERY PLAN SELECT a.id FROM accounts a WHERE a.kind <> 'payment'")
            .unwrap()
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(plan.iter().any(|p| p.contains("accounts_standing")), "{plan:?}");
    }

    #[test]
    fn peer_liquidity_rebuilds_accounts_keeping_rows_and_references() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA foreign_keys = ON;").unwrap();
        Migrations::from_slice(&MIGRATIONS[..8])
            .to_latest(conn.sqlite_mut().unwrap())
            .unwrap();
        conn.execute_batch(
            "INSERT INTO accounts (id, kind, asset_code, asset_scale, balance, no_overdraft, created_at) VALUES \
               ('w', 'wallet', 'USD', 2, 5, 1, 't'), ('s', 'settlement', 'USD', 2, -5, 0, 't'); \
             INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft, created_at, peer) VALUES \
               ('p', 'peer', 'USD', 2, 0, 't', 'bank'); \
             INSERT INTO transfers (id, debit_account, credit_account, amount, state, posted_amount, kind, created_at) \
               VALUES ('t1', 's', 'w', 5, 'posted', 5, 'deposit', 't'); \
             INSERT INTO wallet_addresses (id, name, account_id, created_at) VALUES ('wa', 'alice', 'w', 't');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(current_version(&conn).unwrap(), MIGRATIONS.len());
        let n: i64 = conn
            .query_row("SELECT count(*) FROM accounts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
        let (bal, peer): (i64, Option<String>) = conn
            .query_row("SELECT balance, peer FROM accounts WHERE id = 'p'", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((bal, peer.as_deref()), (0, Some("bank")));
        let fk: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
        assert_eq!(fk, 1);
        // references still hold: a transfer to an unknown account is refused, a liquidity account is allowed
        assert!(
            conn.execute_batch(
                "INSERT INTO transfers (id, debit_account, credit_account, amount, state, posted_amount, kind, \
                 created_at) VALUES ('t2', 's', 'nope', 1, 'posted', 1, 'deposit', 't')"
            )
            .is_err()
        );
        conn.execute_batch(
            "INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft, created_at, peer) VALUES \
               ('l', 'liquidity', 'USD', 2, 1, 't', 'bank')",
        )
        .unwrap();
        let sql: String = conn
            .query_row("SELECT sql FROM sqlite_schema WHERE name = 'transfers'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(sql.contains("REFERENCES accounts (id)"), "{sql}");
    }

    #[test]
    fn the_outbox_rebuild_keeps_events_and_never_reuses_a_sequence_number() {
        let v8 = |events: &[(i64, &str)], pruned_to: i64| {
            let mut conn = Connection::open_in_memory().unwrap();
            Migrations::from_slice(&MIGRATIONS[..8])
                .to_latest(conn.sqlite_mut().unwrap())
                .unwrap();
            for (seq, at) in events {
                conn.execute(
                    "INSERT INTO events (seq, id, at, type, payload) VALUES (?1, 'i', ?2, 'walletCreated', \
                     '{\"type\":\"walletCreated\",\"id\":\"w\",\"name\":\"w\"}')",
                    crate::store::db::params![seq, at],
                )
                .unwrap();
            }
            // an older opdesk pruned by age, newest included
            conn.execute("DELETE FROM events WHERE seq <= ?1", [pruned_to]).unwrap();
            migrate(&mut conn).unwrap();
            conn
        };
        let append = |conn: &Connection| {
            let e = crate::events::DomainEvent::WalletCreated {
                id: "x".into(),
                name: "x".into(),
            };
            super::super::outbox::append(conn, crate::clock::ts("2026-11-25T00:00:00.000Z"), e)
                .unwrap()
                .seq
                .unwrap()
        };
        // everything pruned: the mark keeps 3, the next event is 4, readers never see the mark
        let conn = v8(
            &[
                (1, "2026-01-01T00:00:01.000Z"),
                (2, "2026-01-01T00:00:02.000Z"),
                (3, "2026-01-01T00:00:03.000Z"),
            ],
            3,
        );
        assert_eq!(super::super::outbox::bounds(&conn).unwrap().1, 3);
        assert!(super::super::outbox::after(&conn, 0, 10).unwrap().is_empty());
        assert_eq!(append(&conn), 4);
        assert_eq!(super::super::outbox::after(&conn, 0, 10).unwrap().len(), 1);
        // rows kept: the same rows, no mark, numbering goes on
        let conn = v8(
            &[
                (1, "2026-01-01T00:00:01.000Z"),
                (2, "2026-01-01T00:00:02.000Z"),
                (3, "2026-01-01T00:00:03.000Z"),
            ],
            1,
        );
        let kept: Vec<i64> = super::super::outbox::after(&conn, 0, 10)
            .unwrap()
            .iter()
            .map(|r| r.seq.unwrap())
            .collect();
        assert_eq!(kept, vec![2, 3]);
        assert_eq!(append(&conn), 4);
        let marks: i64 = conn
            .query_row("SELECT count(*) FROM events WHERE type = '_mark'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(marks, 0);
        let sql: String = conn
            .query_row("SELECT sql FROM sqlite_schema WHERE name = 'events'", [], |r| r.get(0))
            .unwrap();
        assert!(!sql.contains("AUTOINCREMENT"), "{sql}");
    }

    /// Every counter of `row_counts` equals a count over its table (`migrations/0014`).
    fn counters_match(conn: &Connection) {
        let checks = [
            (
                "incoming:waiting",
                "SELECT count(*) FROM incoming_payments WHERE completed = 0 AND expiry_announced = 0",
            ),
            (
                "outgoing:sending",
                "SELECT count(*) FROM outgoing_payments WHERE state = 'sending'",
            ),
            (
                "outgoing:completed",
                "SELECT count(*) FROM outgoing_payments WHERE state = 'completed'",
            ),
            (
                "outgoing:failed",
                "SELECT count(*) FROM outgoing_payments WHERE state = 'failed'",
            ),
            (
                "outgoing:cancelled",
                "SELECT count(*) FROM outgoing_payments WHERE state = 'cancelled'",
            ),
            (
                "webhooks:pending",
                "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'",
            ),
            (
                "webhooks:delivered",
                "SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'",
            ),
            (
                "webhooks:dead",
                "SELECT count(*) FROM webhook_deliveries WHERE state = 'dead'",
            ),
        ];
        for (key, sql) in checks {
            let counted: i64 = conn.query_row(sql, [], |r| r.get(0)).unwrap();
            let kept: i64 = conn
                .query_row("SELECT n FROM row_counts WHERE key = ?1", [key], |r| r.get(0))
                .unwrap();
            assert_eq!(kept, counted, "{key}");
        }
    }

    #[test]
    fn row_counts_start_from_the_rows_there_and_follow_every_change() {
        let mut conn = Connection::open_in_memory().unwrap();
        Migrations::from_slice(&MIGRATIONS[..13])
            .to_latest(conn.sqlite_mut().unwrap())
            .unwrap();
        let rows = "INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft, created_at) VALUES \
               ('a', 'wallet', 'USD', 2, 1, 't'); \
             INSERT INTO wallet_addresses (id, name, account_id, created_at) VALUES ('w', 'bob', 'a', 't'); \
             INSERT INTO incoming_payments (id, wallet_id, completed, expiry_announced, created_at, updated_at) \
               VALUES ('i1', 'w', 0, 0, 't', 't'), ('i2', 'w', 1, 0, 't', 't'), ('i3', 'w', 0, 1, 't', 't'); \
             INSERT INTO outgoing_payments (id, wallet_id, receiver, debit_amount, receive_amount, \
               receive_asset_code, receive_asset_scale, state, created_at, updated_at) VALUES \
               ('o1', 'w', 'r', 1, 1, 'USD', 2, 'sending', 't', 't'), ('o2', 'w', 'r', 1, 1, 'USD', 2, 'failed', 't', 't'); \
             INSERT INTO webhook_deliveries (event_seq, event_id, type, body, state, next_attempt_at, created_at, \
               updated_at) VALUES (1, 'e1', 'x', '{}', 'dead', 't', 't', 't');";
        conn.execute_batch(rows).unwrap();
        migrate(&mut conn).unwrap();
        counters_match(&conn);
        conn.execute_batch(
            "INSERT INTO incoming_payments (id, wallet_id, created_at, updated_at) VALUES ('i4', 'w', 't', 't'); \
             UPDATE incoming_payments SET completed = 1 WHERE id = 'i1'; \
             UPDATE incoming_payments SET received_amount = 5 WHERE id = 'i4'; \
             UPDATE incoming_payments SET expiry_announced = 1 WHERE id = 'i2'; \
             DELETE FROM incoming_payments WHERE id = 'i3'; \
             INSERT INTO outgoing_payments (id, wallet_id, receiver, debit_amount, receive_amount, \
               receive_asset_code, receive_asset_scale, state, created_at, updated_at) VALUES \
               ('o3', 'w', 'r', 1, 1, 'USD', 2, 'sending', 't', 't'); \
             UPDATE outgoing_payments SET state = 'completed' WHERE id = 'o1'; \
             UPDATE outgoing_payments SET state = 'sending', sent_amount = 1 WHERE id = 'o3'; \
             UPDATE outgoing_payments SET state = 'cancelled' WHERE id = 'o2'; \
             DELETE FROM outgoing_payments WHERE id = 'o3'; \
             INSERT INTO webhook_deliveries (event_seq, event_id, type, body, state, next_attempt_at, created_at, \
               updated_at) VALUES (2, 'e2', 'x', '{}', 'pending', 't', 't', 't'); \
             UPDATE webhook_deliveries SET state = 'delivered' WHERE event_seq = 2; \
             UPDATE webhook_deliveries SET state = 'pending' WHERE event_seq = 1; \
             DELETE FROM webhook_deliveries WHERE event_seq = 2;",
        )
        .unwrap();
        counters_match(&conn);
        let waiting: i64 = conn
            .query_row("SELECT n FROM row_counts WHERE key = 'incoming:waiting'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(waiting, 1, "only i4 waits");
    }
}
