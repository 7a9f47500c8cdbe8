//! Renders a schema as annotated DDL for prompts: models read CREATE TABLE
//! well, and the comments carry row counts, descriptions and real example
//! values. A size budget lowers the detail step by step until it fits.

use super::json_shape::JsonShape;
use super::schema::{quote_identifier, quote_literal, Column, Schema, Table};
use super::value::Value;
use std::fmt::Write;

/// How much annotation to write per column, from richest to barest.
#[derive(Debug, Clone, Copy)]
struct Detail {
    description_chars: usize,
    value_note_chars: usize,
    examples: usize,
}

const LEVELS: [Detail; 4] = [
    Detail {
        description_chars: 120,
        value_note_chars: 100,
        examples: 3,
    },
    Detail {
        description_chars: 60,
        value_note_chars: 0,
        examples: 2,
    },
    Detail {
        description_chars: 0,
        value_note_chars: 0,
        examples: 2,
    },
    Detail {
        description_chars: 0,
        value_note_chars: 0,
        examples: 0,
    },
];

/// Renders the whole schema within `max_chars` characters, using the richest
/// detail level that fits; if even the barest does not, whole tables are left
/// out from the end and a closing comment says how many.
pub fn render_schema(schema: &Schema, max_chars: usize) -> String {
    for detail in LEVELS {
        let text = render_tables(&schema.tables, detail);
        if text.chars().count() <= max_chars {
            return text;
        }
    }
    let detail = LEVELS[LEVELS.len() - 1];
    let mut out = String::new();
    for (shown, table) in schema.tables.iter().enumerate() {
        let block = render_table(table, detail);
        let omitted = schema.tables.len() - shown;
        let note = format!("-- {omitted} more tables not shown\n");
        if out.chars().count() + block.chars().count() + note.chars().count() > max_chars {
            out.push_str(&note);
            return out;
        }
        out.push_str(&block);
    }
    out
}

fn render_tables(tables: &[Table], detail: Detail) -> String {
    tables.iter().map(|t| render_table(t, detail)).collect()
}

fn render_table(table: &Table, detail: Detail) -> String {
    let mut out = String::new();
    let rows = match table.row_count {
        Some(1) => " -- 1 row".to_string(),
        Some(n) => format!(" -- {n} rows"),
        None => String::new(),
    };
    let kind = if table.is_view { "VIEW" } else { "TABLE" };
    let _ = writeln!(
        out,
        "CREATE {kind} {} ({rows}",
        quote_identifier(&table.name)
    );
    let primary_keys = table.primary_key_columns();
    let mut lines: Vec<(String, String)> = Vec::new();
    for column in &table.columns {
        let mut definition = quote_identifier(&column.name);
        if !column.declared_type.is_empty() {
            definition.push(' ');
            definition.push_str(&column.declared_type);
        }
        if column.primary_key && primary_keys.len() == 1 {
            definition.push_str(" PRIMARY KEY");
        }
        let foreign_key = table
            .foreign_keys
            .iter()
            .find(|fk| fk.column == column.name);
        if let Some(fk) = foreign_key {
            let target = fk
                .foreign_column
                .as_deref()
                .map(|c| format!("({})", quote_identifier(c)))
                .unwrap_or_default();
            let _ = write!(
                definition,
                " REFERENCES {}{target}",
                quote_identifier(&fk.foreign_table)
            );
        }
        let is_key = column.primary_key || foreign_key.is_some();
        let examples = if is_key && holds_generated_codes(column) {
            0
        } else {
            detail.examples
        };
        lines.push((definition, column_comment(column, detail, examples)));
    }
    if primary_keys.len() > 1 {
        let keys: Vec<String> = primary_keys.iter().map(|k| quote_identifier(k)).collect();
        lines.push((format!("PRIMARY KEY ({})", keys.join(", ")), String::new()));
    }
    let last = lines.len().saturating_sub(1);
    for (i, (definition, comment)) in lines.iter().enumerate() {
        let comma = if i < last { "," } else { "" };
        if comment.is_empty() {
            let _ = writeln!(out, "  {definition}{comma}");
        } else {
            let _ = writeln!(out, "  {definition}{comma} -- {comment}");
        }
    }
    out.push_str(");\n");
    out
}

/// Whether a column's example values are generated codes, every one a
/// run of letters and digits (`'rec0akZnLLpGUloLH'`, `'PK-0012'`). Shown
/// for a key, a model copies one in place of joining the row the question
/// names (`WHERE link_to_event = 'rec0akZnLLpGUloLH'` for an event named
/// in the question); a code a question may quote (`'AKO'`) or a number
/// stays.
fn holds_generated_codes(column: &Column) -> bool {
    !column.examples.is_empty()
        && column.examples.iter().all(|value| match value {
            Value::Text(s) => {
                s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    && s.contains(|c: char| c.is_ascii_digit())
                    && s.contains(|c: char| c.is_ascii_alphabetic())
            }
            _ => false,
        })
}

/// The comment after a column's definition: its description, notes on its
/// values, and up to `examples` example values.
fn column_comment(column: &Column, detail: Detail, examples: usize) -> String {
    let mut parts = Vec::new();
    if let Some(description) = &column.description {
        if detail.description_chars > 0 && !description.eq_ignore_ascii_case(&column.name) {
            parts.push(cut(description, detail.description_chars));
        }
    }
    if let Some(note) = &column.value_description {
        if detail.value_note_chars > 0 {
            parts.push(cut(note, detail.value_note_chars));
        }
    }
    if let Some(shape) = &column.json {
        parts.push(json_comment(shape, examples > 0));
    } else if examples > 0 && !column.examples.is_empty() {
        let examples: Vec<String> = column
            .examples
            .iter()
            .take(examples)
            .map(example_literal)
            .collect();
        parts.push(format!("e.g. {}", examples.join(", ")));
    }
    parts.join("; ")
}

/// A JSON column's keys (an object's) or elements (an array's), in place of
/// its examples, whose text is cut before most keys.
fn json_comment(shape: &JsonShape, with_examples: bool) -> String {
    match shape {
        JsonShape::Object(keys) => {
            let keys: Vec<String> = keys
                .iter()
                .map(|(key, example)| match example {
                    Some(value) if with_examples => {
                        format!("{key} (e.g. {})", example_literal(value))
                    }
                    _ => key.clone(),
                })
                .collect();
            format!("JSON object; keys: {}", keys.join(", "))
        }
        JsonShape::Array(elements) if with_examples && !elements.is_empty() => {
            let elements: Vec<String> = elements.iter().map(example_literal).collect();
            format!("JSON array; elements e.g. {}", elements.join(", "))
        }
        JsonShape::Array(_) => "JSON array".to_string(),
    }
}

/// `value` as the schema shows it: a text quoted as an SQL literal, on one
/// line.
pub fn example_literal(value: &Value) -> String {
    match value {
        Value::Text(s) => quote_literal(&one_line(s)),
        other => other.to_string(),
    }
}

/// `s` with every run of whitespace (newlines included) one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(s: &str, max_chars: usize) -> String {
    let s = one_line(s);
    if s.chars().count() <= max_chars {
        s
    } else {
        let kept: String = s.chars().take(max_chars).collect();
        format!("{}…", kept.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{Column, ForeignKey};

    fn column(name: &str, ty: &str, pk: bool, examples: Vec<Value>) -> Column {
        Column {
            name: name.into(),
            declared_type: ty.into(),
            primary_key: pk,
            examples,
            description: Some(format!("the {name} of the thing")),
            value_description: None,
            json: None,
        }
    }

    fn schema(tables: usize) -> Schema {
        Schema {
            tables: (0..tables)
                .map(|i| Table {
                    name: format!("t{i}"),
                    is_view: false,
                    row_count: Some(10),
                    columns: vec![
                        column("id", "INTEGER", true, vec![Value::Integer(1)]),
                        column("name", "TEXT", false, vec![Value::Text("it's".into())]),
                        column("parent", "INTEGER", false, vec![]),
                    ],
                    foreign_keys: vec![ForeignKey {
                        column: "parent".into(),
                        foreign_table: "t0".into(),
                        foreign_column: Some("id".into()),
                        implied: false,
                    }],
                })
                .collect(),
        }
    }

    #[test]
    fn renders_annotated_ddl() {
        let text = render_schema(&schema(1), 10_000);
        assert_eq!(
            text,
            "CREATE TABLE t0 ( -- 10 rows\n  \
             id INTEGER PRIMARY KEY, -- the id of the thing; e.g. 1\n  \
             name TEXT, -- the name of the thing; e.g. 'it''s'\n  \
             parent INTEGER REFERENCES t0(id) -- the parent of the thing\n);\n"
        );
    }

    #[test]
    fn json_columns_show_their_keys_or_elements_in_place_of_cut_texts() {
        let text = |s: &str| Value::Text(s.into());
        let mut schema = schema(1);
        let table = &mut schema.tables[0];
        table.columns[1].examples = vec![text(r#"{"color": "red", "size": "M", "materi"#)];
        table.columns[1].json = Some(JsonShape::Object(vec![
            ("color".into(), Some(text("red"))),
            ("note".into(), None),
        ]));
        table.columns[2].json = Some(JsonShape::Array(vec![text("gift"), Value::Integer(2)]));
        let rendered = render_schema(&schema, 10_000);
        assert!(
            rendered.contains(
                "name TEXT, -- the name of the thing; JSON object; keys: color (e.g. 'red'), note\n"
            ),
            "{rendered}"
        );
        assert!(
            rendered.contains("-- the parent of the thing; JSON array; elements e.g. 'gift', 2\n"),
            "{rendered}"
        );
    }

    #[test]
    fn keys_holding_generated_codes_show_no_examples() {
        let text = |s: &str| Value::Text(s.into());
        let mut schema = schema(1);
        let table = &mut schema.tables[0];
        table.columns[0].examples = vec![text("rec0akZnLLpGUloLH"), text("recD078PnS3x2doBe")];
        table.columns[1].examples = vec![text("rec0akZnLLpGUloLH")];
        table.columns[2].examples = vec![text("PK-0012")];
        let rendered = render_schema(&schema, 10_000);
        assert!(
            rendered.contains("id INTEGER PRIMARY KEY, -- the id of the thing\n"),
            "{rendered}"
        );
        assert!(
            rendered.contains("REFERENCES t0(id) -- the parent of the thing\n"),
            "{rendered}"
        );
        // Not a key: its values may be what a question quotes.
        assert!(rendered.contains("e.g. 'rec0akZnLLpGUloLH'"), "{rendered}");

        for kept in ["AKO", "2020-03-10T12:00:00", "Women's Soccer"] {
            schema.tables[0].columns[0].examples = vec![text(kept)];
            let rendered = render_schema(&schema, 10_000);
            assert!(
                rendered.contains(&example_literal(&text(kept))),
                "{rendered}"
            );
        }
    }

    #[test]
    fn budget_drops_detail_then_tables() {
        let full = render_schema(&schema(3), 10_000);
        let bare = render_schema(&schema(3), full.len() - 1);
        assert!(bare.len() < full.len());
        let cut = render_schema(&schema(3), 150);
        assert!(cut.chars().count() <= 150, "{cut}");
        assert!(cut.ends_with("more tables not shown\n"), "{cut}");
    }
}
