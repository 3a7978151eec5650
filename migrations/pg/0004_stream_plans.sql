-- opdesk schema v4 (PostgreSQL twin of migrations/0004_stream_plans.sql): how to pay a receiver on another ASE
-- by STREAM. One row per quote of a remote receiver (id = the quote id), or per outgoing payment created without
-- a quote (id = the payment id): the peer that routes to it, the receiver's ILP credentials (methods[ilp]) and
-- the rates the quote probed.

CREATE TABLE stream_plans (
    id                TEXT PRIMARY KEY,
    receiver          TEXT NOT NULL,
    peer              TEXT NOT NULL,
    ilp_address       TEXT NOT NULL,
    -- base64url, as the receiver's ASE handed it out
    shared_secret     TEXT NOT NULL,
    -- destination units per source unit as "num/den": probed through the peer, and the floor every packet
    -- must reach (the operator's rate less the slippage)
    estimated_rate    TEXT NOT NULL,
    minimum_rate      TEXT NOT NULL,
    max_packet_amount BIGINT CHECK (max_packet_amount IS NULL OR max_packet_amount > 0),
    -- what STREAM may send in all (the debit amount less the fee), in the debit asset
    source_amount     BIGINT NOT NULL CHECK (source_amount > 0),
    created_at        TEXT NOT NULL
);
