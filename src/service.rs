//! What other programs ask of the engine, whichever way they reach it (the
//! HTTP server, the MCP server): databases registered once by name, one
//! model shared by every question, and four operations (list the
//! databases, describe one, run a guarded read query, answer a question).

use crate::db::{render_schema, ExecConfig, Executor, IntrospectOptions, QueryResult, Schema};
use crate::llm::LanguageModel;
use crate::search::mcts::RolloutProgress;
use crate::search::{check_question, Answer, Engine, Method, SearchConfig};
use crate::trace::{Cost, Trace};
use crate::{Error, Result};
use lru::LruCache;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest budget (samples or rollouts) a request may ask for: beyond
/// it a single question could hold the shared model for an hour on a CPU.
pub const MAX_BUDGET: usize = 64;

/// Characters of rendered schema a description holds at most.
const SCHEMA_CHARS: usize = 16_000;

/// Engines kept ready (each holds a database's schema, name constraint and
/// indexes for one method and budget).
const ENGINES_KEPT: usize = 16;

/// How a question is answered, as requests name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MethodName {
    Greedy,
    Sc,
    Iesr,
    Read,
}

impl MethodName {
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "greedy" => Ok(MethodName::Greedy),
            "sc" => Ok(MethodName::Sc),
            "iesr" => Ok(MethodName::Iesr),
            "read" => Ok(MethodName::Read),
            other => Err(Error::InvalidArgument(format!(
                "unknown method `{other}`; use greedy, sc, iesr or read"
            ))),
        }
    }
}

/// A question for one registered database.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The registered database's name.
    pub db: String,
    pub question: String,
    #[serde(default)]
    pub hint: Option<String>,
    /// The server's default method when absent.
    #[serde(default)]
    pub method: Option<MethodName>,
    /// Samples (sc) or rollouts (iesr); the server's default when absent.
    #[serde(default)]
    pub budget: Option<usize>,
    /// Return the whole trace (every call, candidate and score).
    #[serde(default)]
    pub trace: bool,
}

/// The answer as other programs receive it.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerView {
    pub db: String,
    pub question: String,
    pub method: MethodName,
    pub budget: Option<usize>,
    /// The chosen query; None when no candidate held one.
    pub sql: Option<String>,
    /// Its result: columns, the first rows, how many rows in all.
    pub result: Option<Arc<QueryResult>>,
    /// Why the chosen query failed, when it did.
    pub error: Option<String>,
    pub confidence: f64,
    pub cost: Cost,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}

/// One registered database.
#[derive(Debug, Clone, Serialize)]
pub struct DatabaseInfo {
    pub name: String,
    pub path: PathBuf,
    pub tables: Vec<String>,
}

/// A database's schema: as the model sees it, and as data.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaView {
    pub db: String,
    /// Annotated CREATE TABLE text (types, keys, example values).
    pub ddl: String,
    pub schema: Schema,
}

struct Registered {
    info: DatabaseInfo,
    schema: Schema,
    executor: Executor,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct EngineKey {
    db: String,
    method: MethodName,
    budget: Option<usize>,
}

/// The registered databases and the shared model.
pub struct Service {
    databases: BTreeMap<String, Registered>,
    model: Arc<dyn LanguageModel>,
    judge: Option<Arc<dyn LanguageModel>>,
    /// Settings of every question; a request picks the method and budget.
    base: SearchConfig,
    /// What a request for sc draws when it names no budget.
    sc: ScSettings,
    default_method: MethodName,
    engines: Mutex<LruCache<EngineKey, Arc<Engine>>>,
    /// Held while a question is answered: the model is one CPU or GPU
    /// resource, so whoever calls (the HTTP queue, the MCP tools) answers
    /// one question at a time.
    model_turn: Mutex<()>,
}

/// The runtime `iesr serve` and `iesr mcp` run on: two workers, since
/// their own work (parsing, framing) is small beside the answers'.
pub(crate) fn server_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Server(format!("cannot start the server's runtime: {e}")))
}

/// sc's samples and temperature, whatever the server's default method.
#[derive(Debug, Clone, Copy)]
pub struct ScSettings {
    pub samples: usize,
    pub temperature: f32,
}

impl Default for ScSettings {
    /// Eight samples at the default temperature.
    fn default() -> Self {
        ScSettings {
            samples: 8,
            temperature: crate::search::DEFAULT_SC_TEMPERATURE,
        }
    }
}

impl Service {
    /// Registers `databases` (name, path), each opened read-only and
    /// introspected now, so that a bad path fails at start.
    pub fn new(
        databases: &[(String, PathBuf)],
        model: Arc<dyn LanguageModel>,
        judge: Option<Arc<dyn LanguageModel>>,
        base: SearchConfig,
        sc: ScSettings,
    ) -> Result<Self> {
        check_databases(databases)?;
        let mut registered = BTreeMap::new();
        for (name, path) in databases {
            registered.insert(name.clone(), Registered::open(name, path, &base.exec)?);
        }
        let default_method = match base.method {
            Method::Greedy => MethodName::Greedy,
            Method::SelfConsistency { .. } => MethodName::Sc,
            Method::Iesr => MethodName::Iesr,
            Method::Read => MethodName::Read,
        };
        Ok(Service {
            databases: registered,
            model,
            judge,
            base,
            sc,
            default_method,
            engines: Mutex::new(LruCache::new(
                NonZeroUsize::new(ENGINES_KEPT).expect("non-zero"),
            )),
            model_turn: Mutex::new(()),
        })
    }

    pub fn model_name(&self) -> &str {
        self.model.name()
    }

    pub fn databases(&self) -> Vec<DatabaseInfo> {
        self.databases.values().map(|r| r.info.clone()).collect()
    }

    pub fn schema(&self, db: &str) -> Result<SchemaView> {
        let registered = self.database(db)?;
        Ok(SchemaView {
            db: db.to_string(),
            ddl: render_schema(&registered.schema, SCHEMA_CHARS),
            schema: registered.schema.clone(),
        })
    }

    /// Runs one guarded read query (the engine's time, row and memory
    /// limits; at most `max_rows` rows returned).
    pub fn sql(&self, db: &str, sql: &str, max_rows: usize) -> Result<QueryResult> {
        let result = self.database(db)?.executor.query(sql)?;
        let mut result = QueryResult::clone(&result);
        result.rows.truncate(max_rows);
        Ok(result)
    }

    /// Checks a request without running it: the database exists, the
    /// question is not empty, the budget is in range.
    pub fn check(&self, request: &AnswerRequest) -> Result<()> {
        self.database(&request.db)?;
        check_question(&request.question)?;
        if let Some(budget) = request.budget {
            if !(1..=MAX_BUDGET).contains(&budget) {
                return Err(Error::InvalidArgument(format!(
                    "budget {budget} is out of range; ask for 1 to {MAX_BUDGET} samples or rollouts"
                )));
            }
        }
        Ok(())
    }

    /// Answers one question; `on_rollout` hears of each finished rollout
    /// of the tree search.
    pub fn answer(
        &self,
        request: &AnswerRequest,
        on_rollout: &mut dyn FnMut(RolloutProgress),
    ) -> Result<AnswerView> {
        self.check(request)?;
        let method = request.method.unwrap_or(self.default_method);
        let key = EngineKey {
            db: request.db.clone(),
            method,
            budget: match method {
                MethodName::Sc | MethodName::Iesr => request.budget,
                MethodName::Greedy | MethodName::Read => None,
            },
        };
        let engine = self.engine(&key)?;
        let _turn = self.model_turn.lock().unwrap_or_else(|e| e.into_inner());
        let answer =
            engine.answer_with_progress(&request.question, request.hint.as_deref(), on_rollout)?;
        Ok(view(request, method, key.budget, answer))
    }

    fn database(&self, name: &str) -> Result<&Registered> {
        self.databases.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.databases.keys().map(String::as_str).collect();
            Error::UnknownDatabase(format!(
                "no database named `{name}`; registered: {}",
                known.join(", ")
            ))
        })
    }

    /// The engine for a database, method and budget, built on first use.
    fn engine(&self, key: &EngineKey) -> Result<Arc<Engine>> {
        if let Some(engine) = self.engines.lock().expect("engines lock").get(key) {
            return Ok(Arc::clone(engine));
        }
        let path = &self.database(&key.db)?.info.path;
        let mut engine = Engine::new(Arc::clone(&self.model), path, self.config(key))?;
        if let Some(judge) = &self.judge {
            engine = engine.with_discriminator(Arc::clone(judge));
        }
        let engine = Arc::new(engine);
        self.engines
            .lock()
            .expect("engines lock")
            .put(key.clone(), Arc::clone(&engine));
        Ok(engine)
    }

    /// The server's settings with the request's method and budget.
    fn config(&self, key: &EngineKey) -> SearchConfig {
        method_config(&self.base, key.method, key.budget, self.sc)
    }
}

/// The mean log-probability per token from which greedy's query answers
/// alone in the default search on a CPU.
pub const CPU_GREEDY_CONFIDENCE: f64 = -0.1;

/// Makes `config` the answer given when no method is named: the guided
/// search. On a CPU greedy's query answers alone when the model is sure of
/// it (unless a threshold is already set), which keeps the search near
/// 15 s a question there; at that cost it answered the most Spider
/// questions measured (docs/results.md).
pub fn default_answering(config: &mut SearchConfig, gpu_class: bool) {
    config.method = Method::Iesr;
    let mcts = &mut config.iesr.mcts;
    if !gpu_class && mcts.greedy_confidence.is_none() {
        mcts.greedy_confidence = Some(CPU_GREEDY_CONFIDENCE);
    }
}

/// `base` with `method` and its budget (sc's samples, the search's
/// rollouts; the defaults when None).
pub fn method_config(
    base: &SearchConfig,
    method: MethodName,
    budget: Option<usize>,
    sc: ScSettings,
) -> SearchConfig {
    let mut config = base.clone();
    config.method = match method {
        MethodName::Greedy => Method::Greedy,
        MethodName::Read => Method::Read,
        MethodName::Iesr => Method::Iesr,
        MethodName::Sc => Method::SelfConsistency {
            samples: budget.unwrap_or(sc.samples),
            temperature: sc.temperature,
        },
    };
    if let (MethodName::Iesr, Some(rollouts)) = (method, budget) {
        config.iesr.mcts.rollouts = rollouts;
    }
    config
}

impl Registered {
    fn open(name: &str, path: &Path, exec: &ExecConfig) -> Result<Self> {
        let executor = Executor::open(path, exec.clone())?;
        let schema = Schema::load(path, &IntrospectOptions::default())?;
        let tables = schema.tables.iter().map(|t| t.name.clone()).collect();
        Ok(Registered {
            info: DatabaseInfo {
                name: name.to_string(),
                path: path.to_path_buf(),
                tables,
            },
            schema,
            executor,
        })
    }
}

fn view(
    request: &AnswerRequest,
    method: MethodName,
    budget: Option<usize>,
    answer: Answer,
) -> AnswerView {
    AnswerView {
        db: request.db.clone(),
        question: request.question.clone(),
        method,
        budget,
        sql: answer.sql,
        result: answer.result,
        error: answer.error,
        confidence: answer.confidence,
        cost: answer.trace.cost.clone(),
        trace: request.trace.then_some(answer.trace),
    }
}

/// Checks the databases to register without loading anything: at least
/// one, names well formed and distinct, each file a database that opens
/// read-only.
pub fn check_databases(databases: &[(String, PathBuf)]) -> Result<()> {
    if databases.is_empty() {
        return Err(Error::InvalidArgument(
            "no database registered; pass --db NAME=PATH (repeatable)".into(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (name, path) in databases {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(Error::InvalidArgument(format!(
                "database name `{name}` may hold only letters, digits, `_`, `-` and `.`"
            )));
        }
        if !seen.insert(name) {
            return Err(Error::InvalidArgument(format!(
                "database name `{name}` is given twice; give each --db its own NAME="
            )));
        }
        crate::db::open::open_read_only(path)?;
    }
    Ok(())
}

/// Splits a `--db` argument: `NAME=PATH`, or a bare path named after its
/// file (`music.sqlite` -> `music`).
pub fn parse_database_arg(arg: &str) -> Result<(String, PathBuf)> {
    if let Some((name, path)) = arg.split_once('=') {
        return Ok((name.to_string(), PathBuf::from(path)));
    }
    let path = PathBuf::from(arg);
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .ok_or_else(|| {
            Error::InvalidArgument(format!("--db {arg}: give NAME=PATH or a file path"))
        })?;
    Ok((name, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_answer_is_the_search_and_on_a_cpu_lets_a_sure_greedy_query_answer() {
        let mut cpu = SearchConfig::default();
        default_answering(&mut cpu, false);
        assert!(matches!(cpu.method, Method::Iesr));
        assert_eq!(cpu.iesr.mcts.greedy_confidence, Some(CPU_GREEDY_CONFIDENCE));

        let mut gpu = SearchConfig::default();
        default_answering(&mut gpu, true);
        assert!(matches!(gpu.method, Method::Iesr));
        assert_eq!(gpu.iesr.mcts.greedy_confidence, None);

        // A threshold the user set stays.
        let mut set = SearchConfig::default();
        set.iesr.mcts.greedy_confidence = Some(-0.3);
        default_answering(&mut set, false);
        assert_eq!(set.iesr.mcts.greedy_confidence, Some(-0.3));
    }
}
