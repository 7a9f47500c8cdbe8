//! `iesr memory build`: a demonstration store made by the engine itself.
//! A benchmark's questions (a seeded sample of them: `Filters::sample`)
//! are annotated (the model writes a query, retries shown the failure);
//! each query the benchmark's check accepts, unless it copies the answer
//! into a literal, becomes a record. Records already in the store are
//! kept and their questions not annotated again, so an interrupted build
//! continues where it stopped.

use super::bench::engine_for;
use super::dataset::{DatasetKind, Example, Gold, LoadedDataset};
use super::denotation::normalise;
use super::predictions::Predictions;
use super::progress::{Progress, RunProgress};
use super::score::{score_one, EvalOptions, Verdict};
use crate::error::Result;
use crate::llm::LanguageModel;
use crate::memory::{used_tables, Memory, Record, Task};
use crate::search::{string_literals, Engine, SearchConfig};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub struct BuildConfig {
    /// Writes after a rejected first one.
    pub retries: usize,
    /// Greedy's settings, with the demonstrations of earlier tasks if any.
    pub search: SearchConfig,
    pub progress: Progress,
}

#[derive(Debug, Clone, Serialize)]
pub struct BuildSummary {
    pub dataset: String,
    pub task: Task,
    /// Questions annotated in this run.
    pub annotated: usize,
    /// Of those, the ones whose query was accepted (a new record each).
    pub kept: usize,
    /// Accepted at the first write, at the second, ...
    pub kept_at_attempt: Vec<usize>,
    /// Questions already in the store, skipped.
    pub already_stored: usize,
    pub records_in_store: usize,
    pub generated_tokens: usize,
    pub seconds: f64,
}

/// The task family a benchmark's questions belong to.
pub fn task_of(kind: DatasetKind) -> Task {
    match kind {
        DatasetKind::Logiccat | DatasetKind::Spider | DatasetKind::Bird => Task::TextToSql,
        DatasetKind::Wikitablequestions | DatasetKind::Tablebench => Task::Table,
        DatasetKind::Metaqa => Task::Graph,
    }
}

/// The benchmark's name as records keep it.
fn dataset_name(kind: DatasetKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

pub fn build(
    dataset: &LoadedDataset,
    model: Arc<dyn LanguageModel>,
    config: &BuildConfig,
    memory: &mut Memory,
) -> Result<BuildSummary> {
    let started = Instant::now();
    let name = dataset_name(dataset.kind);
    let task = task_of(dataset.kind);
    let stored: HashSet<(String, String)> = memory
        .records()
        .iter()
        .map(|r| (r.dataset.clone(), r.question_id.clone()))
        .collect();
    let (done, todo): (Vec<&Example>, Vec<&Example>) = dataset
        .examples
        .iter()
        .partition(|e| stored.contains(&(name.clone(), e.question_id.clone())));
    let mut summary = BuildSummary {
        dataset: name.clone(),
        task,
        annotated: 0,
        kept: 0,
        kept_at_attempt: vec![0; config.retries + 1],
        already_stored: done.len(),
        records_in_store: memory.records().len(),
        generated_tokens: 0,
        seconds: 0.0,
    };
    let mut progress = RunProgress::new(todo.len(), 0, config.progress, "kept");
    let mut engines: HashMap<PathBuf, Engine> = HashMap::new();
    for example in todo {
        let engine = engine_for(&mut engines, example, &model, &config.search, false, None)?;
        let answers = gold_values(engine, example);
        let mut accepts = |sql: &str| {
            let one = Predictions::Sql(HashMap::from([(
                example.question_id.clone(),
                sql.to_string(),
            )]));
            let right = score_one(engine.executor(), example, &one, &EvalOptions::default())
                .verdict
                == Verdict::Correct;
            right
                && !names_the_answer(sql, &example.question, &answers)
                && !lucky_first_row(engine, example, sql, &answers)
        };
        let hint = example.hint.as_deref();
        let annotation =
            engine.write_accepted(&example.question, hint, config.retries, &mut accepts)?;
        summary.annotated += 1;
        summary.generated_tokens += annotation.generated_tokens;
        let kept = annotation.sql.is_some();
        if let Some(sql) = annotation.sql {
            summary.kept += 1;
            summary.kept_at_attempt[annotation.attempts - 1] += 1;
            memory.append(Record {
                task,
                dataset: name.clone(),
                db_id: example.db_id.clone(),
                question_id: example.question_id.clone(),
                question: example.question.clone(),
                hint: example.hint.clone(),
                tables: used_tables(engine.schema(), &sql),
                embedding: memory.embed(&example.question)?,
                query: sql,
            })?;
        }
        progress.answered(kept);
    }
    progress.finish();
    summary.records_in_store = memory.records().len();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Rows of a gold query's result checked for answers a query names.
const GOLD_ROWS: usize = 50;

/// The gold answer's values as Hits@1 compares them: the benchmark's
/// answers, or the first rows of the gold query's result.
fn gold_values(engine: &Engine, example: &Example) -> Vec<String> {
    let values: Vec<String> = match &example.gold {
        Gold::Answers { values, .. } | Gold::AnyOf(values) => values.clone(),
        Gold::Sql(gold) => match engine.executor().query(gold) {
            Ok(result) => result
                .rows
                .iter()
                .take(GOLD_ROWS)
                .flatten()
                .map(|v| v.to_string())
                .collect(),
            Err(_) => Vec::new(),
        },
    };
    values.iter().map(|v| normalise(v)).collect()
}

/// Whether `sql` is right only by its first row: an acceptable-answers
/// benchmark (Hits@1) takes a query whose first row is an answer, so a
/// query that returns a whole column of other values too would pass.
fn lucky_first_row(engine: &Engine, example: &Example, sql: &str, answers: &[String]) -> bool {
    if !matches!(example.gold, Gold::AnyOf(_)) {
        return false;
    }
    match engine.executor().query(sql) {
        Ok(result) => {
            result.truncated()
                || result.rows.iter().any(|row| {
                    row.first()
                        .is_some_and(|v| !answers.contains(&normalise(&v.to_string())))
                })
        }
        Err(_) => true,
    }
}

/// Whether `sql` writes an answer value as a quoted literal the question
/// does not hold: such a query is right by copying the answer (a genre
/// guessed, a value read off a rejected result), and as an example it
/// would teach exactly that.
fn names_the_answer(sql: &str, question: &str, answers: &[String]) -> bool {
    let question = question.to_lowercase();
    string_literals(sql).into_iter().any(|literal| {
        let literal = normalise(&literal);
        !literal.is_empty() && answers.contains(&literal) && !question.contains(&literal)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_that_writes_the_answer_the_question_does_not_name_is_refused() {
        let answers = vec!["fantasy".to_string(), "drama".to_string()];
        let question = "what genres are the films starred by Caroline Munro";
        let copied = "SELECT has_genre FROM has_genre WHERE has_genre = 'Fantasy'";
        assert!(names_the_answer(copied, question, &answers));
        let honest = "SELECT T2.has_genre FROM starred_actors AS T1 JOIN has_genre AS T2 \
                      ON T1.entity = T2.entity WHERE T1.starred_actors = 'Caroline Munro'";
        assert!(!names_the_answer(honest, question, &answers));
        // A value the question names may be an answer too.
        let named = "SELECT name FROM t WHERE name = 'Drama'";
        assert!(!names_the_answer(named, "Is Drama a genre?", &answers));
        // Compared as Hits@1 compares answers: a year by value.
        let years = vec!["1994".to_string()];
        let year = "SELECT film FROM release_year WHERE release_year = ' 1994.0 '";
        assert!(names_the_answer(
            year,
            "when was Forrest Gump released",
            &years
        ));
    }

    #[test]
    fn a_query_right_only_by_its_first_row_is_refused_under_hits_at_1() {
        let db = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/datasets/spider/database/concert_singer/concert_singer.sqlite");
        let model = Arc::new(crate::llm::scripted::ScriptedModel::new(
            Vec::<String>::new(),
        ));
        let engine = Engine::new(model, &db, SearchConfig::default()).unwrap();
        let example = Example {
            question_id: "1".into(),
            db_id: "concert_singer".into(),
            db_path: db.clone(),
            question: "Who is the singer from the Netherlands?".into(),
            hint: None,
            gold: Gold::AnyOf(vec!["Joe Sharp".into()]),
            group: None,
        };
        let answers = gold_values(&engine, &example);
        let whole_column = "SELECT Name FROM singer ORDER BY Country = 'Netherlands' DESC";
        assert!(lucky_first_row(&engine, &example, whole_column, &answers));
        let exact = "SELECT Name FROM singer WHERE Country = 'Netherlands'";
        assert!(!lucky_first_row(&engine, &example, exact, &answers));
        let sql_gold = Example {
            gold: Gold::Sql("SELECT Name FROM singer".into()),
            ..example
        };
        assert!(!lucky_first_row(&engine, &sql_gold, whole_column, &answers));
    }
}
