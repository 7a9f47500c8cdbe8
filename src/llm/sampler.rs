//! Picking the next token from logits: greedy, or temperature with top-k,
//! min-p and top-p cuts, from a seeded generator so runs repeat exactly.

use super::exp::exp_nonpositive;
use super::Sampling;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct Sampler {
    temperature: f32,
    top_p: f32,
    top_k: usize,
    min_p: f32,
    rng: ChaCha8Rng,
}

impl Sampler {
    /// One sampler per completion; `row` (counted from the request's
    /// `first_row`) makes the n completions of one request draw different
    /// (but repeatable) streams.
    pub fn new(sampling: &Sampling, row: usize) -> Self {
        let seed = sampling
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add((sampling.first_row + row) as u64);
        Sampler {
            temperature: if row < sampling.greedy_rows_here() {
                0.0
            } else {
                sampling.temperature
            },
            top_p: sampling.top_p,
            top_k: sampling.top_k,
            min_p: sampling.min_p,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn next_token(&mut self, logits: &[f32]) -> u32 {
        if self.temperature <= 0.0 {
            return argmax(logits);
        }
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let weights = Weights {
            max,
            scale: 1.0 / self.temperature,
            floor: self.floor(logits, max),
        };
        let total = weights.total(logits);
        let nucleus = self.nucleus(logits, &weights, total);
        let nucleus_weights: Vec<f32> = nucleus.iter().map(|&(_, l)| weights.of(l)).collect();
        let mass: f32 = nucleus_weights.iter().sum();
        let mut target = self.rng.random::<f32>() * mass;
        for (&(token, _), w) in nucleus.iter().zip(&nucleus_weights) {
            if target < *w {
                return token;
            }
            target -= w;
        }
        nucleus[nucleus.len() - 1].0
    }

    /// The lowest logit that can be drawn: the top-k cut (ties at the cut
    /// included), the min-p cut (on the model's own probabilities, so a
    /// higher temperature flattens what is kept without letting in the
    /// unlikely tail that breaks a query's syntax), and no token below what
    /// an f32 sum of probabilities can register (e^-30 of the most likely
    /// token's, over a vocabulary under 10^6 tokens).
    fn floor(&self, logits: &[f32], max: f32) -> f32 {
        let mut negligible = max - NEGLIGIBLE * self.temperature;
        if self.min_p > 0.0 {
            negligible = negligible.max(max + self.min_p.ln());
        }
        if self.top_k == 0 || self.top_k >= logits.len() {
            return negligible;
        }
        let mut sorted = logits.to_vec();
        let (_, kth, _) = sorted.select_nth_unstable_by(self.top_k - 1, |a, b| b.total_cmp(a));
        kth.max(negligible)
    }

    /// The candidates, most likely first, down to the first whose
    /// cumulative probability reaches top-p (all, unsorted, when top-p is
    /// 1; all when none reaches it). Only the
    /// candidates within a widening distance of the most likely are
    /// sorted: every candidate left out is less likely than every one
    /// sorted, so the sorted ones are the head of the full order. (A full
    /// sort of a 150,000-token vocabulary costs a fifth of a forward pass.)
    fn nucleus(&self, logits: &[f32], weights: &Weights, total: f32) -> Vec<(u32, f32)> {
        let candidates = |cut: f32| {
            logits
                .iter()
                .enumerate()
                .filter(move |&(_, &l)| l >= cut)
                .map(|(i, &l)| (i as u32, l))
        };
        if self.top_p >= 1.0 {
            // No cut: every candidate, in any fixed order.
            return candidates(weights.floor).collect();
        }
        let needed = self.top_p * total;
        let mut distance = NUCLEUS_START * self.temperature;
        loop {
            let cut = (weights.max - distance).max(weights.floor);
            let mut head: Vec<(u32, f32)> = candidates(cut).collect();
            head.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut cumulative = 0.0;
            for (i, &(_, l)) in head.iter().enumerate() {
                cumulative += weights.of(l);
                if cumulative >= needed {
                    head.truncate(i + 1);
                    return head;
                }
            }
            if cut <= weights.floor {
                return head;
            }
            distance *= 2.0;
        }
    }
}

/// Unnormalized probabilities at a temperature: e^((logit - max) / T) for
/// logits at or above `floor`, else 0.
struct Weights {
    max: f32,
    scale: f32,
    floor: f32,
}

impl Weights {
    fn of(&self, logit: f32) -> f32 {
        exp_nonpositive((logit - self.max) * self.scale)
    }

    /// The sum over all logits, in 16 lanes so the compiler vectorizes it.
    fn total(&self, logits: &[f32]) -> f32 {
        const LANES: usize = 16;
        let mut lanes = [0.0f32; LANES];
        let chunks = logits.chunks_exact(LANES);
        let rest = chunks.remainder();
        for chunk in chunks {
            for (lane, &l) in lanes.iter_mut().zip(chunk) {
                let w = self.of(l);
                *lane += if l >= self.floor { w } else { 0.0 };
            }
        }
        let rest: f32 = rest
            .iter()
            .filter(|&&l| l >= self.floor)
            .map(|&l| self.of(l))
            .sum();
        lanes.iter().sum::<f32>() + rest
    }
}

/// Log-probability below the most likely token's at which a token is
/// ignored (see `Sampler::floor`).
const NEGLIGIBLE: f32 = 30.0;

/// Log-probability distance of the first nucleus search: tokens at least
/// e^-7 (about 1/1,000) as likely as the most likely one.
const NUCLEUS_START: f32 = 7.0;

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
    fn greedy_rows_decode_at_temperature_zero_and_the_rest_keep_their_streams() {
        let logits = [1.0, 1.1, 0.9, 1.05];
        let draw = |first_row, greedy_rows, row| {
            let sampling = Sampling {
                first_row,
                greedy_rows,
                n: 8,
                ..sampling(1.0, 0, 1.0, 5)
            };
            let mut s = Sampler::new(&sampling, row);
            (0..32).map(|_| s.next_token(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(draw(0, 1, 0), vec![1; 32], "row 0 is greedy");
        assert_ne!(draw(0, 0, 0), vec![1; 32], "without it, row 0 samples");
        // Rows past the greedy ones draw what they draw without them, in
        // the same request or asked for apart.
        assert_eq!(draw(0, 1, 1), draw(0, 0, 1));
        assert_eq!(draw(4, 1, 0), draw(0, 0, 4));
    }

    #[test]
    fn top_p_keeps_only_the_nucleus() {
        // Token 2 holds almost all the mass; top_p 0.5 must always pick it.
        let logits = [0.0, 0.0, 10.0, 0.0];
        let mut s = Sampler::new(&sampling(1.0, 0, 0.5, 11), 0);
        assert!((0..50).all(|_| s.next_token(&logits) == 2));
    }

    #[test]
    fn min_p_cuts_tokens_far_below_the_likeliest_at_any_temperature() {
        // Probabilities before temperature: 0.6, 0.3, 0.07, 0.03. Min-p 0.1
        // keeps tokens at least 0.06 likely; a high temperature flattens
        // the kept ones but never reaches token 3.
        let logits = [0.6f32.ln(), 0.3f32.ln(), 0.07f32.ln(), 0.03f32.ln()];
        let mut s = Sampler::new(
            &Sampling {
                min_p: 0.1,
                ..sampling(2.0, 0, 1.0, 9)
            },
            0,
        );
        let mut counts = [0usize; 4];
        for _ in 0..3_000 {
            counts[s.next_token(&logits) as usize] += 1;
        }
        assert_eq!(counts[3], 0, "{counts:?}");
        assert!(counts.iter().take(3).all(|&c| c > 300), "{counts:?}");
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
