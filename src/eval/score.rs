//! Execution accuracy: runs gold and predicted SQL on the same database and
//! compares the results under BIRD's or Spider's rule. A predicted query that
//! fails is wrong; a gold query that fails is reported apart, never counted.

use super::dataset::{Example, Gold, LoadedDataset};
use super::denotation::{denotes, hits_at_1};
use super::predictions::Predictions;
use super::progress::{progress_bar, Progress};
use crate::db::guard::{has_order_by, strip_distinct};
use crate::db::{
    bird_equal, spider_equal, ExecConfig, Executor, QueryResult, ResultDigest, Semantics,
};
use crate::error::{QueryError, Result};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub semantics: Semantics,
    /// Per-query wall-time limit (30 s, as BIRD's evaluator).
    pub timeout: Duration,
    /// Spider only: keep DISTINCT instead of stripping it from both sides.
    pub keep_distinct: bool,
    pub progress: Progress,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            semantics: Semantics::Bird,
            timeout: Duration::from_secs(30),
            keep_distinct: false,
            progress: Progress::Hidden,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Correct,
    /// The prediction ran but its result differs.
    Wrong,
    /// The prediction failed to run (error, refusal or timeout).
    PredictionFailed {
        error: String,
    },
    /// No prediction for this question: counted wrong.
    Missing,
    /// The gold query failed: the question is not counted.
    GoldFailed {
        error: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct QuestionScore {
    pub question_id: String,
    pub db_id: String,
    pub group: Option<String>,
    /// Whether the gold result holds at least one non-NULL value.
    pub gold_nonempty: Option<bool>,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Counts for one slice of the questions.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Tally {
    pub scored: usize,
    pub correct: usize,
    pub nonempty_scored: usize,
    pub nonempty_correct: usize,
}

impl Tally {
    fn add(&mut self, score: &QuestionScore) {
        if matches!(score.verdict, Verdict::GoldFailed { .. }) {
            return;
        }
        let correct = score.verdict == Verdict::Correct;
        self.scored += 1;
        self.correct += usize::from(correct);
        if score.gold_nonempty == Some(true) {
            self.nonempty_scored += 1;
            self.nonempty_correct += usize::from(correct);
        }
    }

    /// EX in percent over questions whose gold executes.
    pub fn ex(&self) -> f64 {
        percent(self.correct, self.scored)
    }

    /// EX in percent over questions whose gold result is non-empty.
    pub fn ex_nonempty(&self) -> f64 {
        percent(self.nonempty_correct, self.nonempty_scored)
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub dataset: LoadedDatasetSummary,
    pub semantics: Semantics,
    pub overall: Tally,
    pub ex: f64,
    pub ex_nonempty: f64,
    pub by_group: BTreeMap<String, Tally>,
    pub gold_failed: usize,
    pub missing_predictions: usize,
    pub prediction_failed: usize,
    pub questions: Vec<QuestionScore>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadedDatasetSummary {
    pub kind: super::dataset::DatasetKind,
    pub split: super::dataset::Split,
    pub questions: usize,
    pub skipped_missing_db: BTreeMap<String, usize>,
}

/// Scores every question of the dataset, in parallel.
pub fn score(
    dataset: &LoadedDataset,
    predictions: &Predictions,
    options: &EvalOptions,
) -> Result<Report> {
    let executors = open_executors(&dataset.examples, options)?;
    let progress = progress_bar(dataset.examples.len(), 0, options.progress);
    let correct_so_far = AtomicUsize::new(0);
    let questions: Vec<QuestionScore> = dataset
        .examples
        .par_iter()
        .map(|example| {
            let executor = &executors[&example.db_path];
            let score = score_one(executor, example, predictions, options);
            if score.verdict == Verdict::Correct {
                correct_so_far.fetch_add(1, Ordering::Relaxed);
            }
            progress.inc(1);
            progress.set_message(format!(
                "correct {}",
                correct_so_far.load(Ordering::Relaxed)
            ));
            score
        })
        .collect();
    progress.finish_and_clear();

    let mut overall = Tally::default();
    let mut by_group: BTreeMap<String, Tally> = BTreeMap::new();
    for score in &questions {
        overall.add(score);
        if let Some(group) = &score.group {
            by_group.entry(group.clone()).or_default().add(score);
        }
    }
    let count = |f: fn(&Verdict) -> bool| questions.iter().filter(|q| f(&q.verdict)).count();
    Ok(Report {
        dataset: LoadedDatasetSummary {
            kind: dataset.kind,
            split: dataset.split,
            questions: dataset.examples.len(),
            skipped_missing_db: dataset.skipped_missing_db.clone(),
        },
        semantics: options.semantics,
        ex: overall.ex(),
        ex_nonempty: overall.ex_nonempty(),
        overall,
        by_group,
        gold_failed: count(|v| matches!(v, Verdict::GoldFailed { .. })),
        missing_predictions: count(|v| matches!(v, Verdict::Missing)),
        prediction_failed: count(|v| matches!(v, Verdict::PredictionFailed { .. })),
        questions,
    })
}

fn open_executors(
    examples: &[Example],
    options: &EvalOptions,
) -> Result<HashMap<PathBuf, Executor>> {
    let config = ExecConfig {
        timeout: options.timeout,
        ..ExecConfig::default()
    };
    let mut executors = HashMap::new();
    for example in examples {
        if !executors.contains_key(&example.db_path) {
            let executor = Executor::open(&example.db_path, config.clone())?;
            executors.insert(example.db_path.clone(), executor);
        }
    }
    Ok(executors)
}

/// Scores a question whose gold is its answer's values: the prediction's
/// result is right when `matches` says so.
fn score_by_values(
    executor: &Executor,
    predictions: &Predictions,
    mut score: QuestionScore,
    matches: impl Fn(&QueryResult) -> bool,
) -> QuestionScore {
    score.gold_nonempty = Some(true);
    score.verdict = match predictions.sql_for(&score.question_id, None) {
        None => Verdict::Missing,
        Some(sql) => match executor.query(sql) {
            Err(e) => Verdict::PredictionFailed {
                error: e.to_string(),
            },
            Ok(result) if matches(&result) => Verdict::Correct,
            Ok(_) => Verdict::Wrong,
        },
    };
    score
}

/// Scores one question (gold and prediction run on `executor`'s database).
pub fn score_one(
    executor: &Executor,
    example: &Example,
    predictions: &Predictions,
    options: &EvalOptions,
) -> QuestionScore {
    let mut score = QuestionScore {
        question_id: example.question_id.clone(),
        db_id: example.db_id.clone(),
        group: example.group.clone(),
        gold_nonempty: None,
        verdict: Verdict::Missing,
    };
    let run = |sql: &str| -> Result<ResultDigest, QueryError> {
        match options.semantics {
            Semantics::Spider if !options.keep_distinct => executor.digest(&strip_distinct(sql)),
            _ => executor.digest(sql),
        }
    };
    let gold_sql = match &example.gold {
        Gold::Sql(sql) => sql,
        Gold::Answers { values, tolerance } => {
            return score_by_values(executor, predictions, score, |r| {
                denotes(values, r, *tolerance)
            })
        }
        Gold::AnyOf(answers) => {
            return score_by_values(executor, predictions, score, |r| hits_at_1(answers, r))
        }
    };
    let gold = match run(gold_sql) {
        Ok(gold) => gold,
        Err(e) => {
            score.verdict = Verdict::GoldFailed {
                error: e.to_string(),
            };
            return score;
        }
    };
    score.gold_nonempty = Some(gold.has_non_null());
    let Some(sql) = predictions.sql_for(&example.question_id, Some(gold_sql)) else {
        return score;
    };
    score.verdict = match run(sql) {
        Err(e) => Verdict::PredictionFailed {
            error: e.to_string(),
        },
        Ok(predicted) => {
            let same = match options.semantics {
                Semantics::Bird => bird_equal(&gold, &predicted),
                Semantics::Spider => spider_equal(&gold, &predicted, has_order_by(gold_sql)),
            };
            if same {
                Verdict::Correct
            } else {
                Verdict::Wrong
            }
        }
    };
    score
}
