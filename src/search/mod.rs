//! Answering a question: prompt the model, pull SQL out of its answers,
//! execute every candidate, and choose by execution. `greedy` and `sc`
//! (self-consistency) are the baselines the tree search is measured against.

mod annotate;
mod continuation;
mod dates;
pub mod extract;
mod feedback;
mod functions;
mod iesr;
mod json_reading;
pub mod mcts;
mod mentioned_values;
pub mod name_constraint;
mod query_first;
mod read_answer;
pub mod reasoner;
pub mod repair;
mod sql_text;
pub use sql_text::string_literals;
pub mod tree;
mod variant;

use crate::action::ActionSet;
use crate::db::{
    render_schema, ExecConfig, Executor, IntrospectOptions, PlainNames, QueryOutcome, QueryResult,
    Schema,
};
use crate::error::{Error, QueryError, Result};
use crate::llm::constraint::Constraint;
use crate::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use crate::memory::{self, Demonstrations};
use crate::prompts::{SQL_GENERATION_SYSTEM, SQL_GENERATION_USER};
use crate::select::{review, SelectConfig};
use crate::trace::{CallRecord, CandidateRecord, Execution, Trace};
use crate::understand::embedding::ColumnEmbeddings;
use crate::understand::focus;
use crate::understand::linking::{LinkMatch, ValueIndex};
use crate::understand::rules::RuleBase;
use crate::understand::UnderstandConfig;
pub use annotate::Annotation;
use extract::extract_sql;
pub(crate) use feedback::has_value;
pub use feedback::DEFAULT_FEEDBACK_ROUNDS;
use mcts::{MctsConfig, RolloutProgress};
use name_constraint::{NameConstraint, SchemaVocabulary};
pub use read_answer::DEFAULT_READ_CHARS;
use serde::Serialize;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;
pub use variant::Variant;

/// Min-p of sampled queries by default (`SearchConfig::min_p`).
pub const DEFAULT_MIN_P: f32 = 0.0;

/// The temperature of sc's samples by default: every sc figure was
/// measured with it.
pub const DEFAULT_SC_TEMPERATURE: f32 = 0.8;

/// How candidates are produced and chosen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Method {
    /// One SQL-generation call at temperature 0.
    Greedy,
    /// `samples` completions of the same prompt; the largest group of
    /// equal execution results wins.
    SelfConsistency { samples: usize, temperature: f32 },
    /// The full method: understanding, tree search, selection
    /// (configured by [`SearchConfig::iesr`]).
    Iesr,
    /// No SQL: the data goes into the prompt as text (up to
    /// [`SearchConfig::read_chars`]) and one call at temperature 0 answers.
    Read,
}

/// The tree search's settings and its ablations.
#[derive(Debug, Clone)]
pub struct IesrConfig {
    /// Stage 1; None skips it (`--no-understanding`).
    pub understand: Option<UnderstandConfig>,
    pub mcts: MctsConfig,
    pub select: SelectConfig,
    pub actions: ActionSet,
    pub rules: RuleBase,
    /// Where schema-linking indexes are cached.
    pub index_dir: std::path::PathBuf,
}

impl Default for IesrConfig {
    fn default() -> Self {
        IesrConfig {
            understand: Some(UnderstandConfig::default()),
            mcts: MctsConfig::default(),
            select: SelectConfig::default(),
            actions: ActionSet::builtin(),
            rules: RuleBase::builtin(),
            index_dir: crate::llm::card::iesr_home().join("index"),
        }
    }
}

/// Prompt tokens of schema, as the model's tokenizer counts them, above
/// which the one-call prompts are focused. Every schema of the shared
/// benchmarks fits whole (the largest, LogicCat's SmartHomeDB, is 3,163
/// tokens); a schema of numeric examples, a token a digit, reaches it at
/// far fewer characters than a schema of words. Focusing smaller schemas
/// (a budget of 4,000 characters, when it was counted so) saved little,
/// changed no measured accuracy beyond noise, and defeats the prefix cache
/// that questions on one database share.
pub const DEFAULT_FOCUS_TOKENS: usize = 3_500;

/// How queries may use functions SQLite lacks, written in JavaScript by
/// the model and run in a sandbox (`crate::functions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionUse {
    /// SQLite's own and the library's only.
    Off,
    /// The direct prompts say that a query may call a new `fn_...`
    /// function, which the model then writes.
    Called,
    /// As `Called`, and greedy's and sc's replies are begun with a
    /// functions block ([`FUNCTION_FIRST_OPENING`]): the model writes the
    /// question's calculation as a function, then a query that calls it.
    First,
}

impl FunctionUse {
    /// Whether a query may call functions the model writes.
    pub fn on(self) -> bool {
        self != FunctionUse::Off
    }
}

#[derive(Debug, Clone)]
pub struct SearchConfig {
    pub method: Method,
    pub seed: u64,
    /// Token limit per completion.
    pub max_tokens: usize,
    /// Size budget of the rendered schema, in characters.
    pub schema_chars: usize,
    /// Sample queries that name only the schema's tables and columns
    /// (in-process backends).
    pub name_constraint: bool,
    /// Write a failed query again from where it went wrong (a missing
    /// column, a syntax error), greedily under the name constraint
    /// (`repair::redecode`); only with `name_constraint`.
    pub redecode: bool,
    /// Sample the replies of prompts that ask only for a query so that they
    /// open with it (in-process backends; `query_first`).
    pub query_first: bool,
    /// Above this many prompt tokens (the schema at its richest detail),
    /// one-call prompts show only the tables the question needs most,
    /// within this many; None shows every table.
    pub focus_tokens: Option<usize>,
    /// Min-p of every sampled query (sc's samples, the search's steps at a
    /// temperature): the tail of tokens far less likely than the likeliest
    /// is never drawn.
    pub min_p: f32,
    /// L: how many times greedy's or sc's chosen query is written again
    /// with execution feedback when it fails or returns no value.
    pub feedback_rounds: usize,
    /// Characters of table text `Method::Read` puts in its prompt at most.
    pub read_chars: usize,
    /// When the chosen query finds no value, answer by reading the data
    /// instead (`Engine::read_when_nothing_found`): only over tables or a
    /// graph (`Engine::over_tables_or_graph`), where the data holds every
    /// answer; databases can rightly answer nothing. Not in the paper's
    /// search.
    pub read_fallback: bool,
    /// Worked examples shown by the prompts that write a query directly
    /// (greedy, sc, the search's direct query); None shows none.
    pub demonstrations: Option<Demonstrations>,
    /// Whether queries may use functions SQLite lacks, written in
    /// JavaScript (`functions`).
    pub functions: FunctionUse,
    /// Show the direct prompts the stored values the question mentions
    /// and the columns that hold them (`mentioned_values`).
    pub mentioned_values: bool,
    pub exec: ExecConfig,
    pub iesr: IesrConfig,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            method: Method::Greedy,
            seed: 0,
            max_tokens: 384,
            schema_chars: 12_000,
            name_constraint: true,
            redecode: true,
            query_first: true,
            focus_tokens: Some(DEFAULT_FOCUS_TOKENS),
            min_p: DEFAULT_MIN_P,
            feedback_rounds: DEFAULT_FEEDBACK_ROUNDS,
            read_chars: DEFAULT_READ_CHARS,
            read_fallback: true,
            demonstrations: None,
            functions: FunctionUse::Off,
            mentioned_values: true,
            exec: ExecConfig::default(),
            iesr: IesrConfig::default(),
        }
    }
}

/// The answer to one question.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// The chosen SQL, if any candidate could be extracted.
    pub sql: Option<String>,
    pub result: Option<Arc<QueryResult>>,
    /// Error of the chosen SQL when it failed to execute.
    pub error: Option<String>,
    /// For the baselines, the share of candidates agreeing with the
    /// answer's result; for the tree search, the winner's score. 0 when the
    /// answer did not execute.
    pub confidence: f64,
    pub trace: Trace,
}

/// A failed query written again: the call, and the query it wrote.
struct Redecoded {
    call: CallRecord,
    written: Option<String>,
}

/// A database opened for answering questions with one model.
pub struct Engine {
    model: Arc<dyn LanguageModel>,
    /// The model that judges candidates (the reviewer and the
    /// discriminator check); the main model unless set.
    discriminator: Option<Arc<dyn LanguageModel>>,
    executor: Executor,
    /// What the database is called where examples of it must not be
    /// shown (`with_database_id`): its file's name without extension.
    database_id: String,
    /// The database holds tables or a graph made from files
    /// (`over_tables_or_graph`).
    over_data: bool,
    /// The plain words the schema shows for names that must be quoted
    /// (`crate::db::plain_names`); answers leave with the real names.
    plain_names: Option<PlainNames>,
    /// The schema as the model sees it (plain words for quoted names).
    schema: Schema,
    schema_text: String,
    /// What the one-call prompts say about columns that hold dates as
    /// text (empty when none does).
    date_paragraphs: dates::Paragraphs,
    /// What they say about columns of JSON text (empty when none is).
    json_paragraph: String,
    /// Prompt tokens of the schema at its richest detail, to decide
    /// whether a question's prompt shows a focused schema.
    schema_full_tokens: usize,
    /// The schema as the prompts see it past the focus budget when it has
    /// wide tables (`focus::thin_wide_tables`), and its text.
    thinned: Option<(Schema, String)>,
    /// The schema's table and column names, for notes on and fixes of
    /// queries that name wrong ones.
    names: Arc<repair::SchemaNames>,
    /// The sampling constraint on names, when switched on.
    constraint: Option<Constraint>,
    /// The constraint of the prompts that ask only for a query: the names'
    /// and, when switched on, that the reply opens with the query.
    direct_constraint: Option<Constraint>,
    /// The names' constraint of greedy's and sc's replies when they are
    /// begun with [`FUNCTION_FIRST_OPENING`].
    function_first_constraint: Option<Constraint>,
    config: SearchConfig,
    /// Stage 1's embedded columns, made on first use; the error says why
    /// they could not be.
    column_embeddings: OnceLock<std::result::Result<ColumnEmbeddings, String>>,
    /// Stage 1's value index, made on first use.
    value_index: OnceLock<ValueIndex>,
}

impl Engine {
    pub fn new(model: Arc<dyn LanguageModel>, db: &Path, config: SearchConfig) -> Result<Self> {
        let (plain_names, schema) =
            PlainNames::seen_by_model(Schema::load(db, &IntrospectOptions::default())?);
        let executor =
            Executor::open(db, config.exec.clone())?.with_plain_names(plain_names.clone());
        let schema_text = render_schema(&schema, config.schema_chars);
        let schema_full_tokens = focus::rendered_tokens(&schema, &|text| model.count_tokens(text));
        let thinned = config
            .focus_tokens
            .filter(|&budget| schema_full_tokens > budget)
            .and_then(|_| focus::thin_wide_tables(&schema))
            .map(|thin| {
                let text = render_schema(&thin, config.schema_chars);
                (thin, text)
            });
        let date_paragraphs = dates::Paragraphs::of(&schema);
        let json_paragraph = json_reading::paragraph(&schema);
        let names = Arc::new(repair::SchemaNames::of(&schema));
        // One vocabulary serves both constraints: it is the costly part.
        let vocabulary = config
            .name_constraint
            .then(|| SchemaVocabulary::of(&schema, model.as_ref(), config.functions.on()));
        let constraint = vocabulary
            .clone()
            .map(|names| NameConstraint::continuing(names, ""));
        let direct_constraint = if config.query_first {
            Some(query_first::QueryFirst::around(constraint.clone()))
        } else {
            constraint.clone()
        };
        let function_first_constraint = vocabulary
            .filter(|_| config.functions == FunctionUse::First)
            .map(|names| NameConstraint::continuing(names, FUNCTION_FIRST_OPENING));
        let database_id = db
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Engine {
            database_id,
            over_data: false,
            constraint,
            direct_constraint,
            function_first_constraint,
            model,
            discriminator: None,
            executor,
            plain_names,
            schema,
            schema_text,
            date_paragraphs,
            json_paragraph,
            schema_full_tokens,
            thinned,
            names,
            config,
            column_embeddings: OnceLock::new(),
            value_index: OnceLock::new(),
        })
    }

    /// Uses `model` to judge candidates: the reviewer (sc and the search)
    /// and the search's discriminator check.
    pub fn with_discriminator(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.discriminator = Some(model);
        self
    }

    /// Names the database as a benchmark does (a graph's subgraph or a
    /// table file is opened from a cached copy with another name), so that
    /// no demonstration of it is shown.
    pub fn with_database_id(mut self, id: &str) -> Self {
        self.database_id = id.to_string();
        self
    }

    /// Marks the database as tables or a graph made from files, whose
    /// data holds the answer of every question asked of it.
    pub fn over_tables_or_graph(mut self) -> Self {
        self.over_data = true;
        self
    }

    /// The model that judges candidates.
    fn judge(&self) -> &dyn LanguageModel {
        self.discriminator.as_ref().unwrap_or(&self.model).as_ref()
    }

    /// The database's schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The guarded executor over this engine's database.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    pub fn answer(&self, question: &str, hint: Option<&str>) -> Result<Answer> {
        self.answer_with_progress(question, hint, &mut |_| {})
    }

    /// Like [`Engine::answer`], reporting each finished rollout of the tree
    /// search.
    pub fn answer_with_progress(
        &self,
        question: &str,
        hint: Option<&str>,
        on_rollout: &mut dyn FnMut(RolloutProgress),
    ) -> Result<Answer> {
        check_question(question)?;
        let started = Instant::now();
        self.model.begin_question();
        if let Some(judge) = &self.discriminator {
            judge.begin_question();
        }
        let trace = Trace {
            question: question.to_string(),
            hint: hint.map(String::from),
            database: self.executor.path().display().to_string(),
            method: format!("{:?}", self.config.method),
            model: self.model.name().to_string(),
            ..Trace::default()
        };
        let mut answer = match self.config.method {
            Method::Greedy => self.answer_by_vote(question, hint, 1, 0.0, trace)?,
            Method::SelfConsistency {
                samples,
                temperature,
            } => self.answer_by_vote(question, hint, samples.max(1), temperature, trace)?,
            Method::Iesr => self.answer_by_search(question, hint, trace, on_rollout)?,
            Method::Read => self.answer_by_reading(question, hint, trace)?,
        };
        if self.reads_when_nothing_found() {
            answer = self.read_when_nothing_found(question, hint, answer)?;
        }
        if let Some(names) = &self.plain_names {
            answer.sql = answer.sql.map(|sql| names.to_real(&sql).0);
            for candidate in &mut answer.trace.candidates {
                candidate.sql = names.to_real(&candidate.sql).0;
            }
        }
        answer.trace.answer = answer.sql.clone();
        answer.trace.cost.seconds = started.elapsed().as_secs_f64();
        Ok(answer)
    }

    /// Whether an answer without a value is replaced by reading the data:
    /// over tables or a graph, for the methods that write queries, except
    /// the paper's search.
    fn reads_when_nothing_found(&self) -> bool {
        let paper = matches!(self.config.method, Method::Iesr)
            && self.config.iesr.mcts.design == mcts::Design::Paper;
        self.over_data
            && self.config.read_fallback
            && !matches!(self.config.method, Method::Read)
            && !paper
    }

    /// The baselines: `n` completions of one prompt, the largest group of
    /// equal execution results wins.
    fn answer_by_vote(
        &self,
        question: &str,
        hint: Option<&str>,
        n: usize,
        temperature: f32,
        mut trace: Trace,
    ) -> Result<Answer> {
        let mut material = self.direct_material(question, hint, &mut trace)?;
        let function_first = self.config.functions == FunctionUse::First;
        if function_first {
            // The frame and its example say how to write the functions;
            // the paragraph on functions written later would contradict them.
            material.functions.clear();
        }
        let direct = direct_prompt(&material, hint, question, DIRECT_INSTRUCTION);
        let (messages, opening, constraint) = if function_first {
            (
                function_first_prompt(direct),
                FUNCTION_FIRST_OPENING,
                self.function_first_constraint.clone(),
            )
        } else {
            (direct, "", self.direct_constraint.clone())
        };
        let mut asked = messages.clone();
        if !opening.is_empty() {
            asked.push(ChatMessage::new("assistant", opening));
        }
        let sampling = Sampling {
            temperature,
            top_p: if temperature > 0.0 { 0.95 } else { 1.0 },
            min_p: self.config.min_p,
            max_tokens: self.config.max_tokens,
            seed: self.config.seed,
            n,
            constraint,
            ..Sampling::default()
        };
        let generation = self
            .model
            .generate(&Prompt::Chat(asked.clone()), &sampling)?;
        trace.cost.add(&generation.usage);
        let call = CallRecord::new("sql_generation", asked, &sampling, generation);
        // The replies, with the opening they were begun with.
        let outputs: Vec<String> = call
            .outputs
            .iter()
            .map(|o| format!("{opening}{o}"))
            .collect();
        let cut: Vec<bool> = (0..outputs.len()).map(|row| call.was_cut(row)).collect();
        trace.calls.push(call);

        // (reply, its query, whether the reply was cut off)
        let answered: Vec<(&String, String, bool)> = outputs
            .iter()
            .zip(cut)
            .filter_map(|(o, cut)| extract_sql(o).map(|sql| (o, sql, cut)))
            .collect();
        let written: Vec<&str> = answered.iter().map(|(_, sql, _)| sql.as_str()).collect();
        let ran = self.executor.query_many(&written);
        let asked = repair::asked(question, hint);
        // A query cut off mid-way is ended where it last could be, a
        // misspelt or misplaced name with one clearly right replacement is
        // fixed, when the result runs, and a join on columns that never
        // meet is rejoined, as in the search's steps.
        let (mut sqls, mut outcomes): (Vec<String>, Vec<QueryOutcome>) = answered
            .iter()
            .zip(ran)
            .map(|((_, sql, cut), outcome)| {
                match self.names.mend(&self.executor, sql, &outcome, *cut, &asked) {
                    Some((fixed, result)) => (fixed, Ok(result)),
                    None => (sql.clone(), outcome),
                }
            })
            .unzip();
        let mut written_functions = functions::Written::default();
        for (sql, outcome) in sqls.iter_mut().zip(outcomes.iter_mut()) {
            if let Some((with_functions, ran)) = self.supply_functions_traced(
                question,
                sql,
                outcome,
                &mut written_functions,
                &mut trace,
            )? {
                (*sql, *outcome) = (with_functions, ran);
            }
        }
        if !outcomes.iter().any(feedback::has_value) {
            for (i, (answer, _, _)) in answered.iter().enumerate() {
                if let Err(error) = &outcomes[i] {
                    let redone = self.redecode(&messages, answer, &sqls[i], error, &sampling)?;
                    if let Some(Redecoded { call, written }) = redone {
                        trace.cost.add(&call.usage);
                        let cut = call.was_cut(0);
                        trace.calls.push(call);
                        if let Some(written) = written {
                            let (sql, ran) = self.run_written(
                                (question, hint),
                                (&written, cut),
                                &mut written_functions,
                                &mut trace,
                            )?;
                            if let Ok(result) = ran {
                                (sqls[i], outcomes[i]) = (sql, Ok(result));
                            }
                        }
                    }
                }
            }
        }
        let groups = result_groups(&outcomes);
        let mut chosen = choose_by_execution(&outcomes, &groups);
        let context = (question, hint, material.schema.as_str());
        if let Some(winner) =
            self.reviewed_winner(context, (&sqls, &outcomes), &groups, n, &mut trace)?
        {
            chosen.winner = Some(winner);
        }
        for (i, (sql, outcome)) in sqls.iter().zip(&outcomes).enumerate() {
            let votes = chosen.votes[i];
            trace.candidates.push(CandidateRecord {
                sql: sql.clone(),
                execution: Execution::from_outcome(outcome),
                votes,
                score: votes as f64 / n as f64,
            });
        }
        let chosen_has_value = chosen
            .winner
            .is_some_and(|i| feedback::has_value(&outcomes[i]));
        if let Some(i) = chosen.winner.filter(|_| !chosen_has_value) {
            let rounds = self.config.feedback_rounds;
            let corrected = self.correct_by_feedback(
                (question, hint),
                messages,
                (&sqls[i], &outcomes[i]),
                rounds,
                &mut trace,
            )?;
            if let Some((sql, result)) = corrected {
                return Ok(Answer {
                    sql: Some(sql),
                    result: Some(result),
                    error: None,
                    // It runs with a value, but no sample agreed with it.
                    confidence: CORRECTED_CONFIDENCE,
                    trace,
                });
            }
        }
        let (sql, result, error) = match chosen.winner {
            Some(i) => (
                Some(sqls[i].clone()),
                outcomes[i].as_ref().ok().cloned(),
                outcomes[i].as_ref().err().map(|e| e.to_string()),
            ),
            None => (None, None, None),
        };
        let confidence = chosen
            .winner
            .filter(|&i| outcomes[i].is_ok())
            .map_or(0.0, |i| chosen.votes[i] as f64 / n as f64);
        Ok(Answer {
            sql,
            result,
            error,
            confidence,
            trace,
        })
    }

    /// A failed query of a reply to `messages` written again from where it
    /// went wrong, with the name constraint on and `redecode`, when none of
    /// the replies answered: a rescue for the question, never one more
    /// vote among answers (which measured no gain for the tokens it cost).
    /// The call and the query written again; None when no call was made.
    fn redecode(
        &self,
        messages: &[ChatMessage],
        answer: &str,
        sql: &str,
        error: &QueryError,
        sampling: &Sampling,
    ) -> Result<Option<Redecoded>> {
        if self.constraint.is_none() || !self.config.redecode {
            return Ok(None);
        }
        let Some((rewritten, call)) = self.names.redecode_failed_query(
            self.model.as_ref(),
            messages,
            answer,
            sql,
            error,
            sampling,
            "sql_generation",
        )?
        else {
            return Ok(None);
        };
        Ok(Some(Redecoded {
            call,
            written: extract_sql(&rewritten),
        }))
    }

    /// When sc's samples ran to more than one result, the group the
    /// reviewer weighs best (`select::review`): its first sample. None
    /// leaves the vote's choice.
    fn reviewed_winner(
        &self,
        (question, hint, schema): (&str, Option<&str>, &str),
        (sqls, outcomes): (&[String], &[QueryOutcome]),
        groups: &[Vec<usize>],
        samples: usize,
        trace: &mut Trace,
    ) -> Result<Option<usize>> {
        if !self.config.iesr.select.review || groups.len() < 2 {
            return Ok(None);
        }
        let ran = groups
            .iter()
            .enumerate()
            .flat_map(|(g, members)| members.iter().map(move |&i| (sqls[i].as_str(), g)));
        let asked = review::Asked {
            schema,
            hint,
            question,
        };
        let Some((review, log_probs)) = review::review_by_result(self.judge(), asked, ran)? else {
            return Ok(None);
        };
        let evidence: Vec<review::GroupEvidence> = groups
            .iter()
            .enumerate()
            .map(|(g, members)| review::GroupEvidence {
                share: members.len() as f64 / samples as f64,
                log_prob: log_probs[&g],
                has_value: feedback::has_value(&outcomes[members[0]]),
            })
            .collect();
        trace.cost.add(&review.usage);
        trace.review = review.records;
        Ok(review::best_group(&evidence).map(|g| groups[g][0]))
    }

    /// The prompt greedy and sc send for `question`, and the name
    /// constraint they decode under (none when it is switched off): what
    /// `iesr bench-llm --names-db` decodes.
    pub fn direct_request(
        &self,
        question: &str,
        hint: Option<&str>,
    ) -> Result<(Prompt, Option<Constraint>)> {
        let mut trace = Trace::default();
        let material = self.direct_material(question, hint, &mut trace)?;
        let messages = direct_prompt(&material, hint, question, DIRECT_INSTRUCTION);
        Ok((Prompt::Chat(messages), self.direct_constraint.clone()))
    }

    /// What the one-call prompts show for `question`: the schema, focused
    /// on the tables it needs when the whole schema is over the focus
    /// budget (the kept tables go in the trace), and the evidence
    /// paragraphs (`evidence`). The question's stored values are looked up
    /// once for both.
    fn direct_material(
        &self,
        question: &str,
        hint: Option<&str>,
        trace: &mut Trace,
    ) -> Result<DirectMaterial> {
        let text = format!("{question} {}", hint.unwrap_or_default());
        let focus_budget = self
            .config
            .focus_tokens
            .filter(|&budget| self.schema_full_tokens > budget);
        // Linking is optional evidence: a database whose values cannot be
        // indexed shows none, and the focus still ranks by names.
        let links = if focus_budget.is_some() || self.config.mentioned_values {
            self.value_index()
                .map(|index| index.lookup(&text, FOCUS_LINK_SIMILARITY))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let schema = match focus_budget {
            Some(budget) => self.focused_schema(&text, &links, budget, trace),
            None => self.schema_text.clone(),
        };
        let evidence = self.evidence(question, &text, &links, trace)?;
        Ok(DirectMaterial {
            schema,
            evidence,
            functions: self.functions_paragraph(),
        })
    }

    /// What the one-call prompts show besides the schema, as prompt
    /// paragraphs: the stored values the question mentions (from `links`,
    /// when switched on), how to read and compute with the database's
    /// times (for `asked`, the question with its hint), and the worked
    /// examples (none of this database; the trace names them).
    fn evidence(
        &self,
        question: &str,
        asked: &str,
        links: &[LinkMatch],
        trace: &mut Trace,
    ) -> Result<String> {
        let mut paragraphs = if self.config.mentioned_values {
            mentioned_values::paragraph(links)
        } else {
            String::new()
        };
        paragraphs += &self.date_paragraphs.for_question(asked);
        paragraphs += &self.json_paragraph;
        let Some(demonstrations) = &self.config.demonstrations else {
            return Ok(paragraphs);
        };
        let chosen = demonstrations.memory.nearest(
            question,
            &self.database_id,
            &demonstrations.retrieval,
        )?;
        trace.demonstrations = chosen
            .iter()
            .map(|r| format!("{}/{}/{}", r.dataset, r.db_id, r.question_id))
            .collect();
        Ok(paragraphs + &memory::render(&chosen))
    }

    /// The schema focused on the tables `text` needs within `budget`
    /// prompt tokens, the kept tables noted in the trace; the whole schema
    /// when focusing keeps everything. Wide tables count, and are shown,
    /// thinned (`thinned`).
    fn focused_schema(
        &self,
        text: &str,
        links: &[LinkMatch],
        budget: usize,
        trace: &mut Trace,
    ) -> String {
        // The embedding ranking is optional evidence: without it, tables
        // named by the question and schema order still rank.
        let ranked = self
            .column_embeddings()
            .ok()
            .and_then(|e| e.rank(text, usize::MAX, f32::MIN).ok())
            .unwrap_or_default();
        let (shown, shown_text) = self.shown_schema();
        let count_tokens = |text: &str| self.model.count_tokens(text);
        match focus::focus(shown, text, links, &ranked, budget, &count_tokens) {
            Some(focused) => {
                trace.focused_tables =
                    Some(focused.tables.iter().map(|t| t.name.clone()).collect());
                render_schema(&focused, self.config.schema_chars)
            }
            None => shown_text.to_string(),
        }
    }

    /// The schema the prompts read, and its text: with wide tables
    /// thinned past the focus budget (`thinned`), else the whole schema.
    fn shown_schema(&self) -> (&Schema, &str) {
        match &self.thinned {
            Some((schema, text)) => (schema, text),
            None => (&self.schema, &self.schema_text),
        }
    }
}

/// What the one-call prompts of a question show: the schema as they see it
/// and the evidence paragraphs after it.
#[derive(Debug, Clone, Default)]
pub struct DirectMaterial {
    pub schema: String,
    /// The stored values the question mentions, notes on dates and worked
    /// examples, as prompt paragraphs (empty when none).
    pub evidence: String,
    /// The paragraph on the functions a query may call (empty when
    /// functions are off, and where the reply is begun with one).
    pub functions: String,
}

/// Least trigram similarity of a linked value when focusing (stage 1's);
/// the values paragraph keeps only the closer ones of the same lookup.
const FOCUS_LINK_SIMILARITY: f64 = 0.6;
const _: () = assert!(FOCUS_LINK_SIMILARITY <= mentioned_values::MIN_SIMILARITY);

/// The confidence of an answer found by execution feedback.
const CORRECTED_CONFIDENCE: f64 = 0.5;

/// What greedy and sc ask for.
const DIRECT_INSTRUCTION: &str = "Write one SQLite query that answers the question.";

/// How greedy's and sc's replies are begun when functions come first
/// (`FunctionUse::First`): a small model asked to write a function when a
/// step needs one almost never does, but begun this way it writes the
/// question's calculation as a function and then the query.
pub const FUNCTION_FIRST_OPENING: &str = "```sql\n/*js\nfunction fn_";

/// `direct`, the direct prompt, asking for the calculation as a function
/// first, with one worked exchange before the question.
fn function_first_prompt(mut direct: Vec<ChatMessage>) -> Vec<ChatMessage> {
    use crate::prompts::{
        FUNCTION_FIRST_EXAMPLE_ASSISTANT, FUNCTION_FIRST_EXAMPLE_USER, FUNCTION_FIRST_SYSTEM,
    };
    direct[0] = ChatMessage::new("system", FUNCTION_FIRST_SYSTEM.render(&[]));
    let example = [
        ChatMessage::new("user", FUNCTION_FIRST_EXAMPLE_USER.render(&[])),
        ChatMessage::new("assistant", FUNCTION_FIRST_EXAMPLE_ASSISTANT.render(&[])),
    ];
    direct.splice(1..1, example);
    direct
}

/// The prompt of greedy and sc, and of the search's direct query: the
/// schema, the evidence paragraphs, the hint, the question and
/// `instruction`, with no reasoning.
fn direct_prompt(
    material: &DirectMaterial,
    hint: Option<&str>,
    question: &str,
    instruction: &str,
) -> Vec<ChatMessage> {
    let hint = crate::prompts::hint_paragraph(hint);
    let evidence = format!("{}{}", material.evidence, material.functions);
    vec![
        ChatMessage::new("system", SQL_GENERATION_SYSTEM.render(&[])),
        ChatMessage::new(
            "user",
            SQL_GENERATION_USER.render(&[
                ("schema", material.schema.as_str()),
                ("evidence", evidence.as_str()),
                ("hint", hint.as_str()),
                ("question", question),
                ("instruction", instruction),
            ]),
        ),
    ]
}

/// Votes per candidate and the winner.
struct Choice {
    votes: Vec<usize>,
    winner: Option<usize>,
}

/// Each candidate's votes are the size of its group of equal results
/// (`result_groups`); the group with the most votes wins, a result without
/// a value counting its votes at [`review::NO_VALUE_WEIGHT`], ties going to
/// the earliest candidate. With no executable candidate, the first one is
/// kept (so its error can be shown).
fn choose_by_execution(
    outcomes: &[Result<Arc<QueryResult>, QueryError>],
    groups: &[Vec<usize>],
) -> Choice {
    let mut votes = vec![0; outcomes.len()];
    for group in groups {
        for &i in group {
            votes[i] = group.len();
        }
    }
    let winner = (0..outcomes.len())
        .filter(|&i| outcomes[i].is_ok())
        .map(|i| {
            let prior = review::result_prior(feedback::has_value(&outcomes[i]));
            (i, (votes[i] as f64).ln() + prior)
        })
        // The first of equal scores wins: `max_by` keeps the last.
        .rev()
        .max_by(|(_, a), (_, b)| a.total_cmp(b))
        .map(|(i, _)| i)
        .or((!outcomes.is_empty()).then_some(0));
    Choice { votes, winner }
}

/// The candidates that ran, grouped by result (as a set of rows), groups
/// in the order of their first member.
fn result_groups(outcomes: &[Result<Arc<QueryResult>, QueryError>]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(u128, Vec<usize>)> = Vec::new();
    for (i, outcome) in outcomes.iter().enumerate() {
        let Ok(result) = outcome else { continue };
        let key = result.digest.set_key();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// Refuses a question with no words in it: asked nothing, a model still
/// writes some query, and its answer would mean nothing.
pub fn check_question(question: &str) -> Result<()> {
    if question.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "the question is empty; ask a question in words".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::scripted::ScriptedModel;

    fn concert_singer() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/datasets/spider/database/concert_singer/concert_singer.sqlite")
    }

    fn engine(replies: Vec<&str>, method: Method) -> Engine {
        engine_with_feedback(replies, method, DEFAULT_FEEDBACK_ROUNDS)
    }

    fn engine_with_feedback(replies: Vec<&str>, method: Method, rounds: usize) -> Engine {
        let model = Arc::new(ScriptedModel::new(replies));
        // A scripted model writes its script whatever the name constraint
        // says: these tests follow the replies as written.
        let config = SearchConfig {
            method,
            feedback_rounds: rounds,
            name_constraint: false,
            // Values are shown in a test of their own, which keeps its index
            // in a folder of its own.
            mentioned_values: false,
            ..SearchConfig::default()
        };
        Engine::new(model, &concert_singer(), config).unwrap()
    }

    #[test]
    fn the_reviewer_prompt_opens_as_the_generation_prompt_through_the_schema() {
        // So that reviewing a question's queries reuses the schema's states
        // its own generation computed, instead of computing them again.
        let engine = engine(vec![], Method::Greedy);
        let (question, hint) = ("How many singers are there?", Some("a hint"));
        let material = engine
            .direct_material(question, hint, &mut Trace::default())
            .unwrap();
        let generation = direct_prompt(&material, hint, question, DIRECT_INSTRUCTION);
        let asked = review::Asked {
            schema: &material.schema,
            hint,
            question,
        };
        let Prompt::Chat(review) = review::review_prompt(asked, "SELECT count(*) FROM singer")
        else {
            panic!("the review is a chat prompt")
        };
        assert_eq!(review[0], generation[0]);
        let (written, reviewed) = (&generation[1].content, &review[1].content);
        let shared = written
            .bytes()
            .zip(reviewed.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let schema_end = written.find(&material.schema).unwrap() + material.schema.len();
        assert!(material.schema.contains("CREATE TABLE singer"));
        assert!(shared >= schema_end, "{shared} < {schema_end}");
    }

    /// Greedy's answer over `db` when the model replies `reply`.
    fn greedy_answer(db: &std::path::Path, question: &str, reply: &str) -> Answer {
        let model = Arc::new(ScriptedModel::new(vec![reply]));
        let config = SearchConfig {
            method: Method::Greedy,
            mentioned_values: false,
            ..SearchConfig::default()
        };
        Engine::new(model, db, config)
            .unwrap()
            .answer(question, None)
            .unwrap()
    }

    fn direct_prompt_text(db: &std::path::Path, question: &str) -> String {
        let model = Arc::new(ScriptedModel::new(Vec::<String>::new()));
        let config = SearchConfig {
            mentioned_values: false,
            ..SearchConfig::default()
        };
        let engine = Engine::new(model, db, config).unwrap();
        match engine.direct_request(question, None).unwrap().0 {
            Prompt::Chat(messages) => messages.into_iter().map(|m| m.content).collect(),
            Prompt::Raw(text) => text,
        }
    }

    #[test]
    fn the_direct_prompt_names_the_columns_that_hold_dates_as_text_to_a_question_of_time() {
        let transcripts = concert_singer()
            .parent()
            .and_then(|d| d.parent())
            .unwrap()
            .join("student_transcripts_tracking/student_transcripts_tracking.sqlite");
        let text = direct_prompt_text(&transcripts, "When was the first transcript released?");
        assert!(text.contains("Transcripts.transcript_date"), "{text}");
        assert!(text.contains("julianday(b) - julianday(a)"), "{text}");
        // A question that does not speak of time is not told.
        let text = direct_prompt_text(&transcripts, "How many transcripts are listed?");
        assert!(!text.contains("Dates:"), "{text}");
        // No column of concert_singer holds a date.
        let text = direct_prompt_text(&concert_singer(), "How many singers are there?");
        assert!(!text.contains("Dates:"), "{text}");
    }

    /// The stages of an answer's calls, in order.
    pub(super) fn stages(answer: &Answer) -> Vec<&str> {
        answer
            .trace
            .calls
            .iter()
            .map(|c| c.stage.as_str())
            .collect()
    }

    #[test]
    fn a_question_without_words_is_refused_before_any_model_call() {
        let engine = engine(vec!["```sql\nSELECT 1\n```"], Method::Greedy);
        for question in ["", "  \n\t "] {
            let error = engine.answer(question, None).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
            assert!(error.to_string().contains("the question is empty"));
        }
        // The script's one reply is still there for a real question.
        let answer = engine.answer("How many singers?", None).unwrap();
        assert_eq!(answer.sql.as_deref(), Some("SELECT 1"));
    }

    #[test]
    fn a_missing_column_is_written_again_from_before_it_among_the_query_tables() {
        let replies = vec![
            "```sql
SELECT T1.nosuch FROM singer AS T1
```",
            "T1.Name FROM singer AS T1
```",
        ];
        let model = Arc::new(ScriptedModel::new(replies));
        let config = SearchConfig {
            method: Method::Greedy,
            ..SearchConfig::default()
        };
        let answer = Engine::new(model, &concert_singer(), config)
            .unwrap()
            .answer("Who are the singers?", None)
            .unwrap();
        assert_eq!(
            answer.sql.as_deref(),
            Some("SELECT T1.Name FROM singer AS T1")
        );
        assert!(answer.result.is_some());
        let redecode = &answer.trace.calls[1];
        assert_eq!(redecode.stage, "sql_generation rewrite of the failed query");
        assert_eq!(redecode.temperature, 0.0);
        let resumed = redecode.prompt.last().unwrap();
        assert_eq!(resumed.role, "assistant");
        assert_eq!(resumed.content, "```sql\nSELECT ");
    }

    #[test]
    fn a_failed_sample_is_not_written_again_when_another_answered() {
        let replies = vec![
            "```sql\nSELECT T1.nosuch FROM singer AS T1\n```",
            "```sql\nSELECT count(*) FROM singer\n```",
            "T1.Name FROM singer AS T1\n```",
        ];
        let model = Arc::new(ScriptedModel::new(replies));
        let config = SearchConfig {
            method: Method::SelfConsistency {
                samples: 2,
                temperature: 0.8,
            },
            ..SearchConfig::default()
        };
        let answer = Engine::new(model, &concert_singer(), config)
            .unwrap()
            .answer("How many singers?", None)
            .unwrap();
        assert_eq!(answer.sql.as_deref(), Some("SELECT count(*) FROM singer"));
        assert_eq!(stages(&answer), ["sql_generation"]);
    }

    #[test]
    fn a_failing_query_is_written_again_with_the_error_until_it_answers() {
        let replies = vec![
            "```sql
SELECT nosuch FROM singer
```",
            "```sql
SELECT alsonot FROM singer
```",
            "```sql
SELECT count(*) FROM singer
```",
        ];
        let answer = engine(replies, Method::Greedy)
            .answer("How many singers?", None)
            .unwrap();
        assert_eq!(answer.sql.as_deref(), Some("SELECT count(*) FROM singer"));
        assert_eq!(answer.result.as_ref().unwrap().rows[0][0].to_string(), "6");
        assert_eq!(answer.confidence, CORRECTED_CONFIDENCE);
        assert_eq!(
            stages(&answer),
            ["sql_generation", "execution_feedback", "execution_feedback"]
        );
        // The second correction sees the first one and why it failed.
        let prompt = &answer.trace.calls[2].prompt;
        let turns: Vec<&str> = prompt.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(
            turns,
            ["system", "user", "assistant", "user", "assistant", "user"]
        );
        assert!(prompt[4].content.contains("SELECT alsonot FROM singer"));
        assert!(
            prompt[5].content.contains("no such column: alsonot"),
            "{}",
            prompt[5].content
        );
        assert_eq!(answer.trace.candidates.len(), 3);
    }

    #[test]
    fn an_empty_result_gets_feedback_and_a_repeated_query_ends_it() {
        let empty = "```sql
SELECT name FROM singer WHERE age > 1000
```";
        let answer = engine(vec![empty, empty], Method::Greedy)
            .answer("Who is over 1000?", None)
            .unwrap();
        assert_eq!(stages(&answer), ["sql_generation", "execution_feedback"]);
        assert!(answer.trace.calls[1].prompt[3]
            .content
            .contains("returned no rows with a value"));
        // Nothing better was found: the chosen query stands.
        assert_eq!(
            answer.sql.as_deref(),
            Some("SELECT name FROM singer WHERE age > 1000")
        );
        assert_eq!(answer.result.as_ref().unwrap().total_rows, 0);
    }

    #[test]
    fn feedback_on_an_empty_result_names_the_values_no_row_holds() {
        let atlantis = "```sql
SELECT Name FROM singer WHERE Country = 'Atlantis'
```";
        let answer = engine(vec![atlantis, atlantis], Method::Greedy)
            .answer("Which singers are from Atlantis?", None)
            .unwrap();
        let feedback = &answer.trace.calls[1].prompt[3].content;
        assert!(feedback.contains("returned no rows with a value"));
        assert!(
            feedback.contains("- Country = 'Atlantis' (no row of singer has it; its most common values: 'France', 'Netherlands', 'United States')"),
            "{feedback}"
        );
    }

    #[test]
    fn feedback_names_the_column_that_stores_a_value_the_queried_one_lacks() {
        let index = tempfile::tempdir().unwrap();
        let feedback_on = |query: &str| {
            let reply = format!("```sql\n{query}\n```");
            let model = Arc::new(ScriptedModel::new(vec![reply.as_str(), reply.as_str()]));
            let config = SearchConfig {
                method: Method::Greedy,
                name_constraint: false,
                mentioned_values: false,
                iesr: IesrConfig {
                    index_dir: index.path().to_path_buf(),
                    ..IesrConfig::default()
                },
                ..SearchConfig::default()
            };
            let answer = Engine::new(model, &concert_singer(), config)
                .unwrap()
                .answer("Which singers sang at the Raith Rovers stadium?", None)
                .unwrap();
            answer.trace.calls[1].prompt[3].content.clone()
        };
        let feedback = feedback_on("SELECT Name FROM singer WHERE Country = 'Raith Rovers'");
        assert!(
            feedback.contains("- Country = 'Raith Rovers' (no row of singer has it; it is stored in stadium.Location)"),
            "{feedback}"
        );
        let feedback = feedback_on("SELECT Name FROM singer WHERE Country = 'raith rovers'");
        assert!(
            feedback.contains(
                "(no row of singer has it; it is stored in stadium.Location as 'Raith Rovers')"
            ),
            "{feedback}"
        );
    }

    const NOBODY: &str = "```sql
SELECT Name FROM singer WHERE Age > 1000
```";

    #[test]
    fn over_tables_a_query_that_finds_nothing_gives_way_to_reading() {
        let answer = engine_with_feedback(vec![NOBODY, "Answer: Joe Sharp"], Method::Greedy, 0)
            .over_tables_or_graph()
            .answer("Who is the oldest singer?", None)
            .unwrap();
        assert_eq!(
            stages(&answer),
            [
                "sql_generation",
                "read_answer (the chosen query found no value)"
            ]
        );
        assert_eq!(answer.sql.as_deref(), Some("SELECT 'Joe Sharp' AS answer"));
        assert_eq!(answer.confidence, 0.5);
        // The reading call saw the rows.
        assert!(answer.trace.calls[1].prompt[1]
            .content
            .contains("Joe Sharp"));
    }

    #[test]
    fn a_database_keeps_the_query_that_finds_nothing() {
        let answer = engine_with_feedback(vec![NOBODY, "Answer: Joe Sharp"], Method::Greedy, 0)
            .answer("Who is over 1000?", None)
            .unwrap();
        assert_eq!(stages(&answer), ["sql_generation"]);
        assert_eq!(answer.result.as_ref().unwrap().total_rows, 0);
    }

    #[test]
    fn a_reading_without_a_value_leaves_the_query() {
        let answer = engine_with_feedback(vec![NOBODY, "```\n```"], Method::Greedy, 0)
            .over_tables_or_graph()
            .answer("Who is over 1000?", None)
            .unwrap();
        assert_eq!(stages(&answer).len(), 2);
        assert_eq!(
            answer.sql.as_deref(),
            Some("SELECT Name FROM singer WHERE Age > 1000")
        );
    }

    #[test]
    fn a_query_that_finds_a_value_is_not_read_again() {
        let found = "```sql
SELECT Name FROM singer ORDER BY Age DESC LIMIT 1
```";
        let answer = engine_with_feedback(vec![found], Method::Greedy, 0)
            .over_tables_or_graph()
            .answer("Who is the oldest singer?", None)
            .unwrap();
        assert_eq!(stages(&answer), ["sql_generation"]);
    }

    #[test]
    fn the_paper_search_never_reads() {
        let mut config = SearchConfig {
            method: Method::Iesr,
            ..SearchConfig::default()
        };
        config.iesr.mcts.design = mcts::Design::Paper;
        let engine = Engine::new(
            Arc::new(ScriptedModel::new(Vec::<String>::new())),
            &concert_singer(),
            config,
        )
        .unwrap()
        .over_tables_or_graph();
        assert!(!engine.reads_when_nothing_found());
        let mut guided = engine_with_feedback(vec![], Method::Iesr, 0).over_tables_or_graph();
        assert!(guided.reads_when_nothing_found());
        guided.config.read_fallback = false;
        assert!(!guided.reads_when_nothing_found());
    }

    #[test]
    fn no_feedback_rounds_means_one_call() {
        let answer = engine_with_feedback(
            vec![
                "```sql
SELECT nosuch FROM singer
```",
            ],
            Method::Greedy,
            0,
        )
        .answer("?", None)
        .unwrap();
        assert_eq!(stages(&answer), ["sql_generation"]);
    }

    #[test]
    fn self_consistency_picks_the_largest_group_of_equal_results() {
        let replies = vec![
            "```sql\nSELECT count(*) FROM singer\n```",
            "```sql\nSELECT count(*) + 1 FROM singer\n```",
            "```sql\nSELECT COUNT(Singer_ID) FROM singer;\n```",
            "I am not sure.",
            "```sql\nSELECT nosuch FROM singer\n```",
            "```sql\nSELECT 6\n```",
        ];
        let method = Method::SelfConsistency {
            samples: 6,
            temperature: 0.8,
        };
        let answer = engine(replies, method)
            .answer("How many singers?", None)
            .unwrap();
        // Three candidates give 6 (two counts and a constant); one gives 7.
        assert_eq!(answer.sql.as_deref(), Some("SELECT count(*) FROM singer"));
        assert_eq!(answer.result.unwrap().rows[0][0].to_string(), "6");
        assert_eq!(answer.confidence, 0.5);
        let votes: Vec<usize> = answer.trace.candidates.iter().map(|c| c.votes).collect();
        assert_eq!(votes, [3, 1, 3, 0, 3]);
        assert_eq!(answer.trace.calls.len(), 1);
        assert_eq!(answer.trace.calls[0].n, 6);
    }

    /// sc over three samples, two counting singers and one counting
    /// stadiums, with a reviewer that finds the question far likelier after
    /// the stadium query.
    fn reviewed_sc(review: bool) -> Answer {
        let replies = vec![
            "```sql\nSELECT count(*) FROM singer\n```",
            "```sql\nSELECT count(*) FROM stadium\n```",
            "```sql\nSELECT count(*) FROM singer\n```",
        ];
        let model = ScriptedModel::new(replies).scoring(|prompt, continuation| {
            // The question is scored after the schema and a query.
            assert_eq!(continuation, "How many stadiums are there?");
            assert!(prompt.contains("CREATE TABLE stadium"), "{prompt}");
            if prompt.contains("FROM stadium") {
                -2.0
            } else {
                -9.0
            }
        });
        let mut config = SearchConfig {
            method: Method::SelfConsistency {
                samples: 3,
                temperature: 0.8,
            },
            ..SearchConfig::default()
        };
        config.iesr.select.review = review;
        Engine::new(Arc::new(model), &concert_singer(), config)
            .unwrap()
            .answer("How many stadiums are there?", None)
            .unwrap()
    }

    #[test]
    fn the_reviewer_can_outweigh_the_vote_when_samples_disagree() {
        let answer = reviewed_sc(true);
        assert_eq!(answer.sql.as_deref(), Some("SELECT count(*) FROM stadium"));
        // One of three samples agrees with it.
        assert!((answer.confidence - 1.0 / 3.0).abs() < 1e-9);
        let reviewed: Vec<&str> = answer.trace.review.iter().map(|r| r.sql.as_str()).collect();
        assert_eq!(
            reviewed,
            [
                "SELECT count(*) FROM singer",
                "SELECT count(*) FROM stadium"
            ]
        );
        let without = reviewed_sc(false);
        assert_eq!(without.sql.as_deref(), Some("SELECT count(*) FROM singer"));
        assert!(without.trace.review.is_empty());
    }

    #[test]
    fn samples_that_agree_are_not_reviewed() {
        let model = ScriptedModel::new(vec!["```sql\nSELECT count(*) FROM singer\n```"; 2])
            .scoring(|_, _| panic!("nothing to choose between"));
        let config = SearchConfig {
            method: Method::SelfConsistency {
                samples: 2,
                temperature: 0.8,
            },
            ..SearchConfig::default()
        };
        let answer = Engine::new(Arc::new(model), &concert_singer(), config)
            .unwrap()
            .answer("How many singers?", None)
            .unwrap();
        assert_eq!(answer.confidence, 1.0);
        assert!(answer.trace.review.is_empty());
    }

    #[test]
    fn a_result_with_a_value_outweighs_as_many_votes_without() {
        let replies = vec![
            "```sql\nSELECT name FROM singer WHERE age > 1000\n```",
            "```sql\nSELECT name FROM singer WHERE age > 40\n```",
        ];
        let method = Method::SelfConsistency {
            samples: 2,
            temperature: 0.8,
        };
        let answer = engine(replies, method)
            .answer("Who is over 40?", None)
            .unwrap();
        assert_eq!(
            answer.sql.as_deref(),
            Some("SELECT name FROM singer WHERE age > 40")
        );
    }

    #[test]
    fn greedy_reports_a_failing_query_with_zero_confidence() {
        let answer = engine_with_feedback(
            vec!["```sql\nSELECT nosuch FROM singer\n```"],
            Method::Greedy,
            0,
        )
        .answer("?", Some("a hint"))
        .unwrap();
        assert_eq!(answer.sql.as_deref(), Some("SELECT nosuch FROM singer"));
        assert!(answer.error.unwrap().contains("no such column"));
        assert_eq!(answer.confidence, 0.0);
        assert!(answer.trace.calls[0].prompt[1]
            .content
            .contains("Hint: a hint"));
        assert!(answer.trace.calls[0].prompt[1]
            .content
            .contains("CREATE TABLE singer"));
    }

    #[test]
    fn the_direct_prompt_names_the_columns_that_hold_the_values_mentioned() {
        let index = tempfile::tempdir().unwrap();
        let ask = |mentioned_values: bool| {
            let config = SearchConfig {
                method: Method::Greedy,
                name_constraint: false,
                mentioned_values,
                iesr: IesrConfig {
                    index_dir: index.path().to_path_buf(),
                    ..IesrConfig::default()
                },
                ..SearchConfig::default()
            };
            let model = Arc::new(ScriptedModel::new(vec![
                "```sql\nSELECT count(*) FROM singer\n```",
            ]));
            let answer = Engine::new(model, &concert_singer(), config)
                .unwrap()
                .answer("How many singers are from france?", None)
                .unwrap();
            answer.trace.calls[0].prompt[1].content.clone()
        };
        let prompt = ask(true);
        assert!(
            prompt.contains("as the database stores them:\n- 'France' in singer.Country\n"),
            "{prompt}"
        );
        assert!(!ask(false).contains("as the database stores them"));
    }

    #[test]
    fn a_misplaced_name_is_fixed_when_the_fixed_query_runs() {
        let answer = engine(
            vec!["```sql\nSELECT max(Agee) FROM singers\n```"],
            Method::Greedy,
        )
        .answer("How old is the oldest singer?", None)
        .unwrap();
        assert_eq!(answer.sql.as_deref(), Some("SELECT max(Age) FROM singer"));
        assert!(answer.result.is_some());
        assert_eq!(answer.confidence, 1.0);
    }

    #[test]
    fn no_sql_at_all_is_an_answer_without_sql() {
        let answer = engine(vec!["I cannot help."], Method::Greedy)
            .answer("?", None)
            .unwrap();
        assert!(answer.sql.is_none());
        assert_eq!(answer.confidence, 0.0);
    }

    /// A shop whose table and column names hold spaces, as many real
    /// databases' do.
    fn spaced_shop(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("shop.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                r#"CREATE TABLE Products (sku TEXT PRIMARY KEY, "Unit Price" REAL);
                CREATE TABLE "Order Items" (order_id INTEGER, sku TEXT REFERENCES Products(sku), qty INTEGER);
                INSERT INTO Products VALUES ('A1', 2.5), ('B2', 10);
                INSERT INTO "Order Items" VALUES (1, 'A1', 4), (1, 'B2', 1), (2, 'B2', 3);"#,
            )
            .unwrap();
        path
    }

    /// Stores with a 202-column table of yearly figures, and their
    /// managers.
    pub(super) fn wide_stores(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("stores.sqlite");
        let metrics: Vec<String> = (2000..2025)
            .flat_map(|year| {
                [
                    "revenue", "cost", "profit", "units", "returns", "visits", "clicks", "signups",
                ]
                .map(|metric| format!("{metric}_{year}"))
            })
            .collect();
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(&format!(
                "CREATE TABLE store_stats (store_id INTEGER PRIMARY KEY, city TEXT, {});
                 CREATE TABLE managers (manager_id INTEGER PRIMARY KEY, name TEXT,
                     store_id INTEGER REFERENCES store_stats(store_id));",
                metrics
                    .iter()
                    .map(|m| format!("{m} REAL"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .unwrap();
        for store in 1..=20 {
            let values: Vec<String> = (0..metrics.len())
                .map(|i| format!("{}.5", store * 100 + i))
                .collect();
            connection
                .execute_batch(&format!(
                    "INSERT INTO store_stats VALUES ({store}, 'City {store}', {});
                     INSERT INTO managers VALUES ({store}, 'Manager {store}', {store});",
                    values.join(", ")
                ))
                .unwrap();
        }
        drop(connection);
        path
    }

    #[test]
    fn a_wide_tables_numbers_are_shown_bare_the_same_for_every_question() {
        let dir = tempfile::tempdir().unwrap();
        let path = wide_stores(dir.path());
        let schema_part = |question: &str| {
            let prompt = direct_prompt_text(&path, question);
            prompt[..prompt.find("Question:").unwrap()].to_string()
        };
        let schema = schema_part("What was the profit in 2010 of the store Manager 7 runs?");
        // Both tables, every column; examples for texts and keys only.
        assert!(schema.contains("CREATE TABLE store_stats"), "{schema}");
        assert!(schema.contains("CREATE TABLE managers"), "{schema}");
        assert!(schema.contains("  profit_2010 REAL,\n"), "{schema}");
        assert!(schema.contains("  city TEXT, -- e.g. 'City 1'"), "{schema}");
        assert!(
            schema.contains("  store_id INTEGER PRIMARY KEY, -- e.g. 1"),
            "{schema}"
        );
        // The same for every question, so the model reads it once.
        assert_eq!(
            schema_part("Which city had the most visits in 2003?"),
            schema
        );
    }

    /// Twenty-four tables of gauge readings, every value a long number: a
    /// schema short in characters and long in tokens.
    fn gauge_readings(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("gauges.sqlite");
        let connection = rusqlite::Connection::open(&path).unwrap();
        for gauge in 1..=24 {
            let readings: Vec<String> = (0..4)
                .map(|row| {
                    let value = |k: usize| format!("{}.{}", 104_729 * (gauge + k), 7_919 * row);
                    format!("({row}, {}, {}, {})", value(1), value(2), value(3))
                })
                .collect();
            connection
                .execute_batch(&format!(
                    "CREATE TABLE gauge_{gauge} (reading_id INTEGER PRIMARY KEY,
                         level REAL, flow REAL, pressure REAL);
                     INSERT INTO gauge_{gauge} VALUES {};",
                    readings.join(", ")
                ))
                .unwrap();
        }
        drop(connection);
        path
    }

    #[test]
    fn a_schema_long_in_tokens_is_focused_however_short_in_characters() {
        let dir = tempfile::tempdir().unwrap();
        let path = gauge_readings(dir.path());
        let schema = Schema::load(&path, &IntrospectOptions::default()).unwrap();
        let whole = render_schema(&schema, usize::MAX);
        // Short enough in characters to have been shown whole, but its
        // digits are tokens each.
        assert!(whole.chars().count() < 8_000, "{}", whole.len());
        assert!(crate::llm::estimate_tokens(&whole) > DEFAULT_FOCUS_TOKENS);
        let prompt = direct_prompt_text(&path, "What is the highest level of gauge_7?");
        assert!(prompt.contains("CREATE TABLE gauge_7 "), "{prompt}");
        let shown = prompt.matches("CREATE TABLE gauge_").count();
        assert!((1..24).contains(&shown), "{shown} tables shown");
    }

    #[test]
    fn a_view_is_shown_to_the_model_and_answers_like_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL);
                 INSERT INTO orders VALUES (1, 5), (2, 25), (3, 40);
                 CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 10;",
            )
            .unwrap();
        let question = "How many big orders are there?";
        let prompt = direct_prompt_text(&path, question);
        assert!(
            prompt.contains("CREATE VIEW big_orders ( -- 2 rows"),
            "{prompt}"
        );
        let answer = greedy_answer(
            &path,
            question,
            "```sql\nSELECT COUNT(*) FROM big_orders\n```",
        );
        assert_eq!(
            answer.result.unwrap().rows,
            vec![vec![crate::db::Value::Integer(2)]]
        );
    }

    #[test]
    fn a_unix_time_is_named_in_the_prompt_and_read_with_unixepoch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                // 2020-12-31 23:00, 2021-01-01 00:00 and 2021-06-01 UTC.
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, placed_at INTEGER);
                 INSERT INTO orders VALUES (1, 1609455600), (2, 1609459200), (3, 1622505600);",
            )
            .unwrap();
        let question = "How many orders were placed in 2021?";
        let prompt = direct_prompt_text(&path, question);
        assert!(
            prompt.contains("Times: orders.placed_at hold Unix times"),
            "{prompt}"
        );
        // The model reads the time bare, which SQLite takes for a Julian
        // day: NULL for every row, and a count of none.
        let answer = greedy_answer(
            &path,
            question,
            "```sql\nSELECT COUNT(*) FROM orders WHERE strftime('%Y', placed_at) = '2021'\n```",
        );
        assert!(answer.sql.unwrap().contains("'unixepoch'"));
        assert_eq!(
            answer.result.unwrap().rows,
            vec![vec![crate::db::Value::Integer(2)]]
        );
    }

    #[test]
    fn written_dates_are_named_in_the_prompt_and_ordered_as_dates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE orders (customer TEXT, order_date TEXT);
                 INSERT INTO orders VALUES ('Ann', '12/24/2021'), ('Bob', '03/15/2023'),
                     ('Cy', '06/30/2022');",
            )
            .unwrap();
        let question = "Who placed the latest order?";
        let prompt = direct_prompt_text(&path, question);
        assert!(
            prompt.contains("Dates: orders.order_date hold dates as text written MM/DD/YYYY"),
            "{prompt}"
        );
        // As text, December 2021 sorts last.
        let answer = greedy_answer(
            &path,
            question,
            "```sql\nSELECT customer FROM orders ORDER BY order_date DESC LIMIT 1\n```",
        );
        assert_eq!(
            answer.result.unwrap().rows,
            vec![vec![crate::db::Value::Text("Bob".into())]]
        );
    }

    #[test]
    fn numbers_stored_as_text_are_ordered_and_compared_as_numbers_where_it_matters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("import.sqlite");
        // As `.import` loads a CSV file: every column TEXT.
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE products (name TEXT, price TEXT, year TEXT);
                 INSERT INTO products VALUES ('Pen', '9.5', '2019'), ('Lamp', '120', '2021'),
                     ('Cup', '12.25', '2020');",
            )
            .unwrap();
        let answer = |reply: &str| {
            let reply = format!("```sql\n{reply}\n```");
            let answer = greedy_answer(&path, "a question", &reply);
            (answer.sql.unwrap(), answer.result.unwrap().rows.clone())
        };
        let text = |s: &str| crate::db::Value::Text(s.into());
        // As text, '9.5' sorts after '120', and '9.5' > '100'.
        assert_eq!(
            answer("SELECT name FROM products ORDER BY price DESC LIMIT 1").1,
            vec![vec![text("Lamp")]]
        );
        assert_eq!(
            answer("SELECT COUNT(*) FROM products WHERE price > 100").1,
            vec![vec![crate::db::Value::Integer(1)]]
        );
        // Years of four digits sort the same either way: the query and its
        // text answer stay as written.
        assert_eq!(
            answer("SELECT MAX(year) FROM products"),
            (
                "SELECT MAX(year) FROM products".to_string(),
                vec![vec![text("2021")]]
            )
        );
    }

    #[test]
    fn names_in_other_scripts_are_shown_bare_and_run_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cafes.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE Café (id INTEGER PRIMARY KEY, Städte TEXT);
                 CREATE TABLE 销售 (编号 INTEGER PRIMARY KEY, 咖啡馆 INTEGER REFERENCES Café(id), 数量 INTEGER);
                 INSERT INTO Café VALUES (1, 'Paris'), (2, 'Wien');
                 INSERT INTO 销售 VALUES (1, 1, 10), (2, 2, 5), (3, 1, 7);",
            )
            .unwrap();
        let question = "How many units were sold in Paris?";
        let prompt = direct_prompt_text(&path, question);
        assert!(prompt.contains("CREATE TABLE 销售 ("), "{prompt}");
        assert!(prompt.contains("REFERENCES Café(id)"), "{prompt}");
        let answer = greedy_answer(&path, question, "```sql\nSELECT SUM(T1.数量) FROM 销售 AS T1 JOIN Café AS T2 ON T1.咖啡馆 = T2.id WHERE T2.Städte = 'Paris'\n```");
        assert_eq!(
            answer.result.unwrap().rows,
            vec![vec![crate::db::Value::Integer(17)]]
        );
    }

    #[test]
    fn names_with_spaces_are_plain_words_to_the_model_and_real_in_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let shop = spaced_shop(dir.path());
        let prompt = direct_prompt_text(&shop, "What is the revenue?");
        assert!(prompt.contains("CREATE TABLE Order_Items"), "{prompt}");
        assert!(prompt.contains("Unit_Price REAL"), "{prompt}");
        assert!(!prompt.contains("Unit Price"), "{prompt}");
        // The model's query names the price under the wrong table; the
        // error speaks of the plain word, so the repair can requalify it.
        let model = Arc::new(ScriptedModel::new(vec![
            "```sql\nSELECT SUM(T2.Unit_Price * T2.qty) FROM Products AS T1 JOIN Order_Items AS T2 ON T1.sku = T2.sku\n```",
        ]));
        let config = SearchConfig {
            method: Method::Greedy,
            name_constraint: false,
            mentioned_values: false,
            ..SearchConfig::default()
        };
        let answer = Engine::new(model, &shop, config)
            .unwrap()
            .answer("What is the revenue?", None)
            .unwrap();
        let sql = answer.sql.unwrap();
        assert_eq!(
            sql,
            r#"SELECT SUM(T1."Unit Price" * T2.qty) FROM Products AS T1 JOIN "Order Items" AS T2 ON T1.sku = T2.sku"#
        );
        assert_eq!(
            answer.result.unwrap().rows,
            vec![vec![crate::db::Value::Real(50.0)]]
        );
        // The answer runs as it is on the database itself.
        let direct = Executor::open(&shop, ExecConfig::default()).unwrap();
        assert!(direct.query(&sql).is_ok());
    }
}
