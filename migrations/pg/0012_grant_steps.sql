-- opdesk schema v12 (PostgreSQL twin of migrations/0012_grant_steps.sql): a grant's life as steps (the GNAP
-- timeline the Grants detail and `grants show --timeline` show). Each step is written in the transaction of the
-- change it describes. Repeats of one step (continue polls while the grant is pending, reloads of the interaction
-- page) add to the last step instead of adding rows: `count`, `last_at` and `last_request_id` say how often and
-- until when.

CREATE TABLE grant_steps (
    grant_id        TEXT NOT NULL REFERENCES grants (id),
    seq             BIGINT NOT NULL CHECK (seq >= 1),    -- 1, 2, … within the grant
    at              TEXT NOT NULL,                       -- when it happened (the first time, for repeats)
    last_at         TEXT NOT NULL,
    count           BIGINT NOT NULL DEFAULT 1 CHECK (count >= 1),
    kind            TEXT NOT NULL,                       -- requested, interaction_opened, decided, …
    actor           TEXT NOT NULL,                       -- client, browser, console, cli, admin_api, policy, server
    request_id      TEXT,                                -- the HTTP request that caused it, when one did
    last_request_id TEXT,
    detail          TEXT NOT NULL,                       -- JSON: what the step did, secrets masked
    PRIMARY KEY (grant_id, seq)
);
