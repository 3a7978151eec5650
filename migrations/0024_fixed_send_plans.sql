-- opdesk schema v24: whether a STREAM plan was quoted fixed-send (the debit amount given). A fixed-send payment
-- sends its whole source amount, and the receiver gets what it buys (at least the quoted receive amount); a
-- fixed-receive payment stops once the receive amount arrived. Plans from before are fixed-receive, as they were
-- paid then.
ALTER TABLE stream_plans ADD COLUMN fixed_send INTEGER NOT NULL DEFAULT 0 CHECK (fixed_send IN (0, 1));
