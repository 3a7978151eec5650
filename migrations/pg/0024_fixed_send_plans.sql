-- opdesk schema v24 (PostgreSQL twin of migrations/0024_fixed_send_plans.sql): whether a STREAM plan was quoted
-- fixed-send; plans from before are fixed-receive, as they were paid then.
ALTER TABLE stream_plans ADD COLUMN fixed_send BIGINT NOT NULL DEFAULT 0 CHECK (fixed_send IN (0, 1));
