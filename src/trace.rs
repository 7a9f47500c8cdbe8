//! Everything that happens while answering one question: every model call
//! (prompt, sampling, outputs, usage), every candidate with its execution
//! result and score. Written as JSON by `--trace`.

use crate::db::QueryResult;
use crate::error::QueryError;
use crate::llm::{ChatMessage, FinishReason, Generation, Sampling, Usage};
use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Trace {
    pub question: String,
    pub hint: Option<String>,
    pub database: String,
    pub method: String,
    pub model: String,
    /// The tables the one-call prompts showed, when the schema was focused
    /// on the question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focused_tables: Option<Vec<String>>,
    /// The worked examples the direct prompts showed
    /// (`dataset/database/question id`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub demonstrations: Vec<String>,
    pub calls: Vec<CallRecord>,
    pub candidates: Vec<CandidateRecord>,
    /// Stage 1 (tree search only; absent when it was switched off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub understanding: Option<crate::understand::UnderstandingRecord>,
    /// Stage 2: every node of the search tree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tree: Vec<TreeNodeRecord>,
    /// Stage 3: each candidate's score terms.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selection: Vec<crate::select::ScoredCandidate>,
    /// The question's log-probability after each distinct query that ran,
    /// when the reviewer chose among disagreeing results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub review: Vec<crate::select::review::ReviewRecord>,
    pub answer: Option<String>,
    pub cost: Cost,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// Which part of the method made the call.
    pub stage: String,
    pub prompt: Vec<ChatMessage>,
    pub temperature: f32,
    pub n: usize,
    pub seed: u64,
    /// The row the completions' random streams start from (`Sampling::first_row`).
    #[serde(skip_serializing_if = "is_zero")]
    pub first_row: usize,
    /// Rows of the larger request decoded at temperature 0
    /// (`Sampling::greedy_rows`).
    #[serde(skip_serializing_if = "is_zero")]
    pub greedy_rows: usize,
    pub outputs: Vec<String>,
    /// Why each completion ended, in the order of `outputs`.
    pub finish_reasons: Vec<FinishReason>,
    pub usage: Usage,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CallRecord {
    /// One call as asked and answered.
    pub fn new(
        stage: impl Into<String>,
        prompt: Vec<ChatMessage>,
        sampling: &Sampling,
        generation: Generation,
    ) -> Self {
        CallRecord {
            stage: stage.into(),
            prompt,
            temperature: sampling.temperature,
            n: sampling.n,
            seed: sampling.seed,
            first_row: sampling.first_row,
            greedy_rows: sampling.greedy_rows,
            finish_reasons: generation
                .completions
                .iter()
                .map(|c| c.finish_reason)
                .collect(),
            outputs: generation.completions.into_iter().map(|c| c.text).collect(),
            usage: generation.usage,
        }
    }

    /// A pass that scored a given text after `prompt` and generated
    /// nothing (`stage` says what it found).
    pub fn scored(stage: impl Into<String>, prompt: Vec<ChatMessage>, usage: Usage) -> Self {
        CallRecord {
            stage: stage.into(),
            prompt,
            temperature: 0.0,
            n: 0,
            seed: 0,
            first_row: 0,
            greedy_rows: 0,
            outputs: Vec::new(),
            finish_reasons: Vec::new(),
            usage,
        }
    }

    /// Whether completion `row` was cut off (by the token limit or a loop)
    /// rather than ended by the model.
    pub fn was_cut(&self, row: usize) -> bool {
        self.finish_reasons
            .get(row)
            .is_some_and(|&r| r != FinishReason::Stop)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CandidateRecord {
    pub sql: String,
    pub execution: Execution,
    /// Candidates whose result equals this one's (itself included).
    pub votes: usize,
    pub score: f64,
}

/// One node of the search tree.
#[derive(Debug, Clone, Serialize)]
pub struct TreeNodeRecord {
    pub id: usize,
    pub parent: Option<usize>,
    /// The action's id (A1..A6); None at the root.
    pub action: Option<String>,
    pub depth: usize,
    pub visits: u32,
    pub value: f64,
    pub terminal: bool,
    pub reward: Option<f64>,
    /// What the step wrote (the model's text, parsed).
    pub output: Option<String>,
    pub parse_error: Option<String>,
    pub sql: Option<String>,
    pub execution: Option<Execution>,
    /// Queries sampled for the agreement reward, and whether each agreed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reward_samples: Vec<(Option<String>, bool)>,
}

/// An execution outcome, summarised for the trace.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Execution {
    Ok {
        columns: Vec<String>,
        total_rows: usize,
        /// The first rows, for reading the trace.
        preview: Vec<Vec<crate::db::Value>>,
    },
    Failed {
        error: String,
    },
}

impl Execution {
    pub fn from_outcome(outcome: &Result<std::sync::Arc<QueryResult>, QueryError>) -> Self {
        match outcome {
            Ok(result) => Execution::Ok {
                columns: result.columns.clone(),
                total_rows: result.total_rows,
                preview: result.rows.iter().take(5).cloned().collect(),
            },
            Err(e) => Execution::Failed {
                error: e.to_string(),
            },
        }
    }
}

/// What answering cost, summed over calls.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Cost {
    pub calls: usize,
    pub prompt_tokens: usize,
    pub cached_prompt_tokens: usize,
    pub generated_tokens: usize,
    pub guessed_tokens: usize,
    pub kept_guesses: usize,
    pub seconds: f64,
}

impl Cost {
    pub fn add(&mut self, usage: &Usage) {
        self.calls += 1;
        self.prompt_tokens += usage.prompt_tokens;
        self.cached_prompt_tokens += usage.cached_prompt_tokens;
        self.generated_tokens += usage.generated_tokens;
        self.guessed_tokens += usage.guessed_tokens;
        self.kept_guesses += usage.kept_guesses;
    }
}
