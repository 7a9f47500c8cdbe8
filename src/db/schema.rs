//! What a database holds: tables, columns, keys, row counts, example values,
//! and BIRD's per-table description files when they sit beside the database.

use super::json_shape::{json_shape, JsonShape};
use super::open::{open_read_only, Deadline};
use super::value::Value;
use crate::error::{Error, Result};
use rusqlite::Connection;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// How much to learn about each column.
#[derive(Debug, Clone)]
pub struct IntrospectOptions {
    /// Distinct non-NULL example values per column.
    pub examples_per_column: usize,
    /// Example texts longer than this are cut (with an ellipsis).
    pub max_example_chars: usize,
    /// Time limit for each counting or sampling query.
    pub query_timeout: Duration,
}

impl Default for IntrospectOptions {
    fn default() -> Self {
        IntrospectOptions {
            examples_per_column: 3,
            max_example_chars: 40,
            query_timeout: Duration::from_secs(5),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Schema {
    pub tables: Vec<Table>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub name: String,
    /// A view: read like a table, its rows computed by its query.
    pub is_view: bool,
    /// None when counting timed out.
    pub row_count: Option<u64>,
    pub columns: Vec<Column>,
    pub foreign_keys: Vec<ForeignKey>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub name: String,
    /// Declared type as written in the DDL (may be empty in SQLite).
    pub declared_type: String,
    pub primary_key: bool,
    pub examples: Vec<Value>,
    /// Human description (BIRD `column_description`, or the expanded name).
    pub description: Option<String>,
    /// Notes on what the stored values mean (BIRD `value_description`).
    pub value_description: Option<String>,
    /// What the column's values are when they are JSON text.
    pub json: Option<JsonShape>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ForeignKey {
    pub column: String,
    pub foreign_table: String,
    /// None when the key points at the other table's primary key implicitly.
    pub foreign_column: Option<String>,
    /// Not declared: implied by the names and values of a database that
    /// declares no key (see `implied_keys`).
    pub implied: bool,
}

impl Schema {
    /// Introspects the database at `path` (read-only).
    pub fn load(path: &Path, options: &IntrospectOptions) -> Result<Schema> {
        let mut conn = open_read_only(path)?;
        let deadline = Deadline::install(&mut conn).map_err(|e| db_error(path, e))?;
        let names = table_names(&conn).map_err(|e| db_error(path, e))?;
        let descriptions = super::descriptions::load_for(path)?;
        let mut tables = Vec::with_capacity(names.len());
        for (name, is_view) in names {
            let mut table = match describe_table(&conn, &deadline, (&name, is_view), options) {
                Ok(table) => table,
                // A view over a table or column that is gone cannot be
                // read, so no query may use it; the rest of the database can.
                Err(_) if is_view => continue,
                Err(e) => return Err(db_error(path, e)),
            };
            if let Some(notes) = descriptions.get(&name.to_lowercase()) {
                for column in &mut table.columns {
                    if let Some(note) = notes.get(&column.name.to_lowercase()) {
                        column.description = note.description.clone();
                        column.value_description = note.value_description.clone();
                    }
                }
            }
            tables.push(table);
        }
        if tables.iter().all(|t| t.foreign_keys.is_empty()) {
            super::implied_keys::imply_keys(&conn, &deadline, &mut tables, options.query_timeout);
        }
        Ok(Schema { tables })
    }

    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }
}

impl Table {
    /// The names of the columns of its primary key, in the table's order
    /// (none declared: empty; a key of several columns: all of them).
    pub fn primary_key_columns(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|c| c.primary_key)
            .map(|c| c.name.as_str())
            .collect()
    }
}

fn db_error(path: &Path, error: rusqlite::Error) -> Error {
    Error::DatabaseOpen {
        path: path.to_path_buf(),
        detail: error.to_string(),
    }
}

/// The database's tables in the order they were made, then its views
/// (whether each is one), without SQLite's own tables and without the
/// shadow tables a virtual table keeps its data in (a full-text index's
/// `_data`, `_idx`, ...), which no question is about.
fn table_names(conn: &Connection) -> rusqlite::Result<Vec<(String, bool)>> {
    let mut statement = conn.prepare(
        "SELECT name, type = 'view' FROM sqlite_master WHERE type IN ('table', 'view') \
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         AND name NOT IN (SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow') \
         ORDER BY type = 'view', rowid",
    )?;
    let names = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    names.collect()
}

fn describe_table(
    conn: &Connection,
    deadline: &Deadline,
    (name, is_view): (&str, bool),
    options: &IntrospectOptions,
) -> rusqlite::Result<Table> {
    let quoted = quote_identifier(name);
    let mut statement = conn.prepare(&format!("PRAGMA table_info({quoted})"))?;
    let mut columns: Vec<Column> = statement
        .query_map([], |row| {
            Ok(Column {
                name: row.get(1)?,
                declared_type: row.get::<_, Option<String>>(2)?.unwrap_or_default(),
                primary_key: row.get::<_, i64>(5)? > 0,
                examples: Vec::new(),
                description: None,
                value_description: None,
                json: None,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut statement = conn.prepare(&format!("PRAGMA foreign_key_list({quoted})"))?;
    let foreign_keys = statement
        .query_map([], |row| {
            Ok(ForeignKey {
                column: row.get(3)?,
                foreign_table: row.get(2)?,
                foreign_column: row.get(4)?,
                implied: false,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;

    deadline.arm(options.query_timeout);
    let row_count = bounded(
        conn.query_row(&format!("SELECT count(*) FROM {quoted}"), [], |r| {
            r.get::<_, i64>(0)
        }),
    )?
    .map(|n| n as u64);
    for column in &mut columns {
        deadline.arm(options.query_timeout);
        column.examples =
            bounded(examples(conn, &quoted, &column.name, options))?.unwrap_or_default();
        deadline.arm(options.query_timeout);
        column.json = bounded(json_shape(conn, &quoted, &column.name, &column.examples))?.flatten();
    }
    deadline.disarm();
    Ok(Table {
        name: name.to_string(),
        is_view,
        row_count,
        columns,
        foreign_keys,
    })
}

/// Turns an interrupted (timed-out) query into `None` and keeps other errors.
fn bounded<T>(result: rusqlite::Result<T>) -> rusqlite::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn examples(
    conn: &Connection,
    quoted_table: &str,
    column: &str,
    options: &IntrospectOptions,
) -> rusqlite::Result<Vec<Value>> {
    let quoted_column = quote_identifier(column);
    let sql = format!(
        "SELECT DISTINCT {quoted_column} FROM {quoted_table} WHERE {quoted_column} IS NOT NULL LIMIT {}",
        options.examples_per_column
    );
    let mut statement = conn.prepare(&sql)?;
    let values = statement.query_map([], |row| Ok(Value::from_ref(row.get_ref(0)?)))?;
    values
        .map(|v| v.map(|v| shorten(v, options.max_example_chars)))
        .collect()
}

fn shorten(value: Value, max_chars: usize) -> Value {
    match value {
        Value::Text(s) if s.chars().count() > max_chars => {
            let cut: String = s.chars().take(max_chars).collect();
            Value::Text(format!("{cut}…"))
        }
        other => other,
    }
}

/// `text` as an SQLite string literal (a quote doubled).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Lower case without underscores: `Gauge_ID` and `gaugeid` are one name.
pub fn folded_name(name: &str) -> String {
    name.chars()
        .filter(|&c| c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// `text` as an SQL name that needs no quotes, its letters' case kept:
/// runs of other characters become one `_`; a name that would start with
/// a digit gets `prefix_` before it, and a keyword `_` after it.
pub fn plain_identifier(text: &str, prefix: &str) -> String {
    let mut name = String::new();
    let mut gap = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if gap && !name.is_empty() {
                name.push('_');
            }
            gap = false;
            name.push(c);
        } else {
            gap = true;
        }
    }
    if name.is_empty() {
        return prefix.to_string();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("{prefix}_{name}");
    }
    if is_reserved(&name) {
        name.push('_');
    }
    name
}

/// Quotes an identifier for SQLite when it is not a plain word.
pub fn quote_identifier(name: &str) -> String {
    if is_plain_identifier(name) {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Whether `name` needs no quotes: letters (any script's: SQLite reads
/// every character outside ASCII as part of a name), digits and `_`, not
/// starting with a digit, and no keyword.
pub fn is_plain_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !is_reserved(name)
}

/// Whether `name` must be quoted to name a table or column: the SQLite
/// keywords that cannot name a column unquoted (each tried as `SELECT
/// DISTINCT kw FROM kw WHERE kw IS NOT NULL`), and a few more that read
/// ambiguously in a query (`asc`, `desc`, `end`, `column`, `with`). Imported
/// tables rename such columns instead. (The name constraint keeps every
/// keyword, for another purpose: what a word being written may become.)
pub fn is_reserved(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "add",
        "all",
        "alter",
        "and",
        "as",
        "asc",
        "autoincrement",
        "between",
        "by",
        "case",
        "cast",
        "check",
        "collate",
        "column",
        "commit",
        "constraint",
        "create",
        "default",
        "deferrable",
        "delete",
        "desc",
        "distinct",
        "drop",
        "else",
        "end",
        "escape",
        "except",
        "exists",
        "foreign",
        "from",
        "group",
        "having",
        "in",
        "index",
        "insert",
        "intersect",
        "into",
        "is",
        "isnull",
        "join",
        "key",
        "like",
        "limit",
        "not",
        "nothing",
        "notnull",
        "null",
        "on",
        "or",
        "order",
        "primary",
        "raise",
        "references",
        "returning",
        "select",
        "set",
        "table",
        "then",
        "to",
        "transaction",
        "union",
        "unique",
        "update",
        "using",
        "values",
        "when",
        "where",
        "with",
    ];
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
}

/// Column notes keyed by lower-cased table name, then lower-cased column name.
pub(crate) type DescriptionMap = HashMap<String, HashMap<String, ColumnNote>>;

#[derive(Debug, Clone, Default)]
pub(crate) struct ColumnNote {
    pub description: Option<String>,
    pub value_description: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(quote_identifier("singer_id"), "singer_id");
        assert_eq!(quote_identifier("Home Town"), "\"Home Town\"");
        assert_eq!(quote_identifier("order"), "\"order\"");
        assert_eq!(quote_identifier("cast"), "\"cast\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_identifier("2nd"), "\"2nd\"");
        // SQLite reads every character outside ASCII as part of a name.
        assert_eq!(quote_identifier("Café"), "Café");
        assert_eq!(quote_identifier("销售"), "销售");
        assert_eq!(quote_identifier("Prix €"), "\"Prix €\"");
    }

    #[test]
    fn a_full_text_index_shows_its_table_but_not_its_shadow_tables() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
                 CREATE VIRTUAL TABLE notes_fts USING fts5(body, content='notes', content_rowid='id');",
            )
            .unwrap();
        let schema = Schema::load(&path, &IntrospectOptions::default()).unwrap();
        let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["notes", "notes_fts"]);
    }

    #[test]
    fn views_follow_the_tables_and_a_view_that_cannot_be_read_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 10;
                 CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL);
                 INSERT INTO orders VALUES (1, 5), (2, 25), (3, 40);
                 CREATE TABLE notes (body TEXT);
                 CREATE VIEW note_bodies AS SELECT body FROM notes;
                 DROP TABLE notes;",
            )
            .unwrap();
        let schema = Schema::load(&path, &IntrospectOptions::default()).unwrap();
        let shown: Vec<(&str, bool)> = schema
            .tables
            .iter()
            .map(|t| (t.name.as_str(), t.is_view))
            .collect();
        assert_eq!(shown, [("orders", false), ("big_orders", true)]);
        let view = &schema.tables[1];
        assert_eq!(view.row_count, Some(2));
        let columns: Vec<&str> = view.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(columns, ["id", "total"]);
    }
}
