-- The event outbox: every durable domain event, appended in the transaction of the change it describes.
-- `GET /admin/events`, consoles and webhooks read it by sequence number; old rows are pruned by age and count.
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL
);

CREATE INDEX events_at ON events (at);

-- Webhook deliveries: one row per durable event while a webhook URL is configured, with the exact body sent
-- (the event id lets the receiver de-duplicate), attempts, the next attempt and the last outcome.
CREATE TABLE webhook_deliveries (
    event_seq INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_status INTEGER,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
