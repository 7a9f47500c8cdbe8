//! `iesr bench`: a killed and resumed run ends with the same predictions
//! and summary as an uninterrupted one; a full disk or an output folder
//! that cannot be made stops the run with a clear error and loses no
//! finished question.

mod common;

use common::{model_path, one_line_error, sql_by_question};

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn spider() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets/spider")
}

fn bench(out: &Path, limit: usize, resume: bool) -> std::process::Output {
    bench_with(out, limit, resume, &[])
}

fn bench_with(out: &Path, limit: usize, resume: bool, extra: &[&str]) -> std::process::Output {
    let mut command = Command::cargo_bin("iesr").unwrap();
    command
        .args([
            "bench",
            "--dataset",
            "spider",
            "--db",
            "concert_singer",
            "--json",
        ])
        .arg("--data-dir")
        .arg(spider())
        .arg("--model")
        .arg(model_path())
        .arg("--limit")
        .arg(limit.to_string())
        .arg("--out")
        .arg(out);
    command.args(extra);
    if resume {
        command.arg("--resume");
    }
    command.output().unwrap()
}

#[test]
fn resumed_run_equals_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, parts) = (dir.path().join("whole"), dir.path().join("parts"));

    let full = bench(&whole, 4, false);
    common::assert_success(&full);

    // "Killed" after two questions: its summary covers two.
    common::assert_success(&bench(&parts, 2, false));
    assert_eq!(sql_by_question(&parts).len(), 2);
    // Without --resume the folder is not reused.
    let refused = common::one_line_error(&bench(&parts, 4, false));
    assert!(refused.contains("--resume"), "{refused}");
    let resumed = bench(&parts, 4, true);
    common::assert_success(&resumed);

    assert_eq!(sql_by_question(&parts), sql_by_question(&whole));
    let summary = |o: &std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (a, b) = (summary(&full), summary(&resumed));
    assert_eq!(a["report"]["overall"], b["report"]["overall"]);
    assert_eq!(a["report"]["questions"], b["report"]["questions"]);
    assert_eq!(a["cost"]["questions"], 4);
    assert_eq!(std::fs::read_dir(parts.join("traces")).unwrap().count(), 4);

    // Both runs side by side: equal rows apart from the folder name and time.
    let report_dir = dir.path().join("report");
    let report = Command::cargo_bin("iesr")
        .unwrap()
        .args(["report", "--json", "--out"])
        .arg(&report_dir)
        .arg(&whole)
        .arg(&parts)
        .output()
        .unwrap();
    common::assert_success(&report);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let rows = &report["runs"];
    assert_eq!(rows.as_array().unwrap().len(), 2);
    // Compared question by question, the two runs differ on none.
    let pairs = report["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0]["all"]["questions"], 4);
    assert_eq!(pairs[0]["all"]["difference"], 0.0);
    assert_eq!(pairs[0]["all"]["p_value"], 1.0);
    for field in [
        "series",
        "budget",
        "answered",
        "ex",
        "calls",
        "generated_tokens",
    ] {
        assert_eq!(rows[0][field], rows[1][field], "{field}");
    }
    assert_eq!(rows[0]["series"], "greedy");
    let csv = std::fs::read_to_string(report_dir.join("runs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3);
    for plot in [
        "ex-vs-budget",
        "tokens-vs-budget",
        "ex-vs-generated-tokens",
        "ex-vs-seconds",
    ] {
        for ext in ["png", "svg"] {
            assert!(report_dir.join(format!("spider-{plot}.{ext}")).is_file());
        }
    }
}

#[test]
fn a_full_disk_stops_the_run_without_losing_finished_questions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // The second question's trace lands on a device that is always full.
    std::fs::create_dir_all(out.join("traces")).unwrap();
    let blocked = out.join("traces/1.json");
    std::os::unix::fs::symlink("/dev/full", &blocked).unwrap();
    let greedy = ["--method", "greedy"];
    let stderr = one_line_error(&bench_with(&out, 2, false, &greedy));
    assert!(
        stderr.contains("cannot write") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    assert_eq!(sql_by_question(&out).len(), 1);

    // Space again: the run resumes from the finished question, and off a
    // terminal says so in a line when it is done.
    std::fs::remove_file(&blocked).unwrap();
    let resumed = bench_with(&out, 2, true, &greedy);
    common::assert_success(&resumed);
    assert_eq!(sql_by_question(&out).len(), 2);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        stderr.contains("2/2 questions; this session 1 answered, "),
        "{stderr}"
    );
}

#[test]
fn an_output_folder_that_cannot_be_made_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let stderr = one_line_error(&bench_with(
        &file.join("run"),
        1,
        false,
        &["--method", "greedy"],
    ));
    assert!(
        stderr.contains("cannot write") && stderr.contains("Not a directory"),
        "{stderr}"
    );
}

/// Questions answered side by side by a local model, their samples decoded
/// together in shared passes: a second run writes the same answers, and a
/// run cut short and resumed answers every question.
#[test]
fn questions_decoded_together_repeat_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let side_by_side = ["--method", "sc", "--samples", "3", "--concurrency", "3"];
    common::assert_success(&bench_with(&path("first"), 4, false, &side_by_side));
    common::assert_success(&bench_with(&path("second"), 4, false, &side_by_side));
    let answers = sql_by_question(&path("first"));
    assert_eq!(answers.len(), 4);
    assert!(
        answers.iter().all(|(_, sql)| !sql.is_empty()),
        "{answers:?}"
    );
    assert_eq!(sql_by_question(&path("second")), answers);
    // Each question's seconds overlap the others'; the run's wall time,
    // shared out among the answers, is less than their sum.
    let (mut own, mut run) = (0.0, 0.0);
    for record in common::prediction_records(&path("first")) {
        own += record["seconds"].as_f64().unwrap();
        run += record["run_seconds"].as_f64().unwrap();
    }
    assert!(run < own, "run {run} s against {own} s of questions");

    common::assert_success(&bench_with(&path("parts"), 2, false, &side_by_side));
    common::assert_success(&bench_with(&path("parts"), 4, true, &side_by_side));
    assert_eq!(sql_by_question(&path("parts")).len(), 4);
}

/// Two greedy questions on one database in flight together: both are
/// prefilled before either answers, and the second reuses the first's
/// schema states (kept when the first was prefilled, not when it finished).
#[test]
fn questions_in_flight_share_their_schema_states() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let together = ["--method", "greedy", "--concurrency", "2"];
    common::assert_success(&bench_with(&out, 2, false, &together));
    let cached: Vec<u64> = common::prediction_records(&out)
        .iter()
        .map(|record| record["cached_prompt_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(cached.len(), 2);
    assert!(cached.iter().any(|&c| c > 0), "{cached:?}");
}

/// Seven greedy answers in one run, and the seventh again after a restart:
/// cached prompt states of earlier questions must not change it (before
/// they were reused only in whole aligned blocks, this question's query
/// differed).
#[test]
fn a_resumed_run_answers_each_question_as_the_whole_run_did() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, parts) = (dir.path().join("whole"), dir.path().join("parts"));
    let greedy = ["--method", "greedy"];
    common::assert_success(&bench_with(&whole, 7, false, &greedy));
    let answers = sql_by_question(&whole);
    // The first six as the whole run wrote them, then the seventh alone.
    std::fs::create_dir_all(&parts).unwrap();
    let text = std::fs::read_to_string(whole.join("predictions.jsonl")).unwrap();
    let first_six: String = text.lines().take(6).map(|l| format!("{l}\n")).collect();
    std::fs::write(parts.join("predictions.jsonl"), first_six).unwrap();
    let resumed = bench_with(&parts, 7, true, &greedy);
    common::assert_success(&resumed);
    assert_eq!(sql_by_question(&parts), answers);
}

fn merge(out: &Path, shards: &[&Path]) -> std::process::Output {
    Command::cargo_bin("iesr")
        .unwrap()
        .args(["merge", "--dataset", "spider", "--db", "concert_singer"])
        .args(["--limit", "3", "--json", "--data-dir"])
        .arg(spider())
        .arg("--out")
        .arg(out)
        .args(shards)
        .output()
        .unwrap()
}

/// A run spread over two machines and merged reads as the run made on one:
/// the same predictions, traces and score.
#[test]
fn two_shards_merged_equal_one_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let (whole, first, second) = (path("whole"), path("shard1"), path("shard2"));
    let greedy = ["--method", "greedy"];
    let full = bench_with(&whole, 3, false, &greedy);
    common::assert_success(&full);
    for (shard, out) in [("1/2", &first), ("2/2", &second)] {
        let run = bench_with(out, 3, false, &["--method", "greedy", "--shard", shard]);
        common::assert_success(&run);
    }
    // Questions 1 and 3 in the first shard, 2 in the second.
    assert_eq!(sql_by_question(&first).len(), 2);
    assert_eq!(sql_by_question(&second).len(), 1);

    // One shard alone, or a folder that is no shard, is refused.
    let missing = one_line_error(&merge(&path("partial"), &[&first]));
    assert!(missing.contains("shard 2/2 is missing"), "{missing}");
    let unsharded = one_line_error(&merge(&path("mixed"), &[&first, &whole]));
    assert!(unsharded.contains("not a shard"), "{unsharded}");

    let merged_dir = path("merged");
    let merged = merge(&merged_dir, &[&second, &first]);
    common::assert_success(&merged);
    assert_eq!(sql_by_question(&merged_dir), sql_by_question(&whole));
    assert_eq!(
        std::fs::read_dir(merged_dir.join("traces"))
            .unwrap()
            .count(),
        3
    );
    let summary = |o: &std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (a, b) = (summary(&full), summary(&merged));
    for field in ["overall", "questions", "ex"] {
        assert_eq!(a["report"][field], b["report"][field], "{field}");
    }
    assert_eq!(a["variant"], b["variant"]);
    assert_eq!(b["cost"]["questions"], 3);
    assert!(b.get("shard").is_none());
}
