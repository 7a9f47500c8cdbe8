//! The `iesr` command line: parse arguments, call the library, print.

mod output;

use clap::{Parser, Subcommand};
use iesr::db::{render_schema, ExecConfig, Executor, IntrospectOptions, Schema, Semantics};
use iesr::eval::{self, DatasetKind, EvalOptions, Filters, Predictions, Split};
use iesr::{Error, Result};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "iesr",
    version,
    about = "Answers questions over structured data with verified SQL search"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a database's schema as annotated DDL, as the engine shows it to models.
    Schema {
        /// SQLite database file (opened read-only).
        #[arg(long)]
        db: PathBuf,
        /// Size budget in characters; detail is reduced to fit.
        #[arg(long, default_value_t = 16_000)]
        max_chars: usize,
        /// Print the introspected schema as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Run one read-only query under the engine's guards and print its result.
    Sql {
        /// SQLite database file (opened read-only).
        #[arg(long)]
        db: PathBuf,
        /// The query: a single SELECT or WITH ... SELECT.
        sql: String,
        /// Most rows to print.
        #[arg(long, default_value_t = 100)]
        max_rows: usize,
        /// Time limit for the query, in seconds.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Score predicted SQL against a benchmark's gold SQL by execution accuracy.
    Eval {
        #[arg(long, value_enum)]
        dataset: DatasetKind,
        /// The dataset's folder (holding dev.json and the databases).
        #[arg(long)]
        data_dir: PathBuf,
        /// JSONL file of {"question_id": ..., "sql": ...}, or `gold` to score
        /// the gold SQL against itself.
        #[arg(long)]
        predictions: String,
        #[arg(long, value_enum, default_value_t = Split::All)]
        split: Split,
        /// Only questions on this database id.
        #[arg(long)]
        db: Option<String>,
        /// At most this many questions.
        #[arg(long)]
        limit: Option<usize>,
        /// Comparison rule; BIRD's unless told otherwise.
        #[arg(long, value_enum, default_value_t = Semantics::Bird)]
        semantics: Semantics,
        /// With --semantics spider: keep DISTINCT instead of stripping it.
        #[arg(long)]
        keep_distinct: bool,
        /// Time limit per query, in seconds.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// Print the full report, with every question, as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("error: internal failure ({info}); please report it");
    }));
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn seconds(value: f64, flag: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::InvalidArgument(format!("{flag} must be a positive number of seconds"))
        })
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Schema {
            db,
            max_chars,
            json,
        } => {
            let schema = Schema::load(&db, &IntrospectOptions::default())?;
            if json {
                output::print_json(&schema)
            } else {
                output::print_text(&render_schema(&schema, max_chars))
            }
        }
        Command::Sql {
            db,
            sql,
            max_rows,
            timeout,
            json,
        } => {
            let config = ExecConfig {
                timeout: seconds(timeout, "--timeout")?,
                max_rows,
                ..ExecConfig::default()
            };
            let result = Executor::open(&db, config)?.query(&sql)?;
            if json {
                output::print_json(&*result)
            } else {
                output::print_text(&output::result_table(&result))
            }
        }
        Command::Eval {
            dataset,
            data_dir,
            predictions,
            split,
            db,
            limit,
            semantics,
            keep_distinct,
            timeout,
            json,
        } => {
            let filters = Filters { split, db, limit };
            let loaded = eval::load(dataset, &data_dir, &filters)?;
            let predictions = if predictions == "gold" {
                Predictions::Gold
            } else {
                Predictions::read(&PathBuf::from(predictions))?
            };
            let options = EvalOptions {
                semantics,
                timeout: seconds(timeout, "--timeout")?,
                keep_distinct,
                progress: !json && std::io::stderr().is_terminal(),
            };
            let report = eval::score(&loaded, &predictions, &options)?;
            if json {
                output::print_json(&report)
            } else {
                output::print_text(&output::report_text(&report))
            }
        }
    }
}
