//! Where a query's text defines names with AS, and which of its bytes lie
//! inside quotes: what the constraint leaves free.

use super::super::sql_text::Piece;
use std::collections::HashSet;

/// The names given with AS (column and table aliases) anywhere in the query.
pub(super) fn as_aliases(spans: &[(Piece<'_>, usize)]) -> HashSet<String> {
    let words: Vec<&str> = spans
        .iter()
        .filter_map(|(p, _)| match p {
            Piece::Word(w) => Some(*w),
            Piece::Other(_) => None,
        })
        .collect();
    words
        .windows(2)
        .filter(|w| w[0].eq_ignore_ascii_case("as"))
        .map(|w| w[1].to_lowercase())
        .collect()
}

/// Byte ranges inside double quotes, backticks or brackets (an unclosed
/// one runs to the end); string literals are whole pieces already.
pub(super) fn quoted_ranges(query: &str) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut open: Option<(char, usize)> = None;
    let mut in_literal = false;
    for (i, c) in query.char_indices() {
        match open {
            Some((close, start)) if c == close => {
                ranges.push(start..i);
                open = None;
            }
            Some(_) => {}
            None if c == '\'' => in_literal = !in_literal,
            None if in_literal => {}
            None => {
                open = match c {
                    '"' => Some(('"', i)),
                    '`' => Some(('`', i)),
                    '[' => Some((']', i)),
                    _ => None,
                }
            }
        }
    }
    if let Some((_, start)) = open {
        ranges.push(start..query.len());
    }
    ranges
}
