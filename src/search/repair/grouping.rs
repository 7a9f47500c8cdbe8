//! Aggregates in a query that does not group: SQLite refuses
//! `SELECT x FROM t ORDER BY COUNT(*) DESC` and `... WHERE COUNT(y) > 1`
//! ("misuse of aggregate"), which small models write for "the x with the
//! most ..." and "the x with more than one ...". The intent is grouping by
//! the query's plain output columns, with the aggregate conditions in
//! HAVING; the fix makes exactly that change to each such (sub)query.
//! The converse slip, a HAVING in a query that neither groups nor
//! aggregates (refused as "HAVING clause on a non-aggregate query"), is a
//! filter written in the wrong clause: it joins the WHERE.

use super::rewrite::{conjoin, conjuncts, rewrite_query};
use sqlparser::ast::{
    Expr, Function, FunctionArguments, GroupByExpr, OrderByKind, Query, Select, SelectItem,
    SetExpr, Visit, Visitor, VisitorMut,
};
use std::ops::ControlFlow;

/// Functions that aggregate (MIN and MAX only with one argument: with more
/// they compare their arguments).
const AGGREGATES: [&str; 7] = ["count", "sum", "avg", "total", "group_concat", "min", "max"];

/// `sql` with every non-grouping (sub)query that orders or filters by an
/// aggregate grouped by its plain output columns, the aggregate conditions
/// of its WHERE moved to HAVING; None when no query needs or allows it
/// (nothing to group by, a `*` in the output, or SQL the parser rejects).
pub fn group_aggregates(sql: &str) -> Option<String> {
    let mut grouper = Grouper { changed: false };
    rewrite_query(sql, &mut grouper, |g| g.changed)
}

/// `sql` with the HAVING of each (sub)query that neither groups nor
/// aggregates made a condition of its WHERE; None when there is none (or
/// SQL the parser rejects).
pub fn having_as_filter(sql: &str) -> Option<String> {
    let mut mover = HavingMover { changed: false };
    rewrite_query(sql, &mut mover, |m| m.changed)
}

/// Whether `select` has a GROUP BY.
fn groups(select: &Select) -> bool {
    match &select.group_by {
        GroupByExpr::All(_) => true,
        GroupByExpr::Expressions(keys, _) => !keys.is_empty(),
    }
}

struct HavingMover {
    changed: bool,
}

impl HavingMover {
    fn move_having(&mut self, select: &mut Select) {
        let grouped = groups(select);
        let output_aggregates = select.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => aggregates(e),
            _ => false,
        });
        let Some(having) = select
            .having
            .take_if(|h| !grouped && !output_aggregates && !aggregates(h))
        else {
            return;
        };
        select.selection = conjoin(
            select
                .selection
                .take()
                .into_iter()
                .chain([having])
                .collect(),
        );
        self.changed = true;
    }

    fn each_select(&mut self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => self.move_having(select),
            SetExpr::SetOperation { left, right, .. } => {
                self.each_select(left);
                self.each_select(right);
            }
            _ => {}
        }
    }
}

impl VisitorMut for HavingMover {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.each_select(query.body.as_mut());
        ControlFlow::Continue(())
    }
}

struct Grouper {
    changed: bool,
}

impl VisitorMut for Grouper {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let orders_by_aggregate = query.order_by.as_ref().is_some_and(|o| match &o.kind {
            OrderByKind::Expressions(items) => items.iter().any(|i| aggregates(&i.expr)),
            OrderByKind::All(_) => false,
        });
        let SetExpr::Select(select) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        if groups(select) {
            return ControlFlow::Continue(());
        }
        let (kept, moved): (Vec<Expr>, Vec<Expr>) = select
            .selection
            .clone()
            .map(conjuncts)
            .unwrap_or_default()
            .into_iter()
            .partition(|c| !aggregates(c));
        // The output's plain expressions; None when it has a `*`, which
        // names no expression to group by.
        let keys: Option<Vec<Expr>> = select
            .projection
            .iter()
            .filter_map(|item| match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    (!aggregates(e)).then(|| Some(e.clone()))
                }
                _ => Some(None),
            })
            .collect();
        let needs_groups = orders_by_aggregate || !moved.is_empty() || select.having.is_some();
        if let Some(keys) = keys.filter(|k| needs_groups && !k.is_empty()) {
            select.selection = conjoin(kept);
            select.having = conjoin(select.having.take().into_iter().chain(moved).collect());
            select.group_by = GroupByExpr::Expressions(keys, Vec::new());
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// Whether `expr` aggregates at its own level (not inside a subquery, and
/// not as a window function).
fn aggregates(expr: &Expr) -> bool {
    struct Finder {
        depth: usize,
    }
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            match expr {
                Expr::Function(f) if self.depth == 0 && is_aggregate(f) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    Visit::visit(expr, &mut Finder { depth: 0 }).is_break()
}

/// Whether `function` is a call of an aggregate (not a window function).
pub(super) fn is_aggregate(function: &Function) -> bool {
    let name = function.name.to_string().to_lowercase();
    let arguments = match &function.args {
        FunctionArguments::List(list) => list.args.len(),
        _ => 0,
    };
    AGGREGATES.contains(&name.as_str())
        && (arguments <= 1 || !matches!(name.as_str(), "min" | "max"))
        && function.over.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_by_an_aggregate_groups_by_the_output_columns() {
        assert_eq!(
            group_aggregates(
                "SELECT Stadium_ID FROM concert WHERE Year > '2013' ORDER BY COUNT(*) DESC LIMIT 1"
            )
            .as_deref(),
            Some("SELECT Stadium_ID FROM concert WHERE Year > '2013' GROUP BY Stadium_ID ORDER BY COUNT(*) DESC LIMIT 1")
        );
        // Inside a subquery, that subquery is grouped; aliases keep their expression.
        assert_eq!(
            group_aggregates(
                "SELECT Name FROM stadium WHERE Stadium_ID IN (SELECT Stadium_ID AS s FROM concert ORDER BY COUNT(*) DESC LIMIT 1)"
            )
            .as_deref(),
            Some("SELECT Name FROM stadium WHERE Stadium_ID IN (SELECT Stadium_ID AS s FROM concert GROUP BY Stadium_ID ORDER BY COUNT(*) DESC LIMIT 1)")
        );
    }

    #[test]
    fn aggregate_conditions_move_from_where_to_having() {
        assert_eq!(
            group_aggregates(
                "SELECT T2.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker WHERE COUNT(T2.Model) >= 2 AND T1.Country = 'usa'"
            )
            .as_deref(),
            Some("SELECT T2.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker WHERE T1.Country = 'usa' GROUP BY T2.Maker HAVING COUNT(T2.Model) >= 2")
        );
    }

    #[test]
    fn a_having_in_a_query_that_does_not_aggregate_joins_the_where() {
        assert_eq!(
            having_as_filter(
                "SELECT a * b AS c FROM t WHERE a = 1 OR b = 2 HAVING c < 13 ORDER BY c"
            )
            .as_deref(),
            Some("SELECT a * b AS c FROM t WHERE (a = 1 OR b = 2) AND c < 13 ORDER BY c")
        );
        assert_eq!(
            having_as_filter(
                "SELECT a FROM t UNION SELECT b FROM u HAVING b > (SELECT MIN(b) FROM u)"
            )
            .as_deref(),
            Some("SELECT a FROM t UNION SELECT b FROM u WHERE b > (SELECT MIN(b) FROM u)")
        );
        for sql in [
            // Grouped, or aggregating without groups: a HAVING SQLite takes.
            "SELECT a FROM t GROUP BY a HAVING a > 1",
            "SELECT COUNT(*) FROM t HAVING COUNT(*) > 1",
            "SELECT a FROM t HAVING SUM(b) > 1",
            "SELECT a FROM t",
        ] {
            assert_eq!(having_as_filter(sql), None, "{sql}");
        }
    }

    #[test]
    fn queries_that_group_or_cannot_are_left_alone() {
        for sql in [
            // Already grouped.
            "SELECT a FROM t GROUP BY a ORDER BY COUNT(*) DESC",
            // Aggregates in a subquery or over several arguments are not the query's own.
            "SELECT a FROM t WHERE b = (SELECT MAX(b) FROM t) ORDER BY MAX(a, b)",
            // A window function orders within the rows.
            "SELECT a FROM t ORDER BY COUNT(*) OVER (PARTITION BY a)",
            // Nothing to group by, or a star.
            "SELECT COUNT(*) FROM t WHERE SUM(b) > 1",
            "SELECT * FROM t ORDER BY COUNT(*)",
            // Not one query.
            "SELECT a FROM t ORDER BY COUNT(*); SELECT 1",
            "SELEC a FROM",
        ] {
            assert_eq!(group_aggregates(sql), None, "{sql}");
        }
    }
}
