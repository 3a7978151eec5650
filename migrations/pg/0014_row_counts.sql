-- opdesk schema v14 (PostgreSQL twin of migrations/0014_row_counts.sql): counters kept by triggers, so the
-- console's Overview (reloaded every tick while money moves) reads how many payments wait or failed without
-- counting millions of rows.
--   incoming:waiting      incoming payments neither completed nor announced expired (completed = 0 AND
--                         expiry_announced = 0); the open ones are these less the few whose expiry passed
--                         and is not announced yet (read through incoming_open_by_expiry)
--   outgoing:<state>      outgoing payments per state
--   webhooks:<state>      webhook deliveries per state
--
-- SQLite's triggers become plpgsql trigger functions, one per SQLite trigger and under the same name, run FOR
-- EACH ROW with the same WHEN conditions (SQLite's null-safe `IS NOT` is `IS DISTINCT FROM`) and the same
-- `UPDATE OF` column lists. PostgreSQL runs AFTER row triggers at the end of the statement rather than after each
-- row; the counts are the same once the statement is done. Under concurrent writers every transaction that adds,
-- changes or removes a counted row holds that counter's row lock until it commits (SQLite has one writer anyway).

CREATE TABLE row_counts (
    key TEXT PRIMARY KEY,
    n   BIGINT NOT NULL
);

INSERT INTO row_counts (key, n)
SELECT 'incoming:waiting', count(*) FROM incoming_payments WHERE completed = 0 AND expiry_announced = 0;

INSERT INTO row_counts (key, n)
SELECT 'outgoing:' || s.state, (SELECT count(*) FROM outgoing_payments o WHERE o.state = s.state)
FROM (SELECT 'sending' AS state UNION ALL SELECT 'completed' UNION ALL SELECT 'failed' UNION ALL SELECT 'cancelled') s;

INSERT INTO row_counts (key, n)
SELECT 'webhooks:' || s.state, (SELECT count(*) FROM webhook_deliveries d WHERE d.state = s.state)
FROM (SELECT 'pending' AS state UNION ALL SELECT 'delivered' UNION ALL SELECT 'dead') s;

-- incoming payments

CREATE FUNCTION row_counts_incoming_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n + 1 WHERE key = 'incoming:waiting';
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_incoming_insert AFTER INSERT ON incoming_payments
FOR EACH ROW WHEN (NEW.completed = 0 AND NEW.expiry_announced = 0)
EXECUTE FUNCTION row_counts_incoming_insert();

CREATE FUNCTION row_counts_incoming_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n + CASE WHEN NEW.completed = 0 AND NEW.expiry_announced = 0 THEN 1 ELSE -1 END
    WHERE key = 'incoming:waiting';
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_incoming_update AFTER UPDATE OF completed, expiry_announced ON incoming_payments
FOR EACH ROW
WHEN ((OLD.completed = 0 AND OLD.expiry_announced = 0) IS DISTINCT FROM (NEW.completed = 0 AND NEW.expiry_announced = 0))
EXECUTE FUNCTION row_counts_incoming_update();

CREATE FUNCTION row_counts_incoming_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'incoming:waiting';
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_incoming_delete AFTER DELETE ON incoming_payments
FOR EACH ROW WHEN (OLD.completed = 0 AND OLD.expiry_announced = 0)
EXECUTE FUNCTION row_counts_incoming_delete();

-- outgoing payments

CREATE FUNCTION row_counts_outgoing_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n + 1 WHERE key = 'outgoing:' || NEW.state;
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_outgoing_insert AFTER INSERT ON outgoing_payments
FOR EACH ROW EXECUTE FUNCTION row_counts_outgoing_insert();

CREATE FUNCTION row_counts_outgoing_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'outgoing:' || OLD.state;
    UPDATE row_counts SET n = n + 1 WHERE key = 'outgoing:' || NEW.state;
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_outgoing_update AFTER UPDATE OF state ON outgoing_payments
FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
EXECUTE FUNCTION row_counts_outgoing_update();

CREATE FUNCTION row_counts_outgoing_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'outgoing:' || OLD.state;
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_outgoing_delete AFTER DELETE ON outgoing_payments
FOR EACH ROW EXECUTE FUNCTION row_counts_outgoing_delete();

-- webhook deliveries

CREATE FUNCTION row_counts_webhooks_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n + 1 WHERE key = 'webhooks:' || NEW.state;
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_webhooks_insert AFTER INSERT ON webhook_deliveries
FOR EACH ROW EXECUTE FUNCTION row_counts_webhooks_insert();

CREATE FUNCTION row_counts_webhooks_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'webhooks:' || OLD.state;
    UPDATE row_counts SET n = n + 1 WHERE key = 'webhooks:' || NEW.state;
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_webhooks_update AFTER UPDATE OF state ON webhook_deliveries
FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
EXECUTE FUNCTION row_counts_webhooks_update();

CREATE FUNCTION row_counts_webhooks_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE row_counts SET n = n - 1 WHERE key = 'webhooks:' || OLD.state;
    RETURN NULL;
END
$$;

CREATE TRIGGER row_counts_webhooks_delete AFTER DELETE ON webhook_deliveries
FOR EACH ROW EXECUTE FUNCTION row_counts_webhooks_delete();
