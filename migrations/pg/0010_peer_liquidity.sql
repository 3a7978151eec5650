-- opdesk schema v10 (PostgreSQL twin of migrations/0010_peer_liquidity.sql): peer liquidity and credit limits.
--
-- A new account kind, `liquidity`: one per ILP peer and asset, never below zero, holding what the peer lets us
-- owe it (its prefund, collateral or credit line). SQLite rebuilds `accounts` (copy, drop, create, copy back)
-- because it cannot change a CHECK in place; PostgreSQL can, so the table, its rows, its other constraints, its
-- indexes and the foreign keys pointing at it stay as they are, and only the kind CHECK is replaced and the
-- liquidity CHECK added. The end result is the SQLite one: same columns in the same order (`peer` last, as
-- 0005 added it), same constraints and indexes. Existing rows are checked against the new constraints when
-- they are added (they hold: no row had kind `liquidity` before).

-- peer: our position with an ILP peer (positive: we owe it); liquidity: what the peer lets us owe it.
-- `peer` (added by 0005) names the ILP peer of a peer or liquidity account.
ALTER TABLE accounts
    DROP CONSTRAINT accounts_kind_check,
    ADD CONSTRAINT accounts_kind_check CHECK (kind IN ('wallet', 'settlement', 'payment', 'peer', 'liquidity')),
    ADD CONSTRAINT accounts_liquidity_check CHECK (kind NOT IN ('liquidity') OR (peer IS NOT NULL AND no_overdraft = 1));

-- accounts_settlement_per_asset, accounts_peer_per_asset and accounts_per_peer are kept as they are (SQLite
-- recreates them identically after its rebuild).
CREATE UNIQUE INDEX accounts_liquidity_per_peer ON accounts (peer, asset_code, asset_scale) WHERE kind = 'liquidity';

-- Per-peer limits, keyed by peer name so that peers from config.toml (not in `peers`) have them too; a row
-- outlives its peer like the peer's ledger accounts do.
CREATE TABLE peer_limits (
    peer          TEXT PRIMARY KEY,
    -- 1 once the operator deposited liquidity for the peer: from then on nothing is sent through it beyond its
    -- liquidity. 0 (or no row): sending is not limited (setups from before this migration).
    send_limited  BIGINT NOT NULL DEFAULT 0 CHECK (send_limited IN (0, 1)),
    -- what the peer may owe us unsettled, in minor units of the peer's asset; NULL: no limit
    credit_limit  BIGINT CHECK (credit_limit IS NULL OR credit_limit >= 0),
    updated_at    TEXT NOT NULL
);
