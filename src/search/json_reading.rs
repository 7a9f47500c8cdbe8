//! How the one-call prompts tell a small model to read columns of JSON
//! text (`crate::db::json_shape`): shown only their keys in the schema, it
//! still compares the whole text (`preferences LIKE '%"newsletter": 1"%'`)
//! or reads the wrong column's keys. Keys are read with `->>`, the form
//! such a model writes of itself (told `json_extract`, it wrote neither);
//! an array is tested for an element by the element's quoted text, since
//! the name constraint keeps `json_each` out of a FROM clause.

use super::dates::listed;
use crate::db::json_shape::JsonShape;
use crate::db::render::example_literal;
use crate::db::{Schema, Value};
use crate::prompts::{JSON_ARRAYS, JSON_OBJECTS};

/// The paragraphs for `schema`, one for its columns of JSON objects and
/// one for those of arrays, each with a reading of the first column that
/// has one; empty for a schema without JSON columns.
pub(super) fn paragraph(schema: &Schema) -> String {
    let columns: Vec<(String, &JsonShape)> = schema
        .tables
        .iter()
        .flat_map(|table| {
            table.columns.iter().filter_map(move |column| {
                Some((
                    format!("{}.{}", table.name, column.name),
                    column.json.as_ref()?,
                ))
            })
        })
        .collect();
    let named = |is_object: bool| -> Vec<String> {
        columns
            .iter()
            .filter(|(_, shape)| matches!(shape, JsonShape::Object(_)) == is_object)
            .map(|(name, _)| name.clone())
            .collect()
    };
    let mut text = String::new();
    if let Some(example) = columns
        .iter()
        .find_map(|(name, shape)| object_reading(name, shape))
    {
        let rendered =
            JSON_OBJECTS.render(&[("columns", &listed(&named(true))), ("example", &example)]);
        text += rendered.trim_end();
        text.push('\n');
    }
    let array_example = columns
        .iter()
        .find_map(|(name, shape)| Some((name, first_element(shape)?)));
    if let Some((column, element)) = array_example {
        let rendered = JSON_ARRAYS.render(&[
            ("columns", &listed(&named(false))),
            ("column", column),
            ("element", &element),
        ]);
        text += rendered.trim_end();
        text.push('\n');
    }
    text
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
fn first_element(shape: &JsonShape) -> Option<String> {
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
    fn the_array_example_reads_the_column_whose_element_it_shows() {
        let numbers = JsonShape::Array(vec![Value::Integer(3)]);
        let tags = JsonShape::Array(vec![Value::Text("gift".into())]);
        let text = paragraph(&schema(vec![
            column("sizes", Some(numbers)),
            column("tags", Some(tags)),
        ]));
        assert!(
            text.contains(
                "JSON: orders.sizes, orders.tags hold JSON arrays; json_array_length(orders.tags)"
            ),
            "{text}"
        );
        assert!(text.contains("orders.tags LIKE '%\"gift\"%'"), "{text}");
    }

    #[test]
    fn a_schema_without_json_columns_gets_no_paragraph() {
        assert_eq!(paragraph(&schema(vec![column("id", None)])), "");
    }
}
