-- opdesk schema v20 (PostgreSQL twin of migrations/0020_text_in_byte_order.sql): every text column compares
-- byte by byte (COLLATE "C"), as SQLite's do: ids, timestamps, cursors and names are ordered, paged and bounded
-- by it (a timestamp range ends at '~'). Databases used to need a C collation as a whole; one created with the
-- machine's locale (C.UTF-8, en_US.UTF-8, a managed service's default) now works, and one created the old way
-- gets the same order it had. A column a trigger names (states, a payment's grant and window) is compared only
-- for equality, which every collation PostgreSQL can create here does byte by byte: PostgreSQL does not alter
-- those, and they need not be. Rewrites the tables and their indexes once.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT cl.relname AS tab, a.attname AS col
        FROM pg_attribute a
        JOIN pg_class cl ON cl.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = cl.relnamespace
        JOIN pg_type t ON t.oid = a.atttypid
        WHERE n.nspname = current_schema()
          AND cl.relkind = 'r'
          AND a.attnum > 0
          AND NOT a.attisdropped
          AND t.typname = 'text'
          AND a.attcollation <> (SELECT oid FROM pg_collation WHERE collname = 'C' AND collnamespace = 'pg_catalog'::regnamespace)
          AND NOT EXISTS (
              SELECT 1 FROM pg_depend d
              WHERE d.classid = 'pg_trigger'::regclass
                AND d.refclassid = 'pg_class'::regclass
                AND d.refobjid = a.attrelid
                AND d.refobjsubid = a.attnum)
        ORDER BY cl.relname, a.attnum
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE text COLLATE "C"', c.tab, c.col);
    END LOOP;
END
$$;
