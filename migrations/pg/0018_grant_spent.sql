-- opdesk schema v18 (PostgreSQL twin of migrations/0018_grant_spent.sql): what each outgoing-payment grant has
-- spent, per interval window, kept by triggers in the same statement as the payment row it counts. A create
-- under a grant read every earlier payment of the grant (of its window) to check the limits: the longer a
-- grant paid, the slower each payment. A payment counts its debit and receive amounts, or what it sent and
-- delivered once failed or cancelled. Payments record their window (the start of the grant's interval window
-- at their creation, '' for a grant without interval); payments from before this migration have none and are
-- still counted from their rows, through an index of those rows alone. Concurrent creates under one grant
-- meet on its row, as they met on the payments they read before: the limits need them one after the other.
ALTER TABLE outgoing_payments ADD COLUMN grant_window TEXT;

CREATE TABLE grant_spent (
    grant_id            TEXT NOT NULL,
    window_start        TEXT NOT NULL,
    debit               BIGINT NOT NULL,
    receive             BIGINT NOT NULL,
    receive_asset_code  TEXT NOT NULL,
    receive_asset_scale BIGINT NOT NULL,
    PRIMARY KEY (grant_id, window_start)
);

CREATE INDEX outgoing_unwindowed_by_grant ON outgoing_payments (grant_id, created_at)
    WHERE grant_window IS NULL AND grant_id IS NOT NULL;

CREATE FUNCTION grant_spent_counted_debit(state TEXT, debit BIGINT, sent BIGINT) RETURNS BIGINT
    LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN state IN ('failed', 'cancelled') THEN sent ELSE debit END $$;

CREATE FUNCTION grant_spent_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO grant_spent (grant_id, window_start, debit, receive, receive_asset_code, receive_asset_scale)
    VALUES (NEW.grant_id, NEW.grant_window,
            grant_spent_counted_debit(NEW.state, NEW.debit_amount, NEW.sent_amount),
            grant_spent_counted_debit(NEW.state, NEW.receive_amount, NEW.delivered_amount),
            NEW.receive_asset_code, NEW.receive_asset_scale)
    ON CONFLICT (grant_id, window_start)
    DO UPDATE SET debit = grant_spent.debit + excluded.debit, receive = grant_spent.receive + excluded.receive;
    RETURN NULL;
END
$$;

CREATE FUNCTION grant_spent_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE grant_spent
    SET debit = debit + grant_spent_counted_debit(NEW.state, NEW.debit_amount, NEW.sent_amount)
                      - grant_spent_counted_debit(OLD.state, OLD.debit_amount, OLD.sent_amount),
        receive = receive + grant_spent_counted_debit(NEW.state, NEW.receive_amount, NEW.delivered_amount)
                          - grant_spent_counted_debit(OLD.state, OLD.receive_amount, OLD.delivered_amount)
    WHERE grant_id = NEW.grant_id AND window_start = NEW.grant_window;
    RETURN NULL;
END
$$;

CREATE FUNCTION grant_spent_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE grant_spent
    SET debit = debit - grant_spent_counted_debit(OLD.state, OLD.debit_amount, OLD.sent_amount),
        receive = receive - grant_spent_counted_debit(OLD.state, OLD.receive_amount, OLD.delivered_amount)
    WHERE grant_id = OLD.grant_id AND window_start = OLD.grant_window;
    RETURN NULL;
END
$$;

CREATE TRIGGER grant_spent_insert AFTER INSERT ON outgoing_payments
    FOR EACH ROW WHEN (NEW.grant_id IS NOT NULL AND NEW.grant_window IS NOT NULL)
    EXECUTE FUNCTION grant_spent_insert();

CREATE TRIGGER grant_spent_update AFTER UPDATE OF state, sent_amount, delivered_amount ON outgoing_payments
    FOR EACH ROW WHEN (NEW.grant_id IS NOT NULL AND NEW.grant_window IS NOT NULL
        AND (grant_spent_counted_debit(NEW.state, NEW.debit_amount, NEW.sent_amount)
                 <> grant_spent_counted_debit(OLD.state, OLD.debit_amount, OLD.sent_amount)
             OR grant_spent_counted_debit(NEW.state, NEW.receive_amount, NEW.delivered_amount)
                 <> grant_spent_counted_debit(OLD.state, OLD.receive_amount, OLD.delivered_amount)))
    EXECUTE FUNCTION grant_spent_update();

CREATE TRIGGER grant_spent_delete AFTER DELETE ON outgoing_payments
    FOR EACH ROW WHEN (OLD.grant_id IS NOT NULL AND OLD.grant_window IS NOT NULL)
    EXECUTE FUNCTION grant_spent_delete();
