//! Joins on columns that never meet. A query that ran and found nothing
//! may equate two tables' columns that share no value at all: a film's
//! name with a person's (`ON T1.directed_by = T2.entity` over a graph's
//! relation tables), an id with a count. No right query joins so, whatever
//! its result, so such a condition keeps one side and takes the column of
//! the other side's table that does meet it; the query is kept when it then
//! finds a value.

use super::{kept_if_it_finds_a_value, SchemaNames};
use crate::db::{quote_identifier, Executor, QueryResult};
use crate::search::sql_text::{equalities, pieces, table_bound_to};
use std::sync::Arc;

impl SchemaNames {
    /// `sql` (which ran without a value) with each `a.x = b.y` whose
    /// columns never meet rewritten to columns that do, and its result;
    /// None when no condition changes or the new query finds no value.
    pub fn rejoin(&self, executor: &Executor, sql: &str) -> Option<(String, Arc<QueryResult>)> {
        let pieces = pieces(sql);
        let mut texts: Vec<String> = pieces.iter().map(|p| p.text().to_string()).collect();
        let bound = crate::search::sql_text::table_aliases(sql);
        let table_of = |name: &str| table_bound_to(&bound, name);
        let mut changed = false;
        for at in equalities(&pieces) {
            let word = |i: usize| pieces[at + i].text();
            let (Some(left), Some(right)) = (table_of(word(0)), table_of(word(4))) else {
                continue;
            };
            let (left_column, right_column) = (word(2), word(6));
            if meets(executor, left, left_column, right, right_column) != Some(false) {
                continue;
            }
            // The right side's other columns first, then the left side's.
            let replacement = self
                .columns_of(right)
                .filter(|c| !c.eq_ignore_ascii_case(right_column))
                .find(|c| meets(executor, left, left_column, right, c) == Some(true))
                .map(|c| (at + 6, c))
                .or_else(|| {
                    self.columns_of(left)
                        .filter(|c| !c.eq_ignore_ascii_case(left_column))
                        .find(|c| meets(executor, left, c, right, right_column) == Some(true))
                        .map(|c| (at + 2, c))
                });
            if let Some((index, column)) = replacement {
                texts[index] = column.to_string();
                changed = true;
            }
        }
        if !changed {
            return None;
        }
        kept_if_it_finds_a_value(executor, texts.concat())
    }
}

/// Whether some row of `left` and some row of `right` agree on the two
/// columns; None when the probe fails (a name that is no column).
fn meets(
    executor: &Executor,
    left: &str,
    left_column: &str,
    right: &str,
    right_column: &str,
) -> Option<bool> {
    let probe = format!(
        "SELECT 1 FROM {} AS a JOIN {} AS b ON a.{} = b.{} LIMIT 1",
        quote_identifier(left),
        quote_identifier(right),
        quote_identifier(left_column),
        quote_identifier(right_column),
    );
    executor.query(&probe).ok().map(|r| r.total_rows > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Films with directors and genres, as a graph's relation tables.
    fn films() -> (tempfile::TempDir, Executor, SchemaNames) {
        crate::search::repair::database_from(
            "CREATE TABLE directed_by (entity TEXT, directed_by TEXT);
             CREATE TABLE has_genre (entity TEXT, has_genre TEXT);
             INSERT INTO directed_by VALUES ('Heat', 'Michael Mann'), ('Ronin', 'John Frankenheimer');
             INSERT INTO has_genre VALUES ('Heat', 'Crime'), ('Ronin', 'Action');",
        )
    }

    #[test]
    fn a_join_of_a_person_to_a_film_joins_the_films() {
        let (_dir, executor, names) = films();
        let sql = "SELECT T2.has_genre FROM directed_by AS T1 JOIN has_genre AS T2 \
                   ON T1.directed_by = T2.entity WHERE T1.directed_by = 'Michael Mann'";
        let (fixed, result) = names.rejoin(&executor, sql).unwrap();
        assert_eq!(
            fixed,
            "SELECT T2.has_genre FROM directed_by AS T1 JOIN has_genre AS T2 \
             ON T1.entity = T2.entity WHERE T1.directed_by = 'Michael Mann'"
        );
        assert_eq!(result.total_rows, 1);
    }

    #[test]
    fn joins_whose_columns_meet_are_left_as_they_are() {
        let (_dir, executor, names) = films();
        // Empty because no film is called so, not because of the join.
        let sql = "SELECT T2.has_genre FROM directed_by AS T1 JOIN has_genre AS T2 \
                   ON T1.entity = T2.entity WHERE T1.directed_by = 'Nobody'";
        assert!(names.rejoin(&executor, sql).is_none());
    }
}
