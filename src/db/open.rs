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
///
/// A database in WAL mode that no connection holds open (no `-shm` or
/// `-wal` file beside it) is opened as immutable: a plain read-only open
/// would create both files beside the user's file and leave them there, or
/// fail where the folder cannot be written. Immutable means SQLite assumes
/// nobody writes the file while it is read. When either file exists,
/// another process has the database open, perhaps writing (or left a log
/// that is not yet in the file), and the plain read-only open reads the
/// log too: readers see committed snapshots and never block the writer.
pub fn open_read_only(path: &Path) -> Result<Connection> {
    let journal = check_sqlite_file(path)?;
    let absolute = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
    let beside = |suffix: &str| {
        let mut name = absolute.clone().into_os_string();
        name.push(suffix);
        Path::new(&name).exists()
    };
    let immutable = journal == Journal::Wal && !beside("-shm") && !beside("-wal");
    let uri = format!(
        "file:{}?mode=ro{}",
        uri_escape(&absolute.to_string_lossy()),
        if immutable { "&immutable=1" } else { "" }
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags).map_err(|e| open_error(path, e))?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| open_error(path, e))?;
    Ok(conn)
}

/// How a database file keeps its journal, from its header.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Journal {
    Rollback,
    Wal,
}

/// Bytes 18 and 19 of the header: the file format's write and read
/// versions, 2 for WAL.
const VERSIONS_AT: usize = 18;

fn check_sqlite_file(path: &Path) -> Result<Journal> {
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
    let mut header = [0u8; VERSIONS_AT + 2];
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    if file.read_exact(&mut header).is_err() || &header[..16] != SQLITE_MAGIC {
        return Err(not_sqlite("it lacks the SQLite file header"));
    }
    if header[VERSIONS_AT..] == [2, 2] {
        Ok(Journal::Wal)
    } else {
        Ok(Journal::Rollback)
    }
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

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A database in WAL mode, closed by its writer (which removes the log
    /// files on close).
    fn wal_database() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);",
        )
        .unwrap();
        drop(conn);
        (dir, path)
    }

    #[test]
    fn a_wal_database_is_read_without_leaving_files_beside_it() {
        let (dir, path) = wal_database();
        assert_eq!(check_sqlite_file(&path).unwrap(), Journal::Wal);
        let before = listing(dir.path());
        let bytes = std::fs::read(&path).unwrap();
        let conn = open_read_only(&path).unwrap();
        let x: i64 = conn.query_row("SELECT x FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(x, 1);
        drop(conn);
        assert_eq!(listing(dir.path()), before);
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn a_wal_database_being_written_is_read_beside_its_writer() {
        let (_dir, path) = wal_database();
        let writer = Connection::open(&path).unwrap();
        writer.execute("INSERT INTO t VALUES (2)", []).unwrap();
        let reader = open_read_only(&path).unwrap();
        let count = |c: &Connection| -> i64 {
            c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(count(&reader), 2);
        // A read in progress neither blocks the writer nor sees its rows
        // before they are committed.
        reader.execute_batch("BEGIN").unwrap();
        assert_eq!(count(&reader), 2);
        writer.execute("INSERT INTO t VALUES (3)", []).unwrap();
        assert_eq!(count(&reader), 2);
        reader.execute_batch("COMMIT").unwrap();
        assert_eq!(count(&reader), 3);
    }

    #[test]
    fn a_log_left_beside_a_wal_database_is_read() {
        let (_dir, path) = wal_database();
        let writer = Connection::open(&path).unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute("INSERT INTO t VALUES (2)", []).unwrap();
        // The file and its log copied without the shared-memory file: the
        // second row is only in the log.
        let copy = tempfile::tempdir().unwrap();
        let copied = copy.path().join("app.sqlite");
        std::fs::copy(&path, &copied).unwrap();
        let mut log = path.clone().into_os_string();
        log.push("-wal");
        std::fs::copy(&log, copy.path().join("app.sqlite-wal")).unwrap();
        let conn = open_read_only(&copied).unwrap();
        let count: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 2);
    }

    #[test]
    fn escapes_uri_specials() {
        assert_eq!(uri_escape("/a b/c?d#e%f.db"), "/a b/c%3Fd%23e%25f.db");
    }
}
