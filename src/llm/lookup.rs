//! Draft tokens for speculative decoding, looked up in text already seen.
//! Queries copy table and column names from the schema, revisions copy the
//! query before them, and samples of one prompt repeat each other and the
//! model's earlier answers: the tokens that followed an earlier occurrence
//! of the last few tokens are a free guess of what comes next, often right,
//! and the model checks a whole guess in one forward pass.

use std::collections::VecDeque;

/// The longest suffix looked up; longer ones are tried first.
const LONGEST_SUFFIX: usize = 3;
/// A single matching token predicts the next ones too poorly to pay for
/// checking them.
const SHORTEST_SUFFIX: usize = 2;

/// Up to `max_len` tokens that followed an earlier occurrence of
/// `context`'s last tokens: the latest in `context` itself, else in
/// `earlier` (searched in order). Empty when they occur nowhere.
pub fn draft(context: &[u32], earlier: &[&[u32]], max_len: usize) -> Vec<u32> {
    if max_len == 0 {
        return Vec::new();
    }
    for width in (SHORTEST_SUFFIX..=LONGEST_SUFFIX).rev() {
        if context.len() <= width {
            continue;
        }
        let suffix = &context[context.len() - width..];
        // The suffix itself is no match: no token follows it.
        let found = std::iter::once(context)
            .chain(earlier.iter().copied())
            .find_map(|text| follower(text, suffix).map(|at| (text, at)));
        if let Some((text, at)) = found {
            return text[at..(at + max_len).min(text.len())].to_vec();
        }
    }
    Vec::new()
}

/// Where the tokens after the latest occurrence of `suffix` in `text`
/// start, for an occurrence that some token follows.
fn follower(text: &[u32], suffix: &[u32]) -> Option<usize> {
    let width = suffix.len();
    if text.len() <= width {
        return None;
    }
    (0..text.len() - width)
        .rev()
        .find(|&start| &text[start..start + width] == suffix)
        .map(|start| start + width)
}

/// The model's latest answers, newest first: a lookup source for the calls
/// after them.
pub struct RecentAnswers {
    answers: VecDeque<Vec<u32>>,
    keep: usize,
}

impl RecentAnswers {
    pub fn new(keep: usize) -> Self {
        RecentAnswers {
            answers: VecDeque::with_capacity(keep),
            keep,
        }
    }

    pub fn add(&mut self, answer: &[u32]) {
        if answer.len() <= SHORTEST_SUFFIX || self.keep == 0 {
            return;
        }
        if self.answers.len() == self.keep {
            self.answers.pop_back();
        }
        self.answers.push_front(answer.to_vec());
    }

    pub fn to_vec(&self) -> Vec<Vec<u32>> {
        self.answers.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokens_after_the_latest_match_are_the_draft() {
        // "7 8" occurs twice before the end; the later one is followed by 5 6.
        let context = [7, 8, 1, 2, 7, 8, 5, 6, 9, 7, 8];
        assert_eq!(draft(&context, &[], 2), [5, 6]);
        assert_eq!(draft(&context, &[], 10), [5, 6, 9, 7, 8]);
    }

    #[test]
    fn longer_matches_win_over_later_shorter_ones() {
        // "1 7 8" occurs once, early; "7 8" alone occurs later.
        let context = [1, 7, 8, 4, 4, 7, 8, 3, 1, 7, 8];
        assert_eq!(draft(&context, &[], 1), [4]);
        // A longer match in an earlier answer also wins.
        let context = [7, 8, 3, 9, 7, 8];
        assert_eq!(draft(&context, &[&[9, 7, 8, 6, 6]], 3), [6, 6]);
    }

    #[test]
    fn earlier_answers_are_searched_when_the_context_has_no_match() {
        let earlier: [&[u32]; 2] = [&[1, 2, 3], &[4, 5, 6, 7]];
        assert_eq!(draft(&[9, 9, 5, 6], &earlier, 4), [7]);
        // An answer that ends with the suffix has nothing to offer.
        assert!(draft(&[9, 2, 3], &earlier, 4).is_empty());
    }

    #[test]
    fn no_draft_without_a_match_of_two_tokens() {
        assert!(draft(&[1, 2, 3, 4, 5, 3], &[], 4).is_empty());
        assert!(draft(&[1, 2, 1, 2], &[], 0).is_empty());
        assert!(draft(&[1, 2], &[&[1, 2, 3]], 4).is_empty());
    }

    #[test]
    fn only_the_latest_answers_are_kept() {
        let mut recent = RecentAnswers::new(2);
        for answer in [[1, 1, 1], [2, 2, 2], [3, 3, 3]] {
            recent.add(&answer);
        }
        recent.add(&[4]);
        assert_eq!(recent.to_vec(), [vec![3, 3, 3], vec![2, 2, 2]]);
    }
}
