-- opdesk schema v22 (PostgreSQL twin of migrations/0022_owner_consent.sql): account holders who decide their
-- own grants on the interaction page. Passphrases are Argon2id PHC strings; a consent session is known by the
-- SHA-256 of its cookie, bound to one grant, and signed in once the owner's passphrase checked out; failed
-- sign-ins are counted per grant and per wallet.

CREATE TABLE owner_passphrases (
    wallet_id TEXT COLLATE "C" PRIMARY KEY REFERENCES wallet_addresses (id),
    hash      TEXT NOT NULL,
    set_at    TEXT COLLATE "C" NOT NULL
);

CREATE TABLE consent_sessions (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    grant_id   TEXT COLLATE "C" NOT NULL REFERENCES grants (id),
    csrf       TEXT COLLATE "C" NOT NULL,
    wallet_id  TEXT COLLATE "C" REFERENCES wallet_addresses (id),
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL
);

CREATE INDEX consent_sessions_expiry ON consent_sessions (expires_at);

CREATE TABLE consent_failures (
    id        TEXT COLLATE "C" PRIMARY KEY,
    wallet_id TEXT COLLATE "C" NOT NULL REFERENCES wallet_addresses (id),
    grant_id  TEXT COLLATE "C" NOT NULL REFERENCES grants (id),
    at        TEXT COLLATE "C" NOT NULL
);

CREATE INDEX consent_failures_wallet ON consent_failures (wallet_id, at);
CREATE INDEX consent_failures_grant ON consent_failures (grant_id, at);
