//! The OpenAI-compatible backend against a real llama.cpp server
//! (llama-cpp-python's, on 127.0.0.1) serving the default GGUF.

mod common;

use common::model_path;
use common::relay::Relay;

use iesr::llm::openai::OpenAiModel;
use iesr::llm::{ChatMessage, FinishReason, LanguageModel, Prompt, Sampling};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn python() -> String {
    std::env::var("IESR_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Starts llama.cpp's server, or returns None where llama-cpp-python is not
/// installed (`.ci/run` installs it, so CI always runs this test).
fn start_server() -> Option<Server> {
    let importable = Command::new(python())
        .args(["-c", "import llama_cpp.server"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !importable {
        eprintln!("skipped: llama-cpp-python[server] is not installed");
        return None;
    }
    let model = model_path();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python())
        .args([
            "-m",
            "llama_cpp.server",
            "--host",
            "127.0.0.1",
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
        ])
        .arg("--port")
        .arg(port.to_string())
        .arg("--model")
        .arg(&model)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if ureq::get(format!("{}/v1/models", server.url))
            .call()
            .is_ok()
        {
            return Some(server);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("llama.cpp server did not come up within 120 s");
}

fn prompt() -> Prompt {
    Prompt::Chat(vec![
        ChatMessage::new("system", "You are a careful SQLite expert. Answer with one SQLite query in a ```sql block."),
        ChatMessage::new("user", "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);\n\nQuestion: How many singers are there?"),
    ])
}

#[test]
fn chat_completions_against_llama_cpp_server() {
    let Some(server) = start_server() else { return };
    let model = OpenAiModel::new(&server.url, "default", None, Duration::from_secs(120));

    let greedy = Sampling {
        max_tokens: 48,
        ..Sampling::default()
    };
    let answer = model.generate(&prompt(), &greedy).unwrap();
    let text = &answer.completions[0].text;
    assert!(
        text.to_uppercase().contains("SELECT COUNT(*) FROM SINGER"),
        "{text}"
    );
    assert!(answer.usage.prompt_tokens > 30);
    assert!(answer.usage.generated_tokens > 0);

    // n samples even from a server that answers one choice per request,
    // and the same seed gives the same samples.
    let sampled = Sampling {
        temperature: 0.9,
        max_tokens: 16,
        seed: 5,
        n: 2,
        ..Sampling::default()
    };
    let first = model.generate(&prompt(), &sampled).unwrap();
    let again = model.generate(&prompt(), &sampled).unwrap();
    assert_eq!(first.completions.len(), 2);
    let texts = |g: &iesr::llm::Generation| {
        g.completions
            .iter()
            .map(|c| c.text.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&first), texts(&again));

    // A greedy row is greedy's completion, asked for apart at temperature
    // 0; the sampled rows after it are those of a request without it.
    let with_greedy_row = model
        .generate(
            &prompt(),
            &Sampling {
                greedy_rows: 1,
                n: 3,
                max_tokens: 48,
                ..sampled.clone()
            },
        )
        .unwrap();
    assert_eq!(with_greedy_row.completions.len(), 3);
    assert_eq!(with_greedy_row.completions[0].text, *text);
    let later_rows = model
        .generate(
            &prompt(),
            &Sampling {
                first_row: 1,
                n: 2,
                max_tokens: 48,
                ..sampled.clone()
            },
        )
        .unwrap();
    assert_eq!(texts(&with_greedy_row)[1..], texts(&later_rows)[..]);

    let short = model
        .generate(
            &prompt(),
            &Sampling {
                max_tokens: 2,
                ..Sampling::default()
            },
        )
        .unwrap();
    assert_eq!(short.completions[0].finish_reason, FinishReason::Length);

    let raw = model
        .generate(
            &Prompt::Raw("SELECT name FROM".into()),
            &Sampling {
                max_tokens: 4,
                ..Sampling::default()
            },
        )
        .unwrap();
    assert!(!raw.completions[0].text.is_empty());
}

/// llama.cpp's server answers one choice per request: the other rows of a
/// call are asked for all at once, each with its own seed, and come back
/// as a run of requests one after another would bring them.
#[test]
fn rows_a_server_leaves_out_are_asked_for_at_once() {
    let Some(server) = start_server() else { return };
    let relay = Relay::start(server.url.trim_start_matches("http://"));
    let through_relay = OpenAiModel::new(&relay.url, "default", None, Duration::from_secs(120));
    let sampling = Sampling {
        temperature: 0.9,
        max_tokens: 16,
        seed: 11,
        n: 3,
        ..Sampling::default()
    };
    let together = through_relay.generate(&prompt(), &sampling).unwrap();
    assert_eq!(together.completions.len(), 3);
    // The first request alone, then rows 1 and 2 at once.
    assert_eq!(relay.peak(), 2);
    let direct = OpenAiModel::new(&server.url, "default", None, Duration::from_secs(120));
    for row in 0..3 {
        let alone = direct
            .generate(
                &prompt(),
                &Sampling {
                    first_row: row,
                    n: 1,
                    ..sampling.clone()
                },
            )
            .unwrap();
        assert_eq!(alone.completions[0].text, together.completions[row].text);
    }
}

/// `iesr bench` through the server, returning the predicted SQL by question.
fn bench_through(url: &str, concurrency: usize, out: &std::path::Path) -> Vec<(String, String)> {
    let output = assert_cmd::Command::cargo_bin("iesr")
        .unwrap()
        .args(["bench", "--dataset", "spider", "--db", "concert_singer"])
        .args(["--method", "greedy", "--limit", "4", "--json"])
        .arg("--data-dir")
        .arg(common::datasets().join("spider"))
        .args(["--openai-url", &format!("{url}/v1"), "--model", "default"])
        .args(["--concurrency", &concurrency.to_string()])
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    common::assert_success(&output);
    common::sql_by_question(out)
}

/// With `--concurrency 2` two questions' requests are in flight at once
/// (seen by a relay in front of the server), and the answers are those of
/// a run that asks one question at a time.
#[test]
fn a_bench_sends_concurrent_requests_to_the_server() {
    let Some(server) = start_server() else { return };
    let upstream = server.url.trim_start_matches("http://");
    let dir = tempfile::tempdir().unwrap();
    let one_at_a_time = Relay::start(upstream);
    let sequential = bench_through(&one_at_a_time.url, 1, &dir.path().join("one"));
    assert_eq!(one_at_a_time.peak(), 1);
    let two_at_a_time = Relay::start(upstream);
    let concurrent = bench_through(&two_at_a_time.url, 2, &dir.path().join("two"));
    assert_eq!(two_at_a_time.peak(), 2);
    assert_eq!(sequential.len(), 4);
    assert_eq!(concurrent, sequential);
}

#[test]
fn unreachable_server_is_a_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiModel::new(
        &format!("http://127.0.0.1:{port}/v1"),
        "m",
        None,
        Duration::from_secs(5),
    );
    let err = model.generate(&prompt(), &Sampling::default()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(&format!("127.0.0.1:{port}/v1/chat/completions")),
        "{message}"
    );
    assert!(!message.contains('\n'));
}
