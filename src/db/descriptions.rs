//! BIRD ships a `database_description/` folder beside each database with one
//! CSV per table describing its columns. They make schema prompts far more
//! useful, so they are read whenever present.

use super::schema::{ColumnNote, DescriptionMap};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::Path;

/// Reads `database_description/*.csv` next to the database file, if any.
pub(crate) fn load_for(db_path: &Path) -> Result<DescriptionMap> {
    let Some(dir) = db_path.parent().map(|p| p.join("database_description")) else {
        return Ok(HashMap::new());
    };
    if !dir.is_dir() {
        return Ok(HashMap::new());
    }
    let mut map = HashMap::new();
    let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::io(&dir, e))?.path();
        let is_csv = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        let Some(table) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if !is_csv {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        map.insert(table.to_lowercase(), parse_table_csv(&decode(&bytes)));
    }
    Ok(map)
}

/// The files come in UTF-8 (sometimes with a BOM) or Latin-1.
fn decode(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => bytes.iter().map(|&b| b as char).collect(),
    }
}

/// Columns: original_column_name, column_name, column_description,
/// data_format, value_description. Rows that do not fit are skipped: a
/// damaged note must not stop a query.
fn parse_table_csv(text: &str) -> HashMap<String, ColumnNote> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut notes = HashMap::new();
    for record in reader.records().flatten() {
        let field = |i: usize| {
            record
                .get(i)
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|s| !s.is_empty())
        };
        let Some(original) = field(0) else { continue };
        let expanded = field(1).filter(|e| !e.eq_ignore_ascii_case(&original));
        let description = field(2).or(expanded);
        notes.insert(
            original.to_lowercase(),
            ColumnNote {
                description,
                value_description: field(4),
            },
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_notes_and_falls_back_to_expanded_name() {
        let csv = "\u{feff}original_column_name,column_name,column_description,data_format,value_description\n\
                   event_id,event id,A unique identifier,text,\n\
                   type,,\"The kind of event, such as game\",text,\"e.g. Game\"\n\
                   amt,amount,,real,\n";
        let notes = parse_table_csv(&decode(csv.as_bytes()));
        assert_eq!(
            notes["event_id"].description.as_deref(),
            Some("A unique identifier")
        );
        assert_eq!(
            notes["type"].description.as_deref(),
            Some("The kind of event, such as game")
        );
        assert_eq!(
            notes["type"].value_description.as_deref(),
            Some("e.g. Game")
        );
        assert_eq!(notes["amt"].description.as_deref(), Some("amount"));
    }

    #[test]
    fn decodes_latin1() {
        assert_eq!(decode(b"caf\xe9"), "café");
    }
}
