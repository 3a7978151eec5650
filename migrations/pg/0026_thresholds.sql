-- opdesk schema v26 (PostgreSQL twin of migrations/0026_thresholds.sql): alert thresholds on what a peer can
-- still take from us, on what it owes us, and on a wallet's balance; and whether each one is crossed now, so
-- that crossing it appends one event and the next comes only after the value went back over it (the
-- hysteresis lives here, never in memory).
CREATE TABLE thresholds (
    -- peer_liquidity: the peer's liquidity less what we owe it, alert when under; peer_credit: what the peer
    -- owes us, alert when over; wallet_balance: a wallet's balance less its reservations, alert when under
    measure     TEXT COLLATE "C" NOT NULL CHECK (measure IN ('peer_liquidity', 'peer_credit', 'wallet_balance')),
    -- the peer's name or the wallet address's name (a row outlives its peer, as peer_limits rows do)
    subject     TEXT COLLATE "C" NOT NULL,
    -- the asset the threshold is in (the peer's or the wallet's), in minor units
    asset_code  TEXT COLLATE "C" NOT NULL,
    asset_scale BIGINT NOT NULL CHECK (asset_scale BETWEEN 0 AND 255),
    threshold   BIGINT NOT NULL CHECK (threshold >= 0),
    -- 1 from the transaction that crossed it (and appended its event) to the one that took it back over
    crossed     BIGINT NOT NULL DEFAULT 0 CHECK (crossed IN (0, 1)),
    updated_at  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (subject, measure)
);
