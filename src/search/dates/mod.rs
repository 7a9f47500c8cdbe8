//! Times a small model misreads. Dates stored as text ('2023-01-15'),
//! which it shifts or subtracts as if they were numbers (`Purchase_Date +
//! 24 * 30`, `DATE(a) - DATE(b)`): SQLite then reads each text's leading
//! digits, its year, and answers with a number that looks plausible. And
//! Unix times (1609459200, seconds or milliseconds since 1970), which it
//! hands to `strftime('%Y', t)` as they are: SQLite reads a bare number as
//! a Julian day, and the year comes out NULL. And dates written as people
//! write them (`03/15/2021`, `written`), which SQLite's date functions do
//! not read and which sort by month. The prompts that write a
//! query directly over a database with such columns name them and say
//! how SQLite reads them.

pub(super) mod digits;
pub(super) mod written;

use crate::db::schema::{Column, Table};
use crate::db::{Schema, Value};
use crate::prompts::{DATES, DIGIT_DATES, UNIX_TIMES, WRITTEN_DATES};

/// Columns named in a paragraph at most.
const MAX_COLUMNS: usize = 4;

/// The paragraphs on a database's times, made once for all its
/// questions.
#[derive(Debug, Clone, Default)]
pub(super) struct Paragraphs {
    /// On dates stored as text, how SQLite shifts and subtracts them:
    /// about arithmetic, so shown only to a question that speaks of time
    /// (`speaks_of_time`); shown to every question, it drew a small model
    /// off questions that do no date arithmetic.
    arithmetic: String,
    /// On dates written as people write them, then on Unix times: how to
    /// read them at all, whatever the question.
    reading: String,
}

impl Paragraphs {
    /// The paragraphs for `schema`; empty for a schema without dates as
    /// text, written dates or Unix times.
    pub(super) fn of(schema: &Schema) -> Self {
        let dates = columns_where(schema, |c| holds_dates(&c.examples));
        let arithmetic = if dates.is_empty() {
            String::new()
        } else {
            let text = DATES.render(&[("columns", &listed(&dates))]);
            format!("{}\n", text.trim_end())
        };
        let mut reading = written_dates_paragraph(schema);
        reading += &digit_dates_paragraph(schema);
        let times = columns_where(schema, |c| unix_time_unit(c).is_some());
        if !times.is_empty() {
            let example = example_reading(schema);
            reading += UNIX_TIMES
                .render(&[("columns", &listed(&times)), ("example", &example)])
                .trim_end();
            reading.push('\n');
        }
        Paragraphs {
            arithmetic,
            reading,
        }
    }

    /// The paragraphs for a question whose text (with its hint) is `asked`.
    pub(super) fn for_question(&self, asked: &str) -> String {
        if speaks_of_time(asked) {
            format!("{}{}", self.arithmetic, self.reading)
        } else {
            self.reading.clone()
        }
    }
}

/// Whether `text` speaks of time: one of its words names a unit or span
/// of time, a month, an age, or an order in time (`day`, `monthly`,
/// `how long`, `oldest`, `since`, `expire`, `latest`, `March`).
fn speaks_of_time(text: &str) -> bool {
    // `may` is left out: far more questions say it as a verb.
    const WORDS: &[&str] = &[
        "date",
        "dates",
        "dated",
        "day",
        "days",
        "daily",
        "week",
        "weeks",
        "weekly",
        "month",
        "months",
        "monthly",
        "year",
        "years",
        "yearly",
        "annual",
        "annually",
        "hour",
        "hours",
        "minute",
        "minutes",
        "time",
        "when",
        "long",
        "longer",
        "longest",
        "interval",
        "intervals",
        "period",
        "periods",
        "duration",
        "age",
        "aged",
        "old",
        "older",
        "oldest",
        "young",
        "younger",
        "youngest",
        "since",
        "until",
        "ago",
        "before",
        "after",
        "earlier",
        "earliest",
        "later",
        "latest",
        "recent",
        "recently",
        "expire",
        "expires",
        "expired",
        "expiration",
        "expiry",
        "born",
        "birthday",
        "elapsed",
        "anniversary",
        "deadline",
        "overdue",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    text.split(|c: char| !c.is_alphanumeric())
        .any(|word| WORDS.contains(&word.to_lowercase().as_str()))
}

/// The paragraph on the columns that write dates in the form of the first
/// such column (`written`), with how to read that one; empty when none.
fn written_dates_paragraph(schema: &Schema) -> String {
    let Some((first, form)) = schema.tables.iter().find_map(|t| {
        t.columns.iter().find_map(|c| {
            let form = written::written_form(&c.examples)?;
            Some((format!("{}.{}", t.name, c.name), form))
        })
    }) else {
        return String::new();
    };
    let columns = columns_where(schema, |c| written::written_form(&c.examples) == Some(form));
    let text = WRITTEN_DATES.render(&[
        ("columns", &listed(&columns)),
        ("form", &form.name()),
        ("reading", &form.reading(&first)),
    ]);
    format!("{}\n", text.trim_end())
}

/// The paragraph on the columns that hold dates as eight digits
/// (`digits`), with how to compare and read the first; empty when none.
fn digit_dates_paragraph(schema: &Schema) -> String {
    let columns = columns_where(schema, digits::holds_digit_dates);
    let Some(first) = columns.first() else {
        return String::new();
    };
    let text = DIGIT_DATES.render(&[
        ("columns", &listed(&columns)),
        ("first", first),
        ("iso", &digits::iso(first)),
    ]);
    format!("{}\n", text.trim_end())
}

/// `table.column` of every column of `schema` that `holds`.
fn columns_where(schema: &Schema, holds: impl Fn(&Column) -> bool) -> Vec<String> {
    schema
        .tables
        .iter()
        .flat_map(|t| {
            t.columns
                .iter()
                .filter(|c| holds(c))
                .map(move |c| format!("{}.{}", t.name, c.name))
        })
        .collect()
}

/// The first columns of `columns`, as a paragraph names them.
pub(super) fn listed(columns: &[String]) -> String {
    if columns.len() > MAX_COLUMNS {
        format!("{} and other columns", columns[..MAX_COLUMNS].join(", "))
    } else {
        columns.join(", ")
    }
}

/// How a Unix time column is read as a date, for the first column of
/// each unit, so a schema with both shows both.
fn example_reading(schema: &Schema) -> String {
    let first = |unit: UnixUnit| {
        schema.tables.iter().find_map(|t: &Table| {
            let c = t.columns.iter().find(|c| unix_time_unit(c) == Some(unit))?;
            Some(match unit {
                UnixUnit::Seconds => {
                    format!(
                        "strftime('%Y', {}.{}, 'unixepoch') = '2021'",
                        t.name, c.name
                    )
                }
                UnixUnit::Milliseconds => format!(
                    "strftime('%Y', {}.{} / 1000, 'unixepoch') = '2021' (milliseconds)",
                    t.name, c.name
                ),
            })
        })
    };
    [first(UnixUnit::Seconds), first(UnixUnit::Milliseconds)]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a column of Unix times counts since 1970-01-01 UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UnixUnit {
    Seconds,
    Milliseconds,
}

/// Unix seconds of 1980-01-01 and of 2100-01-01 UTC: times of records
/// fall between them, and most other integers of nine or ten digits
/// (identifiers, amounts) carry no name of a time.
const UNIX_SECONDS: std::ops::RangeInclusive<i64> = 315_532_800..=4_102_444_800;

/// The unit of a column that holds Unix times: an integer column whose
/// name speaks of a time and whose examples all fall between 1980 and
/// 2100 in seconds, or all in milliseconds.
pub(super) fn unix_time_unit(column: &Column) -> Option<UnixUnit> {
    let integers: Vec<i64> = column
        .examples
        .iter()
        .map(|v| match v {
            Value::Integer(i) => Some(*i),
            _ => None,
        })
        .collect::<Option<_>>()?;
    if integers.is_empty() || !names_a_time(&column.name) {
        return None;
    }
    let all_in = |scale: i64| integers.iter().all(|i| UNIX_SECONDS.contains(&(i / scale)));
    if all_in(1) {
        Some(UnixUnit::Seconds)
    } else if all_in(1000) {
        Some(UnixUnit::Milliseconds)
    } else {
        None
    }
}

/// Whether a column's name speaks of a time: one of its words (split at
/// `_`, spaces and lower-to-upper case changes) holds `time`, `date` or
/// `stamp`, or is `at`, `on`, `ts`, `dt`, `day`, `epoch`, `created`,
/// `updated` or `modified` (`created_at`, `lastLogin_ts`, `UpdatedOn`,
/// `ord_dt`).
fn names_a_time(name: &str) -> bool {
    const WORDS: [&str; 9] = [
        "at", "on", "ts", "dt", "day", "epoch", "created", "updated", "modified",
    ];
    const PARTS: [&str; 3] = ["time", "date", "stamp"];
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let boundary = !c.is_alphanumeric() || (c.is_uppercase() && previous_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase();
    }
    words.push(word);
    words
        .iter()
        .any(|w| WORDS.contains(&w.as_str()) || PARTS.iter().any(|p| w.contains(p)))
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

/// Whether every example of `column` is a date written as text with a
/// time of day after it (`2024-03-31 14:05:00`).
pub(super) fn holds_date_times(column: &Column) -> bool {
    holds_dates(&column.examples)
        && column
            .examples
            .iter()
            .all(|v| matches!(v, Value::Text(text) if text.len() > 10))
}

/// Whether `text` opens with a `YYYY-MM-DD` date, alone or before a time.
pub(super) fn is_date_text(text: &str) -> bool {
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
            json: None,
        }
    }

    /// The paragraphs a question that speaks of time gets.
    fn paragraph(schema: &Schema) -> String {
        Paragraphs::of(schema).for_question("How long ago was it?")
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

    fn integers(name: &str, examples: &[i64]) -> Column {
        Column {
            declared_type: "INTEGER".into(),
            examples: examples.iter().map(|&i| Value::Integer(i)).collect(),
            ..column(name, &[])
        }
    }

    #[test]
    fn columns_of_unix_times_are_named_with_how_to_read_them() {
        let text = paragraph(&schema(vec![
            integers("created_at", &[1_609_459_200, 1_612_915_200]),
            integers("lastLoginTs", &[1_675_741_410_871, 1_664_805_818_934]),
        ]));
        assert!(
            text.starts_with("Times: pumps.created_at, pumps.lastLoginTs hold Unix times"),
            "{text}"
        );
        assert!(
            text.contains(
                "strftime('%Y', pumps.created_at, 'unixepoch') = '2021', \
                 strftime('%Y', pumps.lastLoginTs / 1000, 'unixepoch') = '2021' (milliseconds)"
            ),
            "{text}"
        );
        // After the dates paragraph, when both apply.
        let both = paragraph(&schema(vec![
            column("Purchase_Date", &["2023-01-15"]),
            integers("updated", &[1_609_459_200]),
        ]));
        let dates = both.find("Dates:").unwrap();
        assert!(dates < both.find("Times:").unwrap(), "{both}");
    }

    #[test]
    fn columns_of_written_dates_are_named_with_how_to_read_them() {
        let text = paragraph(&schema(vec![
            column("ordered", &["03/15/2021", "12/01/2022"]),
            column("Model", &["P-1001"]),
            column("shipped", &["03/18/2021", "12/04/2022"]),
            // Another form is left to its own column's reading.
            column("serviced", &["15.03.2021"]),
        ]));
        assert!(
            text.starts_with(
                "Dates: pumps.ordered, pumps.shipped hold dates as text written MM/DD/YYYY"
            ),
            "{text}"
        );
        assert!(
            text.contains("its year is substr(pumps.ordered, 7, 4)."),
            "{text}"
        );
        assert!(!text.contains("serviced"), "{text}");
    }

    #[test]
    fn columns_of_eight_digit_dates_are_named_with_how_to_compare_and_read_them() {
        let paragraphs = Paragraphs::of(&schema(vec![
            integers("sale_date", &[20_230_315, 20_240_102]),
            column("sent_on", &["20220701"]),
            // The digits of a date under a name that is no time's.
            integers("batch", &[20_230_315]),
        ]));
        // Told whatever the question: the columns read wrongly without it.
        let text = paragraphs.for_question("Which store sold the most?");
        assert!(
            text.starts_with("Dates: pumps.sale_date, pumps.sent_on hold dates as eight digits"),
            "{text}"
        );
        assert!(
            text.contains("pumps.sale_date BETWEEN 20230301 AND 20230331 is March 2023"),
            "{text}"
        );
        assert!(
            text.contains("substr(pumps.sale_date, 5, 2) || '-' || substr(pumps.sale_date, 7, 2)"),
            "{text}"
        );
        assert!(text.contains("julianday(b) - julianday(a)"), "{text}");
        assert!(!text.contains("batch"), "{text}");
    }

    #[test]
    fn date_arithmetic_is_told_only_to_questions_that_speak_of_time() {
        let paragraphs = Paragraphs::of(&schema(vec![
            column("Purchase_Date", &["2023-01-15"]),
            integers("updated", &[1_609_459_200]),
        ]));
        for asked in [
            "When does the warranty of pump 3 expire?",
            "How many DAYS passed between the two repairs?",
            "Which pumps were bought in March 2022?",
            "Who is the oldest member?",
        ] {
            assert!(
                paragraphs.for_question(asked).starts_with("Dates:"),
                "{asked}"
            );
        }
        for asked in [
            "How many pumps are there?",
            "Which pump may cost the most?",
            "List the models of the pumps in 2021.",
        ] {
            let text = paragraphs.for_question(asked);
            // The reading of Unix times is told whatever the question.
            assert!(text.starts_with("Times:"), "{asked}: {text}");
            assert!(!text.contains("Dates:"), "{asked}: {text}");
        }
    }

    #[test]
    fn integers_that_are_no_unix_times_are_not_named() {
        for column in [
            // Unix-like values under a name that is no time's.
            integers("population", &[1_409_517_397, 1_339_180_127]),
            // A time's name over small numbers.
            integers("time_minutes", &[5, 90]),
            // One example out of range.
            integers("created_at", &[1_609_459_200, 7]),
            integers("timestamp", &[]),
        ] {
            assert_eq!(paragraph(&schema(vec![column.clone()])), "", "{column:?}");
        }
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
