//! One worked example of the demonstration memory.

use crate::db::render::one_line;
use crate::db::Schema;
use serde::{Deserialize, Serialize};

/// The family of source an example was asked over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// A question over a database.
    TextToSql,
    /// A question over one table (a spreadsheet's rows).
    Table,
    /// A question over a knowledge graph's subgraph, as tables.
    Graph,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub task: Task,
    /// The benchmark it came from.
    pub dataset: String,
    pub db_id: String,
    pub question_id: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The tables the query uses, each with the columns it names:
    /// `singer(name, age); concert(concert_id)`.
    pub tables: String,
    pub query: String,
    /// The question's sentence embedding (unit length).
    pub embedding: Vec<f32>,
}

impl Record {
    /// The example as a prompt shows it.
    pub fn shown(&self) -> String {
        let hint = self
            .hint
            .as_deref()
            .filter(|h| !h.trim().is_empty())
            .map(|h| format!("Hint: {}\n", one_line(h)))
            .unwrap_or_default();
        format!(
            "Tables: {}\n{hint}Question: {}\nSQL: {}\n",
            self.tables,
            one_line(&self.question),
            one_line(&self.query)
        )
    }
}

/// The tables of `schema` that `query` names, each with the columns of it
/// that the query names in parentheses (schema order): the part of the schema an example
/// needs, far shorter than the whole.
pub fn used_tables(schema: &Schema, query: &str) -> String {
    let text = query.to_lowercase();
    schema
        .tables
        .iter()
        .filter(|t| mentions(&text, &t.name))
        .map(|t| {
            let columns: Vec<&str> = t
                .columns
                .iter()
                .filter(|c| mentions(&text, &c.name))
                .map(|c| c.name.as_str())
                .collect();
            if columns.is_empty() {
                t.name.clone()
            } else {
                format!("{}({})", t.name, columns.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether `name` occurs in lowercase `text` as a whole name (not inside a
/// longer identifier).
fn mentions(text: &str, name: &str) -> bool {
    let name = name.to_lowercase();
    if name.is_empty() {
        return false;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(&name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::IntrospectOptions;

    #[test]
    fn an_example_keeps_only_the_tables_and_columns_its_query_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE singer (singer_id INTEGER, name TEXT, age INTEGER, song_name TEXT);
             CREATE TABLE concert (concert_id INTEGER, year TEXT);
             CREATE TABLE singer_in_concert (singer_id INTEGER, concert_id INTEGER);",
        )
        .unwrap();
        drop(conn);
        let schema = Schema::load(&path, &IntrospectOptions::default()).unwrap();
        let query = "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 \
                     ON T1.singer_id = T2.singer_id WHERE T1.age > 30";
        assert_eq!(
            used_tables(&schema, query),
            "singer(singer_id, name, age); singer_in_concert(singer_id)"
        );
    }

    #[test]
    fn an_example_is_shown_on_three_lines_with_its_hint() {
        let record = Record {
            task: Task::TextToSql,
            dataset: "bird".into(),
            db_id: "db".into(),
            question_id: "1".into(),
            question: "How many\n old singers?".into(),
            hint: Some("old means age > 60".into()),
            tables: "singer(age)".into(),
            query: "SELECT COUNT(*)\nFROM singer WHERE age > 60".into(),
            embedding: Vec::new(),
        };
        assert_eq!(
            record.shown(),
            "Tables: singer(age)\nHint: old means age > 60\nQuestion: How many old singers?\n\
             SQL: SELECT COUNT(*) FROM singer WHERE age > 60\n"
        );
    }
}
