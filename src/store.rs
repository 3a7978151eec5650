//! The SQLite store: one dedicated thread owns the write connection; async code sends closures and awaits
//! their result over a oneshot.
//!
//! **Group commit.** When several closures are queued, the thread runs them in one `BEGIN IMMEDIATE`
//! transaction and commits once: each closure's own transaction ([`immediate`]) becomes a savepoint inside
//! it, so a closure that fails rolls back its own writes and no one else's. Results are handed back only
//! after the group has committed; if the commit fails, every closure of the group gets the error. A lone
//! closure runs by itself, never waiting for company. The WAL stays under a ceiling ([`wal`]): checkpoints
//! run on a thread of their own, and the writer catches the WAL up between groups when it passes half of it.
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
pub mod classroom;
pub mod consent;
pub mod db;
pub mod grants;
pub mod ledger;
pub mod meta;
mod meters;
pub(crate) mod migrations;
mod pg_jobs;
pub use meters::Meters;
use pg_jobs::queue_of;
pub mod notify;
pub mod outbox;
pub mod payments;
pub mod peers;
pub mod spsp;
pub mod stats;
pub mod stream;
pub mod thresholds;
pub mod wal;
pub mod wallets;
pub mod webhooks;

pub use backup::{BackupReport, Options as BackupOptions, backup, is_live_database};

use std::{
    path::{Path, PathBuf},
    sync::mpsc,
    thread,
    time::Duration,
};

pub use db::Connection;
use tokio::sync::oneshot;

/// States are stored as their text ([`crate::states`] owns the mapping); the schema's `CHECK`s keep it valid.
macro_rules! state_column {
    ($($t:ty),+) => {$(
        impl db::ToSql for $t {
            fn to_sql(&self) -> Result<db::Value<'_>, String> {
                Ok(db::Value::Text(self.as_str().into()))
            }
        }

        impl db::FromSql for $t {
            fn from_sql(v: db::ValueRef<'_>) -> Result<Self, String> {
                v.as_str()?.parse().map_err(|e| format!("{e}"))
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
    #[error("{0}")]
    Sql(#[source] db::Error),
    /// The database or the disk is full: the write was refused and rolled back. Retryable once there is room.
    #[error("the database is full: {0}")]
    Full(#[source] db::Error),
    /// The write was committed in a group that SQLite rolled back as a whole (another write of the group
    /// hit a full disk, an I/O error or no memory): nothing of it was kept. Retryable, like [`Error::Full`].
    #[error("the write was rolled back with its commit group: {0}")]
    Aborted(String),
    /// PostgreSQL: the transaction kept losing serialization races to concurrent ones and was given up;
    /// nothing of it was kept. Retryable at once.
    #[error("the store is busy: {0}")]
    Busy(String),
    #[error("migration: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    /// The database's schema is not one this build can serve (newer than it knows, or a migration failed).
    #[error("schema: {0}")]
    Schema(String),
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

impl From<db::Error> for Error {
    fn from(e: db::Error) -> Self {
        if e.is_full() { Self::Full(e) } else { Self::Sql(e) }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        db::Error::from(e).into()
    }
}

impl Error {
    /// Whether this is the database or disk being full.
    pub fn is_full(&self) -> bool {
        match self {
            Self::Full(_) | Self::Aborted(_) => true,
            Self::Sql(e) => e.is_full(),
            Self::Busy(_)
            | Self::Migration(_)
            | Self::Schema(_)
            | Self::Closed
            | Self::Corrupt(_)
            | Self::Io { .. }
            | Self::Exists(_) => false,
        }
    }
}

/// Whether the database refused a write because it or the disk is full (`SQLITE_FULL`, PostgreSQL's class 53).
pub fn is_full(e: &db::Error) -> bool {
    e.is_full()
}

/// Migrates the SQLite database at `path` (created if missing) and closes it: the schema version before and
/// after. The caller holds the data dir.
pub fn migrate_sqlite(path: &Path, opts: &Options) -> Result<(usize, usize), Error> {
    let conn = rusqlite::Connection::open(path)?;
    configure(&conn, opts)?;
    let mut conn = Connection::from(conn);
    let from = migrations::current_version(&conn)?;
    migrations::migrate(&mut conn)?;
    let to = migrations::current_version(&conn)?;
    conn.close()?;
    Ok((from, to))
}

/// Migrates the PostgreSQL database at `url` (under the migration lock nodes take) and disconnects: the
/// schema version before and after. Blocks: call it off any async thread.
pub fn migrate_postgres(url: &str) -> Result<(usize, usize), Error> {
    let mut conn = Connection::connect_postgres(url)?;
    let from = migrations::current_version(&conn)?;
    migrations::migrate(&mut conn)?;
    let to = migrations::current_version(&conn)?;
    conn.close()?;
    Ok((from, to))
}

/// A PostgreSQL URL fit for logs and errors: its password replaced with `***`.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "(an unreadable URL)".to_owned(),
    }
}

/// Whether a storage-full failure is anywhere in `e`'s source chain.
pub fn full_in(e: &(dyn std::error::Error + 'static)) -> bool {
    in_chain(e, |err| {
        err.downcast_ref::<Error>().is_some_and(Error::is_full)
            || err.downcast_ref::<db::Error>().is_some_and(is_full)
            || err
                .downcast_ref::<rusqlite::Error>()
                .is_some_and(|e| e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull))
    })
}

/// Whether [`Error::Busy`] is anywhere in `e`'s source chain.
pub fn busy_in(e: &(dyn std::error::Error + 'static)) -> bool {
    in_chain(e, |err| matches!(err.downcast_ref::<Error>(), Some(Error::Busy(_))))
}

/// Whether a lost serialization race (PostgreSQL's serialization failure or deadlock) is anywhere in `e`'s
/// source chain: the job that met it is run again by the store, so it is no failure of its own.
pub fn conflict_in(e: &(dyn std::error::Error + 'static)) -> bool {
    in_chain(e, |err| {
        err.downcast_ref::<db::Error>().is_some_and(db::Error::is_conflict)
    })
}

fn in_chain(e: &(dyn std::error::Error + 'static), hit: impl Fn(&(dyn std::error::Error + 'static)) -> bool) -> bool {
    let mut cur = Some(e);
    for _ in 0..16 {
        let Some(err) = cur else { break };
        if hit(err) {
            return true;
        }
        cur = err.source();
    }
    false
}

/// A queued closure and its caller: run on a connection (on PostgreSQL perhaps again, after its transaction
/// lost a serialization race), then handed its result once the transaction it ran in has committed.
trait Work: Send {
    /// Runs the closure, keeping its result.
    fn run(&mut self, conn: &mut Connection);
    /// Hands the kept result over: as it is when its transaction committed (`Ok`), else the failure.
    fn deliver(self: Box<Self>, committed: Result<(), Error>);
    /// The queue it waits in before its transaction begins (see [`Store::call_queued`]).
    fn queue(&self) -> Option<i32>;
    /// Whether it runs in a transaction of its own, never in a commit group (see [`Store::call_alone`]).
    fn alone(&self) -> bool;
}

type Job = Box<dyn Work>;

struct Call<F, T, E, S> {
    f: F,
    out: Option<Result<T, E>>,
    send: S,
    queue: Option<i32>,
    alone: bool,
}

impl<F, T, E, S> Work for Call<F, T, E, S>
where
    F: FnMut(&mut Connection) -> Result<T, E> + Send,
    T: Send,
    E: From<Error> + Send,
    S: FnOnce(Result<T, E>) + Send,
{
    fn run(&mut self, conn: &mut Connection) {
        self.out = Some((self.f)(conn));
    }

    fn deliver(self: Box<Self>, committed: Result<(), Error>) {
        let this = *self;
        (this.send)(match committed {
            Ok(()) => this.out.unwrap_or_else(|| Err(E::from(Error::Closed))),
            Err(e) => Err(E::from(e)),
        });
    }

    fn queue(&self) -> Option<i32> {
        self.queue
    }

    fn alone(&self) -> bool {
        self.alone
    }
}

/// Waits for a job, then takes the jobs waiting behind it, up to `most` in all: the jobs, and whether the store
/// is closing behind them (none: it closed before another job came).
fn take_jobs(rx: &mpsc::Receiver<Msg>, most: usize) -> Option<(Vec<Job>, bool)> {
    let mut jobs = match rx.recv() {
        Ok(Msg::Job(job)) => vec![job],
        Ok(Msg::Close) | Err(_) => return None,
    };
    while jobs.len() < most {
        match rx.try_recv() {
            Ok(Msg::Job(job)) => jobs.push(job),
            Ok(Msg::Close) => return Some((jobs, true)),
            Err(_) => break,
        }
    }
    Some((jobs, false))
}

/// Most jobs committed together in one group.
const MAX_GROUP: usize = 64;

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
    /// PostgreSQL: connections (and threads) serving jobs; 0: [`auto_connections`].
    pub connections: usize,
    /// SQLite: the ceiling on the WAL file, in bytes (see [`wal`]).
    pub wal_max_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            synchronous: "NORMAL".into(),
            max_pages: 0,
            connections: 0,
            wal_max_bytes: wal::DEFAULT_MAX_BYTES,
        }
    }
}

/// PostgreSQL connections when none are configured: as many as this machine has cores, 2 to 8. Each serves one
/// commit group at a time, and the jobs waiting meanwhile form the next groups: connections beyond the cores
/// PostgreSQL and opdesk can run at once only cut the waiting jobs into more, smaller transactions, each with
/// its fixed cost (measured on two cores: 8 connections cost 25–30 % more CPU per create than 2).
pub fn auto_connections() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// Handle to the store's threads (SQLite's one writer, or PostgreSQL's connections). Cheap to clone.
#[derive(Clone)]
pub struct Store {
    tx: mpsc::Sender<Msg>,
    joiner: std::sync::Arc<std::sync::Mutex<Vec<thread::JoinHandle<()>>>>,
    meters: Meters,
    postgres: bool,
    coherence: notify::Coherence,
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
        let conn = rusqlite::Connection::open(path)?;
        Self::start(conn, opts, Some(path))
    }

    /// An in-memory database (tests).
    pub fn open_in_memory() -> Result<(Self, Opened), Error> {
        Self::start(rusqlite::Connection::open_in_memory()?, &Options::default(), None)
    }

    fn start(conn: rusqlite::Connection, opts: &Options, path: Option<&Path>) -> Result<(Self, Opened), Error> {
        configure(&conn, opts)?;
        let mut conn = Connection::from(conn);
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
        // Savepoints (one per closure of a commit group, one per payment of an engine round) keep the
        // original of every page they change in a sub-journal, and SQLite moves a sub-journal past 64 KiB
        // into a temp file: opened, written page by page and deleted in nearly every group under load. In
        // memory it costs what the group changed; set after the migrations, which may rewrite whole tables.
        conn.execute_batch("PRAGMA temp_store = MEMORY")?;
        let meters = Meters::default();
        let mut ceiling = match (path, conn.sqlite()) {
            (Some(path), Some(c)) => Some(wal::Ceiling::start(c, path, opts.wal_max_bytes, &meters.wal)?),
            _ => None,
        };
        let (tx, rx) = mpsc::channel::<Msg>();
        let m = meters.clone();
        let handle = thread::Builder::new()
            .name("opdesk-store".into())
            .spawn(move || {
                while let Some((jobs, closing)) = take_jobs(&rx, MAX_GROUP) {
                    run_group(&mut conn, jobs, &m);
                    if let Some(c) = ceiling.as_mut()
                        && let Some(sqlite) = conn.sqlite()
                        && sqlite.is_autocommit()
                    {
                        c.after_group(sqlite);
                    }
                    if closing {
                        break;
                    }
                }
                if let Some(c) = ceiling {
                    c.stop();
                }
                if let Err(e) = conn.close() {
                    tracing::warn!(error = %e, "closing the database failed");
                }
            })
            .map_err(|e| Error::Corrupt(format!("cannot spawn the store thread: {e}")))?;
        let store = Self {
            tx,
            joiner: std::sync::Arc::new(std::sync::Mutex::new(vec![handle])),
            coherence: notify::Coherence::single(meters.caches_trusted.clone()),
            meters,
            postgres: false,
        };
        Ok((store, Opened { fresh }))
    }

    /// Connects to PostgreSQL at `url` (`postgres://…`): migrates the schema (or refuses one newer than this
    /// build), then starts `opts.connections` threads, each with its own connection, taking jobs from one
    /// queue. The jobs a thread finds waiting run in one `SERIALIZABLE` transaction (a commit group); a job
    /// that cannot share it, and every job of a group that lost a serialization race, runs in a transaction of
    /// its own, again when it lost a race, alone after a few losses (see `pg_jobs`): concurrent jobs, on this
    /// node or another, behave as if they had run one at a time, as on SQLite.
    pub fn open_postgres(url: &str, opts: &Options) -> Result<(Self, Opened), Error> {
        // the driver blocks on a runtime of its own: connect off any async caller's thread
        let connect = || -> Result<(bool, Vec<Connection>), Error> {
            let mut first = Connection::connect_postgres(url)?;
            let fresh = migrations::current_version(&first)? == 0;
            migrations::migrate(&mut first)?;
            let mut conns = vec![first];
            let wanted = match opts.connections {
                0 => auto_connections(),
                n => n,
            };
            for _ in 1..wanted {
                conns.push(Connection::connect_postgres(url)?);
            }
            Ok((fresh, conns))
        };
        let (fresh, conns) = thread::scope(|s| s.spawn(connect).join())
            .map_err(|_| Error::Corrupt("connecting to PostgreSQL panicked".into()))??;
        let (tx, rx) = mpsc::channel::<Msg>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let meters = Meters::default();
        let mut handles = Vec::new();
        for (i, conn) in conns.into_iter().enumerate() {
            let (rx, m, url) = (rx.clone(), meters.clone(), url.to_owned());
            let handle = thread::Builder::new()
                .name(format!("opdesk-pg-{i}"))
                .spawn(move || pg_jobs::serve(conn, &url, &rx, &m))
                .map_err(|e| Error::Corrupt(format!("cannot spawn a store thread: {e}")))?;
            handles.push(handle);
        }
        let store = Self {
            tx,
            joiner: std::sync::Arc::new(std::sync::Mutex::new(handles)),
            coherence: notify::Coherence::cluster(meters.caches_trusted.clone()),
            meters,
            postgres: true,
        };
        Ok((store, Opened { fresh }))
    }

    /// Whether several opdesk nodes may work on this store at once (PostgreSQL), so that what one node must
    /// not do alone is leased in the database, secrets shared by every node live in it, and changes reach
    /// the other nodes through it; else one process holds the data dir (SQLite) and what it had in flight
    /// died with the previous one.
    pub fn shared_by_nodes(&self) -> bool {
        self.postgres
    }

    /// Whether the caches of what other nodes may change can be trusted, and who forgets what when told.
    pub fn coherence(&self) -> &notify::Coherence {
        &self.coherence
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

    /// Runs `f` on the store thread and returns its result. On PostgreSQL `f` runs again when its
    /// transaction lost a serialization race: it must have no effect outside the connection.
    pub async fn call<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        self.call_in(f, None, false).await
    }

    /// [`Store::call`] for a job that writes a row every concurrent job of its kind writes too (a peer's
    /// account, which every packet through the peer credits), named by `key`. On PostgreSQL such jobs queue
    /// for the row before their transactions begin (an advisory lock per key, taken before the snapshot), so
    /// they follow each other instead of losing serialization races and running again; on SQLite, where jobs
    /// never race, it is [`Store::call`].
    pub async fn call_queued<T, E, F>(&self, key: &str, f: F) -> Result<T, E>
    where
        F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        self.call_in(f, self.postgres.then(|| queue_of(key)), false).await
    }

    /// [`Store::call`] for a job that must not share a PostgreSQL commit group: one that holds a lock to its
    /// commit that other nodes wait for, and whose work another job's failure must not undo and make it do
    /// again (the outbox's sequencer: numbers drawn in a group that then rolled back would be lost, leaving a
    /// hole readers see). On SQLite, where the sequencer does nothing, it is [`Store::call`].
    pub async fn call_alone<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        self.call_in(f, None, self.postgres).await
    }

    async fn call_in<T, E, F>(&self, f: F, queue: Option<i32>, alone: bool) -> Result<T, E>
    where
        F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.send(Box::new(Call {
            f,
            out: None,
            send: move |r| {
                let _ = reply.send(r);
            },
            queue,
            alone,
        }))
        .map_err(E::from)?;
        rx.await.map_err(|_| E::from(Error::Closed))?
    }

    /// Runs `f` on the store thread and blocks for the result (for synchronous callers such as the CLI).
    pub fn call_blocking<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let (reply, rx) = mpsc::channel();
        self.send(job(f, move |r| {
            let _ = reply.send(r);
        }))
        .map_err(E::from)?;
        rx.recv().map_err(|_| E::from(Error::Closed))?
    }

    /// Lets queued work finish, closes the connections and joins the threads. Idempotent.
    pub fn close(&self) {
        let handles = self
            .joiner
            .lock()
            .map(|mut j| std::mem::take(&mut *j))
            .unwrap_or_default();
        for _ in &handles {
            let _ = self.tx.send(Msg::Close);
        }
        for h in handles {
            let _ = h.join();
        }
    }
}

/// Wraps `f` as a job whose result goes to `send` once its transaction has committed; a transaction that
/// failed to commit turns the result into that failure.
fn job<T, E, F, S>(f: F, send: S) -> Job
where
    F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: From<Error> + Send + 'static,
    S: FnOnce(Result<T, E>) + Send + 'static,
{
    Box::new(Call {
        f,
        out: None,
        send,
        queue: None,
        alone: false,
    })
}

/// Runs one job, timing it.
fn run_one(conn: &mut Connection, mut job: Job, m: &Meters) -> Job {
    m.queue_depth.dec();
    let started = std::time::Instant::now();
    job.run(conn);
    m.job_seconds.observe(started.elapsed().as_secs_f64());
    job
}

/// Runs the queued jobs: a lone one by itself, several in one transaction committed once (see the module
/// docs). Every result is delivered after the commit that made its writes durable.
fn run_group(conn: &mut Connection, jobs: Vec<Job>, m: &Meters) {
    m.group_jobs.observe(jobs.len() as f64);
    if jobs.len() == 1 || !conn.is_autocommit() {
        for job in jobs {
            run_one(conn, job, m).deliver(Ok(()));
        }
        return;
    }
    let mut pending: Vec<Job> = Vec::with_capacity(jobs.len());
    let mut open = begin_group(conn);
    for job in jobs {
        if !open {
            // the group could not begin: the job runs by itself
            run_one(conn, job, m).deliver(Ok(()));
            open = begin_group(conn);
            continue;
        }
        pending.push(run_one(conn, job, m));
        if conn.is_autocommit() {
            // SQLite rolled the whole group back (a full disk, an I/O error): nothing of it was kept
            let why = "SQLite rolled back the transaction";
            for job in pending.drain(..) {
                job.deliver(Err(Error::Aborted(why.into())));
            }
            open = begin_group(conn);
        }
    }
    if !open {
        return;
    }
    match conn.commit() {
        Ok(()) => pending.into_iter().for_each(|job| job.deliver(Ok(()))),
        Err(e) => {
            let why = e.to_string();
            if !conn.is_autocommit()
                && let Err(e) = conn.rollback()
            {
                tracing::warn!(error = %e, "rolling back a failed commit group failed");
            }
            tracing::warn!(error = %why, jobs = pending.len(), "a commit group failed to commit");
            for job in pending {
                job.deliver(Err(Error::Aborted(why.clone())));
            }
        }
    }
}

/// Opens a commit group's transaction; `false` (logged) when SQLite refuses.
fn begin_group(conn: &Connection) -> bool {
    match conn.begin() {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "cannot begin a commit group; running jobs one by one");
            false
        }
    }
}

fn configure(conn: &rusqlite::Connection, opts: &Options) -> Result<(), Error> {
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

/// A closure's write transaction: a `BEGIN IMMEDIATE` transaction of its own, or a savepoint inside the
/// commit group it runs in. Either way it reads as the connection, `commit` keeps its writes, and dropping
/// it uncommitted rolls back its writes and nothing else.
pub enum Tx<'c> {
    Own(db::Transaction<'c>),
    InGroup(db::Savepoint<'c>),
    /// PostgreSQL: the job's transaction itself.
    Job(db::JobTx<'c>),
}

impl Tx<'_> {
    /// Keeps the writes: commits the transaction, or releases the savepoint into its group (which hands
    /// the closure's result back only once it has committed).
    pub fn commit(self) -> Result<(), Error> {
        match self {
            Self::Own(t) => t.commit()?,
            Self::InGroup(s) => s.commit()?,
            Self::Job(j) => j.commit(),
        }
        Ok(())
    }

    /// A savepoint inside: a part of the work that can fail and roll back alone.
    pub fn savepoint(&mut self) -> Result<db::Savepoint<'_>, Error> {
        Ok(match self {
            Self::Own(t) => t.savepoint()?,
            Self::InGroup(s) => s.savepoint()?,
            Self::Job(j) => j.savepoint()?,
        })
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        match self {
            Self::Own(t) => t,
            Self::InGroup(s) => s,
            Self::Job(j) => j,
        }
    }
}

/// Starts a closure's write transaction: the write lock is taken before the first read (`BEGIN IMMEDIATE`,
/// or the group's, which began so), so every check-then-write inside it is serialised against all other
/// writers.
pub fn immediate(conn: &mut Connection) -> Result<Tx<'_>, Error> {
    if conn.is_autocommit() {
        return Ok(Tx::Own(conn.transaction()?));
    }
    if let Some(j) = conn.job_tx() {
        return Ok(Tx::Job(j));
    }
    Ok(Tx::InGroup(conn.savepoint()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_in_logs_hides_its_password_only() {
        assert_eq!(
            redact_url("postgres://op:s3cret@db:5432/ase"),
            "postgres://op:***@db:5432/ase"
        );
        assert_eq!(redact_url("postgres://op@db/ase"), "postgres://op@db/ase");
        assert!(!redact_url("postgres://op:s3cret@").contains("s3cret"));
    }

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

    /// Holds the store thread (once it has started the holding job) until the returned sender is used, so
    /// that the jobs sent meanwhile queue up and run as one group.
    async fn hold(store: &Store) -> (mpsc::Sender<()>, tokio::task::JoinHandle<Result<(), Error>>) {
        let (release, held) = mpsc::channel::<()>();
        let (started, running) = oneshot::channel::<()>();
        let s = store.clone();
        let mut started = Some(started);
        let blocker = tokio::spawn(async move {
            s.call(move |_| {
                if let Some(started) = started.take() {
                    let _ = started.send(());
                }
                let _ = held.recv();
                Ok::<_, Error>(())
            })
            .await
        });
        running.await.unwrap();
        (release, blocker)
    }

    async fn queued(store: &Store, n: i64) {
        for _ in 0..400 {
            if store.meters().queue_depth.get() == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("{n} jobs never queued");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_commits_every_job_but_the_one_that_failed_in_its_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(&dir.path().join("t.sqlite3"), &Options::default()).unwrap();
        store
            .call(|c| Ok::<_, Error>(c.execute_batch("CREATE TABLE t(n INTEGER PRIMARY KEY)")?))
            .await
            .unwrap();
        let (release, blocker) = hold(&store).await;
        let jobs: Vec<_> = (0..64i64)
            .map(|n| {
                let s = store.clone();
                tokio::spawn(async move {
                    s.call(move |c| {
                        let tx = immediate(c)?;
                        assert!(matches!(tx, Tx::InGroup(_)), "job {n} ran alone");
                        tx.execute("INSERT INTO t(n) VALUES (?1)", [n])?;
                        if n == 17 {
                            // a check inside the transaction fails after a write: only its own write goes
                            return Err(Error::Corrupt("job 17 refuses".into()));
                        }
                        tx.commit()?;
                        Ok(n)
                    })
                    .await
                })
            })
            .collect();
        queued(&store, 64).await;
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        let mut ok = 0;
        for (n, j) in jobs.into_iter().enumerate() {
            match j.await.unwrap() {
                Ok(got) => {
                    assert_eq!(got, n as i64);
                    ok += 1;
                }
                Err(e) => assert!(n == 17 && matches!(e, Error::Corrupt(_)), "job {n}: {e}"),
            }
        }
        assert_eq!(ok, 63);
        let rows: Vec<i64> = store
            .call(|c| {
                let mut st = c.prepare("SELECT n FROM t ORDER BY n")?;
                let rows = st.query_map([], |r| r.get(0))?.collect::<Result<Vec<i64>, _>>()?;
                Ok::<_, Error>(rows)
            })
            .await
            .unwrap();
        assert_eq!(rows, (0..64).filter(|n| *n != 17).collect::<Vec<_>>());
        let mut text = String::new();
        let mut reg = prometheus_client::registry::Registry::default();
        reg.register("g", "groups", store.meters().group_jobs.clone());
        prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
        assert!(text.contains("g_bucket{le=\"64.0\"}"), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("g_sum ") && l.ends_with(" 67.0")),
            "64 in a group, the blocker, the table and the read by themselves: {text}"
        );
        store.close();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_acknowledges_only_what_its_commit_kept_when_the_disk_fills() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        let (store, _) = Store::open(&path, &Options::default()).unwrap();
        store
            .call(|c| Ok::<_, Error>(c.execute_batch("CREATE TABLE t(n INTEGER PRIMARY KEY, pad BLOB)")?))
            .await
            .unwrap();
        store.close();
        let pages: i64 = {
            let c = rusqlite::Connection::open(&path).unwrap();
            c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap()
        };
        let opts = Options {
            max_pages: pages as u64 + 8,
            ..Options::default()
        };
        let (store, _) = Store::open(&path, &opts).unwrap();
        let (release, blocker) = hold(&store).await;
        // 40 rows of ~1 KiB fill the 8 spare pages long before the last: some writes must be refused
        let jobs: Vec<_> = (0..40i64)
            .map(|n| {
                let s = store.clone();
                tokio::spawn(async move {
                    s.call(move |c| {
                        let tx = immediate(c)?;
                        tx.execute("INSERT INTO t(n, pad) VALUES (?1, zeroblob(1000))", [n])?;
                        tx.commit()?;
                        Ok::<_, Error>(n)
                    })
                    .await
                })
            })
            .collect();
        queued(&store, 40).await;
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        let mut acknowledged = Vec::new();
        for (n, j) in jobs.into_iter().enumerate() {
            match j.await.unwrap() {
                Ok(_) => acknowledged.push(n as i64),
                Err(e) => assert!(e.is_full(), "job {n}: refused as retryable, not {e}"),
            }
        }
        let rows: Vec<i64> = store
            .call(|c| {
                let mut st = c.prepare("SELECT n FROM t ORDER BY n")?;
                let rows = st.query_map([], |r| r.get(0))?.collect::<Result<Vec<i64>, _>>()?;
                Ok::<_, Error>(rows)
            })
            .await
            .unwrap();
        assert!(acknowledged.len() < 40, "the quota refused some");
        assert_eq!(rows, acknowledged, "kept exactly what was acknowledged");
        store.close();
    }

    #[test]
    fn the_wal_is_checkpointed_beside_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        let (store, _) = Store::open(&path, &Options::default()).unwrap();
        store
            .call_blocking(|c| {
                c.execute_batch("CREATE TABLE t(n INTEGER PRIMARY KEY, pad BLOB)")?;
                for n in 0..2000 {
                    c.execute("INSERT INTO t(n, pad) VALUES (?1, zeroblob(2000))", [n])?;
                }
                Ok::<_, Error>(())
            })
            .unwrap();
        let wal = path.with_extension("sqlite3-wal");
        let db_len = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        // the writer never checkpoints (wal_autocheckpoint = 0); the checkpoint thread copies the pages into
        // the database file within a few of its rounds
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while db_len() < 2000 * 2000 && std::time::Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        assert!(db_len() >= 2000 * 2000, "checkpointed: {} bytes", db_len());
        let auto: i64 = store
            .call_blocking(|c| Ok::<_, Error>(c.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(auto, 0);
        // once a checkpoint has copied everything, the next write restarts the WAL from its beginning
        // instead of growing it. Without checkpoints every write would add a frame; with them, writes spaced
        // over the checkpoint rounds soon stop growing the file.
        let size = || std::fs::metadata(&wal).unwrap().len();
        let mut unchanged = 0;
        for n in 0..100 {
            let last = size();
            store
                .call_blocking(move |c| {
                    Ok::<_, Error>(c.execute("INSERT INTO t(n) VALUES (?1)", [5000 + n]).map(|_| ())?)
                })
                .unwrap();
            unchanged = if size() == last { unchanged + 1 } else { 0 };
            if unchanged == 8 {
                break;
            }
            thread::sleep(wal::CHECKPOINT_EVERY / 2);
        }
        assert_eq!(unchanged, 8, "the WAL kept growing instead of restarting");
        store.close();
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
        let other = Error::from(db::Error::NoRows);
        assert!(!other.is_full() && !full_in(&other));
    }
}
