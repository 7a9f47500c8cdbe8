//! A model run in this process: our transformer, a tokenizer and chat
//! template, the prefix cache, and the generation loop (prefill, batched
//! sampling of n completions, stop handling). The GGUF and hub loaders build
//! one of these.

use super::chat::ChatTemplate;
use super::kv::KvCache;
use super::prefix_cache::PrefixCache;
use super::sampler::Sampler;
use super::transformer::{row_logits, Config, Transformer};
use super::{Completion, FinishReason, Generation, LanguageModel, Prompt, Sampling, Usage};
use crate::error::{first_line, Error, Result};
use candle_core::Tensor;
use std::sync::Mutex;
use std::time::Instant;
use tokenizers::Tokenizer;

/// Prompt tokens computed per forward pass during prefill: bounds the size
/// of the attention score matrix without costing throughput.
const PREFILL_CHUNK: usize = 512;

/// Memory kept for cached prompt prefixes.
const PREFIX_CACHE_BYTES: usize = 512 << 20;

/// Tokens that end a chat turn in the model families we run, whatever
/// end-of-sequence token a file names.
const TURN_END_MARKERS: [&str; 4] = [
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
];

pub struct LocalModel {
    name: String,
    transformer: Transformer,
    tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    /// Tokens that end a turn.
    stop_tokens: Vec<u32>,
    prefix_cache: Mutex<PrefixCache>,
}

impl LocalModel {
    /// `stop_tokens` are the ids the model's files name as ending a
    /// sequence; the usual turn-end markers are added.
    pub fn new(
        name: String,
        transformer: Transformer,
        tokenizer: Tokenizer,
        template: Option<ChatTemplate>,
        mut stop_tokens: Vec<u32>,
    ) -> Self {
        stop_tokens.extend(
            TURN_END_MARKERS
                .iter()
                .filter_map(|m| tokenizer.token_to_id(m)),
        );
        stop_tokens.sort_unstable();
        stop_tokens.dedup();
        LocalModel {
            name,
            transformer,
            tokenizer,
            template,
            stop_tokens,
            prefix_cache: Mutex::new(PrefixCache::new(PREFIX_CACHE_BYTES)),
        }
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn config(&self) -> &Config {
        &self.transformer.config
    }

    pub fn transformer(&self) -> &Transformer {
        &self.transformer
    }

    /// Forgets every cached prompt prefix.
    pub fn clear_prefix_cache(&self) {
        *self.prefix_cache.lock().expect("prefix cache lock") =
            PrefixCache::new(PREFIX_CACHE_BYTES);
    }

    /// The exact text the model sees for a prompt.
    pub fn render(&self, prompt: &Prompt) -> Result<String> {
        match prompt {
            Prompt::Raw(text) => Ok(text.clone()),
            Prompt::Chat(messages) => self
                .template
                .as_ref()
                .ok_or_else(|| {
                    Error::Inference(format!(
                        "{} has no chat template; use a raw prompt",
                        self.name
                    ))
                })?
                .render(messages)
                .map_err(Error::Inference),
        }
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| Error::Inference(format!("tokenizer: {e}")))
    }

    fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer
            .decode(ids, true)
            .map_err(|e| Error::Inference(format!("tokenizer: {e}")))
    }

    /// Fills a one-row cache with the prompt's states, reusing the longest
    /// cached prefix; returns the cache, the last position's logits and how
    /// many prompt tokens came from the prefix cache.
    pub fn prefill(
        &self,
        ids: &[u32],
        capacity: usize,
    ) -> candle_core::Result<(KvCache, Tensor, usize)> {
        let reusable = ids.len() - 1;
        let hit = self
            .prefix_cache
            .lock()
            .expect("prefix cache lock")
            .lookup(ids, reusable);
        let (mut cache, cached) = match hit {
            Some((snapshot, shared)) => {
                let snapshot = snapshot.truncated(shared)?;
                (
                    KvCache::from_snapshot(&snapshot, 1, capacity, self.transformer.device())?,
                    shared,
                )
            }
            None => (self.transformer.new_cache(1, capacity)?, 0),
        };
        // The last prompt token always runs on its own: then its logits are
        // computed the same way whether the rest came from the prefix cache
        // or not, and a repeated request samples exactly the same text.
        let (body, last) = ids.split_at(ids.len() - 1);
        for chunk in body[cached..].chunks(PREFILL_CHUNK) {
            let input = Tensor::new(chunk, self.transformer.device())?.unsqueeze(0)?;
            self.transformer.forward(&input, &mut cache)?;
        }
        let input = Tensor::new(last, self.transformer.device())?.unsqueeze(0)?;
        let logits = self.transformer.forward(&input, &mut cache)?;
        let snapshot = cache.snapshot(0, ids.len())?;
        self.prefix_cache
            .lock()
            .expect("prefix cache lock")
            .insert(ids.to_vec(), snapshot);
        Ok((cache, logits, cached))
    }

    fn run(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let text = self.render(prompt)?;
        let ids = self.encode(&text)?;
        let context = self.transformer.config.context_length;
        if ids.is_empty() {
            return Err(Error::Inference("the prompt is empty".into()));
        }
        if ids.len() >= context {
            return Err(Error::PromptTooLong {
                tokens: ids.len(),
                context,
            });
        }
        let max_tokens = sampling.max_tokens.min(context - ids.len());
        let n = sampling.n.max(1);
        let capacity = ids.len() + max_tokens;
        let started = Instant::now();
        let inference = |e: candle_core::Error| Error::Inference(first_line(e));
        let (single, first_logits, cached) = self.prefill(&ids, capacity).map_err(inference)?;
        let prefill_seconds = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let mut cache = if n == 1 {
            single
        } else {
            let snapshot = single.snapshot(0, ids.len()).map_err(inference)?;
            KvCache::from_snapshot(&snapshot, n, capacity, self.transformer.device())
                .map_err(inference)?
        };
        let first = row_logits(&first_logits, 0).map_err(inference)?;
        let mut rows: Vec<RowState> = (0..n)
            .map(|row| RowState::new(Sampler::new(sampling, row)))
            .collect();
        let mut logits: Vec<Vec<f32>> = vec![first; n];
        for step in 0..max_tokens {
            let mut next = Vec::with_capacity(n);
            for (row, state) in rows.iter_mut().enumerate() {
                if state.finished.is_some() {
                    next.push(state.last_token());
                    continue;
                }
                let token = state.sampler.next_token(&logits[row]);
                if self.stop_tokens.contains(&token) {
                    state.finished = Some(FinishReason::Stop);
                    next.push(token);
                    continue;
                }
                state.tokens.push(token);
                if !sampling.stop.is_empty() {
                    let text = self.decode(&state.tokens)?;
                    if sampling.stop.iter().any(|s| text.contains(s.as_str())) {
                        state.finished = Some(FinishReason::Stop);
                    }
                }
                next.push(token);
            }
            if rows.iter().all(|r| r.finished.is_some()) || step + 1 == max_tokens {
                break;
            }
            let input = Tensor::new(next.as_slice(), self.transformer.device())
                .and_then(|t| t.unsqueeze(1))
                .map_err(inference)?;
            let out = self
                .transformer
                .forward(&input, &mut cache)
                .map_err(inference)?;
            for (row, slot) in logits.iter_mut().enumerate() {
                if rows[row].finished.is_none() {
                    *slot = row_logits(&out, row).map_err(inference)?;
                }
            }
        }
        let decode_seconds = started.elapsed().as_secs_f64();

        let mut completions = Vec::with_capacity(n);
        let mut generated = 0;
        for state in rows {
            let mut text = self.decode(&state.tokens)?;
            let mut finish = state.finished.unwrap_or(FinishReason::Length);
            if let Some(cut) = sampling
                .stop
                .iter()
                .filter_map(|s| text.find(s.as_str()))
                .min()
            {
                text.truncate(cut);
                finish = FinishReason::Stop;
            }
            generated += state.tokens.len();
            completions.push(Completion {
                text,
                finish_reason: finish,
                generated_tokens: state.tokens.len(),
            });
        }
        Ok(Generation {
            completions,
            usage: Usage {
                prompt_tokens: ids.len(),
                cached_prompt_tokens: cached,
                generated_tokens: generated,
                prefill_seconds,
                decode_seconds,
            },
        })
    }
}

struct RowState {
    sampler: Sampler,
    tokens: Vec<u32>,
    finished: Option<FinishReason>,
}

impl RowState {
    fn new(sampler: Sampler) -> Self {
        RowState {
            sampler,
            tokens: Vec::new(),
            finished: None,
        }
    }

    /// What to feed for a finished row (its output is ignored).
    fn last_token(&self) -> u32 {
        self.tokens.last().copied().unwrap_or(0)
    }
}

impl LanguageModel for LocalModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        self.run(prompt, sampling)
    }
}
