//! `opdesk migrate`: brings the store's schema to this opdesk's version and says which it was. Prints one line.

use color_eyre::eyre::Result;

use super::OneLine;
use crate::settings::Settings;

/// `opdesk migrate`: migrates the store's schema (under the data dir's lock on SQLite, so never behind a
/// running server) and prints one line: where, from which version to which.
pub async fn run_migrate(settings: &Settings) -> Result<()> {
    let opts = crate::store::Options::default();
    let (where_, lock) = if settings.store.url.is_empty() {
        let db = settings.paths.database();
        if !db.is_file() {
            return Err(OneLine::new(format!("no database at {} (is --data-dir right?)", db.display())).into());
        }
        let lock = crate::owner::DirLock::acquire(&settings.paths.data_dir).map_err(|e| OneLine::new(e.to_string()))?;
        (settings.paths.database().display().to_string(), Some(lock))
    } else {
        (crate::store::redact_url(&settings.store.url), None)
    };
    let path = settings.paths.database();
    let url = settings.store.url.clone();
    let (from, to) = tokio::task::spawn_blocking(move || {
        if url.is_empty() {
            crate::store::migrate_sqlite(&path, &opts)
        } else {
            crate::store::migrate_postgres(&url)
        }
    })
    .await
    .map_err(|e| OneLine::new(format!("the migration stopped: {e}")))?
    .map_err(|e| OneLine::new(format!("cannot migrate {where_}: {e}")))?;
    drop(lock);
    if from == to {
        println!("{where_}: schema at version {to}, nothing to do");
    } else {
        println!("{where_}: schema migrated from version {from} to {to}");
    }
    Ok(())
}
