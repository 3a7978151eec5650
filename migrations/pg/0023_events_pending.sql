-- opdesk schema v23 (PostgreSQL twin of migrations/0023_events_pending.sql): events waiting for their number.
-- Until v22 a transaction that appended an event held an advisory lock from the append to its commit, so that
-- numbers became visible in order; every node's every create waited for it. From v23 a transaction appends its
-- events here, taking no lock, and one node at a time (that lock, in a short transaction of its own:
-- `store::outbox::sequence`) moves the committed rows into `events`, drawing their numbers in id order. A reader
-- of `seq > n` still never sees n + 1 before n: numbers are only drawn by a transaction that holds the lock and
-- sees only committed rows.
CREATE TABLE events_pending (
    id      TEXT PRIMARY KEY,
    at      TEXT NOT NULL,
    type    TEXT NOT NULL,
    payload TEXT NOT NULL
);
