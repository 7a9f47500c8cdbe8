//! `iesr trace view` on a trace of a real search with the real model,
//! rendered by a real headless browser (Debian's chromium, which .ci/run
//! installs): the page draws every node and candidate and marks the winner.

mod common;

use std::path::Path;
use std::process::Command;

fn iesr(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iesr"))
        .args(args)
        .output()
        .expect("run iesr")
}

/// The page's DOM after its script ran.
fn rendered_dom(page: &Path, profile: &Path) -> String {
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium is missing: apt-get install chromium (as .ci/run does)");
    common::assert_success(&output);
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_search_trace_becomes_a_page_the_browser_draws_with_its_tree_and_winner() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let page = dir.path().join("tree.html");
    let db = common::concert_singer();
    let model = common::model_path();
    let searched = iesr(&[
        "search",
        "--db",
        db.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--method",
        "iesr",
        "--rollouts",
        "4",
        "--trace",
        trace.to_str().unwrap(),
        "What are the names of the singers older than 40?",
    ]);
    common::assert_success(&searched);
    let viewed = iesr(&[
        "trace",
        "view",
        trace.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    common::assert_success(&viewed);

    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let nodes = recorded["tree"].as_array().map_or(0, Vec::len);
    let candidates = recorded["candidates"].as_array().unwrap().len();
    assert!(nodes > 1 && candidates > 0, "{recorded}");

    let dom = rendered_dom(&page, &dir.path().join("profile"));
    assert!(
        dom.contains(&format!(
            "data-rendered=\"{nodes} nodes, {candidates} candidates\""
        )),
        "the script did not draw the trace: {}",
        &dom[..dom.len().min(2000)]
    );
    assert_eq!(dom.matches("data-node=").count(), nodes);
    assert!(
        dom.contains("class=\"node winner"),
        "the chosen query's node is marked"
    );
    assert!(
        dom.contains("<tr class=\"winner\">"),
        "the chosen candidate is marked"
    );
    assert!(
        !dom.contains(">null<"),
        "a missing value was written as text"
    );
}
