//! When two query results count as the same answer.

use super::digest::ResultDigest;
use std::collections::{HashMap, HashSet};

/// Which evaluator's rule to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Semantics {
    /// BIRD: rows compared as a set (order and duplicates ignored), column
    /// order matters, 1 equals 1.0, NULL equals NULL.
    Bird,
    /// Spider test-suite: rows as a multiset (a list when the gold query
    /// orders them), columns may be permuted.
    Spider,
}

/// BIRD's rule: `set(gold_rows) == set(pred_rows)`.
pub fn bird_equal(gold: &ResultDigest, pred: &ResultDigest) -> bool {
    row_set(gold) == row_set(pred)
}

fn row_set(result: &ResultDigest) -> HashSet<u128> {
    result.rows().map(ResultDigest::row_hash).collect()
}

/// Most column permutations to try before giving up (a wide result whose
/// columns all hold the same values could otherwise explode factorially).
const MAX_PERMUTATIONS: usize = 10_000;

/// Spider's test-suite rule: same number of rows and columns, and some
/// permutation of the predicted columns makes the rows equal as a multiset,
/// or as a sequence when `order_matters`.
pub fn spider_equal(gold: &ResultDigest, pred: &ResultDigest, order_matters: bool) -> bool {
    if gold.row_count() == 0 && pred.row_count() == 0 {
        return true;
    }
    if gold.row_count() != pred.row_count() || gold.width() != pred.width() {
        return false;
    }
    // A gold column can only map to a predicted column holding the same
    // multiset of values.
    let gold_columns = column_signatures(gold);
    let pred_columns = column_signatures(pred);
    let candidates: Vec<Vec<usize>> = gold_columns
        .iter()
        .map(|g| {
            (0..pred_columns.len())
                .filter(|&j| pred_columns[j] == *g)
                .collect()
        })
        .collect();
    let gold_rows: Vec<u128> = gold.rows().map(ResultDigest::row_hash).collect();
    let gold_multiset = multiset(&gold_rows);
    let mut permutation = Vec::with_capacity(gold.width());
    let mut used = vec![false; gold.width()];
    let mut budget = MAX_PERMUTATIONS;
    search_permutation(
        &candidates,
        &mut permutation,
        &mut used,
        &mut budget,
        &mut |perm| {
            let permuted: Vec<u128> = pred
                .rows()
                .map(|row| {
                    let reordered: Vec<u64> = perm.iter().map(|&j| row[j]).collect();
                    ResultDigest::row_hash(&reordered)
                })
                .collect();
            if order_matters {
                permuted == gold_rows
            } else {
                multiset(&permuted) == gold_multiset
            }
        },
    )
}

/// Depth-first search over bijections gold column -> predicted column,
/// stopping at the first one `accept` approves.
fn search_permutation(
    candidates: &[Vec<usize>],
    permutation: &mut Vec<usize>,
    used: &mut [bool],
    budget: &mut usize,
    accept: &mut dyn FnMut(&[usize]) -> bool,
) -> bool {
    let column = permutation.len();
    if column == candidates.len() {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        return accept(permutation);
    }
    for &j in &candidates[column] {
        if used[j] {
            continue;
        }
        used[j] = true;
        permutation.push(j);
        let found = search_permutation(candidates, permutation, used, budget, accept);
        permutation.pop();
        used[j] = false;
        if found {
            return true;
        }
        if *budget == 0 {
            return false;
        }
    }
    false
}

fn column_signatures(result: &ResultDigest) -> Vec<Vec<u64>> {
    (0..result.width())
        .map(|i| {
            let mut column: Vec<u64> = result.rows().map(|row| row[i]).collect();
            column.sort_unstable();
            column
        })
        .collect()
}

fn multiset(rows: &[u128]) -> HashMap<u128, usize> {
    let mut counts = HashMap::with_capacity(rows.len());
    for &row in rows {
        *counts.entry(row).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    //! The rules, pinned on tricky pairs. Each row: gold rows, predicted rows,
    //! whether the gold orders its rows, expected BIRD verdict, expected
    //! Spider verdict.
    use super::*;
    use crate::db::value::Value::{self, Integer as I, Null, Real as R};

    fn t(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn digest(rows: &[Vec<Value>]) -> ResultDigest {
        let width = rows.first().map_or(1, Vec::len);
        ResultDigest::from_rows(width, rows)
    }

    #[test]
    fn tricky_pairs() {
        type Rows = Vec<Vec<Value>>;
        let cases: Vec<(&str, Rows, Rows, bool, bool, bool)> = vec![
            (
                "int equals real",
                vec![vec![I(1)]],
                vec![vec![R(1.0)]],
                false,
                true,
                true,
            ),
            (
                "real fraction differs",
                vec![vec![I(1)]],
                vec![vec![R(1.5)]],
                false,
                false,
                false,
            ),
            (
                "text is not a number",
                vec![vec![I(1)]],
                vec![vec![t("1")]],
                false,
                false,
                false,
            ),
            (
                "float noise is not rounded",
                vec![vec![R(0.3)]],
                vec![vec![R(0.1 + 0.2)]],
                false,
                false,
                false,
            ),
            (
                "same float",
                vec![vec![R(0.1 + 0.2)]],
                vec![vec![R(0.1 + 0.2)]],
                false,
                true,
                true,
            ),
            (
                "row order ignored without ORDER BY",
                vec![vec![I(1)], vec![I(2)]],
                vec![vec![I(2)], vec![I(1)]],
                false,
                true,
                true,
            ),
            (
                "row order matters with ORDER BY (Spider only)",
                vec![vec![I(1)], vec![I(2)]],
                vec![vec![I(2)], vec![I(1)]],
                true,
                true,
                false,
            ),
            (
                "duplicates: set vs multiset",
                vec![vec![I(1)], vec![I(1)], vec![I(2)]],
                vec![vec![I(1)], vec![I(2)]],
                false,
                true,
                false,
            ),
            (
                "NULL equals NULL",
                vec![vec![Null]],
                vec![vec![Null]],
                false,
                true,
                true,
            ),
            (
                "NULL is not zero",
                vec![vec![Null]],
                vec![vec![I(0)]],
                false,
                false,
                false,
            ),
            (
                "column order: BIRD strict, Spider permutes",
                vec![vec![I(1), t("a")], vec![I(2), t("b")]],
                vec![vec![t("a"), I(1)], vec![t("b"), I(2)]],
                false,
                false,
                true,
            ),
            (
                "a permutation must keep rows together",
                vec![vec![I(1), I(2)], vec![I(3), I(4)]],
                vec![vec![I(1), I(4)], vec![I(3), I(2)]],
                false,
                false,
                false,
            ),
            (
                "extra column is wrong",
                vec![vec![I(1)]],
                vec![vec![I(1), I(2)]],
                false,
                false,
                false,
            ),
            ("empty equals empty", vec![], vec![], false, true, true),
            (
                "empty is not a NULL row",
                vec![],
                vec![vec![Null]],
                false,
                false,
                false,
            ),
        ];
        for (name, gold, pred, ordered, bird, spider) in cases {
            let (g, p) = (digest(&gold), digest(&pred));
            assert_eq!(bird_equal(&g, &p), bird, "BIRD: {name}");
            assert_eq!(spider_equal(&g, &p, ordered), spider, "Spider: {name}");
        }
    }
}
