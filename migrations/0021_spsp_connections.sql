-- opdesk schema v21: STREAM connections paying into a wallet address itself, opened with SPSP credentials
-- (`GET /{wallet}` with `Accept: application/spsp4+json`). Each fulfilled packet adds to `received` in the
-- transaction that credits the wallet; RFC 39 receipts carry that total. `reported` is the part of it a
-- `walletReceived` event has announced: a reporter turns the difference into one durable event per connection
-- every second, so a connection of thousands of packets makes a few events, and money credited just before a
-- crash is still announced after it. `last_report` is the amount the latest report covered.

CREATE TABLE spsp_connections (
    -- SHA-256 of the receiver address (one SPSP answer)
    connection_id TEXT PRIMARY KEY,
    wallet_id     TEXT NOT NULL REFERENCES wallet_addresses (id),
    received      INTEGER NOT NULL CHECK (received >= 0),
    reported      INTEGER NOT NULL DEFAULT 0 CHECK (reported >= 0 AND reported <= received),
    last_report   INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- what the reporter has yet to announce
CREATE INDEX spsp_connections_unreported ON spsp_connections (connection_id) WHERE received > reported;
-- what the pruner may drop: announced connections, oldest first
CREATE INDEX spsp_connections_reported ON spsp_connections (updated_at) WHERE received = reported;
