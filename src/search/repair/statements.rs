//! A reply that writes several statements where one query was asked for
//! (`SELECT ...; SELECT ...`, one per part of the question). The engine
//! runs one read query only, so the guard refuses the whole text; the
//! first statement is what the reply answers with first, and runs alone.

use sqlparser::dialect::SQLiteDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// `sql`'s text up to its first statement's end, when the guard refused it
/// as more than one statement; None for any other error, or when nothing
/// but that statement is left.
pub(super) fn first_statement(sql: &str, error: &str) -> Option<String> {
    if !error.contains("statements were given") && !error.contains("more than one statement") {
        return None;
    }
    let tokens = Tokenizer::new(&SQLiteDialect {}, sql).tokenize().ok()?;
    let end = tokens.iter().position(|token| *token == Token::SemiColon)?;
    let first: String = tokens[..end].iter().map(Token::to_string).collect();
    let first = first.trim();
    (!first.is_empty()).then(|| first.to_string())
}

#[cfg(test)]
mod tests {
    use super::first_statement;
    use crate::search::repair::SchemaNames;

    #[test]
    fn the_first_of_several_statements_runs_alone() {
        let (_dir, executor, names): (_, _, SchemaNames) = crate::search::repair::database_from(
            "CREATE TABLE engine (id INTEGER PRIMARY KEY, bore REAL, ratio REAL);
             INSERT INTO engine VALUES (1, 90, 11), (2, 80, 14);",
        );
        let sql = "SELECT bore * 2 AS twice FROM engine WHERE id = 1;\nSELECT ratio <= 13 AS ok FROM engine WHERE id = 1";
        let error = executor.query(sql).unwrap_err().to_string();
        assert!(error.contains("statements were given"), "{error}");
        let (fixed, result) = names
            .fix_until_it_runs(&executor, sql, &error, false)
            .unwrap();
        assert_eq!(fixed, "SELECT bore * 2 AS twice FROM engine WHERE id = 1");
        assert_eq!(result.rows.len(), 1);
    }

    #[test]
    fn semicolons_inside_literals_and_other_errors_are_left_alone() {
        let refused = "refused: 2 statements were given";
        assert_eq!(
            first_statement("SELECT 'a;b' FROM t; SELECT 2", refused).as_deref(),
            Some("SELECT 'a;b' FROM t")
        );
        assert_eq!(
            first_statement("SELECT 1; SELECT 2", "no such column: x"),
            None
        );
        assert_eq!(first_statement("; SELECT 2", refused), None);
    }
}
