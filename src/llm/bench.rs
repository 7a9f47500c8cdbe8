//! The inference benchmark behind `iesr bench-llm`: prefill and decode
//! speed, batched decoding, the gain from a cached prompt prefix, and peak
//! memory, on a synthetic schema-like prompt of a chosen length.

use super::kv::KvCache;
use super::local::LocalModel;
use super::sampler::argmax;
use super::transformer::row_logits;
use crate::error::{Error, Result};
use serde::Serialize;
use std::time::Instant;

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

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub model: String,
    pub threads: usize,
    /// SIMD extensions compiled in.
    pub simd: String,
    /// The kernel of the packed weight matrices (`off` when candle's own
    /// kernels run them).
    pub packed_kernel: String,
    pub prompt_tokens: usize,
    pub gen_tokens: usize,
    pub prefill_tok_s: f64,
    pub decode_tok_s: f64,
    pub batches: Vec<BatchFigure>,
    /// Seconds to the first token with nothing cached.
    pub cold_first_token_s: f64,
    /// Seconds to the first token when all but a new question suffix is cached.
    pub cached_first_token_s: f64,
    pub cached_prefix_speedup: f64,
    pub peak_rss_mb: f64,
}

/// Tokens of a schema-like text, repeated until `n` tokens.
fn synthetic_prompt(model: &LocalModel, n: usize) -> Result<Vec<u32>> {
    let mut text = String::from("You are a careful SQLite expert.\n");
    let mut ids = Vec::new();
    let mut table = 0;
    while ids.len() < n {
        for _ in 0..20 {
            text.push_str(&format!(
                "CREATE TABLE t{table} ( -- {} rows\n  id INTEGER PRIMARY KEY,\n  name TEXT, -- e.g. 'item {table}'\n  amount REAL,\n  parent_id INTEGER REFERENCES t{}(id)\n);\n",
                table * 37 % 1000,
                table / 2
            ));
            table += 1;
        }
        ids = model.encode(&text)?;
    }
    ids.truncate(n);
    Ok(ids)
}

pub fn run(model: &LocalModel, config: &BenchConfig) -> Result<BenchReport> {
    let inference = |e: candle_core::Error| Error::Inference(crate::error::first_line(e));
    let ids = synthetic_prompt(model, config.prompt_tokens)?;
    let capacity = ids.len() + config.gen_tokens + 64;

    // Warm-up (thread pools, allocator), then a cold prefill.
    model
        .prefill(&ids[..ids.len().min(32)], 64)
        .map_err(inference)?;
    model.clear_prefix_cache();
    let started = Instant::now();
    let (cache, _, cached) = model.prefill(&ids, capacity).map_err(inference)?;
    let cold = started.elapsed().as_secs_f64();
    debug_assert_eq!(cached, 0);

    // The same prefix with a new question at the end.
    let mut follow_up = ids.clone();
    follow_up.extend(model.encode("\nQuestion: how many rows does t3 hold?\n")?);
    let started = Instant::now();
    let (_, _, reused) = model
        .prefill(&follow_up, capacity + 32)
        .map_err(inference)?;
    let cached_first = started.elapsed().as_secs_f64();
    if reused == 0 {
        return Err(Error::Inference("the prefix cache was not used".into()));
    }

    let snapshot = cache.snapshot(0, ids.len()).map_err(inference)?;
    let mut batches = Vec::new();
    let mut batch1 = None;
    let mut sizes = config.batches.clone();
    if !sizes.contains(&1) {
        sizes.insert(0, 1);
    }
    for &batch in &sizes {
        let mut cache =
            KvCache::from_snapshot(&snapshot, batch, capacity, model.transformer().device())
                .map_err(inference)?;
        let rate = decode_rate(
            model,
            &mut cache,
            batch,
            ids[ids.len() - 1],
            config.gen_tokens,
        )
        .map_err(inference)?;
        let base = *batch1.get_or_insert(rate);
        batches.push(BatchFigure {
            batch,
            aggregate_tok_s: rate,
            speedup_vs_batch1: rate / base,
        });
    }
    Ok(BenchReport {
        model: super::LanguageModel::name(model).to_string(),
        threads: rayon::current_num_threads(),
        simd: super::cpu::describe(),
        packed_kernel: super::matrix::packed_kernel(),
        prompt_tokens: ids.len(),
        gen_tokens: config.gen_tokens,
        prefill_tok_s: ids.len() as f64 / cold,
        decode_tok_s: batch1.unwrap_or(0.0),
        batches: batches
            .into_iter()
            .filter(|b| config.batches.contains(&b.batch))
            .collect(),
        cold_first_token_s: cold,
        cached_first_token_s: cached_first,
        cached_prefix_speedup: cold / cached_first,
        peak_rss_mb: peak_rss_mb(),
    })
}

/// Generated tokens per second over all rows for `steps` greedy steps.
fn decode_rate(
    model: &LocalModel,
    cache: &mut KvCache,
    batch: usize,
    last: u32,
    steps: usize,
) -> candle_core::Result<f64> {
    let device = model.transformer().device().clone();
    let mut next = vec![last; batch];
    let started = Instant::now();
    for _ in 0..steps {
        let input = candle_core::Tensor::new(next.as_slice(), &device)?.unsqueeze(1)?;
        let logits = model.transformer().forward(&input, cache)?;
        for (row, token) in next.iter_mut().enumerate() {
            *token = argmax(&row_logits(&logits, row)?);
        }
    }
    Ok((batch * steps) as f64 / started.elapsed().as_secs_f64())
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
