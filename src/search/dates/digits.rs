//! Dates stored as eight digits, year, month and day (20230315, as an
//! integer or as text), as data warehouses key their dates and many
//! exports write them. SQLite's date functions read none of them
//! (`strftime('%Y', 20230315)` is NULL: a bare number is a Julian day),
//! and an ISO date compared with one compares other things (an integer
//! is less than any text). They do sort by time, and compare rightly with
//! numbers of the same form.

use crate::db::schema::Column;
use crate::db::Value;

/// Whether every example of `column` is a date of eight digits, and its
/// name speaks of a time (`sale_date`, `sent_on`, `ord_dt`): eight-digit
/// codes and amounts that happen to read as dates carry no such name.
pub(in crate::search) fn holds_digit_dates(column: &Column) -> bool {
    !column.examples.is_empty()
        && column.examples.iter().all(is_digit_date)
        && super::names_a_time(&column.name)
}

/// `column` (SQL naming a column of such dates) read as `YYYY-MM-DD`;
/// SQLite takes the digits of an integer as text here.
pub(in crate::search) fn iso(column: &str) -> String {
    format!(
        "substr({column}, 1, 4) || '-' || substr({column}, 5, 2) || '-' || substr({column}, 7, 2)"
    )
}

/// `YYYYMMDD` between the years 1900 and 2100, with a month and a day in
/// range, as an integer or a text of those digits alone.
fn is_digit_date(value: &Value) -> bool {
    let digits = match value {
        Value::Integer(i) => i.to_string(),
        Value::Text(text) => text.clone(),
        _ => return false,
    };
    if digits.len() != 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let field = |range: std::ops::Range<usize>| digits[range].parse::<u32>().unwrap_or(0);
    (1900..=2100).contains(&field(0..4))
        && (1..=12).contains(&field(4..6))
        && (1..=31).contains(&field(6..8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, examples: Vec<Value>) -> Column {
        Column {
            name: name.into(),
            declared_type: String::new(),
            primary_key: false,
            examples,
            description: None,
            value_description: None,
            json: None,
        }
    }

    #[test]
    fn eight_digit_dates_under_a_time_name_are_found_as_numbers_and_texts() {
        for (name, examples) in [
            (
                "sale_date",
                vec![Value::Integer(20230315), Value::Integer(19991231)],
            ),
            ("sent_on", vec![Value::Text("20220701".into())]),
            ("ord_dt", vec![Value::Integer(20240229)]),
            ("DateKey", vec![Value::Integer(20100101)]),
        ] {
            assert!(holds_digit_dates(&column(name, examples)), "{name}");
        }
    }

    #[test]
    fn other_numbers_and_names_are_not() {
        for (name, examples) in [
            // A date's digits under a name that is no time's.
            ("account_no", vec![Value::Integer(20230315)]),
            // A month past 12, a day past 31, a year out of range.
            ("sale_date", vec![Value::Integer(20231315)]),
            ("sale_date", vec![Value::Integer(20230132)]),
            ("sale_date", vec![Value::Integer(30230315)]),
            // One example of another form; none at all.
            (
                "sale_date",
                vec![Value::Integer(20230315), Value::Text("2023-03-15".into())],
            ),
            ("sale_date", vec![Value::Text("2023031".into())]),
            ("sale_date", vec![Value::Real(20230315.0)]),
            ("sale_date", vec![]),
        ] {
            assert!(
                !holds_digit_dates(&column(name, examples.clone())),
                "{name} {examples:?}"
            );
        }
    }

    #[test]
    fn a_column_is_read_as_an_iso_date_by_its_digits() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let read = |value: &str| -> String {
            conn.query_row(&format!("SELECT {}", iso(value)), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(read("20230315"), "2023-03-15");
        assert_eq!(read("'20230315'"), "2023-03-15");
    }
}
