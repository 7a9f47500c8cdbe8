//! A query's clauses written out of SQL's order (`ORDER BY x WHERE y`,
//! `LIMIT 1 ORDER BY n`): models add a filter after they have sorted, and
//! SQLite stops at the clause that comes too late. Put back in order, each
//! clause says what the model meant.

use super::super::sql_text::{skip_spaces, unit_offset, units, Unit};

/// The clauses after FROM in the order SQL reads them.
const CLAUSES_IN_ORDER: [&str; 5] = ["where", "group", "having", "order", "limit"];

/// Words that end one query of a compound and begin the next.
const COMPOUND: [&str; 3] = ["union", "except", "intersect"];

/// Whether SQLite's syntax error near `word` may be a clause out of order.
pub(super) fn may_be_misplaced(word: &str) -> bool {
    clause_rank(word).is_some()
}

/// `sql` with the first query (or subquery) whose clauses are out of order
/// given them in order; None when every query's clauses are in order, or a
/// query has one clause twice (no order mends that).
pub(super) fn reorder(sql: &str) -> Option<String> {
    let units = units(sql);
    // Per open parenthesis (and the text itself at the bottom): each clause
    // begun at that depth, as its rank and the unit where it starts.
    let mut open: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
    let mut quoted_until: Option<char> = None;
    for (i, &(_, unit)) in units.iter().enumerate() {
        if let Some(close) = quoted_until {
            if unit == Unit::Sign(close) {
                quoted_until = None;
            }
            continue;
        }
        match unit {
            Unit::Sign(open_quote @ ('"' | '`' | '[')) => {
                quoted_until = Some(if open_quote == '[' { ']' } else { open_quote });
            }
            Unit::Sign('(') => open.push(Vec::new()),
            Unit::Sign(')' | ';') => {
                let clauses = open.pop().unwrap_or_default();
                if let Some(fixed) = in_order(sql, &units, &clauses, i) {
                    return Some(fixed);
                }
                if open.is_empty() || unit == Unit::Sign(';') {
                    open.push(Vec::new());
                }
            }
            Unit::Word(w) if COMPOUND.iter().any(|k| w.eq_ignore_ascii_case(k)) => {
                let clauses = std::mem::take(open.last_mut()?);
                if let Some(fixed) = in_order(sql, &units, &clauses, i) {
                    return Some(fixed);
                }
            }
            Unit::Word(w) => {
                if let Some(rank) = clause_rank(w).filter(|_| opens_clause(&units, i)) {
                    open.last_mut()?.push((rank, i));
                }
            }
            _ => {}
        }
    }
    in_order(sql, &units, open.last()?, units.len())
}

fn clause_rank(word: &str) -> Option<usize> {
    CLAUSES_IN_ORDER
        .iter()
        .position(|k| word.eq_ignore_ascii_case(k))
}

/// Whether the clause word at unit `i` opens a clause: GROUP and ORDER only
/// with their BY, and no word after a dot (`t.order` names a column).
fn opens_clause(units: &[(usize, Unit<'_>)], i: usize) -> bool {
    let after_dot = i > 0 && units[i - 1].1 == Unit::Sign('.');
    let needs_by = matches!(units[i].1, Unit::Word(w)
        if w.eq_ignore_ascii_case("group") || w.eq_ignore_ascii_case("order"));
    let by_follows = matches!(units.get(skip_spaces(units, i + 1)),
        Some((_, Unit::Word(w))) if w.eq_ignore_ascii_case("by"));
    !after_dot && (!needs_by || by_follows)
}

/// The query whose `clauses` run until unit `end`, its clauses sorted into
/// SQL's order; None when they are in order already or one repeats.
fn in_order(
    sql: &str,
    units: &[(usize, Unit<'_>)],
    clauses: &[(usize, usize)],
    end: usize,
) -> Option<String> {
    if clauses.windows(2).all(|pair| pair[0].0 < pair[1].0) {
        return None;
    }
    let mut ranks: Vec<usize> = clauses.iter().map(|&(rank, _)| rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.len() < clauses.len() {
        return None;
    }
    let offset = |at: usize| unit_offset(sql, units, at);
    let end_offset = offset(end);
    let mut texts: Vec<(usize, &str)> = clauses
        .iter()
        .enumerate()
        .map(|(k, &(rank, at))| {
            let until = clauses
                .get(k + 1)
                .map_or(end_offset, |&(_, next)| offset(next));
            (rank, sql[offset(at)..until].trim_end())
        })
        .collect();
    let first = offset(clauses[0].1);
    let last_text = texts.last()?.1;
    // The spaces after the last clause stay where they were, before the end.
    let tail_start = offset(clauses.last()?.1) + last_text.len();
    let separator = if sql[first..end_offset].contains('\n') {
        "\n"
    } else {
        " "
    };
    texts.sort_by_key(|&(rank, _)| rank);
    let body: Vec<&str> = texts.into_iter().map(|(_, text)| text).collect();
    Some(format!(
        "{}{}{}",
        &sql[..first],
        body.join(separator),
        &sql[tail_start..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_written_after_the_sort_moves_before_it() {
        assert_eq!(
            reorder("SELECT name FROM t ORDER BY age DESC WHERE city = 'Oslo' LIMIT 3").as_deref(),
            Some("SELECT name FROM t WHERE city = 'Oslo' ORDER BY age DESC LIMIT 3")
        );
        assert_eq!(
            reorder("SELECT a\nFROM t\nLIMIT 1\nORDER BY a;").as_deref(),
            Some("SELECT a\nFROM t\nORDER BY a\nLIMIT 1;")
        );
    }

    #[test]
    fn a_subquery_out_of_order_is_mended_inside_its_parenthesis() {
        assert_eq!(
            reorder(
                "SELECT a FROM t WHERE b IN (SELECT b FROM u GROUP BY b WHERE c > 1) ORDER BY a"
            )
            .as_deref(),
            Some("SELECT a FROM t WHERE b IN (SELECT b FROM u WHERE c > 1 GROUP BY b) ORDER BY a")
        );
    }

    #[test]
    fn queries_in_order_or_with_a_clause_twice_are_left() {
        for sql in [
            "SELECT a FROM t WHERE b = 1 GROUP BY a HAVING COUNT(*) > 1 ORDER BY a LIMIT 2",
            // Each query of a compound and each subquery has its own clauses.
            "SELECT a FROM t WHERE a < 0 UNION SELECT a FROM u WHERE a > 1 ORDER BY a",
            "SELECT (SELECT MAX(x) FROM u WHERE u.k = t.k) FROM t ORDER BY 1",
            // Names that are clause words, quoted or qualified.
            "SELECT t.\"order\", t.limit FROM t WHERE t.\"where\" = 1",
            // Two filters: which one the model meant cannot be told.
            "SELECT a FROM t WHERE b = 1 ORDER BY a WHERE c = 2",
        ] {
            assert_eq!(reorder(sql), None, "{sql}");
        }
    }

    /// Through the engine: SQLite's own error on each slip reaches the
    /// reordering, and the mended query runs.
    #[test]
    fn sqlites_error_on_a_late_clause_leads_to_the_query_in_order() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE city (name TEXT, country TEXT, population INTEGER);
             INSERT INTO city VALUES ('Oslo', 'NO', 700), ('Bergen', 'NO', 290), ('Lyon', 'FR', 520);",
        );
        for (sql, wanted) in [
            (
                "SELECT name FROM city ORDER BY population DESC WHERE country = 'NO'",
                ["Oslo", "Bergen"].as_slice(),
            ),
            (
                "SELECT name FROM city WHERE country = 'NO' LIMIT 1 ORDER BY population",
                ["Bergen"].as_slice(),
            ),
        ] {
            let error = executor.query(sql).unwrap_err().to_string();
            let (fixed, result) = names
                .fix_until_it_runs(&executor, sql, &error, false)
                .unwrap_or_else(|| panic!("no fix for {sql}: {error}"));
            let rows: Vec<String> = result.rows.iter().map(|row| row[0].to_string()).collect();
            assert_eq!(rows, wanted, "{fixed}");
        }
    }
}
