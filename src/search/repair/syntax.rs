//! Slips of syntax small models make, each with one clear fix: a type
//! cast's `AS REAL` written inside another call (`SUM(x AS REAL)`, most
//! often one `AS REAL)` more than the query has CASTs, as in
//! `CAST(SUM(x) AS REAL) AS REAL)`) or after its own parenthesis
//! (`CAST(a / b) AS REAL`), a filter tied to the FROM clause with AND
//! instead of WHERE (`FROM t AND x = 1`), an AS written where a condition
//! begins (`AND AS aspiration = 'Turbo'`: the model, refused a column its
//! tables lack, escaped through the keyword that begins the name) and an
//! alias given to a CASE branch (`ELSE a - b AS "Left" END`) or holding
//! signs (`AS R&D_S.Revenue`, quoted), and conditions of a WHERE or HAVING
//! separated by commas (`WHERE a = 1, b = 2`); clauses written out of order go to
//! `clause_order`. SQLite reports each as a syntax error near a word or a
//! sign, so each fix runs only for its token.

use super::super::sql_text::{
    is_word_char, skip_spaces, unit_offset, units, Unit, CLAUSES_AFTER_FROM,
};
use super::clause_order;

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

/// `sql` fixed for SQLite's syntax error near `word` (a word or signs),
/// when it is one of the slips this module knows.
pub(super) fn fix_near(sql: &str, word: &str) -> Option<String> {
    if word.eq_ignore_ascii_case("as") {
        drop_misplaced_casts(sql)
            .or_else(|| drop_as_opening_a_condition(sql))
            .or_else(|| drop_alias_before_end(sql))
    } else if word.eq_ignore_ascii_case("and") || word.eq_ignore_ascii_case("or") {
        where_for_and(sql)
    } else if word == ")" {
        type_into_cast(sql)
    } else if clause_order::may_be_misplaced(word) {
        clause_order::reorder(sql)
    } else if word == "," {
        and_for_commas_between_conditions(sql).or_else(|| quote_aliases_with_signs(sql))
    } else if !word.is_empty() && !word.chars().any(is_word_char) {
        quote_aliases_with_signs(sql)
    } else {
        None
    }
}

/// `sql` with the first CAST that closes without its type given the
/// ` AS type` written after its parenthesis at the same level (`CAST(a /
/// b) AS REAL / 1000`, `CAST(a / b) * 100 AS REAL AS ratio`), moved inside
/// it; None when there is no such CAST, or no type follows it before the
/// level's next item.
fn type_into_cast(sql: &str) -> Option<String> {
    let units = units(sql);
    // Each open parenthesis: whether it is CAST's, and whether its AS was seen.
    let mut open: Vec<(bool, bool)> = Vec::new();
    for (i, &(at, unit)) in units.iter().enumerate() {
        match unit {
            Unit::Sign('(') => open.push((opened(&units, i) == Open::Cast, false)),
            Unit::Word(w) if w.eq_ignore_ascii_case("as") => {
                if let Some(last) = open.last_mut() {
                    last.1 = true;
                }
            }
            Unit::Sign(')') => match open.pop() {
                Some((true, false)) => {
                    let (start, end) = type_after(sql, &units, i + 1)?;
                    let written = &sql[start..end];
                    let type_name = written.trim_start()[2..].trim_start();
                    return Some(format!(
                        "{} AS {type_name}{}{}",
                        sql[..at].trim_end(),
                        &sql[at..start],
                        &sql[end..]
                    ));
                }
                _ => continue,
            },
            _ => {}
        }
    }
    None
}

/// The byte range of the first ` AS type` from unit `from` on at the same
/// level (spaces before AS included), before a comma, a FROM or the
/// level's end; None when there is none there.
fn type_after(sql: &str, units: &[(usize, Unit)], from: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    for j in from..units.len() {
        match units[j].1 {
            Unit::Sign('(') => depth += 1,
            Unit::Sign(')') if depth == 0 => return None,
            Unit::Sign(')') => depth -= 1,
            Unit::Sign(',') if depth == 0 => return None,
            Unit::Word(w) if depth == 0 && w.eq_ignore_ascii_case("from") => return None,
            Unit::Word(w) if depth == 0 && w.eq_ignore_ascii_case("as") => {
                let type_at = skip_spaces(units, j + 1);
                return match units.get(type_at) {
                    Some(&(start, Unit::Word(t)))
                        if type_at > j + 1
                            && TYPE_NAMES.iter().any(|n| t.eq_ignore_ascii_case(n)) =>
                    {
                        Some((sql[..units[j].0].trim_end().len(), start + t.len()))
                    }
                    _ => None,
                };
            }
            _ => {}
        }
    }
    None
}

/// What an open parenthesis is.
#[derive(Clone, Copy, PartialEq)]
enum Open {
    Cast,
    OtherCall,
    Group,
}

/// What the parenthesis at unit `i` opens: only one right after a word
/// (spaces between allowed) is that word's call.
fn opened(units: &[(usize, Unit)], i: usize) -> Open {
    match unit_before(units, i) {
        Some(Unit::Word(w)) if w.eq_ignore_ascii_case("cast") => Open::Cast,
        Some(Unit::Word(w)) if !NOT_CALLS.iter().any(|k| w.eq_ignore_ascii_case(k)) => {
            Open::OtherCall
        }
        _ => Open::Group,
    }
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
            Unit::Sign('(') => open.push(opened(&units, i)),
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
    without(sql, &dropped)
}

/// Words after which a condition begins, where AS can only be a slip.
const CONDITION_STARTS: &[&str] = &["where", "and", "or", "on", "having", "when", "not"];

/// `sql` without each AS (and the spaces after it) that directly follows a
/// word beginning a condition (`WHERE AS x`); None when there is none.
fn drop_as_opening_a_condition(sql: &str) -> Option<String> {
    let units = units(sql);
    let dropped: Vec<std::ops::Range<usize>> = units
        .iter()
        .enumerate()
        .filter(|&(i, &(_, unit))| {
            matches!(unit, Unit::Word(w) if w.eq_ignore_ascii_case("as"))
                && word_before(&units, i)
                    .is_some_and(|b| CONDITION_STARTS.iter().any(|k| b.eq_ignore_ascii_case(k)))
        })
        .map(|(i, &(at, _))| at..unit_offset(sql, &units, skip_spaces(&units, i + 1)))
        .collect();
    without(sql, &dropped)
}

/// `sql` without each ` AS name` that directly precedes an END: an alias
/// given inside a CASE (`ELSE a - b AS "Left" END`), where SQLite takes
/// none. None when there is none.
fn drop_alias_before_end(sql: &str) -> Option<String> {
    let units = units(sql);
    let mut dropped = Vec::new();
    for (i, &(at, unit)) in units.iter().enumerate() {
        if !matches!(unit, Unit::Word(w) if w.eq_ignore_ascii_case("as")) {
            continue;
        }
        let name_at = skip_spaces(&units, i + 1);
        let Some(name_end) = name_end(&units, name_at) else {
            continue;
        };
        let next = skip_spaces(&units, name_end);
        if matches!(units.get(next), Some((_, Unit::Word(w))) if w.eq_ignore_ascii_case("end")) {
            dropped.push(sql[..at].trim_end().len()..unit_offset(sql, &units, name_end));
        }
    }
    without(sql, &dropped)
}

/// Signs that end an alias written after AS: what may follow it in a list
/// or a clause. Any other sign inside it (`AS R&D.Share`, `AS P/E`) makes
/// SQLite stop at that sign.
const AFTER_ALIAS: &[char] = &[',', '(', ')', ';', '"', '`', '[', '\''];

/// `sql` with each alias after AS that holds signs (`AS R&D_S.Revenue`,
/// the model copying a name from the question) put in double quotes, so
/// SQLite takes it as one name; None when there is none.
fn quote_aliases_with_signs(sql: &str) -> Option<String> {
    let units = units(sql);
    let mut quoted = String::with_capacity(sql.len() + 8);
    let mut kept_from = 0;
    for (i, &(_, unit)) in units.iter().enumerate() {
        if !matches!(unit, Unit::Word(w) if w.eq_ignore_ascii_case("as")) {
            continue;
        }
        let name_at = skip_spaces(&units, i + 1);
        if name_at == i + 1 || !matches!(units.get(name_at), Some((_, Unit::Word(_)))) {
            continue;
        }
        let name_end = (name_at..units.len())
            .find(|&j| match units[j].1 {
                Unit::Sign(c) => c.is_whitespace() || AFTER_ALIAS.contains(&c),
                Unit::Literal(_) => true,
                Unit::Word(_) => false,
            })
            .unwrap_or(units.len());
        let has_sign = units[name_at..name_end]
            .iter()
            .any(|(_, u)| matches!(u, Unit::Sign(_)));
        if has_sign {
            let (start, end) = (units[name_at].0, unit_offset(sql, &units, name_end));
            quoted.push_str(&sql[kept_from..start]);
            quoted.push('"');
            quoted.push_str(&sql[start..end]);
            quoted.push('"');
            kept_from = end;
        }
    }
    (kept_from > 0).then(|| quoted + &sql[kept_from..])
}

/// `sql` with the name after its last unclosed `quote` (`` JOIN `Order_Items
/// AS T3 ``) closed where the name's word ends; None when every such
/// quote closes or no word follows the open one.
pub(super) fn close_quote(sql: &str, quote: char) -> Option<String> {
    let units = units(sql);
    let quotes: Vec<usize> = (0..units.len())
        .filter(|&i| units[i].1 == Unit::Sign(quote))
        .collect();
    // With an odd count, the last quote is the one left open.
    let open_at = *quotes.last().filter(|_| quotes.len() % 2 == 1)?;
    let name_end = (open_at + 1..units.len())
        .find(|&j| !matches!(units[j].1, Unit::Word(_)))
        .unwrap_or(units.len());
    if name_end == open_at + 1 {
        return None;
    }
    let end = unit_offset(sql, &units, name_end);
    Some(format!("{}{quote}{}", &sql[..end], &sql[end..]))
}

/// The index just past the name (a word, or a name in double quotes,
/// backquotes or brackets) beginning at unit `at`; None when none does.
fn name_end(units: &[(usize, Unit<'_>)], at: usize) -> Option<usize> {
    match units.get(at)?.1 {
        Unit::Word(_) => Some(at + 1),
        Unit::Sign(open @ ('"' | '`' | '[')) => {
            let close = if open == '[' { ']' } else { open };
            let last = (at + 1..units.len()).find(|&j| units[j].1 == Unit::Sign(close))?;
            Some(last + 1)
        }
        _ => None,
    }
}

/// The unit before unit `i`, spaces skipped; None at the text's start.
fn unit_before<'a>(units: &[(usize, Unit<'a>)], i: usize) -> Option<Unit<'a>> {
    (0..i).rev().map(|b| units[b].1).find(|u| !u.is_space())
}

/// The word before unit `i`, spaces skipped; None when a sign or nothing
/// comes before it.
fn word_before<'a>(units: &[(usize, Unit<'a>)], i: usize) -> Option<&'a str> {
    match unit_before(units, i)? {
        Unit::Word(w) => Some(w),
        _ => None,
    }
}

/// `sql` without the byte ranges `dropped` (in order, not overlapping);
/// None when there are none.
fn without(sql: &str, dropped: &[std::ops::Range<usize>]) -> Option<String> {
    let edits: Vec<_> = dropped.iter().map(|range| (range.clone(), "")).collect();
    spliced(sql, &edits)
}

/// `sql` with each byte range of `edits` (in order, not overlapping)
/// replaced by its text; None when there are none.
fn spliced(sql: &str, edits: &[(std::ops::Range<usize>, &str)]) -> Option<String> {
    if edits.is_empty() {
        return None;
    }
    let mut kept = String::with_capacity(sql.len());
    let mut kept_from = 0;
    for (range, text) in edits {
        kept.push_str(&sql[kept_from..range.start]);
        kept.push_str(text);
        kept_from = range.end;
    }
    kept.push_str(&sql[kept_from..]);
    Some(kept)
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

/// `sql` with each comma written between the conditions of a WHERE or
/// HAVING clause, at the clause's own level (`WHERE T1.Id = T2.RuleId,
/// T2.Unit = 'km'`, as in a list), made an AND; None when there is none.
/// Commas inside a call or a list are a level deeper and stay.
fn and_for_commas_between_conditions(sql: &str) -> Option<String> {
    let mut depth = 0usize;
    // The depths at which a WHERE or HAVING condition is open.
    let mut conditions: Vec<usize> = Vec::new();
    let mut commas = Vec::new();
    for (at, unit) in units(sql) {
        match unit {
            Unit::Sign('(') => depth += 1,
            Unit::Sign(')') => {
                conditions.retain(|&d| d < depth);
                depth = depth.saturating_sub(1);
            }
            Unit::Word(w) if CLAUSES_AFTER_FROM.iter().any(|k| w.eq_ignore_ascii_case(k)) => {
                conditions.retain(|&d| d != depth);
                if w.eq_ignore_ascii_case("where") || w.eq_ignore_ascii_case("having") {
                    conditions.push(depth);
                }
            }
            Unit::Sign(',') if conditions.last() == Some(&depth) => {
                commas.push((at..at + 1, " AND"))
            }
            _ => {}
        }
    }
    spliced(sql, &commas)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_between_conditions_become_and_while_commas_in_lists_stay() {
        assert_eq!(
            fix_near(
                "SELECT a, b FROM t WHERE a IN (1, 2), b = 'x, y' GROUP BY a, b HAVING COUNT(*) > 1, MAX(b) < 3 ORDER BY a, b",
                ","
            )
            .as_deref(),
            Some("SELECT a, b FROM t WHERE a IN (1, 2) AND b = 'x, y' GROUP BY a, b HAVING COUNT(*) > 1 AND MAX(b) < 3 ORDER BY a, b")
        );
        // A subquery's own WHERE, and nothing when no condition holds a comma.
        assert_eq!(
            fix_near(
                "SELECT a FROM t WHERE b IN (SELECT b FROM u WHERE c = 1, d = 2)",
                ","
            )
            .as_deref(),
            Some("SELECT a FROM t WHERE b IN (SELECT b FROM u WHERE c = 1 AND d = 2)")
        );
        assert_eq!(fix_near("SELECT a, FROM t WHERE b = 1", ","), None);
    }

    /// Through the engine: SQLite's error on the comma reaches the fix.
    #[test]
    fn sqlites_error_on_commas_between_conditions_leads_to_a_query_that_runs() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE city (name TEXT, country TEXT, population INTEGER);
             INSERT INTO city VALUES ('Oslo', 'NO', 700), ('Bergen', 'NO', 290), ('Lyon', 'FR', 520);",
        );
        let sql = "SELECT name FROM city WHERE country = 'NO', population > 500";
        let error = executor.query(sql).unwrap_err().to_string();
        let (fixed, result) = names
            .fix_until_it_runs(&executor, sql, &error, false)
            .unwrap_or_else(|| panic!("no fix for {sql}: {error}"));
        let rows: Vec<String> = result.rows.iter().map(|row| row[0].to_string()).collect();
        assert_eq!(rows, ["Oslo"], "{fixed}");
    }

    #[test]
    fn an_alias_holding_signs_is_quoted() {
        assert_eq!(
            fix_near(
                "SELECT m.Name,\n  (r / v) * 100 AS R&D_S.Revenue,\n  p AS P/E FROM m",
                "&"
            )
            .as_deref(),
            Some("SELECT m.Name,\n  (r / v) * 100 AS \"R&D_S.Revenue\",\n  p AS \"P/E\" FROM m")
        );
        assert_eq!(
            fix_near("SELECT a AS x-y FROM t", "-").as_deref(),
            Some("SELECT a AS \"x-y\" FROM t")
        );
        // Plain aliases, quoted ones and casts give nothing to quote.
        for sql in [
            "SELECT a AS x, CAST(b AS REAL) AS y FROM t",
            "SELECT a AS \"R&D\" FROM t",
            "SELECT CAST(b AS DECIMAL(10,2)) FROM t",
        ] {
            assert_eq!(fix_near(sql, "&"), None, "{sql}");
        }
    }

    #[test]
    fn a_quoted_name_left_open_is_closed_after_its_word() {
        assert_eq!(
            close_quote(
                "SELECT T3.q FROM `Orders` AS T2 JOIN `Order_Items AS T3 ON T2.id = T3.id",
                '`'
            )
            .as_deref(),
            Some("SELECT T3.q FROM `Orders` AS T2 JOIN `Order_Items` AS T3 ON T2.id = T3.id")
        );
        assert_eq!(
            close_quote("SELECT \"total FROM t", '"').as_deref(),
            Some("SELECT \"total\" FROM t")
        );
        // Quotes that all close, or one that opens on no word, stay.
        assert_eq!(close_quote("SELECT `a` FROM `t`", '`'), None);
        assert_eq!(close_quote("SELECT a FROM t WHERE b = ` 1", '`'), None);
    }

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
    fn a_type_written_after_its_cast_moves_inside_it() {
        assert_eq!(
            fix_near(
                "SELECT CAST((3.15e7 * (12 - 8)) / (9.8 * 9e-7)) AS REAL / 3.15e7 AS years FROM mice",
                ")"
            )
            .as_deref(),
            Some("SELECT CAST((3.15e7 * (12 - 8)) / (9.8 * 9e-7) AS REAL) / 3.15e7 AS years FROM mice")
        );
        assert_eq!(
            fix_near(
                "SELECT CAST((a - b) / c) * 100 AS REAL AS ratio, d FROM t",
                ")"
            )
            .as_deref(),
            Some("SELECT CAST((a - b) / c AS REAL) * 100 AS ratio, d FROM t")
        );
        // A cast with its type, or none after it before the next item: no fix.
        for sql in [
            "SELECT CAST(a AS REAL) / b FROM t WHERE (c)",
            "SELECT CAST(a / b) AS ratio FROM t",
            "SELECT CAST(a / b), c AS REAL FROM t",
        ] {
            assert_eq!(fix_near(sql, ")"), None, "{sql}");
        }
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
    fn an_as_opening_a_condition_is_dropped() {
        assert_eq!(
            fix_near(
                "SELECT x FROM engineperformance WHERE Engine_ID IN (SELECT 1)\n  AND AS aspiration = 'Turbocharged'",
                "AS"
            )
            .as_deref(),
            Some("SELECT x FROM engineperformance WHERE Engine_ID IN (SELECT 1)\n  AND aspiration = 'Turbocharged'")
        );
        assert_eq!(
            fix_near("SELECT a FROM t WHERE as b = 1", "as").as_deref(),
            Some("SELECT a FROM t WHERE b = 1")
        );
    }

    #[test]
    fn an_alias_inside_a_case_is_dropped() {
        assert_eq!(
            fix_near(
                "SELECT CASE WHEN a < 3 THEN 'ok' ELSE 'left: ' || CAST(a - b AS REAL) - 3 AS \"Left to sell\" END FROM t",
                "AS"
            )
            .as_deref(),
            Some("SELECT CASE WHEN a < 3 THEN 'ok' ELSE 'left: ' || CAST(a - b AS REAL) - 3 END FROM t")
        );
        assert_eq!(
            fix_near("SELECT CASE WHEN a THEN b AS c END AS d FROM t", "AS").as_deref(),
            Some("SELECT CASE WHEN a THEN b END AS d FROM t")
        );
    }

    #[test]
    fn aliases_where_sqlite_takes_them_are_left_alone() {
        for sql in [
            "SELECT CASE WHEN a THEN b END AS d FROM t AS u WHERE u.x = 1",
            "SELECT a AS and_b FROM t",
            "SELECT a FROM t WHERE b = 'AND AS c' AND d = 1",
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
