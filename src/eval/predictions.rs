//! Predicted SQL per question, read from JSONL:
//! `{"question_id": 3, "sql": "SELECT ..."}` per line.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::Path;

/// What to score.
pub enum Predictions {
    /// The gold SQL itself: a self-check of the evaluator and the data.
    Gold,
    /// SQL by question id; a later line for the same id wins.
    Sql(HashMap<String, String>),
}

impl Predictions {
    pub fn read(path: &Path) -> Result<Predictions> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let mut sql_by_id = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |detail: String| Error::Predictions {
                path: path.to_path_buf(),
                line: index + 1,
                detail,
            };
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(format!("not JSON ({e})")))?;
            let id = match value.get("question_id") {
                Some(serde_json::Value::Number(n)) => n.to_string(),
                Some(serde_json::Value::String(s)) => s.clone(),
                _ => return Err(bad("no \"question_id\" number or string".into())),
            };
            let Some(sql) = value.get("sql").and_then(|s| s.as_str()) else {
                return Err(bad("no \"sql\" string".into()));
            };
            sql_by_id.insert(id, sql.to_string());
        }
        Ok(Predictions::Sql(sql_by_id))
    }

    /// The SQL to score for a question, or None when it has no prediction
    /// (or, scoring the gold, no gold query).
    pub fn sql_for<'a>(&'a self, question_id: &str, gold_sql: Option<&'a str>) -> Option<&'a str> {
        match self {
            Predictions::Gold => gold_sql,
            Predictions::Sql(map) => map.get(question_id).map(String::as_str),
        }
    }
}
