-- opdesk schema v18: what each outgoing-payment grant has spent, per interval window, kept by triggers in the
-- same statement as the payment row it counts. A create under a grant read every earlier payment of the grant
-- (of its window) to check the limits: the longer a grant paid (Web Monetization pays one grant for months),
-- the slower each payment. A payment counts its debit and receive amounts, or what it sent and delivered once
-- failed or cancelled. Payments record their window (the start of the grant's interval window at their
-- creation, '' for a grant without interval); payments from before this migration have none and are still
-- counted from their rows, through an index of those rows alone.
ALTER TABLE outgoing_payments ADD COLUMN grant_window TEXT;

CREATE TABLE grant_spent (
    grant_id            TEXT NOT NULL,
    window_start        TEXT NOT NULL,
    debit               INTEGER NOT NULL,
    receive             INTEGER NOT NULL,
    -- the receive asset of the window's first payment
    receive_asset_code  TEXT NOT NULL,
    receive_asset_scale INTEGER NOT NULL,
    PRIMARY KEY (grant_id, window_start)
) STRICT;

CREATE INDEX outgoing_unwindowed_by_grant ON outgoing_payments (grant_id, created_at)
    WHERE grant_window IS NULL AND grant_id IS NOT NULL;

CREATE TRIGGER grant_spent_insert AFTER INSERT ON outgoing_payments
WHEN NEW.grant_id IS NOT NULL AND NEW.grant_window IS NOT NULL
BEGIN
    INSERT INTO grant_spent (grant_id, window_start, debit, receive, receive_asset_code, receive_asset_scale)
    VALUES (NEW.grant_id, NEW.grant_window,
            CASE WHEN NEW.state IN ('failed', 'cancelled') THEN NEW.sent_amount ELSE NEW.debit_amount END,
            CASE WHEN NEW.state IN ('failed', 'cancelled') THEN NEW.delivered_amount ELSE NEW.receive_amount END,
            NEW.receive_asset_code, NEW.receive_asset_scale)
    ON CONFLICT (grant_id, window_start)
    DO UPDATE SET debit = debit + excluded.debit, receive = receive + excluded.receive;
END;

CREATE TRIGGER grant_spent_update AFTER UPDATE OF state, sent_amount, delivered_amount ON outgoing_payments
WHEN NEW.grant_id IS NOT NULL AND NEW.grant_window IS NOT NULL
 AND (CASE WHEN NEW.state IN ('failed', 'cancelled') THEN NEW.sent_amount ELSE NEW.debit_amount END
      <> CASE WHEN OLD.state IN ('failed', 'cancelled') THEN OLD.sent_amount ELSE OLD.debit_amount END
   OR CASE WHEN NEW.state IN ('failed', 'cancelled') THEN NEW.delivered_amount ELSE NEW.receive_amount END
      <> CASE WHEN OLD.state IN ('failed', 'cancelled') THEN OLD.delivered_amount ELSE OLD.receive_amount END)
BEGIN
    UPDATE grant_spent
    SET debit = debit
            + CASE WHEN NEW.state IN ('failed', 'cancelled') THEN NEW.sent_amount ELSE NEW.debit_amount END
            - CASE WHEN OLD.state IN ('failed', 'cancelled') THEN OLD.sent_amount ELSE OLD.debit_amount END,
        receive = receive
            + CASE WHEN NEW.state IN ('failed', 'cancelled') THEN NEW.delivered_amount ELSE NEW.receive_amount END
            - CASE WHEN OLD.state IN ('failed', 'cancelled') THEN OLD.delivered_amount ELSE OLD.receive_amount END
    WHERE grant_id = NEW.grant_id AND window_start = NEW.grant_window;
END;

CREATE TRIGGER grant_spent_delete AFTER DELETE ON outgoing_payments
WHEN OLD.grant_id IS NOT NULL AND OLD.grant_window IS NOT NULL
BEGIN
    UPDATE grant_spent
    SET debit = debit - CASE WHEN OLD.state IN ('failed', 'cancelled') THEN OLD.sent_amount ELSE OLD.debit_amount END,
        receive = receive
            - CASE WHEN OLD.state IN ('failed', 'cancelled') THEN OLD.delivered_amount ELSE OLD.receive_amount END
    WHERE grant_id = OLD.grant_id AND window_start = OLD.grant_window;
END;
