//! The inference benchmark behind `iesr bench-llm`: prefill and decode
//! speed, batched decoding and the gain from a cached prompt prefix, for
//! one or more backends on the same synthetic schema-like prompt, measured
//! through the `LanguageModel` seam the search itself uses; and, on a real
//! query prompt, sampling with and without a decoding constraint.

use super::constraint::Constraint;
use super::{Generation, LanguageModel, Prompt, Sampling};
use crate::error::Result;
use serde::Serialize;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokenizers::Tokenizer;

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub prompt_tokens: usize,
    pub gen_tokens: usize,
    pub batches: Vec<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BatchFigure {
    pub batch: usize,
    /// Generated tokens per second over all rows.
    pub aggregate_tok_s: f64,
    /// Aggregate divided by the batch-1 figure.
    pub speedup_vs_batch1: f64,
}

/// One backend's figures.
#[derive(Debug, Clone, Serialize)]
pub struct BackendFigures {
    pub backend: String,
    /// The prompt's length as the backend counted it.
    pub prompt_tokens: usize,
    pub prefill_tok_s: f64,
    pub decode_tok_s: f64,
    pub batches: Vec<BatchFigure>,
    /// Seconds to the first token with nothing cached.
    pub cold_first_token_s: f64,
    /// Seconds to the first token when all but a new question suffix is cached.
    pub cached_first_token_s: f64,
    pub cached_prefix_speedup: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub model: String,
    /// Where the candle backend ran (cpu, cuda:N).
    pub device: String,
    pub threads: usize,
    /// SIMD extensions compiled in.
    pub simd: String,
    /// The kernel of the packed weight matrices (`off` when candle's own
    /// kernels run them).
    pub packed_kernel: String,
    pub prompt_tokens: usize,
    pub gen_tokens: usize,
    pub backends: Vec<BackendFigures>,
    /// Sampling a query with and without the name constraint (the first
    /// backend; empty unless asked for).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraint: Vec<ConstraintFigure>,
    /// The process's peak resident memory after all backends ran (the
    /// in-process ones; a server's memory is its own).
    pub peak_rss_mb: f64,
}

impl BenchReport {
    pub fn new(
        model: &str,
        device: &str,
        config: &BenchConfig,
        backends: Vec<BackendFigures>,
        constraint: Vec<ConstraintFigure>,
    ) -> Self {
        BenchReport {
            model: model.to_string(),
            device: device.to_string(),
            threads: rayon::current_num_threads(),
            simd: super::cpu::describe(),
            packed_kernel: super::matrix::packed_kernel(),
            prompt_tokens: config.prompt_tokens,
            gen_tokens: config.gen_tokens,
            backends,
            constraint,
            peak_rss_mb: peak_rss_mb(),
        }
    }
}

/// A schema-like text of `n` tokens.
pub fn synthetic_prompt(tokenizer: &Tokenizer, n: usize) -> Result<String> {
    let failed = |e| crate::error::Error::Inference(format!("tokenizer: {e}"));
    let mut text = String::from("You are a careful SQLite expert.\n");
    let mut table = 0;
    loop {
        for _ in 0..20 {
            text.push_str(&format!(
                "CREATE TABLE t{table} ( -- {} rows\n  id INTEGER PRIMARY KEY,\n  name TEXT, -- e.g. 'item {table}'\n  amount REAL,\n  parent_id INTEGER REFERENCES t{}(id)\n);\n",
                table * 37 % 1000,
                table / 2
            ));
            table += 1;
        }
        let ids = tokenizer.encode(text.as_str(), false).map_err(failed)?;
        if ids.len() >= n {
            return tokenizer.decode(&ids.get_ids()[..n], false).map_err(failed);
        }
    }
}

/// Measures one backend on `schema` (see [`synthetic_prompt`]).
pub fn measure(
    backend: &str,
    model: &dyn LanguageModel,
    schema: &str,
    config: &BenchConfig,
) -> Result<BackendFigures> {
    let timed = |text: &str, sampling: &Sampling| {
        let started = Instant::now();
        let generation = model.generate(&Prompt::Raw(text.to_string()), sampling)?;
        Ok::<_, crate::error::Error>((generation, started.elapsed().as_secs_f64()))
    };
    let first_token = first_token_only();
    // Warm-up: thread pools, allocator, first-call set-up.
    timed("Warm up.", &first_token)?;

    // A first line no earlier run used, so nothing of the prompt is cached.
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let prompt = format!("-- run {nonce}\n{schema}");
    let (cold, cold_seconds) = timed(&prompt, &first_token)?;
    let follow_up = format!("{prompt}\nQuestion: how many rows does t3 hold?\n");
    let (_, cached_seconds) = timed(&follow_up, &first_token)?;
    // The prompt again: what a decoding call pays before its first step.
    let (_, start_seconds) = timed(&prompt, &first_token)?;

    let mut sizes = config.batches.clone();
    if !sizes.contains(&1) {
        sizes.insert(0, 1);
    }
    let mut batches = Vec::new();
    let mut batch1 = None;
    for &batch in &sizes {
        let sampling = Sampling {
            max_tokens: config.gen_tokens,
            n: batch,
            to_limit: true,
            ..Sampling::default()
        };
        let (generation, seconds) = timed(&prompt, &sampling)?;
        let rate = stepped_tokens(&generation) as f64 / (seconds - start_seconds).max(1e-9);
        let base = *batch1.get_or_insert(rate);
        batches.push(BatchFigure {
            batch,
            aggregate_tok_s: rate,
            speedup_vs_batch1: rate / base,
        });
    }
    Ok(BackendFigures {
        backend: backend.to_string(),
        prompt_tokens: cold.usage.prompt_tokens,
        prefill_tok_s: cold.usage.prompt_tokens as f64 / cold_seconds,
        decode_tok_s: batch1.unwrap_or(0.0),
        batches: batches
            .into_iter()
            .filter(|b| config.batches.contains(&b.batch))
            .collect(),
        cold_first_token_s: cold_seconds,
        cached_first_token_s: cached_seconds,
        cached_prefix_speedup: cold_seconds / cached_seconds,
    })
}

/// Decode rates of one batch size sampled freely and under a constraint.
#[derive(Debug, Clone, Serialize)]
pub struct ConstraintFigure {
    pub batch: usize,
    /// Generated tokens over all repeats, free and constrained.
    pub free_tokens: usize,
    pub constrained_tokens: usize,
    /// Generated tokens per second of decoding over all rows.
    pub free_tok_s: f64,
    pub constrained_tok_s: f64,
    /// Constrained rate over free rate.
    pub ratio: f64,
}

/// Samples `prompt` as self-consistency does (temperature 0.8, top-p 0.95,
/// each row ending where its answer ends) `repeats` times per batch size,
/// each time once freely and once under `constraint` with the same seed,
/// and compares the decode rates. The prompt is cached before timing, and
/// the time of a first token from the cached prompt is taken off each call.
pub fn measure_constraint(
    model: &dyn LanguageModel,
    prompt: &Prompt,
    constraint: &Constraint,
    config: &BenchConfig,
    repeats: usize,
) -> Result<Vec<ConstraintFigure>> {
    let first_token = first_token_only();
    model.generate(prompt, &first_token)?;
    let started = Instant::now();
    model.generate(prompt, &first_token)?;
    let start_seconds = started.elapsed().as_secs_f64();
    let mut figures = Vec::new();
    for &batch in &config.batches {
        // (stepped tokens, decode seconds), free then constrained.
        let mut totals = [(0usize, 0.0f64); 2];
        for seed in 0..repeats as u64 {
            for (total, rule) in totals.iter_mut().zip([None, Some(constraint.clone())]) {
                let sampling = Sampling {
                    temperature: 0.8,
                    top_p: 0.95,
                    max_tokens: config.gen_tokens,
                    n: batch,
                    seed,
                    constraint: rule,
                    ..Sampling::default()
                };
                let started = Instant::now();
                let generation = model.generate(prompt, &sampling)?;
                let seconds = started.elapsed().as_secs_f64() - start_seconds;
                total.0 += stepped_tokens(&generation);
                total.1 += seconds.max(1e-9);
            }
        }
        let [(free_tokens, free_seconds), (constrained_tokens, constrained_seconds)] = totals;
        let free_tok_s = free_tokens as f64 / free_seconds;
        let constrained_tok_s = constrained_tokens as f64 / constrained_seconds;
        figures.push(ConstraintFigure {
            batch,
            free_tokens,
            constrained_tokens,
            free_tok_s,
            constrained_tok_s,
            ratio: constrained_tok_s / free_tok_s,
        });
    }
    Ok(figures)
}

/// One token and no more: what a call pays before its first decoding step.
fn first_token_only() -> Sampling {
    Sampling {
        max_tokens: 1,
        to_limit: true,
        ..Sampling::default()
    }
}

/// The tokens of `generation` that took a decoding step: each row's first
/// token comes from the prompt's logits, the rest took one step each.
fn stepped_tokens(generation: &Generation) -> usize {
    generation
        .usage
        .generated_tokens
        .saturating_sub(generation.completions.len())
}

/// The process's peak resident memory (Linux `VmHWM`), in MB.
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::constraint::{TextChecker, TextConstraint};
    use crate::llm::scripted::ScriptedModel;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct AnyText;
    impl TextConstraint for AnyText {
        fn checker(&self) -> Box<dyn TextChecker> {
            Box::new(AnyTextChecker)
        }
    }
    struct AnyTextChecker;
    impl TextChecker for AnyTextChecker {
        fn allows(&self, _: &str) -> bool {
            true
        }
        fn push(&mut self, _: &str) {}
    }

    /// Counts the calls that decode under a constraint.
    struct Counting {
        inner: ScriptedModel,
        constrained: AtomicUsize,
    }
    impl LanguageModel for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
            if sampling.constraint.is_some() {
                self.constrained.fetch_add(1, Ordering::Relaxed);
            }
            self.inner.generate(prompt, sampling)
        }
    }

    #[test]
    fn the_constraint_is_measured_against_the_same_calls_without_it() {
        let model = Counting {
            inner: ScriptedModel::responding(|_, _| "SELECT a FROM t".into()),
            constrained: AtomicUsize::new(0),
        };
        let config = BenchConfig {
            prompt_tokens: 10,
            gen_tokens: 16,
            batches: vec![1, 4],
        };
        let constraint = Constraint(Arc::new(AnyText));
        let prompt = Prompt::Raw("q".into());
        let figures = measure_constraint(&model, &prompt, &constraint, &config, 2).unwrap();
        let batches: Vec<usize> = figures.iter().map(|f| f.batch).collect();
        assert_eq!(batches, [1, 4]);
        // Two repeats of each batch size under the constraint, two without.
        assert_eq!(model.constrained.load(Ordering::Relaxed), 4);
        // Four tokens a row, three of them decoded: 2 repeats x rows x 3.
        assert_eq!(
            (figures[0].free_tokens, figures[0].constrained_tokens),
            (6, 6)
        );
        assert_eq!(
            (figures[1].free_tokens, figures[1].constrained_tokens),
            (24, 24)
        );
        assert!(figures.iter().all(|f| f.ratio > 0.0 && f.ratio.is_finite()));
    }
}
