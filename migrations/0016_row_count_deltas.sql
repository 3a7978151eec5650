-- opdesk schema v16: changes to the row counters of 0014 kept as rows to add, folded into row_counts later.
-- SQLite has one writer and its triggers go on updating row_counts directly, so this table stays empty here. On
-- PostgreSQL (migrations/pg/0016) the triggers append to it instead: concurrent transactions that all updated the
-- one counter row failed all but one of them under SERIALIZABLE. Readers add both; PostgreSQL nodes fold the
-- rows into row_counts every few seconds.
CREATE TABLE row_count_deltas (
    key TEXT NOT NULL,
    d   INTEGER NOT NULL
) STRICT;

CREATE INDEX row_count_deltas_by_key ON row_count_deltas (key);
