//! Readers for the benchmark formats: LogicCat, Spider and BIRD dev sets, as
//! laid out in their public releases.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    /// `dev.json` + `databases/<db>/<db>.sqlite`.
    Logiccat,
    /// `dev.json` + `database/<db>/<db>.sqlite`.
    Spider,
    /// `dev.json` (evidence used as the hint) + `dev_databases/<db>/<db>.sqlite`.
    Bird,
    /// `data/random-split-1-dev.tsv` + `csv/<folder>/<n>.csv`: questions
    /// over one table each, scored by denotation (the answer's values).
    #[value(name = "wikitablequestions", alias = "wtq")]
    Wikitablequestions,
    /// `qa_dev_{1,2,3}hop.txt` over `kb.txt`, the questions of
    /// `reproducible_dev_indices.json`: each question's subgraph around its
    /// `[topic]` becomes its database; scored by Hits@1.
    Metaqa,
    /// `TableBench.jsonl`, its fact-checking and numerical-reasoning
    /// questions: each inline table becomes its database; scored by
    /// denotation with numbers equal within 1%.
    Tablebench,
}

impl DatasetKind {
    /// Whether the questions are asked of tables or a graph, whose data
    /// holds every answer (an empty result is never right).
    pub fn asks_of_tables_or_graphs(self) -> bool {
        matches!(
            self,
            DatasetKind::Wikitablequestions | DatasetKind::Metaqa | DatasetKind::Tablebench
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Every question in `dev.json`.
    #[default]
    All,
    /// LogicCat's published 500-question subset (`in_mini500`).
    Mini500,
    /// BIRD's mini-dev questions (`mini_dev_sqlite.json`).
    Minidev,
    /// TableBench's development half: rows whose sha256(id), read as a
    /// number, is odd.
    Dev,
    /// TableBench's other half, kept for held-out measurement.
    #[value(name = "held-out")]
    HeldOut,
    /// WikiTableQuestions' training questions (`data/training.tsv`), for
    /// building a demonstration store.
    Train,
}

/// What a benchmark counts as right.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gold {
    /// A query whose result the prediction's must equal.
    Sql(String),
    /// The values of the answer (table QA), compared by denotation;
    /// numbers equal within `tolerance`, relative (0: exactly).
    Answers { values: Vec<String>, tolerance: f64 },
    /// Acceptable answers (knowledge-graph QA): right when the first value
    /// returned is one of them (Hits@1).
    AnyOf(Vec<String>),
}

/// One benchmark question with its gold query or answer.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    pub question_id: String,
    pub db_id: String,
    pub db_path: PathBuf,
    pub question: String,
    pub hint: Option<String>,
    pub gold: Gold,
    /// BIRD difficulty or LogicCat type, for breakdowns.
    pub group: Option<String>,
}

/// Which questions to keep.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub split: Split,
    /// Only questions on this database.
    pub db: Option<String>,
    /// Only these question ids (a fixed evaluation subset).
    pub subset: Option<std::collections::HashSet<String>>,
    /// At most this many questions (after the other filters).
    pub limit: Option<usize>,
    /// A seeded share of the questions (after `db` and `subset`, before
    /// their databases are made, so that a sample of a large table or
    /// graph benchmark makes only its own).
    pub sample: Option<Sample>,
}

/// A share of a dataset's questions, picked by a seeded hash of their ids.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub fraction: f64,
    pub seed: u64,
}

impl Sample {
    /// `fraction` of `examples` (at least one), in their order.
    pub fn take(&self, examples: Vec<Example>) -> Vec<Example> {
        let wanted = ((examples.len() as f64 * self.fraction).ceil() as usize).max(1);
        let mut keyed: Vec<(Vec<u8>, usize)> = examples
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let key = format!("{}:{}", self.seed, e.question_id);
                (Sha256::digest(key).to_vec(), i)
            })
            .collect();
        keyed.sort();
        let mut chosen = vec![false; examples.len()];
        for (_, i) in keyed.into_iter().take(wanted) {
            chosen[i] = true;
        }
        examples
            .into_iter()
            .zip(chosen)
            .filter_map(|(e, keep)| keep.then_some(e))
            .collect()
    }
}

/// Reads a subset file of `../shared/datasets/subsets/`: a JSON object with
/// `question_ids` (LogicCat, BIRD) or `indices` (0-based positions in
/// Spider's dev.json, which are its question ids here).
pub fn read_subset(path: &Path) -> Result<std::collections::HashSet<String>> {
    let value: serde_json::Value = read_json(path)?;
    let ids = value
        .get("question_ids")
        .or_else(|| value.get("indices"))
        .and_then(|v| v.as_array())
        .ok_or_else(|| Error::Dataset {
            path: path.to_path_buf(),
            detail: "no `question_ids` or `indices` list".into(),
        })?;
    Ok(ids
        .iter()
        .map(|v| v.to_string().trim_matches('"').to_string())
        .collect())
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadedDataset {
    pub kind: DatasetKind,
    pub split: Split,
    pub examples: Vec<Example>,
    /// Questions left out because their database file is not there, by db.
    pub skipped_missing_db: BTreeMap<String, usize>,
}

impl LoadedDataset {
    pub fn skipped(&self) -> usize {
        self.skipped_missing_db.values().sum()
    }
}

#[derive(Deserialize)]
struct LogicCatRecord {
    question_id: u64,
    db_id: String,
    question: String,
    query: String,
    #[serde(rename = "type")]
    kind: String,
    in_mini500: bool,
}

#[derive(Deserialize)]
struct SpiderRecord {
    db_id: String,
    question: String,
    query: String,
}

#[derive(Deserialize)]
struct BirdRecord {
    question_id: u64,
    db_id: String,
    question: String,
    #[serde(default)]
    evidence: String,
    #[serde(rename = "SQL")]
    sql: String,
    #[serde(default)]
    difficulty: Option<String>,
}

/// Reads a dataset from its folder and applies the filters.
pub fn load(kind: DatasetKind, data_dir: &Path, filters: &Filters) -> Result<LoadedDataset> {
    let owner = match filters.split {
        Split::All => None,
        Split::Mini500 => Some((DatasetKind::Logiccat, "mini500", "logiccat")),
        Split::Minidev => Some((DatasetKind::Bird, "minidev", "bird")),
        Split::Dev => Some((DatasetKind::Tablebench, "dev", "tablebench")),
        Split::HeldOut => Some((DatasetKind::Tablebench, "held-out", "tablebench")),
        Split::Train => Some((
            DatasetKind::Wikitablequestions,
            "train",
            "wikitablequestions",
        )),
    };
    // A split belongs to one dataset.
    if let Some((owner, name, owner_name)) = owner {
        if owner != kind {
            return Err(Error::InvalidArgument(format!(
                "--split {name} applies only to {owner_name}; use --split all"
            )));
        }
    }
    let examples: Vec<Example> = match kind {
        DatasetKind::Logiccat => {
            let records: Vec<LogicCatRecord> = read_json(&data_dir.join("dev.json"))?;
            let mut records: Vec<_> = records
                .into_iter()
                .filter(|r| filters.split == Split::All || r.in_mini500)
                .collect();
            records.sort_by_key(|r| r.question_id);
            records
                .into_iter()
                .map(|r| Example {
                    question_id: r.question_id.to_string(),
                    db_path: db_file(data_dir, "databases", &r.db_id),
                    db_id: r.db_id,
                    question: r.question,
                    hint: None,
                    gold: Gold::Sql(r.query),
                    group: Some(format!("type {}", r.kind)),
                })
                .collect()
        }
        DatasetKind::Spider => {
            let records: Vec<SpiderRecord> = read_json(&data_dir.join("dev.json"))?;
            records
                .into_iter()
                .enumerate()
                .map(|(i, r)| Example {
                    question_id: i.to_string(),
                    db_path: db_file(data_dir, "database", &r.db_id),
                    db_id: r.db_id,
                    question: r.question,
                    hint: None,
                    gold: Gold::Sql(r.query),
                    group: None,
                })
                .collect()
        }
        DatasetKind::Bird => {
            let file = if filters.split == Split::Minidev {
                "mini_dev_sqlite.json"
            } else {
                "dev.json"
            };
            let records: Vec<BirdRecord> = read_json(&data_dir.join(file))?;
            records
                .into_iter()
                .map(|r| Example {
                    question_id: r.question_id.to_string(),
                    db_path: db_file(data_dir, "dev_databases", &r.db_id),
                    db_id: r.db_id,
                    question: r.question,
                    hint: Some(r.evidence).filter(|e| !e.trim().is_empty()),
                    gold: Gold::Sql(r.sql),
                    group: r.difficulty,
                })
                .collect()
        }
        DatasetKind::Wikitablequestions => read_wikitablequestions(data_dir, filters.split)?,
        DatasetKind::Metaqa => read_metaqa(data_dir)?,
        DatasetKind::Tablebench => read_tablebench(data_dir, filters.split)?,
    };
    let examples: Vec<Example> = examples
        .into_iter()
        .filter(|e| filters.db.as_deref().is_none_or(|db| db == e.db_id))
        .filter(|e| {
            filters
                .subset
                .as_ref()
                .is_none_or(|ids| ids.contains(&e.question_id))
        })
        .collect();
    let examples = match filters.sample {
        Some(sample) => sample.take(examples),
        None => examples,
    };
    let mut skipped_missing_db = BTreeMap::new();
    let mut kept = Vec::new();
    // A MetaQA question's database is its subgraph, cut once it is kept.
    let graph = (kind == DatasetKind::Metaqa)
        .then(|| crate::sources::graph::Graph::open(&data_dir.join("kb.txt")))
        .transpose()?;
    for example in examples {
        if !example.db_path.is_file() {
            *skipped_missing_db.entry(example.db_id.clone()).or_insert(0) += 1;
            continue;
        }
        kept.push(example);
    }
    if let Some(limit) = filters.limit {
        kept.truncate(limit);
    }
    if let Some(graph) = &graph {
        for example in &mut kept {
            // The group is `<hops>-hop`.
            let hops = example
                .group
                .as_deref()
                .and_then(|g| g.split_once('-'))
                .and_then(|(h, _)| h.parse().ok())
                .unwrap_or(2);
            example.db_path = graph.subgraph_database(
                std::slice::from_ref(&example.db_id),
                hops,
                &example.question,
            )?;
        }
    }
    if kind == DatasetKind::Wikitablequestions {
        // Each kept question's table becomes its (cached) database; a table
        // that cannot be read skips its questions, counted as missing.
        kept.retain_mut(|example| {
            match crate::sources::database_for_tables(std::slice::from_ref(&example.db_path)) {
                Ok(db) => {
                    example.db_path = db;
                    true
                }
                Err(_) => {
                    *skipped_missing_db.entry(example.db_id.clone()).or_insert(0) += 1;
                    false
                }
            }
        });
    }
    Ok(LoadedDataset {
        kind,
        split: filters.split,
        examples: kept,
        skipped_missing_db,
    })
}

/// WikiTableQuestions' random split 1 dev questions (or with `Split::Train`
/// the training questions, which include them): `id`, `utterance`,
/// `context` (the table's path) and `targetValue` (values separated by `|`,
/// with `\p`, `\n` and `\\` escaping a pipe, a newline and a backslash).
fn read_wikitablequestions(data_dir: &Path, split: Split) -> Result<Vec<Example>> {
    let file = match split {
        Split::Train => "data/training.tsv",
        _ => "data/random-split-1-dev.tsv",
    };
    let path = data_dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Dataset {
        path: path.clone(),
        detail: format!("{e}; check --data-dir"),
    })?;
    text.lines()
        .enumerate()
        .skip(1)
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let fields: Vec<&str> = line.split('\t').collect();
            let [id, question, context, target] = fields[..] else {
                return Err(Error::Dataset {
                    path: path.clone(),
                    detail: format!("line {} does not have 4 tab-separated fields", i + 1),
                });
            };
            Ok(Example {
                question_id: id.to_string(),
                db_id: context.to_string(),
                db_path: data_dir.join(context),
                question: unescape_wtq(question),
                hint: None,
                gold: Gold::Answers {
                    values: target.split('|').map(unescape_wtq).collect(),
                    tolerance: 0.0,
                },
                group: None,
            })
        })
        .collect()
}

/// MetaQA's dev questions of 1, 2 and 3 hops that its knowledge base
/// reproduces: `question with [topic]<TAB>answer|answer`. The id is
/// `<hops>-<line index>`, the database id the topic, the group `<hops>-hop`;
/// the database path is the knowledge base until the subgraph is cut.
fn read_metaqa(data_dir: &Path) -> Result<Vec<Example>> {
    let indices_path = data_dir.join("reproducible_dev_indices.json");
    let indices: BTreeMap<String, Vec<usize>> = read_json(&indices_path)?;
    let mut examples = Vec::new();
    for hops in 1..=3 {
        let path = data_dir.join(format!("qa_dev_{hops}hop.txt"));
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Dataset {
            path: path.clone(),
            detail: format!("{e}; check --data-dir"),
        })?;
        let lines: Vec<&str> = text.lines().collect();
        for &index in indices.get(&format!("dev_{hops}")).into_iter().flatten() {
            let bad = |detail: &str| Error::Dataset {
                path: path.clone(),
                detail: format!("line {}: {detail}", index + 1),
            };
            let line = lines.get(index).ok_or_else(|| bad("no such line"))?;
            let (question, answers) = line.split_once('\t').ok_or_else(|| bad("no tab"))?;
            let topic = question
                .split_once('[')
                .and_then(|(_, rest)| rest.split_once(']'))
                .map(|(topic, _)| topic)
                .ok_or_else(|| bad("no [topic]"))?;
            examples.push(Example {
                question_id: format!("{hops}-{index}"),
                db_id: topic.to_string(),
                db_path: data_dir.join("kb.txt"),
                question: question.replace(['[', ']'], ""),
                hint: None,
                gold: Gold::AnyOf(answers.split('|').map(String::from).collect()),
                group: Some(format!("{hops}-hop")),
            });
        }
    }
    Ok(examples)
}

#[derive(Deserialize)]
struct TableBenchRecord {
    id: String,
    qtype: String,
    table: TableBenchTable,
    question: String,
    answer: String,
}

#[derive(Deserialize)]
struct TableBenchTable {
    columns: Vec<String>,
    data: Vec<Vec<serde_json::Value>>,
}

/// The question types whose answers are values a query can return (the
/// others ask for analyses and charts).
const TABLEBENCH_TYPES: [&str; 2] = ["FactChecking", "NumericalReasoning"];

/// Relative tolerance of TableBench's numeric answers.
const TABLEBENCH_TOLERANCE: f64 = 1e-2;

/// TableBench's fact-checking and numerical-reasoning questions of the
/// split: the id is the record's, the group its type, the database the
/// inline table (built in the cache, named `data`), the gold its answer
/// (values separated by `, `).
fn read_tablebench(data_dir: &Path, split: Split) -> Result<Vec<Example>> {
    let path = data_dir.join("TableBench.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Dataset {
        path: path.clone(),
        detail: format!("{e}; check --data-dir"),
    })?;
    let mut examples = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: TableBenchRecord = serde_json::from_str(line).map_err(|e| Error::Dataset {
            path: path.clone(),
            detail: format!("line {} is not a TableBench record: {e}", i + 1),
        })?;
        let in_split = match split {
            Split::Dev => id_hash_is_odd(&record.id),
            Split::HeldOut => !id_hash_is_odd(&record.id),
            _ => true,
        };
        // The file repeats one record word for word; ids must stay unique.
        if !in_split
            || !TABLEBENCH_TYPES.contains(&record.qtype.as_str())
            || !seen.insert(record.id.clone())
        {
            continue;
        }
        let cell = |value: &serde_json::Value| match value {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        };
        let rows = record
            .table
            .data
            .iter()
            .map(|row| row.iter().map(cell).collect())
            .collect();
        let table = crate::sources::RawTable::from_text(record.table.columns, rows);
        examples.push(Example {
            db_path: crate::sources::database_for_table("data", table)?,
            question_id: record.id.clone(),
            db_id: record.id,
            question: record.question,
            hint: None,
            gold: Gold::Answers {
                values: record.answer.split(", ").map(String::from).collect(),
                tolerance: TABLEBENCH_TOLERANCE,
            },
            group: Some(record.qtype),
        });
    }
    Ok(examples)
}

/// Whether sha256(id), read as a big-endian number, is odd.
fn id_hash_is_odd(id: &str) -> bool {
    use sha2::Digest;
    sha2::Sha256::digest(id.as_bytes())[31] & 1 == 1
}

fn unescape_wtq(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('p') => out.push('|'),
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

fn db_file(data_dir: &Path, folder: &str, db_id: &str) -> PathBuf {
    data_dir
        .join(folder)
        .join(db_id)
        .join(format!("{db_id}.sqlite"))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Dataset {
        path: path.to_path_buf(),
        detail: format!("{e}; check --data-dir"),
    })?;
    serde_json::from_str(&text).map_err(|e| Error::Dataset {
        path: path.to_path_buf(),
        detail: format!("not in the expected format: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(id: usize) -> Example {
        Example {
            question_id: id.to_string(),
            db_id: "db".into(),
            db_path: PathBuf::from("db.sqlite"),
            question: format!("question {id}"),
            hint: None,
            gold: Gold::Sql("SELECT 1".into()),
            group: None,
        }
    }

    #[test]
    fn a_sample_is_the_share_asked_in_dataset_order_and_depends_on_the_seed() {
        let ids = |n: usize, fraction, seed| -> Vec<usize> {
            let examples = (0..n).map(example).collect();
            Sample { fraction, seed }
                .take(examples)
                .iter()
                .map(|e| e.question_id.parse().unwrap())
                .collect()
        };
        let first = ids(200, 0.05, 0);
        assert_eq!(first.len(), 10);
        assert!(first.windows(2).all(|w| w[0] < w[1]), "{first:?}");
        assert_eq!(ids(200, 0.05, 0), first);
        assert_ne!(ids(200, 0.05, 1), first);
        assert_eq!(ids(3, 0.05, 0).len(), 1);
        assert_eq!(ids(0, 0.05, 0).len(), 0);
    }
}
