//! The OpenAI-compatible backend against a server that misbehaves (on
//! loopback): every fault ends in a one-line error within the timeout,
//! transient ones are retried a bounded number of times, and a bench run
//! keeps the questions it finished.

mod common;

use common::fake_openai::{Behaviour, FakeServer};
use iesr::llm::openai::OpenAiModel;
use iesr::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use std::time::{Duration, Instant};

const SELECT: Behaviour = Behaviour::Answer {
    choices: 1,
    text: "SELECT 1",
};

fn model(server: &FakeServer, timeout: Duration) -> OpenAiModel {
    OpenAiModel::new(&server.url, "fake", None, timeout)
}

fn ask(model: &OpenAiModel, n: usize) -> iesr::Result<Vec<String>> {
    let prompt = Prompt::Chat(vec![ChatMessage::new("user", "Say a query.")]);
    let sampling = Sampling {
        n,
        max_tokens: 16,
        ..Sampling::default()
    };
    let generation = model.generate(&prompt, &sampling)?;
    Ok(generation.completions.into_iter().map(|c| c.text).collect())
}

fn one_line_error(result: iesr::Result<Vec<String>>) -> String {
    let message = result
        .expect_err("the fault must surface as an error")
        .to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
    message
}

#[test]
fn a_hung_server_fails_within_the_timeout_and_is_not_retried() {
    let server = FakeServer::start(vec![Behaviour::Hang]);
    let started = Instant::now();
    let message = one_line_error(ask(&model(&server, Duration::from_secs(1)), 1));
    // The server would hang for a minute; the timeout ends the wait.
    assert!(started.elapsed() < Duration::from_secs(20), "{message}");
    assert!(message.contains("no answer within 1 s"), "{message}");
    assert_eq!(server.requests(), 1);
}

#[test]
fn server_errors_are_retried_a_bounded_number_of_times() {
    let server = FakeServer::start(vec![Behaviour::Status(503)]);
    let message = one_line_error(ask(
        &model(&server, Duration::from_secs(5)).with_retries(2),
        1,
    ));
    assert!(message.contains("503"), "{message}");
    assert!(message.contains("after 3 tries"), "{message}");
    assert_eq!(server.requests(), 3);
}

#[test]
fn a_passing_failure_is_retried_into_an_answer() {
    let server = FakeServer::start(vec![Behaviour::Status(502), Behaviour::CutShort, SELECT]);
    let texts = ask(&model(&server, Duration::from_secs(5)), 1).unwrap();
    assert_eq!(texts, ["SELECT 1"]);
    assert_eq!(server.requests(), 3);
}

#[test]
fn client_errors_and_garbage_are_not_retried() {
    let server = FakeServer::start(vec![Behaviour::Status(400)]);
    let message = one_line_error(ask(&model(&server, Duration::from_secs(5)), 1));
    assert!(
        message.contains("400") && message.contains("scripted failure"),
        "{message}"
    );
    assert_eq!(server.requests(), 1);

    let server = FakeServer::start(vec![Behaviour::Garbage]);
    let message = one_line_error(ask(&model(&server, Duration::from_secs(5)), 1));
    assert!(
        message.contains("not an OpenAI-style answer") && message.contains("<html>"),
        "{message}"
    );
    assert_eq!(server.requests(), 1);
}

#[test]
fn an_answer_cut_short_fails_after_the_retries() {
    let server = FakeServer::start(vec![Behaviour::CutShort]);
    let message = one_line_error(ask(
        &model(&server, Duration::from_secs(5)).with_retries(1),
        1,
    ));
    assert!(message.contains("after 2 tries"), "{message}");
    assert_eq!(server.requests(), 2);
}

#[test]
fn fewer_completions_than_asked_are_made_up_by_further_requests() {
    let server = FakeServer::start(vec![SELECT]);
    let texts = ask(&model(&server, Duration::from_secs(5)), 3).unwrap();
    assert_eq!(texts, ["SELECT 1"; 3]);
    assert_eq!(server.requests(), 3);

    let server = FakeServer::start(vec![Behaviour::Answer {
        choices: 0,
        text: "",
    }]);
    let message = one_line_error(ask(&model(&server, Duration::from_secs(5)), 2));
    assert!(message.contains("no choices"), "{message}");
}

#[test]
fn a_bench_run_keeps_the_questions_it_finished_before_the_server_failed() {
    let server = FakeServer::start(vec![
        Behaviour::Answer {
            choices: 1,
            text: "SELECT count(*) FROM singer",
        },
        Behaviour::Answer {
            choices: 1,
            text: "SELECT count(*) FROM singer",
        },
        Behaviour::Status(500),
    ]);
    let out = tempfile::tempdir().unwrap();
    let output = assert_cmd::Command::cargo_bin("iesr")
        .unwrap()
        .args(["bench", "--dataset", "spider", "--db", "concert_singer"])
        .args([
            "--method",
            "greedy",
            "--limit",
            "4",
            "--openai-retries",
            "0",
        ])
        .arg("--data-dir")
        .arg(common::datasets().join("spider"))
        .args(["--openai-url", &server.url, "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("server answered 500"), "{stderr}");
    let kept = std::fs::read_to_string(out.path().join("predictions.jsonl")).unwrap();
    assert_eq!(kept.lines().count(), 2, "{kept}");
    assert!(kept.contains("SELECT count(*) FROM singer"), "{kept}");
}
