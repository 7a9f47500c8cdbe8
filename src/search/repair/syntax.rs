//! Two slips of syntax small models make, each with one clear fix: a
//! type cast's `AS REAL` written inside another call (`SUM(x AS REAL)`,
//! most often one `AS REAL)` more than the query has CASTs, as in
//! `CAST(SUM(x) AS REAL) AS REAL)`), and a filter tied to the FROM clause
//! with AND instead of WHERE (`FROM t AND x = 1`). SQLite reports both as
//! a syntax error near the word, so each fix runs only for its word.

use super::super::sql_text::{skip_spaces, units, Unit, CLAUSES_AFTER_FROM};

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
    let units = units(sql);
    let mut open: Vec<Open> = Vec::new();
    // The byte ranges dropped: the spaces before each AS through its type.
    let mut dropped: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, &(at, unit)) in units.iter().enumerate() {
        match unit {
            Unit::Sign('(') => {
                // Only a parenthesis right after a word (spaces between
                // allowed) is that word's call.
                let before = (0..i)
                    .rev()
                    .find(|&b| !units[b].1.is_space())
                    .map(|b| units[b].1);
                open.push(match before {
                    Some(Unit::Word(w)) if w.eq_ignore_ascii_case("cast") => Open::Cast,
                    Some(Unit::Word(w)) if !NOT_CALLS.iter().any(|k| w.eq_ignore_ascii_case(k)) => {
                        Open::OtherCall
                    }
                    _ => Open::Group,
                });
            }
            Unit::Sign(')') => {
                open.pop();
            }
            Unit::Word(w)
                if w.eq_ignore_ascii_case("as") && open.last() == Some(&Open::OtherCall) =>
            {
                let type_at = skip_spaces(&units, i + 1);
                let closes = |t: usize| {
                    units.get(skip_spaces(&units, t + 1)).map(|u| u.1) == Some(Unit::Sign(')'))
                };
                // Where the type's name ends, when one follows.
                let type_end = match units.get(type_at) {
                    Some(&(start, Unit::Word(t)))
                        if TYPE_NAMES.iter().any(|n| t.eq_ignore_ascii_case(n)) =>
                    {
                        Some(start + t.len())
                    }
                    _ => None,
                };
                if let Some(end) = type_end.filter(|_| type_at > i + 1 && closes(type_at)) {
                    dropped.push(sql[..at].trim_end().len()..end);
                }
            }
            _ => {}
        }
    }
    if dropped.is_empty() {
        return None;
    }
    let mut fixed = String::with_capacity(sql.len());
    let mut kept_from = 0;
    for range in dropped {
        fixed.push_str(&sql[kept_from..range.start]);
        kept_from = range.end;
    }
    fixed.push_str(&sql[kept_from..]);
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
