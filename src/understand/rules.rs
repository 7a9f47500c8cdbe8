//! The rule base: units with their dimension and conversion factor, and
//! common formulas with the words that signal them. Data, in
//! `rules/units.toml`; `RuleBase::load` reads another file of the same shape.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unit {
    pub names: Vec<String>,
    pub dimension: String,
    /// Multiplying by this gives the dimension's base unit ...
    pub factor: f64,
    /// ... after which this is added (temperatures only).
    #[serde(default)]
    pub offset: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Formula {
    pub name: String,
    pub keywords: Vec<String>,
    /// The formula as a SQLite expression over named quantities.
    pub expression: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RuleBase {
    #[serde(rename = "unit")]
    pub units: Vec<Unit>,
    #[serde(rename = "formula")]
    pub formulas: Vec<Formula>,
}

/// Whether converting between two units is possible, and how.
#[derive(Debug, Clone, PartialEq)]
pub enum ConversionCheck {
    /// Same dimension: the SQLite expression turning `x` in the first unit
    /// into the second.
    Valid(String),
    /// Different dimensions, such as energy and power.
    Mismatch { from: String, to: String },
    /// A unit the rule base does not know.
    Unknown(String),
}

impl RuleBase {
    pub fn builtin() -> Self {
        toml::from_str(include_str!("../../rules/units.toml")).expect("the built-in rules parse")
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        toml::from_str(&text).map_err(|e| {
            Error::InvalidArgument(format!(
                "rule file {} is not valid: {}",
                path.display(),
                crate::error::first_line(e)
            ))
        })
    }

    pub fn unit(&self, name: &str) -> Option<&Unit> {
        let wanted = name.trim().trim_end_matches('.').to_lowercase();
        self.units.iter().find(|u| u.names.contains(&wanted))
    }

    pub fn check_conversion(&self, from: &str, to: &str) -> ConversionCheck {
        let (Some(a), Some(b)) = (self.unit(from), self.unit(to)) else {
            let unknown = if self.unit(from).is_none() { from } else { to };
            return ConversionCheck::Unknown(unknown.to_string());
        };
        if a.dimension != b.dimension {
            return ConversionCheck::Mismatch {
                from: a.dimension.clone(),
                to: b.dimension.clone(),
            };
        }
        // base = x * a.factor + a.offset; target = (base - b.offset) / b.factor
        let scale = a.factor / b.factor;
        let shift = (a.offset - b.offset) / b.factor;
        let mut expression = if (scale - 1.0).abs() < 1e-12 {
            "x".to_string()
        } else {
            format!("x * {}", short_number(scale))
        };
        if shift.abs() > 1e-9 {
            let sign = if shift < 0.0 { '-' } else { '+' };
            expression = format!("{expression} {sign} {}", short_number(shift.abs()));
        }
        ConversionCheck::Valid(expression)
    }

    /// The formula whose keywords best cover `text`, with a similarity in
    /// [0, 1]: two matching keywords count as a full match.
    pub fn best_formula(&self, text: &str) -> Option<(&Formula, f64)> {
        let words = super::text::words(text);
        let phrase = words.join(" ");
        self.formulas
            .iter()
            .map(|f| {
                let hits = f
                    .keywords
                    .iter()
                    .filter(|k| {
                        if k.contains(' ') {
                            phrase.contains(k.as_str())
                        } else {
                            words.iter().any(|w| w == *k)
                        }
                    })
                    .count();
                (f, hits)
            })
            // One shared word ("volume", "speed") is too weak a sign.
            .filter(|&(_, hits)| hits >= 2)
            .map(|(f, hits)| (f, (hits as f64 / 2.0).min(1.0)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

fn short_number(x: f64) -> String {
    let text = format!("{x:.10}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_dimensions_and_factors() {
        let rules = RuleBase::builtin();
        assert_eq!(
            rules.check_conversion("km", "m"),
            ConversionCheck::Valid("x * 1000".into())
        );
        assert_eq!(
            rules.check_conversion("Celsius", "fahrenheit"),
            ConversionCheck::Valid("x * 1.8 + 32".into())
        );
        assert_eq!(
            rules.check_conversion("kWh", "kW"),
            ConversionCheck::Mismatch {
                from: "energy".into(),
                to: "power".into()
            }
        );
        assert_eq!(
            rules.check_conversion("parsec", "m"),
            ConversionCheck::Unknown("parsec".into())
        );
    }

    #[test]
    fn formulas_are_found_by_their_words() {
        let rules = RuleBase::builtin();
        let (formula, similarity) = rules
            .best_formula("the average speed over the distance")
            .unwrap();
        assert_eq!(formula.name, "speed");
        assert_eq!(similarity, 1.0);
        assert!(rules.best_formula("name of the singer").is_none());
        // One shared word is not enough.
        assert!(rules
            .best_formula("average freight volume per movement")
            .is_none());
    }
}
