-- opdesk schema v15: STREAM packets in flight through an ILP peer, claimed in the database. A row per packet
-- handed to a peer whose outcome is not committed yet: the sending rule (`position + in flight + packet <=
-- liquidity`) counts them, so several nodes on one database (PostgreSQL) count each other's packets. A row goes
-- in the transaction that records the packet's outcome, or when the packet was not fulfilled; a row of a node
-- that died stops counting at `expires_at`, after the packet itself has expired.
CREATE TABLE peer_claims (
    id          TEXT PRIMARY KEY,
    peer        TEXT NOT NULL,
    -- in minor units of the peer's asset
    amount      INTEGER NOT NULL CHECK (amount > 0),
    expires_at  TEXT NOT NULL
) STRICT;

CREATE INDEX peer_claims_by_peer ON peer_claims (peer, expires_at);
