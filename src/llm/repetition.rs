//! Spotting a decoder caught in a loop. Small models at low temperature
//! sometimes repeat one short span (`* 0.5 * 0.5 * 0.5 ...`) until the token
//! limit; the text is useless long before that, and in a search every such
//! completion costs hundreds of tokens. Cutting it early changes no usable
//! answer.

/// Longest repeating span looked for, in tokens.
const MAX_PERIOD: usize = 32;
/// A span must repeat this many times in a row...
const MIN_REPEATS: usize = 6;
/// ...and the repeats must cover at least this many tokens.
const MIN_COVERED: usize = 48;

/// Whether `tokens` end with one span of at most [`MAX_PERIOD`] tokens
/// repeated back to back at least [`MIN_REPEATS`] times over at least
/// [`MIN_COVERED`] tokens.
pub fn ends_in_loop(tokens: &[u32]) -> bool {
    (1..=MAX_PERIOD).any(|period| {
        let covered = (period * MIN_REPEATS).max(MIN_COVERED);
        tokens.len() >= covered && {
            let tail = &tokens[tokens.len() - covered..];
            tail.iter().zip(&tail[period..]).all(|(a, b)| a == b)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_span_repeated_to_the_threshold_is_a_loop() {
        let prefix = [7u32, 8, 9, 10];
        let span = [1u32, 2, 3, 4];
        let mut tokens = prefix.to_vec();
        for _ in 0..11 {
            tokens.extend(span);
        }
        // 44 repeated tokens: not yet 48.
        assert!(!ends_in_loop(&tokens));
        tokens.extend(span);
        assert!(ends_in_loop(&tokens));
        let mut one_token = vec![5u32; 47];
        assert!(!ends_in_loop(&one_token));
        one_token.push(5);
        assert!(ends_in_loop(&one_token));
    }

    #[test]
    fn varied_text_and_long_spans_repeated_a_few_times_are_not() {
        let varied: Vec<u32> = (0..500).collect();
        assert!(!ends_in_loop(&varied));
        let span: Vec<u32> = (100..116).collect();
        let mut tokens = Vec::new();
        for _ in 0..5 {
            tokens.extend(&span);
        }
        // 80 tokens, but only five repeats of a 16-token span.
        assert!(!ends_in_loop(&tokens));
        tokens.extend(&span);
        assert!(ends_in_loop(&tokens));
    }
}
