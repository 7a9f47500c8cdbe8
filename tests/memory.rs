//! The demonstration memory with the real model: `iesr memory build` keeps
//! only queries the benchmark accepts, continues where it stopped, and
//! `--memory` shows a question examples of other databases only.

mod common;

use assert_cmd::Command;
use common::{concert_singer, datasets, json_output, model_path, one_line_error};
use iesr::eval::{self, DatasetKind, EvalOptions, Filters, Predictions, Verdict};
use std::collections::HashMap;
use std::path::Path;

fn build(store: &Path) -> serde_json::Value {
    json_output(
        Command::cargo_bin("iesr")
            .unwrap()
            .args([
                "memory",
                "build",
                "--dataset",
                "spider",
                "--db",
                "concert_singer",
            ])
            .arg("--data-dir")
            .arg(datasets().join("spider"))
            .args(["--fraction", "0.1", "--retries", "1", "--json"])
            .arg("--model")
            .arg(model_path())
            .arg("--out")
            .arg(store),
    )
}

fn records(store: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(store)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn search_trace(db: &Path, store: &Path, dir: &Path) -> serde_json::Value {
    let trace = dir.join(format!(
        "{}.json",
        db.file_stem().unwrap().to_string_lossy()
    ));
    let output = Command::cargo_bin("iesr")
        .unwrap()
        .args(["search", "--method", "greedy", "--db"])
        .arg(db)
        .arg("--memory")
        .arg(store)
        .arg("--model")
        .arg(model_path())
        .arg("--trace")
        .arg(&trace)
        .arg("How many rows are there in the largest table?")
        .output()
        .unwrap();
    common::assert_success(&output);
    serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap()
}

#[test]
fn a_store_keeps_accepted_queries_continues_and_serves_other_databases() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.jsonl");
    let first = build(&store);
    // concert_singer has 45 dev questions: a tenth is 5.
    assert_eq!(first["annotated"], 5, "{first}");
    let kept = first["kept"].as_u64().unwrap() as usize;
    assert!(kept >= 1, "{first}");
    let stored = records(&store);
    assert_eq!(stored.len(), kept);

    // Every stored query reproduces its question's gold result.
    let filters = Filters {
        db: Some("concert_singer".into()),
        ..Filters::default()
    };
    let dataset = eval::load(DatasetKind::Spider, &datasets().join("spider"), &filters).unwrap();
    let predictions: HashMap<String, String> = stored
        .iter()
        .map(|r| {
            assert_eq!(r["db_id"], "concert_singer");
            assert_eq!(r["embedding"].as_array().unwrap().len(), 384);
            assert!(!r["tables"].as_str().unwrap().is_empty(), "{r}");
            let id = r["question_id"].as_str().unwrap().to_string();
            (id, r["query"].as_str().unwrap().to_string())
        })
        .collect();
    let report = eval::score(
        &dataset,
        &Predictions::Sql(predictions.clone()),
        &EvalOptions::default(),
    )
    .unwrap();
    let right = report
        .questions
        .iter()
        .filter(|q| predictions.contains_key(&q.question_id) && q.verdict == Verdict::Correct)
        .count();
    assert_eq!(right, kept);

    // Run again: the stored questions are skipped, the rest annotated anew.
    let again = build(&store);
    assert_eq!(again["already_stored"], kept as u64, "{again}");
    assert_eq!(again["annotated"], (5 - kept) as u64, "{again}");

    // A question on another database is shown the store's examples; one
    // on concert_singer none of them.
    let pets = datasets().join("spider/database/pets_1/pets_1.sqlite");
    let trace = search_trace(&pets, &store, dir.path());
    let shown = trace["demonstrations"].as_array().unwrap();
    assert!(!shown.is_empty(), "{trace}");
    assert!(shown[0]
        .as_str()
        .unwrap()
        .starts_with("spider/concert_singer/"));
    let prompt = trace["calls"][0]["prompt"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("Solved questions on other databases"),
        "{prompt}"
    );
    let same = search_trace(&concert_singer(), &store, dir.path());
    assert!(same.get("demonstrations").is_none(), "{same}");
}

#[test]
fn a_malformed_store_is_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("bad.jsonl");
    std::fs::write(&store, "not json\n").unwrap();
    let output = Command::cargo_bin("iesr")
        .unwrap()
        .args(["search", "--db"])
        .arg(concert_singer())
        .arg("--memory")
        .arg(&store)
        .arg("--model")
        .arg(model_path())
        .arg("How many singers are there?")
        .output()
        .unwrap();
    let stderr = one_line_error(&output);
    assert!(
        stderr.contains("line 1") && stderr.contains("iesr memory build"),
        "{stderr}"
    );
}
