-- opdesk schema v1 (PostgreSQL): metadata, ledger (accounts + append-only transfer journal), wallet addresses
-- and keys. The PostgreSQL twin of migrations/0001_init.sql: same tables, columns (in the same order),
-- constraints and indexes. Timestamps are fixed-width RFC 3339 UTC text (sorts in time order). Amounts are
-- BIGINT minor units; every SQLite INTEGER (0/1 flags included) is BIGINT, as the store binds i64.
-- CHECK constraints that a later migration replaces carry explicit names (PostgreSQL's own would be the same).

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE accounts (
    id             TEXT PRIMARY KEY,
    -- wallet: a customer's; settlement: the ASE's side per asset; payment: one outgoing payment's funds in flight;
    -- peer: what moved over ILP peering links, per asset (credited by STREAM sends, debited by STREAM receipts)
    kind           TEXT NOT NULL CONSTRAINT accounts_kind_check
                       CHECK (kind IN ('wallet', 'settlement', 'payment', 'peer')),
    asset_code     TEXT NOT NULL,
    asset_scale    BIGINT NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    -- cached from the journal: posted credits minus posted debits, and pending (reserved) amounts
    balance        BIGINT NOT NULL DEFAULT 0,
    pending_debits  BIGINT NOT NULL DEFAULT 0 CHECK (pending_debits >= 0),
    pending_credits BIGINT NOT NULL DEFAULT 0 CHECK (pending_credits >= 0),
    -- wallets may never spend money they do not have, counting reservations
    no_overdraft   BIGINT NOT NULL CHECK (no_overdraft IN (0, 1)),
    created_at     TEXT NOT NULL,
    CONSTRAINT accounts_overdraft_check CHECK (no_overdraft = 0 OR balance - pending_debits >= 0)
);

-- one settlement account per asset: the ASE's side of deposits and withdrawals
CREATE UNIQUE INDEX accounts_settlement_per_asset
    ON accounts (asset_code, asset_scale) WHERE kind = 'settlement';

-- one peer account per asset: the other side of STREAM packets sent and received through ILP peers
CREATE UNIQUE INDEX accounts_peer_per_asset
    ON accounts (asset_code, asset_scale) WHERE kind = 'peer';

CREATE TABLE transfers (
    id             TEXT PRIMARY KEY,
    debit_account  TEXT NOT NULL REFERENCES accounts (id),
    credit_account TEXT NOT NULL REFERENCES accounts (id),
    amount         BIGINT NOT NULL CHECK (amount > 0),
    -- pending: reserved, not moved; posted: posted_amount moved; voided: nothing moved
    state          TEXT NOT NULL CHECK (state IN ('pending', 'posted', 'voided')),
    posted_amount  BIGINT CHECK (posted_amount IS NULL OR (posted_amount > 0 AND posted_amount <= amount)),
    kind           TEXT NOT NULL,
    memo           TEXT,
    created_at     TEXT NOT NULL,
    resolved_at    TEXT,
    CHECK (debit_account <> credit_account),
    CHECK ((state = 'posted') = (posted_amount IS NOT NULL))
);

CREATE INDEX transfers_debit ON transfers (debit_account, id);
CREATE INDEX transfers_credit ON transfers (credit_account, id);

-- the journal is append-only: only a pending transfer may change (once, to posted or voided).
-- SQLite's RAISE(ABORT, …) is a constraint error (SQLITE_CONSTRAINT_TRIGGER); here SQLSTATE 23000
-- (integrity_constraint_violation) with the same message.
CREATE FUNCTION transfers_final_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'transfer is final' USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER transfers_final_is_immutable BEFORE UPDATE ON transfers
FOR EACH ROW WHEN (OLD.state <> 'pending')
EXECUTE FUNCTION transfers_final_is_immutable();

CREATE FUNCTION transfers_never_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'transfers are never deleted' USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER transfers_never_deleted BEFORE DELETE ON transfers
FOR EACH ROW EXECUTE FUNCTION transfers_never_deleted();

-- PostgreSQL only: TRUNCATE fires no row trigger, so it is refused by a statement trigger of its own
-- (SQLite has no TRUNCATE; its DELETE without WHERE runs the row trigger above).
CREATE TRIGGER transfers_never_truncated BEFORE TRUNCATE ON transfers
FOR EACH STATEMENT EXECUTE FUNCTION transfers_never_deleted();

CREATE TABLE wallet_addresses (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    public_name TEXT,
    account_id  TEXT NOT NULL UNIQUE REFERENCES accounts (id),
    demo        BIGINT NOT NULL DEFAULT 0 CHECK (demo IN (0, 1)),
    created_at  TEXT NOT NULL
);

CREATE TABLE wallet_keys (
    id         TEXT PRIMARY KEY,
    wallet_id  TEXT NOT NULL REFERENCES wallet_addresses (id),
    kid        TEXT NOT NULL,
    x          TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (wallet_id, kid)
);
