//! A run's sampled queries put through this build's repairs again, without
//! the model: how many more would run. Each sample is the query in its
//! recorded reply (a tree node's, or an sc or greedy candidate's), executed
//! and fixed as the engine does; what changes downstream (the search's
//! later steps, the vote) is not replayed.
//!
//! Usage: cargo run --release --example replay_repairs -- [--failing] RUN_DIR...
//! (from the folder the run was made in: traces name databases by the path
//! the run was given). Prints per run the samples, how many ran when
//! recorded and how many run now, then each sample whose verdict changed;
//! with `--failing`, also each sample that fails now, with its query as
//! last fixed and SQLite's error.

use iesr::db::{ExecConfig, Executor, IntrospectOptions, PlainNames, Schema};
use iesr::search::extract::extract_sql;
use iesr::search::repair::{asked, SchemaNames};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One sample: the reply it was read from and whether it ran when recorded.
struct Sample {
    reply: String,
    ran: bool,
}

/// The repairs and executor of one database, built once for all its traces.
struct Database {
    names: SchemaNames,
    executor: Executor,
}

impl Database {
    fn open(path: &Path) -> Result<Self, String> {
        let schema =
            Schema::load(path, &IntrospectOptions::default()).map_err(|e| e.to_string())?;
        let (plain, schema) = PlainNames::seen_by_model(schema);
        let executor = Executor::open(path, ExecConfig::default())
            .map_err(|e| e.to_string())?
            .with_plain_names(plain);
        Ok(Database {
            names: SchemaNames::of(&schema),
            executor,
        })
    }

    /// The query in `reply` as fixed now, and SQLite's error when it still
    /// fails (a reply holding no query fails with none).
    fn replay(&self, reply: &str, asked: &str) -> (String, Option<String>) {
        let Some(sql) = extract_sql(reply) else {
            return (String::new(), Some("no query in the reply".into()));
        };
        // A reply the token limit cut has no closing fence; SQLite says
        // "incomplete input" for most of them, which the repairs read too.
        let cut = !reply.trim_end().ends_with("```");
        let (sql, outcome) = self.names.query_or_fix(&self.executor, &sql, cut, asked);
        (sql, outcome.err().map(|e| e.to_string()))
    }
}

fn samples(trace: &Value) -> Vec<Sample> {
    let ran = |record: &Value| record["execution"]["status"] == "ok";
    let reply = |record: &Value, key: &str| record[key].as_str().map(str::to_string);
    if trace["method"] == "Iesr" {
        let tree = trace["tree"].as_array().cloned().unwrap_or_default();
        tree.iter()
            .filter(|node| !node["sql"].is_null())
            .filter_map(|node| {
                Some(Sample {
                    reply: reply(node, "output")?,
                    ran: ran(node),
                })
            })
            .collect()
    } else {
        let candidates = trace["candidates"].as_array().cloned().unwrap_or_default();
        candidates
            .iter()
            .map(|c| Sample {
                reply: reply(c, "output")
                    .or_else(|| reply(c, "sql").map(|sql| format!("```sql\n{sql}\n```")))
                    .unwrap_or_default(),
                ran: ran(c),
            })
            .collect()
    }
}

fn replay(
    run: &Path,
    databases: &mut HashMap<PathBuf, Database>,
    failing: bool,
) -> Result<(), String> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(run.join("traces"))
        .map_err(|e| format!("{}: {e}", run.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    traces.sort();
    let (mut total, mut ran_then, mut ran_now) = (0, 0, 0);
    let (mut changed, mut failures) = (Vec::new(), Vec::new());
    for path in traces {
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        let trace: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let db_path = PathBuf::from(trace["database"].as_str().unwrap_or_default());
        if !databases.contains_key(&db_path) {
            databases.insert(db_path.clone(), Database::open(&db_path)?);
        }
        let db = &databases[&db_path];
        let asked = asked(
            trace["question"].as_str().unwrap_or_default(),
            trace["hint"].as_str(),
        );
        for (i, sample) in samples(&trace).iter().enumerate() {
            let (sql, error) = db.replay(&sample.reply, &asked);
            let now = error.is_none();
            total += 1;
            ran_then += usize::from(sample.ran);
            ran_now += usize::from(now);
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if now != sample.ran {
                let verdict = if now { "now runs" } else { "now fails" };
                changed.push(format!("  {name} sample {i}: {verdict}"));
            }
            if let Some(error) = error.filter(|_| failing) {
                failures.push(format!("## {name} sample {i}: {error}\n{sql}\n"));
            }
        }
    }
    let share = |n: usize| 100.0 * n as f64 / total.max(1) as f64;
    println!(
        "{}\t{total} samples\tran {ran_then} ({:.1}%)\trun now {ran_now} ({:.1}%)",
        run.display(),
        share(ran_then),
        share(ran_now)
    );
    changed
        .iter()
        .chain(&failures)
        .for_each(|line| println!("{line}"));
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let failing = args.iter().any(|a| a == "--failing");
    let runs: Vec<PathBuf> = args
        .iter()
        .filter(|a| *a != "--failing")
        .map(PathBuf::from)
        .collect();
    if runs.is_empty() {
        eprintln!("error: no run folder given; usage: replay_repairs [--failing] RUN_DIR...");
        std::process::exit(1);
    }
    let mut databases = HashMap::new();
    for run in &runs {
        if let Err(e) = replay(run, &mut databases, failing) {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
