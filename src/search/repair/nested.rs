//! Aggregates of aggregates (`SELECT MAX(COUNT(*)) FROM t GROUP BY g`),
//! which Oracle reads as the outer aggregate over the groups' values and
//! small models write for "the most ... of any group"; SQLite refuses them
//! ("misuse of aggregate function"). A (sub)query whose output is made of
//! such aggregates alone becomes its outer aggregates over a derived table
//! of the inner ones, one row per group:
//! `SELECT MAX(nested_value_1) FROM (SELECT COUNT(*) AS nested_value_1 FROM
//! t GROUP BY g)`. Its ORDER BY goes (it would order one row).

use super::grouping::is_aggregate;
use super::rewrite::{parse_query, rewrite_query};
use sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr, VisitMut, VisitorMut};
use std::ops::ControlFlow;

/// The names of the derived table's columns, numbered from 1.
const VALUE: &str = "nested_value";

/// `sql` with every (sub)query whose output is made of aggregates of
/// aggregates alone computed in two steps; None when it has none (or SQL
/// the parser rejects).
pub(super) fn fix(sql: &str) -> Option<String> {
    let mut unnester = Unnester { changed: false };
    rewrite_query(sql, &mut unnester, |u| u.changed)
}

struct Unnester {
    changed: bool,
}

impl VisitorMut for Unnester {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(body) = in_two_steps(&query.body) {
            query.body = body;
            query.order_by = None;
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// `body`, a select whose every output expression aggregates aggregates
/// and reads nothing else, as its outer aggregates over a derived table
/// of its inner ones; None for any other body.
fn in_two_steps(body: &SetExpr) -> Option<Box<SetExpr>> {
    let SetExpr::Select(select) = body else {
        return None;
    };
    let mut lifter = Lifter::default();
    let mut outer_items = Vec::new();
    for item in &select.projection {
        let mut item = item.clone();
        match &mut item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let _ = VisitMut::visit(e, &mut lifter);
            }
            _ => return None,
        }
        outer_items.push(item.to_string());
    }
    if lifter.inner.is_empty() || lifter.unsupported || select.having.as_ref().is_some_and(nests) {
        return None;
    }
    let mut inner = select.as_ref().clone();
    // One output row: DISTINCT there changes nothing, while in the first
    // step it would merge groups of equal values before AVG or SUM.
    inner.distinct = None;
    inner.projection = lifter
        .inner
        .into_iter()
        .enumerate()
        .map(|(k, expr)| SelectItem::ExprWithAlias {
            expr,
            alias: Ident::new(value_name(k)),
        })
        .collect();
    let outer = parse_query(&format!("SELECT {} FROM ({inner})", outer_items.join(", ")))?;
    Some(outer.body)
}

fn value_name(index: usize) -> String {
    format!("{VALUE}_{}", index + 1)
}

/// Takes each aggregate written inside another out of an output
/// expression, leaving a column of the derived table in its place.
#[derive(Default)]
struct Lifter {
    /// For each aggregate being visited, how many had been lifted when it
    /// began (so an outer aggregate that lifted none is seen).
    open: Vec<usize>,
    /// Subqueries being visited: their aggregates are their own.
    query_depth: usize,
    inner: Vec<Expr>,
    /// Something the two steps cannot keep: an aggregate three deep, one
    /// over no aggregate beside the nested ones, or a column read outside
    /// any aggregate.
    unsupported: bool,
}

impl Lifter {
    fn counts(&self, expr: &Expr) -> bool {
        self.query_depth == 0 && matches!(expr, Expr::Function(f) if is_aggregate(f))
    }
}

impl VisitorMut for Lifter {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.query_depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.query_depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.counts(expr) {
            self.open.push(self.inner.len());
            self.unsupported |= self.open.len() > 2;
        } else if self.query_depth == 0 && self.open.is_empty() && reads_a_column(expr) {
            self.unsupported = true;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if !self.counts(expr) {
            return ControlFlow::Continue(());
        }
        let lifted_before = self.open.pop().unwrap_or_default();
        match self.open.len() {
            // Inside another aggregate: computed per group in the first step.
            1 => {
                let name = Ident::new(value_name(self.inner.len()));
                self.inner
                    .push(std::mem::replace(expr, Expr::Identifier(name)));
            }
            // An outermost aggregate over no aggregate would count the groups.
            0 => self.unsupported |= self.inner.len() == lifted_before,
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Whether `expr` is itself a column reference.
fn reads_a_column(expr: &Expr) -> bool {
    matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
}

/// Whether `expr` holds an aggregate written inside another at its own
/// level.
fn nests(expr: &Expr) -> bool {
    let mut probe = Lifter::default();
    let _ = VisitMut::visit(&mut expr.clone(), &mut probe);
    !probe.inner.is_empty()
}

#[cfg(test)]
mod tests {
    use crate::search::repair::SchemaNames;

    /// Concerts in three stadiums, and `sql` repaired on them from the
    /// error SQLite gives it: the repaired text and its rows as text.
    fn repaired(sql: &str) -> (String, Vec<Vec<String>>) {
        let (_dir, executor, names): (_, _, SchemaNames) = crate::search::repair::database_from(
            "CREATE TABLE concert (id INTEGER PRIMARY KEY, stadium INTEGER, year INTEGER);
             INSERT INTO concert VALUES (1, 1, 2014), (2, 1, 2014), (3, 1, 2015),
                 (4, 2, 2014), (5, 3, 2014), (6, 3, 2015);",
        );
        let error = executor.query(sql).unwrap_err().to_string();
        assert!(error.contains("misuse of aggregate"), "{error}");
        let (fixed, result) = names
            .fix_until_it_runs(&executor, sql, &error, false)
            .unwrap();
        let rows = result
            .rows
            .iter()
            .map(|row| row.iter().map(ToString::to_string).collect())
            .collect();
        (fixed, rows)
    }

    #[test]
    fn an_aggregate_of_aggregates_is_taken_over_the_groups() {
        let (fixed, rows) =
            repaired("SELECT MAX(COUNT(*)) AS most FROM concert WHERE year = 2014 GROUP BY stadium ORDER BY 1");
        assert_eq!(
            fixed,
            "SELECT MAX(nested_value_1) AS most FROM (SELECT COUNT(*) AS nested_value_1 FROM concert WHERE year = 2014 GROUP BY stadium)"
        );
        assert_eq!(rows, [["2"]]);
        // Several, inside arithmetic, and without groups (one group: the rows).
        let (_, rows) = repaired(
            "SELECT MAX(COUNT(*)) - MIN(COUNT(*)), AVG(COUNT(*)) * 3 FROM concert GROUP BY stadium",
        );
        assert_eq!(rows, [["2", "6"]]);
        let (_, rows) = repaired(
            "SELECT DISTINCT SUM(COUNT(*)) FROM concert WHERE year = 2014 GROUP BY stadium",
        );
        assert_eq!(rows, [["4"]]);
        let (_, rows) = repaired("SELECT AVG(COUNT(id)) FROM concert WHERE stadium = 3");
        assert_eq!(rows, [["2"]]);
    }

    #[test]
    fn inside_a_subquery_only_that_subquery_changes() {
        let (fixed, rows) = repaired(
            "SELECT stadium FROM concert GROUP BY stadium HAVING COUNT(*) = (SELECT MAX(COUNT(*)) FROM concert AS c GROUP BY c.stadium)",
        );
        assert_eq!(
            fixed,
            "SELECT stadium FROM concert GROUP BY stadium HAVING COUNT(*) = (SELECT MAX(nested_value_1) FROM (SELECT COUNT(*) AS nested_value_1 FROM concert AS c GROUP BY c.stadium))"
        );
        assert_eq!(rows, [["1"]]);
    }

    #[test]
    fn outputs_the_two_steps_cannot_keep_are_left_alone() {
        for sql in [
            // A column beside the aggregate, or an aggregate of the rows beside it.
            "SELECT stadium, MAX(COUNT(*)) FROM concert GROUP BY stadium",
            "SELECT MAX(COUNT(*)) + COUNT(*) FROM concert GROUP BY stadium",
            // Three deep.
            "SELECT MAX(AVG(COUNT(*))) FROM concert GROUP BY stadium",
            // Nested in the HAVING, which the groups need.
            "SELECT MAX(COUNT(*)) FROM concert GROUP BY stadium HAVING COUNT(*) = MAX(COUNT(*))",
            // No nesting, or a window over an aggregate.
            "SELECT COUNT(*) FROM concert",
            "SELECT SUM(COUNT(*)) OVER () FROM concert GROUP BY stadium",
            "SELEC MAX(COUNT(*)) FROM",
        ] {
            assert_eq!(super::fix(sql), None, "{sql}");
        }
    }
}
