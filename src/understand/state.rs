//! The semantic state: stage 1's structured reading of the question. Read
//! leniently from whatever the model wrote; a field of the wrong shape is
//! dropped rather than failing the whole state.

use super::literal::parse_object;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SemanticState {
    /// A snake_case phrase such as `average_speed_per_driver`.
    pub intent: String,
    /// Among mathematical, physical, commonsense, hypothetical.
    pub reasoning_types: Vec<String>,
    pub entities: Vec<String>,
    pub relations: Vec<Relation>,
    pub numbers: Vec<Quantity>,
    pub units: Vec<Conversion>,
    /// Key columns (table.column) the joins need.
    pub keys: Vec<String>,
    pub tables: Vec<String>,
    /// table.column names.
    pub columns: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Relation {
    pub subject: String,
    pub relation: String,
    /// Another entity, or a table.column.
    pub object: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantity {
    pub value: f64,
    pub unit: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Conversion {
    pub from: String,
    pub to: String,
    pub formula: Option<String>,
}

/// Reads a model's answer as a semantic state. Anything unreadable gives an
/// empty state and the reason; no input makes this panic.
pub fn parse_semantic_state(text: &str) -> (SemanticState, Option<String>) {
    match parse_object(text) {
        Ok(Value::Object(map)) => {
            let field = |names: &[&str]| names.iter().find_map(|n| map.get(*n));
            let state = SemanticState {
                intent: field(&["intent"]).map(scalar_text).unwrap_or_default(),
                reasoning_types: strings(field(&["reasoning_types", "reasoning_type", "types"])),
                entities: strings(field(&["entities"])),
                relations: list(field(&["relations"]), relation),
                numbers: list(field(&["numbers"]), quantity),
                units: list(
                    field(&["units", "conversions", "unit_conversions"]),
                    conversion,
                ),
                keys: strings(field(&["keys", "primary_foreign_keys"])),
                tables: strings(field(&["tables", "relevant_tables"])),
                columns: strings(field(&["columns", "relevant_columns"])),
            };
            (state, None)
        }
        Ok(other) => (
            SemanticState::default(),
            Some(format!("expected an object, got {}", kind(&other))),
        ),
        Err(e) => (SemanticState::default(), Some(e)),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        _ => "something else",
    }
}

/// A string, number or bool as text; objects and lists give nothing.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    let texts: Vec<String> = match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                // {"name": ...} or {"table": ..., "column": ...}
                Value::Object(m) => match (m.get("table"), m.get("column")) {
                    (Some(t), Some(c)) => format!("{}.{}", scalar_text(t), scalar_text(c)),
                    _ => m.get("name").map(scalar_text).unwrap_or_default(),
                },
                other => scalar_text(other),
            })
            .collect(),
        Some(Value::String(s)) => s.split(',').map(|p| p.trim().to_string()).collect(),
        _ => Vec::new(),
    };
    texts.into_iter().filter(|t| !t.is_empty()).collect()
}

fn list<T>(value: Option<&Value>, read: fn(&Value) -> Option<T>) -> Vec<T> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(read).collect(),
        Some(other @ Value::Object(_)) => read(other).into_iter().collect(),
        _ => Vec::new(),
    }
}

fn text_of(map: &serde_json::Map<String, Value>, names: &[&str]) -> String {
    names
        .iter()
        .find_map(|n| map.get(*n).map(scalar_text))
        .unwrap_or_default()
}

fn relation(value: &Value) -> Option<Relation> {
    match value {
        Value::Object(m) => Some(Relation {
            subject: text_of(m, &["subject", "entity", "from", "head"]),
            relation: text_of(m, &["relation", "predicate", "type"]),
            object: text_of(m, &["object", "to", "column", "tail", "target"]),
        })
        .filter(|r| !r.subject.is_empty() || !r.object.is_empty()),
        Value::Array(parts) if parts.len() == 3 => Some(Relation {
            subject: scalar_text(&parts[0]),
            relation: scalar_text(&parts[1]),
            object: scalar_text(&parts[2]),
        }),
        _ => None,
    }
}

fn quantity(value: &Value) -> Option<Quantity> {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().replace(',', "").parse().ok(),
        _ => None,
    };
    match value {
        Value::Object(m) => Some(Quantity {
            value: m
                .get("value")
                .or_else(|| m.get("number"))
                .and_then(number)?,
            unit: m.get("unit").map(scalar_text).filter(|u| !u.is_empty()),
        }),
        other => number(other).map(|value| Quantity { value, unit: None }),
    }
}

fn conversion(value: &Value) -> Option<Conversion> {
    let Value::Object(m) = value else {
        return None;
    };
    let conversion = Conversion {
        from: text_of(m, &["from", "from_unit", "source"]),
        to: text_of(m, &["to", "to_unit", "target"]),
        formula: Some(text_of(m, &["formula", "expression", "conversion"]))
            .filter(|f| !f.is_empty()),
    };
    (!conversion.from.is_empty() && !conversion.to.is_empty()).then_some(conversion)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_full_state_from_json() {
        let text = r#"```json
{"intent": "average_speed", "reasoning_types": ["mathematical", "physical"],
 "entities": ["Lewis Hamilton"], "relations": [{"subject": "speed", "relation": "stored_in", "object": "laps.time"}],
 "numbers": [{"value": "2,000", "unit": "km"}, 3], "units": [{"from": "km", "to": "m", "formula": "x * 1000"}],
 "keys": ["drivers.driverId"], "tables": ["drivers", "laps"], "columns": [{"table": "laps", "column": "time"}]}
```"#;
        let (state, error) = parse_semantic_state(text);
        assert_eq!(error, None);
        assert_eq!(state.intent, "average_speed");
        assert_eq!(state.relations[0].object, "laps.time");
        assert_eq!(
            state.numbers,
            vec![
                Quantity {
                    value: 2000.0,
                    unit: Some("km".into())
                },
                Quantity {
                    value: 3.0,
                    unit: None
                },
            ]
        );
        assert_eq!(state.units[0].formula.as_deref(), Some("x * 1000"));
        assert_eq!(state.columns, vec!["laps.time"]);
    }

    #[test]
    fn reads_python_dicts_and_odd_shapes() {
        let text = "Sure! {'intent': 'count', 'entities': 'France, Paris', 'relations': [('singer', 'from', 'singer.Country')], 'tables': ['singer'], 'numbers': None}";
        let (state, error) = parse_semantic_state(text);
        assert_eq!(error, None);
        assert_eq!(state.entities, vec!["France", "Paris"]);
        assert_eq!(state.relations[0].object, "singer.Country");
        assert!(state.numbers.is_empty());
    }

    #[test]
    fn malformed_output_gives_an_empty_state_and_a_reason() {
        for text in [
            "",
            "I cannot answer.",
            "[1, 2]",
            "{'intent': }",
            "{{{{",
            "\u{feff}{\"a\"",
            "{\"relations\": [[1], {}, 7]}",
        ] {
            let (state, error) = parse_semantic_state(text);
            if error.is_some() {
                assert_eq!(state, SemanticState::default(), "{text}");
            }
        }
        let (_, error) = parse_semantic_state("no json");
        assert!(error.is_some());
    }
}
