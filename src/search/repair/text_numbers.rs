//! Numbers stored as text: a CSV file loaded with `sqlite3`'s `.import`
//! (every column TEXT), or a table declared without column types. SQLite
//! compares and sorts such numbers as text, so '9.5' > '100': `price >
//! 100`, `ORDER BY price DESC` and `MAX(price)` run and answer wrongly,
//! while `SUM` and `AVG` still read the numbers. An ordering by such a
//! column, an order comparison of one, and its MIN or MAX read it as a
//! number instead (`CAST(price AS REAL)`). The reading is kept only where
//! it answers differently (`answers_differ`): where text order and number
//! order agree, the stored text stays the answer, as written.

use super::rewrite::{
    column_named, columns_where, parse_expr, plain_argument_mut, reread_query, Rereading,
};
use crate::db::executor::QueryResult;
use crate::db::schema::Column;
use crate::db::{Schema, Value};
use crate::sources::cells::parse_number;
use sqlparser::ast::{BinaryOperator, Expr, FunctionArguments};
use std::collections::HashSet;

/// The database's columns that hold numbers as text, by lowercased name
/// (`columns_where`).
#[derive(Debug, Clone, Default)]
pub(super) struct NumbersAsText(HashSet<String>);

impl NumbersAsText {
    pub(super) fn of(schema: &Schema) -> Self {
        NumbersAsText(columns_where(schema, holds_numbers_as_text))
    }
}

/// Whether every example of `column` (two at least: one value has no
/// order) is a text that is a bare numeral. A numeral with a leading zero
/// (`02647`) is a code, not a number (`parse_number`).
fn holds_numbers_as_text(column: &Column) -> bool {
    column.examples.len() >= 2
        && column.examples.iter().all(|value| match value {
            Value::Text(text) => parse_number(text).is_some_and(|n| n.plain),
            _ => false,
        })
}

/// `sql` with every ordering by a column of numbers stored as text, every
/// order comparison of one, and every MIN or MAX of one reading it as a
/// number; None when it has none.
pub(super) fn read_as_numbers(sql: &str, numbers: &NumbersAsText) -> Option<String> {
    if numbers.0.is_empty() {
        return None;
    }
    reread_query(sql, numbers)
}

/// Whether two results of the same question give different answers when
/// each text that is a numeral is read as its number: a reading that
/// only turned '2012' into 2012.0 answers the same.
pub(super) fn answers_differ(a: &QueryResult, b: &QueryResult) -> bool {
    let same_cell = |x: &Value, y: &Value| match (as_number(x), as_number(y)) {
        (Some(x), Some(y)) => x == y,
        _ => x == y,
    };
    a.total_rows != b.total_rows
        || a.rows.len() != b.rows.len()
        || a.rows
            .iter()
            .zip(&b.rows)
            .any(|(r, s)| r.len() != s.len() || r.iter().zip(s).any(|(x, y)| !same_cell(x, y)))
}

fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(i) => Some(*i as f64),
        Value::Real(x) => Some(*x),
        Value::Text(text) => parse_number(text).filter(|n| n.plain).map(|n| n.value),
        _ => None,
    }
}

impl Rereading for NumbersAsText {
    fn reread(&self, expr: &Expr) -> Option<Expr> {
        let name = column_named(expr)?;
        if !self.0.contains(&name.value.to_lowercase()) {
            return None;
        }
        parse_expr(&format!("CAST({expr} AS REAL)"))
    }

    fn ordered_operands<'e>(&self, expr: &'e mut Expr) -> Vec<&'e mut Expr> {
        match expr {
            Expr::BinaryOp { left, op, right } if orders(op) => vec![left, right],
            Expr::Between {
                expr, low, high, ..
            } => vec![expr, low, high],
            Expr::Function(function)
                if matches!(
                    function.name.to_string().to_lowercase().as_str(),
                    "min" | "max"
                ) =>
            {
                // MIN and MAX of one argument are aggregates; of more,
                // they compare their arguments: both order.
                match &mut function.args {
                    FunctionArguments::List(list) => list
                        .args
                        .iter_mut()
                        .filter_map(plain_argument_mut)
                        .collect(),
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }
}

/// Whether `op` compares by order (equality of a numeral's text holds as
/// text: `price = 100` finds '100').
fn orders(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(op, Gt | GtEq | Lt | LtEq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::Table;

    fn column(name: &str, examples: Vec<Value>) -> Column {
        Column {
            name: name.into(),
            declared_type: "TEXT".into(),
            primary_key: false,
            examples,
            description: None,
            value_description: None,
            json: None,
        }
    }

    fn texts(values: &[&str]) -> Vec<Value> {
        values.iter().map(|v| Value::Text((*v).into())).collect()
    }

    fn numbers() -> NumbersAsText {
        NumbersAsText::of(&Schema {
            tables: vec![Table {
                name: "products".into(),
                is_view: false,
                row_count: Some(3),
                columns: vec![
                    column("price", texts(&["9.5", "100", "12.25"])),
                    column("name", texts(&["Pen", "Lamp", "Cup"])),
                    column("zip", texts(&["02647", "45244"])),
                    column("stock", vec![Value::Integer(3), Value::Integer(12)]),
                    column("size", texts(&["12"])),
                ],
                foreign_keys: Vec::new(),
            }],
        })
    }

    fn read(sql: &str) -> Option<String> {
        read_as_numbers(sql, &numbers())
    }

    #[test]
    fn orderings_comparisons_and_extremes_of_numbers_as_text_read_numbers() {
        assert_eq!(
            read("SELECT name FROM products AS T ORDER BY T.price DESC LIMIT 1").as_deref(),
            Some("SELECT name FROM products AS T ORDER BY CAST(T.price AS REAL) DESC LIMIT 1")
        );
        assert_eq!(
            read("SELECT COUNT(*) FROM products WHERE price > 100 AND name <> 'Pen'").as_deref(),
            Some("SELECT COUNT(*) FROM products WHERE CAST(price AS REAL) > 100 AND name <> 'Pen'")
        );
        assert_eq!(
            read("SELECT MAX(price), MIN(price) FROM products").as_deref(),
            Some("SELECT MAX(CAST(price AS REAL)), MIN(CAST(price AS REAL)) FROM products")
        );
        assert_eq!(
            read("SELECT name FROM products WHERE price BETWEEN 10 AND 20").as_deref(),
            Some("SELECT name FROM products WHERE CAST(price AS REAL) BETWEEN 10 AND 20")
        );
    }

    #[test]
    fn other_columns_uses_and_readings_already_made_are_left() {
        for sql in [
            "SELECT name FROM products WHERE price = '100'",
            "SELECT SUM(price), AVG(price) FROM products",
            "SELECT name FROM products ORDER BY CAST(price AS REAL) DESC",
            "SELECT name FROM products WHERE price + 0 > 100",
            "SELECT name FROM products ORDER BY name, zip, stock, size",
            "SELECT MAX(stock) FROM products WHERE zip > '1'",
        ] {
            assert_eq!(read(sql), None, "{sql}");
        }
    }

    fn result(rows: Vec<Vec<Value>>) -> QueryResult {
        let total_rows = rows.len();
        QueryResult {
            columns: vec!["a".into()],
            digest: crate::db::digest::ResultDigest::from_rows(1, &rows),
            rows,
            total_rows,
            elapsed_ms: 0.0,
        }
    }

    #[test]
    fn a_numeral_read_as_its_number_answers_the_same() {
        let text = result(vec![texts(&["2012"])]);
        assert!(!answers_differ(
            &text,
            &result(vec![vec![Value::Real(2012.0)]])
        ));
        assert!(answers_differ(
            &text,
            &result(vec![vec![Value::Real(12480.5)]])
        ));
        assert!(answers_differ(
            &result(vec![texts(&["9.5"]), texts(&["100"])]),
            &result(vec![texts(&["100"]), texts(&["9.5"])])
        ));
        assert!(answers_differ(&text, &result(vec![texts(&["Pen"])])));
    }
}
