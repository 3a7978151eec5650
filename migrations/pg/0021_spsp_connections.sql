-- opdesk schema v21 (PostgreSQL twin of migrations/0021_spsp_connections.sql): STREAM connections paying into a
-- wallet address itself, opened with SPSP credentials. Each fulfilled packet adds to `received` in the
-- transaction that credits the wallet; `reported` is the part a `walletReceived` event has announced (one
-- UPDATE … RETURNING claims the difference, so two nodes never announce the same money); `last_report` is the
-- amount the latest report covered.

CREATE TABLE spsp_connections (
    connection_id TEXT COLLATE "C" PRIMARY KEY,
    wallet_id     TEXT COLLATE "C" NOT NULL REFERENCES wallet_addresses (id),
    received      BIGINT NOT NULL CHECK (received >= 0),
    reported      BIGINT NOT NULL DEFAULT 0 CHECK (reported >= 0 AND reported <= received),
    last_report   BIGINT NOT NULL DEFAULT 0,
    created_at    TEXT COLLATE "C" NOT NULL,
    updated_at    TEXT COLLATE "C" NOT NULL
);

CREATE INDEX spsp_connections_unreported ON spsp_connections (connection_id) WHERE received > reported;
CREATE INDEX spsp_connections_reported ON spsp_connections (updated_at) WHERE received = reported;
