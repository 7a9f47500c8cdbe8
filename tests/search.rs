//! `iesr search` end to end with the real default model on the demo database.

mod common;

use common::{model_path, one_line_error};

use assert_cmd::Command;
use iesr::llm::gguf;
use iesr::search::{Engine, Method, SearchConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn demo_db() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/concert_singer/concert_singer.sqlite")
}

#[test]
fn greedy_and_self_consistency_answer_a_spider_question() {
    let model = Arc::new(gguf::load(&model_path()).unwrap());
    let greedy = Engine::new(model.clone(), &demo_db(), SearchConfig::default()).unwrap();
    let answer = greedy.answer("How many singers do we have?", None).unwrap();
    let result = answer.result.expect("the answer executes");
    assert_eq!(result.rows[0][0].to_string(), "6", "{:?}", answer.sql);
    assert_eq!(answer.confidence, 1.0);
    assert_eq!(answer.trace.cost.calls, 1);

    let config = SearchConfig {
        method: Method::SelfConsistency {
            samples: 3,
            temperature: 0.8,
        },
        seed: 7,
        max_tokens: 96,
        ..SearchConfig::default()
    };
    let sc = Engine::new(model, &demo_db(), config).unwrap();
    let answer = sc.answer("How many singers do we have?", None).unwrap();
    assert_eq!(answer.trace.calls[0].outputs.len(), 3);
    assert!(answer.result.is_some());
    assert!(answer.confidence > 0.0);
    // Same prompt as the greedy call on the same model: served from the
    // prefix cache.
    assert!(answer.trace.cost.cached_prompt_tokens > 0);
}

#[test]
fn cli_search_prints_sql_result_and_cost_and_writes_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let output = Command::cargo_bin("iesr")
        .unwrap()
        .env("IESR_MODEL", model_path())
        .args(["search", "--model"])
        .arg(model_path())
        .arg("--db")
        .arg(demo_db())
        .arg("--trace")
        .arg(&trace)
        .arg("How many singers do we have?")
        .output()
        .unwrap();
    common::assert_success(&output);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.to_uppercase().contains("FROM SINGER"), "{stdout}");
    assert!(stdout.contains("| 6"), "{stdout}");
    assert!(stdout.contains("calls, prompt tokens"), "{stdout}");
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    // Without --method on a CPU the search answers, drawing greedy's query
    // alone first and scoring how sure the model is of it.
    assert_eq!(trace["method"], "Iesr", "{}", trace["method"]);
    let stage = |i: usize| trace["calls"][i]["stage"].as_str().unwrap().to_string();
    assert_eq!(stage(0), "search A0 samples 0-0");
    assert!(
        stage(1).starts_with("search greedy query scored: "),
        "{}",
        stage(1)
    );
    assert_eq!(answer_candidate(&trace)["execution"]["status"], "ok");
}

#[test]
fn search_on_a_missing_database_is_one_line() {
    let output = Command::cargo_bin("iesr")
        .unwrap()
        .args(["search", "--db", "/no/such.sqlite", "--model"])
        .arg(model_path())
        .arg("How many?")
        .output()
        .unwrap();
    let stderr = one_line_error(&output);
    assert!(stderr.contains("/no/such.sqlite"));
}

/// `iesr search --method iesr ARGS` on the demo database about its singers,
/// with IESR_HOME in `home`: the process's stdout and the trace it wrote.
fn tree_search(home: &Path, args: &[&str]) -> (String, serde_json::Value) {
    let trace = home.join("trace.json");
    let db = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/datasets/spider/database/concert_singer/concert_singer.sqlite");
    let output = Command::cargo_bin("iesr")
        .unwrap()
        .env("IESR_HOME", home)
        .args(["search", "--method", "iesr"])
        .args(args)
        .arg("--model")
        .arg(model_path())
        .arg("--db")
        .arg(db)
        .arg("--trace")
        .arg(&trace)
        .arg("How many singers do we have?")
        .output()
        .unwrap();
    common::assert_success(&output);
    let trace = serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    (String::from_utf8(output.stdout).unwrap(), trace)
}

/// The stage of every call in a trace, in order.
fn call_stages(trace: &serde_json::Value) -> Vec<&str> {
    trace["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["stage"].as_str().unwrap())
        .collect()
}

/// The trace's record of the candidate that became the answer.
fn answer_candidate(trace: &serde_json::Value) -> &serde_json::Value {
    let answer = trace["answer"].as_str().expect("an answer");
    trace["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["sql"] == answer)
        .expect("the answer is a candidate")
}

#[test]
fn paper_tree_search_with_two_rollouts_answers_and_traces_all_three_stages() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, trace) = tree_search(
        dir.path(),
        &["--rollouts", "2", "--search", "paper", "--explain"],
    );
    assert!(stdout.contains("search tree:"), "{stdout}");
    // Stage 1: the semantic-state call and its record.
    assert_eq!(trace["calls"][0]["stage"], "understanding");
    assert!(trace["understanding"]["state"].is_object());
    // Stage 2: a tree whose root saw both rollouts.
    assert_eq!(trace["tree"][0]["visits"], 2);
    let stages = call_stages(&trace);
    assert!(
        stages.iter().any(|s| s.starts_with("search A")),
        "{stages:?}"
    );
    // Stage 3: every candidate scored; the answer is one of them and executes.
    let selection = trace["selection"].as_array().unwrap();
    assert!(!selection.is_empty());
    let answer = trace["answer"].as_str().expect("an answer");
    assert!(selection.iter().any(|c| c["sql"] == answer));
    let candidate = answer_candidate(&trace);
    assert_eq!(candidate["execution"]["status"], "ok", "{candidate}");
    // The linking index went to the cache folder, not beside the database.
    assert!(dir.path().join("index").read_dir().unwrap().count() == 1);
}

#[test]
fn guided_search_starts_from_direct_samples_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, trace) = tree_search(dir.path(), &["--rollouts", "4"]);
    let stages = call_stages(&trace);
    assert!(stages.contains(&"search A0 samples 0-3"), "{stages:?}");
    let tree = trace["tree"].as_array().unwrap();
    assert!(tree.iter().any(|n| n["action"] == "A0"));
    // The answer runs and counts the six singers.
    let candidate = answer_candidate(&trace);
    assert_eq!(candidate["execution"]["status"], "ok", "{candidate}");
    assert!(stdout.contains("| 6 "), "{stdout}");
}
