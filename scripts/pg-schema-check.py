#!/usr/bin/env python3
"""Checks that migrations/pg/NNNN_*.sql give PostgreSQL the schema migrations/NNNN_*.sql give SQLite (issue #18).

    scripts/pg-schema-check.py postgres://postgres@127.0.0.1:PORT/postgres [--keep]

On a scratch database (created with the C collation and dropped at the end unless --keep) of the cluster at
the URL (scripts/pg-cluster.sh start DIR PORT prints one), and on a fresh in-memory SQLite:

1. applies the migrations one by one, each in its own transaction, and after some of them inserts the same
   representative rows on both (so that later data-moving statements, e.g. 0010, 0011 and 0014's backfills,
   run on non-empty tables);
2. compares per table: column names in order, types (INTEGER/BIGINT, TEXT/TEXT, BLOB/BYTEA, REAL/DOUBLE
   PRECISION), NOT NULL, whether a default exists (and its value), primary key, UNIQUE constraints, foreign keys
   (columns, target, ON DELETE/ON UPDATE), the number of CHECKs, the explicit indexes (names, columns, unique,
   partial predicate) and the trigger names;
3. compares every table's rows on both sides (from 0016 the counters only by their sums: PostgreSQL's triggers
   append to row_count_deltas, SQLite's update row_counts);
4. exercises the row_counts triggers with the same inserts, updates and deletes and compares the counters with
   their pending changes (with each other and with counts taken from the tables);
5. runs statements that both sides must refuse (CHECKs, unique partial indexes, foreign keys, the journal's
   triggers) and statements both must accept.

Exits 1 listing every difference. Needs python3 (stdlib) and psql (PSQL=/path/to/psql overrides).
PG_MIGRATIONS=DIR checks another set of PostgreSQL files (e.g. a deliberately broken copy, to check the checker).
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQLITE_DIR = ROOT / "migrations"
# PG_MIGRATIONS overrides the PostgreSQL side (to check the checker against a broken copy)
PG_DIR = Path(os.environ.get("PG_MIGRATIONS", ROOT / "migrations" / "pg"))
PSQL = os.environ.get("PSQL", "psql")
NULL = "\x1dNULL\x1d"
FS = "\x1f"
RS = "\x1e"

# Names that exist on one side only, on purpose (see the migration files).
PG_ONLY_TRIGGERS = {"transfers": {"transfers_never_truncated"}}

TYPES = {"INTEGER": "bigint", "TEXT": "text", "BLOB": "bytea", "REAL": "double precision"}

differences: list[str] = []


def diff(msg: str) -> None:
    differences.append(msg)


# ---------------------------------------------------------------------------------------------------------------
# PostgreSQL through psql


class PgError(Exception):
    pass


def psql(url: str, sql: str, *, tx: bool = True) -> list[list[str | None]]:
    """Runs `sql` (one or more statements) and returns the last statement's rows (NULL as None)."""
    args = [PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-F", FS, "-R", RS, "-P", f"null={NULL}", "-d", url]
    if tx:
        args.append("--single-transaction")
    p = subprocess.run(args + ["-f", "-"], input=sql, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise PgError(p.stderr.strip())
    out = p.stdout
    if out.endswith("\n"):
        out = out[:-1]
    if not out:
        return []
    return [[None if f == NULL else f for f in rec.split(FS)] for rec in out.split(RS) if rec != ""]


MARK = "@@result "


def psql_multi(url: str, queries: list[tuple[str, str]]) -> dict[str, list[list[str | None]]]:
    """Runs several SELECTs in one psql call; returns each one's rows by name. (One psql call per query made the
    check take minutes.) Values must not contain newlines (psql ends each result set with one)."""
    sql = "".join(f"SELECT '{MARK}{name}';\n{q.strip().rstrip(';')};\n" for name, q in queries)
    args = [PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-F", FS, "-R", RS, "-P", f"null={NULL}", "-d", url]
    p = subprocess.run(args + ["-f", "-"], input=sql, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise PgError(p.stderr.strip())
    out: dict[str, list[list[str | None]]] = {}
    current = None
    for chunk in p.stdout.split("\n"):
        if chunk.startswith(MARK):
            current = chunk[len(MARK):]
            out[current] = []
        elif chunk and current is not None:
            if out[current]:
                raise PgError(f"result of {current} has a newline in a value")
            out[current] = [[None if f == NULL else f for f in rec.split(FS)] for rec in chunk.split(RS)]
    missing = [name for name, _ in queries if name not in out]
    if missing:
        raise PgError(f"no result for {missing}")
    return out


def with_db(url: str, db: str) -> str:
    u = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + db, u.query, u.fragment))


# ---------------------------------------------------------------------------------------------------------------
# migrations


def migration_files() -> list[tuple[str, Path, Path]]:
    out = []
    for f in sorted(SQLITE_DIR.glob("[0-9][0-9][0-9][0-9]_*.sql")):
        pg = PG_DIR / f.name
        if not pg.exists():
            diff(f"missing PostgreSQL migration {pg}")
            continue
        out.append((f.name[:4], f, pg))
    for f in sorted(PG_DIR.glob("*.sql")):
        if not (SQLITE_DIR / f.name).exists():
            diff(f"{f} has no SQLite migration of the same name")
    return out


def sqlite_exec(conn: sqlite3.Connection, sql: str) -> None:
    """Runs a script in one transaction, as rusqlite_migration does."""
    conn.executescript("BEGIN;\n" + sql + "\nCOMMIT;")


def sqlite_migrate(conn: sqlite3.Connection, number: str, path: Path) -> None:
    sqlite_exec(conn, path.read_text())
    if number == "0010":  # rusqlite_migration's .foreign_key_check()
        bad = conn.execute("PRAGMA foreign_key_check").fetchall()
        if bad:
            diff(f"sqlite: foreign_key_check after 0010: {bad}")


# ---------------------------------------------------------------------------------------------------------------
# representative data: statement lists run on both sides after the migration of that number. A statement is a
# string (the same on both) or a (sqlite, pg) pair.

T = "2026-01-01T00:00:00.000Z"

DATA: dict[str, list] = {
    "0003": [
        f"INSERT INTO meta (key, value) VALUES ('instance', 'check')",
        f"INSERT INTO accounts (id, kind, asset_code, asset_scale, balance, no_overdraft, created_at) VALUES"
        f" ('a-set', 'settlement', 'USD', 2, -1000, 0, '{T}'),"
        f" ('a-w1', 'wallet', 'USD', 2, 900, 1, '{T}'),"
        f" ('a-w2', 'wallet', 'USD', 2, 100, 1, '{T}'),"
        f" ('a-peer', 'peer', 'USD', 2, 0, 0, '{T}')",
        f"INSERT INTO transfers (id, debit_account, credit_account, amount, state, posted_amount, kind, created_at,"
        f" resolved_at) VALUES"
        f" ('t1', 'a-set', 'a-w1', 1000, 'posted', 1000, 'deposit', '{T}', NULL),"
        f" ('t2', 'a-w1', 'a-w2', 100, 'posted', 100, 'payment', '{T}', '2026-01-01T00:00:01.000Z'),"
        f" ('t3', 'a-w1', 'a-w2', 50, 'pending', NULL, 'reservation', '{T}', NULL)",
        "UPDATE accounts SET pending_debits = 50 WHERE id = 'a-w1'",
        f"INSERT INTO wallet_addresses (id, name, public_name, account_id, demo, created_at) VALUES"
        f" ('w1', 'alice', 'Alice', 'a-w1', 1, '{T}'), ('w2', 'bob', NULL, 'a-w2', 0, '{T}')",
        f"INSERT INTO wallet_keys (id, wallet_id, kid, x, created_at) VALUES ('k1', 'w1', 'kid-1', 'xx', '{T}')",
        f"INSERT INTO grants (id, state, client, access, interactive, grant_endpoint, continue_id,"
        f" continue_token_hash, wait_secs, last_continued_at, created_at, updated_at) VALUES"
        f" ('g1', 'finalized', 'https://c.example/w', '[]', 0, 'https://as/', 'c1', 'h1', 5, '{T}', '{T}', '{T}')",
        f"INSERT INTO access_tokens (id, grant_id, value_hash, value_hint, manage_id, expires_in, created_at)"
        f" VALUES ('at1', 'g1', 'vh1', 'abcd', 'm1', 600, '{T}')",
        f"INSERT INTO incoming_payments (id, wallet_id, incoming_amount, received_amount, completed, expires_at,"
        f" expiry_announced, created_at, updated_at) VALUES"
        f" ('i1', 'w2', 100, 0, 0, '2026-02-01T00:00:00.000Z', 0, '{T}', '{T}'),"
        f" ('i2', 'w2', 100, 100, 1, NULL, 0, '{T}', '{T}'),"
        f" ('i3', 'w2', NULL, 0, 0, '2025-01-01T00:00:00.000Z', 1, '{T}', '{T}')",
        f"INSERT INTO quotes (id, wallet_id, receiver, incoming_payment_id, debit_amount, receive_amount,"
        f" receive_asset_code, receive_asset_scale, fee, expires_at, created_at) VALUES"
        f" ('q1', 'w1', 'https://r/i1', 'i1', 100, 100, 'USD', 2, 0, '{T}', '{T}')",
        f"INSERT INTO outgoing_payments (id, wallet_id, grant_id, quote_id, receiver, incoming_payment_id,"
        f" debit_amount, receive_amount, receive_asset_code, receive_asset_scale, state, reservation_id,"
        f" created_at, updated_at) VALUES"
        f" ('o1', 'w1', 'g1', 'q1', 'https://r/i1', 'i1', 100, 100, 'USD', 2, 'sending', 't3', '{T}', '{T}'),"
        f" ('o2', 'w1', NULL, NULL, 'https://r/x', NULL, 10, 10, 'USD', 2, 'failed', NULL, '{T}', '{T}')",
    ],
    "0004": [
        f"INSERT INTO stream_plans (id, receiver, peer, ilp_address, shared_secret, estimated_rate, minimum_rate,"
        f" max_packet_amount, source_amount, created_at) VALUES"
        f" ('o2', 'https://r/x', 'p1', 'g.x', 's', '1/1', '99/100', NULL, 10, '{T}')",
    ],
    "0005": [
        f"INSERT INTO peers (name, asset_code, asset_scale, incoming_token_hashes, routes, created_at, updated_at)"
        f" VALUES ('p1', 'EUR', 2, '[]', '[]', '{T}', '{T}')",
        f"INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft, created_at, peer) VALUES"
        f" ('a-p1', 'peer', 'EUR', 2, 0, '{T}', 'p1')",
    ],
    "0006": [
        f"INSERT INTO stream_receipts (incoming_payment_id, connection_id, received, updated_at)"
        f" VALUES ('i1', 'conn', 0, '{T}')",
    ],
    "0007": [
        (
            "INSERT INTO outgoing_payment_requests VALUES (X'" + "ab" * 32 + "', 'o1', 201, '{}', 1767225600)",
            "INSERT INTO outgoing_payment_requests VALUES ('\\x" + "ab" * 32 + "', 'o1', 201, '{}', 1767225600)",
        ),
    ],
    # five events, all pruned: 0011 must leave a mark row with seq 5 on both sides
    "0008": [
        *[
            f"INSERT INTO events (id, at, type, payload) VALUES ('e{n}', '{T}', 'wallet.created', '{{}}')"
            for n in range(1, 6)
        ],
        f"INSERT INTO webhook_deliveries (event_seq, event_id, type, body, state, next_attempt_at, created_at,"
        f" updated_at) VALUES (4, 'e4', 'wallet.created', '{{}}', 'delivered', '{T}', '{T}', '{T}'),"
        f" (5, 'e5', 'wallet.created', '{{}}', 'pending', '{T}', '{T}', '{T}')",
        "DELETE FROM events",
    ],
    "0009": [
        "UPDATE stream_plans SET link_asset_code = 'EUR', link_asset_scale = 2, link_rate = '9/10',"
        " link_debit_source = 10 WHERE id = 'o2'",
    ],
    "0010": [
        f"INSERT INTO accounts (id, kind, asset_code, asset_scale, balance, no_overdraft, created_at, peer) VALUES"
        f" ('a-l1', 'liquidity', 'EUR', 2, 0, 1, '{T}', 'p1')",
        f"INSERT INTO peer_limits (peer, send_limited, credit_limit, updated_at) VALUES ('p1', 1, NULL, '{T}')",
    ],
    # after the mark row: the next event must be 6 on both sides
    "0011": [
        f"INSERT INTO events (id, at, type, payload) VALUES ('e6', '{T}', 'wallet.created', '{{}}')",
    ],
    "0012": [
        f"INSERT INTO grant_steps (grant_id, seq, at, last_at, kind, actor, detail) VALUES"
        f" ('g1', 1, '{T}', '{T}', 'requested', 'client', '{{}}')",
        f"INSERT INTO grant_steps (grant_id, seq, at, last_at, kind, actor, detail) VALUES"
        f" ('g1', (SELECT COALESCE(MAX(seq), 0) + 1 FROM grant_steps WHERE grant_id = 'g1'), '{T}', '{T}',"
        f" 'decided', 'policy', '{{}}')",
    ],
}

# after 0014: the row_counts triggers, the same changes on both sides
TRIGGER_EXERCISE = [
    f"INSERT INTO incoming_payments (id, wallet_id, incoming_amount, created_at, updated_at) VALUES"
    f" ('i4', 'w2', 5, '{T}', '{T}'), ('i5', 'w2', 5, '{T}', '{T}'), ('i6', 'w2', 5, '{T}', '{T}')",
    f"INSERT INTO incoming_payments (id, wallet_id, incoming_amount, received_amount, completed, created_at,"
    f" updated_at) VALUES ('i7', 'w2', 5, 5, 1, '{T}', '{T}')",
    "UPDATE incoming_payments SET received_amount = 5, completed = 1 WHERE id = 'i4'",
    "UPDATE incoming_payments SET expiry_announced = 1 WHERE id IN ('i4', 'i5')",  # i4: no change of waiting
    "UPDATE incoming_payments SET completed = 0, received_amount = 0 WHERE id = 'i7'",  # back to waiting
    "UPDATE incoming_payments SET updated_at = 'x' WHERE id = 'i6'",  # not an UPDATE OF the columns
    "UPDATE incoming_payments SET completed = completed WHERE id = 'i6'",  # UPDATE OF, nothing changes
    "DELETE FROM stream_receipts",
    "DELETE FROM incoming_payments WHERE id IN ('i5', 'i6')",
    f"INSERT INTO outgoing_payments (id, wallet_id, receiver, debit_amount, receive_amount, receive_asset_code,"
    f" receive_asset_scale, state, created_at, updated_at) VALUES"
    f" ('o3', 'w1', 'r', 1, 1, 'USD', 2, 'sending', '{T}', '{T}'),"
    f" ('o4', 'w1', 'r', 1, 1, 'USD', 2, 'sending', '{T}', '{T}'),"
    f" ('o5', 'w1', 'r', 1, 1, 'USD', 2, 'sending', '{T}', '{T}')",
    "UPDATE outgoing_payments SET state = 'completed' WHERE id IN ('o3', 'o4')",
    "UPDATE outgoing_payments SET state = 'completed' WHERE id = 'o3'",  # same state: no change
    "UPDATE outgoing_payments SET attempts = attempts + 1",  # not an UPDATE OF state
    "UPDATE outgoing_payments SET state = 'cancelled' WHERE id = 'o5'",
    "DELETE FROM outgoing_payment_requests",
    "DELETE FROM outgoing_payments WHERE id = 'o4'",
    f"INSERT INTO webhook_deliveries (event_seq, event_id, type, body, state, next_attempt_at, created_at,"
    f" updated_at) VALUES (6, 'e6', 'wallet.created', '{{}}', 'pending', '{T}', '{T}', '{T}')"
    f" ON CONFLICT (event_seq) DO NOTHING",
    f"INSERT INTO webhook_deliveries (event_seq, event_id, type, body, state, next_attempt_at, created_at,"
    f" updated_at) VALUES (6, 'e6', 'wallet.created', '{{}}', 'pending', '{T}', '{T}', '{T}')"
    f" ON CONFLICT (event_seq) DO NOTHING",  # conflict: no count
    "UPDATE webhook_deliveries SET state = 'dead' WHERE event_seq = 5",
    "UPDATE webhook_deliveries SET attempts = 3 WHERE event_seq = 6",
    "DELETE FROM webhook_deliveries WHERE event_seq = 4",
]

COUNT_QUERY = """
SELECT 'incoming:waiting', count(*) FROM incoming_payments WHERE completed = 0 AND expiry_announced = 0
UNION ALL SELECT 'outgoing:' || s.state, (SELECT count(*) FROM outgoing_payments o WHERE o.state = s.state)
  FROM (SELECT 'sending' AS state UNION ALL SELECT 'completed' UNION ALL SELECT 'failed'
        UNION ALL SELECT 'cancelled') s
UNION ALL SELECT 'webhooks:' || s.state, (SELECT count(*) FROM webhook_deliveries d WHERE d.state = s.state)
  FROM (SELECT 'pending' AS state UNION ALL SELECT 'delivered' UNION ALL SELECT 'dead') s
"""

# statements both sides must refuse, run one by one against the final schema (each rolled back)
MUST_FAIL = [
    ("a final transfer is immutable", "UPDATE transfers SET memo = 'x' WHERE id = 't1'"),
    ("transfers are never deleted", "DELETE FROM transfers WHERE id = 't3'"),
    ("unknown account kind", f"INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft, created_at)"
     f" VALUES ('bad', 'bogus', 'USD', 2, 0, '{T}')"),
    ("liquidity without a peer", f"INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft, created_at)"
     f" VALUES ('bad', 'liquidity', 'USD', 2, 1, '{T}')"),
    ("liquidity may overdraw", f"INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft, created_at,"
     f" peer) VALUES ('bad', 'liquidity', 'USD', 2, 0, '{T}', 'p9')"),
    ("second liquidity account per peer and asset", f"INSERT INTO accounts (id, kind, asset_code, asset_scale,"
     f" no_overdraft, created_at, peer) VALUES ('bad', 'liquidity', 'EUR', 2, 1, '{T}', 'p1')"),
    ("second settlement account per asset", f"INSERT INTO accounts (id, kind, asset_code, asset_scale,"
     f" no_overdraft, created_at) VALUES ('bad', 'settlement', 'USD', 2, 0, '{T}')"),
    ("second legacy peer account per asset", f"INSERT INTO accounts (id, kind, asset_code, asset_scale,"
     f" no_overdraft, created_at) VALUES ('bad', 'peer', 'USD', 2, 0, '{T}')"),
    ("overdraft", "UPDATE accounts SET balance = 10 WHERE id = 'a-w1'"),
    ("asset scale out of range", "UPDATE accounts SET asset_scale = 256 WHERE id = 'a-w2'"),
    ("transfer to an unknown account", f"INSERT INTO transfers (id, debit_account, credit_account, amount, state,"
     f" kind, created_at) VALUES ('bad', 'a-w1', 'nope', 1, 'pending', 'x', '{T}')"),
    ("posted without posted_amount", f"INSERT INTO transfers (id, debit_account, credit_account, amount, state,"
     f" kind, created_at) VALUES ('bad', 'a-w1', 'a-w2', 1, 'posted', 'x', '{T}')"),
    ("duplicate wallet name", f"INSERT INTO wallet_addresses (id, name, account_id, created_at)"
     f" VALUES ('bad', 'alice', 'a-set', '{T}')"),
    ("duplicate wallet key kid", f"INSERT INTO wallet_keys (id, wallet_id, kid, x, created_at)"
     f" VALUES ('bad', 'w1', 'kid-1', 'x', '{T}')"),
    ("non-interactive pending grant", "UPDATE grants SET state = 'pending' WHERE id = 'g1'"),
    ("grant without client", "UPDATE grants SET client = NULL WHERE id = 'g1'"),
    ("received beyond the amount", "UPDATE incoming_payments SET received_amount = 101 WHERE id = 'i1'"),
    ("a quote used twice", f"INSERT INTO outgoing_payments (id, wallet_id, quote_id, receiver, debit_amount,"
     f" receive_amount, receive_asset_code, receive_asset_scale, state, created_at, updated_at)"
     f" VALUES ('bad', 'w1', 'q1', 'r', 1, 1, 'USD', 2, 'sending', '{T}', '{T}')"),
    ("sent beyond the debit amount", "UPDATE outgoing_payments SET sent_amount = 101 WHERE id = 'o1'"),
    ("unknown outgoing state", "UPDATE outgoing_payments SET state = 'lost' WHERE id = 'o1'"),
    ("digest of 31 bytes", (
        "INSERT INTO outgoing_payment_requests VALUES (X'" + "cd" * 31 + "', NULL, 201, '{}', 1)",
        "INSERT INTO outgoing_payment_requests VALUES ('\\x" + "cd" * 31 + "', NULL, 201, '{}', 1)",
    )),
    ("status out of range", (
        "INSERT INTO outgoing_payment_requests VALUES (X'" + "cd" * 32 + "', NULL, 500, '{}', 1)",
        "INSERT INTO outgoing_payment_requests VALUES ('\\x" + "cd" * 32 + "', NULL, 500, '{}', 1)",
    )),
    ("unknown webhook state", "UPDATE webhook_deliveries SET state = 'lost' WHERE event_seq = 5"),
    ("link scale out of range", "UPDATE stream_plans SET link_asset_scale = 300 WHERE id = 'o2'"),
    ("negative link_sent", "UPDATE stream_plans SET link_sent = -1 WHERE id = 'o2'"),
    ("endpoint without token", "UPDATE peers SET outgoing_endpoint = 'https://p' WHERE name = 'p1'"),
    ("negative credit limit", "UPDATE peer_limits SET credit_limit = -1 WHERE peer = 'p1'"),
    ("grant step seq 0", f"INSERT INTO grant_steps (grant_id, seq, at, last_at, kind, actor, detail)"
     f" VALUES ('g1', 0, '{T}', '{T}', 'x', 'x', '{{}}')"),
    ("duplicate grant step", f"INSERT INTO grant_steps (grant_id, seq, at, last_at, kind, actor, detail)"
     f" VALUES ('g1', 1, '{T}', '{T}', 'x', 'x', '{{}}')"),
    ("step of an unknown grant", f"INSERT INTO grant_steps (grant_id, seq, at, last_at, kind, actor, detail)"
     f" VALUES ('nope', 1, '{T}', '{T}', 'x', 'x', '{{}}')"),
    ("row_counts.n NOT NULL", "INSERT INTO row_counts (key, n) VALUES ('x', NULL)"),
    ("a pending transfer voided, then changed", "UPDATE transfers SET state = 'voided', resolved_at = 'x'"
     " WHERE id = 't3'; UPDATE transfers SET memo = 'x' WHERE id = 't3'"),
]

# the journal triggers' messages, which the Rust code may show or match
TRIGGER_MESSAGES = {
    "a final transfer is immutable": "transfer is final",
    "a pending transfer voided, then changed": "transfer is final",
    "transfers are never deleted": "transfers are never deleted",
}

# statements both sides must accept (each rolled back)
MUST_PASS = [
    ("a pending transfer resolves once", "UPDATE transfers SET state = 'posted', posted_amount = 50,"
     " resolved_at = 'x' WHERE id = 't3'"),
    ("a second peer's peer account", f"INSERT INTO accounts (id, kind, asset_code, asset_scale, no_overdraft,"
     f" created_at, peer) VALUES ('ok', 'peer', 'EUR', 2, 0, '{T}', 'p2')"),
    ("a liquidity account for another peer", f"INSERT INTO accounts (id, kind, asset_code, asset_scale,"
     f" no_overdraft, created_at, peer) VALUES ('ok', 'liquidity', 'EUR', 2, 1, '{T}', 'p2')"),
    ("upsert into meta", "INSERT INTO meta (key, value) VALUES ('instance', 'v2')"
     " ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
    ("mark row skipped by readers", "SELECT seq FROM events WHERE seq > 0 AND type <> '_mark' ORDER BY seq LIMIT 5"),
]


def pick(stmt, side: int) -> str:
    return stmt[side] if isinstance(stmt, tuple) else stmt


def run_data(sconn: sqlite3.Connection, purl: str, number: str, stmts: list) -> None:
    try:
        sqlite_exec(sconn, ";\n".join(pick(s, 0) for s in stmts) + ";")
    except sqlite3.Error as e:
        diff(f"data after {number}: sqlite refused: {e}")
    try:
        psql(purl, ";\n".join(pick(s, 1) for s in stmts) + ";")
    except PgError as e:
        diff(f"data after {number}: postgres refused: {e}")


# ---------------------------------------------------------------------------------------------------------------
# schema description, both sides in the same shape


def norm_expr(e: str | None) -> str | None:
    """A predicate or default in a comparable form: no casts, parentheses, spaces or case."""
    if e is None:
        return None
    e = re.sub(r"::[a-z ]+(\[\])?", "", e.lower())
    e = re.sub(r"[()\s]", "", e)
    return e


def sqlite_checks(sql: str) -> int:
    sql = re.sub(r"--[^\n]*", "", sql)
    sql = re.sub(r"'[^']*'", "''", sql)
    return len(re.findall(r"\bCHECK\s*\(", sql, flags=re.I))


def sqlite_schema(conn: sqlite3.Connection) -> dict:
    out = {}
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    for t in tables:
        cols = conn.execute(f"PRAGMA table_info('{t}')").fetchall()
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (t,)).fetchone()[0]
        columns = []
        for _cid, name, typ, notnull, dflt, pk in cols:
            # a primary key column is never NULL in these tables (STRICT, WITHOUT ROWID, or an INTEGER rowid alias)
            columns.append((name, TYPES.get(typ.upper(), "?" + typ), bool(notnull or pk), norm_expr(dflt)))
        pk = [c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5])]
        uniques, indexes = set(), {}
        for _seq, iname, unique, origin, partial in conn.execute(f"PRAGMA index_list('{t}')").fetchall():
            icols = [r[2] if r[2] is not None else "<expr>" for r in conn.execute(f"PRAGMA index_info('{iname}')")]
            if origin == "u":
                uniques.add(tuple(icols))
            elif origin == "c":
                isql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (iname,)).fetchone()[0]
                m = re.search(r"\bWHERE\b(.*)$", isql, flags=re.S | re.I)
                indexes[iname] = (tuple(icols), bool(unique), norm_expr(m.group(1)) if m else None)
        fks = {}
        for fid, _seq, target, frm, to, on_update, on_delete, _match in conn.execute(
                f"PRAGMA foreign_key_list('{t}')").fetchall():
            f = fks.setdefault(fid, [target, [], [], on_update.upper(), on_delete.upper()])
            f[1].append(frm)
            f[2].append(to)
        fkset = {(tuple(f[1]), f[0], tuple(f[2]), f[3], f[4]) for f in fks.values()}
        triggers = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (t,))}
        out[t] = {
            "columns": columns, "pk": pk, "uniques": uniques, "indexes": indexes, "fks": fkset,
            "checks": sqlite_checks(sql), "triggers": triggers,
        }
    return out


FK_ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}


def pg_schema(url: str) -> dict:
    tables = [r[0] for r in psql(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
    queries = []
    for t in tables:
        queries += [
            (f"{t}/columns", f"""
            SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
                   a.attidentity
            FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = 'public.{t}'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"""),
            (f"{t}/constraints", f"""
            SELECT c.contype, c.conname,
                   (SELECT string_agg(a.attname, ',' ORDER BY k.i) FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
                    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n),
                   c.confrelid::regclass::text,
                   (SELECT string_agg(a.attname, ',' ORDER BY k.i) FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
                    JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n),
                   c.confupdtype, c.confdeltype
            FROM pg_constraint c WHERE c.conrelid = 'public.{t}'::regclass ORDER BY c.conname"""),
            (f"{t}/indexes", f"""
            SELECT ic.relname, i.indisunique,
                   (SELECT string_agg(coalesce(a.attname, '<expr>'), ',' ORDER BY k.i)
                    FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, i)
                    LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n AND k.n <> 0),
                   pg_get_expr(i.indpred, i.indrelid)
            FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
            WHERE i.indrelid = 'public.{t}'::regclass
              AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)"""),
            (f"{t}/triggers", f"""
            SELECT tgname FROM pg_trigger WHERE tgrelid = 'public.{t}'::regclass AND NOT tgisinternal"""),
        ]
    res = psql_multi(url, queries) if queries else {}
    out = {}
    for t in tables:
        cols = res[f"{t}/columns"]
        columns = [(n, typ, nn == "t", norm_expr(dflt)) for n, typ, nn, dflt, _ident in cols]
        identity = [n for n, _typ, _nn, _d, ident in cols if ident]
        pk, uniques, fks, checks = [], set(), set(), 0
        for typ, _name, keys, target, tkeys, upd, dele in res[f"{t}/constraints"]:
            if typ == "p":
                pk = keys.split(",")
            elif typ == "u":
                uniques.add(tuple(keys.split(",")))
            elif typ == "f":
                fks.add((tuple(keys.split(",")), target, tuple(tkeys.split(",")), FK_ACTIONS[upd], FK_ACTIONS[dele]))
            elif typ == "c":
                checks += 1
        indexes = {}
        for name, unique, keys, pred in res[f"{t}/indexes"]:
            indexes[name] = (tuple(keys.split(",")), unique == "t", norm_expr(pred))
        triggers = {r[0] for r in res[f"{t}/triggers"]}
        out[t] = {
            "columns": columns, "pk": pk, "uniques": uniques, "indexes": indexes, "fks": fks, "checks": checks,
            "triggers": triggers, "identity": identity,
        }
    return out


def compare_schemas(s: dict, p: dict, where: str) -> None:
    for t in sorted(set(s) | set(p)):
        if t not in p:
            diff(f"{where}: table {t} only in SQLite")
            continue
        if t not in s:
            diff(f"{where}: table {t} only in PostgreSQL")
            continue
        a, b = s[t], p[t]
        an = [c[0] for c in a["columns"]]
        bn = [c[0] for c in b["columns"]]
        if an != bn:
            diff(f"{where}: {t}: columns differ: sqlite {an} / postgres {bn}")
        for ca, cb in zip(a["columns"], b["columns"]):
            if ca[0] != cb[0]:
                continue
            if ca[1] != cb[1]:
                diff(f"{where}: {t}.{ca[0]}: type sqlite {ca[1]} (mapped) / postgres {cb[1]}")
            if ca[2] != cb[2]:
                diff(f"{where}: {t}.{ca[0]}: NOT NULL sqlite {ca[2]} / postgres {cb[2]}")
            if (ca[3] is None) != (cb[3] is None):
                diff(f"{where}: {t}.{ca[0]}: default sqlite {ca[3]} / postgres {cb[3]}")
            elif ca[3] != cb[3]:
                diff(f"{where}: {t}.{ca[0]}: default value sqlite {ca[3]} / postgres {cb[3]}")
        for k in ("pk", "uniques", "fks", "checks"):
            if a[k] != b[k]:
                diff(f"{where}: {t}: {k} sqlite {sorted(a[k]) if isinstance(a[k], set) else a[k]}"
                     f" / postgres {sorted(b[k]) if isinstance(b[k], set) else b[k]}")
        if set(a["indexes"]) != set(b["indexes"]):
            diff(f"{where}: {t}: index names sqlite {sorted(a['indexes'])} / postgres {sorted(b['indexes'])}")
        for name in sorted(set(a["indexes"]) & set(b["indexes"])):
            if a["indexes"][name] != b["indexes"][name]:
                diff(f"{where}: {t}: index {name}: sqlite {a['indexes'][name]} / postgres {b['indexes'][name]}")
        extra = PG_ONLY_TRIGGERS.get(t, set())
        if a["triggers"] != b["triggers"] - extra:
            diff(f"{where}: {t}: triggers sqlite {sorted(a['triggers'])} / postgres {sorted(b['triggers'] - extra)}")
        # a rowid alias (INTEGER PRIMARY KEY) generates its numbers; so must an identity column
        for name in b["identity"]:
            if a["pk"] != [name]:
                diff(f"{where}: {t}.{name}: identity in PostgreSQL but not SQLite's INTEGER PRIMARY KEY")


# ---------------------------------------------------------------------------------------------------------------
# rows


def sqlite_text(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, bytes):
        return "\\x" + v.hex()
    return str(v)


def compare_rows(sconn: sqlite3.Connection, purl: str, schema: dict, where: str) -> None:
    queries, expected = [], {}
    for t, desc in sorted(schema.items()):
        if t in COUNTER_TABLES and "row_count_deltas" in schema:
            # from 0016 the counters are split differently on each side: compare_counts compares their sums
            continue
        cols = [c[0] for c in desc["columns"]]
        order = ", ".join(desc["pk"] or cols)
        # the mark row's `at` is the migration's clock: compare its form (length) only
        sel = ", ".join(
            "CASE WHEN type = '_mark' THEN length(at) ELSE at END" if (t == "events" and c == "at") else c
            for c in cols)
        expected[t] = [[sqlite_text(v) for v in r] for r in sconn.execute(f"SELECT {sel} FROM {t} ORDER BY {order}")]
        sel_pg = sel.replace("THEN length(at) ELSE at END", "THEN length(at)::text ELSE at END")
        queries.append((t, f"SELECT {sel_pg} FROM {t} ORDER BY {order}"))
    got = psql_multi(purl, queries)
    for t, srows in expected.items():
        if srows != got[t]:
            diff(f"{where}: rows of {t} differ:\n    sqlite   {srows}\n    postgres {got[t]}")


COUNTER_TABLES = ("row_counts", "row_count_deltas")

# the counters with their pending changes (0016: PostgreSQL's triggers append to row_count_deltas)
COUNTED = (
    "SELECT key, n + (SELECT COALESCE(SUM(d), 0) FROM row_count_deltas x WHERE x.key = row_counts.key) "
    "FROM row_counts"
)


def compare_counts(sconn: sqlite3.Connection, purl: str, where: str) -> None:
    s = sorted(tuple(map(str, r)) for r in sconn.execute(COUNTED))
    p = sorted(tuple(r) for r in psql(purl, COUNTED))
    s_actual = sorted(tuple(map(str, r)) for r in sconn.execute(COUNT_QUERY))
    p_actual = sorted(tuple(r) for r in psql(purl, COUNT_QUERY))
    if s != p:
        diff(f"{where}: row_counts differ: sqlite {s} / postgres {p}")
    if s != s_actual:
        diff(f"{where}: sqlite row_counts {s} are not the tables' counts {s_actual}")
    if p != p_actual:
        diff(f"{where}: postgres row_counts {p} are not the tables' counts {p_actual}")
    return s


def refusals(sconn: sqlite3.Connection, purl: str) -> None:
    for label, stmt in MUST_FAIL + MUST_PASS:
        want_fail = (label, stmt) in MUST_FAIL
        sql_s, sql_p = pick(stmt, 0), pick(stmt, 1)
        try:
            sconn.executescript("BEGIN;\n" + sql_s + ";\n")
            s_failed = None
        except sqlite3.Error as e:
            s_failed = str(e)
        finally:
            if sconn.in_transaction:
                sconn.execute("ROLLBACK")
        try:
            psql(purl, "BEGIN;\n" + sql_p + ";\nROLLBACK;", tx=False)
            p_failed = None
        except PgError as e:
            p_failed = e.args[0].splitlines()[0] if e.args[0] else "error"
        if want_fail and (s_failed is None or p_failed is None):
            diff(f"must fail, {label}: sqlite {s_failed or 'accepted'} / postgres {p_failed or 'accepted'}")
        if not want_fail and (s_failed is not None or p_failed is not None):
            diff(f"must pass, {label}: sqlite {s_failed or 'accepted'} / postgres {p_failed or 'accepted'}")
        want = TRIGGER_MESSAGES.get(label)
        if want and s_failed and p_failed:
            # the journal's triggers: the same message on both sides
            if want not in s_failed or want not in p_failed:
                diff(f"must fail, {label}: messages sqlite {s_failed!r} / postgres {p_failed!r}")


# ---------------------------------------------------------------------------------------------------------------


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    keep = "--keep" in sys.argv[1:]
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    url = args[0]
    scratch = f"opdesk_schema_check_{os.getpid()}"
    purl = with_db(url, scratch)
    psql(url, f'CREATE DATABASE "{scratch}" TEMPLATE template0 ENCODING UTF8 LC_COLLATE \'C\' LC_CTYPE \'C\'',
         tx=False)
    try:
        sconn = sqlite3.connect(":memory:", isolation_level=None)
        sconn.execute("PRAGMA foreign_keys = ON")
        files = migration_files()
        for number, spath, ppath in files:
            sqlite_migrate(sconn, number, spath)
            try:
                psql(purl, ppath.read_text())
            except PgError as e:
                diff(f"{ppath} failed: {e}")
                break
            s, p = sqlite_schema(sconn), pg_schema(purl)
            compare_schemas(s, p, f"after {number}")
            if number in DATA:
                run_data(sconn, purl, number, DATA[number])
            compare_rows(sconn, purl, s, f"after {number}")
        else:
            s = sqlite_schema(sconn)
            compare_counts(sconn, purl, "row_counts after 0014's backfill")
            for i, stmt in enumerate(TRIGGER_EXERCISE):
                run_data(sconn, purl, f"0014 (trigger exercise {i})", [stmt])
                compare_counts(sconn, purl, f"row_counts after trigger exercise {i}: {stmt[:60]}…")
            compare_rows(sconn, purl, s, "after the trigger exercise")
            refusals(sconn, purl)
            counts = sorted(sconn.execute(COUNTED))
            print(f"checked {len(files)} migrations, {len(s)} tables; row_counts at the end: {counts}")
    finally:
        if keep:
            print(f"kept database {scratch}")
        else:
            psql(url, f'DROP DATABASE IF EXISTS "{scratch}"', tx=False)
    if differences:
        # a schema difference shows again after every later migration: report it once, from where it starts
        first: dict[str, str] = {}
        for d in differences:
            m = re.match(r"after (\d{4}): (.*)$", d, flags=re.S)
            key, where = (m.group(2), f"from {m.group(1)} on: ") if m else (d, "")
            first.setdefault(key, where)
        print(f"{len(first)} difference(s):")
        for key, where in first.items():
            print(" -", where + key)
        return 1
    print("PostgreSQL and SQLite schemas are equivalent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
