//! Reading a table file (CSV, TSV or JSON) into a header and rows of text
//! cells: the delimiter sniffed, the header row detected, every malformed
//! row reported by its line.

use super::cells::{parse_date, parse_number};
use super::names::NameSet;
use crate::error::{Error, Result};
use std::path::Path;

/// A table as read: column names as written (made unique and non-empty)
/// and rows of cells (`None` where a cell is empty or missing).
#[derive(Debug, Clone, PartialEq)]
pub struct RawTable {
    pub header: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

impl RawTable {
    /// A table given as text cells (a benchmark's inline table): names made
    /// unique and non-empty, blank cells empty.
    pub fn from_text(header: Vec<String>, rows: Vec<Vec<String>>) -> Self {
        RawTable {
            header: unique_names(header),
            rows: rows
                .iter()
                .map(|row| row.iter().map(|c| cell(c)).collect())
                .collect(),
        }
    }
}

/// Reads `path` by its extension: `.json`, `.jsonl` and `.ndjson` as JSON,
/// `.tsv` and `.tab` as tab-separated, anything else as delimited text with
/// the delimiter sniffed.
pub fn read_table(path: &Path) -> Result<RawTable> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        source_error(
            path,
            format!("line {line} is not UTF-8 text; save the file as UTF-8"),
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let table = match extension.as_str() {
        "json" | "jsonl" | "ndjson" => read_json(text),
        "tsv" | "tab" => read_delimited(text, b'\t'),
        _ => read_delimited(text, sniff_delimiter(text)),
    }
    .map_err(|detail| source_error(path, detail))?;
    if table.rows.is_empty() {
        return Err(source_error(path, "has no data rows".into()));
    }
    Ok(table)
}

pub(super) fn source_error(path: &Path, detail: String) -> Error {
    Error::TableFile {
        path: path.to_path_buf(),
        detail,
    }
}

const DELIMITERS: &[u8] = b",;\t|";
const SNIFF_LINES: usize = 20;

/// The candidate delimiter that splits the first lines into the most
/// fields, the same number on every line; a comma when none does.
fn sniff_delimiter(text: &str) -> u8 {
    let sample: String = text
        .lines()
        .take(SNIFF_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    let fields_per_line = |delimiter: u8| -> Option<usize> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(delimiter)
            .from_reader(sample.as_bytes());
        let mut counts = reader.records().map(|r| r.map(|r| r.len()).ok());
        let first = counts.next()??;
        counts
            .all(|count| count == Some(first))
            .then_some(first)
            .filter(|&n| n > 1)
    };
    DELIMITERS
        .iter()
        .copied()
        .filter_map(|d| fields_per_line(d).map(|n| (n, d)))
        .max_by_key(|&(n, d)| (n, std::cmp::Reverse(d == b'|')))
        .map_or(b',', |(_, d)| d)
}

fn read_delimited(text: &str, delimiter: u8) -> std::result::Result<RawTable, String> {
    // Some exports escape a quote inside a quoted field as `\"` rather
    // than doubling it.
    let escape = text.contains("\\\"").then_some(b'\\');
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .escape(escape)
        .from_reader(text.as_bytes());
    let mut records = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        let line = record.position().map_or(0, |p| p.line());
        let cells: Vec<Option<String>> = record.iter().map(cell).collect();
        if cells.iter().any(Option::is_some) {
            records.push((line, cells));
        }
    }
    let Some(first) = records.first() else {
        return Err("is empty".into());
    };
    let has_header = looks_like_header(&first.1, records[1..].iter().map(|(_, c)| c));
    let width = records.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
    let (header, body) = if has_header {
        let (line, cells) = &records[0];
        if let Some((extra, _)) = records[1..].iter().find(|(_, c)| c.len() > cells.len()) {
            let longest = records.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
            return Err(format!(
                "line {extra} has more fields than the header on line {line} ({longest} against {}); quote fields that contain the delimiter",
                cells.len()
            ));
        }
        (
            cells
                .iter()
                .map(|c| c.clone().unwrap_or_default())
                .collect(),
            &records[1..],
        )
    } else {
        (vec![String::new(); width], &records[..])
    };
    let width = header.len();
    let rows = body
        .iter()
        .map(|(_, cells)| {
            let mut row = cells.clone();
            row.resize(width, None);
            row
        })
        .collect();
    Ok(RawTable {
        header: unique_names(header),
        rows,
    })
}

fn cell(text: &str) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// Whether the first row names the columns rather than holding data: some
/// column holds numbers or dates below a first cell that is neither, and no
/// column holds them in its first cell as well as below it.
fn looks_like_header<'a>(
    first: &[Option<String>],
    body: impl Iterator<Item = &'a Vec<Option<String>>> + Clone,
) -> bool {
    let typed = |c: &str| parse_number(c).is_some() || parse_date(c).is_some();
    let mut evidence_for = false;
    let mut evidence_against = false;
    for (i, head) in first.iter().enumerate() {
        let below: Vec<&str> = body
            .clone()
            .filter_map(|row| row.get(i).and_then(|c| c.as_deref()))
            .collect();
        let typed_below = !below.is_empty() && below.iter().all(|c| typed(c));
        match head.as_deref() {
            Some(h) if typed_below && typed(h) => evidence_against = true,
            Some(_) if typed_below => evidence_for = true,
            _ => {}
        }
    }
    evidence_for || !evidence_against
}

/// Empty names become `column_N` (N counts from 1); a repeated name gets
/// `_2`, `_3`, ... in order of appearance.
fn unique_names(names: Vec<String>) -> Vec<String> {
    let mut taken = NameSet::default();
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| match name.trim() {
            "" => taken.take(format!("column_{}", i + 1)),
            trimmed => taken.take(trimmed.to_string()),
        })
        .collect()
}

/// A JSON array of objects, or one object per line: the columns are the
/// keys in order of first appearance; nested values are kept as JSON text.
fn read_json(text: &str) -> std::result::Result<RawTable, String> {
    let objects: Vec<(String, serde_json::Map<String, serde_json::Value>)> =
        if text.trim_start().starts_with('[') {
            let values: Vec<serde_json::Value> =
                serde_json::from_str(text).map_err(|e| format!("is not a JSON array: {e}"))?;
            values
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    serde_json::Value::Object(o) => Ok((format!("element {}", i + 1), o)),
                    _ => Err(format!("element {} of the array is not an object", i + 1)),
                })
                .collect::<std::result::Result<_, _>>()?
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, line)| !line.trim().is_empty())
                .map(|(i, line)| {
                    let place = format!("line {}", i + 1);
                    match serde_json::from_str(line) {
                        Ok(serde_json::Value::Object(o)) => Ok((place, o)),
                        Ok(_) => Err(format!("{place} is not a JSON object")),
                        Err(e) => Err(format!("{place} is not JSON: {e}")),
                    }
                })
                .collect::<std::result::Result<_, _>>()?
        };
    let mut keys: Vec<String> = Vec::new();
    for (_, object) in &objects {
        for key in object.keys() {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
    }
    let rows = objects
        .iter()
        .map(|(_, object)| {
            keys.iter()
                .map(|k| match object.get(k) {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::String(s)) => cell(s),
                    Some(other) => Some(other.to_string()),
                })
                .collect()
        })
        .collect();
    Ok(RawTable {
        header: unique_names(keys),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, contents: &str) -> Result<RawTable> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        read_table(&path)
    }

    fn text(row: &[Option<String>]) -> Vec<&str> {
        row.iter().map(|c| c.as_deref().unwrap_or("")).collect()
    }

    #[test]
    fn a_semicolon_file_with_quotes_is_split_on_semicolons() {
        let table = read(
            "t.csv",
            "name;city\n\"Smith, J\";Paris\nLee;\"Rome; Italy\"\n",
        )
        .unwrap();
        assert_eq!(table.header, ["name", "city"]);
        assert_eq!(text(&table.rows[0]), ["Smith, J", "Paris"]);
        assert_eq!(text(&table.rows[1]), ["Lee", "Rome; Italy"]);
    }

    #[test]
    fn a_first_row_of_figures_is_data_and_a_first_row_of_words_a_header() {
        let headless = read("t.csv", "1,2.5\n2,3.5\n").unwrap();
        assert_eq!(headless.header, ["column_1", "column_2"]);
        assert_eq!(headless.rows.len(), 2);
        let headed = read("t.tsv", "year\tteam\n2011\tGreystones\n2010\tMaynooth\n").unwrap();
        assert_eq!(headed.header, ["year", "team"]);
        assert_eq!(headed.rows.len(), 2);
    }

    #[test]
    fn quotes_escaped_with_a_backslash_stay_inside_their_field() {
        let table = read("t.csv", "a,b\n\"say \\\"hi\\\", then go\",2\n").unwrap();
        assert_eq!(text(&table.rows[0]), ["say \"hi\", then go", "2"]);
    }

    #[test]
    fn empty_and_repeated_header_names_are_made_unique() {
        let table = read("t.csv", "a,,A,a\n1,2,3,4\n").unwrap();
        assert_eq!(table.header, ["a", "column_2", "A_2", "a_3"]);
    }

    #[test]
    fn short_rows_are_padded_and_long_rows_are_named() {
        let table = read("t.csv", "a,b,c\n1,2\n").unwrap();
        assert_eq!(table.rows[0], [Some("1".into()), Some("2".into()), None]);
        let error = read("t.csv", "a,b\n1,2\n3,4,5\n").unwrap_err().to_string();
        assert!(
            error.contains("line 3 has more fields than the header"),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }

    #[test]
    fn json_arrays_and_json_lines_read_alike() {
        let array = read(
            "t.json",
            r#"[{"a": 1, "b": "x"}, {"b": null, "c": [1, 2]}]"#,
        )
        .unwrap();
        let lines = read(
            "t.jsonl",
            "{\"a\": 1, \"b\": \"x\"}\n\n{\"b\": null, \"c\": [1,2]}\n",
        )
        .unwrap();
        assert_eq!(array, lines);
        assert_eq!(array.header, ["a", "b", "c"]);
        assert_eq!(text(&array.rows[1]), ["", "", "[1,2]"]);
    }

    #[test]
    fn malformed_files_are_named_with_their_line() {
        let error = read("t.jsonl", "{\"a\": 1}\n{\"a\": \n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 2 is not JSON"), "{error}");
        let error = read("t.json", "[1, 2]").unwrap_err().to_string();
        assert!(
            error.contains("element 1 of the array is not an object"),
            "{error}"
        );
        let error = read("t.csv", "a,b\n").unwrap_err().to_string();
        assert!(error.contains("has no data rows"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.csv");
        std::fs::write(&path, b"a\nb\ncaf\xe9\n").unwrap();
        let error = read_table(&path).unwrap_err().to_string();
        assert!(error.contains("line 3 is not UTF-8"), "{error}");
    }
}
