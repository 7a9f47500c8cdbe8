//! Paired comparison of two runs on the same questions: the difference in
//! execution accuracy with a 95% bootstrap interval over questions, and
//! McNemar's exact test on the questions only one run answers right. On a
//! 100-question subset a few points move on noise alone; the interval says
//! how many.

use crate::error::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// Bootstrap resamples; fixed, with a fixed seed, so a report is repeatable.
pub const RESAMPLES: usize = 10_000;
const BOOTSTRAP_SEED: u64 = 0xB007;

/// One run's verdict on each question whose gold executes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcomes {
    /// (database, question id) to (correct, gold result non-empty): runs
    /// over sets made apart number their questions alike, and a question
    /// is the same only on the same database.
    pub by_question: HashMap<(String, String), (bool, bool)>,
}

#[derive(Deserialize)]
struct SummaryQuestions {
    report: ReportQuestions,
}

#[derive(Deserialize)]
struct ReportQuestions {
    questions: Vec<QuestionVerdict>,
}

#[derive(Deserialize)]
struct QuestionVerdict {
    question_id: String,
    #[serde(default)]
    db_id: String,
    gold_nonempty: Option<bool>,
    verdict: String,
}

impl Outcomes {
    /// The verdicts in a run folder's `summary.json`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let summary: SummaryQuestions = serde_json::from_str(&text).map_err(|e| {
            Error::InvalidArgument(format!(
                "{} has no per-question verdicts ({e}); run `iesr bench --resume` on that folder to rewrite it",
                path.display()
            ))
        })?;
        let by_question = summary
            .report
            .questions
            .into_iter()
            .filter(|q| q.verdict != "gold_failed")
            .map(|q| {
                let correct = q.verdict == "correct";
                (
                    (q.db_id, q.question_id),
                    (correct, q.gold_nonempty == Some(true)),
                )
            })
            .collect();
        Ok(Outcomes { by_question })
    }
}

/// A against B on the questions both scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedDifference {
    pub questions: usize,
    /// Questions only A, and only B, answers right.
    pub only_a: usize,
    pub only_b: usize,
    /// EX of A minus EX of B, in points, with its 95% bootstrap interval.
    pub difference: f64,
    pub interval: (f64, f64),
    /// Two-sided exact McNemar p-value.
    pub p_value: f64,
}

/// The comparison over the questions both runs scored; with `nonempty`,
/// over those whose gold result is not empty. None when they share none.
pub fn compare(a: &Outcomes, b: &Outcomes, nonempty: bool) -> Option<PairedDifference> {
    let mut ids: Vec<&(String, String)> = a
        .by_question
        .iter()
        .filter(|(id, (_, gold_nonempty))| {
            b.by_question.contains_key(*id) && (!nonempty || *gold_nonempty)
        })
        .map(|(id, _)| id)
        .collect();
    if ids.is_empty() {
        return None;
    }
    // Sorted, so the bootstrap draws the same questions whatever the map order.
    ids.sort();
    let deltas: Vec<i32> = ids
        .iter()
        .map(|id| i32::from(a.by_question[*id].0) - i32::from(b.by_question[*id].0))
        .collect();
    let only_a = deltas.iter().filter(|&&d| d > 0).count();
    let only_b = deltas.iter().filter(|&&d| d < 0).count();
    let n = deltas.len();
    let points = |sum: i64| 100.0 * sum as f64 / n as f64;
    let difference = points(deltas.iter().map(|&d| i64::from(d)).sum());
    let mut rng = ChaCha8Rng::seed_from_u64(BOOTSTRAP_SEED);
    let mut resampled: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            points(
                (0..n)
                    .map(|_| i64::from(deltas[rng.random_range(0..n)]))
                    .sum(),
            )
        })
        .collect();
    resampled.sort_by(f64::total_cmp);
    let at = |q: f64| resampled[((q * RESAMPLES as f64) as usize).min(RESAMPLES - 1)];
    Some(PairedDifference {
        questions: n,
        only_a,
        only_b,
        difference,
        interval: (at(0.025), at(0.975)),
        p_value: mcnemar_exact(only_a, only_b),
    })
}

/// Two-sided exact McNemar test: under no difference, each of the `b + c`
/// discordant questions goes either way with probability 1/2.
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // ln C(n, i) built up term by term; 0.5^n in logs too, for large n.
    let mut ln_choose = 0.0f64;
    let mut tail = 0.0f64;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose - n as f64 * std::f64::consts::LN_2).exp();
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(correct: &[bool], nonempty: &[bool]) -> Outcomes {
        Outcomes {
            by_question: correct
                .iter()
                .zip(nonempty)
                .enumerate()
                .map(|(i, (&c, &n))| (("d".to_string(), format!("q{i}")), (c, n)))
                .collect(),
        }
    }

    #[test]
    fn mcnemar_matches_the_binomial_tail() {
        // 0 of 6 discordant one way: 2 * 0.5^6.
        assert!((mcnemar_exact(0, 6) - 2.0 / 64.0).abs() < 1e-12);
        // 1 vs 5: 2 * (1 + 6) / 64.
        assert!((mcnemar_exact(5, 1) - 14.0 / 64.0).abs() < 1e-12);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // Large counts stay finite: 400 vs 600 is far from chance.
        let p = mcnemar_exact(400, 600);
        assert!(p > 0.0 && p < 1e-9, "{p}");
    }

    #[test]
    fn the_difference_and_its_interval_are_paired_over_questions() {
        // A right on 60 of 100, B on 50; they differ on 14 questions.
        let a: Vec<bool> = (0..100).map(|i| i < 60).collect();
        let b: Vec<bool> = (0..100)
            .map(|i| (i < 48) || (60..62).contains(&i))
            .collect();
        let all = vec![true; 100];
        let d = compare(&outcomes(&a, &all), &outcomes(&b, &all), false).unwrap();
        assert_eq!((d.questions, d.only_a, d.only_b), (100, 12, 2));
        assert!((d.difference - 10.0).abs() < 1e-9);
        assert!(d.interval.0 < 10.0 && 10.0 < d.interval.1);
        // A 10-point gain on 14 discordant questions is clearly above zero.
        assert!(d.interval.0 > 0.0, "{:?}", d.interval);
        assert!(d.p_value < 0.05);
        // Swapping the runs mirrors everything.
        let back = compare(&outcomes(&b, &all), &outcomes(&a, &all), false).unwrap();
        assert!((back.difference + 10.0).abs() < 1e-9);
        assert_eq!(back.p_value, d.p_value);
    }

    #[test]
    fn equal_runs_differ_by_nothing_and_nonempty_restricts_the_questions() {
        let a: Vec<bool> = (0..10).map(|i| i % 2 == 0).collect();
        let nonempty: Vec<bool> = (0..10).map(|i| i < 4).collect();
        let x = outcomes(&a, &nonempty);
        let d = compare(&x, &x, false).unwrap();
        assert_eq!(
            (d.difference, d.interval, d.p_value),
            (0.0, (0.0, 0.0), 1.0)
        );
        assert_eq!(compare(&x, &x, true).unwrap().questions, 4);
        assert!(compare(&x, &Outcomes::default(), false).is_none());
    }
}
