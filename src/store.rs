//! The SQLite store: one dedicated thread owns the write connection; async code sends closures and awaits
//! their result over a oneshot.
//!
//! Owns connection setup (WAL, `foreign_keys`, `busy_timeout`, `synchronous`), the embedded forward-only
//! migrations (run by [`Store::open`] before anything else may use the database) and the repo functions in the
//! submodules, which are the only code in the crate that speaks SQL. It knows nothing about HTTP or events.
//!
//! A write that finds the database or the disk full (`SQLITE_FULL`, also past the operator's
//! `store.max_db_pages` quota) fails as [`Error::Full`]; its transaction rolls back, so nothing is half
//! written, and callers answer "try again later" instead of failing for good.
//!
//! [`backup()`] copies the database consistently while a server keeps writing to it (SQLite's online backup).

mod backup;
pub mod grants;
pub mod ledger;
pub mod meta;
mod migrations;
pub mod outbox;
pub mod payments;
pub mod peers;
pub mod stats;
pub mod stream;
pub mod wallets;
pub mod webhooks;

pub use backup::{BackupReport, Options as BackupOptions, backup};

use std::{
    path::{Path, PathBuf},
    sync::mpsc,
    thread,
    time::Duration,
};

use rusqlite::Connection;
use tokio::sync::oneshot;

/// States are stored as their text ([`crate::states`] owns the mapping); the schema's `CHECK`s keep it valid.
macro_rules! state_column {
    ($($t:ty),+) => {$(
        impl rusqlite::ToSql for $t {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl rusqlite::types::FromSql for $t {
            fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                v.as_str()?
                    .parse()
                    .map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))
            }
        }
    )+};
}

state_column!(
    crate::states::DeliveryState,
    crate::states::OutgoingState,
    crate::states::GrantState,
    crate::states::TransferState
);

/// Store failures. Constraint violations that a caller expects are mapped by the caller's repo function.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("sqlite: {0}")]
    Sqlite(#[source] rusqlite::Error),
    /// The database or the disk is full: the write was refused and rolled back. Retryable once there is room.
    #[error("the database is full: {0}")]
    Full(#[source] rusqlite::Error),
    #[error("migration: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("the store thread has stopped")]
    Closed,
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    /// A file the store reads or writes besides the database itself (a backup's destination).
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A backup's destination exists and was not to be replaced.
    #[error("{} already exists", .0.display())]
    Exists(PathBuf),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        if is_full(&e) { Self::Full(e) } else { Self::Sqlite(e) }
    }
}

impl Error {
    /// Whether this is the database or disk being full.
    pub fn is_full(&self) -> bool {
        match self {
            Self::Full(_) => true,
            Self::Sqlite(e) => is_full(e),
            Self::Migration(_) | Self::Closed | Self::Corrupt(_) | Self::Io { .. } | Self::Exists(_) => false,
        }
    }
}

/// Whether SQLite refused a write because the database or the disk is full (`SQLITE_FULL`).
pub fn is_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// Whether a storage-full failure is anywhere in `e`'s source chain.
pub fn full_in(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    for _ in 0..16 {
        let Some(err) = cur else { break };
        if err.downcast_ref::<Error>().is_some_and(Error::is_full)
            || err.downcast_ref::<rusqlite::Error>().is_some_and(is_full)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

enum Msg {
    Job(Job),
    Close,
}

/// Options for opening the database.
#[derive(Debug, Clone)]
pub struct Options {
    pub busy_timeout: Duration,
    /// `NORMAL` or `FULL`.
    pub synchronous: String,
    /// The operator's quota in pages (`PRAGMA max_page_count` on the writer connection, applied after the
    /// migrations); 0: none. A quota below the current size holds the database at its current size.
    pub max_pages: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            synchronous: "NORMAL".into(),
            max_pages: 0,
        }
    }
}

/// Handle to the store thread. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    tx: mpsc::Sender<Msg>,
    joiner: std::sync::Arc<std::sync::Mutex<Option<thread::JoinHandle<()>>>>,
    meters: Meters,
}

/// How busy the store thread is, for the metrics: the jobs waiting for it and how long each one took.
#[derive(Debug, Clone)]
pub struct Meters {
    /// Jobs sent and not yet started.
    pub queue_depth: prometheus_client::metrics::gauge::Gauge,
    /// Seconds each job (one transaction, or one read) held the connection.
    pub job_seconds: prometheus_client::metrics::histogram::Histogram,
}

/// Store job durations: 10 µs to 2.5 s.
const JOB_BUCKETS: [f64; 17] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5,
];

impl Default for Meters {
    fn default() -> Self {
        Self {
            queue_depth: prometheus_client::metrics::gauge::Gauge::default(),
            job_seconds: prometheus_client::metrics::histogram::Histogram::new(JOB_BUCKETS),
        }
    }
}

/// What [`Store::open`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The database had no schema before (first run on this data dir).
    pub fresh: bool,
}

impl Store {
    /// Opens (creating if needed) the database file, applies pragmas and migrations, and starts the thread.
    pub fn open(path: &Path, opts: &Options) -> Result<(Self, Opened), Error> {
        let conn = Connection::open(path)?;
        Self::start(conn, opts)
    }

    /// An in-memory database (tests).
    pub fn open_in_memory() -> Result<(Self, Opened), Error> {
        Self::start(Connection::open_in_memory()?, &Options::default())
    }

    fn start(mut conn: Connection, opts: &Options) -> Result<(Self, Opened), Error> {
        configure(&conn, opts)?;
        let fresh = migrations::current_version(&conn)? == 0;
        migrations::migrate(&mut conn)?;
        if opts.max_pages > 0 {
            let pages: i64 =
                conn.query_row(&format!("PRAGMA max_page_count = {}", opts.max_pages), [], |r| r.get(0))?;
            tracing::info!(
                quota = opts.max_pages,
                pages,
                "database size quota (store.max_db_pages) in force"
            );
        }
        let (tx, rx) = mpsc::channel::<Msg>();
        let meters = Meters::default();
        let m = meters.clone();
        let handle = thread::Builder::new()
            .name("opdesk-store".into())
            .spawn(move || {
                while let Ok(msg) = rx.recv() {
                    match msg {
                        Msg::Job(job) => {
                            m.queue_depth.dec();
                            let started = std::time::Instant::now();
                            job(&mut conn);
                            m.job_seconds.observe(started.elapsed().as_secs_f64());
                        }
                        Msg::Close => break,
                    }
                }
                if let Err((_, e)) = conn.close() {
                    tracing::warn!(error = %e, "closing the database failed");
                }
            })
            .map_err(|e| Error::Corrupt(format!("cannot spawn the store thread: {e}")))?;
        let store = Self {
            tx,
            joiner: std::sync::Arc::new(std::sync::Mutex::new(Some(handle))),
            meters,
        };
        Ok((store, Opened { fresh }))
    }

    /// The store thread's queue depth and job durations.
    pub fn meters(&self) -> &Meters {
        &self.meters
    }

    /// Queues a job, counting it until the thread starts it.
    fn send(&self, job: Job) -> Result<(), Error> {
        self.meters.queue_depth.inc();
        self.tx.send(Msg::Job(job)).map_err(|_| {
            self.meters.queue_depth.dec();
            Error::Closed
        })
    }

    /// Runs `f` on the store thread and returns its result.
    pub async fn call<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        self.send(job).map_err(E::from)?;
        rx.await.map_err(|_| E::from(Error::Closed))?
    }

    /// Runs `f` on the store thread and blocks for the result (for synchronous callers such as the CLI).
    pub fn call_blocking<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let (reply, rx) = mpsc::channel();
        let job: Job = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        self.send(job).map_err(E::from)?;
        rx.recv().map_err(|_| E::from(Error::Closed))?
    }

    /// Lets queued work finish, closes the connection and joins the thread. Idempotent.
    pub fn close(&self) {
        let _ = self.tx.send(Msg::Close);
        let handle = self.joiner.lock().ok().and_then(|mut j| j.take());
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

fn configure(conn: &Connection, opts: &Options) -> Result<(), Error> {
    conn.busy_timeout(opts.busy_timeout)?;
    let sync = match opts.synchronous.to_ascii_uppercase().as_str() {
        "FULL" => "FULL",
        "EXTRA" => "EXTRA",
        _ => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON;"
    ))?;
    Ok(())
}

/// Starts a `BEGIN IMMEDIATE` transaction: the write lock is taken before the first read, so every
/// check-then-write inside it is serialised against all other writers.
pub fn immediate(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>, Error> {
    Ok(conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn call_runs_on_the_store_thread_and_close_is_idempotent() {
        let (store, opened) = Store::open_in_memory().unwrap();
        assert!(opened.fresh);
        let name: String = store
            .call(|_c| Ok::<_, Error>(thread::current().name().unwrap_or("").to_owned()))
            .await
            .unwrap();
        assert_eq!(name, "opdesk-store");
        store.close();
        store.close();
        let r: Result<(), Error> = store.call(|_| Ok(())).await;
        assert!(matches!(r, Err(Error::Closed)));
    }

    #[tokio::test]
    async fn the_queue_depth_counts_jobs_waiting_for_the_thread() {
        let (store, _) = Store::open_in_memory().unwrap();
        let (release, held) = mpsc::channel::<()>();
        let s = store.clone();
        let blocker = tokio::spawn(async move {
            s.call(move |_| {
                let _ = held.recv();
                Ok::<_, Error>(())
            })
            .await
        });
        let waiting: Vec<_> = (0..3)
            .map(|_| {
                let s = store.clone();
                tokio::spawn(async move { s.call(|_| Ok::<_, Error>(())).await })
            })
            .collect();
        let depth = || store.meters().queue_depth.get();
        for _ in 0..400 {
            if depth() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(depth(), 3, "three jobs wait behind the one running");
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        for w in waiting {
            w.await.unwrap().unwrap();
        }
        assert_eq!(depth(), 0);
        store.close();
        let r: Result<(), Error> = store.call(|_| Ok(())).await;
        assert!(matches!(r, Err(Error::Closed)));
        assert_eq!(depth(), 0, "a job refused by a closed store is not counted");
    }

    #[test]
    fn file_db_uses_wal_and_foreign_keys_and_reopens_not_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        let (store, opened) = Store::open(&path, &Options::default()).unwrap();
        assert!(opened.fresh);
        let (mode, fk): (String, i64) = store
            .call_blocking(|c| {
                let mode = c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
                let fk = c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
                Ok::<_, Error>((mode, fk))
            })
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(fk, 1);
        store.close();
        let (store, opened) = Store::open(&path, &Options::default()).unwrap();
        assert!(!opened.fresh);
        store.close();
    }

    #[test]
    fn a_write_past_the_quota_fails_as_full_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        let (store, _) = Store::open(&path, &Options::default()).unwrap();
        store.close();
        // a quota below the current size holds the database at its size: any new page is refused
        let opts = Options {
            max_pages: 1,
            ..Options::default()
        };
        let (store, _) = Store::open(&path, &opts).unwrap();
        let e = store
            .call_blocking(|c| {
                let tx = immediate(c)?;
                tx.execute_batch("CREATE TABLE filler(x BLOB); INSERT INTO filler VALUES (zeroblob(100000));")?;
                tx.commit()?;
                Ok::<_, Error>(())
            })
            .unwrap_err();
        assert!(matches!(e, Error::Full(_)), "{e:?}");
        assert!(e.is_full() && full_in(&e));
        let tables: i64 = store
            .call_blocking(|c| {
                Ok::<_, Error>(
                    c.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'filler'", [], |r| {
                        r.get(0)
                    })?,
                )
            })
            .unwrap();
        assert_eq!(tables, 0, "rolled back");
        store.close();
        let other = Error::from(rusqlite::Error::QueryReturnedNoRows);
        assert!(!other.is_full() && !full_in(&other));
    }
}
