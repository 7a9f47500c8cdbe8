//! Dates written as people write them (`03/15/2021`) ordered or compared
//! as text: as text they sort by month (or day) before the year, so
//! `ORDER BY order_date DESC` puts December of any year first and
//! `order_date > '2023-06-30'` compares a month with a year, and SQLite's
//! date functions read none of them (`strftime('%m', order_date)` is
//! NULL). Where a column's form is known, such an ordering, a comparison
//! with an ISO date or a date function's time value reads the column as
//! `YYYY-MM-DD` instead.

use super::rewrite::{
    argument_mut, column_named, columns_of_a_kind, is_iso_date, parse_expr, reread_query,
    time_value_position, Rereading,
};
use crate::db::Schema;
use crate::search::dates::written::{written_form, WrittenForm};
use sqlparser::ast::{BinaryOperator, Expr};
use std::collections::HashMap;

/// The database's columns of written dates whose order of month and day
/// is known, by lowercased name (`columns_of_a_kind`).
#[derive(Debug, Clone, Default)]
pub(super) struct WrittenDates(HashMap<String, WrittenForm>);

impl WrittenDates {
    pub(super) fn of(schema: &Schema) -> Self {
        WrittenDates(columns_of_a_kind(schema, |column| {
            written_form(&column.examples).filter(WrittenForm::order_known)
        }))
    }
}

/// `sql` with every ordering by a column of written dates, every
/// comparison of one with an ISO date and every date function reading
/// one, reading it as `YYYY-MM-DD`; None when it has none.
pub(super) fn in_date_order(sql: &str, dates: &WrittenDates) -> Option<String> {
    if dates.0.is_empty() {
        return None;
    }
    reread_query(sql, dates)
}

impl Rereading for WrittenDates {
    fn reread(&self, expr: &Expr) -> Option<Expr> {
        let form = self.0.get(&column_named(expr)?.value.to_lowercase())?;
        let iso = parse_expr(&form.iso(&expr.to_string())?)?;
        Some(Expr::Nested(Box::new(iso)))
    }

    /// The side of a comparison with an ISO date that is not the date, and
    /// the time value of a date function.
    fn ordered_operands<'e>(&self, expr: &'e mut Expr) -> Vec<&'e mut Expr> {
        match expr {
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                if is_iso_date(right) {
                    vec![left]
                } else if is_iso_date(left) {
                    vec![right]
                } else {
                    Vec::new()
                }
            }
            Expr::Between {
                expr, low, high, ..
            } if is_iso_date(low) && is_iso_date(high) => vec![expr],
            // A date function reads no written date: it gives NULL.
            Expr::Function(function) => time_value_position(function)
                .and_then(|at| argument_mut(function, at))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn is_comparison(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(op, Gt | GtEq | Lt | LtEq | Eq | NotEq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{Column, Table};
    use crate::db::Value;

    fn dates() -> WrittenDates {
        let column = |name: &str, examples: &[&str]| Column {
            name: name.into(),
            declared_type: "TEXT".into(),
            primary_key: false,
            examples: examples.iter().map(|e| Value::Text((*e).into())).collect(),
            description: None,
            value_description: None,
        };
        WrittenDates::of(&Schema {
            tables: vec![Table {
                name: "orders".into(),
                is_view: false,
                row_count: Some(2),
                columns: vec![
                    column("order_date", &["03/15/2021", "12/01/2022"]),
                    // Month and day cannot be told apart: left alone.
                    column("due", &["03/05/2021", "12/01/2022"]),
                    column("customer", &["Ann", "Bob"]),
                ],
                foreign_keys: Vec::new(),
            }],
        })
    }

    const ISO: &str = "(SUBSTR(order_date, 7, 4) || '-' || SUBSTR(order_date, 1, 2) || '-' || SUBSTR(order_date, 4, 2))";

    #[test]
    fn orderings_and_comparisons_with_iso_dates_read_the_date() {
        assert_eq!(
            in_date_order(
                "SELECT customer FROM orders ORDER BY order_date DESC LIMIT 1",
                &dates()
            ),
            Some(format!(
                "SELECT customer FROM orders ORDER BY {ISO} DESC LIMIT 1"
            ))
        );
        assert_eq!(
            in_date_order(
                "SELECT COUNT(*) FROM orders WHERE order_date > '2023-06-30'",
                &dates()
            ),
            Some(format!(
                "SELECT COUNT(*) FROM orders WHERE {ISO} > '2023-06-30'"
            ))
        );
    }

    #[test]
    fn a_date_function_reads_the_date() {
        assert_eq!(
            in_date_order(
                "SELECT AVG(units) FROM orders WHERE strftime('%m', orders.order_date) = '12'",
                &dates()
            ),
            Some(format!(
                "SELECT AVG(units) FROM orders WHERE strftime('%m', {}) = '12'",
                ISO.replace("order_date", "orders.order_date")
            ))
        );
        assert_eq!(
            in_date_order(
                "SELECT julianday('2024-01-01') - julianday(order_date) FROM orders",
                &dates()
            ),
            Some(format!(
                "SELECT julianday('2024-01-01') - julianday({ISO}) FROM orders"
            ))
        );
    }

    #[test]
    fn other_uses_and_columns_are_left() {
        for sql in [
            "SELECT customer FROM orders WHERE order_date = '03/15/2021'",
            "SELECT customer FROM orders ORDER BY due DESC",
            "SELECT customer FROM orders ORDER BY customer",
            "SELECT order_date FROM orders WHERE substr(order_date, 7, 4) = '2021'",
            "SELECT strftime('%m', due) FROM orders",
            "SELECT strftime(order_date, '2021-01-01') FROM orders",
        ] {
            assert_eq!(in_date_order(sql, &dates()), None, "{sql}");
        }
    }
}
