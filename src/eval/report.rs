//! Finished benchmark runs side by side: one row per run folder (its
//! `summary.json`), written as a table, a CSV and plots. Reads only what
//! `iesr bench` wrote, so runs made on another machine can be reported here.

use super::bench::{read_summary, CostSummary};
use super::paired::{compare, Outcomes, PairedDifference};
use crate::error::{Error, Result};
use crate::search::Variant;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One run, flattened for tables, CSV and plots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// The run's folder name.
    pub run: String,
    /// The run's folder; empty for a row read back from an earlier
    /// report's CSV.
    #[serde(skip)]
    pub dir: PathBuf,
    pub dataset: String,
    pub model: String,
    /// Method and changed settings; runs of one series differ in budget only.
    pub series: String,
    pub method: String,
    pub budget: usize,
    /// Questions in the run's dataset selection, and how many were answered.
    pub questions: usize,
    pub answered: usize,
    /// Execution accuracy in percent, over executable gold and over
    /// non-empty gold.
    pub ex: f64,
    pub ex_nonempty: f64,
    /// Means per question.
    pub calls: f64,
    pub prompt_tokens_computed: f64,
    pub prompt_tokens_cached: f64,
    pub generated_tokens: f64,
    /// From a question's start to its answer.
    pub seconds: f64,
    pub seconds_p90: f64,
    /// The run's wall seconds per question: the cost of a question in a
    /// batch (below `seconds` when several were in flight). Absent (0) in
    /// rows of reports that predate it.
    #[serde(default)]
    pub run_seconds: f64,
    pub generated_tokens_per_second: f64,
}

impl RunRow {
    /// Tokens the model computed per question: uncached prompt plus output.
    pub fn tokens_computed(&self) -> f64 {
        self.prompt_tokens_computed + self.generated_tokens
    }

    /// The run's wall seconds per question, or the seconds from question
    /// to answer for a row that predates it (they are equal when one
    /// question was answered at a time).
    pub fn run_seconds_per_question(&self) -> f64 {
        if self.run_seconds > 0.0 {
            self.run_seconds
        } else {
            self.seconds
        }
    }
}

/// The parts of `summary.json` a report reads.
#[derive(Deserialize)]
struct SummaryFile {
    model: String,
    variant: Variant,
    report: ReportHead,
    cost: CostSummary,
}

#[derive(Deserialize)]
struct ReportHead {
    dataset: DatasetHead,
    ex: f64,
    ex_nonempty: f64,
}

#[derive(Deserialize)]
struct DatasetHead {
    kind: String,
    questions: usize,
}

/// Reads one run folder.
pub fn load_run(dir: &Path) -> Result<RunRow> {
    let summary: SummaryFile = read_summary(dir)?;
    let run = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    let cost = summary.cost;
    Ok(RunRow {
        run,
        dir: dir.to_path_buf(),
        dataset: summary.report.dataset.kind,
        model: summary.model,
        series: summary.variant.series(),
        method: summary.variant.method,
        budget: summary.variant.budget,
        questions: summary.report.dataset.questions,
        answered: cost.questions,
        ex: summary.report.ex,
        ex_nonempty: summary.report.ex_nonempty,
        calls: cost.calls.mean,
        prompt_tokens_computed: cost.prompt_tokens_computed.mean,
        prompt_tokens_cached: cost.prompt_tokens_cached.mean,
        generated_tokens: cost.generated_tokens.mean,
        seconds: cost.seconds.mean,
        seconds_p90: cost.seconds.p90,
        run_seconds: cost.run_seconds_per_question(),
        generated_tokens_per_second: cost.generated_tokens_per_second,
    })
}

/// Reads every run folder, sorted by dataset, series and budget.
pub fn load_runs(dirs: &[PathBuf]) -> Result<Vec<RunRow>> {
    if dirs.is_empty() {
        return Err(Error::InvalidArgument(
            "no run folders given; pass the --out folders of `iesr bench` runs".into(),
        ));
    }
    let mut rows = dirs
        .iter()
        .map(|d| load_run(d))
        .collect::<Result<Vec<_>>>()?;
    sort_rows(&mut rows);
    Ok(rows)
}

/// Rows in report order: by dataset, series, model, then budget.
pub fn sort_rows(rows: &mut [RunRow]) {
    rows.sort_by(|a, b| {
        (&a.dataset, &a.series, &a.model, a.budget)
            .cmp(&(&b.dataset, &b.series, &b.model, b.budget))
    });
}

/// Two runs on the same dataset, compared question by question.
#[derive(Debug, Clone, Serialize)]
pub struct PairRow {
    pub dataset: String,
    pub a: String,
    pub b: String,
    /// Over questions whose gold executes, and over those with non-empty gold.
    pub all: PairedDifference,
    pub nonempty: Option<PairedDifference>,
}

/// Every pair of runs (in `rows` order) on one dataset that share questions.
pub fn pairs(rows: &[RunRow]) -> Result<Vec<PairRow>> {
    let outcomes = rows
        .iter()
        .map(|r| Outcomes::load(&r.dir))
        .collect::<Result<Vec<_>>>()?;
    let mut pairs = Vec::new();
    for (i, a) in rows.iter().enumerate() {
        for (j, b) in rows.iter().enumerate().skip(i + 1) {
            if a.dataset != b.dataset {
                continue;
            }
            if let Some(all) = compare(&outcomes[i], &outcomes[j], false) {
                pairs.push(PairRow {
                    dataset: a.dataset.clone(),
                    a: a.run.clone(),
                    b: b.run.clone(),
                    all,
                    nonempty: compare(&outcomes[i], &outcomes[j], true),
                });
            }
        }
    }
    Ok(pairs)
}

/// The rows of an earlier report's `runs.csv` (whose run folders may be
/// gone) that no row of `current` replaces: a run folder is the newer
/// measurement of its dataset, model, series and budget.
pub fn earlier_rows(path: &Path, current: &[RunRow]) -> Result<Vec<RunRow>> {
    let failed = |e: csv::Error| {
        Error::InvalidArgument(format!(
            "cannot read {} as a report's runs.csv: {e}",
            path.display()
        ))
    };
    let mut reader = csv::Reader::from_path(path).map_err(failed)?;
    let mut rows = Vec::new();
    for row in reader.deserialize::<RunRow>() {
        let row = row.map_err(failed)?;
        let replaced = current.iter().any(|c| {
            (&c.dataset, &c.model, &c.series, c.budget)
                == (&row.dataset, &row.model, &row.series, row.budget)
                || c.run == row.run
        });
        if !replaced {
            rows.push(row);
        }
    }
    Ok(rows)
}

pub fn write_csv(rows: &[RunRow], path: &Path) -> Result<()> {
    let failed =
        |e: csv::Error| Error::InvalidArgument(format!("cannot write {}: {e}", path.display()));
    let mut writer = csv::Writer::from_path(path).map_err(failed)?;
    for row in rows {
        writer.serialize(row).map_err(failed)?;
    }
    writer.flush().map_err(|e| Error::write(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(variant: &str, ex: f64, answered: usize) -> String {
        summary_with(variant, ex, answered, "[]")
    }

    /// A summary whose report lists `questions` (JSON) with their verdicts.
    fn summary_with(variant: &str, ex: f64, answered: usize, questions: &str) -> String {
        format!(
            r#"{{"model": "m", "variant": {variant}, "seed": 0,
            "report": {{"dataset": {{"kind": "logiccat", "split": "mini500", "questions": 30}},
                        "ex": {ex}, "ex_nonempty": 20.0, "questions": {questions}}},
            "cost": {{"questions": {answered},
                      "calls": {{"mean": 9.0, "p90": 12.0}},
                      "prompt_tokens_computed": {{"mean": 100.0, "p90": 150.0}},
                      "prompt_tokens_cached": {{"mean": 300.0, "p90": 400.0}},
                      "generated_tokens": {{"mean": 50.0, "p90": 60.0}},
                      "seconds": {{"mean": 4.0, "p90": 6.0}},
                      "generated_tokens_per_second": 12.5}}}}"#
        )
    }

    fn run_dir(root: &Path, name: &str, text: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("summary.json"), text).unwrap();
        dir
    }

    #[test]
    fn rows_come_from_summaries_sorted_by_series_and_budget() {
        let root = tempfile::tempdir().unwrap();
        let iesr = |budget| format!(r#"{{"method": "iesr", "budget": {budget}, "changes": []}}"#);
        let dirs = [
            run_dir(root.path(), "iesr-8", &summary(&iesr(8), 20.0, 30)),
            run_dir(root.path(), "iesr-2", &summary(&iesr(2), 10.0, 29)),
            run_dir(
                root.path(),
                "abl",
                &summary(
                    r#"{"method": "iesr", "budget": 8, "changes": ["no-compression"]}"#,
                    15.0,
                    30,
                ),
            ),
        ];
        let rows = load_runs(&dirs).unwrap();
        let order: Vec<(&str, usize)> =
            rows.iter().map(|r| (r.series.as_str(), r.budget)).collect();
        assert_eq!(
            order,
            [("iesr", 2), ("iesr", 8), ("iesr no-compression", 8)]
        );
        assert_eq!((rows[0].answered, rows[0].questions), (29, 30));
        assert_eq!(rows[1].tokens_computed(), 150.0);

        let csv_path = root.path().join("runs.csv");
        write_csv(&rows, &csv_path).unwrap();
        let csv = std::fs::read_to_string(&csv_path).unwrap();
        assert!(csv.starts_with("run,dataset,model,series,method,budget,"));
        assert_eq!(csv.lines().count(), 4);

        // Read back beside a newer iesr-8 run, the older iesr-8 row gives
        // way; the others stay, without a folder.
        let newer = run_dir(root.path(), "iesr-8-new", &summary(&iesr(8), 25.0, 30));
        let current = load_runs(&[newer]).unwrap();
        let earlier = earlier_rows(&csv_path, &current).unwrap();
        let kept: Vec<&str> = earlier.iter().map(|r| r.run.as_str()).collect();
        assert_eq!(kept, ["iesr-2", "abl"]);
        // A run of another model measures something else: nothing gives way.
        let other_model =
            summary(&iesr(8), 40.0, 30).replace(r#""model": "m""#, r#""model": "big""#);
        let other = load_runs(&[run_dir(root.path(), "iesr-8-big", &other_model)]).unwrap();
        assert_eq!(other[0].model, "big");
        assert_eq!(earlier_rows(&csv_path, &other).unwrap().len(), 3);
        assert_eq!(
            earlier[0],
            RunRow {
                dir: PathBuf::new(),
                ..rows[0].clone()
            }
        );
    }

    /// A report's CSV from before the run's wall time was kept reads back
    /// with the questions' own seconds as the run's.
    #[test]
    fn an_earlier_csv_without_run_seconds_reads_back() {
        let root = tempfile::tempdir().unwrap();
        let sc8 = summary(r#"{"method": "sc", "budget": 8, "changes": []}"#, 30.0, 30);
        let rows = load_runs(&[run_dir(root.path(), "sc-8", &sc8)]).unwrap();
        assert_eq!(rows[0].run_seconds, 4.0);
        let csv_path = root.path().join("runs.csv");
        write_csv(&rows, &csv_path).unwrap();
        let csv = std::fs::read_to_string(&csv_path).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let column = header.iter().position(|h| *h == "run_seconds").unwrap();
        let without: String = csv
            .lines()
            .map(|line| {
                let mut cells: Vec<&str> = line.split(',').collect();
                cells.remove(column);
                format!("{}\n", cells.join(","))
            })
            .collect();
        std::fs::write(&csv_path, without).unwrap();
        let earlier = earlier_rows(&csv_path, &[]).unwrap();
        assert_eq!(earlier[0].run_seconds, 0.0);
        assert_eq!(earlier[0].run_seconds_per_question(), 4.0);
    }

    #[test]
    fn runs_of_one_dataset_are_compared_question_by_question() {
        let root = tempfile::tempdir().unwrap();
        let verdicts = |right: &[&str]| {
            let list: Vec<String> = ["q1", "q2", "q3", "q4"]
                .iter()
                .map(|q| {
                    let verdict = if right.contains(q) { "correct" } else { "wrong" };
                    format!(r#"{{"question_id": "{q}", "db_id": "d", "gold_nonempty": {}, "verdict": "{verdict}"}}"#, *q != "q4")
                })
                .chain([r#"{"question_id": "q5", "db_id": "d", "gold_nonempty": null, "verdict": "gold_failed", "error": "x"}"#.to_string()])
                .collect();
            format!("[{}]", list.join(","))
        };
        let sc = |n| format!(r#"{{"method": "sc", "budget": {n}, "changes": []}}"#);
        let dirs = [
            run_dir(
                root.path(),
                "sc-8",
                &summary_with(&sc(8), 75.0, 4, &verdicts(&["q1", "q2", "q4"])),
            ),
            run_dir(
                root.path(),
                "sc-2",
                &summary_with(&sc(2), 25.0, 4, &verdicts(&["q1"])),
            ),
        ];
        let rows = load_runs(&dirs).unwrap();
        let pairs = pairs(&rows).unwrap();
        assert_eq!(pairs.len(), 1);
        let pair = &pairs[0];
        assert_eq!((pair.a.as_str(), pair.b.as_str()), ("sc-2", "sc-8"));
        // The failed gold is left out; sc-8 alone is right on q2 and q4.
        assert_eq!(
            (pair.all.questions, pair.all.only_a, pair.all.only_b),
            (4, 0, 2)
        );
        assert!((pair.all.difference + 50.0).abs() < 1e-9);
        let nonempty = pair.nonempty.as_ref().unwrap();
        assert_eq!((nonempty.questions, nonempty.only_b), (3, 1));
    }

    #[test]
    fn runs_over_other_databases_share_no_question() {
        let root = tempfile::tempdir().unwrap();
        let verdicts = |db: &str| {
            format!(
                r#"[{{"question_id": "0", "db_id": "{db}", "gold_nonempty": true, "verdict": "correct"}}]"#
            )
        };
        let greedy = r#"{"method": "greedy", "budget": 1, "changes": []}"#;
        let dirs = [
            run_dir(
                root.path(),
                "clinic",
                &summary_with(greedy, 100.0, 1, &verdicts("clinic")),
            ),
            run_dir(
                root.path(),
                "shop",
                &summary_with(greedy, 100.0, 1, &verdicts("shop")),
            ),
        ];
        assert!(pairs(&load_runs(&dirs).unwrap()).unwrap().is_empty());
    }

    #[test]
    fn unfinished_and_foreign_folders_are_named_in_the_error() {
        let root = tempfile::tempdir().unwrap();
        let unfinished = root.path().join("cut");
        std::fs::create_dir_all(&unfinished).unwrap();
        let err = load_run(&unfinished).unwrap_err().to_string();
        assert!(err.contains("--resume"), "{err}");
        let old = run_dir(root.path(), "old", r#"{"model": "m", "search": "Iesr"}"#);
        let err = load_run(&old).unwrap_err().to_string();
        assert!(err.contains("old") && err.contains("rewrite"), "{err}");
        assert!(load_runs(&[]).is_err());
    }
}
