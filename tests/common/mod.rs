//! Shared helpers for integration tests: where the benchmark data lives, and
//! scratch copies of real databases.
#![allow(dead_code)]

pub mod fake_openai;
pub mod relay;

use iesr::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use std::path::{Path, PathBuf};

/// `../shared/datasets` beside the repository, or `$IESR_DATASETS`.
pub fn datasets() -> PathBuf {
    let dir = std::env::var_os("IESR_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"));
    assert!(
        dir.join("README.md").is_file(),
        "benchmark data not found at {}; set IESR_DATASETS",
        dir.display()
    );
    dir
}

pub fn student_club() -> PathBuf {
    datasets().join("bird/dev_databases/student_club/student_club.sqlite")
}

pub fn concert_singer() -> PathBuf {
    datasets().join("spider/database/concert_singer/concert_singer.sqlite")
}

/// Copies a database into a fresh temporary folder (kept alive by the guard).
pub fn scratch_copy(source: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join(source.file_name().expect("file name"));
    std::fs::copy(source, &target).expect("copy database");
    (dir, target)
}

/// A fingerprint of every file in a folder: names and contents.
pub fn folder_fingerprint(dir: &Path) -> Vec<(String, u128)> {
    let mut entries: Vec<(String, u128)> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let path = e.expect("entry").path();
            let bytes = std::fs::read(&path).unwrap_or_default();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                xxhash_rust::xxh3::xxh3_128(&bytes),
            )
        })
        .collect();
    entries.sort();
    entries
}

/// The small model's GGUF (pulled by `iesr model pull
/// qwen2.5-coder-0.5b-instruct`), or `$IESR_MODEL`.
pub fn model_path() -> PathBuf {
    let path = std::env::var_os("IESR_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            iesr::llm::card::find_card(iesr::llm::card::SMALL_MODEL)
                .unwrap()
                .cached_path()
        });
    assert!(
        path.is_file(),
        "test model not found at {}; run `cargo run --release -- model pull {}` or set IESR_MODEL",
        path.display(),
        iesr::llm::card::SMALL_MODEL
    );
    path
}

/// A one-table SQL question as a chat prompt, for the model tests.
pub fn sql_prompt(question: &str) -> Prompt {
    Prompt::Chat(vec![
        ChatMessage::new(
            "system",
            "You are a careful SQLite expert. Answer with one SQLite query in a ```sql block.",
        ),
        ChatMessage::new(
            "user",
            format!(
                "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);\n\nQuestion: {question}"
            ),
        ),
    ])
}

/// Greedy decoding of up to `max_tokens` tokens.
pub fn greedy(max_tokens: usize) -> Sampling {
    Sampling {
        max_tokens,
        ..Sampling::default()
    }
}

/// A call that goes on from the previous call's answer (the next turn of
/// the same chat) must reuse the states of that prompt and answer.
pub fn check_answer_states_are_reused(model: &dyn LanguageModel) {
    let question = "Which singers are older than 40? Use a fresh alias for each table.";
    let Prompt::Chat(mut messages) = sql_prompt(question) else {
        unreachable!("sql_prompt is a chat")
    };
    let first = model
        .generate(&Prompt::Chat(messages.clone()), &greedy(48))
        .unwrap();
    messages.push(ChatMessage::new(
        "assistant",
        first.completions[0].text.clone(),
    ));
    messages.push(ChatMessage::new("user", "Now order them by age."));
    let next = model.generate(&Prompt::Chat(messages), &greedy(4)).unwrap();
    // All of the first prompt, and the answer up to its last token or two
    // (the last sampled token is never fed, and the end can tokenize
    // differently once the turn is closed).
    let answer_end = first.usage.prompt_tokens + first.usage.generated_tokens;
    assert!(
        next.usage.cached_prompt_tokens + 2 >= answer_end,
        "first {:?}, next {:?}",
        first.usage,
        next.usage
    );
}

/// The records of a bench run's `predictions.jsonl`, in the file's order.
pub fn prediction_records(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The SQL a bench run predicted, by question id.
pub fn sql_by_question(out: &Path) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = prediction_records(out)
        .iter()
        .map(|v| {
            (
                v["question_id"].as_str().unwrap().to_string(),
                v["sql"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

/// The stderr of a run that must fail with a one-line error (`error: ...`,
/// no panic); fails the test otherwise.
#[track_caller]
pub fn one_line_error(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "succeeded: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "not one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Fails the test with the process's stderr unless it exited with success.
#[track_caller]
pub fn assert_success(output: &std::process::Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs `command`, which must succeed, and reads its JSON output.
#[track_caller]
pub fn json_output(command: &mut assert_cmd::Command) -> serde_json::Value {
    let output = command.output().unwrap();
    assert_success(&output);
    serde_json::from_slice(&output.stdout).unwrap()
}
