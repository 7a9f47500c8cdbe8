//! Runs model-written SQL against a user's database safely: read-only, one
//! read statement at a time, bounded in time and rows, in parallel, with
//! results cached by normalised SQL text.

use super::digest::ResultDigest;
use super::guard::{authorize, check_single_read, normalize};
use super::open::{open_read_only, Deadline};
use super::plain_names::PlainNames;
use super::value::Value;
use crate::error::{QueryError, Result};
use crate::functions;
use lru::LruCache;
use rayon::prelude::*;
use rusqlite::hooks::Authorization;
use rusqlite::limits::Limit;
use rusqlite::{Connection, ErrorCode};
use serde::Serialize;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Limits applied to every query.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Wall-time limit per query.
    pub timeout: Duration,
    /// Most rows kept in a [`QueryResult`]; the digest still covers all rows.
    pub max_rows: usize,
    /// Most distinct SQL texts whose results are kept.
    pub cache_entries: usize,
    /// Longest string or blob a query may build, in bytes (SQLite's length
    /// limit): `randomblob(1e9)` or a runaway `group_concat` fails at
    /// once instead of taking the machine's memory.
    pub max_value_bytes: usize,
    /// Most memory SQLite may hold at once (its hard heap limit), so a
    /// runaway query fails with an error instead of exhausting the
    /// machine. The limit is SQLite's for the whole process: the latest
    /// opened executor's applies to every connection.
    pub max_memory_bytes: usize,
    /// Limits of the JavaScript functions a query may call.
    pub functions: crate::functions::Limits,
}

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            timeout: Duration::from_secs(30),
            max_rows: 1_000,
            cache_entries: 4_096,
            max_value_bytes: 16 << 20,
            max_memory_bytes: 2 << 30,
            functions: crate::functions::Limits::default(),
        }
    }
}

/// A query's result as handed to the engine.
#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    pub columns: Vec<String>,
    /// The first `max_rows` rows.
    pub rows: Vec<Vec<Value>>,
    /// Rows the query produced in all (may exceed `rows.len()`).
    pub total_rows: usize,
    /// Fingerprint of the full result, for comparing answers.
    #[serde(skip)]
    pub digest: ResultDigest,
    pub elapsed_ms: f64,
}

impl QueryResult {
    pub fn truncated(&self) -> bool {
        self.total_rows > self.rows.len()
    }
}

pub type QueryOutcome = Result<Arc<QueryResult>, QueryError>;

struct GuardedConnection {
    conn: Connection,
    deadline: Deadline,
    /// Set by the authorizer when it denies something: SQLite reports some
    /// denials (functions, for one) as plain errors, and this tells them apart.
    denied: Arc<AtomicBool>,
}

/// A read-only executor over one database file.
pub struct Executor {
    path: PathBuf,
    config: ExecConfig,
    /// Idle connections; a worker takes one (or opens one) per query, so
    /// parallel queries each run on their own connection.
    pool: Mutex<Vec<GuardedConnection>>,
    cache: Mutex<LruCache<String, Cached>>,
    /// The plain words queries may use for names that must be quoted.
    plain_names: Option<PlainNames>,
}

/// A cached outcome and the text that ran to it: two layouts of one query
/// share a result, but a syntax error's offset belongs to the text it was
/// found in.
struct Cached {
    sql: String,
    outcome: QueryOutcome,
}

impl Cached {
    /// The outcome, when it holds for `sql` as written.
    fn for_text(&self, sql: &str) -> Option<QueryOutcome> {
        let placed = matches!(self.outcome, Err(QueryError::SqlAt { .. }));
        (!placed || self.sql == sql).then(|| self.outcome.clone())
    }
}

impl Executor {
    /// Opens the database (validating it) with the given limits.
    pub fn open(path: &Path, config: ExecConfig) -> Result<Self> {
        let first = connect(path, &config)?;
        let capacity = NonZeroUsize::new(config.cache_entries.max(1)).expect("max(1) is non-zero");
        Ok(Executor {
            path: path.to_path_buf(),
            config,
            pool: Mutex::new(vec![first]),
            cache: Mutex::new(LruCache::new(capacity)),
            plain_names: None,
        })
    }

    /// Lets queries write `names`' plain words for names that must be
    /// quoted; their errors speak of those words too.
    pub fn with_plain_names(mut self, names: Option<PlainNames>) -> Self {
        self.plain_names = names;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    /// Runs one query, or returns the cached outcome of the same SQL (an
    /// error placed at an offset only for the same text: preparing another
    /// layout again fails fast and places its own).
    pub fn query(&self, sql: &str) -> QueryOutcome {
        let key = cache_key(sql);
        let hit = self
            .cache
            .lock()
            .expect("cache lock")
            .get(&key)
            .and_then(|c| c.for_text(sql));
        if let Some(outcome) = hit {
            return outcome;
        }
        let outcome = self.run_uncached(sql).map(Arc::new);
        let cached = Cached {
            sql: sql.to_string(),
            outcome: outcome.clone(),
        };
        self.cache.lock().expect("cache lock").put(key, cached);
        outcome
    }

    /// Runs many queries in parallel, each distinct SQL text once; outcomes
    /// come back in input order. A text sharing another layout's placed
    /// error is asked again, for its own offset.
    pub fn query_many<S: AsRef<str> + Sync>(&self, sqls: &[S]) -> Vec<QueryOutcome> {
        let mut unique: Vec<&str> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let slots: Vec<usize> = sqls
            .iter()
            .map(|sql| {
                *seen.entry(cache_key(sql.as_ref())).or_insert_with(|| {
                    unique.push(sql.as_ref());
                    unique.len() - 1
                })
            })
            .collect();
        let outcomes: Vec<QueryOutcome> = unique.par_iter().map(|sql| self.query(sql)).collect();
        sqls.iter()
            .zip(slots)
            .map(|(sql, i)| match &outcomes[i] {
                Err(QueryError::SqlAt { .. }) if unique[i] != sql.as_ref() => {
                    self.query(sql.as_ref())
                }
                outcome => outcome.clone(),
            })
            .collect()
    }

    /// Fingerprints the full result of a query, keeping no rows and no cache
    /// entry: what the evaluator needs, at 8 bytes a cell.
    pub fn digest(&self, sql: &str) -> Result<ResultDigest, QueryError> {
        self.run(sql, |_, _| {}).map(|stepped| stepped.digest)
    }

    fn run_uncached(&self, sql: &str) -> Result<QueryResult, QueryError> {
        let started = Instant::now();
        let mut rows = Vec::new();
        let max_rows = self.config.max_rows;
        let stepped = self.run(sql, |index, row| {
            if index < max_rows {
                rows.push(row);
            }
        })?;
        Ok(QueryResult {
            columns: stepped.columns,
            rows,
            total_rows: stepped.total_rows,
            digest: stepped.digest,
            elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// Checks, prepares and steps one query under the time limit, feeding
    /// each row to `keep` (with its index) and into the digest.
    fn run(&self, sql: &str, keep: impl FnMut(usize, Vec<Value>)) -> Result<Stepped, QueryError> {
        let (program, body) = functions::split(sql);
        check_single_read(body)?;
        let Some(names) = &self.plain_names else {
            return self.run_as_written(sql, program, keep);
        };
        let (real, anchors) = names.to_real(sql);
        self.run_as_written(&real, program, keep)
            .map_err(|e| match e {
                QueryError::Sql(message) => QueryError::Sql(names.to_plain(&message)),
                QueryError::SqlAt { message, offset } => QueryError::SqlAt {
                    message: names.to_plain(&message),
                    offset: PlainNames::offset_in_plain(&anchors, offset),
                },
                other => other,
            })
    }

    /// [`Executor::run`] of a query whose names are the database's own.
    fn run_as_written(
        &self,
        sql: &str,
        program: Option<&str>,
        mut keep: impl FnMut(usize, Vec<Value>),
    ) -> Result<Stepped, QueryError> {
        let guarded = self.take_connection()?;
        guarded.denied.store(false, Ordering::Relaxed);
        guarded.deadline.arm(self.config.timeout);
        let to_query_error = |e: rusqlite::Error| {
            if guarded.denied.load(Ordering::Relaxed) {
                QueryError::Refused(format!("SQLite's authorizer denied it ({e})"))
            } else {
                query_error(e, &self.config)
            }
        };
        let result = match program
            .map(|p| functions::sqlite::register_program(&guarded.conn, p, &self.config.functions))
        {
            Some(Err(e)) => Err(QueryError::Sql(format!("the query's functions: {e}"))),
            registered => {
                let result = step_all(
                    &guarded.conn,
                    sql,
                    self.config.max_rows,
                    &mut keep,
                    to_query_error,
                );
                drop(registered);
                result
            }
        };
        guarded.deadline.disarm();
        self.pool.lock().expect("pool lock").push(guarded);
        result
    }

    fn take_connection(&self) -> Result<GuardedConnection, QueryError> {
        if let Some(idle) = self.pool.lock().expect("pool lock").pop() {
            return Ok(idle);
        }
        connect(&self.path, &self.config).map_err(|e| QueryError::Sql(e.to_string()))
    }
}

/// What stepping a statement to the end leaves behind besides kept rows.
struct Stepped {
    columns: Vec<String>,
    digest: ResultDigest,
    total_rows: usize,
}

fn step_all(
    conn: &Connection,
    sql: &str,
    max_rows: usize,
    keep: &mut impl FnMut(usize, Vec<Value>),
    to_query_error: impl Fn(rusqlite::Error) -> QueryError,
) -> Result<Stepped, QueryError> {
    let mut statement = conn.prepare(sql).map_err(&to_query_error)?;
    // SQLite's own verdict on the compiled statement, a third guard.
    if !statement.readonly() {
        return Err(QueryError::Refused("the statement would write".into()));
    }
    let columns: Vec<String> = statement.column_names().map(String::from).collect();
    step_rows(&mut statement, columns, max_rows, keep).map_err(to_query_error)
}

fn step_rows(
    statement: &mut rusqlite::Statement<'_>,
    columns: Vec<String>,
    max_rows: usize,
    keep: &mut impl FnMut(usize, Vec<Value>),
) -> Result<Stepped, rusqlite::Error> {
    let width = columns.len();
    let mut digest = ResultDigest::new(width);
    let mut rows = statement.query([])?;
    let mut count = 0;
    while let Some(row) = rows.next()? {
        let cells = (0..width).map(|i| row.get_ref(i));
        let cells: Vec<_> = cells.collect::<Result<_, _>>()?;
        digest.push_row(cells.iter().copied());
        if count < max_rows {
            keep(count, cells.into_iter().map(Value::from_ref).collect());
        }
        count += 1;
    }
    Ok(Stepped {
        columns,
        digest,
        total_rows: count,
    })
}

fn connect(path: &Path, config: &ExecConfig) -> Result<GuardedConnection> {
    let mut conn = open_read_only(path)?;
    let max_value_bytes = i32::try_from(config.max_value_bytes).unwrap_or(i32::MAX);
    let max_memory_bytes = i64::try_from(config.max_memory_bytes).unwrap_or(i64::MAX);
    // SAFETY: sets one process-wide integer; SQLite allows it at any time.
    unsafe {
        rusqlite::ffi::sqlite3_hard_heap_limit64(max_memory_bytes);
    }
    let denied = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&denied);
    let setup = |conn: &mut Connection| -> Result<Deadline, rusqlite::Error> {
        // Belt and braces beside the read-only open: SQLite refuses writes.
        conn.pragma_update(None, "query_only", true)?;
        conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, max_value_bytes)?;
        functions::sqlite::register_library(conn, &config.functions)?;
        conn.authorizer(Some(move |context: rusqlite::hooks::AuthContext<'_>| {
            let verdict = authorize(context);
            if verdict == Authorization::Deny {
                flag.store(true, Ordering::Relaxed);
            }
            verdict
        }))?;
        Deadline::install(conn)
    };
    let deadline = setup(&mut conn).map_err(|e| crate::error::Error::DatabaseOpen {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    Ok(GuardedConnection {
        conn,
        deadline,
        denied,
    })
}

/// What a query's cached outcome is filed under: its normalised SQL,
/// behind its functions' text (which normalising would drop as a comment).
fn cache_key(sql: &str) -> String {
    match functions::split(sql) {
        (Some(program), body) => format!("{program}\n{}", normalize(body)),
        (None, _) => normalize(sql),
    }
}

fn query_error(error: rusqlite::Error, config: &ExecConfig) -> QueryError {
    match error.sqlite_error_code() {
        Some(ErrorCode::OperationInterrupted) => QueryError::Timeout {
            limit_ms: config.timeout.as_millis() as u64,
        },
        Some(ErrorCode::TooBig) => QueryError::ValueTooBig {
            limit_bytes: config.max_value_bytes,
        },
        Some(ErrorCode::OutOfMemory) => QueryError::OutOfMemory {
            limit_bytes: config.max_memory_bytes,
        },
        _ => match error {
            rusqlite::Error::MultipleStatement => {
                QueryError::Refused("more than one statement was given".into())
            }
            // SQLite's message alone: the query is already beside it in every
            // prompt and trace, and repeating it only costs tokens.
            rusqlite::Error::SqlInputError { msg, offset, .. } => match usize::try_from(offset) {
                Ok(offset) => QueryError::SqlAt {
                    message: msg,
                    offset,
                },
                Err(_) => QueryError::Sql(msg),
            },
            other => QueryError::Sql(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_past_the_length_limit_stops_its_query() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.sqlite");
        Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t (a INTEGER);")
            .unwrap();
        let config = ExecConfig {
            max_value_bytes: 1 << 20,
            ..ExecConfig::default()
        };
        let executor = Executor::open(&db, config).unwrap();
        for bomb in [
            "SELECT length(randomblob(1000000000))",
            "SELECT length(printf('%.*c', 1000000000, 'x'))",
            // SQLite stops growing the concatenation at the limit and
            // reports it when the rows run out (an endless CTE meets the
            // time limit instead, its memory still bounded).
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100000) \
             SELECT length(group_concat(hex(randomblob(100)))) FROM c",
        ] {
            let error = executor.query(bomb).unwrap_err();
            assert!(
                matches!(
                    error,
                    QueryError::ValueTooBig {
                        limit_bytes: 1_048_576
                    }
                ),
                "{bomb}: {error}"
            );
        }
        let fits = executor.query("SELECT length(randomblob(1000))").unwrap();
        assert!(matches!(fits.rows[0][0], Value::Integer(1000)));
    }

    /// The authorizer and SQLite's read-only verdict must stop writes on
    /// their own, without the parser check in front of them.
    #[test]
    fn sqlite_layers_refuse_writes_without_the_parser_check() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.sqlite");
        let setup = Connection::open(&db).unwrap();
        setup
            .execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
        drop(setup);
        let before = std::fs::read(&db).unwrap();
        let guarded = connect(&db, &ExecConfig::default()).unwrap();
        let copy = dir.path().join("copy.db");
        for sql in [
            "DELETE FROM t".to_string(),
            "INSERT INTO t VALUES (2)".into(),
            "CREATE TEMP TABLE x (a)".into(),
            "PRAGMA user_version = 3".into(),
            format!(
                "ATTACH DATABASE '{}' AS x",
                dir.path().join("x.db").display()
            ),
            format!("VACUUM INTO '{}'", copy.display()),
            "SELECT load_extension('nope')".into(),
        ] {
            let outcome = step_all(&guarded.conn, &sql, 10, &mut |_, _| {}, |e| {
                QueryError::Sql(e.to_string())
            });
            assert!(outcome.is_err(), "{sql:?} ran without the parser check");
        }
        assert_eq!(std::fs::read(&db).unwrap(), before);
        assert!(!copy.exists());
        assert!(!dir.path().join("x.db").exists());
    }
}
