//! When a query names a table or column that does not exist, or a column
//! name that is ambiguous, the revision step is told which real names come
//! closest (from the full schema, so a table the compressed view dropped can
//! come back) instead of guessing again from the error alone. A misspelt
//! name with one clearly closest real name is also fixed in place
//! (`SchemaNames::fix`), since small models often repeat the misspelling.

use super::reasoner::truncate_chars;
use super::sql_text::{replace_identifier, replace_qualified, table_aliases};
use crate::db::{Executor, QueryResult, Schema};
use crate::understand::text::similarity;
use std::sync::Arc;

/// Least trigram similarity for a name to be suggested.
const MIN_SIMILARITY: f64 = 0.3;
const MAX_SUGGESTIONS: usize = 4;
/// Longest note, in characters, so one error cannot crowd the prompt.
const MAX_CHARS: usize = 320;
/// Least edit-distance similarity (1 - distance / longer length) for a name
/// to replace a missing one without asking: one typo in a 4-letter name.
const MIN_FIX_SIMILARITY: f64 = 0.7;
/// Names fixed in one query at most (each fix needs one more execution).
const MAX_FIXES: usize = 3;

/// The table and column names of a database.
#[derive(Debug, Clone, Default)]
pub struct SchemaNames {
    tables: Vec<(String, Vec<String>)>,
}

impl SchemaNames {
    pub fn of(schema: &Schema) -> Self {
        SchemaNames {
            tables: schema
                .tables
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        t.columns.iter().map(|c| c.name.clone()).collect(),
                    )
                })
                .collect(),
        }
    }

    /// A note on SQLite's error `error` for the query `sql`, or None when the
    /// error is not about names.
    pub fn suggest(&self, error: &str, sql: &str) -> Option<String> {
        let note = if let Some(name) = after(error, "no such column:") {
            self.missing_column(name, sql)
        } else if let Some(name) = after(error, "no such table:") {
            self.missing_table(name)
        } else if let Some(name) = after(error, "ambiguous column name:") {
            self.ambiguous_column(name)
        } else {
            return None;
        };
        Some(truncate_chars(&note, MAX_CHARS))
    }

    fn missing_column(&self, name: &str, sql: &str) -> String {
        let column = name.rsplit('.').next().unwrap_or(name);
        let all = self
            .tables
            .iter()
            .flat_map(|(t, cols)| cols.iter().map(move |c| (c.as_str(), format!("{t}.{c}"))));
        let close = closest(column, all);
        if !close.is_empty() {
            return format!("no column `{column}`; the closest are {}", close.join(", "));
        }
        // Nothing is spelled alike: show what the query's own tables hold.
        let used: Vec<String> = self
            .tables_used(sql)
            .into_iter()
            .map(|(t, cols)| format!("{t}({})", cols.join(", ")))
            .collect();
        if used.is_empty() {
            format!("no table has a column `{column}`")
        } else {
            format!(
                "no table has a column `{column}`; the query's tables have {}",
                used.join("; ")
            )
        }
    }

    fn missing_table(&self, name: &str) -> String {
        let close = closest(
            name,
            self.tables.iter().map(|(t, _)| (t.as_str(), t.clone())),
        );
        let listed = if close.is_empty() {
            self.tables.iter().map(|(t, _)| t.clone()).collect()
        } else {
            close
        };
        format!(
            "no table `{name}`; the tables include {}",
            listed.join(", ")
        )
    }

    fn ambiguous_column(&self, name: &str) -> String {
        let owners: Vec<&str> = self
            .tables
            .iter()
            .filter(|(_, cols)| cols.iter().any(|c| c.eq_ignore_ascii_case(name)))
            .map(|(t, _)| t.as_str())
            .collect();
        format!(
            "`{name}` is a column of {}; qualify it with its table or alias",
            owners.join(" and ")
        )
    }

    /// The query with the missing table or column of `error` replaced by the
    /// one real name closest to it, when one is close and clearly closest.
    /// A column of the query's own tables is preferred; failing that, a query
    /// that reads one table is pointed at the one other table that has the
    /// column. None when no such fix exists.
    pub fn fix(&self, error: &str, sql: &str) -> Option<String> {
        if let Some(name) = after(error, "no such column:") {
            let (qualifier, column) = match name.rsplit_once('.') {
                Some((qualifier, column)) => (Some(qualifier), column),
                None => (None, name),
            };
            if let Some(fixed) = qualifier.and_then(|q| self.requalify(sql, q, column)) {
                return Some(fixed);
            }
            let used = self.tables_used(sql);
            let own = used
                .iter()
                .flat_map(|(_, cols)| cols.iter().map(|c| (c.as_str(), ())));
            if let Some((real, ())) = clearly_closest(column, own) {
                // Present under this spelling: the error lies elsewhere.
                return (!real.eq_ignore_ascii_case(column))
                    .then(|| replace_identifier(sql, column, real))
                    .flatten();
            }
            let [(only, _)] = used.as_slice() else {
                return None;
            };
            let elsewhere = self
                .tables
                .iter()
                .filter(|(t, _)| t != only)
                .flat_map(|(t, cols)| cols.iter().map(move |c| (c.as_str(), t.as_str())));
            let (real, table) = clearly_closest(column, elsewhere)?;
            let moved = replace_identifier(sql, only, table)?;
            if real.eq_ignore_ascii_case(column) {
                Some(moved)
            } else {
                replace_identifier(&moved, column, real)
            }
        } else if let Some(name) = after(error, "no such table:") {
            let tables = self.tables.iter().map(|(t, _)| (t.as_str(), ()));
            let (real, ()) = clearly_closest(name, tables)?;
            replace_identifier(sql, name, real)
        } else {
            None
        }
    }

    /// `sql`, which failed with `error`, with names fixed one after another
    /// (at most [`MAX_FIXES`]) until it runs, and its result; None when a
    /// name cannot be fixed or the query still fails.
    pub fn fix_until_it_runs(
        &self,
        executor: &Executor,
        sql: &str,
        error: &str,
    ) -> Option<(String, Arc<QueryResult>)> {
        let (mut sql, mut error) = (sql.to_string(), error.to_string());
        for _ in 0..MAX_FIXES {
            let fixed = self.fix(&error, &sql)?;
            match executor.query(&fixed) {
                Ok(result) => return Some((fixed, result)),
                Err(e) => (sql, error) = (fixed, e.to_string()),
            }
        }
        None
    }

    /// `qualifier.column` rewritten as `alias.real` when exactly one of the
    /// query's tables has a column clearly closest to `column` and the query
    /// binds that table to one name: a column taken from the wrong side of
    /// a join.
    fn requalify(&self, sql: &str, qualifier: &str, column: &str) -> Option<String> {
        let bound = table_aliases(sql);
        let bound_tables = self
            .tables
            .iter()
            .filter(|(t, _)| bound.iter().any(|(_, b)| b.eq_ignore_ascii_case(t)));
        let columns =
            bound_tables.flat_map(|(t, cols)| cols.iter().map(move |c| (c.as_str(), t.as_str())));
        let (real, table) = clearly_closest(column, columns)?;
        // The table's alias if it has one, else its name; a table bound
        // twice (a self-join) leaves the choice open.
        let mut names: Vec<&str> = bound
            .iter()
            .filter(|(_, b)| b.eq_ignore_ascii_case(table))
            .map(|(name, _)| name.as_str())
            .filter(|name| !name.eq_ignore_ascii_case(table))
            .collect();
        names.dedup();
        let name = match names.as_slice() {
            [] => table,
            [alias] => alias,
            _ => return None,
        };
        if name.eq_ignore_ascii_case(qualifier) && real.eq_ignore_ascii_case(column) {
            return None;
        }
        replace_qualified(sql, (qualifier, column), (name, real))
    }

    /// The tables `sql` names.
    fn tables_used(&self, sql: &str) -> Vec<&(String, Vec<String>)> {
        let identifiers: Vec<&str> = sql
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .collect();
        self.tables
            .iter()
            .filter(|(t, _)| identifiers.iter().any(|i| i.eq_ignore_ascii_case(t)))
            .collect()
    }
}

/// The name most like `wanted` (with what it came with), if similar enough
/// and strictly ahead of every other one; a name met twice (a column of two
/// tables) ties with itself, so it is not chosen.
fn clearly_closest<'a, T: Copy>(
    wanted: &str,
    names: impl Iterator<Item = (&'a str, T)>,
) -> Option<(&'a str, T)> {
    let mut scored: Vec<(f64, &str, T)> = names
        .map(|(name, with)| (spelling_similarity(name, wanted), name, with))
        .filter(|(s, _, _)| *s >= MIN_FIX_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let &(best_score, best, with) = scored.first()?;
    let tied = scored.iter().skip(1).any(|&(s, _, _)| s >= best_score);
    (!tied).then_some((best, with))
}

/// Case-blind Damerau-Levenshtein similarity: trigrams undervalue one typo
/// in a short name ("Agee" and "Age" share 2 of 5).
fn spelling_similarity(a: &str, b: &str) -> f64 {
    strsim::normalized_damerau_levenshtein(&a.to_lowercase(), &b.to_lowercase())
}

/// The text after `marker` in `error`, trimmed of quotes and spaces.
fn after<'a>(error: &'a str, marker: &str) -> Option<&'a str> {
    let start = error.find(marker)? + marker.len();
    let rest = error[start..].trim();
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    Some(rest[..end].trim_matches(|c| c == '"' || c == '`' || c == '\''))
}

/// Up to [`MAX_SUGGESTIONS`] labels whose name is most like `wanted`.
fn closest<'a>(wanted: &str, names: impl Iterator<Item = (&'a str, String)>) -> Vec<String> {
    let mut scored: Vec<(f64, String)> = names
        .map(|(name, label)| (similarity(name, wanted), label))
        .filter(|(s, _)| *s >= MIN_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, label)| label)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> SchemaNames {
        SchemaNames {
            tables: vec![
                (
                    "aircraft".into(),
                    vec![
                        "Aircraft_ID".into(),
                        "Max_Gross_Weight".into(),
                        "Total_Disk_Area".into(),
                    ],
                ),
                (
                    "airport_aircraft".into(),
                    vec!["ID".into(), "Airport_ID".into(), "Aircraft_ID".into()],
                ),
            ],
        }
    }

    #[test]
    fn a_misspelt_column_gets_the_closest_real_ones() {
        let note = names()
            .suggest("SQL error: no such column: T1.Max_Disk_Area", "SELECT ...")
            .unwrap();
        assert!(
            note.starts_with("no column `Max_Disk_Area`; the closest are aircraft.Total_Disk_Area"),
            "{note}"
        );
    }

    #[test]
    fn an_invented_column_gets_the_columns_of_the_querys_tables() {
        let sql = "SELECT T2.Lift FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID";
        let note = names().suggest("no such column: T2.Lift", sql).unwrap();
        assert_eq!(
            note,
            "no table has a column `Lift`; the query's tables have aircraft(Aircraft_ID, Max_Gross_Weight, Total_Disk_Area); airport_aircraft(ID, Airport_ID, Aircraft_ID)"
        );
    }

    #[test]
    fn missing_tables_and_ambiguous_columns_are_explained() {
        let n = names();
        let note = n.suggest("no such table: aircrafts", "").unwrap();
        assert!(note.contains("aircraft"), "{note}");
        let note = n.suggest("ambiguous column name: Aircraft_ID", "").unwrap();
        assert_eq!(
            note,
            "`Aircraft_ID` is a column of aircraft and airport_aircraft; qualify it with its table or alias"
        );
        assert_eq!(n.suggest("near \"FROM\": syntax error", ""), None);
    }

    #[test]
    fn a_clearly_closest_name_is_fixed_in_place_outside_literals() {
        let n = names();
        let sql = "SELECT Max_Gros_Weight FROM aircraft WHERE Max_Gros_Weight > 1 AND Aircraft_ID = 'Max_Gros_Weight'";
        assert_eq!(
            n.fix("no such column: Max_Gros_Weight", sql).as_deref(),
            Some("SELECT Max_Gross_Weight FROM aircraft WHERE Max_Gross_Weight > 1 AND Aircraft_ID = 'Max_Gros_Weight'")
        );
        assert_eq!(
            n.fix("no such table: aircrafts", "SELECT * FROM aircrafts AS a")
                .as_deref(),
            Some("SELECT * FROM aircraft AS a")
        );
        // A qualified name keeps its qualifier; quoted identifiers keep their quotes.
        assert_eq!(
            n.fix(
                "no such column: T1.Total_Disc_Area",
                "SELECT T1.\"Total_Disc_Area\" FROM aircraft AS T1"
            )
            .as_deref(),
            Some("SELECT T1.\"Total_Disk_Area\" FROM aircraft AS T1")
        );
    }

    #[test]
    fn names_that_are_far_or_equally_close_to_two_are_not_fixed() {
        let n = names();
        assert_eq!(
            n.fix("no such column: Lift", "SELECT Lift FROM aircraft"),
            None
        );
        // Two names equally close: no guess.
        let two = SchemaNames {
            tables: vec![("t".into(), vec!["Speed_Max".into(), "Speed_Min".into()])],
        };
        assert_eq!(
            two.fix("no such column: Speed_M", "SELECT Speed_M FROM t"),
            None
        );
        assert_eq!(n.fix("near \"FROM\": syntax error", "SELECT FROM"), None);
    }

    #[test]
    fn a_one_table_query_is_pointed_at_the_table_that_has_the_column() {
        let n = names();
        assert_eq!(
            n.fix(
                "no such column: Max_Gross_Weight",
                "SELECT AVG(Max_Gross_Weight) FROM airport_aircraft WHERE airport_aircraft.ID = 1"
            )
            .as_deref(),
            Some("SELECT AVG(Max_Gross_Weight) FROM aircraft WHERE aircraft.ID = 1")
        );
    }

    #[test]
    fn a_column_taken_from_the_wrong_side_of_a_join_is_requalified() {
        let n = names();
        let joined = "SELECT T2.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID";
        assert_eq!(
            n.fix("no such column: T2.Total_Disk_Area", joined).as_deref(),
            Some("SELECT T1.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID")
        );
        // A column both sides have is not moved.
        let both = "SELECT T2.Aircraft_IDs FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON 1";
        assert_eq!(n.fix("no such column: T2.Aircraft_IDs", both), None);
    }
}
