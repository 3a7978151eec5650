//! `opdesk backup FILE`: a consistent copy of the database while the server keeps serving. A read of the
//! database file through [`store::backup()`], so it runs on the server's host whether or not a server holds
//! the data dir (never with `--connect`), and it refuses to replace FILE without `--force`, or to write
//! over the live database. When no server holds the data dir, it holds it for the copy (so that none starts
//! meanwhile and SQLite's empty `-wal`/`-shm` can be tidied away). Prints one line (or JSON with `--json`)
//! through [`super::print`].

use std::path::PathBuf;

use clap::Args;
use color_eyre::eyre::{Result, eyre};
use serde::Serialize;

use super::{Global, OneLine, print::emit};
use crate::{
    owner::{self, DirLock},
    settings::Settings,
    store,
};

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where the copy goes (written next to it first, then renamed into place; mode 0600).
    pub file: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BackedUp {
    database: PathBuf,
    file: PathBuf,
    pages: u64,
    bytes: u64,
}

/// Copies the data dir's database to `args.file`.
pub async fn run_backup(args: BackupArgs, settings: &Settings, global: &Global) -> Result<()> {
    if let Some(url) = &global.connect {
        return Err(OneLine::new(format!(
            "backup reads the database file, so it cannot run through --connect {url}: run `opdesk backup FILE` on the server's host"
        ))
        .into());
    }
    if !settings.store.url.is_empty() {
        return Err(OneLine::new(format!(
            "the store is PostgreSQL ({}): opdesk backup copies the SQLite file of a data dir",
            crate::store::redact_url(&settings.store.url)
        ))
        .hint("back it up with PostgreSQL's own tools: pg_dump, or base backups with WAL archiving")
        .into());
    }
    let db = settings.paths.database();
    if !db.is_file() {
        return Err(OneLine::new(format!("no database at {} (is --data-dir right?)", db.display())).into());
    }
    if store::is_live_database(&args.file, &db) {
        return Err(OneLine::new(format!(
            "{} is the live database (or one of its files): back up to another file",
            args.file.display()
        ))
        .into());
    }
    // a server holds the data dir: copy alongside it; else hold the data dir for the copy
    let held = match DirLock::acquire(&settings.paths.data_dir) {
        Ok(lock) => Some(lock),
        Err(owner::Error::Held { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let opts = store::BackupOptions {
        busy_timeout: std::time::Duration::from_millis(settings.store.busy_timeout_ms),
        overwrite: args.force,
        exclusive: held.is_some(),
        ..store::BackupOptions::default()
    };
    let (src, dst) = (db.clone(), args.file.clone());
    let report = tokio::task::spawn_blocking(move || {
        let report = store::backup(&src, &dst, &opts);
        drop(held);
        report
    })
    .await
    .map_err(|e| eyre!("the backup task failed: {e}"))?
    .map_err(|e| {
        OneLine::new(match e {
            store::Error::Exists(p) => format!("{} already exists; pass --force to replace it", p.display()),
            e => format!("backing up {} failed: {e}", db.display()),
        })
    })?;
    let out = BackedUp {
        database: db,
        file: args.file,
        pages: report.pages,
        bytes: report.bytes,
    };
    emit(global.json, &out, || {
        format!(
            "backed up {} to {} ({} pages, {} KiB)\n",
            out.database.display(),
            out.file.display(),
            out.pages,
            out.bytes.div_ceil(1024)
        )
    })
}
