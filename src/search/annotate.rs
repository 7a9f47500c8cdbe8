//! Annotation for the demonstration memory: the engine writes a query for
//! a benchmark question, and when the benchmark's check rejects it, writes
//! it again shown what the rejected query did (its error or its result),
//! a few times. Only accepted queries become demonstrations.

use super::extract::extract_sql;
use super::{direct_prompt, Engine, DIRECT_INSTRUCTION};
use crate::db::QueryOutcome;
use crate::error::Result;
use crate::llm::{ChatMessage, Prompt, Sampling};
use crate::prompts::{FEEDBACK_ERROR, FEEDBACK_WRONG};
use crate::trace::Trace;

/// Temperature of the writes after the first: the greedy reply was
/// rejected, so the next ones must be able to differ.
const RETRY_TEMPERATURE: f32 = 0.7;

/// Rows of a rejected result the retry is shown.
const SHOWN_ROWS: usize = 3;

/// What annotating one question made and cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotation {
    /// The accepted query (fixed in place if a name needed it), if any.
    pub sql: Option<String>,
    /// Queries written, the accepted one included.
    pub attempts: usize,
    pub generated_tokens: usize,
}

impl Engine {
    /// A query for `question` that `accepts` takes: written greedily with
    /// the direct prompt (and this engine's demonstrations), then up to
    /// `retries` times more, each shown why the one before was rejected.
    pub fn write_accepted(
        &self,
        question: &str,
        hint: Option<&str>,
        retries: usize,
        accepts: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Annotation> {
        let mut trace = Trace::default();
        let material = self.direct_material(question, hint, &mut trace)?;
        let mut messages = direct_prompt(&material, hint, question, DIRECT_INSTRUCTION);
        let mut annotation = Annotation::default();
        for attempt in 0..=retries {
            let retry = attempt > 0;
            let sampling = Sampling {
                temperature: if retry { RETRY_TEMPERATURE } else { 0.0 },
                top_p: if retry { 0.95 } else { 1.0 },
                min_p: self.config.min_p,
                max_tokens: self.config.max_tokens,
                seed: self.config.seed.wrapping_add(attempt as u64),
                n: 1,
                constraint: if retry {
                    self.constraint.clone()
                } else {
                    self.direct_constraint.clone()
                },
                ..Sampling::default()
            };
            let generation = self
                .model
                .generate(&Prompt::Chat(messages.clone()), &sampling)?;
            annotation.generated_tokens += generation.usage.generated_tokens;
            let Some(completion) = generation.completions.first() else {
                break;
            };
            let Some(written) = extract_sql(&completion.text) else {
                break;
            };
            annotation.attempts += 1;
            let cut = completion.finish_reason != crate::llm::FinishReason::Stop;
            let ran = self.executor.query(&written);
            let asked = super::repair::asked(question, hint);
            let (sql, outcome) = match self.names.mend(&self.executor, &written, &ran, cut, &asked)
            {
                Some((fixed, result)) => (fixed, Ok(result)),
                None => (written, ran),
            };
            if outcome.is_ok() && accepts(&sql) {
                annotation.sql = Some(sql);
                break;
            }
            messages.push(ChatMessage::new("assistant", format!("```sql\n{sql}\n```")));
            messages.push(ChatMessage::new("user", rejection(&outcome)));
        }
        Ok(annotation)
    }
}

/// What the rejected query did, as the next user turn.
fn rejection(outcome: &QueryOutcome) -> String {
    match outcome {
        Err(error) => FEEDBACK_ERROR.render(&[("error", &error.to_string())]),
        Ok(result) => {
            let rows: Vec<String> = result
                .rows
                .iter()
                .take(SHOWN_ROWS)
                .map(|row| {
                    let values: Vec<String> = row.iter().map(|v| v.to_string()).collect();
                    format!("({})", values.join(", "))
                })
                .collect();
            let shown = match result.total_rows {
                0 => "no rows".to_string(),
                n if n > SHOWN_ROWS => {
                    format!("{} and {} more rows", rows.join(", "), n - SHOWN_ROWS)
                }
                _ => rows.join(", "),
            };
            FEEDBACK_WRONG.render(&[("result", &shown)])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::scripted::ScriptedModel;
    use crate::search::{Method, SearchConfig};
    use std::sync::{Arc, Mutex};

    fn concert_singer() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/datasets/spider/database/concert_singer/concert_singer.sqlite")
    }

    /// Annotates with a model that writes `replies` in turn (the last one
    /// again once they run out), recording each prompt's text.
    fn annotate(replies: &[&'static str], retries: usize) -> (Annotation, Vec<String>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let replies = replies.to_vec();
        let model = ScriptedModel::responding(move |prompt, _| {
            let mut log = log.lock().unwrap();
            log.push(prompt.to_string());
            replies[(log.len() - 1).min(replies.len() - 1)].to_string()
        });
        let config = SearchConfig {
            method: Method::Greedy,
            ..SearchConfig::default()
        };
        let engine = Engine::new(Arc::new(model), &concert_singer(), config).unwrap();
        let mut accepts = |sql: &str| sql.contains("count(*)");
        let annotation = engine
            .write_accepted("How many singers?", None, retries, &mut accepts)
            .unwrap();
        let prompts = seen.lock().unwrap().clone();
        (annotation, prompts)
    }

    #[test]
    fn a_rejected_query_is_written_again_shown_its_error_or_its_rows() {
        let (annotation, prompts) = annotate(
            &[
                "```sql\nSELECT nosuch(Name) FROM singer\n```",
                "```sql\nSELECT Name FROM singer\n```",
                "```sql\nSELECT count(*) FROM singer\n```",
            ],
            3,
        );
        assert_eq!(
            annotation.sql.as_deref(),
            Some("SELECT count(*) FROM singer")
        );
        assert_eq!(annotation.attempts, 3);
        assert!(
            prompts[1].contains("Running that query failed"),
            "{}",
            prompts[1]
        );
        assert!(
            prompts[2].contains("not the answer") && prompts[2].contains("and 3 more rows"),
            "{}",
            prompts[2]
        );
    }

    #[test]
    fn no_accepted_query_within_the_retries_is_no_annotation() {
        let (annotation, prompts) = annotate(&["```sql\nSELECT Name FROM singer\n```"], 1);
        assert_eq!(annotation.sql, None);
        assert_eq!(annotation.attempts, 2);
        assert_eq!(prompts.len(), 2);
    }
}
