//! The model layer: one trait the engine talks to, and the backends behind it.

pub mod batching;
pub mod bench;
pub mod card;
pub mod chat;
pub mod constraint;
pub mod cpu;
pub mod decoding;
pub mod embed;
mod exp;
pub mod gguf;
pub mod hub;
pub mod kv;
#[cfg(feature = "llama-cpp")]
pub mod llamacpp;
pub mod local;
mod lookup;
pub mod matrix;
pub mod open;
pub mod openai;
pub mod packed;
mod pooled_product;
pub mod prefix_cache;
pub mod pull;
mod repetition;
pub mod sampler;
pub mod scripted;
mod shared_out;
pub mod transformer;

use crate::error::{self, Error, Result};
use candle_core::{DType, Device};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One message of a chat prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.to_string(),
            content: content.into(),
        }
    }
}

/// What the model continues: chat messages rendered with the model's own
/// template (a final assistant message is a reply to continue), or raw
/// text used as is.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Chat(Vec<ChatMessage>),
    Raw(String),
}

/// How to pick tokens. Temperature 0 is greedy decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    /// 0 means no top-k cut.
    pub top_k: usize,
    /// Min-p: a token less likely than this share of the most likely
    /// token's probability (before temperature) is never drawn; 0 keeps all.
    pub min_p: f32,
    pub max_tokens: usize,
    /// Generation stops before the first occurrence of any of these.
    pub stop: Vec<String>,
    pub seed: u64,
    /// Completions to draw from the same prompt (decoded as one batch).
    pub n: usize,
    /// The index of the first completion among the rows of one larger
    /// request: each row's random stream comes from the seed and its
    /// index, so rows 4-7 asked for apart are rows 4-7 of one request for
    /// eight.
    pub first_row: usize,
    /// Rows of the larger request below this index (counted from its row
    /// 0, as `first_row` counts) decode at temperature 0: one request then
    /// holds greedy's completion beside its samples.
    pub greedy_rows: usize,
    /// Generate exactly `max_tokens` per completion, ignoring end-of-turn
    /// tokens and the repetition cut (stop strings still apply):
    /// benchmarks measure a fixed amount of decoding this way.
    pub to_limit: bool,
    /// A rule on the text (in-process backends only).
    pub constraint: Option<constraint::Constraint>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            max_tokens: 256,
            stop: Vec::new(),
            seed: 0,
            n: 1,
            first_row: 0,
            greedy_rows: 0,
            to_limit: false,
            constraint: None,
        }
    }
}

impl Sampling {
    /// How many of this request's rows, from its first, decode at
    /// temperature 0 (`greedy_rows` counts rows of the larger request).
    pub fn greedy_rows_here(&self) -> usize {
        self.greedy_rows
            .saturating_sub(self.first_row)
            .min(self.n.max(1))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// An end-of-turn token or a stop string.
    Stop,
    /// `max_tokens` reached.
    Length,
    /// Cut because the output kept repeating one short span.
    Repetition,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Completion {
    pub text: String,
    pub finish_reason: FinishReason,
    pub generated_tokens: usize,
}

/// What one call cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    /// Prompt tokens whose key/value states came from the prefix cache.
    pub cached_prompt_tokens: usize,
    pub generated_tokens: usize,
    /// Generated tokens guessed by lookup and checked by the model.
    pub guessed_tokens: usize,
    /// Guessed tokens the model kept: decoded without a pass of their own.
    pub kept_guesses: usize,
    pub prefill_seconds: f64,
    pub decode_seconds: f64,
}

impl Usage {
    pub fn computed_prompt_tokens(&self) -> usize {
        self.prompt_tokens - self.cached_prompt_tokens
    }

    pub fn seconds(&self) -> f64 {
        self.prefill_seconds + self.decode_seconds
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Generation {
    pub completions: Vec<Completion>,
    pub usage: Usage,
}

/// How likely a model finds a given text as the continuation of a prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ContinuationScore {
    /// The natural-log probability of the continuation's tokens, summed.
    pub log_prob: f64,
    pub tokens: usize,
    pub usage: Usage,
}

/// The seam between the engine and any language model.
pub trait LanguageModel: Send + Sync {
    /// A short name for traces and reports.
    fn name(&self) -> &str;

    /// Draws `sampling.n` completions of the prompt. The same prompt,
    /// sampling and seed give the same texts.
    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation>;

    /// Completes several requests; backends that can batch unequal prompts
    /// together override this.
    fn generate_many(&self, requests: &[(Prompt, Sampling)]) -> Result<Vec<Generation>> {
        requests
            .iter()
            .map(|(prompt, sampling)| self.generate(prompt, sampling))
            .collect()
    }

    /// Scores `continuation` as the text that follows `prompt` (an
    /// assistant reply to a chat), token by token; None where the backend
    /// cannot report probabilities.
    fn score(&self, _prompt: &Prompt, _continuation: &str) -> Result<Option<ContinuationScore>> {
        Ok(None)
    }

    /// Whether `score` reports probabilities here, for a caller that would
    /// arrange its calls differently to use them.
    fn can_score(&self) -> bool {
        false
    }

    /// Marks the start of a new question: the calls that follow must
    /// answer as they would in a fresh process, whatever earlier questions
    /// left in caches (a resumed bench run then equals an uninterrupted
    /// one). Caches may still save their work.
    fn begin_question(&self) {}

    /// A place among threads that call this model side by side and are
    /// batched together in lockstep (`batching`); None for backends that
    /// answer each call as it comes.
    fn seat(&self) -> Option<batching::Seat> {
        None
    }

    /// The text of the first token this model's tokenizer writes for
    /// `text`; None where the tokenizer is not at hand (a server).
    fn first_token_text(&self, _text: &str) -> Option<String> {
        None
    }

    /// How many tokens `text` costs in a prompt: the tokenizer's count,
    /// or [`estimate_tokens`] where the tokenizer is not at hand.
    fn count_tokens(&self, text: &str) -> usize {
        estimate_tokens(text)
    }
}

/// A tokenizer-free estimate of a text's tokens: Qwen2's and Llama 3's
/// tokenizers write each digit as a token of its own, and the rest of a
/// schema's text runs at 2.4 to 3.2 characters a token with Qwen2.5's
/// (Spider's and LogicCat's schemas; 3.8 for BIRD's described one).
pub fn estimate_tokens(text: &str) -> usize {
    let digits = text.chars().filter(char::is_ascii_digit).count();
    digits + (text.chars().count() - digits) * 2 / 5
}

/// Picks a device from `cpu` or `cuda:N` (the latter needs the `cuda` feature).
pub fn device(spec: &str) -> Result<Device> {
    match spec {
        "cpu" => Ok(Device::Cpu),
        _ => {
            let ordinal = spec
                .strip_prefix("cuda")
                .map(|rest| rest.trim_start_matches(':'))
                .map(|n| {
                    if n.is_empty() {
                        Ok(0)
                    } else {
                        n.parse::<usize>()
                    }
                });
            match ordinal {
                Some(Ok(n)) => Device::new_cuda(n).map_err(|e| {
                    Error::InvalidArgument(format!(
                        "cannot use {spec}: {} (build with --features cuda on a machine with CUDA)",
                        error::first_line(e)
                    ))
                }),
                _ => Err(Error::InvalidArgument(format!(
                    "unknown device `{spec}`; use cpu or cuda:N"
                ))),
            }
        }
    }
}

/// Loads a model run in this process from `spec`: a GGUF path or model
/// name, a directory holding a Hugging Face checkpoint, or `hf:OWNER/REPO`
/// (downloaded with hf-hub where the machine has internet).
pub fn load_local(spec: &str, device: &Device) -> Result<local::LocalModel> {
    // bf16 halves memory traffic on GPUs; CPUs compute fastest in f32.
    let dtype = if device.is_cpu() {
        DType::F32
    } else {
        DType::BF16
    };
    if let Some(repo) = spec.strip_prefix("hf:") {
        let (repo, revision) = repo.split_once('@').unwrap_or((repo, "main"));
        return hub::load(
            &hub::CheckpointFiles::from_hub(repo, revision)?,
            device,
            dtype,
        );
    }
    if Path::new(spec).is_dir() {
        return hub::load(
            &hub::CheckpointFiles::in_dir(Path::new(spec))?,
            device,
            dtype,
        );
    }
    gguf::load(&gguf::resolve_model_path(spec)?)
}

/// The tokenizer of the model `spec` names (a GGUF file or model name, or
/// a checkpoint directory), read without its weights.
pub fn load_tokenizer(spec: &str) -> Result<tokenizers::Tokenizer> {
    let dir = Path::new(spec);
    if dir.is_dir() {
        return hub::CheckpointFiles::in_dir(dir)?.tokenizer();
    }
    gguf::load_tokenizer(&gguf::resolve_model_path(spec)?)
}

/// Loads a GGUF model (a path or a model name) on llama.cpp in this
/// process, computing with `threads` threads.
#[cfg(feature = "llama-cpp")]
pub fn load_llamacpp(spec: &str, threads: usize) -> Result<std::sync::Arc<dyn LanguageModel>> {
    Ok(std::sync::Arc::new(llamacpp::LlamaCppModel::load(
        &gguf::resolve_model_path(spec)?,
        threads,
    )?))
}

/// Loads a GGUF model on llama.cpp: this build has none.
#[cfg(not(feature = "llama-cpp"))]
pub fn load_llamacpp(_spec: &str, _threads: usize) -> Result<std::sync::Arc<dyn LanguageModel>> {
    Err(no_llamacpp())
}

/// Fails when this build has no llama.cpp backend, so that a run asking
/// for it stops before a model is pulled or loaded.
pub fn require_llamacpp() -> Result<()> {
    if cfg!(feature = "llama-cpp") {
        Ok(())
    } else {
        Err(no_llamacpp())
    }
}

fn no_llamacpp() -> Error {
    Error::InvalidArgument(
        "this build has no llama.cpp backend; build with `cargo build --release --features llama-cpp` (needs cmake and libclang)".into(),
    )
}
