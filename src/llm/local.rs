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
        // A repeated prompt is already cached: skip copying its states again.
        let covered = self
            .prefix_cache
            .lock()
            .expect("prefix cache lock")
            .covers(ids);
        if !covered {
            let snapshot = cache.snapshot(0, ids.len())?;
            self.prefix_cache
                .lock()
                .expect("prefix cache lock")
                .insert(ids.to_vec(), snapshot);
        }
        Ok((cache, logits, cached))
    }

    /// Prompt tokens, checked against the context length.
    fn prompt_ids(&self, prompt: &Prompt) -> Result<Vec<u32>> {
        let ids = self.encode(&self.render(prompt)?)?;
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
        Ok(ids)
    }

    fn max_new_tokens(&self, prompt_len: usize, sampling: &Sampling) -> usize {
        sampling
            .max_tokens
            .min(self.transformer.config.context_length - prompt_len)
    }

    fn run(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let ids = self.prompt_ids(prompt)?;
        let max_tokens = self.max_new_tokens(ids.len(), sampling);
        let n = sampling.n.max(1);
        let capacity = ids.len() + max_tokens;
        let started = Instant::now();
        let (single, first_logits, cached) = self.prefill(&ids, capacity).map_err(inference)?;
        let prefill_seconds = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let mut cache = if n == 1 {
            single
        } else {
            single.share(n, capacity).map_err(inference)?
        };
        let first = row_logits(&first_logits, 0).map_err(inference)?;
        let mut rows: Vec<RowState> = (0..n)
            .map(|row| RowState::new(sampling, row, max_tokens))
            .collect();
        self.decode_rows(&mut cache, &mut rows, vec![first; n])?;
        let decode_seconds = started.elapsed().as_secs_f64();
        let (completions, generated) = self.completions(rows)?;
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

    /// Several prompts of unequal length in one batch: left-padded to a
    /// common length, prefilled together, then every sample of every
    /// request decoded together. Each request's usage reports the batch's
    /// wall times.
    fn run_many(&self, requests: &[(Prompt, Sampling)]) -> Result<Vec<Generation>> {
        let prompts = requests
            .iter()
            .map(|(prompt, _)| self.prompt_ids(prompt))
            .collect::<Result<Vec<_>>>()?;
        let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
        let limits: Vec<usize> = prompts
            .iter()
            .zip(requests)
            .map(|(ids, (_, sampling))| self.max_new_tokens(ids.len(), sampling))
            .collect();
        let capacity = longest + limits.iter().max().copied().unwrap_or(0);
        let started = Instant::now();
        let (cache, first_logits) = self
            .prefill_padded(&prompts, longest, capacity)
            .map_err(inference)?;
        let prefill_seconds = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let mut sources = Vec::new();
        let mut rows = Vec::new();
        let mut logits = Vec::new();
        for (request, (_, sampling)) in requests.iter().enumerate() {
            let first = row_logits(&first_logits, request).map_err(inference)?;
            for row in 0..sampling.n.max(1) {
                sources.push(request);
                rows.push(RowState::new(sampling, row, limits[request]));
                logits.push(first.clone());
            }
        }
        let mut cache = cache.select_rows(&sources).map_err(inference)?;
        self.decode_rows(&mut cache, &mut rows, logits)?;
        let decode_seconds = started.elapsed().as_secs_f64();

        let mut generations: Vec<Generation> = prompts
            .iter()
            .map(|ids| Generation {
                completions: Vec::new(),
                usage: Usage {
                    prompt_tokens: ids.len(),
                    prefill_seconds,
                    decode_seconds,
                    ..Usage::default()
                },
            })
            .collect();
        for (request, state) in sources.into_iter().zip(rows) {
            let (mut completions, generated) = self.completions(vec![state])?;
            let generation = &mut generations[request];
            generation.completions.append(&mut completions);
            generation.usage.generated_tokens += generated;
        }
        Ok(generations)
    }

    /// Prefills left-padded prompts as one batch; returns the cache and the
    /// logits of each row's last prompt token.
    fn prefill_padded(
        &self,
        prompts: &[Vec<u32>],
        longest: usize,
        capacity: usize,
    ) -> candle_core::Result<(KvCache, Tensor)> {
        let device = self.transformer.device();
        let mut cache = self.transformer.new_cache(prompts.len(), capacity)?;
        cache.set_padding(prompts.iter().map(|ids| longest - ids.len()).collect());
        // Padding slots hold a real token id; their states are masked out.
        let padded: Vec<Vec<u32>> = prompts
            .iter()
            .map(|ids| {
                let mut row = vec![ids[0]; longest - ids.len()];
                row.extend_from_slice(ids);
                row
            })
            .collect();
        let mut column = 0;
        while column < longest - 1 {
            let width = PREFILL_CHUNK.min(longest - 1 - column);
            let chunk: Vec<u32> = padded
                .iter()
                .flat_map(|row| row[column..column + width].iter().copied())
                .collect();
            let input = Tensor::from_vec(chunk, (prompts.len(), width), device)?;
            self.transformer.forward(&input, &mut cache)?;
            column += width;
        }
        let last: Vec<u32> = padded.iter().map(|row| row[longest - 1]).collect();
        let input = Tensor::from_vec(last, (prompts.len(), 1), device)?;
        let logits = self.transformer.forward(&input, &mut cache)?;
        Ok((cache, logits))
    }

    /// Samples every row until each stops or reaches its token limit,
    /// feeding all rows through the model together at each step.
    fn decode_rows(
        &self,
        cache: &mut KvCache,
        rows: &mut [RowState],
        mut logits: Vec<Vec<f32>>,
    ) -> Result<()> {
        loop {
            let mut next = Vec::with_capacity(rows.len());
            for (row, state) in rows.iter_mut().enumerate() {
                if state.finished.is_none() {
                    let token = state.sampler.next_token(&logits[row]);
                    self.accept(state, token)?;
                }
                next.push(state.last_token());
            }
            if rows.iter().all(|r| r.finished.is_some()) {
                return Ok(());
            }
            let input = Tensor::new(next.as_slice(), self.transformer.device())
                .and_then(|t| t.unsqueeze(1))
                .map_err(inference)?;
            let out = self.transformer.forward(&input, cache).map_err(inference)?;
            for (row, slot) in logits.iter_mut().enumerate() {
                if rows[row].finished.is_none() {
                    *slot = row_logits(&out, row).map_err(inference)?;
                }
            }
        }
    }

    /// Records a sampled token and decides whether its row is done.
    fn accept(&self, state: &mut RowState, token: u32) -> Result<()> {
        if self.stop_tokens.contains(&token) {
            state.finished = Some(FinishReason::Stop);
            return Ok(());
        }
        state.tokens.push(token);
        if !state.stop.is_empty() {
            let text = self.decode(&state.tokens)?;
            if state.stop.iter().any(|s| text.contains(s.as_str())) {
                state.finished = Some(FinishReason::Stop);
                return Ok(());
            }
        }
        if state.tokens.len() >= state.max_tokens {
            state.finished = Some(FinishReason::Length);
        } else if super::repetition::ends_in_loop(&state.tokens) {
            state.finished = Some(FinishReason::Repetition);
        }
        Ok(())
    }

    /// Texts (cut at the first stop string) and the total generated tokens.
    fn completions(&self, rows: Vec<RowState>) -> Result<(Vec<Completion>, usize)> {
        let mut completions = Vec::with_capacity(rows.len());
        let mut generated = 0;
        for state in rows {
            let mut text = self.decode(&state.tokens)?;
            let mut finish = state.finished.unwrap_or(FinishReason::Length);
            if let Some(cut) = state
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
        Ok((completions, generated))
    }
}

fn inference(e: candle_core::Error) -> Error {
    Error::Inference(first_line(e))
}

struct RowState {
    sampler: Sampler,
    tokens: Vec<u32>,
    max_tokens: usize,
    stop: Vec<String>,
    finished: Option<FinishReason>,
}

impl RowState {
    fn new(sampling: &Sampling, row: usize, max_tokens: usize) -> Self {
        RowState {
            sampler: Sampler::new(sampling, row),
            tokens: Vec::new(),
            max_tokens,
            stop: sampling.stop.clone(),
            finished: (max_tokens == 0).then_some(FinishReason::Length),
        }
    }

    /// What to feed next (for a finished row, anything: its output is ignored).
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

    fn generate_many(&self, requests: &[(Prompt, Sampling)]) -> Result<Vec<Generation>> {
        match requests {
            [] => Ok(Vec::new()),
            [(prompt, sampling)] => Ok(vec![self.run(prompt, sampling)?]),
            _ => self.run_many(requests),
        }
    }
}
