-- opdesk schema v2 (PostgreSQL twin of migrations/0002_gnap.sql): GNAP grants and access tokens. Token values
-- are never stored: only their SHA-256.

CREATE TABLE grants (
    id                 TEXT PRIMARY KEY,
    -- pending: awaiting the resource owner; approved: consented, token not issued yet;
    -- finalized: token issued; rejected / revoked: dead
    state              TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'finalized', 'rejected', 'revoked')),
    -- the client wallet address URL, or NULL for a directed-identity (JWK) client
    client             TEXT,
    client_jwk         TEXT,
    access             TEXT NOT NULL,          -- JSON array of granted access items
    subject            TEXT,                   -- JSON subject request, when any
    interactive        BIGINT NOT NULL CHECK (interactive IN (0, 1)),
    finish_uri         TEXT,
    client_nonce       TEXT,
    interact_id        TEXT UNIQUE,
    interact_nonce     TEXT,
    as_finish_nonce    TEXT,
    interact_ref       TEXT,
    grant_endpoint     TEXT NOT NULL,          -- the URL the client POSTed to (input of the finish hash)
    continue_id        TEXT NOT NULL UNIQUE,
    continue_token_hash TEXT NOT NULL,
    wait_secs          BIGINT NOT NULL,
    last_continued_at  TEXT NOT NULL,
    decision_reason    TEXT,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    CHECK (client IS NOT NULL OR client_jwk IS NOT NULL),
    CHECK (interactive = 1 OR state IN ('finalized', 'revoked'))
);

CREATE INDEX grants_state ON grants (state, id);

CREATE TABLE access_tokens (
    id          TEXT PRIMARY KEY,
    grant_id    TEXT NOT NULL REFERENCES grants (id),
    value_hash  TEXT NOT NULL UNIQUE,
    -- the first characters of the value, for operators to recognise a token
    value_hint  TEXT NOT NULL,
    manage_id   TEXT NOT NULL UNIQUE,
    expires_in  BIGINT NOT NULL CHECK (expires_in > 0),
    created_at  TEXT NOT NULL,
    revoked_at  TEXT,
    -- the token this one replaced by rotation
    rotated_from TEXT REFERENCES access_tokens (id)
);

CREATE INDEX access_tokens_grant ON access_tokens (grant_id);
