-- opdesk schema v13 (PostgreSQL twin of migrations/0013_transfers_moved.sql): an index for "money moved per
-- minute" (the console's Overview): posted transfers by the time they moved money, so the last minutes are read
-- without scanning the journal. Queries must spell the expression the same way to use it.

CREATE INDEX transfers_moved ON transfers ((COALESCE(resolved_at, created_at))) WHERE state = 'posted';
