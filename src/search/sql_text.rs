//! Word-level edits of SQL text: the words of a query outside string
//! literals, the aliases its FROM and JOIN clauses give, and replacements
//! of a name or a qualified name. Enough to fix a misspelt name without
//! re-printing the query (which would change its layout and quoting).

/// A piece of SQL text: a word (letters, digits, `_`) or anything else,
/// string literals included whole.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Piece<'a> {
    Word(&'a str),
    Other(&'a str),
}

pub(super) fn pieces(sql: &str) -> Vec<Piece<'_>> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut chars = sql.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        if c == '\'' {
            // Through the closing quote ('' escapes a quote).
            while let Some((i, d)) = chars.next() {
                end = i + d.len_utf8();
                if d == '\'' {
                    if chars.peek().map(|&(_, e)| e) != Some('\'') {
                        break;
                    }
                    chars.next();
                    end += 1;
                }
            }
            out.push(Piece::Other(&sql[start..end]));
        } else if is_word(c) {
            while let Some(&(i, d)) = chars.peek() {
                if !is_word(d) {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            out.push(Piece::Word(&sql[start..end]));
        } else {
            // A run of punctuation and spaces, as one piece.
            while let Some(&(i, d)) = chars.peek() {
                if is_word(d) || d == '\'' {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            out.push(Piece::Other(&sql[start..end]));
        }
    }
    out
}

fn join(pieces: &[Piece<'_>]) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Word(w) | Piece::Other(w) => *w,
        })
        .collect()
}

/// `sql` with every occurrence of the word `old` outside string literals
/// replaced by `new`; None when there is none.
pub fn replace_identifier(sql: &str, old: &str, new: &str) -> Option<String> {
    let mut pieces = pieces(sql);
    let mut replaced = false;
    for piece in &mut pieces {
        if matches!(piece, Piece::Word(w) if w.eq_ignore_ascii_case(old)) {
            *piece = Piece::Word(new);
            replaced = true;
        }
    }
    replaced.then(|| join(&pieces))
}

/// `sql` with every `qualifier.column` (either part may be quoted) written
/// `new_qualifier.new_column`; None when there is none.
pub fn replace_qualified(
    sql: &str,
    (qualifier, column): (&str, &str),
    (new_qualifier, new_column): (&str, &str),
) -> Option<String> {
    // The dot, with any quotes around it: `T1.x`, `"T1"."x"`, `T1."x"`.
    let dot = |p: &Piece<'_>| matches!(p, Piece::Other(t) if t.trim_matches(|c| c == '"' || c == '`') == ".");
    let mut pieces = pieces(sql);
    let mut replaced = false;
    for i in 0..pieces.len() {
        let Piece::Word(first) = pieces[i] else {
            continue;
        };
        let is_match = first.eq_ignore_ascii_case(qualifier)
            && pieces.get(i + 1).is_some_and(dot)
            && matches!(pieces.get(i + 2), Some(Piece::Word(w)) if w.eq_ignore_ascii_case(column));
        if is_match {
            pieces[i] = Piece::Word(new_qualifier);
            pieces[i + 2] = Piece::Word(new_column);
            replaced = true;
        }
    }
    replaced.then(|| join(&pieces))
}

/// Words that end a table reference instead of naming its alias.
const NOT_ALIASES: &[&str] = &[
    "on",
    "using",
    "where",
    "join",
    "inner",
    "left",
    "right",
    "full",
    "cross",
    "natural",
    "outer",
    "group",
    "order",
    "limit",
    "having",
    "union",
    "except",
    "intersect",
    "window",
    "as",
    "select",
    "from",
];

/// The `(name, table)` pairs a query's FROM and JOIN clauses bind: each
/// alias, and each table under its own name.
pub fn table_aliases(sql: &str) -> Vec<(String, String)> {
    let words: Vec<&str> = pieces(sql)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Word(w) => Some(w),
            Piece::Other(_) => None,
        })
        .collect();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if !(word.eq_ignore_ascii_case("from") || word.eq_ignore_ascii_case("join")) {
            continue;
        }
        let Some(table) = words.get(i + 1) else {
            continue;
        };
        out.push((table.to_string(), table.to_string()));
        let mut next = i + 2;
        if words
            .get(next)
            .is_some_and(|w| w.eq_ignore_ascii_case("as"))
        {
            next += 1;
        }
        if let Some(alias) = words.get(next) {
            if !NOT_ALIASES.iter().any(|k| alias.eq_ignore_ascii_case(k)) {
                out.push((alias.to_string(), table.to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_replaced_outside_literals_only() {
        assert_eq!(
            replace_identifier(
                "SELECT Agee FROM t WHERE x = 'Agee''s' AND Agee > 1",
                "agee",
                "Age"
            )
            .as_deref(),
            Some("SELECT Age FROM t WHERE x = 'Agee''s' AND Age > 1")
        );
        assert_eq!(replace_identifier("SELECT a FROM t", "b", "c"), None);
    }

    #[test]
    fn qualified_names_are_replaced_with_their_quotes_kept() {
        let sql = r#"SELECT T2.Total, "T2"."Total", T2.Totals FROM a AS T1 JOIN b AS T2"#;
        assert_eq!(
            replace_qualified(sql, ("T2", "Total"), ("T1", "Total")).as_deref(),
            Some(r#"SELECT T1.Total, "T1"."Total", T2.Totals FROM a AS T1 JOIN b AS T2"#)
        );
    }

    #[test]
    fn aliases_come_from_from_and_join_clauses() {
        let sql = "SELECT * FROM airport AS T1 INNER JOIN airport_aircraft T2 ON T1.id = T2.id JOIN pilot WHERE 1";
        let pairs = table_aliases(sql);
        let has = |name: &str, table: &str| pairs.contains(&(name.into(), table.into()));
        assert!(
            has("T1", "airport") && has("airport", "airport"),
            "{pairs:?}"
        );
        assert!(has("T2", "airport_aircraft"), "{pairs:?}");
        assert!(
            has("pilot", "pilot") && !pairs.iter().any(|(n, _)| n == "WHERE"),
            "{pairs:?}"
        );
    }
}
