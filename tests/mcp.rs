//! `iesr mcp` driven by a real MCP client: the official Python SDK
//! (`pip install mcp`) starts the real binary over stdio, lists its tools and
//! calls each, with the real model answering a question.

mod common;

use serde_json::Value;
use std::process::Command;

#[test]
fn the_official_python_client_lists_and_calls_every_tool() {
    let (dir, db) = common::scratch_copy(&common::concert_singer());
    let before = common::folder_fingerprint(dir.path());
    let output = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/mcp_client.py"
        ))
        .arg(env!("CARGO_BIN_EXE_iesr"))
        .arg(&db)
        .arg(common::model_path())
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'mcp'"),
        "the MCP Python SDK is missing: pip install mcp (as .ci/run does)"
    );
    assert!(output.status.success(), "client failed: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("the client's JSON report");

    assert_eq!(report["server"], "iesr");
    assert_eq!(
        report["tools"],
        serde_json::json!(["ask", "describe_schema", "list_databases", "run_sql"])
    );
    let calls = report["calls"].as_array().unwrap();
    let call = |i: usize| {
        (
            calls[i]["is_error"].as_bool().unwrap(),
            calls[i]["text"].as_str().unwrap(),
        )
    };
    let json = |text: &str| -> Value { serde_json::from_str(text).unwrap() };

    let (error, text) = call(0);
    assert!(!error);
    assert_eq!(json(text)["databases"][0]["name"], "concert");

    let (error, text) = call(1);
    assert!(!error);
    assert!(text.contains("CREATE TABLE singer"), "{text}");

    let (error, text) = call(2);
    assert!(!error);
    let rows = json(text);
    assert_eq!(rows["rows"].as_array().unwrap().len(), 2);
    assert_eq!(rows["total_rows"], 6);

    let (error, text) = call(3);
    assert!(error, "a write must be refused");
    assert!(text.contains("refused") && !text.contains('\n'), "{text}");

    let (error, text) = call(4);
    assert!(error);
    assert!(text.contains("registered: concert"), "{text}");

    let (error, text) = call(5);
    assert!(!error, "{text}");
    let answer = json(text);
    assert_eq!(answer["result"]["rows"], serde_json::json!([[6]]));
    assert!(answer["sql"]
        .as_str()
        .unwrap()
        .to_uppercase()
        .contains("COUNT"));

    assert_eq!(common::folder_fingerprint(dir.path()), before);
}
