//! llama.cpp run in this process (the `llama-cpp` feature): its forward
//! pass and key/value cache under our own tokenizer, chat template and
//! sampling (`decoding`), so it answers exactly like the candle backend
//! apart from arithmetic.
//!
//! The cache keeps the last prompt in sequence 0: a call that starts with
//! the same tokens computes only the rest. The n completions of a call are
//! sequences 0..n that share the prompt's cells (llama.cpp's sequence copy
//! only tags cells, it copies no states) and are decoded as one batch.

use super::decoding::{RowState, TextCodec};
use super::{Generation, LanguageModel, Prompt, Sampling, Usage};
use crate::error::{first_line, Error, Result};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Key/value cells of the one context: prompts, plus every completion's
/// own tokens.
const CELLS: u32 = 16_384;

/// Completions decoded together; more are decoded group by group.
const SEQUENCES: usize = 32;

/// Prompt tokens per forward pass.
const PREFILL_CHUNK: usize = 512;

pub struct LlamaCppModel {
    codec: TextCodec,
    engine: Mutex<Engine>,
}

struct Engine {
    context: LlamaContext<'static>,
    batch: LlamaBatch<'static>,
    /// The prompt whose states sequence 0 holds.
    cached: Vec<u32>,
}

/// llama.cpp's process-wide state, set up once.
fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            LlamaBackend::init()
                .map(|mut backend| {
                    backend.void_logs();
                    backend
                })
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Inference(format!("llama.cpp did not start: {e}")))
}

impl LlamaCppModel {
    /// Loads a GGUF file; `threads` computes every forward pass.
    pub fn load(path: &Path, threads: usize) -> Result<Self> {
        // Our reader checks the file first, so a missing or corrupt file
        // gets the same error as with the candle backend.
        let codec = super::gguf::load_codec(path)?.with_context_length(CELLS as usize);
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| Error::model_corrupt(path, format!("llama.cpp: {e}")))?;
        // The model lives as long as the process: contexts borrow it, and a
        // process loads a model once.
        let model: &'static LlamaModel = Box::leak(Box::new(model));
        let threads = i32::try_from(threads.max(1)).unwrap_or(i32::MAX);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(CELLS))
            .with_n_batch(PREFILL_CHUNK as u32)
            .with_n_ubatch(PREFILL_CHUNK as u32)
            .with_n_seq_max(SEQUENCES as u32)
            // One cell pool for all sequences, so completions share their
            // prompt's cells instead of copying them.
            .with_kv_unified(true)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let context = model
            .new_context(backend, params)
            .map_err(|e| Error::Inference(format!("llama.cpp context: {e}")))?;
        Ok(LlamaCppModel {
            codec,
            engine: Mutex::new(Engine {
                context,
                batch: LlamaBatch::new(PREFILL_CHUNK.max(SEQUENCES), SEQUENCES as i32),
                cached: Vec::new(),
            }),
        })
    }

    fn run(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let ids = self.codec.prompt_ids(prompt)?;
        let max_tokens = self.codec.max_new_tokens(ids.len(), sampling);
        let mut engine = self.engine.lock().expect("llama.cpp engine lock");
        let started = Instant::now();
        let (first, cached) = engine.prefill(&ids)?;
        let prefill_seconds = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let mut rows = RowState::for_request(sampling, max_tokens);
        for group in rows.chunks_mut(SEQUENCES) {
            let decoded = engine.decode_group(&self.codec, group, &first, ids.len());
            // A lone completion stays in sequence 0 after its prompt: a next
            // prompt that goes on from this answer reuses its states.
            let kept: &[u32] = match (&decoded, &*group) {
                (Ok(fed), [row]) => &row.tokens()[..(*fed).min(row.tokens().len())],
                _ => &[],
            };
            engine.forget_completions(ids.len() + kept.len())?;
            engine.cached.extend_from_slice(kept);
            decoded?;
        }
        let decode_seconds = started.elapsed().as_secs_f64();
        let (completions, generated) = self.codec.completions(rows)?;
        Ok(Generation {
            completions,
            usage: Usage {
                prompt_tokens: ids.len(),
                cached_prompt_tokens: cached,
                generated_tokens: generated,
                prefill_seconds,
                decode_seconds,
                ..Usage::default()
            },
        })
    }
}

impl Engine {
    /// Puts the prompt's states in sequence 0, computing only what the last
    /// prompt does not share; returns the last position's logits and the
    /// number of reused tokens.
    fn prefill(&mut self, ids: &[u32]) -> Result<(Vec<f32>, usize)> {
        // The last token always runs on its own (as in the candle backend),
        // so a repeated prompt gets exactly the same logits.
        let reusable = common_prefix(&self.cached, ids).min(ids.len() - 1);
        self.context
            .clear_kv_cache_seq(Some(0), Some(reusable as u32), None)
            .map_err(llama)?;
        self.cached.truncate(reusable);
        let (body, last) = ids.split_at(ids.len() - 1);
        for (index, chunk) in body[reusable..].chunks(PREFILL_CHUNK).enumerate() {
            let start = reusable + index * PREFILL_CHUNK;
            self.batch.clear();
            for (offset, &id) in chunk.iter().enumerate() {
                self.batch
                    .add(token(id), (start + offset) as i32, &[0], false)
                    .map_err(llama)?;
            }
            self.decode()?;
        }
        self.batch.clear();
        self.batch
            .add(token(last[0]), (ids.len() - 1) as i32, &[0], true)
            .map_err(llama)?;
        self.decode()?;
        self.cached = ids.to_vec();
        Ok((self.context.get_logits_ith(0).to_vec(), reusable))
    }

    /// Decodes up to `SEQUENCES` completions of the prompt in sequence 0;
    /// returns how many positions each sequence was fed past the prompt.
    fn decode_group(
        &mut self,
        codec: &TextCodec,
        rows: &mut [RowState],
        first: &[f32],
        prompt_len: usize,
    ) -> Result<usize> {
        for row in 1..rows.len() {
            self.context
                .copy_kv_cache_seq(0, row as i32, None, None)
                .map_err(llama)?;
        }
        let mut position = prompt_len as i32;
        codec.decode_rows(rows, vec![first.to_vec(); rows.len()], |next, running| {
            self.batch.clear();
            for (row, (&id, _)) in next
                .iter()
                .zip(running)
                .enumerate()
                .filter(|(_, (_, &run))| run)
            {
                self.batch
                    .add(token(id), position, &[row as i32], true)
                    .map_err(llama)?;
            }
            self.decode()?;
            position += 1;
            let mut index = 0;
            Ok(running
                .iter()
                .map(|&run| {
                    if !run {
                        return Vec::new();
                    }
                    let logits = self.context.get_logits_ith(index).to_vec();
                    index += 1;
                    logits
                })
                .collect())
        })?;
        Ok(position as usize - prompt_len)
    }

    /// Drops every completion's states, keeping the first `kept` positions
    /// of sequence 0.
    fn forget_completions(&mut self, kept: usize) -> Result<()> {
        self.context
            .clear_kv_cache_seq(Some(0), Some(kept as u32), None)
            .map_err(llama)?;
        for row in 1..SEQUENCES as u32 {
            self.context
                .clear_kv_cache_seq(Some(row), None, None)
                .map_err(llama)?;
        }
        Ok(())
    }

    fn decode(&mut self) -> Result<()> {
        self.context.decode(&mut self.batch).map_err(|e| {
            // Whatever failed, the cache no longer matches `cached`.
            self.cached.clear();
            self.context.clear_kv_cache();
            match e {
                DecodeError::NoKvCacheSlot => Error::Inference(format!(
                    "llama.cpp: the prompt and its completions need more than {CELLS} cache cells; ask for fewer or shorter completions"
                )),
                other => llama(other),
            }
        })
    }
}

fn token(id: u32) -> LlamaToken {
    LlamaToken(id as i32)
}

fn llama(e: impl std::fmt::Display) -> Error {
    Error::Inference(format!("llama.cpp: {}", first_line(e)))
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl LanguageModel for LlamaCppModel {
    fn name(&self) -> &str {
        self.codec.name()
    }

    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        self.run(prompt, sampling)
    }

    fn first_token_text(&self, text: &str) -> Option<String> {
        self.codec.first_token_text(text)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.codec.count_tokens(text)
    }
}
