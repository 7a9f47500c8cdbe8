//! How the one-call prompts tell a small model to read columns of JSON
//! text (`crate::db::json_shape`): shown only their keys in the schema, it
//! still compares the whole text (`preferences LIKE '%"newsletter": 1"%'`)
//! or reads the wrong column's keys. Keys are read with `->>`, the form
//! such a model writes of itself (told `json_extract`, it wrote neither);
//! an array is tested for an element by the element's quoted text, since
//! the name constraint keeps `json_each` out of a FROM clause.

use super::dates::{columns_where, listed};
use crate::db::json_shape::JsonShape;
use crate::db::render::example_literal;
use crate::db::{Schema, Value};
use crate::prompts::{JSON_ARRAYS, JSON_OBJECTS};

/// The paragraphs for `schema`, one for its columns of JSON objects and
/// one for those of arrays, each with a reading of its first column;
/// empty for a schema without JSON columns.
pub(super) fn paragraph(schema: &Schema) -> String {
    let mut text = String::new();
    let objects = columns_where(schema, |c| matches!(c.json, Some(JsonShape::Object(_))));
    if let Some(example) = first_reading(schema, object_reading) {
        let rendered =
            JSON_OBJECTS.render(&[("columns", &listed(&objects)), ("example", &example)]);
        text += rendered.trim_end();
        text.push('\n');
    }
    let arrays = columns_where(schema, |c| matches!(c.json, Some(JsonShape::Array(_))));
    if let (Some(column), Some(element)) = (arrays.first(), first_reading(schema, first_element)) {
        let rendered = JSON_ARRAYS.render(&[
            ("columns", &listed(&arrays)),
            ("column", column),
            ("element", &element),
        ]);
        text += rendered.trim_end();
        text.push('\n');
    }
    text
}

/// `reading` of the first column it reads, as `table.column`.
fn first_reading(
    schema: &Schema,
    reading: fn(&str, &JsonShape) -> Option<String>,
) -> Option<String> {
    schema.tables.iter().find_map(|table| {
        table.columns.iter().find_map(|column| {
            let name = format!("{}.{}", table.name, column.name);
            reading(&name, column.json.as_ref()?)
        })
    })
}

/// `t.c ->> 'key' = value` for an object column's first key (the form a
/// coder model writes unprompted; `json_extract` reads the same).
fn object_reading(column: &str, shape: &JsonShape) -> Option<String> {
    let JsonShape::Object(keys) = shape else {
        return None;
    };
    let (key, example) = keys.first()?;
    let read = format!("{column} ->> '{key}'");
    Some(match example {
        Some(value) => format!("{read} = {}", example_literal(value)),
        None => read,
    })
}

/// An array column's first text element, bare (for a LIKE pattern).
fn first_element(_column: &str, shape: &JsonShape) -> Option<String> {
    let JsonShape::Array(elements) = shape else {
        return None;
    };
    elements.iter().find_map(|element| match element {
        Value::Text(text) if !text.contains(['\'', '%', '_', '"']) => Some(text.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{Column, Table};

    fn column(name: &str, json: Option<JsonShape>) -> Column {
        Column {
            name: name.into(),
            declared_type: "TEXT".into(),
            primary_key: false,
            examples: Vec::new(),
            description: None,
            value_description: None,
            json,
        }
    }

    fn schema(columns: Vec<Column>) -> Schema {
        Schema {
            tables: vec![Table {
                name: "orders".into(),
                is_view: false,
                row_count: Some(3),
                columns,
                foreign_keys: Vec::new(),
            }],
        }
    }

    #[test]
    fn objects_and_arrays_are_named_with_how_to_read_them() {
        let attributes = JsonShape::Object(vec![
            ("color".into(), Some(Value::Text("red".into()))),
            ("size".into(), None),
        ]);
        let tags = JsonShape::Array(vec![Value::Text("gift".into())]);
        let text = paragraph(&schema(vec![
            column("id", None),
            column("attributes", Some(attributes)),
            column("tags", Some(tags)),
        ]));
        assert_eq!(
            text,
            "JSON: orders.attributes hold JSON objects; read a key with ->>, as in \
             orders.attributes ->> 'color' = 'red' (true and false read as 1 and 0).\n\
             JSON: orders.tags hold JSON arrays; json_array_length(orders.tags) counts the \
             elements of one, and orders.tags LIKE '%\"gift\"%' tests it for a text element.\n"
        );
    }

    #[test]
    fn a_schema_without_json_columns_gets_no_paragraph() {
        assert_eq!(paragraph(&schema(vec![column("id", None)])), "");
    }
}
