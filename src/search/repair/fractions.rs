//! SQLite divides a whole number by a whole number as whole numbers:
//! `SUM(weight_g) / 1000` answers 566 for 566.168 kilograms, and
//! `AVG(milliseconds / 1000)` averages whole seconds. A query that
//! converts a stored unit to an asked one, or divides a count by a count,
//! means the fraction, so such a division divides by a real number
//! (`CAST(SUM(weight_g) AS REAL) / 1000`), as most SQL readers would
//! expect. A query that groups by a division, or multiplies a quotient by
//! its divisor again (`(year / 10) * 10`, a decade), means the whole
//! quotient and is left as it is.

use super::rewrite::{column_named, columns_where, parse_expr, parse_query, rewrite_query};
use crate::db::schema::Column;
use crate::db::{Schema, Value};
use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Select,
    SelectItem, SetExpr, UnaryOperator, Visit, Visitor, VisitorMut,
};
use std::collections::HashSet;
use std::ops::ControlFlow;

/// The database's columns that hold whole numbers, by lowercased name
/// (`columns_where`).
#[derive(Debug, Clone, Default)]
pub(super) struct WholeNumbers(HashSet<String>);

impl WholeNumbers {
    pub(super) fn of(schema: &Schema) -> Self {
        WholeNumbers(columns_where(schema, holds_whole_numbers))
    }

    /// Whether SQLite computes `expr` as a whole number: a whole literal,
    /// a column of whole numbers, a count or a length, and sums,
    /// extremes, signs and arithmetic (but division) of such, and a
    /// subquery selecting one.
    fn whole(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Value(_) => {
                let text = expr.to_string();
                !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
            }
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                column_named(expr).is_some_and(|name| self.0.contains(&name.value.to_lowercase()))
            }
            Expr::Nested(inner) => self.whole(inner),
            Expr::Subquery(query) => match query.body.as_ref() {
                SetExpr::Select(select) => matches!(
                    select.projection.as_slice(),
                    [SelectItem::UnnamedExpr(only)] if self.whole(only)
                ),
                _ => false,
            },
            Expr::UnaryOp {
                op: UnaryOperator::Minus | UnaryOperator::Plus,
                expr,
            } => self.whole(expr),
            Expr::BinaryOp { left, op, right } => {
                matches!(
                    op,
                    BinaryOperator::Plus
                        | BinaryOperator::Minus
                        | BinaryOperator::Multiply
                        | BinaryOperator::Modulo
                ) && self.whole(left)
                    && self.whole(right)
            }
            Expr::Function(function) => {
                let name = function.name.to_string().to_lowercase();
                match name.as_str() {
                    "count" | "length" => true,
                    "sum" | "min" | "max" | "abs" => {
                        let FunctionArguments::List(list) = &function.args else {
                            return false;
                        };
                        // MIN and MAX of several values compare them; one
                        // argument is the aggregate.
                        list.args.len() == 1
                            && matches!(
                                &list.args[0],
                                FunctionArg::Unnamed(FunctionArgExpr::Expr(arg)) if self.whole(arg)
                            )
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// Whether `column` holds whole numbers: declared with an integer type
/// (SQLite stores whole numbers there as integers), or, undeclared or
/// declared loosely (`number`), with only integers among its examples.
fn holds_whole_numbers(column: &Column) -> bool {
    column.declared_type.to_uppercase().contains("INT")
        || (!column.examples.is_empty()
            && column
                .examples
                .iter()
                .all(|value| matches!(value, Value::Integer(_))))
}

/// `sql` with every division of a whole number by a whole number made a
/// division by a real number; None when it has none, when it means whole
/// quotients (see the module), or is no query the parser reads.
pub(super) fn divide_as_reals(sql: &str, whole: &WholeNumbers) -> Option<String> {
    if whole.0.is_empty() || !sql.contains('/') {
        return None;
    }
    let mut quotients = WholeQuotients { meant: false };
    let _ = parse_query(sql)?.visit(&mut quotients);
    if quotients.meant {
        return None;
    }
    let mut divider = Divider {
        whole,
        changed: false,
    };
    rewrite_query(sql, &mut divider, |d| d.changed)
}

/// Finds what says a query means its whole quotients.
struct WholeQuotients {
    meant: bool,
}

impl Visitor for WholeQuotients {
    type Break = ();

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        if let GroupByExpr::Expressions(keys, _) = &select.group_by {
            if keys.iter().any(|key| key.to_string().contains('/')) {
                self.meant = true;
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Multiply,
            right,
        } = expr
        {
            if divided_by(left, right) || divided_by(right, left) {
                self.meant = true;
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether `quotient` is a division by `factor` (`(year / 10)` and `10`).
fn divided_by(quotient: &Expr, factor: &Expr) -> bool {
    let inner = match quotient {
        Expr::Nested(inner) => inner.as_ref(),
        other => other,
    };
    matches!(
        inner,
        Expr::BinaryOp { op: BinaryOperator::Divide, right, .. } if right.to_string() == factor.to_string()
    )
}

struct Divider<'a> {
    whole: &'a WholeNumbers,
    changed: bool,
}

impl VisitorMut for Divider<'_> {
    type Break = ();

    // After the operands: a division of a quotient made real is real.
    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Divide,
            right,
        } = expr
        else {
            return ControlFlow::Continue(());
        };
        if !(self.whole.whole(left) && self.whole.whole(right)) {
            return ControlFlow::Continue(());
        }
        if let Some(real) = parse_expr(&format!("CAST({left} AS REAL) / {right}")) {
            *expr = real;
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::Table;

    fn column(name: &str, declared_type: &str, examples: Vec<Value>) -> Column {
        Column {
            name: name.into(),
            declared_type: declared_type.into(),
            primary_key: false,
            examples,
            description: None,
            value_description: None,
            json: None,
        }
    }

    fn whole_numbers() -> WholeNumbers {
        let schema = Schema {
            tables: vec![Table {
                name: "shipments".into(),
                is_view: false,
                row_count: Some(3),
                columns: vec![
                    column("weight_g", "INTEGER", vec![Value::Integer(1200)]),
                    column("year", "number", vec![Value::Integer(1994)]),
                    column("cost", "REAL", vec![Value::Real(1.5)]),
                    column("city", "TEXT", vec![Value::Text("Lyon".into())]),
                ],
                foreign_keys: vec![],
            }],
        };
        WholeNumbers::of(&schema)
    }

    fn divided(sql: &str) -> Option<String> {
        divide_as_reals(sql, &whole_numbers())
    }

    #[test]
    fn a_unit_conversion_of_whole_numbers_divides_by_a_real_number() {
        assert_eq!(
            divided("SELECT SUM(weight_g) / 1000 FROM shipments").as_deref(),
            Some("SELECT CAST(SUM(weight_g) AS REAL) / 1000 FROM shipments")
        );
        assert_eq!(
            divided("SELECT AVG(s.weight_g / 1000) FROM shipments AS s").as_deref(),
            Some("SELECT AVG(CAST(s.weight_g AS REAL) / 1000) FROM shipments AS s")
        );
    }

    #[test]
    fn a_count_divided_by_a_count_is_a_fraction() {
        assert_eq!(
            divided("SELECT COUNT(*) * 100 / (SELECT COUNT(*) FROM shipments) FROM shipments")
                .as_deref(),
            Some("SELECT CAST(COUNT(*) * 100 AS REAL) / (SELECT COUNT(*) FROM shipments) FROM shipments")
        );
    }

    #[test]
    fn divisions_that_are_real_already_or_mean_whole_quotients_stay() {
        for sql in [
            "SELECT SUM(cost) / 3 FROM shipments",
            "SELECT SUM(weight_g) / 1000.0 FROM shipments",
            "SELECT CAST(SUM(weight_g) AS REAL) / 1000 FROM shipments",
            "SELECT AVG(weight_g) / 1000 FROM shipments",
            "SELECT city FROM shipments WHERE weight_g > 1000",
            "SELECT (year / 10) * 10, COUNT(*) FROM shipments GROUP BY (year / 10) * 10",
            "SELECT year / 10, COUNT(*) FROM shipments GROUP BY year / 10",
            "SELECT weight_g / city FROM shipments",
        ] {
            assert_eq!(divided(sql), None, "{sql}");
        }
    }

    #[test]
    fn a_quotient_divided_again_is_made_real_once() {
        assert_eq!(
            divided("SELECT weight_g / 1000 / 60 FROM shipments").as_deref(),
            Some("SELECT CAST(weight_g AS REAL) / 1000 / 60 FROM shipments")
        );
    }
}
