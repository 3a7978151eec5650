-- opdesk schema v1: metadata, ledger (accounts + append-only transfer journal), wallet addresses and keys.
-- Timestamps are fixed-width RFC 3339 UTC text (sorts in time order). Amounts are INTEGER minor units.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE accounts (
    id             TEXT PRIMARY KEY,
    -- wallet: a customer's; settlement: the ASE's side per asset; payment: one outgoing payment's funds in flight;
    -- peer: what moved over ILP peering links, per asset (credited by STREAM sends, debited by STREAM receipts)
    kind           TEXT NOT NULL CHECK (kind IN ('wallet', 'settlement', 'payment', 'peer')),
    asset_code     TEXT NOT NULL,
    asset_scale    INTEGER NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    -- cached from the journal: posted credits minus posted debits, and pending (reserved) amounts
    balance        INTEGER NOT NULL DEFAULT 0,
    pending_debits  INTEGER NOT NULL DEFAULT 0 CHECK (pending_debits >= 0),
    pending_credits INTEGER NOT NULL DEFAULT 0 CHECK (pending_credits >= 0),
    -- wallets may never spend money they do not have, counting reservations
    no_overdraft   INTEGER NOT NULL CHECK (no_overdraft IN (0, 1)),
    created_at     TEXT NOT NULL,
    CHECK (no_overdraft = 0 OR balance - pending_debits >= 0)
) STRICT;

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
    amount         INTEGER NOT NULL CHECK (amount > 0),
    -- pending: reserved, not moved; posted: posted_amount moved; voided: nothing moved
    state          TEXT NOT NULL CHECK (state IN ('pending', 'posted', 'voided')),
    posted_amount  INTEGER CHECK (posted_amount IS NULL OR (posted_amount > 0 AND posted_amount <= amount)),
    kind           TEXT NOT NULL,
    memo           TEXT,
    created_at     TEXT NOT NULL,
    resolved_at    TEXT,
    CHECK (debit_account <> credit_account),
    CHECK ((state = 'posted') = (posted_amount IS NOT NULL))
) STRICT;

CREATE INDEX transfers_debit ON transfers (debit_account, id);
CREATE INDEX transfers_credit ON transfers (credit_account, id);

-- the journal is append-only: only a pending transfer may change (once, to posted or voided)
CREATE TRIGGER transfers_final_is_immutable BEFORE UPDATE ON transfers
WHEN OLD.state <> 'pending'
BEGIN
    SELECT RAISE(ABORT, 'transfer is final');
END;

CREATE TRIGGER transfers_never_deleted BEFORE DELETE ON transfers
BEGIN
    SELECT RAISE(ABORT, 'transfers are never deleted');
END;

CREATE TABLE wallet_addresses (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    public_name TEXT,
    account_id  TEXT NOT NULL UNIQUE REFERENCES accounts (id),
    demo        INTEGER NOT NULL DEFAULT 0 CHECK (demo IN (0, 1)),
    created_at  TEXT NOT NULL
) STRICT;

CREATE TABLE wallet_keys (
    id         TEXT PRIMARY KEY,
    wallet_id  TEXT NOT NULL REFERENCES wallet_addresses (id),
    kid        TEXT NOT NULL,
    x          TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (wallet_id, kid)
) STRICT;
