//! Plain names for a database whose tables or columns have names that
//! must be quoted (`"Order Items"`, `"Unit Price"`, `"Free Meal Count
//! (K-12)"`, a keyword such as `"order"`). A small model drops the quotes
//! and writes `T1.Unit Price`, which no name check or repair can read, so
//! the engine shows such a name as a plain word (`Unit_Price`) and turns
//! the plain words back into the real, quoted names in every query it
//! runs and every answer it gives. Error messages come back in plain
//! words too.

use super::schema::{is_plain_identifier, plain_identifier, Schema};
use std::collections::HashMap;

/// The plain word standing for each name that must be quoted, both ways.
#[derive(Debug, Clone, Default)]
pub struct PlainNames {
    /// Lowercased plain word -> real name.
    real_of: HashMap<String, String>,
    /// Real name -> plain word.
    plain_of: HashMap<String, String>,
}

impl PlainNames {
    /// The plain words for `schema`'s names that must be quoted; None when
    /// every name is a plain word already. Each real name gets one word,
    /// used wherever it occurs, that is no other name of the database and
    /// no keyword.
    fn of(schema: &Schema) -> Option<Self> {
        let real_names: Vec<&str> = schema
            .tables
            .iter()
            .flat_map(|t| {
                std::iter::once(t.name.as_str()).chain(t.columns.iter().map(|c| c.name.as_str()))
            })
            .collect();
        let mut taken: std::collections::HashSet<String> =
            real_names.iter().map(|n| n.to_lowercase()).collect();
        let mut names = PlainNames::default();
        for real in real_names {
            if is_plain_identifier(real) || names.plain_of.contains_key(real) {
                continue;
            }
            let base = plain_identifier(real, "n");
            let plain = std::iter::once(base.clone())
                .chain((2..).map(|k| format!("{base}_{k}")))
                .find(|word| !taken.contains(&word.to_lowercase()))
                .expect("an unused word");
            taken.insert(plain.to_lowercase());
            names.real_of.insert(plain.to_lowercase(), real.to_string());
            names.plain_of.insert(real.to_string(), plain);
        }
        (!names.plain_of.is_empty()).then_some(names)
    }

    /// `schema` as the model sees it, and the plain words it shows (None
    /// when it shows the real names).
    pub fn seen_by_model(schema: Schema) -> (Option<Self>, Schema) {
        match Self::of(&schema) {
            Some(names) => {
                let plain = names.plain_schema(&schema);
                (Some(names), plain)
            }
            None => (None, schema),
        }
    }

    /// `schema` with its names as the model sees them.
    fn plain_schema(&self, schema: &Schema) -> Schema {
        let mut plain = schema.clone();
        for table in &mut plain.tables {
            self.rename(&mut table.name);
            for column in &mut table.columns {
                self.rename(&mut column.name);
            }
            for key in &mut table.foreign_keys {
                self.rename(&mut key.column);
                self.rename(&mut key.foreign_table);
                if let Some(column) = &mut key.foreign_column {
                    self.rename(column);
                }
            }
        }
        plain
    }

    fn rename(&self, name: &mut String) {
        if let Some(plain) = self.plain_of.get(name.as_str()) {
            *name = plain.clone();
        }
    }

    /// `sql` with every plain word standing for a real name (bare, or
    /// alone in quotes) written as that name, quoted; string literals and
    /// comments are left as they are. Also returns where each rewritten
    /// stretch starts and ends in both texts, to place SQLite's error
    /// offsets back in `sql`.
    pub fn to_real(&self, sql: &str) -> (String, Vec<(usize, usize)>) {
        // Scanned by hand rather than with sqlparser's tokenizer: a model's
        // query is often broken (an unclosed quote), and its names must
        // still be rewritten for the error to speak of them.
        let mut out = String::with_capacity(sql.len() + 16);
        let mut anchors = Vec::new();
        let mut chars = sql.char_indices().peekable();
        while let Some((start, c)) = chars.next() {
            // Where this piece ends, and the name it may stand for.
            let (end, name) = if c == '\'' {
                (literal_end(sql, start), None)
            } else if let Some(end) = comment_end(sql, start) {
                (end, None)
            } else if matches!(c, '"' | '`' | '[') {
                let close = if c == '[' { ']' } else { c };
                match sql[start + 1..].find(close) {
                    Some(at) => (start + 1 + at + 1, Some(&sql[start + 1..start + 1 + at])),
                    None => (sql.len(), Some(&sql[start + 1..])),
                }
            } else if is_word_char(c) {
                let end = sql[start..]
                    .char_indices()
                    .find(|&(_, d)| !is_word_char(d))
                    .map_or(sql.len(), |(at, _)| start + at);
                (end, Some(&sql[start..end]))
            } else {
                (start + c.len_utf8(), None)
            };
            while chars.peek().is_some_and(|&(i, _)| i < end) {
                chars.next();
            }
            match name.and_then(|n| self.real_of.get(&n.to_lowercase())) {
                Some(real) => {
                    anchors.push((out.len(), start));
                    out.push_str(&quoted(real));
                    anchors.push((out.len(), end));
                }
                None => out.push_str(&sql[start..end]),
            }
        }
        (out, anchors)
    }

    /// A byte offset into a query [`PlainNames::to_real`] wrote, placed in
    /// the text it was written from.
    pub fn offset_in_plain(anchors: &[(usize, usize)], offset: usize) -> usize {
        match anchors.iter().rev().find(|&&(real, _)| real <= offset) {
            Some(&(real, plain)) => plain + (offset - real),
            None => offset,
        }
    }

    /// `message` (an SQLite error) with the real names it quotes written
    /// as their plain words, longest first so a name inside a longer one
    /// is not cut, and only where no word character touches them (`order`
    /// in `order_date` is not the column `"order"`).
    pub fn to_plain(&self, message: &str) -> String {
        let mut reals: Vec<(&String, &String)> = self.plain_of.iter().collect();
        reals.sort_by_key(|(real, _)| std::cmp::Reverse(real.len()));
        reals
            .into_iter()
            .fold(message.to_string(), |text, (real, plain)| {
                replace_whole(&text, real, plain)
            })
    }
}

/// `text` with each occurrence of `name` that no word character touches
/// written `word`.
fn replace_whole(text: &str, name: &str, word: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(name) {
        let end = at + name.len();
        let touched = text[..at].chars().next_back().is_some_and(is_word_char)
            || text[end..].chars().next().is_some_and(is_word_char);
        if touched {
            continue;
        }
        out.push_str(&text[copied..at]);
        out.push_str(word);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether `c` can stand in a name SQLite reads unquoted.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Where the comment opening at `start` (`--` to the line's end, or
/// `/* ... */`, such as a query's functions) ends; None when none opens there.
fn comment_end(sql: &str, start: usize) -> Option<usize> {
    let rest = &sql[start..];
    if rest.starts_with("--") {
        return Some(rest.find('\n').map_or(sql.len(), |at| start + at));
    }
    let body = rest.strip_prefix("/*")?;
    Some(body.find("*/").map_or(sql.len(), |at| start + 2 + at + 2))
}

/// Where the string literal opening at `start` ends (after its closing
/// quote; `''` is a quote inside it), or the text's end.
fn literal_end(sql: &str, start: usize) -> usize {
    let bytes = sql.as_bytes();
    let mut i = start + 1;
    while i < bytes.len() {
        if bytes[i] == b'\'' {
            if bytes.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    sql.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{Column, ForeignKey, Table};

    fn column(name: &str) -> Column {
        Column {
            name: name.into(),
            declared_type: "TEXT".into(),
            primary_key: false,
            examples: Vec::new(),
            description: None,
            value_description: None,
            json: None,
        }
    }

    fn shop() -> Schema {
        Schema {
            tables: vec![
                Table {
                    name: "Order Items".into(),
                    is_view: false,
                    row_count: Some(1),
                    columns: vec![column("id"), column("Unit Price"), column("Unit_Price")],
                    foreign_keys: vec![ForeignKey {
                        column: "id".into(),
                        foreign_table: "Orders".into(),
                        foreign_column: Some("Order ID".into()),
                        implied: false,
                    }],
                },
                Table {
                    name: "Orders".into(),
                    is_view: false,
                    row_count: Some(1),
                    columns: vec![
                        column("Order ID"),
                        column("Free Meal Count (K-12)"),
                        column("2nd place"),
                        column("order"),
                    ],
                    foreign_keys: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn names_that_need_quotes_become_words_no_other_name_uses() {
        let (names, plain) = PlainNames::seen_by_model(shop());
        assert!(names.is_some(), "some names need quotes");
        let items = &plain.tables[0];
        assert_eq!(items.name, "Order_Items");
        let columns: Vec<&str> = items.columns.iter().map(|c| c.name.as_str()).collect();
        // `Unit_Price` is a real column already: the spaced one gets another word.
        assert_eq!(columns, ["id", "Unit_Price_2", "Unit_Price"]);
        assert_eq!(
            items.foreign_keys[0].foreign_column.as_deref(),
            Some("Order_ID")
        );
        let orders: Vec<&str> = plain.tables[1]
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            orders,
            ["Order_ID", "Free_Meal_Count_K_12", "n_2nd_place", "order_"]
        );
    }

    #[test]
    fn a_database_of_plain_names_needs_none() {
        let schema = Schema {
            tables: vec![Table {
                name: "singer".into(),
                is_view: false,
                row_count: Some(1),
                columns: vec![column("Singer_ID"), column("名前")],
                foreign_keys: Vec::new(),
            }],
        };
        assert!(PlainNames::seen_by_model(schema).0.is_none());
    }

    #[test]
    fn queries_get_the_real_names_back_and_literals_stay() {
        let names = PlainNames::of(&shop()).unwrap();
        let (real, anchors) = names.to_real(
            "SELECT T1.unit_price_2, `Order_ID` FROM Order_Items AS T1 WHERE x = 'Order_Items''s' AND Unit_Price > 1",
        );
        assert_eq!(
            real,
            "SELECT T1.\"Unit Price\", \"Order ID\" FROM \"Order Items\" AS T1 WHERE x = 'Order_Items''s' AND Unit_Price > 1"
        );
        // `WHERE` stands at byte 60 of the real text and 58 of the plain one.
        assert_eq!(PlainNames::offset_in_plain(&anchors, 60), 58);
        assert_eq!(PlainNames::offset_in_plain(&anchors, 3), 3);
        // Comments, such as the block a query's functions travel in, stay.
        let commented = "/*js Order_Items */ SELECT 1 -- Order_Items\nFROM Order_Items";
        assert_eq!(
            names.to_real(commented).0,
            "/*js Order_Items */ SELECT 1 -- Order_Items\nFROM \"Order Items\""
        );
        assert_eq!(
            names.to_plain("no such column: T1.Unit Price"),
            "no such column: T1.Unit_Price_2"
        );
        assert_eq!(
            names.to_plain("no such column: order_date near order"),
            "no such column: order_date near order_"
        );
    }
}
