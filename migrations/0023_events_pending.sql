-- opdesk schema v23: events waiting for their number. On PostgreSQL (migrations/pg/0023), a transaction appends
-- its events here, taking no lock; one node at a time then moves what has committed into `events`, where the
-- number is drawn, in a short transaction of its own (`store::outbox::sequence`). SQLite has one writer and
-- appends straight into `events`: the table stays empty there, and exists so that both schemas stay the same.
CREATE TABLE events_pending (
    id      TEXT PRIMARY KEY,
    at      TEXT NOT NULL,
    type    TEXT NOT NULL,
    payload TEXT NOT NULL
) STRICT;
