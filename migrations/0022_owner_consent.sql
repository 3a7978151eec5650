-- opdesk schema v22: account holders who decide their own grants on the interaction page.
-- `owner_passphrases` holds a wallet owner's passphrase as an Argon2id PHC string (never the passphrase).
-- `consent_sessions` is a browser's visit to one grant's interaction page, known by the SHA-256 of its cookie;
-- it carries the CSRF token its forms echo, and is signed in once the owner's passphrase checked out.
-- `consent_failures` records failed sign-ins, which the page counts per grant and per wallet to slow guessing.

CREATE TABLE owner_passphrases (
    wallet_id TEXT PRIMARY KEY REFERENCES wallet_addresses (id),
    hash      TEXT NOT NULL,
    set_at    TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE consent_sessions (
    token_hash TEXT PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES grants (id),
    csrf       TEXT NOT NULL,
    -- the wallet whose owner signed in (NULL: not signed in)
    wallet_id  TEXT REFERENCES wallet_addresses (id),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX consent_sessions_expiry ON consent_sessions (expires_at);

CREATE TABLE consent_failures (
    id        TEXT PRIMARY KEY,
    wallet_id TEXT NOT NULL REFERENCES wallet_addresses (id),
    grant_id  TEXT NOT NULL REFERENCES grants (id),
    at        TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX consent_failures_wallet ON consent_failures (wallet_id, at);
CREATE INDEX consent_failures_grant ON consent_failures (grant_id, at);
