//! What a query that found nothing compares with no row holds: `position =
//! 'Student_Club'` where the column holds 'Member', 'President', ... The
//! feedback that asks the model to correct such a query names each of
//! these comparisons with the values its column holds most often, which
//! the schema's three examples may not show. (A stored spelling of the
//! same text is already put in place by `respell`.)

use super::SchemaNames;
use crate::db::{quote_identifier, quote_literal, Executor, Value};
use crate::search::sql_text::{pieces, table_aliases};
use crate::understand::text::truncate_chars;

/// Comparisons named at most, so the feedback stays short.
const MAX_NOTED: usize = 3;
/// Values listed per column.
const MAX_HELD: usize = 5;
/// Characters of one listed value at most.
const MAX_VALUE_CHARS: usize = 40;

/// A `column = 'text'` whose table holds no such text, and what the column
/// holds instead, most common first (as SQL literals).
#[derive(Debug, Clone, PartialEq)]
pub struct UnmatchedValue {
    pub table: String,
    pub column: String,
    pub written: String,
    pub held: Vec<String>,
}

impl SchemaNames {
    /// The comparisons of `sql` with a text its column's table does not
    /// hold (the first [`MAX_NOTED`]), each with its column's most common
    /// values; none where the column holds no value either.
    pub fn unmatched_values(&self, executor: &Executor, sql: &str) -> Vec<UnmatchedValue> {
        let pieces = pieces(sql);
        let bound = table_aliases(sql);
        self.unheld_values(executor, &pieces, &bound)
            .into_iter()
            .filter_map(|(comparison, table, written)| {
                let column = pieces[comparison.column].text();
                let held = most_common_values(executor, table, column)?;
                (!held.is_empty()).then(|| UnmatchedValue {
                    table: table.to_string(),
                    column: column.to_string(),
                    written,
                    held,
                })
            })
            .take(MAX_NOTED)
            .collect()
    }
}

/// Up to [`MAX_HELD`] values of `table.column`, the most common first, as
/// SQL literals; None when the probe fails.
fn most_common_values(executor: &Executor, table: &str, column: &str) -> Option<Vec<String>> {
    let (table, column) = (quote_identifier(table), quote_identifier(column));
    let probe = format!(
        "SELECT {column} FROM {table} WHERE {column} IS NOT NULL \
         GROUP BY {column} ORDER BY COUNT(*) DESC, {column} LIMIT {MAX_HELD}"
    );
    let found = executor.query(&probe).ok()?;
    Some(
        found
            .rows
            .iter()
            .filter_map(|row| match row.first()? {
                Value::Text(text) => Some(quote_literal(&truncate_chars(text, MAX_VALUE_CHARS))),
                Value::Integer(_) | Value::Real(_) => row.first().map(Value::to_string),
                Value::Null | Value::Blob(_) => None,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_no_row_holds_is_named_with_the_values_its_column_holds() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE member (name TEXT, position TEXT, zip INTEGER);
             INSERT INTO member VALUES ('Ann', 'Member', 1), ('Bob', 'Member', 2),
               ('Cy', 'President', 3), ('Di', 'Member', 4), ('Ed', 'Treasurer', 5);",
        );
        let sql =
            "SELECT T1.name FROM member AS T1 WHERE T1.position = 'Student_Club' AND name = 'Ann'";
        assert_eq!(
            names.unmatched_values(&executor, sql),
            vec![UnmatchedValue {
                table: "member".into(),
                column: "position".into(),
                written: "Student_Club".into(),
                held: vec![
                    "'Member'".into(),
                    "'President'".into(),
                    "'Treasurer'".into()
                ],
            }]
        );
        // Held values, and texts compared otherwise than by `=`, are not named.
        let held = "SELECT name FROM member WHERE position = 'Member' AND name LIKE 'Zed%'";
        assert!(names.unmatched_values(&executor, held).is_empty());
    }
}
