//! A query that names a column none of its tables has, written again by
//! the model from just before that name. While a SELECT list is decoded the
//! name constraint cannot know which tables the query will read, so it lets
//! any column of the schema through; once the query is whole its tables are
//! known. The answer is cut at the first reference to the missing name and
//! continued greedily with the constraint narrowed to those tables, so the
//! model's next choice is among names that can run. The in-place fixes
//! (`SchemaNames::fixes`, which may join the column's table) come first;
//! this keeps the query's tables and changes the name.

use super::{after, split_qualified, SchemaNames};
use crate::error::Result;
use crate::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use crate::search::name_constraint::{NameConstraint, SchemaVocabulary};
use crate::search::sql_text::{reference_at, table_aliases};
use crate::trace::CallRecord;

/// Where a failed answer is continued from, and the tables its query reads.
#[derive(Debug, PartialEq)]
pub(crate) struct ResumePoint {
    /// The answer up to the first reference to the missing name.
    pub written: String,
    pub tables: Vec<String>,
}

impl SchemaNames {
    /// Where `answer`, whose query `sql` failed with `error`, is continued
    /// from: None unless the error is a missing column that the query
    /// writes, inside `answer`, and the query reads tables of the schema.
    pub(crate) fn resume_point(&self, answer: &str, sql: &str, error: &str) -> Option<ResumePoint> {
        let name = after(error, "no such column:")?;
        let (qualifier, column) = split_qualified(name);
        let query_at = answer.rfind(sql)?;
        let name_at = reference_at(sql, qualifier, column)?;
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
        (!tables.is_empty()).then(|| ResumePoint {
            written: answer[..query_at + name_at].to_string(),
            tables,
        })
    }

    /// The answer to `messages` (`answer`, whose query `sql` failed with
    /// `error`) continued from before its missing name, and the call that
    /// wrote it; None where there is no such point. `sampling` is the
    /// answer's own (its stop strings and token limit); the continuation is
    /// greedy, one completion.
    #[allow(clippy::too_many_arguments)]
    pub fn redecode_past_missing_name(
        &self,
        model: &dyn LanguageModel,
        messages: &[ChatMessage],
        answer: &str,
        sql: &str,
        error: &str,
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
        let mut messages = messages.to_vec();
        messages.push(ChatMessage::new("assistant", point.written.clone()));
        let sampling = Sampling {
            temperature: 0.0,
            top_p: 1.0,
            n: 1,
            first_row: 0,
            constraint: Some(NameConstraint::continuing(vocabulary, &point.written)),
            ..sampling.clone()
        };
        let generation = model.generate(&Prompt::Chat(messages.clone()), &sampling)?;
        let record = CallRecord::new(
            format!("{stage} rewrite past missing name"),
            messages,
            &sampling,
            generation,
        );
        let rest = record.outputs.first().cloned().unwrap_or_default();
        Ok(Some((point.written + &rest, record)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Schema;
    use crate::understand::demo;

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
            .resume_point(&answer, &sql, "no such column: T1.nope")
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
            .resume_point(&sql, &sql, "no such column: cost")
            .expect("a resume point");
        assert_eq!(point.written, "SELECT x.cost, ");
    }

    #[test]
    fn other_errors_and_unknown_tables_give_no_resume_point() {
        let names = names();
        let table = &names.tables[0].0;
        let sql = format!("SELECT nope FROM {table}");
        assert_eq!(names.resume_point(&sql, &sql, "no such table: t"), None);
        let elsewhere = "SELECT nope FROM not_a_table";
        let error = "no such column: nope";
        assert_eq!(names.resume_point(elsewhere, elsewhere, error), None);
    }
}
