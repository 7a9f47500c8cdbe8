//! Dates stored as text ('2023-01-15'), which small models shift or
//! subtract as if they were numbers (`Purchase_Date + 24 * 30`, `DATE(a) -
//! DATE(b)`): SQLite then reads each text's leading digits, its year, and
//! answers with a number that looks plausible. The prompts that write a
//! query directly over a database with such columns name them and say
//! how SQLite shifts and subtracts dates.

use crate::db::{Schema, Value};
use crate::prompts::DATES;

/// Columns named in the paragraph at most.
const MAX_COLUMNS: usize = 4;

/// The paragraph for `schema`, or nothing when no column holds dates as
/// text.
pub(super) fn paragraph(schema: &Schema) -> String {
    let columns: Vec<String> = schema
        .tables
        .iter()
        .flat_map(|t| {
            t.columns
                .iter()
                .filter(|c| holds_dates(&c.examples))
                .map(move |c| format!("{}.{}", t.name, c.name))
        })
        .collect();
    if columns.is_empty() {
        return String::new();
    }
    let named = if columns.len() > MAX_COLUMNS {
        format!("{} and other columns", columns[..MAX_COLUMNS].join(", "))
    } else {
        columns.join(", ")
    };
    format!("{}\n", DATES.render(&[("columns", &named)]).trim_end())
}

/// Whether every example of a column is a date written as text, `YYYY-MM-DD`
/// with or without a time after it.
fn holds_dates(examples: &[Value]) -> bool {
    !examples.is_empty()
        && examples.iter().all(|v| match v {
            Value::Text(text) => is_date_text(text),
            _ => false,
        })
}

fn is_date_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    bytes.len() >= 10
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && bytes.get(10).is_none_or(|&b| b == b' ' || b == b'T')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{Column, Table};

    fn column(name: &str, examples: &[&str]) -> Column {
        Column {
            name: name.into(),
            declared_type: "TEXT".into(),
            primary_key: false,
            examples: examples.iter().map(|e| Value::Text((*e).into())).collect(),
            description: None,
            value_description: None,
        }
    }

    fn schema(columns: Vec<Column>) -> Schema {
        Schema {
            tables: vec![Table {
                name: "pumps".into(),
                is_view: false,
                row_count: Some(3),
                columns,
                foreign_keys: Vec::new(),
            }],
        }
    }

    #[test]
    fn columns_of_date_texts_are_named() {
        let text = paragraph(&schema(vec![
            column("Model", &["P-1001", "2023"]),
            column("Purchase_Date", &["2023-01-15", "2023-02-20"]),
            column("Started", &["2023-01-01 08:00:00", "2023-01-01T09:30"]),
        ]));
        assert!(
            text.starts_with("Dates: pumps.Purchase_Date, pumps.Started hold dates as text"),
            "{text}"
        );
        assert!(text.contains("julianday(b) - julianday(a)"), "{text}");
    }

    #[test]
    fn a_schema_without_date_texts_gets_nothing() {
        for examples in [
            &["2023-01-15", "soon"][..],
            &["20230115"],
            &["2023-1-5"],
            &[],
        ] {
            assert_eq!(
                paragraph(&schema(vec![column("d", examples)])),
                "",
                "{examples:?}"
            );
        }
        let mut numbers = column("year", &[]);
        numbers.examples = vec![Value::Integer(2023)];
        assert_eq!(paragraph(&schema(vec![numbers])), "");
    }
}
