-- opdesk schema v10: peer liquidity and credit limits.
--
-- A new account kind, `liquidity`: one per ILP peer and asset, never below zero, holding what the peer lets us
-- owe it (its prefund, collateral or credit line). SQLite cannot change a CHECK in place, so `accounts` is
-- rebuilt with the same columns, rows, constraints and indexes, and `liquidity` added to the kinds. Foreign
-- keys stay on during migrations: their checks are deferred to the commit, by which time every row is back
-- under the same ids (rusqlite_migration also runs `PRAGMA foreign_key_check` after this file).
PRAGMA defer_foreign_keys = ON;

CREATE TABLE accounts_before_v10 AS SELECT * FROM accounts;
DROP TABLE accounts;

CREATE TABLE accounts (
    id             TEXT PRIMARY KEY,
    -- wallet: a customer's; settlement: the ASE's side per asset; payment: one outgoing payment's funds in flight;
    -- peer: our position with an ILP peer (positive: we owe it); liquidity: what the peer lets us owe it
    kind           TEXT NOT NULL CHECK (kind IN ('wallet', 'settlement', 'payment', 'peer', 'liquidity')),
    asset_code     TEXT NOT NULL,
    asset_scale    INTEGER NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    balance        INTEGER NOT NULL DEFAULT 0,
    pending_debits  INTEGER NOT NULL DEFAULT 0 CHECK (pending_debits >= 0),
    pending_credits INTEGER NOT NULL DEFAULT 0 CHECK (pending_credits >= 0),
    no_overdraft   INTEGER NOT NULL CHECK (no_overdraft IN (0, 1)),
    created_at     TEXT NOT NULL,
    -- the ILP peer of a peer or liquidity account
    peer           TEXT,
    CHECK (no_overdraft = 0 OR balance - pending_debits >= 0),
    CHECK (kind NOT IN ('liquidity') OR (peer IS NOT NULL AND no_overdraft = 1))
) STRICT;

INSERT INTO accounts (id, kind, asset_code, asset_scale, balance, pending_debits, pending_credits, no_overdraft,
                      created_at, peer)
    SELECT id, kind, asset_code, asset_scale, balance, pending_debits, pending_credits, no_overdraft, created_at, peer
    FROM accounts_before_v10;
DROP TABLE accounts_before_v10;

CREATE UNIQUE INDEX accounts_settlement_per_asset ON accounts (asset_code, asset_scale) WHERE kind = 'settlement';
CREATE UNIQUE INDEX accounts_peer_per_asset ON accounts (asset_code, asset_scale) WHERE kind = 'peer' AND peer IS NULL;
CREATE UNIQUE INDEX accounts_per_peer ON accounts (peer, asset_code, asset_scale) WHERE kind = 'peer' AND peer IS NOT NULL;
CREATE UNIQUE INDEX accounts_liquidity_per_peer ON accounts (peer, asset_code, asset_scale) WHERE kind = 'liquidity';

-- Per-peer limits, keyed by peer name so that peers from config.toml (not in `peers`) have them too; a row
-- outlives its peer like the peer's ledger accounts do.
CREATE TABLE peer_limits (
    peer          TEXT PRIMARY KEY,
    -- 1 once the operator deposited liquidity for the peer: from then on nothing is sent through it beyond its
    -- liquidity. 0 (or no row): sending is not limited (setups from before this migration).
    send_limited  INTEGER NOT NULL DEFAULT 0 CHECK (send_limited IN (0, 1)),
    -- what the peer may owe us unsettled, in minor units of the peer's asset; NULL: no limit
    credit_limit  INTEGER CHECK (credit_limit IS NULL OR credit_limit >= 0),
    updated_at    TEXT NOT NULL
) STRICT;
