//! Rule-guided verification of the semantic state (method 2.2): each
//! claimed table, column, number, conversion and relation is matched to the
//! schema or the rule base and given a consistency score in [0, 1]; items
//! under the thresholds are dropped, and both lists are kept for the trace.

use super::rules::{ConversionCheck, RuleBase};
use super::state::SemanticState;
use super::text::{similarity, words};
use crate::db::Schema;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Thresholds {
    /// A relation must match a schema column or a rule at least this well.
    pub delta_match: f64,
    /// Items scoring below this are dropped.
    pub tau: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            delta_match: 0.5,
            tau: 0.5,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checked {
    /// table, column, key, number, conversion or relation.
    pub kind: &'static str,
    /// The item as the model wrote it.
    pub claim: String,
    /// What it was resolved to (a real column, a formula, ...).
    pub resolved: Option<String>,
    pub score: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Verified {
    pub kept: Vec<Checked>,
    pub dropped: Vec<Checked>,
}

impl Verified {
    pub fn kept_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Checked> + 'a {
        self.kept.iter().filter(move |c| c.kind == kind)
    }
}

pub fn verify(
    state: &SemanticState,
    schema: &Schema,
    question: &str,
    rules: &RuleBase,
    thresholds: Thresholds,
) -> Verified {
    let question_words = words(question);
    let mentioned = |text: &str| {
        let w = words(text);
        !w.is_empty() && w.iter().any(|x| question_words.contains(x))
    };
    let mut checks = Vec::new();
    for table in &state.tables {
        let found = resolve_table(schema, table);
        checks.push(Checked {
            kind: "table",
            claim: table.clone(),
            score: found.as_ref().map_or(0.0, |(_, s)| *s),
            resolved: found.map(|(t, _)| t),
        });
    }
    for (kind, names) in [("column", &state.columns), ("key", &state.keys)] {
        for name in names {
            let found = resolve_column(schema, name);
            let score = found.as_ref().map_or(0.0, |(_, s)| {
                // Keys are needed whether or not the question names them.
                let named = kind == "key" || mentioned(name);
                s * if named { 1.0 } else { 0.7 }
            });
            checks.push(Checked {
                kind,
                claim: name.clone(),
                score,
                resolved: found.map(|(c, _)| c),
            });
        }
    }
    for number in &state.numbers {
        let text = trim_number(number.value);
        let in_question = question.contains(&text) || question.replace(',', "").contains(&text);
        let unit_known = number
            .unit
            .as_deref()
            .is_none_or(|u| rules.unit(u).is_some());
        let score = if in_question { 0.8 } else { 0.2 } + if unit_known { 0.2 } else { 0.0 };
        let unit = number
            .unit
            .as_deref()
            .map(|u| format!(" {u}"))
            .unwrap_or_default();
        checks.push(Checked {
            kind: "number",
            claim: format!("{text}{unit}"),
            resolved: in_question.then(|| format!("{text}{unit}")),
            score,
        });
    }
    for conversion in &state.units {
        let (score, resolved) = match rules.check_conversion(&conversion.from, &conversion.to) {
            ConversionCheck::Valid(expression) => (1.0, Some(expression)),
            ConversionCheck::Mismatch { .. } => (0.0, None),
            ConversionCheck::Unknown(_) => (0.3, conversion.formula.clone()),
        };
        checks.push(Checked {
            kind: "conversion",
            claim: format!("{} -> {}", conversion.from, conversion.to),
            resolved: resolved.map(|e| format!("{} to {}: {e}", conversion.from, conversion.to)),
            score,
        });
    }
    for relation in &state.relations {
        let claim = format!(
            "{} {} {}",
            relation.subject, relation.relation, relation.object
        );
        let column = resolve_column(schema, &relation.object);
        let formula = rules.best_formula(&format!("{claim} {}", state.intent));
        let grounded = mentioned(&relation.subject) as u8 as f64;
        let (score, resolved) = match (column, formula) {
            (Some((column, sim)), _) if sim >= thresholds.delta_match => {
                (0.6 * sim + 0.4 * grounded, Some(column))
            }
            (_, Some((formula, sim))) if sim >= thresholds.delta_match => (
                0.5 * sim + 0.5 * grounded,
                Some(format!("{}: {}", formula.name, formula.expression)),
            ),
            _ => (0.0, None),
        };
        checks.push(Checked {
            kind: "relation",
            claim,
            resolved,
            score,
        });
    }
    let (kept, dropped) = checks
        .into_iter()
        .partition(|c| c.resolved.is_some() && c.score >= thresholds.tau);
    Verified { kept, dropped }
}

fn trim_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

fn unquote(name: &str) -> &str {
    name.trim()
        .trim_matches(|c| c == '`' || c == '"' || c == '[' || c == ']')
}

/// The schema's table closest to `name`, with its similarity.
pub fn resolve_table(schema: &Schema, name: &str) -> Option<(String, f64)> {
    let name = unquote(name);
    schema
        .tables
        .iter()
        .map(|t| {
            let s = if t.name.eq_ignore_ascii_case(name) {
                1.0
            } else {
                similarity(&t.name, name)
            };
            (t.name.clone(), s)
        })
        .filter(|(_, s)| *s >= 0.5)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The schema's column closest to `name` (`table.column` or `column`) as
/// `table.column`, with its similarity.
pub fn resolve_column(schema: &Schema, name: &str) -> Option<(String, f64)> {
    let name = unquote(name);
    let (table, column) = match name.rsplit_once('.') {
        Some((t, c)) => (Some(unquote(t)), unquote(c)),
        None => (None, name),
    };
    let mut best: Option<(String, f64)> = None;
    for t in &schema.tables {
        let table_sim = match table {
            Some(wanted) if t.name.eq_ignore_ascii_case(wanted) => 1.0,
            Some(wanted) => similarity(&t.name, wanted),
            None => 1.0,
        };
        for c in &t.columns {
            let column_sim = if c.name.eq_ignore_ascii_case(column) {
                1.0
            } else {
                similarity(&c.name, column)
            };
            let score = column_sim * (0.5 + 0.5 * table_sim);
            if score >= 0.5 && best.as_ref().is_none_or(|(_, s)| score > *s) {
                best = Some((format!("{}.{}", t.name, c.name), score));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::understand::state::{Conversion, Quantity, Relation};

    use crate::understand::demo::schema;

    #[test]
    fn keeps_what_the_schema_and_rules_support_and_drops_the_rest() {
        let state = SemanticState {
            tables: vec!["singers".into(), "planets".into()],
            columns: vec!["singer.age".into(), "singer.salary".into()],
            numbers: vec![
                Quantity {
                    value: 40.0,
                    unit: Some("years".into()),
                },
                Quantity {
                    value: 7.0,
                    unit: None,
                },
            ],
            units: vec![
                Conversion {
                    from: "km".into(),
                    to: "m".into(),
                    formula: None,
                },
                Conversion {
                    from: "kWh".into(),
                    to: "kW".into(),
                    formula: Some("x".into()),
                },
            ],
            relations: vec![Relation {
                subject: "singer".into(),
                relation: "has age".into(),
                object: "singer.Age".into(),
            }],
            ..SemanticState::default()
        };
        let question = "Which singers are older than 40?";
        let checked = verify(
            &state,
            &schema(),
            question,
            &RuleBase::builtin(),
            Thresholds::default(),
        );
        let kept: Vec<(&str, Option<&str>)> = checked
            .kept
            .iter()
            .map(|c| (c.kind, c.resolved.as_deref()))
            .collect();
        assert!(kept.contains(&("table", Some("singer"))), "{kept:?}");
        assert!(kept.contains(&("column", Some("singer.Age"))), "{kept:?}");
        assert!(kept.contains(&("number", Some("40 years"))), "{kept:?}");
        assert!(
            kept.contains(&("conversion", Some("km to m: x * 1000"))),
            "{kept:?}"
        );
        assert!(kept.contains(&("relation", Some("singer.Age"))), "{kept:?}");
        let dropped: Vec<&str> = checked.dropped.iter().map(|c| c.claim.as_str()).collect();
        assert!(dropped.contains(&"planets"));
        assert!(dropped.contains(&"singer.salary"));
        assert!(dropped.contains(&"7"));
        assert!(dropped.contains(&"kWh -> kW"));
    }
}
