//! The SQLite WAL's ceiling: a checkpoint thread copies committed pages into the database beside the
//! writer, and the writer itself finishes the job when the WAL passes half its ceiling, so that the WAL
//! restarts from its beginning however continuously commits come.
//!
//! Why both: a `PASSIVE` checkpoint on another connection never blocks the writer, but under a steady stream
//! of commits it always ends a few frames behind the newest, and SQLite restarts the WAL only when a write
//! begins after a checkpoint that copied *everything*. So the background thread does the bulk of the copying
//! every [`CHECKPOINT_EVERY`]; the writer, which alone appends frames, runs a `PASSIVE` checkpoint of its own
//! between two commit groups once the WAL holds half the ceiling — it then copies only the tail, catching
//! the WAL up, and its next write restarts it. The two never run at once (a checkpoint takes SQLite's
//! checkpoint lock without waiting, so they share a mutex). The writer's pause is that tail plus the wait
//! for a background round in progress; both are measured. A reader outside the server that holds an old
//! snapshot (an online backup, a `sqlite3` shell) pins the WAL: it cannot restart until that reader ends,
//! which the meters show as `pinned` checkpoints.
//!
//! `journal_size_limit` (half the ceiling) shrinks the file when the WAL restarts after a burst, and the
//! checkpoint thread truncates it to nothing once writes have stopped. Owns no SQL beyond checkpoint pragmas.

use std::{
    cell::Cell,
    path::Path,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    thread,
    time::{Duration, Instant},
};

use prometheus_client::metrics::{counter::Counter, gauge::Gauge, histogram::Histogram};
use rusqlite::hooks::Wal;

use super::Error;

/// How often the checkpoint thread looks at the WAL.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);
/// The default ceiling on the WAL file: 64 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;
/// The smallest ceiling accepted (a commit group alone may take a few hundred KiB).
pub const MIN_MAX_BYTES: u64 = 1 << 20;
/// After a checkpoint that could not copy everything (a reader pinned the WAL), the writer tries again no
/// sooner than this.
const PINNED_RETRY: Duration = Duration::from_millis(50);
/// How long the checkpoint thread's `TRUNCATE` waits for the writer or a reader before leaving it for the
/// next round.
const TRUNCATE_WAIT: Duration = Duration::from_millis(20);

/// Writer pauses: 10 µs to 1 s.
const PAUSE_BUCKETS: [f64; 12] = [
    0.000_01, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.05, 0.25, 1.0,
];

thread_local! {
    /// Frames in the WAL after the last commit on this thread's connection (the writer's), set by SQLite's
    /// WAL hook.
    static FRAMES: Cell<u32> = const { Cell::new(0) };
    /// Whether that connection committed since the writer last looked.
    static COMMITTED: Cell<bool> = const { Cell::new(false) };
}

/// SQLite's WAL hook on the writer connection: called after each commit with the frames the WAL now holds.
fn on_commit(_wal: &Wal, frames: std::ffi::c_int) -> rusqlite::Result<()> {
    FRAMES.set(u32::try_from(frames).unwrap_or(0));
    COMMITTED.set(true);
    Ok(())
}

/// What the checkpointing did, for `/metrics` and the console's Overview. Cheap to clone (shared counters).
#[derive(Debug, Clone)]
pub struct WalMeters {
    /// The `-wal` file's size on disk, in bytes, as last seen.
    pub file_bytes: Gauge,
    /// The configured ceiling, in bytes (0: not SQLite).
    pub ceiling_bytes: Gauge,
    /// Checkpoints that found frames to copy, by either thread.
    pub checkpoints: Counter,
    /// Writer checkpoints that could not copy everything because a reader held an older snapshot.
    pub pinned: Counter,
    /// How long the last checkpoint took, in microseconds.
    pub last_micros: Gauge,
    /// Frames of the WAL in the database after the last checkpoint.
    pub last_pages: Gauge,
    /// Seconds the writer spent catching the WAL up (waiting for a background round, then checkpointing).
    pub writer_pause: Histogram,
    /// The longest writer pause so far, in microseconds.
    pub writer_pause_max_micros: Gauge,
}

impl Default for WalMeters {
    fn default() -> Self {
        Self {
            file_bytes: Gauge::default(),
            ceiling_bytes: Gauge::default(),
            checkpoints: Counter::default(),
            pinned: Counter::default(),
            last_micros: Gauge::default(),
            last_pages: Gauge::default(),
            writer_pause: Histogram::new(PAUSE_BUCKETS),
            writer_pause_max_micros: Gauge::default(),
        }
    }
}

/// The WAL as last seen, for a console.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalState {
    pub file_bytes: u64,
    pub ceiling_bytes: u64,
    pub checkpoints: u64,
    pub pinned: u64,
    pub last_micros: u64,
    pub last_pages: u64,
    pub writer_pause_max_micros: u64,
}

impl WalMeters {
    /// The figures now; `None` when this store has no WAL (PostgreSQL, in memory).
    pub fn state(&self) -> Option<WalState> {
        let n = |g: &Gauge| u64::try_from(g.get()).unwrap_or(0);
        let ceiling = n(&self.ceiling_bytes);
        (ceiling > 0).then(|| WalState {
            file_bytes: n(&self.file_bytes),
            ceiling_bytes: ceiling,
            checkpoints: self.checkpoints.get(),
            pinned: self.pinned.get(),
            last_micros: n(&self.last_micros),
            last_pages: n(&self.last_pages),
            writer_pause_max_micros: n(&self.writer_pause_max_micros),
        })
    }

    /// Records one checkpoint's outcome.
    fn record(&self, started: Instant, frames: Frames) {
        if frames.wal > 0 {
            self.checkpoints.inc();
            self.last_micros.set(micros(started.elapsed()));
            self.last_pages.set(frames.copied);
        }
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// The size of `path`'s `-wal` file (0 when there is none).
fn wal_file_len(db: &Path) -> u64 {
    let mut p = db.as_os_str().to_owned();
    p.push("-wal");
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// What one checkpoint found.
#[derive(Debug, Clone, Copy)]
struct Frames {
    /// Frames in the WAL (-1: the checkpoint could not run, e.g. another one held SQLite's checkpoint lock).
    wal: i64,
    /// Frames of it now in the database.
    copied: i64,
    /// A `TRUNCATE` checkpoint was kept from finishing by a writer or a reader.
    busy: bool,
}

impl Frames {
    /// Everything in the WAL is in the database: the next write starts the WAL from its beginning.
    fn complete(self) -> bool {
        !self.busy && self.wal >= 0 && self.copied >= self.wal
    }
}

/// Checkpoints `conn`'s database: `mode` is `PASSIVE` (never waits) or `TRUNCATE` (waits, within the
/// connection's busy timeout, for the writer and the readers, then empties the file).
fn checkpoint(conn: &rusqlite::Connection, mode: &str) -> rusqlite::Result<Frames> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        Ok(Frames {
            busy: r.get::<_, i64>(0)? != 0,
            wal: r.get(1)?,
            copied: r.get(2)?,
        })
    })
}

/// The writer's side of the ceiling (see the module docs). Lives on the store thread.
pub(super) struct Ceiling {
    path: std::path::PathBuf,
    /// Frames past which the writer catches the WAL up itself.
    catch_up_frames: u32,
    shared: Arc<Mutex<()>>,
    /// Commit groups that wrote, counted for the checkpoint thread to tell when writes have stopped.
    commits: Arc<AtomicU64>,
    meters: WalMeters,
    retry_at: Option<Instant>,
    background: Option<Background>,
}

impl Ceiling {
    /// Sets the writer connection up (no checkpoint on commit, the WAL hook, `journal_size_limit`) and starts
    /// the checkpoint thread on a connection of its own.
    pub(super) fn start(
        conn: &rusqlite::Connection,
        path: &Path,
        max_bytes: u64,
        meters: &WalMeters,
    ) -> Result<Self, Error> {
        let max_bytes = max_bytes.max(MIN_MAX_BYTES);
        let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let frame = u64::try_from(page).unwrap_or(4096) + 24;
        let half = max_bytes / 2;
        // the writer never checkpoints on commit by itself; the hook below replaces SQLite's own
        conn.query_row("PRAGMA wal_autocheckpoint = 0", [], |_| Ok(()))?;
        conn.query_row(&format!("PRAGMA journal_size_limit = {half}"), [], |_| Ok(()))?;
        conn.wal_hook(Some(on_commit));
        meters.ceiling_bytes.set(i64::try_from(max_bytes).unwrap_or(i64::MAX));
        let shared = Arc::new(Mutex::new(()));
        let commits = Arc::new(AtomicU64::new(0));
        let background = Background::start(path, shared.clone(), commits.clone(), meters.clone())?;
        Ok(Self {
            path: path.to_owned(),
            catch_up_frames: u32::try_from(half / frame).unwrap_or(u32::MAX).max(1),
            shared,
            commits,
            meters: meters.clone(),
            retry_at: None,
            background: Some(background),
        })
    }

    /// After a commit group, on the writer thread with no transaction open: when the WAL holds half the
    /// ceiling, copy what the checkpoint thread has not yet copied, so that the next write restarts it.
    pub(super) fn after_group(&mut self, conn: &rusqlite::Connection) {
        if COMMITTED.replace(false) {
            self.commits.fetch_add(1, Ordering::Relaxed);
        }
        if FRAMES.get() < self.catch_up_frames || self.retry_at.is_some_and(|t| Instant::now() < t) {
            return;
        }
        let started = Instant::now();
        let done = {
            let _round = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            let copy_started = Instant::now();
            checkpoint(conn, "PASSIVE").map(|frames| (copy_started, frames))
        };
        match done {
            Ok((copy_started, frames)) => {
                self.meters.record(copy_started, frames);
                if frames.complete() {
                    // everything is in the database: the next write starts the WAL again from its beginning
                    FRAMES.set(0);
                    self.retry_at = None;
                } else {
                    // nothing else writes: only a reader's older snapshot stops the writer's own checkpoint
                    self.meters.pinned.inc();
                    self.retry_at = Some(Instant::now() + PINNED_RETRY);
                    tracing::debug!(
                        frames = frames.wal,
                        copied = frames.copied,
                        "the WAL is pinned by a reader holding an older snapshot"
                    );
                }
            }
            Err(e) => {
                self.retry_at = Some(Instant::now() + PINNED_RETRY);
                tracing::warn!(error = %e, "catching the WAL up failed");
            }
        }
        let pause = started.elapsed();
        self.meters.writer_pause.observe(pause.as_secs_f64());
        if micros(pause) > self.meters.writer_pause_max_micros.get() {
            self.meters.writer_pause_max_micros.set(micros(pause));
        }
        self.meters
            .file_bytes
            .set(i64::try_from(wal_file_len(&self.path)).unwrap_or(i64::MAX));
    }

    /// Stops the checkpoint thread after a last checkpoint.
    pub(super) fn stop(mut self) {
        if let Some(b) = self.background.take() {
            b.stop();
        }
    }
}

/// The checkpoint thread (see the module docs).
struct Background {
    stop: mpsc::Sender<()>,
    handle: thread::JoinHandle<()>,
}

impl Background {
    fn start(path: &Path, shared: Arc<Mutex<()>>, commits: Arc<AtomicU64>, meters: WalMeters) -> Result<Self, Error> {
        let conn = rusqlite::Connection::open(path)?;
        // only `TRUNCATE` waits, and it must not keep the writer waiting for the shared mutex
        conn.busy_timeout(TRUNCATE_WAIT)?;
        let path = path.to_owned();
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = thread::Builder::new()
            .name("opdesk-checkpoint".into())
            .spawn(move || {
                let mut seen = u64::MAX;
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(CHECKPOINT_EVERY) {
                    let now = commits.load(Ordering::Relaxed);
                    round(&conn, &path, &shared, &meters, std::mem::replace(&mut seen, now) == now);
                }
                let _round = shared.lock().unwrap_or_else(PoisonError::into_inner);
                if let Err(e) = checkpoint(&conn, "PASSIVE") {
                    tracing::debug!(error = %e, "WAL checkpoint at close");
                }
            })
            .map_err(|e| Error::Corrupt(format!("cannot spawn the checkpoint thread: {e}")))?;
        Ok(Self { stop, handle })
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.handle.join();
    }
}

/// One round of the checkpoint thread: copy what is there; when the WAL is all copied and nothing was
/// committed since the last round (`quiet`: writes have stopped), truncate the file to nothing.
fn round(conn: &rusqlite::Connection, path: &Path, shared: &Mutex<()>, meters: &WalMeters, quiet: bool) {
    {
        let _round = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let started = Instant::now();
        match checkpoint(conn, "PASSIVE") {
            Ok(frames) => {
                meters.record(started, frames);
                if quiet && frames.complete() && wal_file_len(path) > 0 {
                    // `TRUNCATE` takes the write lock: only once writes have stopped, and briefly
                    if let Err(e) = checkpoint(conn, "TRUNCATE") {
                        tracing::debug!(error = %e, "truncating the idle WAL");
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "WAL checkpoint"),
        }
    }
    meters
        .file_bytes
        .set(i64::try_from(wal_file_len(path)).unwrap_or(i64::MAX));
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::store::{Options, Store, immediate};

    /// A store on a fresh file with a WAL ceiling of `ceiling` bytes and the table `schema`; its dir and path.
    fn open(ceiling: u64, schema: &'static str) -> (tempfile::TempDir, std::path::PathBuf, Store, Options) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        let opts = Options {
            wal_max_bytes: ceiling,
            ..Options::default()
        };
        let (store, _) = Store::open(&path, &opts).unwrap();
        store
            .call_blocking(move |c| Ok::<_, crate::store::Error>(c.execute_batch(schema)?))
            .unwrap();
        (dir, path, store, opts)
    }

    /// Thousands of commits back to back from eight writers (so the store thread forms commit groups) while
    /// a sampler watches the `-wal` file: it never passes the ceiling, and once the writes stop the
    /// checkpoint thread gives the disk back.
    #[test]
    fn the_wal_stays_under_its_ceiling_under_continuous_writes_and_shrinks_after() {
        const CEILING: u64 = 2 << 20;
        const WRITERS: u64 = 8;
        const COMMITS_PER_WRITER: u64 = 2_500;
        let (dir, path, store, opts) = open(
            CEILING,
            "CREATE TABLE t(n INTEGER PRIMARY KEY, k TEXT NOT NULL, pad BLOB); CREATE INDEX t_k ON t(k);",
        );
        let wal = dir.path().join("t.sqlite3-wal");
        let peak = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (wal, peak, done) = (wal.clone(), peak.clone(), done.clone());
            thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(120);
                while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
                    let len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
                    peak.fetch_max(len, Ordering::Relaxed);
                    thread::sleep(Duration::from_micros(200));
                }
            })
        };
        let started = Instant::now();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = store.clone();
                thread::spawn(move || {
                    for i in 0..COMMITS_PER_WRITER {
                        let n = i64::try_from(w * COMMITS_PER_WRITER + i).unwrap();
                        store
                            .call_blocking(move |c| {
                                let tx = immediate(c)?;
                                // a random key spreads the index writes over many pages, as ids and hashes do
                                tx.execute(
                                    "INSERT INTO t(n, k, pad) VALUES (?1, hex(randomblob(16)), zeroblob(600))",
                                    [n],
                                )?;
                                tx.commit()?;
                                Ok::<_, crate::store::Error>(())
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let wrote = started.elapsed();
        let peak_during = peak.load(Ordering::Relaxed);
        // the writes are all there
        let rows: i64 = store
            .call_blocking(|c| Ok::<_, crate::store::Error>(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(rows, i64::try_from(WRITERS * COMMITS_PER_WRITER).unwrap());
        // without the ceiling these commits leave a WAL of tens of MiB
        let db_len = std::fs::metadata(&path).unwrap().len();
        assert!(
            db_len > 4 * CEILING,
            "the test wrote enough to matter: {db_len} bytes in the database"
        );
        assert!(
            peak_during <= CEILING,
            "the WAL reached {peak_during} bytes (ceiling {CEILING}) over {} commits in {wrote:?}",
            WRITERS * COMMITS_PER_WRITER
        );
        let meters = store.meters().wal.clone();
        assert!(meters.checkpoints.get() > 0);
        // writes have stopped: within a few checkpoint rounds the file is emptied
        let deadline = Instant::now() + Duration::from_secs(10);
        let len = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        // (the meter says what the checkpoint that emptied the file saw, a moment after the file shrank)
        let metered = || meters.state().map_or(u64::MAX, |s| s.file_bytes);
        while (len() > 0 || metered() > 0) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(len(), 0, "the WAL was truncated once the writes stopped");
        done.store(true, Ordering::Relaxed);
        sampler.join().unwrap();
        assert!(peak.load(Ordering::Relaxed) <= CEILING);
        let state = meters.state().unwrap();
        assert_eq!(state.ceiling_bytes, CEILING);
        assert_eq!(state.file_bytes, 0);
        store.close();
        // the data survives a reopen
        let (store, _) = Store::open(&path, &opts).unwrap();
        let again: i64 = store
            .call_blocking(|c| Ok::<_, crate::store::Error>(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(again, rows);
        store.close();
    }

    /// A reader holding an old snapshot keeps the WAL from starting again: the checkpoints say so (pinned)
    /// instead of pretending, and once it lets go the WAL is caught up and emptied.
    #[test]
    fn a_reader_holding_a_snapshot_pins_the_wal_and_releasing_it_frees_it() {
        const CEILING: u64 = 1 << 20;
        let (dir, path, store, _) = open(CEILING, "CREATE TABLE t(n INTEGER PRIMARY KEY, pad BLOB)");
        let reader = rusqlite::Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        for n in 0..600i64 {
            store
                .call_blocking(move |c| {
                    Ok::<_, crate::store::Error>(
                        c.execute("INSERT INTO t(n, pad) VALUES (?1, zeroblob(3000))", [n])
                            .map(|_| ())?,
                    )
                })
                .unwrap();
        }
        let wal = dir.path().join("t.sqlite3-wal");
        let len = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        assert!(len() > CEILING, "a pinned WAL cannot restart: {}", len());
        assert!(store.meters().wal.pinned.get() > 0, "the pin is counted");
        reader.execute_batch("COMMIT").unwrap();
        drop(reader);
        store
            .call_blocking(|c| {
                Ok::<_, crate::store::Error>(c.execute("INSERT INTO t(n) VALUES (100000)", []).map(|_| ())?)
            })
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while len() > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(len(), 0, "caught up and emptied once the reader let go");
        store.close();
    }
}
