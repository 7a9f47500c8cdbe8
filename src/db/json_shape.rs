//! Columns that hold JSON text: a product's attributes, a customer's
//! address, an event's payload as an object, an order's tags as an array.
//! Their examples, cut to a few dozen characters, hide most keys, and a
//! small model compares the whole text (`attributes = 'red'`, `LIKE
//! '%red%'`); named with their keys, they are read with SQLite's JSON
//! functions instead.

use super::schema::quote_identifier;
use super::value::Value;
use rusqlite::Connection;
use serde::Serialize;

/// Rows of a column read to learn its shape.
const SAMPLED_ROWS: usize = 200;
/// Keys named at most, the most frequent first (then in alphabetical
/// order).
const MAX_KEYS: usize = 12;
/// Array elements shown at most.
const MAX_ELEMENTS: usize = 4;
/// An example value longer than this (a nested object) is not shown.
const MAX_VALUE_CHARS: usize = 24;

/// What every sampled value of a JSON column is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum JsonShape {
    /// Objects: their keys, the most frequent first, each with a value one
    /// of them holds as `json_extract` returns it (true as 1); None where
    /// that value is too long to show.
    Object(Vec<(String, Option<Value>)>),
    /// Arrays, with some of their elements.
    Array(Vec<Value>),
}

/// The shape of `column` of `quoted_table` when its sampled values are all
/// JSON objects or all JSON arrays; None otherwise. Only a column whose
/// `examples` are texts opening with `{` or `[` is read.
pub fn json_shape(
    conn: &Connection,
    quoted_table: &str,
    column: &str,
    examples: &[Value],
) -> rusqlite::Result<Option<JsonShape>> {
    let opens_json = |value: &Value| match value {
        Value::Text(text) => text.trim_start().starts_with(['{', '[']),
        _ => false,
    };
    if examples.is_empty() || !examples.iter().all(opens_json) {
        return Ok(None);
    }
    let quoted_column = quote_identifier(column);
    let sample = format!(
        "(SELECT {quoted_column} AS j FROM {quoted_table} WHERE {quoted_column} IS NOT NULL LIMIT {SAMPLED_ROWS})"
    );
    let (rows, objects, arrays): (i64, i64, i64) = conn.query_row(
        &format!(
            "SELECT COUNT(*), \
             COALESCE(SUM(CASE WHEN json_valid(j) THEN json_type(j) = 'object' END), 0), \
             COALESCE(SUM(CASE WHEN json_valid(j) THEN json_type(j) = 'array' END), 0) \
             FROM {sample}"
        ),
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?;
    if rows == 0 {
        Ok(None)
    } else if objects == rows {
        let mut statement = conn.prepare(&format!(
            "SELECT e.key, MIN(e.value), COUNT(*) FROM {sample} AS s, json_each(s.j) AS e \
             GROUP BY e.key ORDER BY COUNT(*) DESC, e.key LIMIT {MAX_KEYS}"
        ))?;
        let keys = statement.query_map([], |row| {
            let example = Value::from_ref(row.get_ref(1)?);
            let shown = match &example {
                Value::Text(text) if text.chars().count() > MAX_VALUE_CHARS => None,
                Value::Null => None,
                _ => Some(example),
            };
            Ok((row.get::<_, String>(0)?, shown))
        })?;
        Ok(Some(JsonShape::Object(
            keys.collect::<rusqlite::Result<_>>()?,
        )))
    } else if arrays == rows {
        let mut statement = conn.prepare(&format!(
            "SELECT DISTINCT e.value FROM {sample} AS s, json_each(s.j) AS e \
             WHERE e.type NOT IN ('object', 'array') LIMIT {MAX_ELEMENTS}"
        ))?;
        let elements = statement.query_map([], |row| Ok(Value::from_ref(row.get_ref(0)?)))?;
        Ok(Some(JsonShape::Array(
            elements.collect::<rusqlite::Result<_>>()?,
        )))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(values: &[&str]) -> Option<JsonShape> {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute("CREATE TABLE t (c TEXT)", []).unwrap();
        for value in values {
            conn.execute("INSERT INTO t VALUES (?)", [value]).unwrap();
        }
        let examples: Vec<Value> = values.iter().map(|v| Value::Text(v.to_string())).collect();
        json_shape(&conn, "t", "c", &examples[..examples.len().min(3)]).unwrap()
    }

    #[test]
    fn objects_give_their_keys_most_frequent_first_with_a_value_each() {
        let found = shape(&[
            r#"{"color": "red", "size": "M", "gift": true}"#,
            r#"{"color": "blue", "weight_g": 530}"#,
            r#"{"color": "red", "size": "L", "note": "a text far too long to be shown here"}"#,
        ]);
        let Some(JsonShape::Object(keys)) = found else {
            panic!("{found:?}")
        };
        let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["color", "size", "gift", "note", "weight_g"]);
        assert_eq!(keys[0].1, Some(Value::Text("blue".into())));
        assert_eq!(keys[2].1, Some(Value::Integer(1)), "true reads as 1");
        assert_eq!(keys[3].1, None);
        assert_eq!(keys[4].1, Some(Value::Integer(530)));
    }

    #[test]
    fn arrays_give_some_elements() {
        let found = shape(&[r#"["gift", "express"]"#, "[]", r#"["gift"]"#]);
        assert_eq!(
            found,
            Some(JsonShape::Array(vec![
                Value::Text("gift".into()),
                Value::Text("express".into())
            ]))
        );
    }

    #[test]
    fn text_that_is_not_all_json_of_one_kind_has_no_shape() {
        assert_eq!(shape(&["red", "blue"]), None);
        assert_eq!(shape(&[r#"{"a": 1}"#, "[1]"]), None);
        assert_eq!(shape(&[r#"{"a": 1}"#, "{not json"]), None);
        assert_eq!(shape(&["[1, 2"]), None);
    }
}
