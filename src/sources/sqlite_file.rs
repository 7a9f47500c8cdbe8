//! Writing a new SQLite file whole or not at all: it is filled as a scratch
//! file beside its destination, in one transaction, which then takes its
//! name.

use crate::error::{Error, Result};
use rusqlite::Connection;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// A cache entry: another process may have built the same file meanwhile.
    Replace,
    /// A user's file: an existing one is left as it is.
    Refuse,
}

/// Creates the SQLite file `path` with what `fill` writes through the
/// connection it is given.
pub fn write_new(
    path: &Path,
    overwrite: Overwrite,
    fill: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let scratch = tempfile::Builder::new()
        .prefix(".iesr-")
        .suffix(".sqlite")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    let failed = |e: rusqlite::Error| Error::DatabaseOpen {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let mut conn = Connection::open(scratch.path()).map_err(failed)?;
    // Keys declared between knowledge-graph tables document joins; they are
    // not unique, so they cannot be enforced.
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF;",
    )
    .map_err(failed)?;
    let transaction = conn.transaction().map_err(failed)?;
    fill(&transaction).map_err(failed)?;
    transaction.commit().map_err(failed)?;
    drop(conn);
    let persisted = match overwrite {
        Overwrite::Replace => scratch.persist(path).map(drop),
        Overwrite::Refuse => scratch.persist_noclobber(path).map(drop),
    };
    persisted.map_err(|e| Error::io(path, e.error))
}
