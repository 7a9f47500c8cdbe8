//! A failed query written again by the model from just before where it
//! went wrong, greedily, under the name constraint, so that the model's
//! next choice there is its likeliest one that can run.
//! - A column none of the query's tables has: while a SELECT list is
//!   decoded the constraint cannot know which tables the query will read,
//!   so it lets any column of the schema through; once the query is whole
//!   its tables are known. The answer is cut at the first reference to the
//!   missing name and the constraint narrowed to those tables. The in-place
//!   fixes (`SchemaNames::fixes`, which may join the column's table) come
//!   first; this keeps the query's tables and changes the name.
//! - A syntax error: sampling at a temperature sometimes draws a token
//!   that breaks the query (`T1 x` for `T1.x`, a stray parenthesis). The
//!   answer is cut before the name written ahead of the token SQLite
//!   stopped at, under the whole schema's constraint.
//! - A loop inside the SELECT list, before any FROM (`looped`): the answer
//!   is cut after the loop's first turn, its open groups closed, and the
//!   model goes on from a FROM, under the whole schema's constraint.

use super::{after, looped, split_qualified, SchemaNames};
use crate::error::{QueryError, Result};
use crate::llm::{ChatMessage, LanguageModel, Sampling};
use crate::search::continuation::continue_reply;
use crate::search::name_constraint::{NameConstraint, SchemaVocabulary};
use crate::search::sql_text::{name_before, reference_at, table_aliases};
use crate::trace::CallRecord;

/// Where a failed answer is continued from, and the tables whose names the
/// continuation may use.
#[derive(Debug, PartialEq)]
pub(crate) struct ResumePoint {
    /// The answer up to where its query went wrong.
    pub written: String,
    pub tables: Vec<String>,
}

/// Whether SQLite's message says the query does not parse at a token.
fn is_syntax_error(message: &str) -> bool {
    message.contains("syntax error") || message.starts_with("unrecognized token")
}

/// Tokens a rewrite may add beyond what the text it replaces suggests.
const REWRITE_SLACK_TOKENS: usize = 48;

/// The most tokens a rewrite of `replaced_chars` characters of a failed
/// answer may write. It may outgrow that text (a join added), but a greedy
/// rewrite that loops (one condition repeated, a run of spaces) would
/// otherwise run to the answer's whole limit and still fail, incomplete.
/// Queries take about three characters a token, so this is some 1.5 times
/// the replaced text's tokens, plus a slack.
fn rewrite_token_limit(replaced_chars: usize) -> usize {
    replaced_chars / 2 + REWRITE_SLACK_TOKENS
}

impl SchemaNames {
    /// Where `answer`, whose query `sql` failed with `error`, is continued
    /// from: from a FROM after a loop's first turn in a query that reads no
    /// table yet, whatever the error (any table); before a missing
    /// column's first reference (narrowed to the tables the query reads);
    /// or before the name ahead of a syntax error (any table). None for
    /// other errors, and where the query is not in `answer` or the place
    /// cannot be found.
    pub(crate) fn resume_point(
        &self,
        answer: &str,
        sql: &str,
        error: &QueryError,
    ) -> Option<ResumePoint> {
        let query_at = answer.rfind(sql)?;
        let every_table = || self.tables.iter().map(|(t, _)| t.clone()).collect();
        if let Some(kept) = looped::before_from(sql) {
            return Some(ResumePoint {
                written: format!("{}{kept}\nFROM", &answer[..query_at]),
                tables: every_table(),
            });
        }
        let (cut, tables) = match error {
            QueryError::SqlAt { message, offset } if is_syntax_error(message) => {
                let cut = name_before(sql, *offset)?;
                (cut, every_table())
            }
            _ => {
                let message = error.to_string();
                let name = after(&message, "no such column:")?;
                let (qualifier, column) = split_qualified(name);
                (
                    reference_at(sql, qualifier, column)?,
                    self.query_tables(sql),
                )
            }
        };
        (!tables.is_empty()).then(|| ResumePoint {
            written: answer[..query_at + cut].to_string(),
            tables,
        })
    }

    /// The schema's tables that `sql` reads, as the schema spells them.
    fn query_tables(&self, sql: &str) -> Vec<String> {
        let mut tables: Vec<String> = table_aliases(sql)
            .into_iter()
            .filter_map(|(_, table)| {
                self.tables
                    .iter()
                    .find(|(t, _)| t.eq_ignore_ascii_case(&table))
                    .map(|(t, _)| t.clone())
            })
            .collect();
        tables.sort_unstable();
        tables.dedup();
        tables
    }

    /// The answer to `messages` (`answer`, whose query `sql` failed with
    /// `error`) continued from where its query went wrong, and the call
    /// that wrote it; None where there is no such point. `sampling` is the
    /// answer's own (its stop strings and token limit); the continuation is
    /// greedy, one completion.
    #[allow(clippy::too_many_arguments)]
    pub fn redecode_failed_query(
        &self,
        model: &dyn LanguageModel,
        messages: &[ChatMessage],
        answer: &str,
        sql: &str,
        error: &QueryError,
        sampling: &Sampling,
        stage: &str,
    ) -> Result<Option<(String, CallRecord)>> {
        let Some(point) = self.resume_point(answer, sql, error) else {
            return Ok(None);
        };
        let vocabulary = SchemaVocabulary::of_tables(
            self.tables
                .iter()
                .filter(|(t, _)| point.tables.contains(t))
                .map(|(t, columns)| (t.as_str(), columns.iter().map(String::as_str))),
        );
        let replaced_chars = answer.len() - point.written.len();
        let sampling = Sampling {
            max_tokens: sampling.max_tokens.min(rewrite_token_limit(replaced_chars)),
            temperature: 0.0,
            top_p: 1.0,
            n: 1,
            first_row: 0,
            constraint: Some(NameConstraint::continuing(vocabulary, &point.written)),
            ..sampling.clone()
        };
        continue_reply(
            model,
            messages,
            point.written,
            &sampling,
            format!("{stage} rewrite of the failed query"),
        )
        .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Schema;
    use crate::understand::demo;

    fn missing(name: &str) -> QueryError {
        QueryError::Sql(format!("no such column: {name}"))
    }

    fn names() -> SchemaNames {
        let schema: Schema = demo::schema();
        SchemaNames::of(&schema)
    }

    #[test]
    fn an_answer_resumes_before_the_missing_name_with_the_query_tables() {
        let names = names();
        let table = &names.tables[0].0;
        let sql = format!("SELECT T1.nope FROM {table} AS T1");
        let answer = format!("Reasoning.\n```sql\n{sql}\n```");
        let point = names
            .resume_point(&answer, &sql, &missing("T1.nope"))
            .expect("a resume point");
        assert_eq!(point.written, "Reasoning.\n```sql\nSELECT ");
        assert_eq!(point.tables, vec![table.clone()]);
    }

    #[test]
    fn a_bare_missing_name_is_found_where_it_stands_bare() {
        let names = names();
        let table = &names.tables[0].0;
        let sql = format!("SELECT x.cost, cost FROM {table} AS x");
        let point = names
            .resume_point(&sql, &sql, &missing("cost"))
            .expect("a resume point");
        assert_eq!(point.written, "SELECT x.cost, ");
    }

    #[test]
    fn other_errors_and_unknown_tables_give_no_resume_point() {
        let names = names();
        let table = &names.tables[0].0;
        let sql = format!("SELECT nope FROM {table}");
        let no_table = QueryError::Sql("no such table: t".into());
        assert_eq!(names.resume_point(&sql, &sql, &no_table), None);
        let elsewhere = "SELECT nope FROM not_a_table";
        assert_eq!(
            names.resume_point(elsewhere, elsewhere, &missing("nope")),
            None
        );
    }

    #[test]
    fn a_loop_before_any_from_resumes_from_a_from_after_its_first_turn() {
        let names = names();
        let sql = "SELECT a * (1 + b) * (1 + b) * (1 + b) * (1 + b) * (1 + b) * (1 +";
        let answer = format!("```sql\n{sql}");
        let incomplete = QueryError::Sql("incomplete input".into());
        let point = names
            .resume_point(&answer, sql, &incomplete)
            .expect("a resume point");
        assert_eq!(point.written, "```sql\nSELECT a * (1 + b)\nFROM");
        assert_eq!(point.tables.len(), names.tables.len());
    }

    #[test]
    fn a_syntax_error_resumes_before_the_name_ahead_of_it_with_every_table() {
        let names = names();
        let sql = "SELECT T1 x FROM t AS T1";
        let error = QueryError::SqlAt {
            message: "near \"x\": syntax error".into(),
            offset: 10,
        };
        let point = names
            .resume_point(sql, sql, &error)
            .expect("a resume point");
        assert_eq!(point.written, "SELECT ");
        assert_eq!(point.tables.len(), names.tables.len());
        let elsewhere = QueryError::SqlAt {
            message: "no such function: f".into(),
            offset: 7,
        };
        assert_eq!(names.resume_point(sql, sql, &elsewhere), None);
    }
}
