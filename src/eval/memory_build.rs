//! `iesr memory build`: a demonstration store made by the engine itself.
//! A benchmark's questions (a seeded sample of them: `Filters::sample`)
//! are annotated (the model
//! writes a query, retries shown the failure), and each query the
//! benchmark's check accepts becomes a record. Records already in the
//! store are kept; their questions are not annotated again, so an
//! interrupted build continues where it stopped.

use super::dataset::{DatasetKind, Example, LoadedDataset};
use super::predictions::Predictions;
use super::progress::progress_bar;
use super::score::{score_one, EvalOptions, Verdict};
use crate::error::Result;
use crate::llm::LanguageModel;
use crate::memory::{used_tables, Memory, Record, Task};
use crate::search::{Engine, SearchConfig};
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
    pub progress: bool,
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
    let bar = progress_bar(todo.len(), 0, config.progress);
    let mut engines: HashMap<PathBuf, Engine> = HashMap::new();
    for example in todo {
        if !engines.contains_key(&example.db_path) {
            let engine = Engine::new(Arc::clone(&model), &example.db_path, config.search.clone())?
                .with_database_id(&example.db_id);
            engines.insert(example.db_path.clone(), engine);
        }
        let engine = &engines[&example.db_path];
        let mut accepts = |sql: &str| {
            let one = Predictions::Sql(HashMap::from([(
                example.question_id.clone(),
                sql.to_string(),
            )]));
            score_one(engine.executor(), example, &one, &EvalOptions::default()).verdict
                == Verdict::Correct
        };
        let hint = example.hint.as_deref();
        let annotation =
            engine.write_accepted(&example.question, hint, config.retries, &mut accepts)?;
        summary.annotated += 1;
        summary.generated_tokens += annotation.generated_tokens;
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
        bar.inc(1);
        bar.set_message(format!("kept {} of {}", summary.kept, summary.annotated));
    }
    bar.finish_and_clear();
    summary.records_in_store = memory.records().len();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}
