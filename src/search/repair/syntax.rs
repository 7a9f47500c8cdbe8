//! Two slips of syntax small models make, each with one clear fix: a
//! type cast's `AS REAL` written inside another call (`SUM(x AS REAL)`,
//! most often one `AS REAL)` more than the query has CASTs, as in
//! `CAST(SUM(x) AS REAL) AS REAL)`), and a filter tied to the FROM clause
//! with AND instead of WHERE (`FROM t AND x = 1`). SQLite reports both as
//! a syntax error near the word, so each fix runs only for its word.

use super::super::sql_text::{pieces, units, Piece, Unit, CLAUSES_AFTER_FROM};

/// Type names a cast converts to, as SQLite and the models write them.
const TYPE_NAMES: &[&str] = &[
    "real", "integer", "int", "text", "float", "numeric", "decimal", "double", "varchar", "char",
    "blob", "bigint",
];

/// Words before a parenthesis that make it no call: a group, a list or a
/// subquery follows.
const NOT_CALLS: &[&str] = &[
    "in", "exists", "as", "on", "from", "join", "values", "and", "or", "not", "where", "select",
    "over", "using", "then", "else", "when", "case", "by", "having", "is",
];

/// Words besides the clauses after a FROM that end its list of tables:
/// join conditions, and a subquery's own SELECT.
const ALSO_AFTER_TABLES: [&str; 4] = ["on", "using", "window", "select"];

/// `sql` fixed for SQLite's syntax error near `word`, when it is one of
/// the slips this module knows.
pub(super) fn fix_near(sql: &str, word: &str) -> Option<String> {
    if word.eq_ignore_ascii_case("as") {
        drop_misplaced_casts(sql)
    } else if word.eq_ignore_ascii_case("and") || word.eq_ignore_ascii_case("or") {
        where_for_and(sql)
    } else {
        None
    }
}

/// What an open parenthesis is.
#[derive(Clone, Copy, PartialEq)]
enum Open {
    Cast,
    OtherCall,
    Group,
}

/// `sql` without each ` AS type` whose innermost open parenthesis is a
/// call other than CAST's; None when there is none.
fn drop_misplaced_casts(sql: &str) -> Option<String> {
    let pieces = pieces(sql);
    let mut open: Vec<Open> = Vec::new();
    // Where each dropped ` AS type` starts: its AS.
    let mut dropped: Vec<usize> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Other(text) if !text.starts_with('\'') => {
                let called = match i.checked_sub(1).map(|b| &pieces[b]) {
                    Some(Piece::Word(w)) if w.eq_ignore_ascii_case("cast") => Open::Cast,
                    Some(Piece::Word(w))
                        if !NOT_CALLS.iter().any(|k| w.eq_ignore_ascii_case(k)) =>
                    {
                        Open::OtherCall
                    }
                    _ => Open::Group,
                };
                // Only a parenthesis right after the word (spaces between
                // allowed) is that word's call.
                let mut first = true;
                for c in text.chars() {
                    match c {
                        '(' => open.push(if first { called } else { Open::Group }),
                        ')' => {
                            open.pop();
                        }
                        _ => {}
                    }
                    first &= c.is_whitespace();
                }
            }
            Piece::Word(w) if w.eq_ignore_ascii_case("as") => {
                let type_follows = matches!(
                    (pieces.get(i + 1), pieces.get(i + 2), pieces.get(i + 3)),
                    (Some(Piece::Other(space)), Some(Piece::Word(t)), Some(Piece::Other(after)))
                        if space.trim().is_empty()
                            && TYPE_NAMES.iter().any(|n| t.eq_ignore_ascii_case(n))
                            && after.trim_start().starts_with(')')
                );
                if type_follows && open.last() == Some(&Open::OtherCall) {
                    dropped.push(i);
                }
            }
            _ => {}
        }
    }
    if dropped.is_empty() {
        return None;
    }
    let mut fixed = String::with_capacity(sql.len());
    let mut skip = 0;
    for (i, piece) in pieces.iter().enumerate() {
        if dropped.contains(&i) {
            // The spaces before AS go with it; AS, a space, the type.
            fixed.truncate(fixed.trim_end().len());
            skip = 3;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        fixed.push_str(piece.text());
    }
    Some(fixed)
}

/// `sql` with the first AND (or OR) that directly follows a FROM clause's
/// tables, before any WHERE or join condition, made a WHERE; None when
/// there is no such word.
fn where_for_and(sql: &str) -> Option<String> {
    let mut depth = 0usize;
    // The depths at which a FROM's list of tables is still open.
    let mut listing: Vec<usize> = Vec::new();
    for (at, unit) in units(sql) {
        match unit {
            Unit::Sign('(') => depth += 1,
            Unit::Sign(')') => {
                listing.retain(|&d| d < depth);
                depth = depth.saturating_sub(1);
            }
            Unit::Word(w) if w.eq_ignore_ascii_case("from") => listing.push(depth),
            Unit::Word(w)
                if CLAUSES_AFTER_FROM
                    .iter()
                    .chain(&ALSO_AFTER_TABLES)
                    .any(|k| w.eq_ignore_ascii_case(k)) =>
            {
                listing.retain(|&d| d != depth);
            }
            Unit::Word(w)
                if (w.eq_ignore_ascii_case("and") || w.eq_ignore_ascii_case("or"))
                    && listing.last() == Some(&depth) =>
            {
                return Some(format!("{}WHERE{}", &sql[..at], &sql[at + w.len()..]));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cast_written_inside_another_call_is_dropped() {
        assert_eq!(
            fix_near("SELECT SUM(Cast(x AS REAL) AS REAL) AS total FROM t", "AS").as_deref(),
            Some("SELECT SUM(Cast(x AS REAL)) AS total FROM t")
        );
        assert_eq!(
            fix_near(
                "SELECT CAST(CAST(SUM(SQRT((a / b) * c) AS REAL) AS REAL) AS REAL) AS v FROM t",
                "AS"
            )
            .as_deref(),
            Some("SELECT CAST(CAST(SUM(SQRT((a / b) * c)) AS REAL) AS REAL) AS v FROM t")
        );
    }

    #[test]
    fn casts_aliases_and_subqueries_are_left_alone() {
        for sql in [
            "SELECT CAST(SUM(x) AS REAL) / COUNT(*) FROM t",
            "SELECT (x) AS REAL FROM t",
            "SELECT x FROM t WHERE y IN (SELECT z AS real)",
            "SELECT 'SUM(x AS REAL)' FROM t",
        ] {
            assert_eq!(fix_near(sql, "AS"), None, "{sql}");
        }
    }

    #[test]
    fn an_and_after_the_tables_becomes_where() {
        assert_eq!(
            fix_near(
                "SELECT a FROM t AND b = (SELECT c FROM u WHERE d = 1 AND e = 2)",
                "AND"
            )
            .as_deref(),
            Some("SELECT a FROM t WHERE b = (SELECT c FROM u WHERE d = 1 AND e = 2)")
        );
        assert_eq!(
            fix_near("SELECT a FROM t, u AND t.k = u.k", "and").as_deref(),
            Some("SELECT a FROM t, u WHERE t.k = u.k")
        );
    }

    #[test]
    fn conditions_already_under_where_or_on_are_left_alone() {
        for sql in [
            "SELECT a FROM t WHERE b = 1 AND c = 2",
            "SELECT a FROM t JOIN u ON t.k = u.k AND u.x = 1",
            "SELECT a FROM (SELECT b FROM u) AS s WHERE s.b = 1 AND 'x' = 'x'",
            "SELECT x AND y FROM t",
        ] {
            assert_eq!(fix_near(sql, "AND"), None, "{sql}");
        }
    }
}
