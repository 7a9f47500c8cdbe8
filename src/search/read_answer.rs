//! Reading instead of querying: every table's rows go into the prompt as
//! text (up to a character budget) and the model answers directly, with no
//! SQL. This is the plain baseline the query-writing methods are measured
//! against on tables and graphs. The answer is written as a query of
//! constants (`SELECT 'Greek' AS answer UNION ALL SELECT 1984`), so that it is run,
//! traced and scored exactly as the other methods' queries are.

use super::{Answer, Engine};
use crate::db::{quote_identifier, QueryOutcome, QueryResult};
use crate::error::Result;
use crate::llm::{ChatMessage, Prompt, Sampling};
use crate::prompts::{hint_paragraph, READ_ANSWER_SYSTEM, READ_ANSWER_USER};
use crate::trace::{CallRecord, CandidateRecord, Execution, Trace};

/// Characters of table text the prompt holds at most: about 2,500 tokens,
/// whole for most WikiTableQuestions and TableBench tables.
pub const DEFAULT_READ_CHARS: usize = 8_000;
/// Values an answer holds at most; a reply that lists more is rambling.
const MAX_VALUES: usize = 20;
/// The confidence of an answer read from the data after the chosen query
/// found nothing: it holds a value, but no query agreed with it.
const READ_CONFIDENCE: f64 = 0.5;

impl Engine {
    /// One call at temperature 0 that reads the data and answers.
    pub(super) fn answer_by_reading(
        &self,
        question: &str,
        hint: Option<&str>,
        mut trace: Trace,
    ) -> Result<Answer> {
        let Some((sql, outcome)) = self.read_data(question, hint, "read_answer", &mut trace)?
        else {
            return Ok(Answer {
                sql: None,
                result: None,
                error: Some("the reply holds no answer".to_string()),
                confidence: 0.0,
                trace,
            });
        };
        let (result, error) = match outcome {
            Ok(result) => (Some(result), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(Answer {
            confidence: if result.is_some() { 1.0 } else { 0.0 },
            sql: Some(sql),
            result,
            error,
            trace,
        })
    }

    /// The answer of a table or graph question whose chosen query found no
    /// value, replaced by one read from the data when the reading holds a
    /// value: every such question has its answer in the data, so an empty
    /// result is never right, and reading answers many of the questions
    /// whose queries come back empty (three-hop graph questions above all).
    pub(super) fn read_when_nothing_found(
        &self,
        question: &str,
        hint: Option<&str>,
        mut answer: Answer,
    ) -> Result<Answer> {
        let found = answer
            .result
            .as_ref()
            .is_some_and(|r| r.digest.has_non_null());
        if found {
            return Ok(answer);
        }
        let stage = "read_answer (the chosen query found no value)";
        let read = self.read_data(question, hint, stage, &mut answer.trace)?;
        match read {
            Some((sql, Ok(result))) if result.digest.has_non_null() => Ok(Answer {
                sql: Some(sql),
                result: Some(result),
                error: None,
                confidence: READ_CONFIDENCE,
                trace: answer.trace,
            }),
            _ => Ok(answer),
        }
    }

    /// The reading call (recorded in `trace` under `stage`, its answer as a
    /// candidate) and its answer as a query of constants with that query's
    /// outcome; None when the reply holds no value.
    fn read_data(
        &self,
        question: &str,
        hint: Option<&str>,
        stage: &str,
        trace: &mut Trace,
    ) -> Result<Option<(String, QueryOutcome)>> {
        let tables = self.data_as_text(self.config.read_chars);
        let messages = vec![
            ChatMessage::new("system", READ_ANSWER_SYSTEM.render(&[])),
            ChatMessage::new(
                "user",
                READ_ANSWER_USER.render(&[
                    ("tables", tables.as_str()),
                    ("hint", hint_paragraph(hint).as_str()),
                    ("question", question),
                ]),
            ),
        ];
        let sampling = Sampling {
            max_tokens: self.config.max_tokens,
            seed: self.config.seed,
            ..Sampling::default()
        };
        let generation = self
            .model
            .generate(&Prompt::Chat(messages.clone()), &sampling)?;
        trace.cost.add(&generation.usage);
        let call = CallRecord::new(stage, messages, &sampling, generation);
        let reply = call.outputs.first().cloned().unwrap_or_default();
        trace.calls.push(call);
        let Some(sql) = constant_query(&answer_values(&reply)) else {
            return Ok(None);
        };
        let outcome = self.executor.query(&sql);
        trace.candidates.push(CandidateRecord {
            sql: sql.clone(),
            execution: Execution::from_outcome(&outcome),
            votes: 1,
            score: 1.0,
        });
        Ok(Some((sql, outcome)))
    }

    /// Each table's name, columns and rows, one row a line with cells
    /// between `|`, until `max_chars`; a table cut short says how many
    /// rows were left out.
    fn data_as_text(&self, max_chars: usize) -> String {
        let names = self.executor.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
        );
        let names: Vec<String> = names
            .map(|r| r.rows.iter().map(|row| row[0].to_string()).collect())
            .unwrap_or_default();
        let mut text = String::new();
        for name in names {
            let Ok(rows) = self
                .executor
                .query(&format!("SELECT * FROM {}", quote_identifier(&name)))
            else {
                continue;
            };
            if !table_text(&name, &rows, max_chars, &mut text) {
                break;
            }
        }
        text
    }
}

/// Appends `name`'s rows to `text` while it stays within `max_chars`;
/// false when the budget ran out.
fn table_text(name: &str, rows: &QueryResult, max_chars: usize, text: &mut String) -> bool {
    let header = format!("{name}: {}\n", rows.columns.join(" | "));
    if text.len() + header.len() > max_chars {
        return false;
    }
    text.push_str(&header);
    for (shown, row) in rows.rows.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|v| v.to_string()).collect();
        let line = format!("{}\n", cells.join(" | "));
        if text.len() + line.len() > max_chars {
            text.push_str(&format!("({} more rows)\n", rows.total_rows - shown));
            return false;
        }
        text.push_str(&line);
    }
    text.push('\n');
    true
}

/// The values of a direct reply: one a line, without list bullets, an
/// `Answer:` label, code fences or a closing full stop.
fn answer_values(reply: &str) -> Vec<String> {
    reply
        .lines()
        .map(|line| {
            let line = line.trim();
            let line = line
                .strip_prefix("Answer:")
                .or_else(|| line.strip_prefix("answer:"))
                .unwrap_or(line)
                .trim_start_matches(['-', '*', '•'])
                .trim();
            line.strip_suffix('.').unwrap_or(line).trim().to_string()
        })
        .filter(|line| !line.is_empty() && !line.starts_with("```"))
        .take(MAX_VALUES)
        .collect()
}

/// A query that returns `values`, one a row: numbers as numbers, the rest
/// as text. None when there is no value.
fn constant_query(values: &[String]) -> Option<String> {
    let literal = |value: &str| {
        if value.parse::<i64>().is_ok() || value.parse::<f64>().is_ok_and(f64::is_finite) {
            value.to_string()
        } else {
            crate::db::quote_literal(value)
        }
    };
    // The first SELECT names the result's one column for every row.
    let selects: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| match i {
            0 => format!("SELECT {} AS answer", literal(v)),
            _ => format!("SELECT {}", literal(v)),
        })
        .collect();
    (!selects.is_empty()).then(|| selects.join(" UNION ALL "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{ExecConfig, Executor, Value};

    /// A database of one table `t (a, b)` with five rows.
    fn five_rows() -> (tempfile::TempDir, Executor) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE t (a INTEGER, b TEXT);
                 INSERT INTO t VALUES (0, 'x'), (1, 'x'), (2, 'x'), (3, 'x'), (4, 'x');",
            )
            .unwrap();
        let executor = Executor::open(&path, ExecConfig::default()).unwrap();
        (dir, executor)
    }

    #[test]
    fn a_reply_gives_one_value_a_line_without_decoration() {
        let reply = "Answer: Greek\n- 1,984.\n\n```\n* Jean d'Arc\n";
        assert_eq!(answer_values(reply), ["Greek", "1,984", "Jean d'Arc"]);
        assert!(answer_values("  \n").is_empty());
    }

    #[test]
    fn the_values_become_a_query_that_returns_them() {
        let (_dir, executor) = five_rows();
        let values = ["Jean d'Arc", "12", "-0.5", "1e999", "NaN"].map(String::from);
        let result = executor.query(&constant_query(&values).unwrap()).unwrap();
        let got: Vec<String> = result.rows.iter().map(|r| r[0].to_string()).collect();
        assert_eq!(got, values);
        assert_eq!(result.columns, ["answer"]);
        assert!(matches!(result.rows[1][0], Value::Integer(12)));
        assert!(matches!(result.rows[3][0], Value::Text(_)));
        assert_eq!(constant_query(&[]), None);
    }

    #[test]
    fn a_table_over_the_budget_is_cut_between_rows() {
        let (_dir, executor) = five_rows();
        let rows = executor.query("SELECT * FROM t").unwrap();
        let mut text = String::new();
        assert!(table_text("t", &rows, 1_000, &mut text));
        assert_eq!(text, "t: a | b\n0 | x\n1 | x\n2 | x\n3 | x\n4 | x\n\n");
        let mut text = String::new();
        assert!(!table_text("t", &rows, 21, &mut text));
        assert_eq!(text, "t: a | b\n0 | x\n1 | x\n(3 more rows)\n");
    }
}
