//! A query that found no value because it compares a column with a value
//! written unlike the database (`nation = 'South Korea'` where the column
//! holds 'South Korea (KOR)', `city = 'paris'` for 'Paris', a date stored
//! with a footnote mark) is given the stored spelling, when exactly one
//! stored value of that column is the written one apart from case or holds
//! it as whole words. Tables read from documents often qualify their cells
//! so; a small model copies the question's words. A value another column
//! holds moves the comparison there, a key compared with the name of the
//! row it refers to looks that row up, and a value only a table within two
//! keys holds picks the rows linked to the rows that hold it. A query that
//! counts zero gets those moves, never a respelling.

use super::comparison::{comparisons, Comparison, Operator};
use super::{kept_if_it_finds_a_value, SchemaNames};
use crate::db::{quote_identifier, quote_literal, Executor, QueryResult, Value};
use crate::search::sql_text::{pieces, table_aliases, table_bound_to, unquote, Piece};
use std::sync::Arc;

/// Stored values read per probe at most: more than one that fits is
/// already no single spelling.
const MAX_PROBED: usize = 20;

impl SchemaNames {
    /// `sql`, which found no value, with each `column = 'text'` whose text
    /// the column does not hold replaced by the one stored value that is
    /// the text apart from case or holds it as whole words, and its result;
    /// None when no comparison changes or the changed query still finds no
    /// value.
    pub fn respell(&self, executor: &Executor, sql: &str) -> Option<(String, Arc<QueryResult>)> {
        let changed = self.moved_or_respelled(executor, sql, true)?;
        kept_if_it_finds_a_value(executor, changed)
    }

    /// `sql`, which counted nothing (`counts_nothing`), with each `column =
    /// 'text'` whose column does not hold the text moved to where the
    /// database stores it as written, as `respell` moves it, and its result;
    /// None when none moves or the moved query still counts nothing. The
    /// text is never respelled here: a count of a spelling the database
    /// lacks can rightly be zero, but a text it stores elsewhere was looked
    /// for in the wrong place ("How many employees work in Engineering?"
    /// counting `employees.dept = 'Engineering'` where `dept` holds codes
    /// and `departments.name` the name).
    pub fn relocate_counted(
        &self,
        executor: &Executor,
        sql: &str,
    ) -> Option<(String, Arc<QueryResult>)> {
        let moved = self.moved_or_respelled(executor, sql, false)?;
        let result = executor.query(&moved).ok()?;
        (!counts_nothing(&result)).then_some((moved, result))
    }

    /// `sql` with each `column = 'text'` whose column does not hold the
    /// text changed by the first branch of `respell` that applies (the
    /// stored spelling only when `respelling`); None when none changes.
    fn moved_or_respelled(
        &self,
        executor: &Executor,
        sql: &str,
        respelling: bool,
    ) -> Option<String> {
        let pieces = pieces(sql);
        let bound = table_aliases(sql);
        let mut texts: Vec<String> = pieces.iter().map(|p| p.text().to_string()).collect();
        let mut changed = false;
        for (comparison, table, written) in self.unheld_values(executor, &pieces, &bound) {
            let column = pieces[comparison.column].text();
            let stored = || stored_spelling(executor, table, column, &written);
            if let Some(stored) = respelling.then(stored).flatten() {
                texts[comparison.literal] = quote_literal(&stored);
                changed = true;
            } else if let Some(other) = self.other_column_holding(executor, table, column, &written)
            {
                texts[comparison.column] = other;
                changed = true;
            } else if let Some(keys) = self.keys_of_row_named(executor, table, column, &written) {
                texts[comparison.column + 1] = " IN ".to_string();
                texts[comparison.literal] = keys;
                changed = true;
            } else if let Some((key, keys)) = self.keys_of_rows_holding(executor, table, &written) {
                texts[comparison.column] = key;
                texts[comparison.column + 1] = " IN ".to_string();
                texts[comparison.literal] = keys;
                changed = true;
            }
        }
        changed.then(|| texts.concat())
    }

    /// Each `column = 'text'` among `pieces` whose column's table (of
    /// those `bound`) holds no such value, with that table and the text.
    /// A value held as written, or a probe that fails, is left out.
    pub(super) fn unheld_values<'b>(
        &self,
        executor: &Executor,
        pieces: &[Piece<'_>],
        bound: &'b [(String, String)],
    ) -> Vec<(Comparison, &'b str, String)> {
        comparisons(pieces)
            .into_iter()
            .filter(|c| c.operator == Operator::Equals)
            .filter_map(|comparison| {
                let column = pieces[comparison.column].text();
                let table = match comparison.qualifier {
                    Some(q) => table_bound_to(bound, pieces[q].text()),
                    None => self.only_holder(bound, column),
                }?;
                let written = unquote(pieces[comparison.literal].text());
                let unheld = !written.trim().is_empty()
                    && holds(executor, table, column, &written) == Some(false);
                unheld.then_some((comparison, table, written))
            })
            .collect()
    }

    /// The one column of `table` other than `column` that holds `written`
    /// as written.
    fn other_column_holding(
        &self,
        executor: &Executor,
        table: &str,
        column: &str,
        written: &str,
    ) -> Option<String> {
        let mut holding = self
            .columns_of(table)
            .filter(|c| !c.eq_ignore_ascii_case(column))
            .filter(|c| holds(executor, table, c, written) == Some(true));
        let only = holding.next()?;
        holding.next().is_none().then(|| quote_identifier(only))
    }

    /// For a key `table.column` that refers to another table, the keys of
    /// that table's rows named `written` in the one column of it that holds
    /// the text (`(SELECT event_id FROM event WHERE event_name = 'Women''s
    /// Soccer')`): a model compares the key with the row's name instead of
    /// joining the row.
    fn keys_of_row_named(
        &self,
        executor: &Executor,
        table: &str,
        column: &str,
        written: &str,
    ) -> Option<String> {
        let link = self.keys.iter().find(|link| {
            link.table.eq_ignore_ascii_case(table) && link.column.eq_ignore_ascii_case(column)
        })?;
        let named =
            self.other_column_holding(executor, &link.other, &link.other_column, written)?;
        Some(format!(
            "(SELECT {} FROM {} WHERE {named} = {})",
            quote_identifier(&link.other_column),
            quote_identifier(&link.other),
            quote_literal(written)
        ))
    }

    /// For a comparison of a column of `table`, none of which holds
    /// `written`, with that text: when one column of the tables within two
    /// keys holds it as written, the key column of `table` and the keys of
    /// the rows that hold it, along the route of keys there
    /// ([`SchemaNames::keys_along_route`]). A model that puts an artist's
    /// name in the track's own `name` meant the tracks of that artist.
    /// Tables farther away are not probed: a scan of every column of a
    /// large database would cost more than the mend is worth.
    fn keys_of_rows_holding(
        &self,
        executor: &Executor,
        table: &str,
        written: &str,
    ) -> Option<(String, String)> {
        let mut found = None;
        for (holder, columns) in &self.tables {
            if holder.eq_ignore_ascii_case(table) || !self.within_two_keys(table, holder) {
                continue;
            }
            let mut holding = columns
                .iter()
                .filter(|c| holds(executor, holder, c, written) == Some(true));
            let Some(column) = holding.next() else {
                continue;
            };
            if found.is_some() || holding.next().is_some() {
                return None;
            }
            let condition = format!("{} = {}", quote_identifier(column), quote_literal(written));
            found = Some(self.keys_along_route(table, holder, &condition)?);
        }
        found
    }

    /// The one table among the query's `bound` ones that has `column`.
    fn only_holder<'a>(&self, bound: &'a [(String, String)], column: &str) -> Option<&'a str> {
        let mut holders = bound
            .iter()
            .map(|(_, table)| table.as_str())
            .filter(|table| self.has_column(table, column));
        let first = holders.next()?;
        holders
            .all(|t| t.eq_ignore_ascii_case(first))
            .then_some(first)
    }
}

/// Whether a result is one row of zero counts (NULLs aside).
pub(super) fn counts_nothing(result: &QueryResult) -> bool {
    match &result.rows[..] {
        [row] => {
            row.iter()
                .all(|v| matches!(v, Value::Integer(0) | Value::Null))
                && row.contains(&Value::Integer(0))
        }
        _ => false,
    }
}

/// Whether `table.column` holds `written` as written; None when the probe
/// fails.
fn holds(executor: &Executor, table: &str, column: &str, written: &str) -> Option<bool> {
    let held = format!(
        "SELECT 1 FROM {} WHERE {} = {} LIMIT 1",
        quote_identifier(table),
        quote_identifier(column),
        quote_literal(written)
    );
    executor.query(&held).ok().map(|r| r.total_rows > 0)
}

/// The one value of `table.column`, which does not hold `written` itself,
/// that is `written` apart from case or holds it as whole words.
fn stored_spelling(
    executor: &Executor,
    table: &str,
    column: &str,
    written: &str,
) -> Option<String> {
    let (table, column) = (quote_identifier(table), quote_identifier(column));
    let text = quote_literal(written);
    let probe = format!(
        "SELECT DISTINCT {column} FROM {table} \
         WHERE instr(lower(CAST({column} AS TEXT)), lower({text})) > 0 LIMIT {MAX_PROBED}"
    );
    let found = executor.query(&probe).ok()?;
    let stored: Vec<String> = found
        .rows
        .iter()
        .filter_map(|row| match row.first() {
            Some(Value::Text(value)) => Some(value.clone()),
            _ => None,
        })
        .collect();
    let lowercase = written.to_lowercase();
    let same_but_case: Vec<&String> = stored
        .iter()
        .filter(|v| v.to_lowercase() == lowercase)
        .collect();
    if let [only] = same_but_case.as_slice() {
        return Some(only.to_string());
    }
    let holding: Vec<&String> = stored
        .iter()
        .filter(|v| holds_as_words(v, written))
        .collect();
    match holding.as_slice() {
        [only] => Some(only.to_string()),
        _ => None,
    }
}

/// Whether `value` holds `written` (any case) with no letter or digit
/// right before or after it.
fn holds_as_words(value: &str, written: &str) -> bool {
    let (value, written) = (value.to_lowercase(), written.to_lowercase());
    let is_word_char = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    value.match_indices(&written).any(|(at, _)| {
        let before = value[..at].chars().next_back();
        let after = value[at + written.len()..].chars().next();
        !is_word_char(before) && !is_word_char(after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Medallists as a table read from a document.
    fn medals() -> (tempfile::TempDir, Executor, SchemaNames) {
        crate::search::repair::database_from(
            "CREATE TABLE medals (athlete TEXT, nation TEXT, venue TEXT);
             INSERT INTO medals VALUES ('Kim Yu-na', 'South Korea (KOR)', 'Vancouver'),
               ('Yuzuru Hanyu', 'Japan (JPN)', 'Sochi'),
               ('Mao Asada', 'Japan (JPN)', 'Ghent, Belgium'),
               ('Carolina Kostner', 'Italy (ITA)', 'Prince Edward Island'),
               ('Adam Rippon', 'United States (USA)', 'Vancouver Island');",
        )
    }

    fn respelled(sql: &str) -> Option<String> {
        respelled_with_rows(sql).map(|(fixed, _)| fixed)
    }

    fn respelled_with_rows(sql: &str) -> Option<(String, Vec<Vec<Value>>)> {
        let (_dir, executor, names) = medals();
        names
            .respell(&executor, sql)
            .map(|(fixed, result)| (fixed, result.rows.clone()))
    }

    #[test]
    fn a_value_held_with_a_qualifier_is_written_as_stored() {
        let sql = "SELECT T1.athlete FROM medals AS T1 WHERE T1.nation = 'South Korea'";
        assert_eq!(
            respelled_with_rows(sql).unwrap(),
            (
                "SELECT T1.athlete FROM medals AS T1 WHERE T1.nation = 'South Korea (KOR)'".into(),
                vec![vec![Value::Text("Kim Yu-na".into())]]
            )
        );
        assert_eq!(
            respelled("SELECT athlete FROM medals WHERE venue = 'belgium'").unwrap(),
            "SELECT athlete FROM medals WHERE venue = 'Ghent, Belgium'"
        );
    }

    #[test]
    fn a_value_written_in_another_case_takes_the_stored_case_first() {
        // 'Vancouver Island' holds the words too; the same text wins.
        assert_eq!(
            respelled("SELECT athlete FROM medals WHERE venue = 'VANCOUVER'").unwrap(),
            "SELECT athlete FROM medals WHERE venue = 'Vancouver'"
        );
    }

    #[test]
    fn a_value_another_column_holds_moves_the_comparison_there() {
        let sql = "SELECT T1.venue FROM medals AS T1 WHERE T1.nation = 'Kim Yu-na'";
        assert_eq!(
            respelled_with_rows(sql).unwrap(),
            (
                "SELECT T1.venue FROM medals AS T1 WHERE T1.athlete = 'Kim Yu-na'".into(),
                vec![vec![Value::Text("Vancouver".into())]]
            )
        );
        // The column's own spelling of the value comes first.
        assert_eq!(
            respelled("SELECT athlete FROM medals WHERE nation = 'japan (jpn)'").unwrap(),
            "SELECT athlete FROM medals WHERE nation = 'Japan (JPN)'"
        );
    }

    #[test]
    fn a_key_compared_with_a_name_looks_up_the_named_row() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE event (event_id TEXT PRIMARY KEY, event_name TEXT, type TEXT);
             CREATE TABLE attendance (link_to_event TEXT REFERENCES event(event_id), member TEXT);
             INSERT INTO event VALUES ('rec1', 'Women''s Soccer', 'Game'), ('rec2', 'Meeting', 'Meeting');
             INSERT INTO attendance VALUES ('rec1', 'Ann'), ('rec1', 'Bo'), ('rec2', 'Ann');",
        );
        let sql =
            "SELECT COUNT(*) FROM attendance AS T2 WHERE T2.link_to_event = 'Women''s Soccer'";
        let (fixed, result) = names.respell(&executor, sql).unwrap();
        assert_eq!(
            fixed,
            "SELECT COUNT(*) FROM attendance AS T2 WHERE T2.link_to_event IN \
             (SELECT event_id FROM event WHERE event_name = 'Women''s Soccer')"
        );
        assert_eq!(result.rows, vec![vec![Value::Integer(2)]]);
        // Two columns of the row hold it: no single name, no change.
        let sql = "SELECT member FROM attendance WHERE link_to_event = 'Meeting'";
        assert!(names.respell(&executor, sql).is_none());
    }

    #[test]
    fn a_value_a_table_two_keys_away_holds_picks_the_rows_linked_to_it() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE artists (artist_id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE albums (album_id INTEGER PRIMARY KEY, title TEXT,
                 artist_id INTEGER REFERENCES artists(artist_id));
             CREATE TABLE tracks (track_id INTEGER PRIMARY KEY, name TEXT,
                 album_id INTEGER REFERENCES albums(album_id));
             INSERT INTO artists VALUES (1, 'Queen'), (2, 'U2');
             INSERT INTO albums VALUES (10, 'Jazz', 1), (20, 'Boy', 2);
             INSERT INTO tracks VALUES (100, 'Mustapha', 10), (200, 'I Will Follow', 20),
               (300, 'Boy', 20);",
        );
        let sql = "SELECT T1.name FROM tracks AS T1 WHERE T1.name = 'Queen'";
        let (fixed, result) = names.respell(&executor, sql).unwrap();
        assert_eq!(
            fixed,
            "SELECT T1.name FROM tracks AS T1 WHERE T1.album_id IN (SELECT album_id FROM albums \
             WHERE artist_id IN (SELECT artist_id FROM artists WHERE name = 'Queen'))"
        );
        assert_eq!(result.rows, vec![vec![Value::Text("Mustapha".into())]]);
        // One key away: the album's rows.
        let sql = "SELECT title FROM albums WHERE title = 'U2'";
        assert_eq!(
            names.respell(&executor, sql).unwrap().0,
            "SELECT title FROM albums WHERE artist_id IN (SELECT artist_id FROM artists WHERE name = 'U2')"
        );
        // A text two tables hold ('Boy': an album and a track) names no
        // single place.
        let sql = "SELECT name FROM artists WHERE name = 'Boy'";
        assert!(names.respell(&executor, sql).is_none());
    }

    #[test]
    fn a_count_of_zero_moves_a_text_stored_elsewhere_but_never_respells_it() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE departments (code TEXT PRIMARY KEY, name TEXT);
             CREATE TABLE employees (full_name TEXT, dept TEXT REFERENCES departments(code));
             INSERT INTO departments VALUES ('ENG', 'Engineering'), ('HR', 'Human Resources');
             INSERT INTO employees VALUES ('Ann', 'ENG'), ('Bo', 'ENG'), ('Cy', 'HR');",
        );
        let sql = "SELECT COUNT(*) FROM employees WHERE dept = 'Engineering'";
        let counted = executor.query(sql).unwrap();
        assert!(counts_nothing(&counted));
        let (moved, result) = names.relocate_counted(&executor, sql).unwrap();
        assert_eq!(
            moved,
            "SELECT COUNT(*) FROM employees WHERE dept IN \
             (SELECT code FROM departments WHERE name = 'Engineering')"
        );
        assert_eq!(result.rows, vec![vec![Value::Integer(2)]]);
        // 'engineering' is a spelling no column stores: its count stays.
        let sql = "SELECT COUNT(*) FROM employees WHERE dept = 'engineering'";
        assert!(names.relocate_counted(&executor, sql).is_none());
        // A count that finds rows is no count of nothing.
        let sql = "SELECT COUNT(*) FROM employees WHERE dept = 'ENG'";
        assert!(!counts_nothing(&executor.query(sql).unwrap()));
    }

    #[test]
    fn a_value_two_other_columns_hold_stays_where_it_is() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE games (home TEXT, away TEXT, venue TEXT);
             INSERT INTO games VALUES ('Ajax', 'PSV', 'Amsterdam'), ('PSV', 'Ajax', 'Eindhoven');",
        );
        let sql = "SELECT home FROM games WHERE venue = 'Ajax'";
        assert!(names.respell(&executor, sql).is_none());
    }

    #[test]
    fn no_single_stored_spelling_means_no_change() {
        // Stored as written: the query is empty for another reason.
        assert_eq!(
            respelled(
                "SELECT athlete FROM medals WHERE venue = 'Sochi' AND nation = 'Italy (ITA)'"
            ),
            None
        );
        // Two venues hold the word.
        assert_eq!(
            respelled("SELECT athlete FROM medals WHERE venue = 'Island'"),
            None
        );
        // Part of a word is not a word.
        assert_eq!(
            respelled("SELECT athlete FROM medals WHERE nation = 'Ja'"),
            None
        );
    }
}
