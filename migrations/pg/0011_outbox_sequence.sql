-- opdesk schema v11 (PostgreSQL twin of migrations/0011_outbox_sequence.sql): the outbox without the time index
-- (pruning walks from the oldest end, see `store::outbox::prune`).
--
-- SQLite drops AUTOINCREMENT here (rebuilding `events` with the same rows): from v11 on its `seq` is max(seq) + 1,
-- and a number is still never given out twice because pruning keeps the newest row. When an older opdesk had
-- pruned every event, SQLite inserts a mark row (type `_mark`, id '', payload 'null'; readers skip it) holding
-- the highest number AUTOINCREMENT had handed out (sqlite_sequence), so that max(seq) (`outbox::bounds`) still
-- says the newest number ever given out.
--
-- PostgreSQL keeps the identity column of 0008: its sequence already never repeats a number (no bookkeeping to
-- save: nextval is not a table write). Nothing is rebuilt. The mark row is still written, the same way, from the
-- sequence's last value (in place of sqlite_sequence), so that `outbox::bounds` reads the same newest number.
-- Differences that stay (see 0008): numbers are not rolled back (gaps after rolled-back appends, where SQLite
-- v11 has none: `prune`'s "newest `keep`" is then by number, so it may keep fewer rows than `keep`), and with
-- concurrent writers seq order is not commit order. The mark's `at` has SQLite's strftime('%Y-%m-%dT%H:%M:%fZ')
-- form (milliseconds).
DROP INDEX events_at;

INSERT INTO events (seq, id, at, type, payload)
    SELECT s.last, '', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '_mark', 'null'
    FROM (SELECT pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass) AS last) s
    WHERE s.last > (SELECT coalesce(max(seq), 0) FROM events);
