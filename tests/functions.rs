//! Functions SQLite lacks, run in the sandbox through the guarded executor
//! on a real SQLite file: the library, a query's own functions, and
//! hostile functions stopped with a clear error.

use iesr::db::{ExecConfig, Executor, Value};
use iesr::error::QueryError;
use iesr::functions::attach;
use rusqlite::Connection;
use std::path::PathBuf;

struct Database {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn database() -> Database {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trips.sqlite");
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE trip (id INTEGER PRIMARY KEY, distance_km REAL, note TEXT, data BLOB);
             INSERT INTO trip VALUES (1, 42.195, '12 km uphill', x'00'), (2, 10, NULL, NULL);",
        )
        .unwrap();
    Database { _dir: dir, path }
}

fn run(db: &Database, program: &str, sql: &str) -> Result<Vec<Vec<Value>>, QueryError> {
    let executor = Executor::open(&db.path, ExecConfig::default()).unwrap();
    let text = if program.is_empty() {
        sql.to_string()
    } else {
        attach(program, sql)
    };
    executor.query(&text).map(|r| r.rows.clone())
}

fn error(db: &Database, program: &str, sql: &str) -> String {
    run(db, program, sql).unwrap_err().to_string()
}

#[test]
fn the_library_converts_common_units_in_any_query() {
    let db = database();
    let rows = run(
        &db,
        "",
        "SELECT round(convert_unit(distance_km, 'km', 'mi'), 3), convert_unit(100, 'C', 'F'), \
         convert_unit(1, 'kWh', 'J') FROM trip WHERE id = 1",
    )
    .unwrap();
    assert_eq!(
        rows,
        [[
            Value::Real(26.219),
            Value::Integer(212),
            Value::Integer(3_600_000)
        ]]
    );
    // Newton metres are not nanometres.
    let rows = run(
        &db,
        "",
        "SELECT round(convert_unit(250, 'Nm', 'lb-ft'), 2), convert_unit(2, 'nm', 'm'), \
         round(convert_unit(95, '%', 'ratio'), 6)",
    )
    .unwrap();
    assert_eq!(
        rows,
        [[Value::Real(184.39), Value::Real(2e-9), Value::Real(0.95)]]
    );
    let unknown = error(&db, "", "SELECT convert_unit(1, 'km', 'parsec')");
    assert!(
        unknown.contains("convert_unit does not know the unit parsec"),
        "{unknown}"
    );
    let mismatch = error(&db, "", "SELECT convert_unit(1, 'km', 'kg')");
    assert!(
        mismatch.contains("cannot turn length (km) into mass (kg)"),
        "{mismatch}"
    );
}

#[test]
fn statistics_sqlite_lacks_are_aggregates_on_every_connection() {
    let db = database();
    let rows = run(
        &db,
        "",
        "SELECT round(stdev(v), 6), round(stddev_pop(v), 6), variance(v), var_pop(v), median(v) \
         FROM (SELECT 2 AS v UNION ALL SELECT 4 UNION ALL SELECT 4 UNION ALL SELECT 4 \
         UNION ALL SELECT 5 UNION ALL SELECT 5 UNION ALL SELECT 7 UNION ALL SELECT 9 \
         UNION ALL SELECT NULL)",
    )
    .unwrap();
    assert_eq!(
        rows,
        [[
            Value::Real(2.13809),
            Value::Real(2.0),
            Value::Real(32.0 / 7.0),
            Value::Real(4.0),
            Value::Real(4.5)
        ]]
    );
    // One value has no sample deviation; none has no median.
    let rows = run(
        &db,
        "",
        "SELECT stddev_samp(distance_km), median(note) FROM trip WHERE id = 1",
    )
    .unwrap();
    assert_eq!(rows, [[Value::Null, Value::Null]]);
}

#[test]
fn a_query_runs_its_own_functions_and_only_it() {
    let db = database();
    let program = "function fn_leading_number(text) {\n\
                   if (text === null) return null;\n\
                   const m = /\\d+(\\.\\d+)?/.exec(text);\n\
                   return m ? Number(m[0]) : null;\n}";
    let executor = Executor::open(&db.path, ExecConfig::default()).unwrap();
    let sql = "SELECT id, fn_leading_number(note) FROM trip ORDER BY id";
    let rows = executor.query(&attach(program, sql)).unwrap();
    assert_eq!(
        rows.rows,
        [
            [Value::Integer(1), Value::Integer(12)],
            [Value::Integer(2), Value::Null]
        ]
    );
    // The same connection, the query without its functions block: gone.
    let without = executor.query(sql).unwrap_err().to_string();
    assert!(
        without.contains("no such function: fn_leading_number"),
        "{without}"
    );
    // Two programs behind the same SQL are two results, not one cached.
    let other = "function fn_leading_number(text) { return -1; }";
    let rows = executor.query(&attach(other, sql)).unwrap();
    assert_eq!(rows.rows[0][1], Value::Integer(-1));
}

#[test]
fn values_cross_into_and_out_of_the_sandbox_as_sql_values() {
    let db = database();
    let program = "function fn_id(x) { return x; }\n\
                   function fn_flag(x) { return x > 1; }\n\
                   function fn_object() { return {a: 1}; }";
    let rows = run(
        &db,
        program,
        "SELECT fn_id(2.5), fn_id('text'), fn_id(NULL), fn_id(7), fn_flag(2), fn_id(0.0/0)",
    )
    .unwrap();
    assert_eq!(
        rows,
        [[
            Value::Real(2.5),
            Value::Text("text".into()),
            Value::Null,
            Value::Integer(7),
            Value::Integer(1),
            Value::Null
        ]]
    );
    let object = error(&db, program, "SELECT fn_object()");
    assert!(
        object.contains("fn_object returned a value of type object"),
        "{object}"
    );
    let blob = error(&db, program, "SELECT fn_id(data) FROM trip WHERE id = 1");
    assert!(blob.contains("fn_id was given a blob"), "{blob}");
}

#[test]
fn hostile_functions_are_stopped_with_a_clear_error() {
    let db = database();
    let cases = [
        (
            "function fn_spin() { for (;;) {} }",
            "fn_spin was stopped after",
        ),
        (
            "function fn_hoard() { const a = []; for (;;) a.push('x'.repeat(1000) + a.length); }",
            "fn_hoard ran out of its",
        ),
        (
            "function fn_double() { let s = 'x'; for (;;) s = s + s; }",
            "fn_double failed: string too long",
        ),
        (
            "function fn_deep(n) { return fn_deep(n + 1) + 1; }",
            "fn_deep recursed past its stack limit",
        ),
        (
            "function fn_file() { return require('fs').readFileSync('/etc/passwd'); }",
            "require is not defined",
        ),
        (
            "function fn_net() { return fetch('http://example.com'); }",
            "fetch is not defined",
        ),
        (
            "function fn_clock() { return Date.now(); }",
            "Date is not defined",
        ),
        (
            "function fn_dice() { return Math.random(); }",
            "not a function",
        ),
        (
            "function fn_host() { return std.open('/etc/passwd', 'r'); }",
            "std is not defined",
        ),
        (
            "function fn_env() { return process.env.HOME; }",
            "process is not defined",
        ),
        (
            "function fn_timer() { return performance.now(); }",
            "performance is not defined",
        ),
    ];
    for (program, expected) in cases {
        let name = &program["function ".len()..program.find('(').unwrap()];
        let message = error(&db, program, &format!("SELECT {name}(1)"));
        assert!(
            message.contains(expected),
            "{name}: {message:?} lacks {expected:?}"
        );
        assert_eq!(message.lines().count(), 1, "{message}");
    }
    // Modules are refused before anything runs.
    let import = error(
        &db,
        "function fn_import() { import('os'); return 1; }",
        "SELECT fn_import()",
    );
    assert!(
        import.contains("functions may not import modules"),
        "{import}"
    );
    // One spelled so that no word check sees it is settled when the
    // sandbox is dropped, and the process carries on.
    let executor = Executor::open(&db.path, ExecConfig::default()).unwrap();
    let sneaky = "function fn_sneak() { eval('imp' + 'ort(\"os\")'); return 1; }";
    let _ = executor.query(&attach(sneaky, "SELECT fn_sneak()"));
    drop(executor);
    assert_eq!(run(&db, "", "SELECT 1").unwrap(), [[Value::Integer(1)]]);
}

#[test]
fn a_bad_program_or_body_is_refused_and_the_file_is_untouched() {
    let db = database();
    let before = std::fs::read(&db.path).unwrap();
    let syntax = error(
        &db,
        "function fn_broken( { return 1; }",
        "SELECT fn_broken()",
    );
    assert!(syntax.contains("the functions do not load"), "{syntax}");
    let write = run(&db, "function fn_one() { return 1; }", "DELETE FROM trip").unwrap_err();
    assert!(matches!(write, QueryError::Refused(_)), "{write}");
    let sneaky = error(
        &db,
        "function fn_one() { return 1; }",
        "SELECT fn_one(); DROP TABLE trip",
    );
    assert!(sneaky.contains("refused"), "{sneaky}");
    assert_eq!(std::fs::read(&db.path).unwrap(), before);
}
