-- opdesk schema v6 (PostgreSQL twin of migrations/0006_stream_receipts.sql): what each STREAM connection has paid
-- into an incoming payment. Replies advertise the room per connection, as RFC 29 defines StreamMaxMoney
-- (receiveMax and totalReceived count this connection's stream): a sender on a new connection to a partly paid
-- payment sees (its own total + room, its own total). SQLite's WITHOUT ROWID has no PostgreSQL equivalent (nor
-- need: a heap table with its primary key index).

CREATE TABLE stream_receipts (
    incoming_payment_id TEXT NOT NULL REFERENCES incoming_payments (id),
    -- SHA-256 of the receiver address (the credentials handed out with one read of the payment)
    connection_id       TEXT NOT NULL,
    received            BIGINT NOT NULL CHECK (received >= 0),
    updated_at          TEXT NOT NULL,
    PRIMARY KEY (incoming_payment_id, connection_id)
);
