//! Runs spread over machines: `iesr bench --shard K/N` answers every N-th
//! question (the K-th of each N, in the dataset's order), and `iesr merge`
//! joins the N shard folders of one run into a folder that reads as the
//! unsharded run: its predictions, traces and a summary scored afresh.

use super::bench::{
    cost_summary, read_records, read_summary, write_records, BenchSummary, PredictionRecord,
};
use super::dataset::{Example, LoadedDataset};
use super::predictions::Predictions;
use super::score::{score, EvalOptions};
use crate::error::{Error, Result};
use crate::search::Variant;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The K-th of N shards (1-based), written `K/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The shard's questions: those at positions K-1, K-1+N, K-1+2N, ...
    pub fn select(&self, examples: Vec<Example>) -> Vec<Example> {
        examples
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.count == self.index - 1)
            .map(|(_, e)| e)
            .collect()
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let bad = || format!("`{text}` is not a shard; write K/N with 1 <= K <= N, as 2/4");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl TryFrom<String> for Shard {
    type Error = String;

    fn try_from(text: String) -> std::result::Result<Self, String> {
        text.parse()
    }
}

impl From<Shard> for String {
    fn from(shard: Shard) -> String {
        shard.to_string()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a shard folder's summary says of the run it belongs to.
#[derive(Deserialize)]
struct ShardHead {
    build: String,
    model: String,
    variant: Variant,
    seed: u64,
    shard: Option<Shard>,
}

/// A shard folder, read.
struct ShardRun {
    dir: PathBuf,
    head: ShardHead,
    records: Vec<PredictionRecord>,
}

fn read_shard(dir: &Path) -> Result<ShardRun> {
    let head: ShardHead = read_summary(dir)?;
    let records = read_records(&dir.join(super::bench::PREDICTIONS))?;
    Ok(ShardRun {
        dir: dir.to_path_buf(),
        head,
        records,
    })
}

/// Refuses shards of different runs, a shard given twice or missing, and
/// an unsharded folder.
fn check_shards(shards: &[ShardRun]) -> Result<()> {
    let first = &shards[0];
    let count = first.head.shard.map_or(0, |s| s.count);
    let mut seen: Vec<Shard> = Vec::new();
    for run in shards {
        let shard = run.head.shard.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} is not a shard (its run had no --shard)",
                run.dir.display()
            ))
        })?;
        let differs = [
            ("build", run.head.build != first.head.build),
            ("model", run.head.model != first.head.model),
            (
                "method and settings",
                run.head.variant != first.head.variant,
            ),
            ("seed", run.head.seed != first.head.seed),
            ("shard count", shard.count != count),
        ];
        if let Some((what, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(Error::InvalidArgument(format!(
                "{} and {} differ in {what}; merge only the {count} shards of one run",
                first.dir.display(),
                run.dir.display(),
            )));
        }
        if seen.contains(&shard) {
            return Err(Error::InvalidArgument(format!(
                "shard {shard} is given twice ({}); pass each shard's folder once",
                run.dir.display()
            )));
        }
        seen.push(shard);
    }
    match (1..=count).find(|&index| !seen.contains(&Shard { index, count })) {
        Some(index) => Err(Error::InvalidArgument(format!(
            "shard {index}/{count} is missing; pass the folder of every shard of the run"
        ))),
        None => Ok(()),
    }
}

/// Joins the shard folders of one run into `out` (which must not hold a
/// run yet) and scores the whole dataset, as `iesr bench` would have.
pub fn merge(dataset: &LoadedDataset, shard_dirs: &[PathBuf], out: &Path) -> Result<BenchSummary> {
    if shard_dirs.is_empty() {
        return Err(Error::InvalidArgument(
            "no shard folders given; pass the --out folder of every `iesr bench --shard K/N` run"
                .into(),
        ));
    }
    let shards = shard_dirs
        .iter()
        .map(|d| read_shard(d))
        .collect::<Result<Vec<_>>>()?;
    check_shards(&shards)?;

    let mut by_question: HashMap<&str, (&PredictionRecord, &Path)> = HashMap::new();
    for run in &shards {
        for record in &run.records {
            if by_question
                .insert(&record.question_id, (record, &run.dir))
                .is_some()
            {
                return Err(Error::InvalidArgument(format!(
                    "question {} is answered in two shards; merge the shards of one run",
                    record.question_id
                )));
            }
        }
    }
    let predictions_path = out.join(super::bench::PREDICTIONS);
    if predictions_path.exists() {
        return Err(Error::InvalidArgument(format!(
            "{} already holds a run; choose another --out",
            out.display()
        )));
    }
    let traces = out.join("traces");
    std::fs::create_dir_all(&traces).map_err(|e| Error::write(&traces, e))?;
    // In the dataset's order, as an unsharded run writes them.
    let mut merged = Vec::with_capacity(by_question.len());
    for example in &dataset.examples {
        let Some((record, dir)) = by_question.get(example.question_id.as_str()) else {
            continue;
        };
        let name = format!("{}.json", example.question_id);
        let from = dir.join("traces").join(&name);
        if from.is_file() {
            std::fs::copy(&from, traces.join(&name)).map_err(|e| Error::write(&traces, e))?;
        }
        merged.push((*record).clone());
    }
    write_records(&predictions_path, &merged)?;

    let predictions = Predictions::Sql(
        merged
            .iter()
            .map(|r| (r.question_id.clone(), r.sql.clone()))
            .collect(),
    );
    let head = &shards[0].head;
    let summary = BenchSummary {
        build: head.build.clone(),
        model: head.model.clone(),
        variant: head.variant.clone(),
        seed: head.seed,
        shard: None,
        report: score(dataset, &predictions, &EvalOptions::default())?,
        cost: cost_summary(&merged),
    };
    super::bench::write_summary(out, &summary)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_written_k_of_n() {
        let shard: Shard = "2/3".parse().unwrap();
        assert_eq!(shard, Shard { index: 2, count: 3 });
        assert_eq!(shard.to_string(), "2/3");
        for bad in ["0/3", "4/3", "2", "a/b", "1/0"] {
            let error = bad.parse::<Shard>().unwrap_err();
            assert!(error.contains("K/N"), "{bad}: {error}");
        }
    }
}
