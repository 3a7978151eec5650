-- opdesk schema v7 (PostgreSQL twin of migrations/0007_outgoing_replays.sql).
-- Signed `POST /outgoing-payments` requests already answered, by the SHA-256 of their signature: a replay of
-- the same signed request gets the original answer (status and body) and moves no money, across restarts.
-- A created payment is recorded in the transaction that creates it (`outgoing_payment_id` set); a refusal
-- (4xx) right after it. Rows are kept while the signature's `created` (unix seconds) could still pass the
-- signature window, plus a grace period, and pruned after.
-- The SQLite table is not STRICT (a TEXT digest of 32 characters would pass there); here the digest must be
-- BYTEA of 32 bytes (length(bytea) counts bytes).
CREATE TABLE outgoing_payment_requests (
    signature_digest BYTEA PRIMARY KEY CHECK (length(signature_digest) = 32),
    outgoing_payment_id TEXT REFERENCES outgoing_payments (id),
    status BIGINT NOT NULL CHECK (status BETWEEN 200 AND 499),
    response TEXT NOT NULL,
    created BIGINT NOT NULL
);

CREATE INDEX outgoing_payment_requests_created ON outgoing_payment_requests (created);
