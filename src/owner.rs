//! Who owns a data dir: one opdesk process at a time holds an exclusive OS lock on `opdesk.lock` in it (a
//! server for as long as it runs, an offline operator command for the length of the command), and a server
//! records how to reach it in `server.json` next to the lock. The OS releases the lock when the process
//! ends, however it ends (`kill -9` included), so a record whose lock is free is stale and is taken over.
//!
//! Owns the lock and the record; knows nothing of the store or HTTP beyond the address it writes down.

use std::{
    fs::{File, OpenOptions, TryLockError},
    net::SocketAddr,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::files;

/// The lock file's name in the data dir.
pub const LOCK_FILE: &str = "opdesk.lock";
/// The running server's record, next to the lock.
pub const RECORD_FILE: &str = "server.json";

/// The exclusive hold on a data dir; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DirLock {
    dir: PathBuf,
    _file: File,
    recorded: bool,
}

/// How to reach the server that holds a data dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub pid: u32,
    /// The admin API's base URL (a loopback address).
    pub admin: String,
    pub public_url: String,
    pub version: String,
    #[serde(with = "crate::clock::wire")]
    pub started_at: time::OffsetDateTime,
}

/// Why a data dir could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another opdesk process holds it: a server (its record says how to reach it) or an offline command.
    #[error("{}", held_line(.dir, .record.as_deref()))]
    Held { dir: PathBuf, record: Option<Box<Record>> },
    #[error("cannot lock the data dir {}: {source}", .dir.display())]
    Io { dir: PathBuf, source: std::io::Error },
}

fn held_line(dir: &Path, record: Option<&Record>) -> String {
    match record {
        Some(r) => format!(
            "another opdesk server holds the data dir {}: pid {}, admin API {}, public URL {}, running since {}",
            dir.display(),
            r.pid,
            r.admin,
            r.public_url,
            crate::clock::format_ts(r.started_at)
        ),
        None => format!(
            "another opdesk process holds the data dir {} (an operator command, or a server still starting); try again",
            dir.display()
        ),
    }
}

impl DirLock {
    /// Takes the data dir `dir` (created 0700 if missing), or says who holds it.
    pub fn acquire(dir: &Path) -> Result<Self, Error> {
        let io = |source| Error::Io {
            dir: dir.to_owned(),
            source,
        };
        files::private_dir(dir).map_err(io)?;
        let path = dir.join(LOCK_FILE);
        files::create_private(&path).map_err(io)?;
        let file = OpenOptions::new().read(true).write(true).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Self {
                dir: dir.to_owned(),
                _file: file,
                recorded: false,
            }),
            Err(TryLockError::WouldBlock) => Err(Error::Held {
                dir: dir.to_owned(),
                record: read_record(dir).filter(|r| process_alive(r.pid)).map(Box::new),
            }),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// [`Self::acquire`], waiting up to `wait` for a holder that is letting go. A lock released a moment ago can
    /// still look held: a child forked by this process (before it execs) shares the lock file's open
    /// description. Only a holder still there after `wait` is an [`Error::Held`].
    pub async fn acquire_within(dir: &Path, wait: std::time::Duration) -> Result<Self, Error> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            match Self::acquire(dir) {
                Err(Error::Held { .. }) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                other => return other,
            }
        }
    }

    /// Records the server that holds the lock (written atomically, 0600; a stale record is replaced).
    pub fn record(
        &mut self,
        listening: SocketAddr,
        public_url: &str,
        started_at: time::OffsetDateTime,
    ) -> std::io::Result<()> {
        let record = Record {
            pid: std::process::id(),
            admin: format!("http://{}", loopback_of(listening)),
            public_url: public_url.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at,
        };
        let json = serde_json::to_vec_pretty(&record).map_err(std::io::Error::other)?;
        files::write_private(&self.dir.join(RECORD_FILE), &json)?;
        self.recorded = true;
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for DirLock {
    /// A server that stops cleanly takes its record with it (the lock goes with the file handle).
    fn drop(&mut self) {
        if self.recorded {
            let _ = std::fs::remove_file(self.dir.join(RECORD_FILE));
        }
    }
}

/// The record in `dir`, if there is a readable one (it may be stale: see [`DirLock::acquire`]).
pub fn read_record(dir: &Path) -> Option<Record> {
    let text = std::fs::read(dir.join(RECORD_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Whether process `pid` exists (Linux: `/proc`); assumed alive where that cannot be told.
pub fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

/// The address a local client reaches a listener on: an unspecified address becomes loopback.
pub fn loopback_of(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    addr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_the_record_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = DirLock::acquire(dir.path()).unwrap();
        first
            .record(
                "0.0.0.0:4660".parse().unwrap(),
                "http://x",
                crate::clock::ts("2026-11-24T00:00:00Z"),
            )
            .unwrap();
        let rec = read_record(dir.path()).unwrap();
        assert_eq!(rec.admin, "http://127.0.0.1:4660");
        assert_eq!(rec.pid, std::process::id());
        match DirLock::acquire(dir.path()) {
            Err(Error::Held { record: Some(r), .. }) => assert_eq!(*r, rec),
            other => panic!("{other:?}"),
        }
        let line = DirLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(
            line.contains(&format!("pid {}", rec.pid)) && line.contains("http://127.0.0.1:4660"),
            "{line}"
        );
        drop(first);
        assert!(read_record(dir.path()).is_none(), "a clean stop removes the record");
        let again = DirLock::acquire(dir.path()).unwrap();
        assert!(matches!(
            DirLock::acquire(dir.path()),
            Err(Error::Held { record: None, .. })
        ));
        drop(again);
    }

    #[tokio::test]
    async fn a_holder_letting_go_is_waited_for_and_one_that_stays_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let short = std::time::Duration::from_millis(60);
        assert!(matches!(
            DirLock::acquire_within(dir.path(), short).await,
            Err(Error::Held { .. })
        ));
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            drop(first);
        });
        let second = DirLock::acquire_within(dir.path(), std::time::Duration::from_secs(5)).await;
        release.join().unwrap();
        assert!(second.is_ok(), "{second:?}");
    }

    #[test]
    fn a_record_whose_lock_is_free_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let stale = Record {
            pid: u32::MAX,
            admin: "http://127.0.0.1:1".into(),
            public_url: "http://old".into(),
            version: "0".into(),
            started_at: crate::clock::ts("2020-01-01T00:00:00Z"),
        };
        files::write_private(&dir.path().join(RECORD_FILE), &serde_json::to_vec(&stale).unwrap()).unwrap();
        let mut lock = DirLock::acquire(dir.path()).unwrap();
        lock.record(
            "127.0.0.1:5".parse().unwrap(),
            "http://new",
            crate::clock::ts("2026-01-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(read_record(dir.path()).unwrap().public_url, "http://new");
    }
}
