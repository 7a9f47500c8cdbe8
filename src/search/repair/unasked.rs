//! A query that found no value because it filters on a text the question
//! never mentions (`event_status = 'Open'` in a query for "the budget of
//! the October Speaker event"): a small model adds a condition on a value
//! it saw among a column's examples, or on one it made up. One such
//! condition among the WHERE clause's AND-ed ones is dropped, the first
//! whose dropping lets the query find a value. A text the question (or
//! its hint) holds, apart from case and LIKE's `%`, stays, unless it is
//! the name of one of the database's tables or columns: there the
//! question's word names that table (`type = 'Budget'` in a query for
//! "the highest budget amount", over a `budget` table).

use super::super::sql_text::{is_gap, is_word_piece, pieces, unquote, Piece, CLAUSES_AFTER_FROM};
use super::comparison::comparisons;
use super::kept_if_it_finds_a_value;
use crate::db::{Executor, QueryResult};
use std::ops::Range;
use std::sync::Arc;

/// `sql`, which found no value, without the first AND-ed condition of a
/// WHERE clause that compares a column with a text `asked` does not
/// mention (or mentions as the name `is_schema_name` says it is) and whose
/// dropping makes it find a value, and its result.
pub(super) fn drop_unasked_filter(
    executor: &Executor,
    sql: &str,
    asked: &str,
    is_schema_name: impl Fn(&str) -> bool,
) -> Option<(String, Arc<QueryResult>)> {
    let pieces = pieces(sql);
    let asked = asked.to_lowercase();
    unasked_conditions(&pieces, &asked, is_schema_name)
        .into_iter()
        .find_map(|dropped| {
            let text: String = pieces
                .iter()
                .enumerate()
                .filter(|(i, _)| !dropped.contains(i))
                .map(|(_, p)| p.text())
                .collect();
            kept_if_it_finds_a_value(executor, text)
        })
}

fn is_space(piece: Option<&Piece<'_>>) -> bool {
    piece.is_some_and(is_gap)
}

fn is_word(piece: Option<&Piece<'_>>, word: &str) -> bool {
    piece.is_some_and(|p| is_word_piece(p, word))
}

/// The pieces to leave out for each condition `[q.]column = 'text'` or
/// `[q.]column LIKE 'text'` that is one of a WHERE clause's AND-ed
/// conditions and whose text `asked` (lower case) does not hold, or holds
/// as a table's or column's name.
fn unasked_conditions(
    pieces: &[Piece<'_>],
    asked: &str,
    is_schema_name: impl Fn(&str) -> bool,
) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    for comparison in comparisons(pieces) {
        let at = comparison.literal;
        let text = unquote(pieces[at].text()).trim_matches('%').to_lowercase();
        if text.trim().is_empty() || (asked.contains(&text) && !is_schema_name(&text)) {
            continue;
        }
        let start = comparison.start();
        if start < 2 || !is_space(pieces.get(start - 1)) {
            continue;
        }
        let joined_by_and = is_word(pieces.get(start - 2), "and");
        if !joined_by_and && !is_word(pieces.get(start - 2), "where") {
            continue;
        }
        // What follows the condition: another AND-ed one, the end of the
        // WHERE clause, or nothing.
        let next = (at + 1..pieces.len()).find(|&i| !is_space(pieces.get(i)));
        let and_follows = next.is_some_and(|i| is_word(pieces.get(i), "and"));
        let clause_ends = match next.map(|i| &pieces[i]) {
            None => true,
            Some(Piece::Other(t)) => t.trim_start().starts_with([')', ';']),
            Some(Piece::Word(w)) => CLAUSES_AFTER_FROM
                .iter()
                .any(|c| *c != "where" && w.eq_ignore_ascii_case(c)),
        };
        if !and_follows && !clause_ends {
            continue;
        }
        // The space before the AND or WHERE goes with it; after WHERE the
        // next condition's AND goes instead.
        let before = if is_space(pieces.get(start.saturating_sub(3))) {
            start - 3
        } else {
            start - 2
        };
        ranges.push(match (joined_by_and, next) {
            (false, Some(and)) if and_follows => start..and + 2,
            _ => before..at + 1,
        });
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> (tempfile::TempDir, Executor) {
        let (dir, executor, _) = crate::search::repair::database_from(
            "CREATE TABLE budget (category TEXT, event_status TEXT, event TEXT, amount INTEGER);
             INSERT INTO budget VALUES ('Food', 'Closed', 'October Speaker', 50),
               ('Parking', 'Closed', 'October Speaker', 20), ('Food', 'Open', 'April Meeting', 10);",
        );
        (dir, executor)
    }

    fn dropped(sql: &str, asked: &str) -> Option<String> {
        let (_dir, executor) = budget();
        let is_schema_name = |text: &str| ["budget", "category", "amount"].contains(&text);
        drop_unasked_filter(&executor, sql, asked, is_schema_name).map(|(fixed, _)| fixed)
    }

    #[test]
    fn a_filter_on_a_text_the_question_never_mentions_is_dropped() {
        let asked = "What is the total budget of the October Speaker event?";
        assert_eq!(
            dropped(
                "SELECT SUM(amount) FROM budget WHERE event_status = 'Open' AND event = 'October Speaker'",
                asked
            )
            .as_deref(),
            Some("SELECT SUM(amount) FROM budget WHERE event = 'October Speaker'")
        );
        assert_eq!(
            dropped(
                "SELECT SUM(T.amount) FROM budget AS T WHERE T.event = 'October Speaker' AND T.event_status LIKE '%Open%' GROUP BY T.event",
                asked
            )
            .as_deref(),
            Some("SELECT SUM(T.amount) FROM budget AS T WHERE T.event = 'October Speaker' GROUP BY T.event")
        );
        assert_eq!(
            dropped("SELECT amount FROM budget WHERE category = 'Travel'", asked).as_deref(),
            Some("SELECT amount FROM budget")
        );
    }

    #[test]
    fn a_text_the_question_holds_as_a_tables_name_is_no_value_it_asks_for() {
        assert_eq!(
            dropped(
                "SELECT amount FROM budget WHERE category = 'Budget'",
                "What is the highest budget amount?"
            )
            .as_deref(),
            Some("SELECT amount FROM budget")
        );
    }

    #[test]
    fn mentioned_texts_alternatives_and_filters_that_leave_nothing_stay() {
        let asked = "What did the April Meeting spend on parking?";
        // Both texts are in the question (apart from case).
        assert_eq!(
            dropped(
                "SELECT amount FROM budget WHERE event = 'April Meeting' AND category = 'Parking'",
                asked
            ),
            None
        );
        assert_eq!(
            dropped(
                "SELECT amount FROM budget WHERE category = 'Travel'",
                "the travel budget?"
            ),
            None
        );
        // One side of an OR, or a condition inside parentheses, is no
        // AND-ed condition of the WHERE clause.
        for sql in [
            "SELECT amount FROM budget WHERE event = 'x' OR category = 'y'",
            "SELECT amount FROM budget WHERE (category = 'y') AND event = 'April Meeting'",
        ] {
            assert_eq!(dropped(sql, "how much?"), None, "{sql}");
        }
        // Dropping the filter still finds nothing.
        assert_eq!(
            dropped(
                "SELECT amount FROM budget WHERE event = 'April Meeting' AND category = 'Other' AND amount > 100",
                asked
            ),
            None
        );
    }
}
