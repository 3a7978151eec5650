-- Signed `POST /outgoing-payments` requests already answered, by the SHA-256 of their signature: a replay of
-- the same signed request gets the original answer (status and body) and moves no money, across restarts.
-- A created payment is recorded in the transaction that creates it (`outgoing_payment_id` set); a refusal
-- (4xx) right after it. Rows are kept while the signature's `created` (unix seconds) could still pass the
-- signature window, plus a grace period, and pruned after.
CREATE TABLE outgoing_payment_requests (
    signature_digest BLOB PRIMARY KEY CHECK (length(signature_digest) = 32),
    outgoing_payment_id TEXT REFERENCES outgoing_payments (id),
    status INTEGER NOT NULL CHECK (status BETWEEN 200 AND 499),
    response TEXT NOT NULL,
    created INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX outgoing_payment_requests_created ON outgoing_payment_requests (created);
