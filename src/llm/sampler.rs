//! Picking the next token from logits: greedy, or temperature with top-k and
//! top-p cuts, from a seeded generator so runs repeat exactly.

use super::Sampling;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct Sampler {
    temperature: f32,
    top_p: f32,
    top_k: usize,
    rng: ChaCha8Rng,
}

impl Sampler {
    /// One sampler per completion; `row` makes the n completions of one
    /// request draw different (but repeatable) streams.
    pub fn new(sampling: &Sampling, row: usize) -> Self {
        let seed = sampling
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(row as u64);
        Sampler {
            temperature: sampling.temperature,
            top_p: sampling.top_p,
            top_k: sampling.top_k,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn next_token(&mut self, logits: &[f32]) -> u32 {
        if self.temperature <= 0.0 {
            return argmax(logits);
        }
        // Candidates sorted by logit, cut by top-k, then softmax, then top-p.
        let mut candidates: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l))
            .collect();
        let keep = if self.top_k > 0 {
            self.top_k.min(candidates.len())
        } else {
            candidates.len()
        };
        if keep < candidates.len() {
            candidates.select_nth_unstable_by(keep - 1, |a, b| b.1.total_cmp(&a.1));
            candidates.truncate(keep);
        }
        candidates.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let max = candidates[0].1;
        let mut weights: Vec<f32> = candidates
            .iter()
            .map(|&(_, l)| ((l - max) / self.temperature).exp())
            .collect();
        let total: f32 = weights.iter().sum();
        let mut cumulative = 0.0;
        let mut cut = weights.len();
        for (i, w) in weights.iter_mut().enumerate() {
            *w /= total;
            cumulative += *w;
            if cumulative >= self.top_p {
                cut = i + 1;
                break;
            }
        }
        let mass: f32 = weights[..cut].iter().sum();
        let mut target = self.rng.random::<f32>() * mass;
        for (i, w) in weights[..cut].iter().enumerate() {
            if target < *w {
                return candidates[i].0;
            }
            target -= w;
        }
        candidates[cut - 1].0
    }
}

/// The index of the largest logit (the first on ties).
pub(crate) fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampling(temperature: f32, top_k: usize, top_p: f32, seed: u64) -> Sampling {
        Sampling {
            temperature,
            top_k,
            top_p,
            seed,
            ..Sampling::default()
        }
    }

    #[test]
    fn greedy_takes_the_largest() {
        let mut s = Sampler::new(&sampling(0.0, 0, 1.0, 1), 0);
        assert_eq!(s.next_token(&[0.1, 3.0, -1.0, 2.9]), 1);
    }

    #[test]
    fn top_k_one_is_greedy_and_seeds_repeat() {
        let logits = [1.0, 1.1, 0.9, 1.05];
        let mut s = Sampler::new(&sampling(1.0, 1, 1.0, 7), 0);
        assert!((0..20).all(|_| s.next_token(&logits) == 1));
        let draw = |seed, row| {
            let mut s = Sampler::new(&sampling(1.0, 0, 1.0, seed), row);
            (0..32).map(|_| s.next_token(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(draw(3, 0), draw(3, 0));
        assert_ne!(draw(3, 0), draw(3, 1));
    }

    #[test]
    fn top_p_keeps_only_the_nucleus() {
        // Token 2 holds almost all the mass; top_p 0.5 must always pick it.
        let logits = [0.0, 0.0, 10.0, 0.0];
        let mut s = Sampler::new(&sampling(1.0, 0, 0.5, 11), 0);
        assert!((0..50).all(|_| s.next_token(&logits) == 2));
    }
}
