//! Dates written as people write them (`03/15/2021`) ordered or compared
//! as text: as text they sort by month (or day) before the year, so
//! `ORDER BY order_date DESC` puts December of any year first and
//! `order_date > '2023-06-30'` compares a month with a year, and SQLite's
//! date functions read none of them (`strftime('%m', order_date)` is
//! NULL). Where a column's form is known, such an ordering, a comparison
//! with an ISO date or a date function's time value reads the column as
//! `YYYY-MM-DD` instead. Dates stored as eight digits (`20230315`) are
//! read so too where they meet an ISO date or a date function; they sort
//! by time already, and compare rightly with numbers of their form; the
//! difference of two of them, which counts days only within one month, is
//! read as the days between them.

use super::rewrite::{
    argument_mut, column_named, column_named_mut, columns_of_a_kind, compared_side, is_iso_date,
    parse_expr, reread_query, time_value_position, Rereading,
};
use crate::db::schema::{Column, Table};
use crate::db::{Schema, Value};
use crate::search::dates::digits::{self, holds_digit_dates};
use crate::search::dates::is_date_text;
use crate::search::dates::written::{written_form, WrittenForm};
use sqlparser::ast::{BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments};
use std::collections::HashMap;

/// The database's columns of written dates, by lowercased name
/// (`columns_of_a_kind`), with how each is read as an ISO date.
#[derive(Debug, Clone, Default)]
pub(super) struct WrittenDates(HashMap<String, Reading>);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Reading {
    /// Beside the column, `<column>_date` holds its dates in ISO form, as
    /// `--table` stores a file's column of written dates (`11 Jun 2022`).
    Companion,
    /// Cut and joined from a form whose order of month and day is known.
    Form(WrittenForm),
    /// Cut and joined from eight digits, `YYYYMMDD`.
    Digits,
}

impl WrittenDates {
    pub(super) fn of(schema: &Schema) -> Self {
        WrittenDates(columns_of_a_kind(schema, |table, column| {
            if has_iso_companion(table, column) {
                return Some(Reading::Companion);
            }
            if holds_digit_dates(column) {
                return Some(Reading::Digits);
            }
            written_form(&column.examples)
                .filter(WrittenForm::order_known)
                .map(Reading::Form)
        }))
    }

    /// How `expr` is read, when it names a column of such dates.
    fn reading_of(&self, expr: &Expr) -> Option<Reading> {
        self.0
            .get(&column_named(expr)?.value.to_lowercase())
            .copied()
    }

    /// The column of eight-digit dates `expr` names, bare, in parentheses
    /// or as the one argument of `date` or `datetime`.
    fn digit_dates_in<'e>(&self, expr: &'e Expr) -> Option<&'e Expr> {
        match expr {
            Expr::Nested(inner) => self.digit_dates_in(inner),
            Expr::Function(function) => {
                let name = function.name.to_string().to_lowercase();
                let FunctionArguments::List(list) = &function.args else {
                    return None;
                };
                match list.args.as_slice() {
                    [FunctionArg::Unnamed(FunctionArgExpr::Expr(argument))]
                        if name == "date" || name == "datetime" =>
                    {
                        self.digit_dates_in(argument)
                    }
                    _ => None,
                }
            }
            _ => (self.reading_of(expr) == Some(Reading::Digits)).then_some(expr),
        }
    }
}

/// Whether `column` holds texts that are not ISO dates and its table a
/// column `<column>_date` whose examples all are.
fn has_iso_companion(table: &Table, column: &Column) -> bool {
    let iso = |value: &Value| matches!(value, Value::Text(text) if is_iso_day(text));
    let companion_name = iso_companion(&column.name);
    let texts_not_iso = !column.examples.is_empty()
        && column
            .examples
            .iter()
            .all(|v| matches!(v, Value::Text(_)) && !iso(v));
    texts_not_iso
        && table.columns.iter().any(|c| {
            c.name.eq_ignore_ascii_case(&companion_name)
                && !c.examples.is_empty()
                && c.examples.iter().all(iso)
        })
}

/// The name of the column that holds `column`'s dates in ISO form, as
/// `--table` names it.
fn iso_companion(column: &str) -> String {
    format!("{column}_date")
}

/// `YYYY-MM-DD`, nothing more.
fn is_iso_day(text: &str) -> bool {
    text.len() == 10 && is_date_text(text)
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
        match self.reading_of(expr)? {
            Reading::Companion => {
                let mut companion = expr.clone();
                let name = column_named_mut(&mut companion)?;
                name.value = iso_companion(&name.value);
                Some(companion)
            }
            Reading::Form(form) => {
                let iso = parse_expr(&form.iso(&expr.to_string())?)?;
                Some(Expr::Nested(Box::new(iso)))
            }
            Reading::Digits => {
                let iso = parse_expr(&digits::iso(&expr.to_string()))?;
                Some(Expr::Nested(Box::new(iso)))
            }
        }
    }

    /// `b - a` of two eight-digit dates (or of `date()` of each) as the
    /// days between them.
    fn reread_whole(&self, expr: &Expr) -> Option<Expr> {
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Minus,
            right,
        } = expr
        else {
            return None;
        };
        let day_number = |side: &Expr| {
            let column = self.digit_dates_in(side)?;
            parse_expr(&format!("julianday({})", digits::iso(&column.to_string())))
        };
        Some(Expr::BinaryOp {
            left: Box::new(day_number(left)?),
            op: BinaryOperator::Minus,
            right: Box::new(day_number(right)?),
        })
    }

    fn reread_key(&self, expr: &Expr) -> Option<Expr> {
        if self.reading_of(expr) == Some(Reading::Digits) {
            return None;
        }
        self.reread(expr)
    }

    /// The side of a comparison with ISO dates that is not a date
    /// (`compared_side`), and the time value of a date function.
    fn ordered_operands<'e>(&self, expr: &'e mut Expr) -> Vec<&'e mut Expr> {
        match expr {
            Expr::BinaryOp { .. } | Expr::Between { .. } | Expr::InList { .. } => {
                compared_side(expr, is_iso_date)
                    .map(|(side, _)| vec![side])
                    .unwrap_or_default()
            }
            // A pattern that opens with a year (`'2020%'`, `'2020-03-%'`);
            // eight digits match one without a dash (`'202003%'`) as they are.
            Expr::Like { expr, pattern, .. }
                if opens_with_a_year(pattern)
                    && (self.reading_of(expr) != Some(Reading::Digits)
                        || pattern.to_string().get(5..6) == Some("-")) =>
            {
                vec![expr]
            }
            // A date function reads no written date: it gives NULL.
            Expr::Function(function) => time_value_position(function)
                .and_then(|at| argument_mut(function, at))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Whether `expr` is a text literal that opens with four digits.
fn opens_with_a_year(expr: &Expr) -> bool {
    let text = expr.to_string();
    matches!(expr, Expr::Value(_))
        && text.starts_with('\'')
        && text
            .get(1..5)
            .is_some_and(|y| y.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{Column, Table};
    use crate::db::Value;

    /// A column of `examples`, declared `declared_type`.
    fn column(name: &str, declared_type: &str, examples: Vec<Value>) -> Column {
        Column {
            name: name.into(),
            declared_type: declared_type.into(),
            primary_key: false,
            examples,
            description: None,
            value_description: None,
            json: None,
        }
    }

    /// A TEXT column of `examples`.
    fn text_column(name: &str, examples: &[&str]) -> Column {
        let texts = examples.iter().map(|e| Value::Text((*e).into())).collect();
        column(name, "TEXT", texts)
    }

    /// The written dates of a database of one table, `name`.
    fn dates_of_table(name: &str, columns: Vec<Column>) -> WrittenDates {
        WrittenDates::of(&Schema {
            tables: vec![Table {
                name: name.into(),
                is_view: false,
                row_count: None,
                columns,
                foreign_keys: Vec::new(),
            }],
        })
    }

    fn dates() -> WrittenDates {
        dates_of_table(
            "orders",
            vec![
                text_column("order_date", &["03/15/2021", "12/01/2022"]),
                // Month and day cannot be told apart: left alone.
                text_column("due", &["03/05/2021", "12/01/2022"]),
                text_column("customer", &["Ann", "Bob"]),
                // A file's column of dates, stored beside its ISO form.
                text_column("hired", &["11 Jun 2022", "02 Sep 2012"]),
                text_column("hired_date", &["2022-06-11", "2012-09-02"]),
            ],
        )
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
        assert_eq!(
            in_date_order(
                "SELECT COUNT(*) FROM orders WHERE order_date IN ('2021-03-15', '2022-12-01')",
                &dates()
            ),
            Some(format!(
                "SELECT COUNT(*) FROM orders WHERE {ISO} IN ('2021-03-15', '2022-12-01')"
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
    fn a_column_with_an_iso_companion_is_read_from_it() {
        assert_eq!(
            in_date_order(
                "SELECT COUNT(*) FROM orders AS T1 WHERE strftime('%Y', T1.hired) = '2020'",
                &dates()
            )
            .as_deref(),
            Some("SELECT COUNT(*) FROM orders AS T1 WHERE strftime('%Y', T1.hired_date) = '2020'")
        );
        assert_eq!(
            in_date_order(
                "SELECT customer FROM orders WHERE hired LIKE '2020%'",
                &dates()
            )
            .as_deref(),
            Some("SELECT customer FROM orders WHERE hired_date LIKE '2020%'")
        );
        assert_eq!(
            in_date_order(
                "SELECT customer FROM orders WHERE order_date LIKE '2021-03%'",
                &dates()
            ),
            Some(format!(
                "SELECT customer FROM orders WHERE {ISO} LIKE '2021-03%'"
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
            "SELECT customer FROM orders WHERE hired LIKE '%Jun%'",
            "SELECT hired FROM orders WHERE hired_date > '2020-01-01'",
            "SELECT strftime(order_date, '2021-01-01') FROM orders",
        ] {
            assert_eq!(in_date_order(sql, &dates()), None, "{sql}");
        }
    }

    /// A sales table keyed by dates of eight digits, `sale_date`
    /// 20230315 and 20240102, each sale worth 1.
    fn digit_dated_sales() -> (rusqlite::Connection, WrittenDates) {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE sales (sale_date INTEGER, amount REAL);
             INSERT INTO sales VALUES (20230315, 1), (20240102, 1);",
        )
        .unwrap();
        let dates = dates_of_table(
            "sales",
            vec![column(
                "sale_date",
                "INTEGER",
                vec![Value::Integer(20230315), Value::Integer(20240102)],
            )],
        );
        (conn, dates)
    }

    #[test]
    fn dates_of_eight_digits_read_as_dates_where_a_date_function_or_an_iso_date_meets_them() {
        let (conn, dates) = digit_dated_sales();
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        for sql in [
            "SELECT COUNT(*) FROM sales WHERE strftime('%Y', sale_date) = '2023'",
            "SELECT COUNT(*) FROM sales WHERE sale_date BETWEEN '2023-03-01' AND '2023-03-31'",
            "SELECT COUNT(*) FROM sales WHERE sale_date > '2024-01-01'",
            "SELECT COUNT(*) FROM sales WHERE sale_date LIKE '2023-03%'",
        ] {
            // Each counts nothing as written; read as dates, the one sale.
            assert_eq!(count(sql), 0, "{sql}");
            let read = in_date_order(sql, &dates).unwrap_or_else(|| panic!("{sql}"));
            assert!(read.contains("SUBSTR(sale_date, 5, 2)"), "{read}");
            assert_eq!(count(&read), 1, "{read}");
        }
    }

    #[test]
    fn the_difference_of_two_dates_of_eight_digits_counts_days() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE parcels (sent_on TEXT, delivered_on TEXT, weight REAL);
             INSERT INTO parcels VALUES ('20230329', '20230401', 2);",
        )
        .unwrap();
        let dates = dates_of_table(
            "parcels",
            vec![
                text_column("sent_on", &["20230329"]),
                text_column("delivered_on", &["20230401"]),
            ],
        );
        let days = |sql: &str| -> Option<f64> { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        // As written: a difference of the digits, or NULL where a date
        // function meets them.
        for (sql, as_written) in [
            ("SELECT delivered_on - sent_on FROM parcels", Some(72.0)),
            (
                "SELECT AVG(DATE(parcels.delivered_on) - DATE(parcels.sent_on)) FROM parcels",
                None,
            ),
            ("SELECT (delivered_on) - date(sent_on) FROM parcels", None),
        ] {
            assert_eq!(days(sql), as_written, "{sql}");
            let read = in_date_order(sql, &dates).unwrap_or_else(|| panic!("{sql}"));
            assert!(read.contains("julianday(SUBSTR("), "{read}");
            assert_eq!(days(&read), Some(3.0), "{read}");
        }
        for sql in [
            "SELECT delivered_on - weight FROM parcels",
            "SELECT date(delivered_on, '+1 day') - sent_on FROM parcels",
            "SELECT delivered_on + sent_on FROM parcels",
        ] {
            let read = in_date_order(sql, &dates).unwrap_or_default();
            assert!(!read.contains("julianday"), "{sql} -> {read}");
        }
    }

    #[test]
    fn dates_of_eight_digits_are_left_where_they_already_read_rightly() {
        let (_conn, dates) = digit_dated_sales();
        for sql in [
            "SELECT amount FROM sales ORDER BY sale_date DESC LIMIT 1",
            "SELECT COUNT(*) FROM sales WHERE sale_date BETWEEN 20230301 AND 20230331",
            "SELECT COUNT(*) FROM sales WHERE sale_date LIKE '202303%'",
            "SELECT COUNT(*) FROM sales WHERE sale_date / 10000 = 2023",
        ] {
            assert_eq!(in_date_order(sql, &dates), None, "{sql}");
        }
    }
}
