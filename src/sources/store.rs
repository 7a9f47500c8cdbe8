//! Writing read tables into a new SQLite file: SQL-safe names, a column per
//! header with its inferred type, a numeric or ISO-date companion column
//! where the text holds figures or dates, and the row's place in the file.

use super::cells::{column_kind, parse_date, parse_number, ColumnKind};
use super::links::Reference;
use super::names::NameSet;
use super::read::RawTable;
use super::sqlite_file::{self, Overwrite};
use crate::db::schema::plain_identifier;
use crate::error::Result;
use rusqlite::types::Value;
use std::path::Path;

/// The first column of every table: the row's place in the file (from 1),
/// which questions such as "the team after X" need.
const ROW_COLUMN: &str = "row_index";

/// One column as stored: its name, SQL type and how its cells are made.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredColumn {
    pub name: String,
    pub sql_type: &'static str,
    /// The header it came from (None for the row index).
    pub source: Option<usize>,
    fill: Fill,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fill {
    RowIndex,
    Text,
    Integer,
    Real,
    /// The number the text states.
    Number,
    /// The ISO date the text states.
    Date,
}

/// A table ready to write: its name, columns and rows.
#[derive(Debug, Clone)]
pub struct StoredTable {
    pub name: String,
    pub columns: Vec<StoredColumn>,
    /// Its columns that hold another table's key, declared as foreign keys.
    pub references: Vec<Reference>,
    raw: RawTable,
}

impl StoredTable {
    pub fn new(name: String, raw: RawTable) -> Self {
        let mut names = NameSet::default();
        names.take(ROW_COLUMN.to_string());
        let mut columns = vec![StoredColumn {
            name: ROW_COLUMN.to_string(),
            sql_type: "INTEGER",
            source: None,
            fill: Fill::RowIndex,
        }];
        for (i, header) in raw.header.iter().enumerate() {
            let base = identifier(header, "column");
            let cells = raw.rows.iter().filter_map(|row| row[i].as_deref());
            let kind = column_kind(cells);
            let (sql_type, fill) = match kind {
                ColumnKind::Integer => ("INTEGER", Fill::Integer),
                ColumnKind::Real => ("REAL", Fill::Real),
                _ => ("TEXT", Fill::Text),
            };
            columns.push(StoredColumn {
                name: names.take(base.clone()),
                sql_type,
                source: Some(i),
                fill,
            });
            let companion = match kind {
                ColumnKind::TextWithNumber { integer } => Some((
                    "number",
                    if integer { "INTEGER" } else { "REAL" },
                    Fill::Number,
                )),
                ColumnKind::TextWithDate => Some(("date", "TEXT", Fill::Date)),
                _ => None,
            };
            if let Some((suffix, sql_type, fill)) = companion {
                columns.push(StoredColumn {
                    name: names.take(format!("{base}_{suffix}")),
                    sql_type,
                    source: Some(i),
                    fill,
                });
            }
        }
        StoredTable {
            name,
            columns,
            references: Vec::new(),
            raw,
        }
    }

    /// The cells of a column as written in the file, None for empty ones;
    /// None for a column not written as such (the row index, a number or
    /// date read from text, a column of fractions).
    pub(super) fn file_cells(&self, column: usize) -> Option<impl Iterator<Item = Option<&str>>> {
        let column = &self.columns[column];
        let source = column.source?;
        matches!(column.fill, Fill::Text | Fill::Integer).then(|| {
            self.raw
                .rows
                .iter()
                .map(move |row| row[source].as_deref().map(str::trim))
        })
    }

    /// Whether a column holds whole numbers only.
    pub(super) fn holds_integers(&self, column: usize) -> bool {
        self.columns[column].fill == Fill::Integer
    }

    fn create_statement(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let key = if c.fill == Fill::RowIndex {
                    " PRIMARY KEY"
                } else {
                    ""
                };
                format!("{} {}{key}", c.name, c.sql_type)
            })
            .collect();
        let references = self.references.iter().map(|r| {
            format!(
                "FOREIGN KEY ({}) REFERENCES {}({})",
                r.column, r.table, r.key
            )
        });
        let parts: Vec<String> = columns.into_iter().chain(references).collect();
        format!("CREATE TABLE {} ({})", self.name, parts.join(", "))
    }

    fn row_values(&self, index: usize) -> Vec<Value> {
        let row = &self.raw.rows[index];
        self.columns
            .iter()
            .map(|column| {
                let Some(text) = column.source.and_then(|i| row[i].as_deref()) else {
                    return match column.fill {
                        Fill::RowIndex => Value::Integer(index as i64 + 1),
                        _ => Value::Null,
                    };
                };
                let number = || parse_number(text).map(|n| (n.value, n.integer));
                match column.fill {
                    Fill::RowIndex => Value::Integer(index as i64 + 1),
                    Fill::Text => Value::Text(text.to_string()),
                    Fill::Integer => text.parse().map_or(Value::Null, Value::Integer),
                    Fill::Real => number().map_or(Value::Null, |(v, _)| Value::Real(v)),
                    Fill::Number => match number() {
                        Some((v, true)) if column.sql_type == "INTEGER" => Value::Integer(v as i64),
                        Some((v, _)) => Value::Real(v),
                        None => Value::Null,
                    },
                    Fill::Date => parse_date(text).map_or(Value::Null, Value::Text),
                }
            })
            .collect()
    }
}

/// `text` as a lower-case SQL name that needs no quotes
/// ([`plain_identifier`]).
pub fn identifier(text: &str, prefix: &str) -> String {
    plain_identifier(text, prefix).to_lowercase()
}

/// Writes `tables` to a new SQLite file at `path`.
pub(super) fn write_new(tables: &[StoredTable], path: &Path, overwrite: Overwrite) -> Result<()> {
    sqlite_file::write_new(path, overwrite, |conn| {
        for table in tables {
            conn.execute(&table.create_statement(), [])?;
            let placeholders = vec!["?"; table.columns.len()].join(", ");
            let mut insert = conn.prepare(&format!(
                "INSERT INTO {} VALUES ({placeholders})",
                table.name
            ))?;
            for index in 0..table.raw.rows.len() {
                insert.execute(rusqlite::params_from_iter(table.row_values(index)))?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(header: &[&str], rows: &[&[&str]]) -> RawTable {
        RawTable {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: rows
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|c| (!c.is_empty()).then(|| c.to_string()))
                        .collect()
                })
                .collect(),
        }
    }

    #[test]
    fn names_become_bare_sql_identifiers() {
        assert_eq!(identifier("Years won", "column"), "years_won");
        assert_eq!(identifier(" No. (km) ", "column"), "no_km");
        assert_eq!(identifier("2011", "column"), "column_2011");
        assert_eq!(identifier("Order", "column"), "order_");
        assert_eq!(identifier("%", "column"), "column");
        assert_eq!(identifier("Élan", "column"), "élan");
    }

    #[test]
    fn figures_and_dates_get_companion_columns_and_rows_keep_their_place() {
        let table = StoredTable::new(
            "airports".into(),
            raw(
                &["City", "Passengers", "Rank", "Opened", "row index"],
                &[
                    &["Los Angeles", "14,749", "1", "May 5, 1990", "x"],
                    &["Houston", "5,465", "", "June 1, 2001", "y"],
                ],
            ),
        );
        let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "row_index",
                "city",
                "passengers",
                "passengers_number",
                "rank",
                "opened",
                "opened_date",
                "row_index_2"
            ]
        );
        assert_eq!(
            table.row_values(1),
            [
                Value::Integer(2),
                Value::Text("Houston".into()),
                Value::Text("5,465".into()),
                Value::Integer(5465),
                Value::Null,
                Value::Text("June 1, 2001".into()),
                Value::Text("2001-06-01".into()),
                Value::Text("y".into()),
            ]
        );
    }

    #[test]
    fn a_written_file_holds_the_typed_tables() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.sqlite");
        let table = StoredTable::new("t".into(), raw(&["a", "b"], &[&["1", "2.5"], &["3", ""]]));
        write_new(&[table], &path, Overwrite::Refuse).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let (sum, total): (i64, f64) = conn
            .query_row("SELECT SUM(a), TOTAL(b) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((sum, total), (4, 2.5));
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "no scratch file is left behind");
    }

    #[test]
    fn a_reference_is_written_as_a_foreign_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.sqlite");
        let units = StoredTable::new("units".into(), raw(&["code"], &[&["A"], &["B"]]));
        let mut staff = StoredTable::new("staff".into(), raw(&["unit"], &[&["A"], &["B"]]));
        staff.references = vec![Reference {
            column: "unit".into(),
            table: "units".into(),
            key: "code".into(),
        }];
        write_new(&[units, staff], &path, Overwrite::Refuse).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let link: (String, String, String) = conn
            .query_row(
                "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list('staff')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(link, ("units".into(), "unit".into(), "code".into()));
    }
}
