//! A function's text compared with a number: `strftime('%Y', day) <
//! 2020`, `substr(sent_on, 5, 2) = 07`. SQLite gives such a call's result
//! no type affinity, so it compares text with a number as it is, and any
//! text is greater than any number: the comparison is false (or true)
//! for every row, whatever the date. The model meant the text's number;
//! the call is read as one (`CAST(strftime('%Y', day) AS INTEGER) <
//! 2020`), which also reads '07' as 7.

use super::rewrite::{compared_side, parse_expr, rewrite_query};
use sqlparser::ast::{Expr, UnaryOperator, VisitorMut};
use std::ops::ControlFlow;

/// SQLite's functions that always give text (or NULL), by lowercased name.
const TEXT_FUNCTIONS: [&str; 7] = [
    "strftime",
    "substr",
    "substring",
    "trim",
    "ltrim",
    "rtrim",
    "replace",
];

/// `sql` with every call of a text function that is compared with a
/// number (by `=`, `<>`, an order, BETWEEN or IN) read as a number; None
/// when it compares none so (or is no query the parser reads).
pub(super) fn read_as_numbers(sql: &str) -> Option<String> {
    let mut reader = Reader { changed: false };
    rewrite_query(sql, &mut reader, |r| r.changed)
}

struct Reader {
    changed: bool,
}

impl Reader {
    /// `text`, a text function's call, read as a number: a whole one when
    /// what it is compared with is `whole`.
    fn read(&mut self, text: &mut Expr, whole: bool) {
        let kind = if whole { "INTEGER" } else { "REAL" };
        if let Some(read) = parse_expr(&format!("CAST({text} AS {kind})")) {
            *text = read;
            self.changed = true;
        }
    }
}

impl VisitorMut for Reader {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some((text, numbers)) = compared_side(expr, is_number) {
            if is_text_call(text) {
                let whole = numbers.iter().all(|n| is_whole(n));
                self.read(text, whole);
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether `expr` is a call of one of the text functions, in parentheses
/// or not.
fn is_text_call(expr: &Expr) -> bool {
    match expr {
        Expr::Nested(inner) => is_text_call(inner),
        Expr::Function(function) => {
            let name = function.name.to_string().to_lowercase();
            TEXT_FUNCTIONS.contains(&name.as_str())
        }
        Expr::Substring { .. } | Expr::Trim { .. } => true,
        _ => false,
    }
}

/// Whether `expr` is a numeric literal, signed or not.
fn is_number(expr: &Expr) -> bool {
    match expr {
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => is_number(expr),
        Expr::Value(_) => {
            let text = expr.to_string();
            !text.starts_with('\'') && text.parse::<f64>().is_ok()
        }
        _ => false,
    }
}

/// Whether `number`, a numeric literal, is written as a whole number.
fn is_whole(number: &Expr) -> bool {
    !number.to_string().contains(['.', 'e', 'E'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::repair::database_from;

    #[test]
    fn a_text_compared_with_a_number_is_read_as_one() {
        for (sql, read) in [
            (
                "SELECT COUNT(*) FROM users WHERE strftime('%Y', created_at, 'unixepoch') < 2020",
                "SELECT COUNT(*) FROM users WHERE CAST(strftime('%Y', created_at, 'unixepoch') AS INTEGER) < 2020",
            ),
            (
                "SELECT COUNT(*) FROM parcels WHERE SUBSTR(sent_on, 5, 2) = 07 AND 2022 = substr(sent_on, 1, 4)",
                "SELECT COUNT(*) FROM parcels WHERE CAST(SUBSTR(sent_on, 5, 2) AS INTEGER) = 07 \
                 AND 2022 = CAST(SUBSTR(sent_on, 1, 4) AS INTEGER)",
            ),
            (
                "SELECT 1 FROM t WHERE strftime('%H', ts) BETWEEN 8 AND 9.5 OR strftime('%m', ts) IN (6, 7)",
                "SELECT 1 FROM t WHERE CAST(strftime('%H', ts) AS REAL) BETWEEN 8 AND 9.5 \
                 OR CAST(strftime('%m', ts) AS INTEGER) IN (6, 7)",
            ),
        ] {
            assert_eq!(read_as_numbers(sql).as_deref(), Some(read), "{sql}");
        }
    }

    #[test]
    fn texts_compared_with_texts_and_numbers_with_numbers_are_left() {
        for sql in [
            "SELECT 1 FROM t WHERE strftime('%Y', day) = '2020'",
            "SELECT 1 FROM t WHERE substr(code, 1, 2) IN ('07', '08')",
            "SELECT 1 FROM t WHERE length(name) > 3 AND year < 2020",
            "SELECT strftime('%Y', day) FROM t ORDER BY substr(day, 1, 4) DESC",
        ] {
            assert_eq!(read_as_numbers(sql), None, "{sql}");
        }
    }

    #[test]
    fn the_reading_finds_the_rows_the_comparison_missed() {
        let (_dir, executor, _) = database_from(
            "CREATE TABLE parcels (id INTEGER, sent_on INTEGER);
             INSERT INTO parcels VALUES (1, 20220715), (2, 20220803), (3, 20230712);",
        );
        let count = |sql: &str| executor.query(sql).unwrap().rows[0][0].to_string();
        let written = "SELECT COUNT(*) FROM parcels WHERE substr(sent_on, 1, 4) = 2022 \
                       AND substr(sent_on, 5, 2) = 07";
        assert_eq!(count(written), "0");
        assert_eq!(count(&read_as_numbers(written).unwrap()), "1");
    }
}
