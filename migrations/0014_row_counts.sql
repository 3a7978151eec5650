-- opdesk schema v14: counters kept by triggers, so the console's Overview (reloaded every tick while money
-- moves) reads how many payments wait or failed without counting millions of rows.
--   incoming:waiting      incoming payments neither completed nor announced expired (completed = 0 AND
--                         expiry_announced = 0); the open ones are these less the few whose expiry passed
--                         and is not announced yet (read through incoming_open_by_expiry)
--   outgoing:<state>      outgoing payments per state
--   webhooks:<state>      webhook deliveries per state

CREATE TABLE row_counts (
    key TEXT PRIMARY KEY,
    n   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO row_counts (key, n)
SELECT 'incoming:waiting', count(*) FROM incoming_payments WHERE completed = 0 AND expiry_announced = 0;

INSERT INTO row_counts (key, n)
SELECT 'outgoing:' || s.state, (SELECT count(*) FROM outgoing_payments o WHERE o.state = s.state)
FROM (SELECT 'sending' AS state UNION ALL SELECT 'completed' UNION ALL SELECT 'failed' UNION ALL SELECT 'cancelled') s;

INSERT INTO row_counts (key, n)
SELECT 'webhooks:' || s.state, (SELECT count(*) FROM webhook_deliveries d WHERE d.state = s.state)
FROM (SELECT 'pending' AS state UNION ALL SELECT 'delivered' UNION ALL SELECT 'dead') s;

CREATE TRIGGER row_counts_incoming_insert AFTER INSERT ON incoming_payments
WHEN NEW.completed = 0 AND NEW.expiry_announced = 0
BEGIN
    UPDATE row_counts SET n = n + 1 WHERE key = 'incoming:waiting';
END;

CREATE TRIGGER row_counts_incoming_update AFTER UPDATE OF completed, expiry_announced ON incoming_payments
WHEN (OLD.completed = 0 AND OLD.expiry_announced = 0) IS NOT (NEW.completed = 0 AND NEW.expiry_announced = 0)
BEGIN
    UPDATE row_counts SET n = n + CASE WHEN NEW.completed = 0 AND NEW.expiry_announced = 0 THEN 1 ELSE -1 END
    WHERE key = 'incoming:waiting';
END;

CREATE TRIGGER row_counts_incoming_delete AFTER DELETE ON incoming_payments
WHEN OLD.completed = 0 AND OLD.expiry_announced = 0
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'incoming:waiting';
END;

CREATE TRIGGER row_counts_outgoing_insert AFTER INSERT ON outgoing_payments
BEGIN
    UPDATE row_counts SET n = n + 1 WHERE key = 'outgoing:' || NEW.state;
END;

CREATE TRIGGER row_counts_outgoing_update AFTER UPDATE OF state ON outgoing_payments
WHEN OLD.state IS NOT NEW.state
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'outgoing:' || OLD.state;
    UPDATE row_counts SET n = n + 1 WHERE key = 'outgoing:' || NEW.state;
END;

CREATE TRIGGER row_counts_outgoing_delete AFTER DELETE ON outgoing_payments
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'outgoing:' || OLD.state;
END;

CREATE TRIGGER row_counts_webhooks_insert AFTER INSERT ON webhook_deliveries
BEGIN
    UPDATE row_counts SET n = n + 1 WHERE key = 'webhooks:' || NEW.state;
END;

CREATE TRIGGER row_counts_webhooks_update AFTER UPDATE OF state ON webhook_deliveries
WHEN OLD.state IS NOT NEW.state
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'webhooks:' || OLD.state;
    UPDATE row_counts SET n = n + 1 WHERE key = 'webhooks:' || NEW.state;
END;

CREATE TRIGGER row_counts_webhooks_delete AFTER DELETE ON webhook_deliveries
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'webhooks:' || OLD.state;
END;
