//! Comparisons of a column with a string literal, `[q.]column = 'text'`
//! and `[q.]column LIKE 'text'`, found among a query's pieces: the repairs
//! of a query that found no value read and rewrite them.

use crate::search::sql_text::{is_dot, is_gap, is_word_piece, Piece};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operator {
    Equals,
    Like,
}

/// The pieces of one comparison, by index.
pub(super) struct Comparison {
    pub qualifier: Option<usize>,
    pub column: usize,
    pub operator: Operator,
    pub literal: usize,
}

impl Comparison {
    /// The first piece of the comparison: its qualifier, or its column.
    pub fn start(&self) -> usize {
        self.qualifier.unwrap_or(self.column)
    }
}

/// Every comparison of a column with a string literal by `=` or `LIKE`.
pub(super) fn comparisons(pieces: &[Piece<'_>]) -> Vec<Comparison> {
    let is_word = |i: usize| matches!(pieces.get(i), Some(Piece::Word(_)));
    let is_space = |i: usize| pieces.get(i).is_some_and(is_gap);
    let is_equals = |i: usize| matches!(pieces.get(i), Some(Piece::Other(t)) if t.trim() == "=");
    let is_like = |i: usize| pieces.get(i).is_some_and(|p| is_word_piece(p, "like"));
    let is_literal =
        |i: usize| matches!(pieces.get(i), Some(Piece::Other(t)) if t.starts_with('\''));
    (0..pieces.len())
        .filter(|&literal| is_literal(literal))
        .filter_map(|literal| {
            let (column, operator) = if literal >= 2 && is_equals(literal - 1) {
                (literal - 2, Operator::Equals)
            } else if literal >= 4
                && is_space(literal - 1)
                && is_like(literal - 2)
                && is_space(literal - 3)
            {
                (literal - 4, Operator::Like)
            } else {
                return None;
            };
            if !is_word(column) {
                return None;
            }
            let qualified =
                column >= 2 && pieces.get(column - 1).is_some_and(is_dot) && is_word(column - 2);
            Some(Comparison {
                qualifier: qualified.then(|| column - 2),
                column,
                operator,
                literal,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::sql_text::pieces;

    fn found(sql: &str) -> Vec<(Option<String>, String, Operator, String)> {
        let pieces = pieces(sql);
        comparisons(&pieces)
            .into_iter()
            .map(|c| {
                (
                    c.qualifier.map(|q| pieces[q].text().to_string()),
                    pieces[c.column].text().to_string(),
                    c.operator,
                    pieces[c.literal].text().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn equals_and_like_comparisons_are_found_with_their_qualifiers() {
        assert_eq!(
            found("SELECT a FROM t AS T1 WHERE T1.city = 'Paris' AND name LIKE '%an%' AND n > 'b'"),
            vec![
                (
                    Some("T1".into()),
                    "city".into(),
                    Operator::Equals,
                    "'Paris'".into()
                ),
                (None, "name".into(), Operator::Like, "'%an%'".into()),
            ]
        );
    }

    #[test]
    fn a_literal_compared_with_no_column_is_no_comparison() {
        assert!(found("SELECT 'a' = 'a', lower(x) = 'b' FROM t").is_empty());
    }
}
