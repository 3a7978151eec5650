-- opdesk schema v13: an index for "money moved per minute" (the console's Overview): posted transfers by the
-- time they moved money, so the last minutes are read without scanning the journal.

CREATE INDEX transfers_moved ON transfers (COALESCE(resolved_at, created_at)) WHERE state = 'posted';
