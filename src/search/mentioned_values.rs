//! The stored values a question mentions, shown to the prompts that write
//! a query directly, each with the columns that hold it. Without them a
//! small model puts a value in the column named like the value's role (a
//! film's title in `written_by` rather than in the film column) or spells
//! it unlike the database (case, punctuation).

use crate::db::quote_literal;
use crate::understand::linking::LinkMatch;
use std::collections::{HashMap, HashSet};

/// Least trigram similarity of a question phrase and a stored value shown:
/// the same words with another case or a letter changed. A one-word phrase
/// against a two-word value that starts with it (`model`, `Model A`)
/// scores 0.71 and still passes.
pub(super) const MIN_SIMILARITY: f64 = 0.7;

/// Values shown at most, the most similar first.
const MAX_VALUES: usize = 6;

/// Places named per value at most.
const MAX_COLUMNS: usize = 4;

/// Tables sharing a column name from which the name is given once.
const SHARED_COLUMN_TABLES: usize = 3;

/// Distinct values one question phrase may match, none of them exactly,
/// before the phrase counts as naming a kind of value rather than one
/// (`model` against `Model A`, `Model B`, ...): its values are left out.
const MAX_VALUES_PER_PHRASE: usize = 2;

/// One stored value of the paragraph: the question phrase it matched and
/// the `(table, column)`s that hold it.
struct ShownValue<'a> {
    value: &'a str,
    phrase: &'a str,
    columns: Vec<(&'a str, &'a str)>,
}

/// The values among `matches` (best first, as [`ValueIndex::lookup`]
/// returns them) as a prompt paragraph, or nothing when none is close
/// enough.
///
/// [`ValueIndex::lookup`]: crate::understand::linking::ValueIndex::lookup
pub(super) fn paragraph(matches: &[LinkMatch]) -> String {
    let mut close: Vec<&LinkMatch> = matches
        .iter()
        .filter(|m| m.value.is_some() && m.similarity >= MIN_SIMILARITY)
        .collect();
    let vague = vague_phrases(&close);
    close.retain(|m| m.similarity >= 1.0 || !vague.contains(m.phrase.as_str()));
    // Longer phrases first among equally close ones, so that a title is
    // shown before the shorter values its words also match.
    close.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then_with(|| b.phrase.len().cmp(&a.phrase.len()))
    });
    let mut values: Vec<ShownValue> = Vec::new();
    for m in close {
        let value = m.value.as_deref().unwrap_or_default();
        let column = (m.table.as_str(), m.column.as_str());
        if let Some(shown) = values.iter_mut().find(|v| v.value == value) {
            shown.columns.push(column);
        } else if values.len() < MAX_VALUES && !values.iter().any(|v| within(&m.phrase, v.phrase)) {
            values.push(ShownValue {
                value,
                phrase: &m.phrase,
                columns: vec![column],
            });
        }
    }
    if values.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = values
        .iter()
        .map(|v| format!("- {} in {}", quote_literal(v.value), where_held(&v.columns)))
        .collect();
    format!(
        "\nValues the question mentions, as the database stores them:\n{}\n",
        lines.join("\n")
    )
}

/// The phrases among `close` that match more than
/// [`MAX_VALUES_PER_PHRASE`] distinct values inexactly.
fn vague_phrases<'a>(close: &[&'a LinkMatch]) -> HashSet<&'a str> {
    let mut values: HashMap<&str, HashSet<&str>> = HashMap::new();
    for m in close.iter().filter(|m| m.similarity < 1.0) {
        let value = m.value.as_deref().unwrap_or_default();
        values.entry(m.phrase.as_str()).or_default().insert(value);
    }
    values
        .into_iter()
        .filter(|(_, values)| values.len() > MAX_VALUES_PER_PHRASE)
        .map(|(phrase, _)| phrase)
        .collect()
}

/// Where a value is held, as `table.column`s. A column name that several
/// tables share (a graph's `entity`) is named once with how many tables
/// have it, so that no one of them is singled out.
fn where_held(columns: &[(&str, &str)]) -> String {
    let mut names: Vec<(&str, Vec<&str>)> = Vec::new();
    for &(table, column) in columns {
        match names.iter_mut().find(|(c, _)| *c == column) {
            Some((_, tables)) => tables.push(table),
            None => names.push((column, vec![table])),
        }
    }
    let mut places: Vec<String> = Vec::new();
    for (column, tables) in names {
        if tables.len() >= SHARED_COLUMN_TABLES {
            places.push(format!("the {column} column of {} tables", tables.len()));
        } else {
            places.extend(tables.iter().map(|table| format!("{table}.{column}")));
        }
    }
    let more = if places.len() > MAX_COLUMNS {
        ", ..."
    } else {
        ""
    };
    places.truncate(MAX_COLUMNS);
    places.join(", ") + more
}

/// Whether `phrase` is a part of `longer` made of whole words: the same
/// words of the question, already shown as a longer value.
fn within(phrase: &str, longer: &str) -> bool {
    phrase.len() < longer.len() && format!(" {longer} ").contains(&format!(" {phrase} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(table: &str, column: &str, value: Option<&str>, similarity: f64) -> LinkMatch {
        LinkMatch {
            phrase: value.unwrap_or(column).to_lowercase(),
            table: table.into(),
            column: column.into(),
            value: value.map(String::from),
            similarity,
        }
    }

    #[test]
    fn each_value_is_listed_once_with_the_columns_that_hold_it() {
        let matches = [
            link("written_by", "entity", Some("The Chapman Report"), 1.0),
            link("has_genre", "entity", Some("The Chapman Report"), 1.0),
            link("has_tags", "has_tags", Some("The Chapman Report"), 1.0),
            link("singer", "Country", Some("O'Hara"), 0.8),
            link("singer", "Name", None, 1.0),
            link("singer", "Song", Some("Chapman"), 0.5),
        ];
        assert_eq!(
            paragraph(&matches),
            "\nValues the question mentions, as the database stores them:\n\
             - 'The Chapman Report' in written_by.entity, has_genre.entity, has_tags.has_tags\n\
             - 'O''Hara' in singer.Country\n"
        );
    }

    #[test]
    fn a_value_made_of_some_words_of_a_longer_one_shown_is_left_out() {
        let matches = [
            link("films", "title", Some("The Man"), 1.0),
            link("films", "title", Some("The Man Who Knew Too Little"), 1.0),
            link("genres", "genre", Some("Family"), 1.0),
        ];
        assert_eq!(
            paragraph(&matches),
            "\nValues the question mentions, as the database stores them:\n\
             - 'The Man Who Knew Too Little' in films.title\n\
             - 'Family' in genres.genre\n"
        );
    }

    #[test]
    fn a_phrase_close_to_many_values_names_none_of_them() {
        let near = |value: &str| LinkMatch {
            phrase: "model".into(),
            ..link("cars", "Model", Some(value), 0.71)
        };
        let matches = [
            near("Model A"),
            near("Model B"),
            near("Model C"),
            link("cars", "Make", Some("Tesla"), 1.0),
        ];
        assert_eq!(
            paragraph(&matches),
            "\nValues the question mentions, as the database stores them:\n\
             - 'Tesla' in cars.Make\n"
        );
        // Two inexact values, or any number of exact ones, are still shown.
        assert!(paragraph(&matches[..2]).contains("- 'Model B' in cars.Model\n"));
        let exact: Vec<LinkMatch> = ["Heat", "HEAT", "heat"]
            .iter()
            .map(|v| LinkMatch {
                phrase: "heat".into(),
                ..link("films", "title", Some(v), 1.0)
            })
            .collect();
        assert_eq!(paragraph(&exact).matches("\n- ").count(), 3);
    }

    #[test]
    fn nothing_close_enough_shows_nothing() {
        assert_eq!(paragraph(&[link("t", "c", Some("x"), 0.69)]), "");
        assert_eq!(paragraph(&[]), "");
    }

    #[test]
    fn a_column_name_many_tables_share_is_named_once() {
        let matches: Vec<LinkMatch> = ["a", "b", "c"]
            .iter()
            .map(|t| link(t, "entity", Some("Heat"), 1.0))
            .chain([link("d", "title", Some("Heat"), 1.0)])
            .collect();
        assert!(
            paragraph(&matches).contains("- 'Heat' in the entity column of 3 tables, d.title\n")
        );
    }

    #[test]
    fn long_lists_are_cut() {
        let matches: Vec<LinkMatch> = (0..10)
            .flat_map(|v| {
                (0..6).map(move |c| {
                    link(
                        &format!("t{c}"),
                        &format!("c{c}"),
                        Some(&format!("v{v}")),
                        0.9,
                    )
                })
            })
            .collect();
        let text = paragraph(&matches);
        assert_eq!(text.matches("\n- ").count(), MAX_VALUES);
        assert!(
            text.contains("- 'v0' in t0.c0, t1.c1, t2.c2, t3.c3, ...\n"),
            "{text}"
        );
    }
}
