-- Signed `POST /outgoing-payments` requests already answered, by the SHA-256 of their signature: a replay of
-- the same signed request inside the signature window gets the original answer and moves no money, across
-- restarts. Written in the transaction that creates the payment; pruned once the window has passed (the
-- `created` check refuses such a request anyway).
CREATE TABLE outgoing_payment_requests (
    signature_digest BLOB PRIMARY KEY CHECK (length(signature_digest) = 32),
    outgoing_payment_id TEXT NOT NULL REFERENCES outgoing_payments (id),
    response TEXT NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX outgoing_payment_requests_expiry ON outgoing_payment_requests (expires_at);
