-- opdesk schema v20: nothing for SQLite, whose text already compares byte by byte (BINARY). Its PostgreSQL
-- twin declares that order on every text column, so that a database created with the machine's locale works.
SELECT 1;
