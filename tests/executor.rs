//! The guarded executor on real databases: it never changes a file, bounds
//! every query, caches and parallelises.

mod common;

use common::{folder_fingerprint, scratch_copy, student_club};
use iesr::db::{ExecConfig, Executor};
use iesr::{Error, QueryError};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn hostile_statements_are_refused_and_the_file_is_untouched() {
    let (dir, db) = scratch_copy(&student_club());
    let before = folder_fingerprint(dir.path());
    let executor = Executor::open(&db, ExecConfig::default()).unwrap();
    let copy = dir.path().join("copy.db");
    let attached = dir.path().join("attached.db");
    let hostile = [
        "DELETE FROM event".to_string(),
        "UPDATE member SET first_name = 'x'".into(),
        "INSERT INTO major VALUES ('a', 'b', 'c', 'd')".into(),
        "REPLACE INTO major VALUES ('a', 'b', 'c', 'd')".into(),
        "DROP TABLE event".into(),
        "CREATE TABLE t (a)".into(),
        "CREATE TEMP TABLE t (a)".into(),
        "CREATE VIEW v AS SELECT 1".into(),
        "CREATE INDEX i ON event(type)".into(),
        "ALTER TABLE event ADD COLUMN x".into(),
        format!("ATTACH DATABASE '{}' AS other", attached.display()),
        "DETACH DATABASE main".into(),
        "PRAGMA user_version = 7".into(),
        "PRAGMA writable_schema = ON".into(),
        "PRAGMA journal_mode = DELETE".into(),
        "VACUUM".into(),
        format!("VACUUM INTO '{}'", copy.display()),
        "REINDEX".into(),
        "ANALYZE".into(),
        "BEGIN IMMEDIATE".into(),
        "SAVEPOINT s".into(),
        "SELECT load_extension('/tmp/evil')".into(),
        "SELECT 1; DELETE FROM event".into(),
        "SELECT * FROM event; DROP TABLE event".into(),
        "WITH x AS (SELECT 1) DELETE FROM event".into(),
        "WITH x AS (SELECT 1) INSERT INTO major SELECT 'a','b','c','d' FROM x".into(),
    ];
    for sql in &hostile {
        let outcome = executor.query(sql);
        assert!(
            matches!(outcome, Err(QueryError::Refused(_))),
            "{sql:?} was not refused: {outcome:?}"
        );
    }
    drop(executor);
    assert_eq!(folder_fingerprint(dir.path()), before);
}

#[test]
fn runaway_query_is_interrupted_at_the_time_limit() {
    let config = ExecConfig {
        timeout: Duration::from_millis(200),
        ..ExecConfig::default()
    };
    let executor = Executor::open(&student_club(), config).unwrap();
    let endless =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    assert_eq!(
        executor.query(endless).unwrap_err(),
        QueryError::Timeout { limit_ms: 200 }
    );
    // The connection is usable again afterwards.
    assert!(executor.query("SELECT count(*) FROM event").is_ok());
}

#[test]
fn rows_are_capped_but_the_digest_covers_everything() {
    let config = ExecConfig {
        max_rows: 5,
        ..ExecConfig::default()
    };
    let executor = Executor::open(&student_club(), config).unwrap();
    let result = executor
        .query("SELECT zip_code, city FROM zip_code")
        .unwrap();
    assert_eq!(result.rows.len(), 5);
    assert_eq!(result.total_rows, 41_877);
    assert!(result.truncated());
    assert_eq!(result.digest.row_count(), 41_877);
    assert_eq!(result.columns, ["zip_code", "city"]);
}

#[test]
fn same_sql_is_served_from_the_cache() {
    let executor = Executor::open(&student_club(), ExecConfig::default()).unwrap();
    let first = executor.query("SELECT count(*) FROM member").unwrap();
    let second = executor.query("select count(*)\n  from member ;").unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    let other = executor.query("SELECT count(*) FROM event").unwrap();
    assert!(!Arc::ptr_eq(&first, &other));
}

#[test]
fn sql_errors_name_the_problem_without_repeating_the_query() {
    let executor = Executor::open(&student_club(), ExecConfig::default()).unwrap();
    let error = executor
        .query("SELECT nope FROM member WHERE first_name = 'Angela'")
        .unwrap_err();
    assert_eq!(error.to_string(), "SQL error: no such column: nope");
    let error = executor.query("SELECT first_name FROM").unwrap_err();
    assert_eq!(error.to_string(), "SQL error: incomplete input");
}

#[test]
fn a_syntax_error_says_where_in_the_query_it_stands() {
    let executor = Executor::open(&student_club(), ExecConfig::default()).unwrap();
    let sql = "SELECT first_name FROM member AS T1 WHERE T1 last_name = 'Gupta'";
    let error = executor.query(sql).unwrap_err();
    let QueryError::SqlAt { message, offset } = &error else {
        panic!("no offset in {error:?}");
    };
    assert_eq!(message, "near \"last_name\": syntax error");
    assert!(sql[*offset..].starts_with("last_name"), "{offset}");
}

/// Two layouts of one bad query share a cache entry, but each error must
/// point into its own text: the rewrite cuts the answer at that offset.
#[test]
fn each_layout_of_a_bad_query_gets_its_own_error_offset() {
    let layouts = [
        "SELECT first_name FROM member AS T1 WHERE T1 last_name = 'Gupta'",
        "select first_name\n  from member as T1\n  where T1 last_name = 'Gupta'",
    ];
    let offset_in = |sql: &str, outcome: iesr::db::QueryOutcome| {
        let Err(QueryError::SqlAt { offset, .. }) = outcome else {
            panic!("no offset for {sql:?}: {outcome:?}");
        };
        assert!(
            sql[offset..].starts_with("last_name"),
            "{sql:?} at {offset}"
        );
    };
    let executor = Executor::open(&student_club(), ExecConfig::default()).unwrap();
    for sql in layouts {
        offset_in(sql, executor.query(sql));
    }
    let fresh = Executor::open(&student_club(), ExecConfig::default()).unwrap();
    for (sql, outcome) in layouts.iter().zip(fresh.query_many(&layouts)) {
        offset_in(sql, outcome);
    }
}

#[test]
fn many_queries_run_in_parallel_in_order() {
    let executor = Executor::open(&student_club(), ExecConfig::default()).unwrap();
    let sqls = [
        "SELECT count(*) FROM event",
        "SELECT count(*) FROM member",
        "SELECT nope FROM member",
        "SELECT count(*) FROM  event",
        "SELECT count(*) FROM zip_code",
    ];
    let outcomes = executor.query_many(&sqls);
    let count = |i: usize| outcomes[i].as_ref().unwrap().rows[0][0].to_string();
    assert_eq!(count(0), "42");
    assert_eq!(count(1), "33");
    assert!(outcomes[2].is_err());
    assert_eq!(count(4), "41877");
    assert!(Arc::ptr_eq(
        outcomes[0].as_ref().unwrap(),
        outcomes[3].as_ref().unwrap()
    ));
}

#[test]
fn bad_database_paths_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.sqlite");
    let err = Executor::open(&missing, ExecConfig::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::DatabaseMissing(_)), "{err}");
    assert!(err.to_string().contains("nope.sqlite"));

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello, I am not a database").unwrap();
    let err = Executor::open(&text, ExecConfig::default()).err().unwrap();
    assert!(matches!(err, Error::NotSqlite { .. }), "{err}");

    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, "").unwrap();
    let err = Executor::open(&empty, ExecConfig::default()).err().unwrap();
    assert!(matches!(err, Error::NotSqlite { .. }), "{err}");

    let err = Executor::open(dir.path(), ExecConfig::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::NotSqlite { .. }), "{err}");
}

#[test]
fn corrupt_database_is_reported_as_corrupt() {
    let (_dir, db) = scratch_copy(&student_club());
    let mut bytes = std::fs::read(&db).unwrap();
    // Keep the 100-byte file header, wreck the first page's b-tree.
    for byte in &mut bytes[100..4096] {
        *byte = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let err = Executor::open(&db, ExecConfig::default()).err().unwrap();
    assert!(matches!(err, Error::CorruptDatabase { .. }), "{err}");
    assert!(!err.to_string().contains('\n'));
}
