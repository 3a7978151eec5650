-- opdesk schema v3 (PostgreSQL twin of migrations/0003_payments.sql): incoming payments, quotes and outgoing
-- payments. Ids are UUIDv7, so `ORDER BY id` is creation order and keyset pagination needs no created_at index
-- (byte order, as in SQLite, only under the "C" collation: create the database with LC_COLLATE "C").

CREATE TABLE incoming_payments (
    id              TEXT PRIMARY KEY,
    wallet_id       TEXT NOT NULL REFERENCES wallet_addresses (id),
    -- the client that created it (wallet address URL or jwk:<thumbprint>); NULL when created by the operator
    client          TEXT,
    incoming_amount BIGINT CHECK (incoming_amount IS NULL OR incoming_amount > 0),
    received_amount BIGINT NOT NULL DEFAULT 0 CHECK (received_amount >= 0),
    completed       BIGINT NOT NULL DEFAULT 0 CHECK (completed IN (0, 1)),
    expires_at      TEXT,
    metadata        TEXT,
    -- set once the engine has announced the expiry
    expiry_announced BIGINT NOT NULL DEFAULT 0 CHECK (expiry_announced IN (0, 1)),
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    CHECK (incoming_amount IS NULL OR received_amount <= incoming_amount)
);

CREATE INDEX incoming_by_wallet ON incoming_payments (wallet_id, id);
CREATE INDEX incoming_open_by_expiry ON incoming_payments (expires_at) WHERE completed = 0 AND expiry_announced = 0;

CREATE TABLE quotes (
    id                  TEXT PRIMARY KEY,
    wallet_id           TEXT NOT NULL REFERENCES wallet_addresses (id),
    client              TEXT,
    receiver            TEXT NOT NULL,
    -- the local incoming payment the receiver URL names
    incoming_payment_id TEXT REFERENCES incoming_payments (id),
    debit_amount        BIGINT NOT NULL CHECK (debit_amount > 0),
    receive_amount      BIGINT NOT NULL CHECK (receive_amount > 0),
    receive_asset_code  TEXT NOT NULL,
    receive_asset_scale BIGINT NOT NULL CHECK (receive_asset_scale BETWEEN 0 AND 255),
    fee                 BIGINT NOT NULL DEFAULT 0 CHECK (fee >= 0),
    expires_at          TEXT NOT NULL,
    created_at          TEXT NOT NULL
);

CREATE INDEX quotes_by_wallet ON quotes (wallet_id, id);

CREATE TABLE outgoing_payments (
    id                  TEXT PRIMARY KEY,
    wallet_id           TEXT NOT NULL REFERENCES wallet_addresses (id),
    client              TEXT,
    grant_id            TEXT REFERENCES grants (id),
    quote_id            TEXT UNIQUE REFERENCES quotes (id),
    receiver            TEXT NOT NULL,
    incoming_payment_id TEXT REFERENCES incoming_payments (id),
    debit_amount        BIGINT NOT NULL CHECK (debit_amount > 0),
    receive_amount      BIGINT NOT NULL CHECK (receive_amount > 0),
    receive_asset_code  TEXT NOT NULL,
    receive_asset_scale BIGINT NOT NULL,
    -- sent in the debit asset; delivered in the receive asset
    sent_amount         BIGINT NOT NULL DEFAULT 0 CHECK (sent_amount >= 0),
    delivered_amount    BIGINT NOT NULL DEFAULT 0 CHECK (delivered_amount >= 0),
    -- sending: funds reserved (created so), being paid; then completed | failed | cancelled
    state               TEXT NOT NULL CHECK (state IN ('sending', 'completed', 'failed', 'cancelled')),
    reservation_id      TEXT REFERENCES transfers (id),
    -- the account holding this payment's funds while it is sent
    account_id          TEXT REFERENCES accounts (id),
    failure_reason      TEXT,
    failure_message     TEXT,
    attempts            BIGINT NOT NULL DEFAULT 0,
    -- when the engine should next work on it (sending payments only)
    next_attempt_at     TEXT,
    metadata            TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    CHECK (sent_amount <= debit_amount)
);

CREATE INDEX outgoing_by_wallet ON outgoing_payments (wallet_id, id);
CREATE INDEX outgoing_by_grant ON outgoing_payments (grant_id, created_at);
CREATE INDEX outgoing_by_state ON outgoing_payments (state, id);
CREATE INDEX outgoing_due ON outgoing_payments (next_attempt_at) WHERE state = 'sending';
