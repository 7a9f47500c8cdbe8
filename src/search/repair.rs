//! When a query names a table or column that does not exist, or a column
//! name that is ambiguous, the revision step is told which real names come
//! closest (from the full schema, so a table the compressed view dropped can
//! come back) instead of guessing again from the error alone.

use super::reasoner::truncate_chars;
use crate::db::Schema;
use crate::understand::text::similarity;

/// Least trigram similarity for a name to be suggested.
const MIN_SIMILARITY: f64 = 0.3;
const MAX_SUGGESTIONS: usize = 4;
/// Longest note, in characters, so one error cannot crowd the prompt.
const MAX_CHARS: usize = 320;

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
        let identifiers: Vec<&str> = sql
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .collect();
        let used: Vec<String> = self
            .tables
            .iter()
            .filter(|(t, _)| identifiers.iter().any(|i| i.eq_ignore_ascii_case(t)))
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
}
