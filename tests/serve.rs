//! `iesr serve` over real HTTP: the real binary, the real model, a real
//! database, requests from a real client, concurrent ones included.

mod common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `iesr serve`, stopped when dropped.
struct Server {
    child: Child,
    base: String,
    agent: ureq::Agent,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts the server on a free port over `db`, registered as `concert`.
    fn start(db: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iesr"))
            .arg("serve")
            .arg("--db")
            .arg(format!("concert={}", db.display()))
            .args(["--addr", "127.0.0.1:0", "--method", "greedy", "--model"])
            .arg(common::model_path())
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start iesr serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("the server prints its address before anything else ends")
                .expect("read stderr");
            if let Some(rest) = line.strip_prefix("listening on ") {
                break rest
                    .split_whitespace()
                    .next()
                    .expect("an address")
                    .to_string();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .build()
            .into();
        Server { child, base, agent }
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let mut response = self
            .agent
            .get(format!("{}{path}", self.base))
            .call()
            .expect("GET");
        let status = response.status().as_u16();
        (
            status,
            parse(&response.body_mut().read_to_string().unwrap()),
        )
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_text(path, &body.to_string())
    }

    fn post_text(&self, path: &str, body: &str) -> (u16, Value) {
        let mut response = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .send(body)
            .expect("POST");
        let status = response.status().as_u16();
        (
            status,
            parse(&response.body_mut().read_to_string().unwrap()),
        )
    }

    /// Posts a question asking for server-sent events; returns the reader of
    /// the event stream.
    fn ask_streaming(&self, body: &Value) -> EventStream {
        let response = self
            .agent
            .post(format!("{}/v1/answer", self.base))
            .header("Accept", "text/event-stream")
            .send_json(body)
            .expect("POST");
        assert_eq!(response.status().as_u16(), 200);
        EventStream {
            lines: BufReader::new(response.into_body().into_reader()).lines(),
        }
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

struct EventStream {
    lines: std::io::Lines<BufReader<ureq::BodyReader<'static>>>,
}

impl EventStream {
    /// The next event's name and data; None when the stream ends.
    fn next_event(&mut self) -> Option<(String, Value)> {
        let mut name = None;
        for line in self.lines.by_ref() {
            let line = line.expect("read events");
            if let Some(event) = line.strip_prefix("event: ") {
                name = Some(event.to_string());
            } else if let Some(data) = line.strip_prefix("data: ") {
                if let Some(name) = name.take() {
                    return Some((name, parse(data)));
                }
            }
        }
        None
    }
}

/// An error body is one line of JSON text under `error`.
fn one_line_error(body: &Value) -> &str {
    let message = body["error"].as_str().expect("an error message");
    assert!(!message.is_empty() && !message.contains('\n'), "{message}");
    message
}

#[test]
fn serves_health_schema_and_guarded_queries_and_leaves_the_file_alone() {
    let (dir, db) = common::scratch_copy(&common::concert_singer());
    let before = common::folder_fingerprint(dir.path());
    let server = Server::start(&db, &["--max-body-bytes", "4096"]);

    let (status, health) = server.get("/healthz");
    assert_eq!(status, 200);
    assert_eq!(health["status"], "ok");
    assert_eq!(health["databases"], 1);

    let (status, list) = server.get("/v1/databases");
    assert_eq!(status, 200);
    assert_eq!(list[0]["name"], "concert");
    assert!(list[0]["tables"]
        .as_array()
        .unwrap()
        .contains(&json!("singer")));

    let (status, schema) = server.get("/v1/schema/concert");
    assert_eq!(status, 200);
    assert!(schema["ddl"]
        .as_str()
        .unwrap()
        .contains("CREATE TABLE singer"));

    let (status, result) = server.post(
        "/v1/sql",
        &json!({"db": "concert", "sql": "SELECT COUNT(*) FROM singer"}),
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["rows"], json!([[6]]));

    let (status, result) = server.post(
        "/v1/sql",
        &json!({"db": "concert", "sql": "SELECT name FROM singer ORDER BY name", "max_rows": 2}),
    );
    assert_eq!(status, 200);
    assert_eq!(result["rows"].as_array().unwrap().len(), 2);
    assert_eq!(result["total_rows"], 6);

    let (status, refused) = server.post(
        "/v1/sql",
        &json!({"db": "concert", "sql": "DROP TABLE singer"}),
    );
    assert_eq!(status, 400);
    assert!(one_line_error(&refused).contains("refused"));

    let (status, missing) = server.get("/v1/schema/nope");
    assert_eq!(status, 404);
    assert!(one_line_error(&missing).contains("registered: concert"));

    let (status, bad) = server.post_text("/v1/sql", "{\"db\": ");
    assert_eq!(status, 400);
    one_line_error(&bad);

    let (status, unknown_field) = server.post(
        "/v1/answer",
        &json!({"db": "concert", "question": "How many singers?", "budgett": 3}),
    );
    assert_eq!(status, 422);
    assert!(one_line_error(&unknown_field).contains("budgett"));

    let (status, empty) = server.post("/v1/answer", &json!({"db": "concert", "question": " "}));
    assert_eq!(status, 400);
    assert!(one_line_error(&empty).contains("empty"));

    let (status, budget) = server.post(
        "/v1/answer",
        &json!({"db": "concert", "question": "How many singers?", "method": "sc", "budget": 1000}),
    );
    assert_eq!(status, 400);
    assert!(one_line_error(&budget).contains("budget"));

    let big = json!({"db": "concert", "sql": format!("SELECT '{}'", "x".repeat(8000))});
    let (status, too_big) = server.post("/v1/sql", &big);
    assert_eq!(status, 413);
    one_line_error(&too_big);

    let (status, nowhere) = server.get("/v2/answer");
    assert_eq!(status, 404);
    one_line_error(&nowhere);

    drop(server);
    assert_eq!(common::folder_fingerprint(dir.path()), before);
}

#[test]
fn answers_a_question_and_streams_the_search_as_it_goes() {
    let server = Server::start(&common::concert_singer(), &[]);
    let question = "How many singers do we have?";

    let (status, answer) = server.post(
        "/v1/answer",
        &json!({"db": "concert", "question": question, "trace": true}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["method"], "greedy");
    assert_eq!(answer["result"]["rows"], json!([[6]]));
    assert!(answer["sql"]
        .as_str()
        .unwrap()
        .to_uppercase()
        .contains("COUNT"));
    assert!(answer["cost"]["generated_tokens"].as_u64().unwrap() > 0);
    assert_eq!(answer["trace"]["question"], question);

    let (_, without_trace) = server.post(
        "/v1/answer",
        &json!({"db": "concert", "question": question}),
    );
    assert!(without_trace.get("trace").is_none());

    let mut events = server.ask_streaming(
        &json!({"db": "concert", "question": question, "method": "iesr", "budget": 4}),
    );
    let mut names = Vec::new();
    let mut last = Value::Null;
    while let Some((name, data)) = events.next_event() {
        names.push(name);
        last = data;
    }
    assert_eq!(names.first().map(String::as_str), Some("started"));
    assert_eq!(
        names.last().map(String::as_str),
        Some("answer"),
        "{names:?}"
    );
    let rollouts: Vec<&String> = names.iter().filter(|n| *n == "rollout").collect();
    assert!(!rollouts.is_empty(), "{names:?}");
    assert_eq!(last["method"], "iesr");
    assert_eq!(last["budget"], 4);
    assert_eq!(last["result"]["rows"], json!([[6]]));
}

#[test]
fn a_full_queue_is_refused_with_503_and_waiting_questions_are_answered() {
    let server = Server::start(&common::concert_singer(), &["--queue", "1"]);
    let ask = json!({"db": "concert", "question": "What are the names of the stadiums?"});

    // The first question is running once the server says so.
    let mut first = server.ask_streaming(&ask);
    assert_eq!(first.next_event().expect("an event").0, "started");

    // The second waits in the queue's one place.
    let base = server.base.clone();
    let agent = server.agent.clone();
    let body = ask.to_string();
    let second = std::thread::spawn(move || {
        let mut response = agent
            .post(format!("{base}/v1/answer"))
            .header("Content-Type", "application/json")
            .send(&body)
            .expect("POST");
        (
            response.status().as_u16(),
            parse(&response.body_mut().read_to_string().unwrap()),
        )
    });
    let waited = Instant::now();
    while server.get("/healthz").1["waiting"] != 1 {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the second question never queued"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The third finds the queue full.
    let (status, full) = server.post("/v1/answer", &ask);
    assert_eq!(status, 503);
    assert!(one_line_error(&full).contains("waiting"));

    let mut first_answer = Value::Null;
    while let Some((name, data)) = first.next_event() {
        if name == "answer" {
            first_answer = data;
        }
    }
    let (status, second_answer) = second.join().unwrap();
    assert_eq!(status, 200, "{second_answer}");
    assert!(first_answer["sql"].is_string(), "{first_answer}");
    assert_eq!(first_answer["sql"], second_answer["sql"]);
    assert_eq!(server.get("/healthz").1["waiting"], 0);
}

#[test]
fn a_question_past_the_time_limit_gets_504_and_the_server_goes_on() {
    let server = Server::start(&common::concert_singer(), &["--request-timeout", "0.05"]);
    let (status, late) = server.post(
        "/v1/answer",
        &json!({"db": "concert", "question": "How many concerts are there in each year?"}),
    );
    assert_eq!(status, 504);
    assert!(one_line_error(&late).contains("--request-timeout"));
    let (status, _) = server.post("/v1/sql", &json!({"db": "concert", "sql": "SELECT 1"}));
    assert_eq!(status, 200);
}
