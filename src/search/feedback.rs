//! Execution guidance for the one-call methods: when the chosen query fails
//! or returns nothing with a value, the model is shown its query and what
//! execution said, and writes it again, up to L times, each round told why
//! the one before fell short.

use super::extract::extract_sql;
use super::functions::Written;
use super::Engine;
use crate::db::{quote_literal, QueryOutcome, QueryResult};
use crate::error::Result;
use crate::llm::{ChatMessage, Prompt, Sampling};
use crate::prompts::{FEEDBACK_EMPTY, FEEDBACK_ERROR, FEEDBACK_UNMATCHED};
use crate::trace::{CallRecord, CandidateRecord, Execution, Trace};
use std::sync::Arc;

/// L: corrections tried after the chosen query, by default.
pub const DEFAULT_FEEDBACK_ROUNDS: usize = 3;

/// Columns named as storing an unmatched value at most.
const MAX_PLACES: usize = 3;

/// Whether an outcome answers: it ran and some row holds a value.
pub(crate) fn has_value(outcome: &QueryOutcome) -> bool {
    outcome.as_ref().is_ok_and(|r| r.digest.has_non_null())
}

impl Engine {
    /// Up to `rounds` corrections of `sql` (written in reply to `messages`),
    /// each call and candidate recorded in `trace`: the first correction
    /// that runs with a value, or None.
    pub(super) fn correct_by_feedback(
        &self,
        (question, hint): (&str, Option<&str>),
        mut messages: Vec<ChatMessage>,
        (sql, outcome): (&str, &QueryOutcome),
        rounds: usize,
        trace: &mut Trace,
    ) -> Result<Option<(String, Arc<QueryResult>)>> {
        let mut written_functions = Written::default();
        let sampling = Sampling {
            temperature: 0.0,
            max_tokens: self.config.max_tokens,
            seed: self.config.seed,
            n: 1,
            constraint: self.constraint.clone(),
            ..Sampling::default()
        };
        let (mut sql, mut outcome) = (sql.to_string(), outcome.clone());
        for _ in 0..rounds {
            messages.push(ChatMessage::new("assistant", format!("```sql\n{sql}\n```")));
            messages.push(ChatMessage::new("user", self.feedback(&sql, &outcome)));
            let generation = self
                .model
                .generate(&Prompt::Chat(messages.clone()), &sampling)?;
            trace.cost.add(&generation.usage);
            let call = CallRecord::new(
                "execution_feedback",
                messages.clone(),
                &sampling,
                generation,
            );
            let written = call.outputs.first().and_then(|o| extract_sql(o));
            let cut = call.was_cut(0);
            trace.calls.push(call);
            // A reply without a query ends the guidance: asking again would
            // show the model the same feedback.
            let Some(written) = written else {
                return Ok(None);
            };
            let (written, ran) = self.run_written(
                (question, hint),
                (&written, cut),
                &mut written_functions,
                trace,
            )?;
            trace.candidates.push(CandidateRecord {
                sql: written.clone(),
                execution: Execution::from_outcome(&ran),
                votes: 0,
                score: 0.0,
            });
            if let (Ok(result), true) = (&ran, has_value(&ran)) {
                return Ok(Some((written, Arc::clone(result))));
            }
            // The same query again would get the same feedback.
            if written == sql {
                return Ok(None);
            }
            (sql, outcome) = (written, ran);
        }
        Ok(None)
    }

    /// What execution said of `sql`, as the next user turn: its error, or
    /// that it found no value, with the compared values no row holds and
    /// where the database stores them (else what their columns hold).
    fn feedback(&self, sql: &str, outcome: &QueryOutcome) -> String {
        if let Err(error) = outcome {
            return FEEDBACK_ERROR.render(&[("error", &error.to_string())]);
        }
        let empty = FEEDBACK_EMPTY.render(&[]);
        let unmatched = self.names.unmatched_values(&self.executor, sql);
        if unmatched.is_empty() {
            return empty;
        }
        let values: Vec<String> = unmatched
            .iter()
            .map(|u| {
                let instead = match self.places_holding(&u.written).as_deref() {
                    Some(places) => format!("it is stored in {places}"),
                    None => format!("its most common values: {}", u.held.join(", ")),
                };
                format!(
                    "- {} = {} (no row of {} has it; {instead})",
                    u.column,
                    quote_literal(&u.written),
                    u.table
                )
            })
            .collect();
        let listed = FEEDBACK_UNMATCHED.render(&[("values", &values.join("\n"))]);
        format!("{empty}\n{listed}")
    }

    /// Where the database stores `written` apart from case (`artists.name`,
    /// or `artists.name as 'QUEEN'` for another spelling), when a few
    /// columns do: a model that compared the wrong table's column is shown
    /// the one to join rather than values of the column it chose, which it
    /// would copy. None when no column, or too many to point anywhere (a
    /// flag like 'Y'), holds it, or the value index cannot be read.
    fn places_holding(&self, written: &str) -> Option<String> {
        let index = self.value_index().ok()?;
        let mut places: Vec<String> = Vec::new();
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for entry in index.holders_of(written) {
            let column = (entry.table.as_str(), entry.column.as_str());
            if seen.contains(&column) {
                continue;
            }
            seen.push(column);
            let mut place = format!("{}.{}", entry.table, entry.column);
            let stored = entry.value.as_deref().unwrap_or_default();
            if stored != written {
                place += &format!(" as {}", quote_literal(stored));
            }
            places.push(place);
        }
        (!places.is_empty() && places.len() <= MAX_PLACES).then(|| places.join(", "))
    }
}
