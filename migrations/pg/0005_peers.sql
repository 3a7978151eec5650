-- opdesk schema v5 (PostgreSQL twin of migrations/0005_peers.sql): ILP peers added through the admin API, and
-- one ledger account per peer. Peers from `[[ilp.peers]]` in config.toml are not stored here: the file stays
-- their only source.

CREATE TABLE peers (
    name              TEXT PRIMARY KEY,
    -- the peer's own ILP address (what IL-DCP hands it; its default route when `routes` is empty)
    ilp_address       TEXT,
    asset_code        TEXT NOT NULL,
    asset_scale       BIGINT NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    -- JSON array of the base64url SHA-256 of each token the peer presents at POST /ilp; tokens are never stored
    incoming_token_hashes TEXT NOT NULL,
    outgoing_endpoint TEXT,
    outgoing_token    TEXT,
    -- JSON array of ILP address prefixes reached through this peer
    routes            TEXT NOT NULL,
    max_packet_amount BIGINT CHECK (max_packet_amount IS NULL OR max_packet_amount > 0),
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    CHECK ((outgoing_endpoint IS NULL) = (outgoing_token IS NULL))
);

-- Peer accounts are now one per peer (named in `peer`). Accounts from schema v4 (one per asset, shared by
-- every peer) keep `peer` NULL and their history; new packets go to the account of the peer that carried them.
ALTER TABLE accounts ADD COLUMN peer TEXT;
DROP INDEX accounts_peer_per_asset;
CREATE UNIQUE INDEX accounts_peer_per_asset ON accounts (asset_code, asset_scale) WHERE kind = 'peer' AND peer IS NULL;
CREATE UNIQUE INDEX accounts_per_peer ON accounts (peer, asset_code, asset_scale) WHERE kind = 'peer' AND peer IS NOT NULL;
