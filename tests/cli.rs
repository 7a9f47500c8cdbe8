//! The `iesr` binary as a user meets it: output on success, one clear line
//! on stderr and a non-zero exit on failure.

mod common;

use assert_cmd::Command;
use common::{datasets, json_output, student_club};
use predicates::prelude::*;

fn iesr() -> Command {
    Command::cargo_bin("iesr").unwrap()
}

/// Runs the binary expecting failure, and returns its single stderr line.
fn one_line_error(args: &[&str]) -> String {
    common::one_line_error(&iesr().args(args).output().unwrap())
}

#[test]
fn sql_prints_a_table() {
    let db = student_club();
    iesr()
        .args([
            "sql",
            "--db",
            db.to_str().unwrap(),
            "SELECT type, count(*) AS n FROM event GROUP BY type ORDER BY n DESC",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("Meeting").and(predicate::str::contains("rows in")));
}

#[test]
fn sql_json_is_machine_readable() {
    let db = student_club();
    let json = json_output(iesr().args([
        "sql",
        "--json",
        "--db",
        db.to_str().unwrap(),
        "SELECT first_name, last_name FROM member WHERE position = 'President'",
    ]));
    assert_eq!(
        json["columns"],
        serde_json::json!(["first_name", "last_name"])
    );
    assert_eq!(json["total_rows"], 1);
    assert_eq!(json["rows"], serde_json::json!([["Sacha", "Harrison"]]));
}

#[test]
fn user_errors_are_one_line() {
    let db = student_club();
    let db = db.to_str().unwrap();
    let missing = one_line_error(&["sql", "--db", "/no/such/file.sqlite", "SELECT 1"]);
    assert!(missing.contains("/no/such/file.sqlite"), "{missing}");
    let readme = datasets().join("README.md");
    let not_db = one_line_error(&["schema", "--db", readme.to_str().unwrap()]);
    assert!(not_db.contains("not a SQLite database"), "{not_db}");
    assert!(one_line_error(&["sql", "--db", db, "DELETE FROM event"]).contains("refused"));
    assert!(one_line_error(&["sql", "--db", db, ""]).contains("refused"));
    assert!(
        one_line_error(&["sql", "--db", db, "SELECT * FROM no_such_table"])
            .contains("no such table")
    );
    assert!(one_line_error(&["sql", "--db", db, "SELECT 1", "--timeout=0"]).contains("--timeout"));
    // Refused before any model is fetched or loaded.
    let empty = one_line_error(&["search", "--db", db, "  "]);
    assert!(empty.contains("the question is empty"), "{empty}");
}

#[cfg(not(feature = "llama-cpp"))]
#[test]
fn llama_cpp_backend_needs_its_feature() {
    let db = student_club();
    let err = one_line_error(&[
        "search",
        "--backend",
        "llama-cpp",
        "--db",
        db.to_str().unwrap(),
        "How many events are there?",
    ]);
    assert!(err.contains("--features llama-cpp"), "{err}");
}

#[test]
fn eval_scores_gold_and_reports_bad_predictions_files() {
    let bird = datasets().join("bird");
    let report = json_output(iesr().args([
        "eval",
        "--dataset",
        "bird",
        "--data-dir",
        bird.to_str().unwrap(),
        "--predictions",
        "gold",
        "--limit",
        "10",
        "--json",
    ]));
    assert_eq!(report["ex"], 100.0);
    assert_eq!(report["overall"]["scored"], 10);

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("preds.jsonl");
    std::fs::write(
        &bad,
        "{\"question_id\": 1312, \"sql\": \"SELECT 1\"}\nnot json\n",
    )
    .unwrap();
    let err = one_line_error(&[
        "eval",
        "--dataset",
        "bird",
        "--data-dir",
        bird.to_str().unwrap(),
        "--predictions",
        bad.to_str().unwrap(),
    ]);
    assert!(err.contains("line 2"), "{err}");

    let err = one_line_error(&[
        "eval",
        "--dataset",
        "bird",
        "--data-dir",
        "/nowhere",
        "--predictions",
        "gold",
    ]);
    assert!(err.contains("--data-dir"), "{err}");
}

/// A partial run over a subset is scored against that subset alone, as
/// `bench --subset` chose its questions, not against the whole split.
#[test]
fn eval_scores_only_the_subsets_questions() {
    let dir = tempfile::tempdir().unwrap();
    let subset = dir.path().join("subset.json");
    std::fs::write(&subset, r#"{"question_ids": [0, 1, 2]}"#).unwrap();
    let predictions = dir.path().join("preds.jsonl");
    std::fs::write(
        &predictions,
        "{\"question_id\": \"0\", \"sql\": \"SELECT count(*) FROM singer\"}\n",
    )
    .unwrap();
    let spider = datasets().join("spider");
    let report = json_output(iesr().args([
        "eval",
        "--dataset",
        "spider",
        "--data-dir",
        spider.to_str().unwrap(),
        "--subset",
        subset.to_str().unwrap(),
        "--predictions",
        predictions.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(report["overall"]["scored"], 3, "{report}");
    assert_eq!(report["overall"]["correct"], 1, "{report}");
}

/// SQLite's memory is bounded for the whole process: a value below the
/// per-value limit still fails once SQLite's memory passes its limit.
#[test]
fn a_query_past_sqlites_memory_limit_fails_with_a_clear_error() {
    let db = student_club();
    let db = db.to_str().unwrap();
    let query = "SELECT length(randomblob(10000000)) AS n";
    iesr()
        .args(["sql", "--db", db, query])
        .assert()
        .success()
        .stdout(predicate::str::contains("10000000"));
    let error = one_line_error(&["sql", "--db", db, "--max-memory-bytes", "8000000", query]);
    assert!(
        error.contains("SQLite's memory reached the 8000000-byte limit"),
        "{error}"
    );
}

/// A WAL-mode database in a folder the user cannot write (run as an
/// unprivileged user where the tests run as root, whom folder permissions
/// do not stop): it is read, and the folder is left as it was.
#[test]
fn a_wal_database_in_a_read_only_folder_is_read_and_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("share");
    std::fs::create_dir(&folder).unwrap();
    let db = folder.join("app.sqlite");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.pragma_update(None, "journal_mode", "wal").unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (41), (1);")
            .unwrap();
    }
    let mode = |path: &std::path::Path, bits: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).unwrap()
    };
    mode(dir.path(), 0o755);
    mode(&db, 0o444);
    mode(&folder, 0o555);
    let before = common::folder_fingerprint(&folder);

    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let binary = assert_cmd::cargo::cargo_bin("iesr");
    let mut command = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&binary);
        c
    } else {
        std::process::Command::new(&binary)
    };
    let output = command
        .args(["sql", "--json", "--db"])
        .arg(&db)
        .arg("SELECT sum(x) AS total FROM t")
        .output()
        .unwrap();
    mode(&folder, 0o755);
    let stdout = String::from_utf8_lossy(&output.stdout);
    common::assert_success(&output);
    assert!(stdout.contains("42"), "{stdout}");
    assert_eq!(common::folder_fingerprint(&folder), before);
}
