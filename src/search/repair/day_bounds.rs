//! A column of dates with times of day (`2024-03-31 14:05:00`) compared
//! with a bare day: `starts_at BETWEEN '2024-03-01' AND '2024-03-31'`,
//! `starts_at <= '2024-03-31'`, `starts_at = '2024-03-31'`. SQLite
//! compares the texts, and '2024-03-31 14:05:00' sorts after
//! '2024-03-31': the last day's rows fall outside the range, and no row
//! equals the day. The model meant the day, so the column is read as its
//! day (`date(starts_at)`) wherever it is compared with one; the
//! comparisons that already held (`<` and `>=` a day) answer the same.

use super::rewrite::{
    column_named, columns_where, compared_side, is_iso_date, parse_expr, reread_query, Rereading,
};
use crate::db::Schema;
use crate::search::dates::holds_date_times;
use sqlparser::ast::Expr;
use std::collections::HashSet;

/// The database's columns of dates with times of day, by lowercased name
/// (`columns_where`).
#[derive(Debug, Clone, Default)]
pub(super) struct DateTimes(HashSet<String>);

impl DateTimes {
    pub(super) fn of(schema: &Schema) -> Self {
        DateTimes(columns_where(schema, holds_date_times))
    }
}

/// `sql` with every column of dates with times that is compared with a
/// bare day read as its day; None when it compares none so.
pub(super) fn read_as_days(sql: &str, columns: &DateTimes) -> Option<String> {
    if columns.0.is_empty() {
        return None;
    }
    reread_query(sql, columns)
}

impl Rereading for DateTimes {
    fn reread(&self, expr: &Expr) -> Option<Expr> {
        let name = column_named(expr)?;
        if !self.0.contains(&name.value.to_lowercase()) {
            return None;
        }
        parse_expr(&format!("date({expr})"))
    }

    /// A time sorts in the order of its text: an ordering stays.
    fn reread_key(&self, _expr: &Expr) -> Option<Expr> {
        None
    }

    fn ordered_operands<'e>(&self, expr: &'e mut Expr) -> Vec<&'e mut Expr> {
        compared_side(expr, is_day)
            .map(|(side, _)| vec![side])
            .unwrap_or_default()
    }
}

/// Whether `expr` is a text literal that is a bare day, `'YYYY-MM-DD'`.
fn is_day(expr: &Expr) -> bool {
    let text = expr.to_string();
    is_iso_date(expr) && text.len() == 12 && text.ends_with('\'')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::repair::database_from;

    const APPOINTMENTS: &str =
        "CREATE TABLE appointments (id INTEGER, starts_at TEXT, booked_on TEXT);
         INSERT INTO appointments VALUES (1, '2024-03-01 09:00:00', '2024-02-20'),
           (2, '2024-03-31 14:05:00', '2024-03-30'), (3, '2024-04-01 08:30:00', '2024-03-31');";

    fn read(sql: &str) -> Option<String> {
        let (_dir, _executor, names) = database_from(APPOINTMENTS);
        read_as_days(sql, &names.date_times)
    }

    #[test]
    fn a_time_compared_with_a_day_is_read_as_its_day() {
        assert_eq!(
            read(
                "SELECT COUNT(*) FROM appointments AS a \
                 WHERE a.starts_at BETWEEN '2024-03-01' AND '2024-03-31'"
            )
            .as_deref(),
            Some(
                "SELECT COUNT(*) FROM appointments AS a \
                 WHERE date(a.starts_at) BETWEEN '2024-03-01' AND '2024-03-31'"
            )
        );
        assert_eq!(
            read("SELECT id FROM appointments WHERE '2024-03-31' = starts_at OR starts_at IN ('2024-04-01')")
                .as_deref(),
            Some(
                "SELECT id FROM appointments WHERE '2024-03-31' = date(starts_at) \
                 OR date(starts_at) IN ('2024-04-01')"
            )
        );
    }

    #[test]
    fn days_times_compared_with_times_and_orderings_are_left() {
        for sql in [
            "SELECT id FROM appointments WHERE booked_on <= '2024-03-31'",
            "SELECT id FROM appointments WHERE starts_at <= '2024-03-31 23:59:59'",
            "SELECT id FROM appointments WHERE starts_at LIKE '2024-03%' ORDER BY starts_at",
        ] {
            assert_eq!(read(sql), None, "{sql}");
        }
    }

    #[test]
    fn the_last_days_rows_are_counted() {
        let (_dir, executor, names) = database_from(APPOINTMENTS);
        let count = |sql: &str| executor.query(sql).unwrap().rows[0][0].to_string();
        let written =
            "SELECT COUNT(*) FROM appointments WHERE starts_at BETWEEN '2024-03-01' AND '2024-03-31'";
        assert_eq!(count(written), "1");
        assert_eq!(
            count(&read_as_days(written, &names.date_times).unwrap()),
            "2"
        );
    }
}
