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
        let candidates = self.candidates(logits);
        let max = candidates
            .iter()
            .map(|&(_, l)| l)
            .fold(f32::NEG_INFINITY, f32::max);
        let weight = |l: f32| ((l - max) / self.temperature).exp();
        let total: f32 = candidates.iter().map(|&(_, l)| weight(l)).sum();
        let nucleus = self.nucleus(&candidates, max, total);
        let weights: Vec<f32> = nucleus.iter().map(|&(_, l)| weight(l)).collect();
        let mass: f32 = weights.iter().sum();
        let mut target = self.rng.random::<f32>() * mass;
        for (&(token, _), w) in nucleus.iter().zip(&weights) {
            if target < *w {
                return token;
            }
            target -= w;
        }
        nucleus[nucleus.len() - 1].0
    }

    /// The tokens that can be drawn at all, with their logits: the top-k
    /// cut, less those whose probability is below what an f32 sum of
    /// probabilities can register (e^-30 of the most likely token's, over
    /// a vocabulary under 10^6 tokens). Skipping the rest keeps the sort
    /// below small; a full sort of a 150,000-token vocabulary costs more
    /// than a third of a forward pass.
    fn candidates(&self, logits: &[f32]) -> Vec<(u32, f32)> {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let floor = max - NEGLIGIBLE * self.temperature;
        let mut candidates: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l >= floor)
            .map(|(i, &l)| (i as u32, l))
            .collect();
        if self.top_k > 0 && self.top_k < candidates.len() {
            candidates.select_nth_unstable_by(self.top_k - 1, most_likely_first);
            candidates.truncate(self.top_k);
        }
        candidates
    }

    /// The most likely candidates, most likely first, down to the first
    /// whose cumulative probability reaches top-p (all when none does).
    /// Only candidates within a widening distance of the most likely are
    /// sorted: every candidate left out is less likely than every one
    /// sorted, so the sorted ones are the head of the full order.
    fn nucleus(&self, candidates: &[(u32, f32)], max: f32, total: f32) -> Vec<(u32, f32)> {
        let needed = self.top_p * total;
        let mut distance = NUCLEUS_START * self.temperature;
        loop {
            let mut head: Vec<(u32, f32)> = candidates
                .iter()
                .copied()
                .filter(|&(_, l)| l >= max - distance)
                .collect();
            head.sort_unstable_by(most_likely_first);
            let mut cumulative = 0.0;
            for (i, &(_, l)) in head.iter().enumerate() {
                cumulative += ((l - max) / self.temperature).exp();
                if cumulative >= needed {
                    head.truncate(i + 1);
                    return head;
                }
            }
            if head.len() == candidates.len() {
                return head;
            }
            distance *= 2.0;
        }
    }
}

/// Log-probability below the most likely token's at which a token is
/// ignored (see `Sampler::candidates`).
const NEGLIGIBLE: f32 = 30.0;

/// Log-probability distance of the first nucleus search: tokens at least
/// e^-7 (about 1/1,000) as likely as the most likely one.
const NUCLEUS_START: f32 = 7.0;

/// Higher logit first; the lower token id first on ties.
fn most_likely_first(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
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

    #[test]
    fn the_nucleus_reaches_into_a_long_flat_tail() {
        // One token at 8 holds 37% of the mass; 5,000 tokens at 0 hold the
        // rest, beyond the first sorted head. At top_p 0.9 the nucleus is
        // the top token and the first ~4,200 tail tokens by id; a token
        // e^-100 less likely is never drawn.
        let mut logits = vec![0.0; 5_002];
        logits[0] = 8.0;
        logits[5_001] = -92.0;
        let mut s = Sampler::new(&sampling(1.0, 0, 0.9, 5), 0);
        let draws: Vec<u32> = (0..2_000).map(|_| s.next_token(&logits)).collect();
        let tail = draws.iter().filter(|&&t| t > 0).count();
        assert!((1_100..1_400).contains(&tail), "{tail} tail draws");
        let highest = draws.iter().max().copied().unwrap();
        assert!((3_000..4_300).contains(&highest), "highest {highest}");
    }
}
