//! A model run in this process: our transformer, a tokenizer and chat
//! template, the prefix cache, and the generation loop (prefill, batched
//! sampling of n completions, stop handling). The GGUF and hub loaders build
//! one of these.

use super::decoding::{DraftCount, DraftTarget, RowState, TextCodec};
use super::kv::{KvCache, KvSnapshot};
use super::lookup::RecentAnswers;
use super::prefix_cache::{whole_blocks, PrefixCache};
use super::transformer::{all_row_logits, row_logits, Config, Transformer};
use super::{ContinuationScore, Generation, LanguageModel, Prompt, Sampling, Usage};
use crate::error::{first_line, Error, Result};
use candle_core::Tensor;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Instant;
use tokenizers::Tokenizer;

/// Prompt tokens computed per forward pass during prefill on a CPU, in
/// blocks aligned to its multiples (see `prefix_cache`): bounds the size
/// of the attention score matrix. On a 2-core CPU (0.5B model, 1,500-token
/// prompt) blocks of 128 prefill as fast as blocks of 512, blocks of 64
/// at about half the rate.
const CPU_PREFILL_CHUNK: usize = 128;

/// The same on a GPU, where every pass reads all the weights and pays a
/// fixed launch cost (a one-row pass of a 7B model took 8.4 ms on an H200,
/// while 128 positions' products take about 2.5 at its measured
/// 790 TFLOP/s): fewer, larger passes.
const GPU_PREFILL_CHUNK: usize = 1024;

/// Prompt positions per prefill pass on the transformer's device.
fn prefill_chunk(transformer: &Transformer) -> usize {
    if transformer.device().is_cpu() {
        CPU_PREFILL_CHUNK
    } else {
        GPU_PREFILL_CHUNK
    }
}

/// Memory kept for cached prompt prefixes.
const PREFIX_CACHE_BYTES: usize = 512 << 20;

/// Guessed tokens checked per pass. On a 2-core CPU with the 0.5B model
/// and a 1,000-token context, a pass over 2, 3, 5 and 8 positions costs
/// 1.3, 1.6, 2.0 and 2.8 one-token passes, and about half the guesses are
/// kept; replaying one search's calls, 2 and 3 guesses decode fastest.
pub const DEFAULT_MAX_DRAFT: usize = 3;

/// On a CPU, calls of up to this many completions check guesses; bigger
/// ones decode one token per row and pass. A pass costs about 17 ms plus
/// 6 ms per position on a 2-core CPU (0.5B model, 1,000-token context), so
/// the positions of guesses that fail or fill a shorter row's input weigh
/// more as rows are added. Measured there: replaying one search's calls,
/// rows of 3 decode at 74 tok/s with guesses against 64 without; 8
/// self-consistency samples at 56 with against 75 without.
const DRAFTED_ROWS: usize = 3;

/// Answers kept as a lookup source for guessing the next calls' tokens.
const RECENT_ANSWERS: usize = 16;

/// A prompt's states after prefill.
pub struct Prefilled {
    pub cache: KvCache,
    /// The last position's logits.
    pub logits: Tensor,
    /// Positions that came from the prefix cache.
    pub cached: usize,
    /// Leading positions computed in whole aligned blocks (`prefix_cache`).
    pub exact: usize,
}

pub struct LocalModel {
    codec: TextCodec,
    transformer: Transformer,
    prefix_cache: Mutex<PrefixCache>,
    /// Guessed tokens checked per pass (see `DRAFTED_ROWS` for which
    /// calls); 0 decodes one token per pass.
    max_draft: usize,
    questions: Mutex<Questions>,
}

/// The question each calling thread is answering: threads that answer
/// questions side by side each see only their own question's cached
/// prefixes as the current question's, and their own answers as guesses.
#[derive(Default)]
struct Questions {
    by_thread: HashMap<ThreadId, Question>,
    last: u64,
}

struct Question {
    /// The prefix cache's name for the question (its epoch).
    tag: u64,
    recent: RecentAnswers,
}

impl Questions {
    /// The calling thread's question (a thread that never began one is in
    /// question 0).
    fn current(&mut self) -> &mut Question {
        self.by_thread
            .entry(std::thread::current().id())
            .or_insert_with(|| Question {
                tag: 0,
                recent: RecentAnswers::new(RECENT_ANSWERS),
            })
    }
}

impl LocalModel {
    pub fn new(codec: TextCodec, transformer: Transformer) -> Self {
        let prefix_cache = PrefixCache::new(PREFIX_CACHE_BYTES, prefill_chunk(&transformer));
        LocalModel {
            codec,
            transformer,
            prefix_cache: Mutex::new(prefix_cache),
            max_draft: DEFAULT_MAX_DRAFT,
            questions: Mutex::new(Questions::default()),
        }
    }

    /// Checks up to `tokens` guessed tokens per pass (0: none) in calls of
    /// one completion, or up to `DRAFTED_ROWS` on a CPU.
    pub fn with_max_draft(mut self, tokens: usize) -> Self {
        self.max_draft = tokens;
        self
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        self.codec.tokenizer()
    }

    pub fn config(&self) -> &Config {
        &self.transformer.config
    }

    pub fn transformer(&self) -> &Transformer {
        &self.transformer
    }

    /// The prefix cache, seen from the calling thread's question.
    fn prefixes(&self) -> MutexGuard<'_, PrefixCache> {
        let question = self.question();
        let mut prefixes = self.prefix_cache.lock().expect("prefix cache lock");
        prefixes.set_epoch(question);
        prefixes
    }

    fn questions(&self) -> MutexGuard<'_, Questions> {
        self.questions.lock().expect("questions lock")
    }

    /// Forgets every cached prompt prefix.
    pub fn clear_prefix_cache(&self) {
        *self.prefix_cache.lock().expect("prefix cache lock") =
            PrefixCache::new(PREFIX_CACHE_BYTES, prefill_chunk(&self.transformer));
    }

    /// The exact text the model sees for a prompt.
    pub fn render(&self, prompt: &Prompt) -> Result<String> {
        self.codec.render(prompt)
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.codec.encode(text)
    }

    /// Fills a one-row cache with the prompt's states, reusing the longest
    /// usable cached prefix. Keeping the new states is the caller's choice
    /// (`remember`, `prompt_states`).
    pub fn prefill(&self, ids: &[u32], capacity: usize) -> candle_core::Result<Prefilled> {
        let (body, last) = ids.split_at(ids.len() - 1);
        let hit = self.prefixes().lookup(ids, body.len());
        let device = self.transformer.device();
        // Whole blocks computed on from an exact, aligned start are exact
        // too; otherwise only what was exact before.
        let chunk = prefill_chunk(&self.transformer);
        let exact = match &hit {
            Some(hit) if !hit.continues_exactly(chunk) => whole_blocks(hit.exact, chunk),
            _ => whole_blocks(body.len(), chunk),
        };
        let (mut cache, cached) = match hit {
            Some(hit) => {
                let snapshot = hit.kv.truncated(hit.shared)?;
                let cache = KvCache::from_snapshot(&snapshot, 1, capacity, device)?;
                (cache, hit.shared)
            }
            None => (self.transformer.new_cache(1, capacity)?, 0),
        };
        let mut start = cached;
        while start < body.len() {
            let end = ((start / chunk + 1) * chunk).min(body.len());
            let input = Tensor::new(&body[start..end], device)?.unsqueeze(0)?;
            self.transformer.forward(&input, &mut cache)?;
            start = end;
        }
        // The last prompt token always runs on its own: then its logits are
        // computed the same way whether the rest came from the prefix cache
        // or not, and a repeated request samples exactly the same text.
        let input = Tensor::new(last, device)?.unsqueeze(0)?;
        let logits = self.transformer.forward(&input, &mut cache)?;
        Ok(Prefilled {
            cache,
            logits,
            cached,
            exact,
        })
    }

    /// Keeps the states of `tokens`, the first positions of `cache`'s row
    /// 0, for later prompts that start with them.
    fn remember(&self, tokens: &[u32], cache: &KvCache, exact: usize) -> candle_core::Result<()> {
        self.remember_with(tokens, exact, || cache.snapshot(0, tokens.len()))
    }

    /// Keeps the states of `tokens`, which `states` copies out when they
    /// are not cached yet, for later prompts that start with them.
    pub(crate) fn remember_with(
        &self,
        tokens: &[u32],
        exact: usize,
        states: impl FnOnce() -> candle_core::Result<KvSnapshot>,
    ) -> candle_core::Result<()> {
        // Tokens already cached (a repeated request): skip copying them again.
        if self.prefixes().covers(tokens) {
            return Ok(());
        }
        let snapshot = states()?;
        self.prefixes().insert(tokens.to_vec(), snapshot, exact);
        Ok(())
    }

    /// Makes the calling thread's next calls count as question
    /// `question`'s (a tag `begin_question` gave out): a thread that makes
    /// the calls of several questions names each call's question first.
    pub(crate) fn enter_question(&self, question: u64) {
        self.questions().current().tag = question;
    }

    /// The tag of the calling thread's question.
    pub(crate) fn question(&self) -> u64 {
        self.questions().current().tag
    }

    /// Starts a new question for the calling thread and returns its tag.
    pub(crate) fn new_question(&self) -> u64 {
        let mut questions = self.questions();
        questions.last += 1;
        let tag = questions.last;
        let current = questions.current();
        current.tag = tag;
        current.recent = RecentAnswers::new(RECENT_ANSWERS);
        tag
    }

    pub(crate) fn codec(&self) -> &TextCodec {
        &self.codec
    }

    /// The states of the prompt `ids`, which fill the one-row cache
    /// `single`, copied once: the rows of a call start from them, and the
    /// prefix cache keeps them for later prompts.
    pub(crate) fn prompt_states(
        &self,
        ids: &[u32],
        single: &KvCache,
        exact: usize,
    ) -> candle_core::Result<KvSnapshot> {
        let states = single.snapshot(0, ids.len())?;
        self.remember_with(ids, exact, || Ok(states.clone()))?;
        Ok(states)
    }

    fn run(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let ids = self.codec.prompt_ids(prompt)?;
        let max_tokens = self.codec.max_new_tokens(ids.len(), sampling);
        let n = sampling.n.max(1);
        let capacity = ids.len() + max_tokens;
        let started = Instant::now();
        let Prefilled {
            cache: single,
            logits: first_logits,
            cached,
            exact,
        } = self.prefill(&ids, capacity).map_err(inference)?;
        let prefill_seconds = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let first = row_logits(&first_logits, 0).map_err(inference)?;
        let mut rows = RowState::for_request(sampling, max_tokens);
        // On a GPU a batch of rows costs about one row: drafting is kept to
        // one-completion calls there.
        let drafted = self.max_draft > 0
            && (n == 1 || (n <= DRAFTED_ROWS && self.transformer.device().is_cpu()));
        let mut cache = if n == 1 {
            single
        } else {
            // The rows share the prompt's states. Drafted rows hide the
            // guesses they reject while others keep theirs: room for one
            // more pass beyond the answers, and compaction (see
            // `CacheTarget::feed`) when hidden positions fill it.
            let states = self
                .prompt_states(&ids, &single, exact)
                .map_err(inference)?;
            let slack = if drafted { self.max_draft } else { 0 };
            KvCache::from_snapshot(&states, n, capacity + slack, self.transformer.device())
                .map_err(inference)?
        };
        let drafts = if drafted {
            self.decode_drafted(&ids, &mut cache, &first, &mut rows)?
        } else {
            self.decode_rows(&mut cache, &mut rows, vec![first; n])?;
            DraftCount::default()
        };
        {
            let mut questions = self.questions();
            let recent = &mut questions.current().recent;
            rows.iter().for_each(|row| recent.add(row.tokens()));
        }
        // One completion: its prompt and answer are kept, so that a next
        // prompt going on from the answer (a search step's child) computes
        // only its own new turn. Several: the prompt alone.
        if n == 1 {
            // The last sampled token was never fed, so the cache may hold
            // one token fewer than the answer.
            let answer = rows[0].tokens();
            let fed = cache.len().saturating_sub(ids.len()).min(answer.len());
            let kept = [ids.as_slice(), &answer[..fed]].concat();
            self.remember(&kept, &cache, exact).map_err(inference)?;
        }
        let decode_seconds = started.elapsed().as_secs_f64();
        let (completions, generated) = self.codec.completions(rows)?;
        Ok(Generation {
            completions,
            usage: Usage {
                prompt_tokens: ids.len(),
                cached_prompt_tokens: cached,
                generated_tokens: generated,
                guessed_tokens: drafts.guessed,
                kept_guesses: drafts.kept,
                prefill_seconds,
                decode_seconds,
            },
        })
    }

    /// The log-probability of `continuation` after the prompt: the prompt is
    /// prefilled (its prefix shared with earlier prompts comes from the
    /// cache, and it is kept for later ones), then the continuation's tokens
    /// run in one pass and each is read off the logits before it.
    fn score_continuation(&self, prompt: &Prompt, continuation: &str) -> Result<ContinuationScore> {
        let ids = self.codec.prompt_ids(prompt)?;
        let tokens = self.codec.encode(continuation)?;
        let Some((&first, rest)) = tokens.split_first() else {
            return Ok(ContinuationScore::default());
        };
        let total = ids.len() + tokens.len();
        if total >= self.codec.context_length() {
            return Err(Error::PromptTooLong {
                tokens: total,
                context: self.codec.context_length(),
            });
        }
        let started = Instant::now();
        let Prefilled {
            mut cache,
            logits: last_logits,
            cached,
            exact,
        } = self.prefill(&ids, total).map_err(inference)?;
        // Prompts scored one after another often differ only at their end
        // (one query each after one schema): keeping each would crowd out
        // the prefixes other prompts share, so only one mostly new to this
        // question is kept (the first, even when an earlier question's
        // states served most of it).
        let held = self.prefixes().held_for_this_question(&ids);
        if held < ids.len() / 2 {
            self.remember(&ids, &cache, exact).map_err(inference)?;
        }
        let mut log_prob = log_prob_of(&row_logits(&last_logits, 0).map_err(inference)?, first);
        let body = &tokens[..tokens.len() - 1];
        if !body.is_empty() {
            let input = Tensor::new(body, self.transformer.device())
                .and_then(|t| t.unsqueeze(0))
                .map_err(inference)?;
            let logits: Vec<Vec<f32>> = self
                .transformer
                .forward_all(&input, &mut cache)
                .and_then(|l| l.squeeze(0)?.to_dtype(candle_core::DType::F32)?.to_vec2())
                .map_err(inference)?;
            log_prob += logits
                .iter()
                .zip(rest)
                .map(|(row, &token)| log_prob_of(row, token))
                .sum::<f64>();
        }
        Ok(ContinuationScore {
            log_prob,
            tokens: tokens.len(),
            usage: Usage {
                prompt_tokens: total,
                cached_prompt_tokens: cached,
                prefill_seconds: started.elapsed().as_secs_f64(),
                ..Usage::default()
            },
        })
    }

    /// Decodes the rows together from the prompt's states in `cache`, each
    /// checking guessed tokens; the cache keeps the rows that finished
    /// last.
    fn decode_drafted(
        &self,
        ids: &[u32],
        cache: &mut KvCache,
        first: &[f32],
        rows: &mut [RowState],
    ) -> Result<DraftCount> {
        let recent = self.questions().current().recent.to_vec();
        let mut target = CacheTarget {
            transformer: &self.transformer,
            cache,
        };
        self.codec
            .decode_drafted(rows, ids, &recent, first, self.max_draft, &mut target)
    }

    /// Several prompts of unequal length in one batch: left-padded to a
    /// common length, prefilled together, then every sample of every
    /// request decoded together. Each request's usage reports the batch's
    /// wall times.
    fn run_many(&self, requests: &[(Prompt, Sampling)]) -> Result<Vec<Generation>> {
        let prompts = requests
            .iter()
            .map(|(prompt, _)| self.codec.prompt_ids(prompt))
            .collect::<Result<Vec<_>>>()?;
        let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
        let limits: Vec<usize> = prompts
            .iter()
            .zip(requests)
            .map(|(ids, (_, sampling))| self.codec.max_new_tokens(ids.len(), sampling))
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
        let firsts = all_row_logits(&first_logits).map_err(inference)?;
        for (request, ((_, sampling), first)) in requests.iter().zip(firsts).enumerate() {
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
            let (mut completions, generated) = self.codec.completions(vec![state])?;
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
            let width = prefill_chunk(&self.transformer).min(longest - 1 - column);
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
    /// feeding the running rows through the model together at each step;
    /// rows that finish leave the batch.
    fn decode_rows(
        &self,
        cache: &mut KvCache,
        rows: &mut [RowState],
        logits: Vec<Vec<f32>>,
    ) -> Result<()> {
        // Cache row i continues request row `in_cache[i]`.
        let mut in_cache: Vec<usize> = (0..rows.len()).collect();
        self.codec.decode_rows(rows, logits, |next, running| {
            let live: Vec<usize> = (0..in_cache.len())
                .filter(|&i| running[in_cache[i]])
                .collect();
            if live.len() < in_cache.len() {
                *cache = cache.select_rows(&live).map_err(inference)?;
                in_cache = live.iter().map(|&i| in_cache[i]).collect();
            }
            let input: Vec<u32> = in_cache.iter().map(|&row| next[row]).collect();
            let input = Tensor::new(input.as_slice(), self.transformer.device())
                .and_then(|t| t.unsqueeze(1))
                .map_err(inference)?;
            let out = self.transformer.forward(&input, cache).map_err(inference)?;
            let mut logits = vec![Vec::new(); running.len()];
            let fed = all_row_logits(&out).map_err(inference)?;
            for (&row, row_logits) in in_cache.iter().zip(fed) {
                logits[row] = row_logits;
            }
            Ok(logits)
        })
    }
}

/// A batch's cache, fed guessed tokens.
struct CacheTarget<'a> {
    transformer: &'a Transformer,
    cache: &'a mut KvCache,
}

impl DraftTarget for CacheTarget<'_> {
    fn feed(&mut self, inputs: &[Vec<u32>]) -> Result<Vec<Vec<Vec<f32>>>> {
        let width = inputs.first().map_or(0, Vec::len);
        if self.cache.room() < width {
            self.cache.compact().map_err(inference)?;
        }
        let tokens: Vec<u32> = inputs.concat();
        let input = Tensor::from_vec(tokens, (inputs.len(), width), self.transformer.device())
            .map_err(inference)?;
        self.transformer
            .forward_all(&input, self.cache)
            .and_then(|logits| logits.to_dtype(candle_core::DType::F32)?.to_vec3())
            .map_err(inference)
    }

    fn discard(&mut self, positions: &[usize]) -> Result<()> {
        self.cache.discard(positions);
        Ok(())
    }

    fn keep_rows(&mut self, rows: &[usize]) -> Result<()> {
        *self.cache = self.cache.select_rows(rows).map_err(inference)?;
        Ok(())
    }
}

/// The natural-log probability of `token` under the softmax of `logits`.
fn log_prob_of(logits: &[f32], token: u32) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&x| (x as f64 - max).exp()).sum();
    logits[token as usize] as f64 - max - sum.ln()
}

pub(super) fn inference(e: candle_core::Error) -> Error {
    Error::Inference(first_line(e))
}

impl LanguageModel for LocalModel {
    fn name(&self) -> &str {
        self.codec.name()
    }

    fn first_token_text(&self, text: &str) -> Option<String> {
        self.codec.first_token_text(text)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.codec.count_tokens(text)
    }

    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        self.run(prompt, sampling)
    }

    /// Cached prefixes of earlier questions are reused only where they equal
    /// a fresh computation (see `prefix_cache`); earlier answers stop
    /// serving as guesses.
    fn begin_question(&self) {
        self.new_question();
    }

    fn generate_many(&self, requests: &[(Prompt, Sampling)]) -> Result<Vec<Generation>> {
        match requests {
            [] => Ok(Vec::new()),
            [(prompt, sampling)] => Ok(vec![self.run(prompt, sampling)?]),
            _ => self.run_many(requests),
        }
    }

    fn score(&self, prompt: &Prompt, continuation: &str) -> Result<Option<ContinuationScore>> {
        self.score_continuation(prompt, continuation).map(Some)
    }

    fn can_score(&self) -> bool {
        true
    }
}
