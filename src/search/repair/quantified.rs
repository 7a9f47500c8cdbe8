//! Comparisons with ALL, ANY or SOME over a subquery (`x > ALL (SELECT
//! ...)`), which PostgreSQL and MySQL have and SQLite lacks: it reports a
//! syntax error near ALL, or near the SELECT of `ANY (SELECT ...)`. Each
//! becomes what SQLite runs: `= ANY` an IN, `<> ALL` a NOT IN, and an order
//! comparison one with the subquery's extreme value (`> ALL` and `< ANY`
//! its largest, `< ALL` and `> ANY` its smallest). Two differences remain:
//! over a subquery that finds no rows `x > ALL` holds, while a comparison
//! with the extreme of no rows (NULL) holds for no row; and MIN and MAX
//! skip NULL values, which make ALL unknown.

use super::rewrite::{parse_query, rewrite_query};
use sqlparser::ast::{BinaryOperator, Expr, Ident, Query, SelectItem, SetExpr, VisitorMut};
use std::ops::ControlFlow;

/// The name given to the subquery's one output column, to take its extreme.
const VALUE: &str = "quantified_value";

/// `sql` with its comparisons over ALL, ANY and SOME rewritten, when it
/// failed with a syntax `error`; None when it has none to rewrite (or SQL
/// the parser rejects).
pub(super) fn fix(sql: &str, error: &str) -> Option<String> {
    if !error.contains("syntax error") {
        return None;
    }
    let mut rewriter = Rewriter { changed: false };
    rewrite_query(sql, &mut rewriter, |r| r.changed)
}

struct Rewriter {
    changed: bool,
}

impl VisitorMut for Rewriter {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(rewritten) = without_quantifier(expr) {
            *expr = rewritten;
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// `expr`, a comparison with ALL or ANY over a subquery, as SQLite can run
/// it; None for any other expression, and for `= ALL` and `<> ANY`, which
/// have no such form.
fn without_quantifier(expr: &Expr) -> Option<Expr> {
    let (left, op, right, all) = match expr {
        Expr::AllOp {
            left,
            compare_op,
            right,
        } => (left, compare_op, right, true),
        Expr::AnyOp {
            left,
            compare_op,
            right,
            ..
        } => (left, compare_op, right, false),
        _ => return None,
    };
    let Expr::Subquery(query) = right.as_ref() else {
        return None;
    };
    use BinaryOperator::{Eq, Gt, GtEq, Lt, LtEq, NotEq};
    let extreme = match (op, all) {
        (Eq, false) | (NotEq, true) => {
            return Some(Expr::InSubquery {
                expr: left.clone(),
                subquery: query.clone(),
                negated: all,
            })
        }
        (Gt | GtEq, true) | (Lt | LtEq, false) => "MAX",
        (Lt | LtEq, true) | (Gt | GtEq, false) => "MIN",
        _ => return None,
    };
    Some(Expr::BinaryOp {
        left: left.clone(),
        op: op.clone(),
        right: Box::new(Expr::Subquery(Box::new(extreme_of(query, left, extreme)?))),
    })
}

/// `SELECT function(v) FROM (query)`, the query's compared output column
/// named v; None when the query is not one SELECT or its compared column
/// is not known (see [`compared_item`]).
fn extreme_of(query: &Query, left: &Expr, function: &str) -> Option<Query> {
    let mut inner = query.clone();
    let SetExpr::Select(select) = inner.body.as_mut() else {
        return None;
    };
    let compared = compared_item(&select.projection, left)?;
    let (SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. }) = compared else {
        return None;
    };
    select.projection = vec![SelectItem::ExprWithAlias {
        expr: expr.clone(),
        alias: Ident::new(VALUE),
    }];
    parse_query(&format!("SELECT {function}({VALUE}) FROM ({inner})"))
}

/// The output column of a subquery that `left` is compared with: its only
/// one, or, where it has several (`x < ALL (SELECT id, x ...)`), the one
/// named or written as `left` is; None when that leaves no single column.
fn compared_item<'a>(projection: &'a [SelectItem], left: &Expr) -> Option<&'a SelectItem> {
    if let [only] = projection {
        return Some(only);
    }
    let left_name = output_name(left);
    let left_text = left.to_string();
    let mut matching = projection.iter().filter(|item| match item {
        SelectItem::ExprWithAlias { expr, alias } => {
            left_name.is_some_and(|name| alias.value.eq_ignore_ascii_case(name))
                || expr.to_string().eq_ignore_ascii_case(&left_text)
        }
        SelectItem::UnnamedExpr(expr) => {
            expr.to_string().eq_ignore_ascii_case(&left_text)
                || left_name.is_some_and(|name| {
                    output_name(expr).is_some_and(|n| n.eq_ignore_ascii_case(name))
                })
        }
        _ => false,
    });
    let item = matching.next()?;
    matching.next().is_none().then_some(item)
}

/// The name of a column reference without its table (`T2.tire`: `tire`).
fn output_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Identifier(ident) => Some(&ident.value),
        Expr::CompoundIdentifier(parts) => parts.last().map(|ident| ident.value.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::search::repair::SchemaNames;

    /// Bicycles of two types, and `sql` repaired on them from the error
    /// SQLite gives it: the repaired text and its rows as text.
    fn repaired(sql: &str) -> (String, Vec<String>) {
        let (_dir, executor, names): (_, _, SchemaNames) = crate::search::repair::database_from(
            "CREATE TABLE bicycle (id INTEGER PRIMARY KEY, type TEXT, tire REAL);
             INSERT INTO bicycle VALUES (1, 'Electric', 1.5), (2, 'Electric', 2.5),
                 (3, 'BMX', 2.0), (4, 'BMX', 2.2);",
        );
        let error = executor.query(sql).unwrap_err().to_string();
        let (fixed, result) = names
            .fix_until_it_runs(&executor, sql, &error, false)
            .unwrap();
        let rows = result.rows.iter().map(|row| row[0].to_string()).collect();
        (fixed, rows)
    }

    #[test]
    fn an_order_comparison_with_all_compares_with_the_subquerys_extreme() {
        let (fixed, rows) = repaired(
            "SELECT id FROM bicycle WHERE type = 'Electric' AND tire < ALL (SELECT tire FROM bicycle WHERE type = 'BMX')",
        );
        assert_eq!(
            fixed,
            "SELECT id FROM bicycle WHERE type = 'Electric' AND tire < (SELECT MIN(quantified_value) FROM (SELECT tire AS quantified_value FROM bicycle WHERE type = 'BMX'))"
        );
        assert_eq!(rows, ["1"]);
        let (_, rows) = repaired(
            "SELECT id FROM bicycle WHERE tire > ALL (SELECT AVG(tire) FROM bicycle GROUP BY type)",
        );
        assert_eq!(rows, ["2", "4"]);
    }

    #[test]
    fn any_and_some_compare_with_the_other_extreme_or_become_in() {
        let (_, rows) = repaired(
            "SELECT id FROM bicycle WHERE tire > ANY (SELECT tire FROM bicycle WHERE type = 'BMX')",
        );
        assert_eq!(rows, ["2", "4"]);
        let (fixed, rows) = repaired(
            "SELECT id FROM bicycle WHERE tire = SOME (SELECT tire FROM bicycle WHERE type = 'BMX') ORDER BY id",
        );
        assert_eq!(
            fixed,
            "SELECT id FROM bicycle WHERE tire IN (SELECT tire FROM bicycle WHERE type = 'BMX') ORDER BY id"
        );
        assert_eq!(rows, ["3", "4"]);
        let (_, rows) = repaired(
            "SELECT id FROM bicycle WHERE tire <> ALL (SELECT tire FROM bicycle WHERE type = 'BMX') ORDER BY id",
        );
        assert_eq!(rows, ["1", "2"]);
    }

    #[test]
    fn a_subquery_of_several_columns_is_compared_on_the_one_named_as_the_left_side() {
        let (fixed, rows) = repaired(
            "SELECT id, tire * 2 AS width FROM bicycle WHERE type = 'Electric' AND tire * 2 < ALL (SELECT id, tire * 2 AS width FROM bicycle WHERE type = 'BMX')",
        );
        assert!(
            fixed.contains("SELECT tire * 2 AS quantified_value FROM"),
            "{fixed}"
        );
        assert_eq!(rows, ["1"]);
        let (_, rows) = repaired(
            "SELECT id FROM bicycle AS b WHERE b.tire > ALL (SELECT id, tire FROM bicycle WHERE type = 'BMX') ORDER BY id",
        );
        assert_eq!(rows, ["2"]);
        // Two columns and neither is the compared one: no guess.
        let sql = "SELECT id FROM bicycle WHERE tire < ALL (SELECT id, type FROM bicycle)";
        assert!(super::fix(sql, "near \"ALL\": syntax error").is_none());
    }

    #[test]
    fn only_the_errors_a_quantifier_draws_start_the_rewrite() {
        let sql = "SELECT id FROM bicycle WHERE tire < ALL (SELECT tire FROM bicycle)";
        assert!(super::fix(sql, "no such column: tire").is_none());
        assert!(super::fix(
            "SELECT id FROM bicycle WHERE",
            "near \"WHERE\": syntax error"
        )
        .is_none());
        assert!(super::fix(sql, "near \"ALL\": syntax error").is_some());
        // `= ALL` has no form SQLite runs.
        let sql = "SELECT id FROM bicycle WHERE tire = ALL (SELECT tire FROM bicycle)";
        assert!(super::fix(sql, "near \"ALL\": syntax error").is_none());
    }
}
