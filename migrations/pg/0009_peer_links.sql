-- opdesk schema v9 (PostgreSQL twin of migrations/0009_peer_links.sql): cross-currency peer links. A plan through
-- an ILP peer whose asset is not the sending wallet's records the ASE's own conversion into the peer's asset: the
-- asset, the rate (peer minor units per debit minor unit, "num/den", the operator's rate when quoted), the debit
-- units the plan's source stands for, and how much the payment has sent so far in the peer's asset.
-- `source_amount` is then in the peer's asset. All NULL (and link_sent 0) for a peer in the wallet's asset, as
-- before.
ALTER TABLE stream_plans ADD COLUMN link_asset_code TEXT;
ALTER TABLE stream_plans ADD COLUMN link_asset_scale BIGINT CHECK (link_asset_scale IS NULL OR link_asset_scale BETWEEN 0 AND 255);
ALTER TABLE stream_plans ADD COLUMN link_rate TEXT;
ALTER TABLE stream_plans ADD COLUMN link_debit_source BIGINT CHECK (link_debit_source IS NULL OR link_debit_source > 0);
ALTER TABLE stream_plans ADD COLUMN link_sent BIGINT NOT NULL DEFAULT 0 CHECK (link_sent >= 0);
