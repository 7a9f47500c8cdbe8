//! The evaluator on the real benchmarks: gold self-checks reproduce the
//! known facts of each dataset, and predictions are scored by the rules.

mod common;

use common::datasets;
use iesr::db::Semantics;
use iesr::eval::{self, DatasetKind, EvalOptions, Filters, Predictions, Split, Verdict};
use std::collections::HashMap;

#[test]
fn logiccat_mini500_gold_self_check() {
    let filters = Filters {
        split: Split::Mini500,
        ..Filters::default()
    };
    let data = eval::load(
        DatasetKind::Logiccat,
        &datasets().join("logiccat"),
        &filters,
    )
    .unwrap();
    assert_eq!(data.examples.len(), 500);
    let report = eval::score(&data, &Predictions::Gold, &EvalOptions::default()).unwrap();
    // The dataset's README: 20 of the mini-500 gold queries fail on
    // SQLite; 2 of them call standard deviations, which the engine has
    // (`functions::aggregates`).
    assert_eq!(report.gold_failed, 18);
    assert_eq!(report.overall.scored, 482);
    assert_eq!(report.ex, 100.0);
    assert!(report.overall.nonempty_scored < 482);
    assert_eq!(report.by_group.len(), 4);
}

#[test]
fn spider_skips_the_missing_database_and_says_so() {
    let options = EvalOptions {
        semantics: Semantics::Spider,
        ..EvalOptions::default()
    };
    let data = eval::load(
        DatasetKind::Spider,
        &datasets().join("spider"),
        &Filters::default(),
    )
    .unwrap();
    assert_eq!(data.skipped_missing_db.get("wta_1"), Some(&62));
    assert_eq!(data.examples.len(), 1034 - 62);
    let report = eval::score(&data, &Predictions::Gold, &options).unwrap();
    assert_eq!(report.gold_failed, 0);
    assert_eq!(report.ex, 100.0);
}

#[test]
fn bird_uses_evidence_as_hint_and_difficulty_as_group() {
    let data = eval::load(
        DatasetKind::Bird,
        &datasets().join("bird"),
        &Filters::default(),
    )
    .unwrap();
    assert_eq!(data.examples.len(), 158);
    assert!(data.examples[0]
        .hint
        .as_deref()
        .unwrap()
        .contains("full name"));
    let minidev = Filters {
        split: Split::Minidev,
        ..Filters::default()
    };
    let data = eval::load(DatasetKind::Bird, &datasets().join("bird"), &minidev).unwrap();
    assert_eq!(data.examples.len(), 48);
    let report = eval::score(&data, &Predictions::Gold, &EvalOptions::default()).unwrap();
    let groups: Vec<&str> = report.by_group.keys().map(String::as_str).collect();
    assert_eq!(groups, ["challenging", "moderate", "simple"]);
}

#[test]
fn predictions_are_scored_by_execution() {
    let filters = Filters {
        db: Some("concert_singer".into()),
        limit: Some(4),
        ..Filters::default()
    };
    let data = eval::load(DatasetKind::Spider, &datasets().join("spider"), &filters).unwrap();
    let ids: Vec<&str> = data
        .examples
        .iter()
        .map(|e| e.question_id.as_str())
        .collect();
    assert_eq!(ids, ["0", "1", "2", "3"]);
    // 0, 1: "How many singers do we have?"; 2, 3: name, country, age by age desc.
    let sql: HashMap<String, String> = [
        ("0", "SELECT COUNT(*) FROM singer AS s"),
        ("1", "SELECT count(*) + 1 FROM singer"),
        (
            "2",
            "SELECT name, country, age FROM singer ORDER BY nosuch DESC",
        ),
    ]
    .into_iter()
    .map(|(id, sql)| (id.to_string(), sql.to_string()))
    .collect();
    let report = eval::score(&data, &Predictions::Sql(sql), &EvalOptions::default()).unwrap();
    let verdicts: Vec<&Verdict> = report.questions.iter().map(|q| &q.verdict).collect();
    assert_eq!(verdicts[0], &Verdict::Correct);
    assert_eq!(verdicts[1], &Verdict::Wrong);
    assert!(matches!(verdicts[2], Verdict::PredictionFailed { .. }));
    assert_eq!(verdicts[3], &Verdict::Missing);
    assert_eq!(report.ex, 25.0);
}

#[test]
fn wrong_split_for_dataset_is_an_argument_error() {
    let filters = Filters {
        split: Split::Mini500,
        ..Filters::default()
    };
    let err = eval::load(DatasetKind::Spider, &datasets().join("spider"), &filters).unwrap_err();
    assert!(err.to_string().contains("--split"), "{err}");
}

#[test]
fn wikitablequestions_is_scored_by_denotation_over_its_tables() {
    let filters = Filters {
        subset: Some(["nt-2", "nt-3", "nt-8"].map(String::from).into()),
        ..Filters::default()
    };
    let data = eval::load(
        DatasetKind::Wikitablequestions,
        &datasets().join("wikitablequestions"),
        &filters,
    )
    .unwrap();
    assert_eq!(data.examples.len(), 3);
    assert!(data.examples[0].db_path.extension().unwrap() == "sqlite");
    // nt-2: "which team won previous to crettyard?" (Wolfe Tones, the next
    // row); nt-3: Los Angeles' passengers less Saskatoon's, gold "12,467".
    let sql: HashMap<String, String> = [
        (
            "nt-2",
            "SELECT team FROM table_772 WHERE row_index = \
             (SELECT row_index + 1 FROM table_772 WHERE team = 'Crettyard')",
        ),
        (
            "nt-3",
            "SELECT (SELECT passengers_number FROM table_515 WHERE city LIKE '%Los Angeles') \
             - (SELECT passengers_number FROM table_515 WHERE city LIKE '%Saskatoon')",
        ),
        ("nt-8", "SELECT 33"),
    ]
    .into_iter()
    .map(|(id, sql)| (id.to_string(), sql.to_string()))
    .collect();
    let report = eval::score(&data, &Predictions::Sql(sql), &EvalOptions::default()).unwrap();
    let verdicts: Vec<&Verdict> = report.questions.iter().map(|q| &q.verdict).collect();
    assert_eq!(
        verdicts,
        [&Verdict::Correct, &Verdict::Correct, &Verdict::Wrong]
    );
}

#[test]
fn metaqa_questions_run_on_their_subgraph_and_score_by_hits_at_1() {
    let filters = Filters {
        subset: Some(["1-0", "1-1"].map(String::from).into()),
        ..Filters::default()
    };
    let data = eval::load(DatasetKind::Metaqa, &datasets().join("metaqa"), &filters).unwrap();
    assert_eq!(data.examples.len(), 2);
    // 1-0: "what movies did Temuera Morrison act in"; 1-1: Evelyn Venable.
    assert_eq!(data.examples[0].db_id, "Temuera Morrison");
    assert!(!data.examples[0].question.contains('['));
    let sql: HashMap<String, String> = [
        (
            "1-0",
            "SELECT entity FROM starred_actors WHERE starred_actors = 'Temuera Morrison'",
        ),
        ("1-1", "SELECT starred_actors FROM starred_actors"),
    ]
    .into_iter()
    .map(|(id, sql)| (id.to_string(), sql.to_string()))
    .collect();
    let report = eval::score(&data, &Predictions::Sql(sql), &EvalOptions::default()).unwrap();
    let verdicts: Vec<&Verdict> = report.questions.iter().map(|q| &q.verdict).collect();
    assert_eq!(verdicts, [&Verdict::Correct, &Verdict::Wrong]);
}

#[test]
fn tablebench_dev_questions_run_on_their_tables_and_numbers_match_within_a_percent() {
    let filters = Filters {
        split: Split::Dev,
        ..Filters::default()
    };
    let data = eval::load(
        DatasetKind::Tablebench,
        &datasets().join("tablebench"),
        &filters,
    )
    .unwrap();
    // The dev half's fact-checking and numerical-reasoning rows, one
    // repeated record counted once.
    assert_eq!(data.examples.len(), 240);
    assert!(data.examples.iter().all(|e| matches!(
        e.group.as_deref(),
        Some("FactChecking" | "NumericalReasoning")
    )));
    // "What is the average age of the executives listed in the table?"
    // Gold 51.44; the nine ages average 51.444...
    let id = "e067a40ab6736ac5a004d9dc69f2d5c0";
    let one = eval::LoadedDataset {
        examples: data
            .examples
            .into_iter()
            .filter(|e| e.question_id == id)
            .collect(),
        ..data
    };
    let verdict = |sql: &str| {
        let predictions = Predictions::Sql(HashMap::from([(id.to_string(), sql.to_string())]));
        let report = eval::score(&one, &predictions, &EvalOptions::default()).unwrap();
        report.questions[0].verdict.clone()
    };
    assert_eq!(verdict("SELECT AVG(age) FROM data"), Verdict::Correct);
    assert_eq!(verdict("SELECT AVG(age) + 1 FROM data"), Verdict::Wrong);
}
