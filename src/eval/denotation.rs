//! Denotation accuracy for table QA: a prediction is right when the values
//! its query returns are the gold answer's values, as sets, after
//! normalisation (case, spacing, a trailing full stop; numbers compared by
//! value, so `12,467` equals `12467` and `3.0` equals `3`, and within a
//! relative tolerance where the benchmark allows one).

use crate::db::QueryResult;
use crate::sources::cells::parse_number;
use std::collections::BTreeSet;

/// Whether `result` denotes the `gold` values: its one column's cells, or
/// with several columns every cell. Two numbers are equal when they differ
/// by at most `tolerance` times the larger (0: exactly).
pub fn denotes(gold: &[String], result: &QueryResult, tolerance: f64) -> bool {
    let predicted: BTreeSet<String> = result
        .rows
        .iter()
        .flatten()
        .map(|value| normalise(&value.to_string()))
        .collect();
    let gold: BTreeSet<String> = gold.iter().map(|g| normalise(g)).collect();
    let covered = |from: &BTreeSet<String>, by: &BTreeSet<String>| {
        from.iter()
            .all(|a| by.iter().any(|b| equal_within(a, b, tolerance)))
    };
    predicted.len() == gold.len() && covered(&gold, &predicted) && covered(&predicted, &gold)
}

/// Normalised values: equal texts, or numbers within the tolerance.
fn equal_within(a: &str, b: &str, tolerance: f64) -> bool {
    a == b
        || match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => (x - y).abs() <= tolerance * x.abs().max(y.abs()),
            _ => false,
        }
}

/// Hits@1: whether the first value `result` returns is one of `gold`.
pub fn hits_at_1(gold: &[String], result: &QueryResult) -> bool {
    let Some(first) = result.rows.first().and_then(|row| row.first()) else {
        return false;
    };
    let first = normalise(&first.to_string());
    gold.iter().any(|g| normalise(g) == first)
}

/// An answer value as Hits@1 compares it: whitespace collapsed,
/// lowercase, a trailing full stop and surrounding quotes dropped,
/// numbers by value ("1994.0" is "1994").
pub(crate) fn normalise(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ").to_lowercase();
    let trimmed = joined.trim_end_matches('.').trim_matches('"');
    match parse_number(trimmed) {
        Some(number) if number.value.fract() == 0.0 && number.value.abs() < 1e15 => {
            format!("{}", number.value as i64)
        }
        Some(number) => format!("{}", number.value),
        None => trimmed.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Value;

    fn result(rows: Vec<Vec<Value>>) -> QueryResult {
        QueryResult {
            columns: vec!["a".into(); rows.first().map_or(1, Vec::len)],
            total_rows: rows.len(),
            rows,
            digest: crate::db::ResultDigest::new(1),
            elapsed_ms: 0.0,
        }
    }

    fn gold(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn numbers_compare_by_value_and_text_by_normalised_form() {
        assert!(denotes(
            &gold(&["12,467"]),
            &result(vec![vec![Value::Integer(12467)]]),
            0.0
        ));
        assert!(denotes(
            &gold(&["3"]),
            &result(vec![vec![Value::Real(3.0)]]),
            0.0
        ));
        assert!(denotes(
            &gold(&["Wolfe  Tones"]),
            &result(vec![vec![Value::Text("wolfe tones".into())]]),
            0.0
        ));
        assert!(!denotes(
            &gold(&["12,467"]),
            &result(vec![vec![Value::Integer(12468)]]),
            0.0
        ));
    }

    #[test]
    fn hits_at_1_takes_the_first_value() {
        let answers = gold(&["Greek", "English"]);
        let two = result(vec![
            vec![Value::Text("greek".into())],
            vec![Value::Text("French".into())],
        ]);
        assert!(hits_at_1(&answers, &two));
        assert!(!hits_at_1(&gold(&["French"]), &two));
        assert!(!hits_at_1(&answers, &result(vec![])));
    }

    #[test]
    fn lists_compare_as_sets() {
        let both = result(vec![
            vec![Value::Text("Andri Aganits".into())],
            vec![Value::Text("Siim Ennemuist".into())],
        ]);
        assert!(denotes(
            &gold(&["Siim Ennemuist", "Andri Aganits"]),
            &both,
            0.0
        ));
        assert!(!denotes(&gold(&["Siim Ennemuist"]), &both, 0.0));
        assert!(!denotes(&gold(&["x"]), &result(vec![]), 0.0));
    }

    #[test]
    fn a_relative_tolerance_lets_rounded_answers_match() {
        let mean = result(vec![vec![Value::Real(51.4444)]]);
        assert!(denotes(&gold(&["51.44"]), &mean, 1e-2));
        assert!(!denotes(&gold(&["51.44"]), &mean, 0.0));
        assert!(!denotes(&gold(&["53"]), &mean, 1e-2));
        assert!(denotes(
            &gold(&["37.64%"]),
            &result(vec![vec![Value::Real(37.6)]]),
            1e-2
        ));
        // Texts still compare exactly.
        assert!(!denotes(
            &gold(&["yes"]),
            &result(vec![vec![Value::Text("no".into())]]),
            1e-2
        ));
    }
}
