-- opdesk schema v16 (PostgreSQL twin of migrations/0016_row_count_deltas.sql): the row counters' triggers append
-- a row per change to row_count_deltas instead of updating the counter row. Under SERIALIZABLE every transaction
-- that updated the one `incoming:waiting` row (every incoming-payment create) failed against any concurrent one
-- and ran again; appending rows conflicts with nothing. Readers add row_counts and the deltas; nodes fold the
-- deltas into row_counts every few seconds. The trigger functions keep their names, triggers and conditions.
CREATE TABLE row_count_deltas (
    key TEXT NOT NULL,
    d   BIGINT NOT NULL
);

CREATE INDEX row_count_deltas_by_key ON row_count_deltas (key);

CREATE OR REPLACE FUNCTION row_counts_incoming_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('incoming:waiting', 1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_incoming_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d)
    VALUES ('incoming:waiting', CASE WHEN NEW.completed = 0 AND NEW.expiry_announced = 0 THEN 1 ELSE -1 END);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_incoming_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('incoming:waiting', -1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_outgoing_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('outgoing:' || NEW.state, 1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_outgoing_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('outgoing:' || OLD.state, -1), ('outgoing:' || NEW.state, 1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_outgoing_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('outgoing:' || OLD.state, -1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_webhooks_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('webhooks:' || NEW.state, 1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_webhooks_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('webhooks:' || OLD.state, -1), ('webhooks:' || NEW.state, 1);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION row_counts_webhooks_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_count_deltas (key, d) VALUES ('webhooks:' || OLD.state, -1);
    RETURN NULL;
END
$$;
