-- opdesk schema v17 (PostgreSQL twin of migrations/0017_claims_name_their_payment.sql): a packet's claim on its
-- peer's room names the outgoing payment it belongs to, so that a payment with a packet on its way (a live
-- claim) is not cancelled under it: a fulfillment arriving after the cancel could no longer be booked. Claims
-- made before this migration name none; they end with their packets.
ALTER TABLE peer_claims ADD COLUMN payment TEXT;

CREATE INDEX peer_claims_by_payment ON peer_claims (payment) WHERE payment IS NOT NULL;
