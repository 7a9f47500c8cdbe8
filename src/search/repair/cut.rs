//! A query whose text ends too soon: the token limit or the loop detector
//! cut the model off mid-query (often deep in a chain of nested `IN
//! (SELECT ...` or a long run of conditions), or it closed its answer
//! before the query was done. Such a query is ended where it last could
//! be: before the condition or clause it was writing, or after a closed
//! group, with the parentheses still open closed. What the model had
//! written up to there stands; nothing is invented.

use super::super::sql_text::{units, Unit, CLAUSES_AFTER_FROM};

/// Ends tried for one query at most, latest first.
const MAX_ENDS: usize = 24;

/// Words a query can end before, besides the clauses after a FROM: each
/// starts a condition or a join.
const CONDITIONS_AND_JOINS: [&str; 6] = ["and", "or", "join", "inner", "left", "cross"];

/// Whether SQLite's (or the guard's parser's) `error` says the text ended
/// before the query did, whatever the model meant.
pub(super) fn ended_too_soon(error: &str) -> bool {
    let error = error.to_lowercase();
    error.contains("incomplete input") || error.contains("unterminated string literal")
}

/// Ways to end `sql` where it could have ended, the latest first: before
/// each boundary word or comma and after each closing parenthesis, back to
/// its first FROM (an end before any FROM would answer a constant). Each
/// has the parentheses open at that point closed. The text's own end is
/// none of them: a cut text's last word may be half a name, or the first
/// operand of a condition (`AND Heat` runs, and filters every row away).
pub(super) fn endings(sql: &str) -> Vec<String> {
    // (byte offset, parentheses open there)
    let mut ends: Vec<(usize, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut past_from = false;
    for (at, unit) in units(sql) {
        match unit {
            Unit::Word(word) => {
                let boundary = CLAUSES_AFTER_FROM
                    .iter()
                    .chain(&CONDITIONS_AND_JOINS)
                    .any(|b| word.eq_ignore_ascii_case(b));
                if past_from && boundary {
                    ends.push((at, depth));
                }
                past_from |= word.eq_ignore_ascii_case("from");
            }
            Unit::Sign('(') => depth += 1,
            Unit::Sign(')') => {
                depth -= 1;
                if past_from {
                    ends.push((at + 1, depth));
                }
            }
            Unit::Sign(',') if past_from => ends.push((at, depth)),
            Unit::Literal(_) | Unit::Sign(_) => {}
        }
    }
    let mut out: Vec<String> = Vec::new();
    for &(at, open) in ends.iter().rev() {
        if open < 0 {
            continue;
        }
        let ended = format!("{}{}", sql[..at].trim_end(), ")".repeat(open as usize));
        if out.last() != Some(&ended) {
            out.push(ended);
        }
        if out.len() == MAX_ENDS {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_of_subqueries_cut_mid_condition_ends_before_that_condition() {
        let sql = "SELECT SUM(Weight) FROM engine WHERE Engine_ID IN (SELECT Engine_ID \
                   FROM m WHERE Block = 'Alloy' AND Piston = '";
        let ends = endings(sql);
        assert_eq!(
            ends[0],
            "SELECT SUM(Weight) FROM engine WHERE Engine_ID IN (SELECT Engine_ID \
             FROM m WHERE Block = 'Alloy')"
        );
        assert_eq!(
            ends[1],
            "SELECT SUM(Weight) FROM engine WHERE Engine_ID IN (SELECT Engine_ID FROM m)"
        );
    }

    #[test]
    fn a_condition_cut_after_its_first_word_is_dropped_whole() {
        let sql = "SELECT COUNT(*) FROM t AS T1 WHERE T1.a = 'x' AND T1";
        let ends = endings(sql);
        assert_eq!(ends[0], "SELECT COUNT(*) FROM t AS T1 WHERE T1.a = 'x'");
    }

    #[test]
    fn parentheses_and_words_inside_literals_do_not_count() {
        let sql = "SELECT a FROM t WHERE b = 'x (and y' AND c IN (1, 2";
        let ends = endings(sql);
        assert_eq!(ends[0], "SELECT a FROM t WHERE b = 'x (and y' AND c IN (1)");
        assert_eq!(ends[1], "SELECT a FROM t WHERE b = 'x (and y'");
    }

    #[test]
    fn nothing_ends_before_the_first_from() {
        assert!(endings("SELECT a, b, COUNT(*), c").is_empty());
        let ends = endings("SELECT a, b FROM t WHERE");
        assert_eq!(ends, vec!["SELECT a, b FROM t"]);
        // A group closed at the cut is an end.
        let ends = endings("SELECT a FROM t WHERE b IN (SELECT b FROM u)");
        assert_eq!(ends[0], "SELECT a FROM t WHERE b IN (SELECT b FROM u)");
    }

    #[test]
    fn a_cut_query_runs_at_its_latest_end_that_runs() {
        use crate::db::{ExecConfig, Executor};
        use crate::search::repair::SchemaNames;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engines.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE engine (Engine_ID INTEGER, Weight REAL);
             CREATE TABLE parts (Engine_ID INTEGER, Material TEXT, Heat TEXT);
             INSERT INTO engine VALUES (1, 10), (2, 20), (3, 40);
             INSERT INTO parts VALUES (1, 'Steel', 'Tempered'), (2, 'Alloy', 'None');",
        )
        .unwrap();
        drop(conn);
        let executor = Executor::open(&path, ExecConfig::default()).unwrap();
        let schema = crate::db::Schema::load(&path, &Default::default()).unwrap();
        let names = SchemaNames::of(&schema);
        // Cut after a condition's first word: `T1` alone is no column, so
        // the end before that condition is the one that runs.
        let sql = "SELECT COUNT(*) FROM parts AS T1 WHERE T1.Heat = 'Tempered' AND T1";
        let (ended, result) = names.end_cut_query(&executor, sql).unwrap();
        assert_eq!(
            ended,
            "SELECT COUNT(*) FROM parts AS T1 WHERE T1.Heat = 'Tempered'"
        );
        assert_eq!(result.rows[0][0].to_string(), "1");
        // Through the one entry for failed queries, only when told the text
        // was cut: `T1` alone reads to SQLite as a missing column.
        let error = executor.query(sql).unwrap_err().to_string();
        let (ended, _) = names
            .fix_until_it_runs(&executor, sql, &error, true)
            .unwrap();
        assert_eq!(
            ended,
            "SELECT COUNT(*) FROM parts AS T1 WHERE T1.Heat = 'Tempered'"
        );
        let fixed = names.fix_until_it_runs(&executor, sql, &error, false);
        assert!(
            fixed.as_ref().is_none_or(|(sql, _)| *sql != ended),
            "{fixed:?}"
        );
        // A rewrite the model was cut off in is run the same way.
        let (ran, outcome) = names.query_or_fix(&executor, sql, true, "");
        assert_eq!(ran, ended);
        assert!(outcome.is_ok());
        assert_ne!(names.query_or_fix(&executor, sql, false, "").0, ended);
        // SQLite's own verdict on an unfinished text routes the repair
        // there without being told the text was cut.
        let sql = "SELECT SUM(Weight) FROM engine WHERE Engine_ID IN (SELECT Engine_ID \
                   FROM parts WHERE Material = 'Alloy' AND Heat = '";
        let error = executor.query(sql).unwrap_err().to_string();
        let (ended, result) = names
            .fix_until_it_runs(&executor, sql, &error, false)
            .unwrap();
        assert!(ended.ends_with("WHERE Material = 'Alloy')"), "{ended}");
        assert_eq!(result.rows[0][0].to_string(), "20");
        // The latest whole query, failing on a misspelt name, is fixed
        // rather than cut shorter; the cut's last condition is dropped.
        let sql = "SELECT COUNT(*) FROM parts WHERE Materal = 'Alloy' AND Heat";
        let (ended, _) = names.end_cut_query(&executor, sql).unwrap();
        assert_eq!(ended, "SELECT COUNT(*) FROM parts WHERE Material = 'Alloy'");
        // No end of a text that never reached FROM.
        let never_from = names.end_cut_query(&executor, "SELECT COUNT(*), Weight");
        assert!(never_from.is_none());
    }

    #[test]
    fn the_errors_of_a_text_that_stopped_early_are_told_apart() {
        assert!(ended_too_soon("SQL error: incomplete input"));
        assert!(ended_too_soon(
            "SQL error: Unterminated string literal at Line: 1, Column: 385"
        ));
        assert!(!ended_too_soon("SQL error: no such column: T1.a"));
    }
}
