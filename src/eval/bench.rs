//! Benchmark runs: every question of a dataset through the search, one
//! prediction line appended (and flushed) per question with its cost, one
//! trace file per question, then scoring and a summary. A killed run
//! continues with `--resume` without redoing or losing a finished question.
//! Several questions may be answered at once (`concurrency`), each by its
//! own worker with its own engines; the lines are then written in the
//! order the answers come.

use super::dataset::{Example, LoadedDataset};
use super::predictions::Predictions;
use super::progress::{Progress, RunProgress};
use super::score::{score, score_one, EvalOptions, Report, Verdict};
use super::shard::Shard;
use crate::error::{Error, Result};
use crate::llm::LanguageModel;
use crate::search::{Answer, Engine, SearchConfig, Variant};
use serde::{Deserialize, Serialize};
use std::collections::hash_map::{Entry, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

#[derive(Clone)]
pub struct BenchConfig {
    pub out: PathBuf,
    pub resume: bool,
    pub search: SearchConfig,
    /// The model that judges candidates (`Engine::with_discriminator`);
    /// the main model when None.
    pub judge: Option<Arc<dyn LanguageModel>>,
    pub progress: Progress,
    /// The part of the dataset this run answers, when spread over machines
    /// (the dataset given is already that part).
    pub shard: Option<Shard>,
    /// Questions answered at once (at least 1). Above 1 the model's calls
    /// of different questions overlap, which a served model takes as
    /// concurrent requests.
    pub concurrency: usize,
}

/// One line of `predictions.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PredictionRecord {
    pub question_id: String,
    pub db_id: String,
    /// Empty when no SQL could be extracted.
    pub sql: String,
    pub confidence: f64,
    pub calls: usize,
    pub prompt_tokens: usize,
    pub cached_prompt_tokens: usize,
    pub generated_tokens: usize,
    /// From the question's start to its answer.
    pub seconds: f64,
    /// The run's wall time from the answer recorded before it (or the
    /// session's start) to this one: its share of the run's time, which is
    /// less than `seconds` when several questions are in flight. Absent in
    /// records of runs that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_seconds: Option<f64>,
}

/// Mean and 90th percentile of one per-question cost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub p90: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CostSummary {
    pub questions: usize,
    pub calls: Spread,
    pub prompt_tokens_computed: Spread,
    pub prompt_tokens_cached: Spread,
    pub generated_tokens: Spread,
    pub seconds: Spread,
    /// The run's wall seconds spent answering, over all its sessions (and
    /// shards): each record's `run_seconds`, or its `seconds` where it has
    /// none. Absent (0) in summaries that predate it.
    #[serde(default)]
    pub run_seconds: f64,
    /// Generated tokens per second of the run's wall time.
    pub generated_tokens_per_second: f64,
}

impl CostSummary {
    /// The run's wall seconds per question answered: what a question costs
    /// in a batch, however many were in flight.
    pub fn run_seconds_per_question(&self) -> f64 {
        if self.run_seconds > 0.0 && self.questions > 0 {
            self.run_seconds / self.questions as f64
        } else {
            self.seconds.mean
        }
    }

    /// Questions answered per hour of the run's wall time.
    pub fn questions_per_hour(&self) -> f64 {
        let per_question = self.run_seconds_per_question();
        if per_question > 0.0 {
            3600.0 / per_question
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchSummary {
    /// The engine's version and source revision.
    pub build: String,
    pub model: String,
    pub variant: Variant,
    pub seed: u64,
    /// Set on a shard's summary; `iesr merge` joins the shards of a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    pub report: Report,
    pub cost: CostSummary,
}

pub(super) const PREDICTIONS: &str = "predictions.jsonl";

pub fn run(
    dataset: &LoadedDataset,
    model: Arc<dyn LanguageModel>,
    config: &BenchConfig,
) -> Result<BenchSummary> {
    let traces = config.out.join("traces");
    std::fs::create_dir_all(&traces).map_err(|e| Error::write(&traces, e))?;
    let path = config.out.join(PREDICTIONS);
    let mut done = read_records(&path)?;
    if !done.is_empty() && !config.resume {
        return Err(Error::InvalidArgument(format!(
            "{} already holds {} predictions; pass --resume to continue that run or choose another --out",
            path.display(),
            done.len()
        )));
    }
    // Rewrite what was read, dropping a line cut short by a kill.
    write_records(&path, &done)?;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| Error::write(&path, e))?;

    let todo: Vec<&Example> = dataset
        .examples
        .iter()
        .filter(|e| !done.iter().any(|r| r.question_id == e.question_id))
        .collect();
    let mut progress =
        RunProgress::new(dataset.examples.len(), done.len(), config.progress, "right");
    let mut last_recorded = Instant::now();
    let mut record_answer = |example: &Example, answer: Answer, right: bool| -> Result<()> {
        let cost = &answer.trace.cost;
        let recorded = Instant::now();
        let run_seconds = recorded.duration_since(last_recorded).as_secs_f64();
        last_recorded = recorded;
        let record = PredictionRecord {
            question_id: example.question_id.clone(),
            db_id: example.db_id.clone(),
            sql: answer.sql.clone().unwrap_or_default(),
            confidence: answer.confidence,
            calls: cost.calls,
            prompt_tokens: cost.prompt_tokens,
            cached_prompt_tokens: cost.cached_prompt_tokens,
            generated_tokens: cost.generated_tokens,
            seconds: cost.seconds,
            run_seconds: Some(run_seconds),
        };
        let trace_path = traces.join(format!("{}.json", example.question_id));
        let trace = serde_json::to_string_pretty(&answer.trace).expect("traces serialize");
        std::fs::write(&trace_path, trace).map_err(|e| Error::write(&trace_path, e))?;
        let line = serde_json::to_string(&record).expect("records serialize");
        writeln!(file, "{line}")
            .and_then(|_| file.flush())
            .map_err(|e| Error::write(&path, e))?;
        done.push(record);
        progress.answered(right);
        Ok(())
    };
    let over_data = dataset.kind.asks_of_tables_or_graphs();
    answer_all(&todo, &model, config, over_data, &mut record_answer)?;
    progress.finish();

    let predictions = Predictions::Sql(
        done.iter()
            .map(|r| (r.question_id.clone(), r.sql.clone()))
            .collect(),
    );
    let report = score(dataset, &predictions, &EvalOptions::default())?;
    let summary = BenchSummary {
        build: crate::BUILD.to_string(),
        model: model.name().to_string(),
        variant: variant(config),
        seed: config.search.seed,
        shard: config.shard,
        report,
        cost: cost_summary(&done),
    };
    write_summary(&config.out, &summary)?;
    Ok(summary)
}

/// Answers `todo` on `config.concurrency` workers, each pulling the next
/// question; `record` is called here, one answer at a time, with whether
/// the answer is right. The first error stops the workers (questions in
/// flight finish) and is returned. `over_data`: the questions are asked of
/// tables or graphs (`Engine::over_tables_or_graph`).
fn answer_all(
    todo: &[&Example],
    model: &Arc<dyn LanguageModel>,
    config: &BenchConfig,
    over_data: bool,
    record: &mut dyn FnMut(&Example, Answer, bool) -> Result<()>,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, answers) = mpsc::channel::<(usize, Result<(Answer, bool)>)>();
    std::thread::scope(|scope| {
        for _ in 0..config.concurrency.max(1) {
            let sender = sender.clone();
            let (next, stop) = (&next, &stop);
            // Taken before any worker starts, so that no pass runs before
            // every worker has made its first call.
            let mut seat = model.seat();
            scope.spawn(move || {
                if let Some(seat) = &mut seat {
                    seat.bind();
                }
                let mut engines = HashMap::new();
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(example) = todo.get(i) else { break };
                    let answered = answer_one(&mut engines, example, model, config, over_data);
                    if sender.send((i, answered)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut first_error = None;
        for (i, answered) in answers {
            let result = answered.and_then(|(answer, right)| record(todo[i], answer, right));
            if let Err(error) = result {
                stop.store(true, Ordering::Relaxed);
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

/// `example`'s answer and whether it is right.
fn answer_one(
    engines: &mut HashMap<PathBuf, Engine>,
    example: &Example,
    model: &Arc<dyn LanguageModel>,
    config: &BenchConfig,
    over_data: bool,
) -> Result<(Answer, bool)> {
    let engine = engine_for(
        engines,
        example,
        model,
        &config.search,
        over_data,
        config.judge.as_ref(),
    )?;
    let answer = engine.answer(&example.question, example.hint.as_deref())?;
    let one = Predictions::Sql(HashMap::from([(
        example.question_id.clone(),
        answer.sql.clone().unwrap_or_default(),
    )]));
    // Scoring reads full results (digests), so the engine's row cap does not apply.
    let verdict = score_one(engine.executor(), example, &one, &EvalOptions::default()).verdict;
    Ok((answer, verdict == Verdict::Correct))
}

/// The engine of `example`'s database, opened on its first question and
/// named as the benchmark names the database (so that no demonstration
/// of it is shown, and, with `over_data`, as tables or graphs); `judge`
/// judges its candidates when given.
pub(super) fn engine_for<'a>(
    engines: &'a mut HashMap<PathBuf, Engine>,
    example: &Example,
    model: &Arc<dyn LanguageModel>,
    search: &SearchConfig,
    over_data: bool,
    judge: Option<&Arc<dyn LanguageModel>>,
) -> Result<&'a Engine> {
    match engines.entry(example.db_path.clone()) {
        Entry::Occupied(open) => Ok(open.into_mut()),
        Entry::Vacant(slot) => {
            let mut engine = Engine::new(Arc::clone(model), &example.db_path, search.clone())?
                .with_database_id(&example.db_id);
            if over_data {
                engine = engine.over_tables_or_graph();
            }
            if let Some(judge) = judge {
                engine = engine.with_discriminator(Arc::clone(judge));
            }
            Ok(slot.insert(engine))
        }
    }
}

const SUMMARY: &str = "summary.json";

pub(super) fn write_summary(out: &Path, summary: &BenchSummary) -> Result<()> {
    let path = out.join(SUMMARY);
    let text = serde_json::to_string_pretty(summary).expect("summaries serialize");
    std::fs::write(&path, text).map_err(|e| Error::write(&path, e))
}

/// The parts `T` of the summary a finished run in `dir` wrote.
pub(super) fn read_summary<T: serde::de::DeserializeOwned>(dir: &Path) -> Result<T> {
    let path = dir.join(SUMMARY);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::InvalidArgument(format!(
                "{} has no summary.json; finish the run with `iesr bench --resume --out {}` and the same arguments",
                dir.display(),
                dir.display()
            )))
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    serde_json::from_str(&text).map_err(|e| {
        Error::InvalidArgument(format!(
            "{} is not a summary written by this version of `iesr bench` ({e}); run `iesr bench --resume` on that folder to rewrite it",
            path.display()
        ))
    })
}

/// The search's variant, naming the judging model when it is not the main one.
fn variant(config: &BenchConfig) -> Variant {
    let mut variant = config.search.variant();
    if let Some(judge) = &config.judge {
        variant
            .changes
            .push(format!("discriminator {}", judge.name()));
    }
    variant
}

/// The complete lines of a predictions file (none if it does not exist).
pub fn read_records(path: &Path) -> Result<Vec<PredictionRecord>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

pub(super) fn write_records(path: &Path, records: &[PredictionRecord]) -> Result<()> {
    let mut text = String::new();
    for record in records {
        text.push_str(&serde_json::to_string(record).expect("records serialize"));
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| Error::write(path, e))
}

fn spread(mut values: Vec<f64>) -> Spread {
    if values.is_empty() {
        return Spread {
            mean: 0.0,
            p90: 0.0,
        };
    }
    values.sort_by(f64::total_cmp);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    // Nearest-rank percentile.
    let rank = ((0.9 * values.len() as f64).ceil() as usize).clamp(1, values.len());
    Spread {
        mean,
        p90: values[rank - 1],
    }
}

pub(super) fn cost_summary(records: &[PredictionRecord]) -> CostSummary {
    let of = |f: fn(&PredictionRecord) -> f64| spread(records.iter().map(f).collect());
    let generated: f64 = records.iter().map(|r| r.generated_tokens as f64).sum();
    let run_seconds: f64 = records
        .iter()
        .map(|r| r.run_seconds.unwrap_or(r.seconds))
        .sum();
    CostSummary {
        questions: records.len(),
        calls: of(|r| r.calls as f64),
        prompt_tokens_computed: of(|r| (r.prompt_tokens - r.cached_prompt_tokens) as f64),
        prompt_tokens_cached: of(|r| r.cached_prompt_tokens as f64),
        generated_tokens: of(|r| r.generated_tokens as f64),
        seconds: of(|r| r.seconds),
        run_seconds,
        generated_tokens_per_second: if run_seconds > 0.0 {
            generated / run_seconds
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_p90() {
        let s = spread((1..=10).map(f64::from).collect());
        assert_eq!(
            s,
            Spread {
                mean: 5.5,
                p90: 9.0
            }
        );
        assert_eq!(spread(vec![]).p90, 0.0);
    }

    fn record(seconds: f64, run_seconds: Option<f64>) -> PredictionRecord {
        PredictionRecord {
            question_id: "1".into(),
            db_id: "d".into(),
            sql: "SELECT 1".into(),
            confidence: 1.0,
            calls: 1,
            prompt_tokens: 10,
            cached_prompt_tokens: 0,
            generated_tokens: 30,
            seconds,
            run_seconds,
        }
    }

    /// Questions in flight together each count their own seconds, which
    /// overlap: the run's throughput comes from its wall time, and a record
    /// from before wall time was kept counts its own seconds.
    #[test]
    fn throughput_is_read_from_the_runs_wall_time() {
        let together = [
            record(6.0, Some(3.0)),
            record(6.0, Some(0.5)),
            record(8.0, Some(2.5)),
        ];
        let cost = cost_summary(&together);
        assert_eq!(cost.seconds.mean, 20.0 / 3.0);
        assert_eq!(cost.run_seconds, 6.0);
        assert_eq!(cost.run_seconds_per_question(), 2.0);
        assert_eq!(cost.questions_per_hour(), 1800.0);
        assert_eq!(cost.generated_tokens_per_second, 15.0);

        let older = cost_summary(&[record(4.0, None), record(2.0, Some(1.0))]);
        assert_eq!(older.run_seconds, 5.0);
        assert_eq!(older.generated_tokens_per_second, 12.0);
    }

    /// A summary written before the run's wall time was kept reads as one
    /// answered a question at a time.
    #[test]
    fn an_older_summary_counts_its_questions_own_seconds() {
        let cost: CostSummary = serde_json::from_str(
            r#"{"questions": 2, "calls": {"mean": 1.0, "p90": 1.0},
                "prompt_tokens_computed": {"mean": 1.0, "p90": 1.0},
                "prompt_tokens_cached": {"mean": 1.0, "p90": 1.0},
                "generated_tokens": {"mean": 1.0, "p90": 1.0},
                "seconds": {"mean": 4.0, "p90": 5.0},
                "generated_tokens_per_second": 3.0}"#,
        )
        .unwrap();
        assert_eq!(cost.run_seconds_per_question(), 4.0);
        assert_eq!(cost.questions_per_hour(), 900.0);
    }

    #[test]
    fn a_line_cut_short_is_dropped_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PREDICTIONS);
        let record = record(0.5, Some(0.25));
        let line = serde_json::to_string(&record).unwrap();
        std::fs::write(&path, format!("{line}\n{}", &line[..line.len() / 2])).unwrap();
        assert_eq!(read_records(&path).unwrap(), vec![record]);
    }

    /// A resumed run rewrites the lines it read: they must come out as
    /// they went in, to the last digit of a time.
    #[test]
    fn records_read_back_are_written_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PREDICTIONS);
        // One from before the run's wall time was kept, one after.
        let text = concat!(
            r#"{"question_id":"1","db_id":"d","sql":"SELECT 1","confidence":1.0,"calls":1,"prompt_tokens":620,"cached_prompt_tokens":512,"generated_tokens":5,"seconds":1.5720883350000001}"#,
            "\n",
            r#"{"question_id":"2","db_id":"d","sql":"SELECT 2","confidence":1.0,"calls":1,"prompt_tokens":620,"cached_prompt_tokens":512,"generated_tokens":5,"seconds":1.5720883350000001,"run_seconds":0.6092018370000001}"#,
            "\n"
        );
        std::fs::write(&path, text).unwrap();
        write_records(&path, &read_records(&path).unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
}
