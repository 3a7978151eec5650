//! Owner-only files: the data dir is 0700, and the database (with its `-wal`/`-shm` companions) and every
//! secret file 0600, whatever the umask and whatever they were before. Modes that let the group or others
//! in are tightened, with a warning in the log naming the file and its old mode.
//!
//! SQLite creates `-wal` and `-shm` with the main database file's mode, so the database file is created 0600
//! here, before SQLite opens it. Owns no paths itself: `settings::Paths` names them. No-ops off Unix.

use std::{io::Write, path::Path};

/// Creates `dir` (and missing parents) 0700; an existing one is tightened to 0700.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)?;
    tighten_to(dir, 0o700)
}

/// Tightens an existing file to 0600 if the group or others may read or write it; a missing file is fine.
pub fn tighten(path: &Path) -> std::io::Result<()> {
    tighten_to(path, 0o600)
}

#[cfg(unix)]
fn tighten_to(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let old = meta.permissions().mode() & 0o7777;
    if old & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        tracing::warn!(
            path = %path.display(),
            "{} was mode {old:04o} (open to other users); changed to {mode:04o}",
            if meta.is_dir() { "the data dir" } else { "a private file" }
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn tighten_to(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

/// Creates `path` empty with mode 0600 if it does not exist (an existing file is only tightened).
pub fn create_private(path: &Path) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    match o.open(path) {
        Ok(f) => set_private(&f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => tighten(path),
        Err(e) => Err(e),
    }
}

/// Sets 0600 on an open file (the umask may have taken bits away that the owner needs).
fn set_private(f: &std::fs::File) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = f;
    Ok(())
}

/// Writes `contents` to `path` with mode 0600, atomically (temp file + rename).
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o.open(&tmp)?;
    // An old temp file keeps its mode: set it before anything secret is written.
    set_private(&f)?;
    f.write_all(contents)?;
    f.sync_all()?;
    std::fs::rename(tmp, path)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).map_or(0, |m| m.permissions().mode() & 0o777)
    }

    #[test]
    fn loose_modes_are_tightened_and_new_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&data).unwrap();
        assert_eq!(mode(&data), 0o700);

        let secret = data.join("s");
        std::fs::write(&secret, "x").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        tighten(&secret).unwrap();
        assert_eq!(mode(&secret), 0o600);
        tighten(&data.join("missing")).unwrap();

        let db = data.join("db");
        create_private(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
        create_private(&db).unwrap();
        assert_eq!(mode(&db), 0o600);

        let tmp = data.join("key.tmp");
        std::fs::write(&tmp, "old").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&data.join("key.pem"), b"secret").unwrap();
        assert_eq!(mode(&data.join("key.pem")), 0o600);
        assert_eq!(std::fs::read(data.join("key.pem")).unwrap(), b"secret");
    }
}
