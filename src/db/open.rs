//! Opening a user's database file: read-only, validated, with a clear error
//! for every way the path can be wrong.

use crate::error::{Error, Result};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How many virtual-machine steps SQLite runs between deadline checks: small
/// enough to stop within milliseconds, large enough to cost nothing.
const PROGRESS_STEPS: i32 = 4_000;

/// Opens `path` read-only (read-only flags and a `mode=ro` URI), after
/// checking that it exists and is a SQLite file, and reads its schema once so
/// a corrupt header fails here rather than in the middle of a search.
pub fn open_read_only(path: &Path) -> Result<Connection> {
    check_sqlite_file(path)?;
    let absolute = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
    let uri = format!("file:{}?mode=ro", uri_escape(&absolute.to_string_lossy()));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags).map_err(|e| open_error(path, e))?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| open_error(path, e))?;
    Ok(conn)
}

fn check_sqlite_file(path: &Path) -> Result<()> {
    let metadata = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::DatabaseMissing(path.to_path_buf()))
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let not_sqlite = |reason: &str| Error::NotSqlite {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    if metadata.is_dir() {
        return Err(not_sqlite("it is a directory"));
    }
    if metadata.len() == 0 {
        return Err(not_sqlite("the file is empty"));
    }
    let mut header = [0u8; 16];
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    if file.read_exact(&mut header).is_err() || &header != SQLITE_MAGIC {
        return Err(not_sqlite("it lacks the SQLite file header"));
    }
    Ok(())
}

/// Escapes the characters that would end or alter the path part of a URI.
fn uri_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' | '?' | '#' => out.push_str(&format!("%{:02X}", c as u32)),
            _ => out.push(c),
        }
    }
    out
}

fn open_error(path: &Path, error: rusqlite::Error) -> Error {
    let detail = error.to_string();
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => Error::NotSqlite {
            path: path.to_path_buf(),
            reason: detail,
        },
        Some(ErrorCode::DatabaseCorrupt) => Error::CorruptDatabase {
            path: path.to_path_buf(),
            detail,
        },
        _ => Error::DatabaseOpen {
            path: path.to_path_buf(),
            detail,
        },
    }
}

/// A wall-time limit for whatever runs next on one connection, enforced by
/// SQLite's progress handler (which interrupts the statement when it returns
/// true).
pub struct Deadline {
    /// Nanoseconds after [`epoch`] at which to interrupt; 0 means no limit.
    at_nanos: Arc<AtomicU64>,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Deadline {
    pub fn install(conn: &mut Connection) -> Result<Self, rusqlite::Error> {
        let at_nanos = Arc::new(AtomicU64::new(0));
        let shared = Arc::clone(&at_nanos);
        conn.progress_handler(
            PROGRESS_STEPS,
            Some(move || {
                let at = shared.load(Ordering::Relaxed);
                at != 0 && epoch().elapsed().as_nanos() as u64 >= at
            }),
        )?;
        Ok(Deadline { at_nanos })
    }

    pub fn arm(&self, limit: Duration) {
        let at = epoch().elapsed() + limit;
        self.at_nanos
            .store((at.as_nanos() as u64).max(1), Ordering::Relaxed);
    }

    pub fn disarm(&self) {
        self.at_nanos.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_uri_specials() {
        assert_eq!(uri_escape("/a b/c?d#e%f.db"), "/a b/c%3Fd%23e%25f.db");
    }
}
