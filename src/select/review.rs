//! The reviewer: how likely the model finds the question, given the schema
//! and a query. A query that computes what the question asks makes the
//! question likely; one that computes something else makes it less so.
//! Samples often agree on the same wrong result, and then the vote alone
//! picks it; the question's likelihood tells such groups apart for one
//! prefill per distinct query and no generated token.

use crate::error::Result;
use crate::llm::{ChatMessage, LanguageModel, Prompt, Usage};
use crate::prompts::{REVIEW_USER, SQL_GENERATION_SYSTEM};
use serde::Serialize;
use std::collections::HashMap;
use std::hash::Hash;

/// One reviewed query, as the trace keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewRecord {
    pub sql: String,
    /// ln p(question | schema, query), summed over the question's tokens.
    pub log_prob: f64,
}

/// What the reviewer is shown (the schema and hint) and what it scores
/// (the question); named fields, since all three are text.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub schema: &'a str,
    pub hint: Option<&'a str>,
    pub question: &'a str,
}

pub struct Review {
    /// One per query, in order.
    pub records: Vec<ReviewRecord>,
    /// The scoring passes together.
    pub usage: Usage,
}

/// Scores the question after each query; None where the model cannot
/// report probabilities (an OpenAI-compatible server).
pub fn review(
    model: &dyn LanguageModel,
    asked: Asked<'_>,
    queries: &[&str],
) -> Result<Option<Review>> {
    let mut usage = Usage::default();
    let mut records = Vec::with_capacity(queries.len());
    for &sql in queries {
        let prompt = review_prompt(asked, sql);
        let Some(scored) = model.score(&prompt, asked.question)? else {
            return Ok(None);
        };
        usage.prompt_tokens += scored.usage.prompt_tokens;
        usage.cached_prompt_tokens += scored.usage.cached_prompt_tokens;
        usage.prefill_seconds += scored.usage.prefill_seconds;
        records.push(ReviewRecord {
            sql: sql.to_string(),
            log_prob: scored.log_prob,
        });
    }
    Ok(Some(Review { records, usage }))
}

/// The prompt after which the question is scored for `sql`. It opens
/// with the generation prompt's system message and schema (see
/// `REVIEW_USER`), whose states the prefix cache then holds from the
/// question's own generation calls.
pub fn review_prompt(asked: Asked<'_>, sql: &str) -> Prompt {
    let hint = crate::prompts::hint_paragraph(asked.hint);
    Prompt::Chat(vec![
        ChatMessage::new("system", SQL_GENERATION_SYSTEM.render(&[])),
        ChatMessage::new(
            "user",
            REVIEW_USER.render(&[
                ("schema", asked.schema),
                ("hint", hint.as_str()),
                ("sql", sql),
            ]),
        ),
    ])
}

/// Reviews each distinct query once, given with the result it returned
/// (as a key); per result, the log-probability of its likeliest query.
/// None where the model cannot score.
pub fn review_by_result<'q, K: Copy + Eq + Hash>(
    model: &dyn LanguageModel,
    asked: Asked<'_>,
    queries: impl IntoIterator<Item = (&'q str, K)>,
) -> Result<Option<(Review, HashMap<K, f64>)>> {
    let mut distinct: Vec<(&str, K)> = Vec::new();
    for (sql, key) in queries {
        if !distinct.iter().any(|(q, _)| *q == sql) {
            distinct.push((sql, key));
        }
    }
    let sqls: Vec<&str> = distinct.iter().map(|(q, _)| *q).collect();
    let Some(review) = review(model, asked, &sqls)? else {
        return Ok(None);
    };
    let mut best: HashMap<K, f64> = HashMap::new();
    for ((_, key), record) in distinct.iter().zip(&review.records) {
        let log_prob = best.entry(*key).or_insert(f64::NEG_INFINITY);
        *log_prob = log_prob.max(record.log_prob);
    }
    Ok(Some((review, best)))
}

/// The weight, against a result with a value, of a result with none (no
/// rows, or only NULLs) when results compete: a tenth. Measured on sc-8's
/// and the search's competing results on Spider (docs/results.md), a
/// result without a value was right 4% of the time and one with a value
/// 35%: a likelihood ratio of about e^-2.2. Samples that miss a value
/// (a literal spelt unlike the data, a join that drops every row) agree on
/// nothing far more often than right ones do.
pub const NO_VALUE_WEIGHT: f64 = 0.1;

/// The log-prior of a result in the choice between results.
pub fn result_prior(has_value: bool) -> f64 {
    if has_value {
        0.0
    } else {
        NO_VALUE_WEIGHT.ln()
    }
}

/// What is known of one group of candidates with one result.
#[derive(Debug, Clone, Copy)]
pub struct GroupEvidence {
    /// Its share of the votes.
    pub share: f64,
    /// ln p(question | its likeliest query).
    pub log_prob: f64,
    /// Whether its result holds a value.
    pub has_value: bool,
}

/// The group to answer with: each group scores ln(its share of the votes),
/// plus ln p(question | its likeliest query), plus its result's prior: the
/// vote and the result's prior as the prior, the reviewer as the
/// likelihood. Ties go to the earlier group.
pub fn best_group(groups: &[GroupEvidence]) -> Option<usize> {
    groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.share > 0.0)
        .map(|(i, g)| (i, g.share.ln() + g.log_prob + result_prior(g.has_value)))
        .fold(None, |best: Option<(usize, f64)>, (g, score)| match best {
            Some((_, s)) if s >= score => best,
            _ => Some((g, score)),
        })
        .map(|(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valued(share: f64, log_prob: f64) -> GroupEvidence {
        GroupEvidence {
            share,
            log_prob,
            has_value: true,
        }
    }

    #[test]
    fn a_likelier_question_outweighs_a_small_lead_in_votes() {
        // 5 of 8 votes against 3 of 8, but the question is e^2 times
        // likelier after the second group's query.
        assert_eq!(
            best_group(&[valued(5.0 / 8.0, -20.0), valued(3.0 / 8.0, -18.0)]),
            Some(1)
        );
        assert_eq!(
            best_group(&[valued(7.0 / 8.0, -20.0), valued(1.0 / 8.0, -18.5)]),
            Some(0)
        );
    }

    #[test]
    fn a_result_without_a_value_needs_ten_times_the_evidence() {
        let empty = |share, log_prob| GroupEvidence {
            has_value: false,
            ..valued(share, log_prob)
        };
        // 7 votes to 1, equally likely questions: 7 < 10, the value wins.
        assert_eq!(
            best_group(&[empty(7.0 / 8.0, -20.0), valued(1.0 / 8.0, -20.0)]),
            Some(1)
        );
        // The question e^3 times likelier after the empty result's query.
        assert_eq!(
            best_group(&[empty(7.0 / 8.0, -17.0), valued(1.0 / 8.0, -20.0)]),
            Some(0)
        );
    }

    #[test]
    fn groups_without_votes_never_win_and_ties_keep_the_first() {
        assert_eq!(
            best_group(&[valued(0.0, 0.0), valued(0.5, -3.0), valued(0.5, -3.0)]),
            Some(1)
        );
        assert_eq!(best_group(&[valued(0.0, 0.0)]), None);
    }
}
