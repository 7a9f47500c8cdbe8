//! Spotting a decoder caught in a loop. Small models at low temperature
//! sometimes repeat one short span (`* 0.5 * 0.5 * 0.5 ...`) until the token
//! limit; the text is useless long before that, and in a search every such
//! completion costs hundreds of tokens. Cutting it early changes no usable
//! answer.

/// Longest repeating span looked for, in tokens: a SELECT list of a dozen
/// qualified columns written over and over spans some 40.
const MAX_PERIOD: usize = 64;
/// A span must repeat this many times in a row (no sound text repeats a
/// span of ten or more tokens three times back to back)...
const MIN_REPEATS: usize = 3;
/// ...and the repeats must cover at least this many tokens.
const MIN_COVERED: usize = 32;

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

    fn repeated(prefix: &[u32], span: &[u32], times: usize) -> Vec<u32> {
        let mut tokens = prefix.to_vec();
        for _ in 0..times {
            tokens.extend(span);
        }
        tokens
    }

    #[test]
    fn a_short_span_repeated_to_the_threshold_is_a_loop() {
        let prefix = [7u32, 8, 9, 10];
        let span = [1u32, 2, 3, 4];
        // 28 repeated tokens: not yet 32.
        assert!(!ends_in_loop(&repeated(&prefix, &span, 7)));
        assert!(ends_in_loop(&repeated(&prefix, &span, 8)));
        assert!(!ends_in_loop(&repeated(&prefix, &[5], 31)));
        assert!(ends_in_loop(&repeated(&prefix, &[5], 32)));
    }

    #[test]
    fn a_long_span_is_a_loop_at_its_third_repeat() {
        let prefix = [7u32, 8, 9, 10];
        for length in [16u32, 40, 64] {
            let span: Vec<u32> = (100..100 + length).collect();
            assert!(!ends_in_loop(&repeated(&prefix, &span, 2)), "{length}");
            assert!(ends_in_loop(&repeated(&prefix, &span, 3)), "{length}");
        }
        // Longer spans are not looked for.
        let span: Vec<u32> = (100..165).collect();
        assert!(!ends_in_loop(&repeated(&prefix, &span, 3)));
    }

    #[test]
    fn varied_text_is_not_a_loop() {
        let varied: Vec<u32> = (0..500).collect();
        assert!(!ends_in_loop(&varied));
        // A span repeated with one token changed each time.
        let mut tokens = Vec::new();
        for i in 0..10u32 {
            tokens.extend([1, 2, 3, 4, 5, 6, 7, 8, 9, 100 + i]);
        }
        assert!(!ends_in_loop(&tokens));
    }
}
