-- opdesk schema v11: the outbox's sequence without AUTOINCREMENT bookkeeping (one write less per event) and
-- without the time index (pruning walks from the oldest end, see `store::outbox::prune`). SQLite cannot drop
-- AUTOINCREMENT in place, so `events` is rebuilt with the same rows. A sequence number is never given out twice:
-- pruning keeps the newest row, and when an older opdesk had pruned every event, a mark row (type `_mark`, no
-- event; readers skip it) keeps the highest number AUTOINCREMENT had handed out.
CREATE TABLE events_v11 (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL
);

INSERT INTO events_v11 (seq, id, at, type, payload) SELECT seq, id, at, type, payload FROM events;

INSERT INTO events_v11 (seq, id, at, type, payload)
    SELECT s.seq, '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), '_mark', 'null'
    FROM sqlite_sequence s
    WHERE s.name = 'events' AND s.seq > (SELECT coalesce(max(seq), 0) FROM events);

DROP TABLE events;
ALTER TABLE events_v11 RENAME TO events;
