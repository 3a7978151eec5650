//! The SQL interface every repo function speaks, over either backend: a connection shaped like rusqlite's
//! (`prepare_cached`, `query_row`, `params!`, `optional()`) that runs the same statements on SQLite or on
//! PostgreSQL.
//!
//! Values cross it as SQLite's storage classes — integer (`i64`), real, text, blob, null — whatever the
//! backend: the PostgreSQL schema (`migrations/pg/`) stores every integer and flag as `BIGINT`, text as `TEXT`
//! and blobs as `BYTEA`, so a value reads back as what was bound. The statements are written once, with
//! SQLite's `?N` placeholders; on PostgreSQL they are rewritten to `$N` on first use and the prepared
//! statement is cached per connection. One dialect rule is applied there too: `LIKE` becomes `ILIKE` (SQLite's
//! `LIKE` ignores ASCII case). Every other statement must mean the same on both, which the test suite checks
//! by running on both; in particular a parameter PostgreSQL cannot type from where it stands (`?1 IS NULL`
//! alone) says its type (`CAST(?1 AS TEXT) IS NULL`), and an upsert names the column it adds to
//! (`SET n = t.n + excluded.n`). The values that cross it are in `value`, the PostgreSQL side in `pg`.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    fmt,
};

mod pg;
mod value;

use pg::pg_value;
pub use pg::{Listener, Pg, to_postgres};
pub use value::{FromSql, Params, ToSql, Value, ValueRef};

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A statement that failed, on either backend.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", pg_message(.0))]
    Pg(#[from] postgres::Error),
    /// `query_row` found no row (see [`OptionalExtension::optional`]).
    #[error("query returned no rows")]
    NoRows,
    /// A column's value does not convert to the type asked for, or a parameter does not bind.
    #[error("column {column}: {message}")]
    Convert { column: usize, message: String },
}

/// PostgreSQL's errors print as "db error" alone; the server's message and code say what happened.
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("postgres: {} ({})", db.message(), db.code().code()),
        None => format!("postgres: {e}"),
    }
}

impl Error {
    /// The database or the disk is full: retryable once there is room.
    pub fn is_full(&self) -> bool {
        match self {
            Self::Sqlite(e) => e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
            // class 53: disk full, out of memory, too many connections; or the server went away
            Self::Pg(e) => e.is_closed() || e.code().is_some_and(|c| c.code().starts_with("53")),
            Self::NoRows | Self::Convert { .. } => false,
        }
    }

    /// The transaction lost a race with a concurrent one (PostgreSQL's serialization failure or deadlock):
    /// it was rolled back and running it again is correct.
    pub fn is_conflict(&self) -> bool {
        match self {
            Self::Pg(e) => e.code().is_some_and(|c| {
                *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
                    || *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
            }),
            Self::Sqlite(_) | Self::NoRows | Self::Convert { .. } => false,
        }
    }

    /// A value of `column` that does not convert.
    pub fn convert(column: usize, message: impl fmt::Display) -> Self {
        Self::Convert {
            column,
            message: message.to_string(),
        }
    }
}

/// `query_row`'s "no row" as `None`.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Parameters of mixed types, as a slice of `&dyn ToSql`.
#[macro_export]
macro_rules! sql_params {
    () => {
        &[] as &[&dyn $crate::store::db::ToSql]
    };
    ($($p:expr),+ $(,)?) => {
        &[$(&$p as &dyn $crate::store::db::ToSql),+] as &[&dyn $crate::store::db::ToSql]
    };
}

pub use sql_params as params;

/// A column index (rusqlite's shape: `row.get(0)`, `row.get::<_, String>(1)`).
pub trait RowIndex: Copy {
    fn index(self) -> usize;
}

impl RowIndex for usize {
    fn index(self) -> usize {
        self
    }
}

/// One row of a result.
#[derive(Clone, Copy)]
pub enum Row<'a> {
    Sqlite(&'a rusqlite::Row<'a>),
    Pg(&'a postgres::Row),
}

impl Row<'_> {
    /// Column `idx` as `T`.
    pub fn get<I: RowIndex, T: FromSql>(&self, idx: I) -> Result<T> {
        let i = idx.index();
        let v = self.get_ref(i)?;
        T::from_sql(v).map_err(|m| Error::convert(i, m))
    }

    /// Column `idx` as it is stored.
    pub fn get_ref(&self, i: usize) -> Result<ValueRef<'_>> {
        match self {
            Self::Sqlite(r) => Ok(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Null => ValueRef::Null,
                rusqlite::types::ValueRef::Integer(n) => ValueRef::Integer(n),
                rusqlite::types::ValueRef::Real(f) => ValueRef::Real(f),
                rusqlite::types::ValueRef::Text(t) => {
                    ValueRef::Text(std::str::from_utf8(t).map_err(|e| Error::convert(i, e))?)
                }
                rusqlite::types::ValueRef::Blob(b) => ValueRef::Blob(b),
            }),
            Self::Pg(r) => pg_value(r, i),
        }
    }
}

enum Backend {
    Sqlite(rusqlite::Connection),
    Pg(Box<Pg>),
}

/// A connection to the store's database: SQLite or PostgreSQL.
pub struct Connection {
    backend: Backend,
    /// Savepoints open, for their names.
    depth: Cell<u32>,
}

/// Statements kept prepared per SQLite connection. rusqlite keeps 16 by default, fewer than the store runs:
/// each evicted statement was parsed and planned again on its next use.
const STATEMENT_CACHE: usize = 512;

impl From<rusqlite::Connection> for Connection {
    fn from(c: rusqlite::Connection) -> Self {
        c.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // One plan per statement whatever its parameters. Without it a statement whose parameter is a LIKE
        // pattern (the lists' search, `?6 IS NULL OR … LIKE ?6`) is parsed and planned again on every run,
        // since binding that parameter expires the plan.
        if let Err(e) = c.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true) {
            tracing::warn!(error = %e, "SQLite: cannot keep query plans stable");
        }
        Self {
            backend: Backend::Sqlite(c),
            depth: Cell::new(0),
        }
    }
}

impl Connection {
    /// Connects to PostgreSQL at `url` (`postgres://…`).
    pub fn connect_postgres(url: &str) -> Result<Self> {
        let client = postgres::Client::connect(url, postgres::NoTls)?;
        Ok(Self {
            backend: Backend::Pg(Box::new(Pg {
                client: RefCell::new(client),
                cache: RefCell::new(HashMap::new()),
                in_tx: Cell::new(false),
                conflicted: Cell::new(false),
                job_own: Cell::new(false),
                doomed: Cell::new(false),
                failed: Cell::new(false),
            })),
            depth: Cell::new(0),
        })
    }

    /// Closes the connection, reporting what closing it found.
    pub fn close(self) -> Result<()> {
        match self.backend {
            Backend::Sqlite(c) => c.close().map_err(|(_, e)| Error::Sqlite(e)),
            Backend::Pg(p) => Ok(p.client.into_inner().close()?),
        }
    }

    /// An in-memory SQLite database (tests).
    pub fn open_in_memory() -> Result<Self> {
        Ok(rusqlite::Connection::open_in_memory()?.into())
    }

    /// The SQLite connection underneath, when this is SQLite (pragmas, backup, migrations).
    pub fn sqlite(&self) -> Option<&rusqlite::Connection> {
        match &self.backend {
            Backend::Sqlite(c) => Some(c),
            Backend::Pg(_) => None,
        }
    }

    /// The SQLite connection underneath, mutably.
    pub fn sqlite_mut(&mut self) -> Option<&mut rusqlite::Connection> {
        match &mut self.backend {
            Backend::Sqlite(c) => Some(c),
            Backend::Pg(_) => None,
        }
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Pg(_))
    }

    /// Whether the PostgreSQL connection is gone (the server restarted or the network broke).
    pub fn is_broken(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Pg(p) => p.client.borrow().is_closed(),
        }
    }

    /// Whether a statement since the last call lost a serialization race (PostgreSQL); clears the mark.
    pub fn take_conflict(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Pg(p) => p.conflicted.replace(false),
        }
    }

    /// Whether no transaction is open.
    pub fn is_autocommit(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(c) => c.is_autocommit(),
            Backend::Pg(p) => !p.in_tx.get(),
        }
    }

    /// Runs statements without parameters (schema, transaction control).
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Backend::Pg(p) => p.batch(sql),
        }
    }

    /// A statement, prepared once per connection and kept.
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(Statement {
            inner: match &self.backend {
                Backend::Sqlite(c) => Inner::SqliteCached(c.prepare_cached(sql)?),
                Backend::Pg(p) => Inner::Pg(p, sql.to_owned()),
            },
        })
    }

    /// A statement for one use.
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(Statement {
            inner: match &self.backend {
                Backend::Sqlite(c) => Inner::Sqlite(c.prepare(sql)?),
                Backend::Pg(p) => Inner::Pg(p, sql.to_owned()),
            },
        })
    }

    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    pub fn query_row<T, P: Params, F>(&self, sql: &str, params: P, f: F) -> Result<T>
    where
        F: FnOnce(&Row<'_>) -> Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }

    /// Begins a transaction that holds its writes against every concurrent writer: SQLite's `BEGIN
    /// IMMEDIATE` (the write lock first), PostgreSQL's `SERIALIZABLE` (conflicts abort and are retried).
    pub fn begin(&self) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => self.control("BEGIN IMMEDIATE"),
            Backend::Pg(p) => {
                p.batch("BEGIN ISOLATION LEVEL SERIALIZABLE")?;
                p.in_tx.set(true);
                Ok(())
            }
        }
    }

    /// [`Connection::begin`], then `first` as the transaction's first statements, in one round trip.
    pub fn begin_with(&self, first: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(c) => {
                c.execute_batch("BEGIN IMMEDIATE")?;
                Ok(c.execute_batch(first)?)
            }
            Backend::Pg(p) => {
                let r = p.batch(&format!("BEGIN ISOLATION LEVEL SERIALIZABLE; {first}"));
                p.in_tx.set(true);
                r
            }
        }
    }

    /// PostgreSQL: [`Connection::begin_with`] for one job's transaction, which is the job's write transaction
    /// too: the job's first [`JobTx`] needs no savepoint (two round trips fewer), and if it ends without
    /// committing, [`Connection::take_doomed`] says the transaction must roll back.
    pub fn begin_job(&self, first: &str) -> Result<()> {
        let r = self.begin_with(first);
        if let Backend::Pg(p) = &self.backend {
            p.job_own.set(r.is_ok());
            p.doomed.set(false);
        }
        r
    }

    /// PostgreSQL: the next job of a commit group begins, inside the group's open transaction: its first
    /// [`JobTx`] needs no savepoint (if it ends uncommitted, [`Connection::take_doomed`] says the group must
    /// roll back), and [`Connection::take_failed`] starts afresh.
    pub fn next_group_job(&self) {
        if let Backend::Pg(p) = &self.backend {
            p.job_own.set(true);
            p.doomed.set(false);
            p.failed.set(false);
        }
    }

    /// PostgreSQL: whether a statement failed since the last call (the open transaction may be aborted);
    /// clears the mark.
    pub fn take_failed(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Pg(p) => p.failed.replace(false),
        }
    }

    /// The job's own write transaction, if this is a job's transaction and it has not had it yet.
    pub fn job_tx(&self) -> Option<JobTx<'_>> {
        match &self.backend {
            Backend::Pg(p) if self.depth.get() == 0 && p.job_own.replace(false) => Some(JobTx {
                conn: self,
                done: false,
            }),
            _ => None,
        }
    }

    /// Whether the job's own write transaction ended without committing (its work must not commit); clears
    /// the mark.
    pub fn take_doomed(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Pg(p) => {
                p.job_own.set(false);
                p.doomed.replace(false)
            }
        }
    }

    /// Ends the open transaction with `end` (`COMMIT` or `ROLLBACK`), then runs `then` outside it, in one round
    /// trip. An error is the end's (or the connection's): `then` has not run.
    pub fn end_then(&self, end: &str, then: &str) -> Result<()> {
        self.depth.set(0);
        match &self.backend {
            Backend::Sqlite(c) => {
                c.execute_batch(end)?;
                Ok(c.execute_batch(then)?)
            }
            Backend::Pg(p) => {
                let r = p.batch(&format!("{end}; {then}"));
                p.in_tx.set(false);
                r
            }
        }
    }

    /// [`Connection::begin`] as a guard: `commit` keeps the work, dropping it uncommitted rolls back.
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        self.begin()?;
        Ok(Transaction {
            conn: self,
            done: false,
        })
    }

    /// Commits the open transaction.
    pub fn commit(&self) -> Result<()> {
        self.end("COMMIT")
    }

    /// Rolls back the open transaction.
    pub fn rollback(&self) -> Result<()> {
        self.end("ROLLBACK")
    }

    fn end(&self, sql: &str) -> Result<()> {
        self.depth.set(0);
        match &self.backend {
            Backend::Sqlite(_) => self.control(sql),
            Backend::Pg(p) => {
                let r = p.batch(sql);
                p.in_tx.set(false);
                r
            }
        }
    }

    /// Runs one transaction-control statement (`BEGIN`, `COMMIT`, `SAVEPOINT x`, …). SQLite keeps it
    /// prepared, as every other statement: a commit group runs several of them per job, and parsing them
    /// anew each time was a visible part of the store thread's work.
    fn control(&self, sql: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(c) => {
                c.prepare_cached(sql)?.execute([])?;
                Ok(())
            }
            Backend::Pg(p) => p.batch(sql),
        }
    }

    /// A savepoint: work inside it that fails can roll back alone. On SQLite, one outside any transaction
    /// opens one (a read snapshot until it ends); on PostgreSQL every job runs inside a transaction already.
    pub fn savepoint(&self) -> Result<Savepoint<'_>> {
        let depth = self.depth.get() + 1;
        let name = format!("opdesk_sp{depth}");
        self.control(&format!("SAVEPOINT {name}"))?;
        self.depth.set(depth);
        Ok(Savepoint {
            conn: self,
            name,
            done: false,
        })
    }
}

/// A transaction (see [`Connection::transaction`]).
pub struct Transaction<'c> {
    conn: &'c Connection,
    done: bool,
}

impl Transaction<'_> {
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        self.conn.commit()
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.done
            && let Err(e) = self.conn.rollback()
        {
            tracing::warn!(error = %e, "rolling back a transaction failed");
        }
    }
}

/// A PostgreSQL job's write transaction when it is the job's transaction itself (see
/// [`Connection::begin_job`]): `commit` keeps its work for the job's commit, at no cost; dropping it
/// uncommitted dooms the transaction, which then rolls back.
pub struct JobTx<'c> {
    conn: &'c Connection,
    done: bool,
}

impl JobTx<'_> {
    pub fn commit(mut self) {
        self.done = true;
    }
}

impl std::ops::Deref for JobTx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for JobTx<'_> {
    fn drop(&mut self) {
        if !self.done
            && let Backend::Pg(p) = &self.conn.backend
        {
            p.doomed.set(true);
        }
    }
}

/// A savepoint (see [`Connection::savepoint`]): `commit` keeps its work in the enclosing transaction;
/// dropping it uncommitted rolls its work back.
pub struct Savepoint<'c> {
    conn: &'c Connection,
    name: String,
    done: bool,
}

impl Savepoint<'_> {
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        self.conn.depth.set(self.conn.depth.get().saturating_sub(1));
        self.conn.control(&format!("RELEASE {}", self.name))
    }
}

impl std::ops::Deref for Savepoint<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let name = &self.name;
        self.conn.depth.set(self.conn.depth.get().saturating_sub(1));
        let undone = self
            .conn
            .control(&format!("ROLLBACK TO {name}"))
            .and_then(|()| self.conn.control(&format!("RELEASE {name}")));
        if let Err(e) = undone {
            tracing::warn!(error = %e, "rolling back a savepoint failed");
        }
    }
}

enum Inner<'c> {
    SqliteCached(rusqlite::CachedStatement<'c>),
    Sqlite(rusqlite::Statement<'c>),
    /// Prepared on first use (see [`Pg::statement`]), then cached by its text.
    Pg(&'c Pg, String),
}

/// A prepared statement.
pub struct Statement<'c> {
    inner: Inner<'c>,
}

fn sqlite_values<'a>(values: &'a [Value<'a>]) -> Vec<rusqlite::types::ToSqlOutput<'a>> {
    use rusqlite::types::{ToSqlOutput, ValueRef as R};
    values
        .iter()
        .map(|v| {
            ToSqlOutput::Borrowed(match v {
                Value::Null => R::Null,
                Value::Integer(n) => R::Integer(*n),
                Value::Real(f) => R::Real(*f),
                Value::Text(s) => R::Text(s.as_bytes()),
                Value::Blob(b) => R::Blob(b),
            })
        })
        .collect()
}

impl<'c> Statement<'c> {
    fn sqlite(&mut self) -> Option<&mut rusqlite::Statement<'c>> {
        match &mut self.inner {
            Inner::SqliteCached(s) => Some(s),
            Inner::Sqlite(s) => Some(s),
            Inner::Pg(..) => None,
        }
    }

    /// Runs the statement; the number of rows it changed.
    pub fn execute<P: Params>(&mut self, params: P) -> Result<usize> {
        let values = params.values()?;
        if let Some(s) = self.sqlite() {
            return Ok(s.execute(rusqlite::params_from_iter(sqlite_values(&values)))?);
        }
        match &self.inner {
            Inner::Pg(p, sql) => p.execute(sql, &values),
            Inner::SqliteCached(_) | Inner::Sqlite(_) => Err(Error::convert(0, "unreachable backend")),
        }
    }

    /// Calls `f` on each row, in order, until one fails.
    pub fn for_each_row<P: Params, F>(&mut self, params: P, mut f: F) -> Result<()>
    where
        F: FnMut(&Row<'_>) -> Result<()>,
    {
        let values = params.values()?;
        if let Some(s) = self.sqlite() {
            let mut rows = s.query(rusqlite::params_from_iter(sqlite_values(&values)))?;
            while let Some(r) = rows.next()? {
                f(&Row::Sqlite(r))?;
            }
            return Ok(());
        }
        if let Inner::Pg(p, sql) = &self.inner {
            for r in p.query(sql, &values)? {
                f(&Row::Pg(&r))?;
            }
        }
        Ok(())
    }

    /// The first row through `f`; [`Error::NoRows`] when there is none.
    pub fn query_row<T, P: Params, F>(&mut self, params: P, f: F) -> Result<T>
    where
        F: FnOnce(&Row<'_>) -> Result<T>,
    {
        let mut f = Some(f);
        let mut out = None;
        self.for_each_row(params, |r| {
            if let Some(f) = f.take() {
                out = Some(f(r)?);
            }
            Ok(())
        })?;
        out.ok_or(Error::NoRows)
    }

    /// Every row through `f`.
    pub fn query_map<T, P: Params, F>(&mut self, params: P, mut f: F) -> Result<std::vec::IntoIter<Result<T>>>
    where
        F: FnMut(&Row<'_>) -> Result<T>,
    {
        let mut out = Vec::new();
        self.for_each_row(params, |r| {
            out.push(f(r));
            Ok(())
        })?;
        Ok(out.into_iter())
    }

    /// Whether the statement returns any row.
    pub fn exists<P: Params>(&mut self, params: P) -> Result<bool> {
        let mut any = false;
        self.for_each_row(params, |_| {
            any = true;
            Ok(())
        })?;
        Ok(any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_like_are_rewritten_outside_quotes() {
        assert_eq!(
            to_postgres("SELECT a FROM t WHERE b = ?1 AND c LIKE ?2 ESCAPE '\\' AND d = '?' AND e = ?"),
            "SELECT a FROM t WHERE b = $1 AND c ILIKE $2 ESCAPE '\\' AND d = '?' AND e = $3"
        );
        assert_eq!(
            to_postgres("SELECT likes, unlike FROM t"),
            "SELECT likes, unlike FROM t"
        );
        assert_eq!(to_postgres("x = ?12"), "x = $12");
    }

    #[test]
    fn sqlite_rows_read_through_the_facade() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a INTEGER, b TEXT, c BLOB)").unwrap();
        c.execute("INSERT INTO t VALUES (?1, ?2, ?3)", params![7i64, "x", vec![1u8, 2]])
            .unwrap();
        c.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3)",
            params![None::<i64>, true, None::<Vec<u8>>],
        )
        .unwrap();
        let rows: Vec<(Option<i64>, String, Option<Vec<u8>>)> = c
            .prepare("SELECT a, b, c FROM t ORDER BY rowid")
            .unwrap()
            .query_map((), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![(Some(7), "x".into(), Some(vec![1, 2])), (None, "1".into(), None)]
        );
        assert!(matches!(
            c.query_row("SELECT a FROM t WHERE b = ?1", ["none"], |r| r.get::<_, i64>(0)),
            Err(Error::NoRows)
        ));
        assert_eq!(
            c.query_row("SELECT a FROM t WHERE b = ?1", ["none"], |r| r.get::<_, i64>(0))
                .optional()
                .unwrap(),
            None
        );
        let bad = c.query_row("SELECT b FROM t WHERE a = 7", (), |r| r.get::<_, i64>(0));
        assert!(matches!(bad, Err(Error::Convert { column: 0, .. })), "{bad:?}");
        assert!(u64::MAX.to_sql().is_err());
    }

    #[test]
    fn a_savepoint_dropped_uncommitted_rolls_back_alone() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a INTEGER)").unwrap();
        c.begin().unwrap();
        c.execute("INSERT INTO t VALUES (1)", ()).unwrap();
        {
            let sp = c.savepoint().unwrap();
            sp.execute("INSERT INTO t VALUES (2)", ()).unwrap();
        }
        {
            let sp = c.savepoint().unwrap();
            sp.execute("INSERT INTO t VALUES (3)", ()).unwrap();
            sp.commit().unwrap();
        }
        c.commit().unwrap();
        let n: Vec<i64> = c
            .prepare("SELECT a FROM t ORDER BY a")
            .unwrap()
            .query_map((), |r| r.get(0))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(n, vec![1, 3]);
    }
}
