//! Online backup: a consistent copy of the database while a server keeps writing to it, through SQLite's
//! backup API.
//!
//! The source is opened read-only and one read transaction is held for the whole copy: in WAL mode a reader
//! never blocks the writer, and the snapshot it reads stays fixed, so the copy is the database as of one
//! commit and never restarts however busy the server is. Pages are copied in small steps with short pauses.
//! The copy goes to a 0600 temp file next to the destination, is checked (`PRAGMA quick_check`) and synced,
//! and only then takes the destination's name: the destination is never a half-written file. Knows nothing
//! of data dirs, servers or the command line.

use std::{
    path::{Path, PathBuf},
    thread,
    time::{Duration, Instant},
};

use rusqlite::{
    Connection, OpenFlags,
    backup::{Backup, StepResult},
};

use super::Error;

/// How to copy.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long to wait for a lock on either database before giving up (the store's `busy_timeout`).
    pub busy_timeout: Duration,
    /// Pages copied per step.
    pub pages_per_step: u16,
    /// The pause between steps, leaving the disk to the server.
    pub pause: Duration,
    /// Replace an existing destination file (else it is refused as [`Error::Exists`]).
    pub overwrite: bool,
    /// The caller guarantees that no other connection opens the source meanwhile (it holds the data dir).
    /// Then the `-wal` and `-shm` files a read-only reader creates but may not remove are removed afterwards,
    /// when they were not there before and the `-wal` is empty.
    pub exclusive: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            pages_per_step: 256,
            pause: Duration::from_millis(2),
            overwrite: false,
            exclusive: false,
        }
    }
}

/// What a backup copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupReport {
    /// Database pages copied.
    pub pages: u64,
    /// The copy's size in bytes.
    pub bytes: u64,
}

/// Copies the database at `src` to `dst` (see the module docs). An existing `dst` is refused unless
/// `opts.overwrite`; either way, `dst` is the complete copy or is left as it was.
pub fn backup(src: &Path, dst: &Path, opts: &Options) -> Result<BackupReport, Error> {
    if !opts.overwrite && dst.exists() {
        return Err(Error::Exists(dst.to_owned()));
    }
    let tmp = temp_path(dst);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    // a temp file left by a killed backup is ours to replace
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&tmp)(e)),
        _ => {}
    }
    crate::files::create_private(&tmp).map_err(io(&tmp))?;
    let companions = [with_suffix(src, "-wal"), with_suffix(src, "-shm")];
    let existed = companions.clone().map(|p| p.exists());
    let copied = copy(src, &tmp, opts);
    if opts.exclusive && existed == [false, false] {
        let [wal, shm] = &companions;
        if std::fs::metadata(wal).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(wal);
            let _ = std::fs::remove_file(shm);
        }
    }
    let result = copied.and_then(|pages| {
        std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(io(&tmp))?;
        install(&tmp, dst, opts.overwrite)?;
        let bytes = std::fs::metadata(dst).map_err(io(dst))?.len();
        Ok(BackupReport { pages, bytes })
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        for suffix in ["-journal", "-wal", "-shm"] {
            let _ = std::fs::remove_file(with_suffix(&tmp, suffix));
        }
    }
    result
}

/// `dir/.name.backup-tmp`: next to `dst`, so that the rename stays on one file system.
fn temp_path(dst: &Path) -> PathBuf {
    let name = dst.file_name().map_or_else(|| "backup".into(), |n| n.to_string_lossy());
    dst.with_file_name(format!(".{name}.backup-tmp"))
}

/// `path` with `suffix` appended to its name (SQLite's `-journal`, `-wal`, `-shm` companions).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Copies `src` into the (empty) file `tmp` page by page and checks the copy; returns the page count.
fn copy(src: &Path, tmp: &Path, opts: &Options) -> Result<u64, Error> {
    let from = Connection::open_with_flags(
        src,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )?;
    from.busy_timeout(opts.busy_timeout)?;
    let mut to = Connection::open(tmp)?;
    to.busy_timeout(opts.busy_timeout)?;
    // One read transaction for the whole copy: a fixed snapshot, so the backup neither restarts when the
    // server commits nor copies a mix of before and after.
    let snapshot = from.unchecked_transaction()?;
    snapshot.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))?;
    let pages = {
        let step = Backup::new(&snapshot, &mut to)?;
        let mut busy_since: Option<Instant> = None;
        loop {
            match step.step(i32::from(opts.pages_per_step))? {
                StepResult::Done => break,
                StepResult::More => busy_since = None,
                StepResult::Busy | StepResult::Locked => {
                    let since = *busy_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > opts.busy_timeout {
                        return Err(Error::from(rusqlite::Error::SqliteFailure(
                            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                            Some("the database stayed locked".into()),
                        )));
                    }
                }
                _ => {}
            }
            thread::sleep(opts.pause);
        }
        u64::try_from(step.progress().pagecount).unwrap_or(0)
    };
    snapshot.rollback()?;
    let check: String = to.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(Error::Corrupt(format!("the copy failed its check: {check}")));
    }
    to.close().map_err(|(_, e)| Error::from(e))?;
    from.close().map_err(|(_, e)| Error::from(e))?;
    Ok(pages)
}

/// Gives the finished copy `tmp` the name `dst`: a rename when overwriting; else a hard link, which fails
/// if `dst` appeared meanwhile (where links are not supported, a check and a rename).
fn install(tmp: &Path, dst: &Path, overwrite: bool) -> Result<(), Error> {
    let io = |path: &Path, source| Error::Io {
        path: path.to_owned(),
        source,
    };
    if overwrite {
        return std::fs::rename(tmp, dst).map_err(|e| io(dst, e));
    }
    match std::fs::hard_link(tmp, dst) {
        Ok(()) => std::fs::remove_file(tmp).map_err(|e| io(tmp, e)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::Exists(dst.to_owned())),
        Err(_) if dst.exists() => Err(Error::Exists(dst.to_owned())),
        Err(_) => std::fs::rename(tmp, dst).map_err(|e| io(dst, e)),
    }
}

/// Whether `file` names the database `db` or one of its companion files (compared after resolving the
/// directories, so `./x/../ase.sqlite3` is caught too).
pub fn is_live_database(file: &Path, db: &Path) -> bool {
    let resolve = |p: &Path| -> Option<PathBuf> {
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(parent.canonicalize().ok()?.join(p.file_name()?))
    };
    let (Some(file), Some(db)) = (resolve(file), resolve(db)) else {
        return false;
    };
    ["", "-wal", "-shm", "-journal"].iter().any(|suffix| {
        let mut p = db.clone().into_os_string();
        p.push(suffix);
        p == file.as_os_str()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Options as StoreOptions, Store};

    fn rows(path: &Path) -> i64 {
        let c = Connection::open(path).unwrap();
        c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn copies_a_database_being_written_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("ase.sqlite3");
        let (store, _) = Store::open(&src, &StoreOptions::default()).unwrap();
        store
            .call_blocking(|c| {
                c.execute_batch("CREATE TABLE t(x BLOB); INSERT INTO t VALUES (zeroblob(2000000));")?;
                Ok::<_, Error>(())
            })
            .unwrap();
        // a writer commits all through the copy; the copy is the snapshot it started from, or later
        let writer = store.clone();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = stop.clone();
        let t = thread::spawn(move || {
            let mut n = 0;
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                writer
                    .call_blocking(|c| {
                        c.execute("INSERT INTO t VALUES (randomblob(100))", [])?;
                        Ok::<_, Error>(())
                    })
                    .unwrap();
                n += 1;
            }
            n
        });
        let dst = dir.path().join("copy.sqlite3");
        let opts = Options {
            pages_per_step: 16,
            ..Options::default()
        };
        let report = backup(&src, &dst, &opts).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let written = t.join().unwrap();
        assert!(report.pages > 400, "{report:?}");
        assert_eq!(report.bytes, std::fs::metadata(&dst).unwrap().len());
        let copied = rows(&dst);
        assert!(copied >= 1 && copied <= 1 + written, "{copied} of {written}");
        assert!(!temp_path(&dst).exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&dst).unwrap().permissions().mode() & 0o777, 0o600);
        }

        // an existing file stays as it was unless overwriting is asked for
        std::fs::write(&dst, b"keep me").unwrap();
        assert!(matches!(backup(&src, &dst, &Options::default()), Err(Error::Exists(_))));
        assert_eq!(std::fs::read(&dst).unwrap(), b"keep me");
        let over = Options {
            overwrite: true,
            ..Options::default()
        };
        backup(&src, &dst, &over).unwrap();
        assert_eq!(
            rows(&dst),
            1 + written,
            "the writer has stopped: everything is in the copy"
        );
        store.close();
        let tmp = temp_path(&dst);
        for leftover in [
            tmp.clone(),
            with_suffix(&tmp, "-journal"),
            with_suffix(&tmp, "-wal"),
            with_suffix(&dst, "-wal"),
        ] {
            assert!(!leftover.exists(), "{}", leftover.display());
        }
    }

    #[test]
    fn an_exclusive_backup_of_a_closed_database_leaves_its_files_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("ase.sqlite3");
        let (store, _) = Store::open(&src, &StoreOptions::default()).unwrap();
        store.close();
        let listing = || {
            let mut names: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(listing(), ["ase.sqlite3"]);
        let opts = Options {
            exclusive: true,
            ..Options::default()
        };
        backup(&src, &dir.path().join("copy.sqlite3"), &opts).unwrap();
        assert_eq!(listing(), ["ase.sqlite3", "copy.sqlite3"]);
    }

    #[test]
    fn a_failed_backup_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("copy.sqlite3");
        let e = backup(&dir.path().join("missing.sqlite3"), &dst, &Options::default()).unwrap_err();
        assert!(matches!(e, Error::Sql(_)), "{e:?}");
        assert!(!dst.exists() && !temp_path(&dst).exists());
    }

    #[test]
    fn the_live_database_is_never_a_destination() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ase.sqlite3");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert!(is_live_database(&db, &db));
        assert!(is_live_database(&dir.path().join("sub/../ase.sqlite3-wal"), &db));
        assert!(!is_live_database(&dir.path().join("backup.sqlite3"), &db));
        assert!(!is_live_database(&dir.path().join("missing/ase.sqlite3"), &db));
    }
}
