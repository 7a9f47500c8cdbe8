//! A query parsed, changed by a visitor of its syntax tree, and written
//! again: the frame of the repairs that change a query's structure rather
//! than its words.

use crate::db::schema::{Column, Table};
use crate::db::Schema;
use sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    OrderByKind, Query, Statement, VisitMut, VisitorMut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

/// `sql`, one query, walked by `visitor` and written again when `changed`
/// says the visitor changed it; None otherwise, or when the parser rejects
/// it.
pub(super) fn rewrite_query<V: VisitorMut>(
    sql: &str,
    visitor: &mut V,
    changed: impl Fn(&V) -> bool,
) -> Option<String> {
    let mut query = parse_query(sql)?;
    let _ = VisitMut::visit(&mut query, visitor);
    changed(visitor).then(|| query.to_string())
}

/// A way of reading some columns anew (numbers stored as text as
/// numbers, written dates as ISO dates) where a query orders by them or
/// compares them.
pub(super) trait Rereading {
    /// `expr` read anew; None when it is no column this reading is for.
    fn reread(&self, expr: &Expr) -> Option<Expr>;

    /// An ordering key read anew: as `reread`, unless the column's stored
    /// form already sorts in the order meant.
    fn reread_key(&self, expr: &Expr) -> Option<Expr> {
        self.reread(expr)
    }

    /// The operands of `expr` that its meaning reads in order, and so
    /// that are to be read anew; none for most expressions.
    fn ordered_operands<'e>(&self, expr: &'e mut Expr) -> Vec<&'e mut Expr>;

    /// `expr` read anew as a whole, where its meaning is not its operands'
    /// read one by one (a difference of two dates); None for most.
    fn reread_whole(&self, _expr: &Expr) -> Option<Expr> {
        None
    }
}

/// `sql` with every ordering key and every operand `reading` names read
/// anew; None when nothing was, or when the parser rejects it.
pub(super) fn reread_query(sql: &str, reading: &impl Rereading) -> Option<String> {
    let mut rereader = Rereader {
        reading,
        changed: false,
    };
    rewrite_query(sql, &mut rereader, |r| r.changed)
}

struct Rereader<'a, R> {
    reading: &'a R,
    changed: bool,
}

impl<R: Rereading> Rereader<'_, R> {
    fn read(&mut self, expr: &mut Expr, anew: Option<Expr>) {
        if let Some(anew) = anew {
            *expr = anew;
            self.changed = true;
        }
    }
}

impl<R: Rereading> VisitorMut for Rereader<'_, R> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(OrderByKind::Expressions(keys)) = query.order_by.as_mut().map(|o| &mut o.kind) {
            for key in keys {
                let anew = self.reading.reread_key(&key.expr);
                self.read(&mut key.expr, anew);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(whole) = self.reading.reread_whole(expr) {
            self.read(expr, Some(whole));
            return ControlFlow::Continue(());
        }
        for operand in self.reading.ordered_operands(expr) {
            let anew = self.reading.reread(operand);
            self.read(operand, anew);
        }
        ControlFlow::Continue(())
    }
}

/// `sql` parsed as one query; None when it is not one.
pub(super) fn parse_query(sql: &str) -> Option<Query> {
    let statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    match <[Statement; 1]>::try_from(statements).ok()? {
        [Statement::Query(query)] => Some(*query),
        _ => None,
    }
}

/// `text` parsed as one expression.
pub(super) fn parse_expr(text: &str) -> Option<Expr> {
    Parser::new(&SQLiteDialect {})
        .try_with_sql(text)
        .ok()?
        .parse_expr()
        .ok()
}

/// The column `expr` names, bare or qualified; None for any other
/// expression.
pub(super) fn column_named(expr: &Expr) -> Option<&Ident> {
    match expr {
        Expr::Identifier(ident) => Some(ident),
        Expr::CompoundIdentifier(parts) => parts.last(),
        _ => None,
    }
}

/// Whether `expr` is a text literal that starts as an ISO date.
pub(super) fn is_iso_date(expr: &Expr) -> bool {
    let text = expr.to_string();
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    matches!(expr, Expr::Value(_))
        && bytes.first() == Some(&b'\'')
        && digits(1..5)
        && bytes.get(5) == Some(&b'-')
        && digits(6..8)
}

/// The side of a comparison whose other side (both bounds of a BETWEEN,
/// every item of an IN list) `is_bound` accepts, with those bounds: `x`
/// of `x <= '2024-03-31'`, of `'2024-03-31' = x`, of `x BETWEEN a AND b`
/// and of `x IN (a, b)`; None for any other expression.
pub(super) fn compared_side(
    expr: &mut Expr,
    is_bound: impl Fn(&Expr) -> bool,
) -> Option<(&mut Expr, Vec<&Expr>)> {
    use BinaryOperator::*;
    match expr {
        Expr::BinaryOp {
            left,
            op: Gt | GtEq | Lt | LtEq | Eq | NotEq,
            right,
        } => {
            if is_bound(right) {
                Some((left, vec![right]))
            } else if is_bound(left) {
                Some((right, vec![left]))
            } else {
                None
            }
        }
        Expr::Between {
            expr, low, high, ..
        } if is_bound(low) && is_bound(high) => Some((expr, vec![low, high])),
        Expr::InList { expr, list, .. } if !list.is_empty() && list.iter().all(&is_bound) => {
            Some((expr, list.iter().collect()))
        }
        _ => None,
    }
}

/// The terms of a chain of ANDs, in order (parentheses that hold another
/// AND are part of the chain).
pub(super) fn conjuncts(expr: Expr) -> Vec<Expr> {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut terms = conjuncts(*left);
            terms.extend(conjuncts(*right));
            terms
        }
        Expr::Nested(inner) if is_and(&inner) => conjuncts(*inner),
        other => vec![other],
    }
}

/// Whether `expr` is an AND.
pub(super) fn is_and(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::BinaryOp {
            op: BinaryOperator::And,
            ..
        }
    )
}

/// The terms joined by AND, an OR among them in parentheses (the tree
/// prints without any).
pub(super) fn conjoin(terms: Vec<Expr>) -> Option<Expr> {
    let bracketed = |term: Expr| match term {
        Expr::BinaryOp {
            op: BinaryOperator::Or,
            ..
        } => Expr::Nested(Box::new(term)),
        other => other,
    };
    let several = terms.len() > 1;
    terms
        .into_iter()
        .map(|t| if several { bracketed(t) } else { t })
        .reduce(|left, right| Expr::BinaryOp {
            left: Box::new(left),
            op: BinaryOperator::And,
            right: Box::new(right),
        })
}

/// Where a call of one of SQLite's date functions takes its time value
/// (`strftime`'s second argument, the others' first); None for any other
/// function.
pub(super) fn time_value_position(function: &Function) -> Option<usize> {
    match function.name.to_string().to_lowercase().as_str() {
        "strftime" => Some(1),
        "date" | "time" | "datetime" | "julianday" | "unixepoch" => Some(0),
        _ => None,
    }
}

/// A call's argument at `position`, when it is a plain expression.
pub(super) fn argument_mut(function: &mut Function, position: usize) -> Option<&mut Expr> {
    let FunctionArguments::List(list) = &mut function.args else {
        return None;
    };
    list.args.get_mut(position).and_then(plain_argument_mut)
}

/// An argument's expression, when it is a plain one (not named, not `*`).
pub(super) fn plain_argument_mut(arg: &mut FunctionArg) -> Option<&mut Expr> {
    match arg {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr),
        _ => None,
    }
}

/// The column `expr` names, to change; None for any other expression.
pub(super) fn column_named_mut(expr: &mut Expr) -> Option<&mut Ident> {
    match expr {
        Expr::Identifier(ident) => Some(ident),
        Expr::CompoundIdentifier(parts) => parts.last_mut(),
        _ => None,
    }
}

/// The lowercased names of the columns of `schema` that `holds` is true
/// of, where it is true of every column so named (`columns_of_a_kind`).
pub(super) fn columns_where(schema: &Schema, holds: impl Fn(&Column) -> bool) -> HashSet<String> {
    columns_of_a_kind(schema, |_, c| holds(c).then_some(()))
        .into_keys()
        .collect()
}

/// What `kind` says of the columns of `schema`, by lowercased name, where
/// it says something and says the same of every column so named: a
/// query's bare or aliased column could be any of them.
pub(super) fn columns_of_a_kind<K: Copy + PartialEq>(
    schema: &Schema,
    kind: impl Fn(&Table, &Column) -> Option<K>,
) -> HashMap<String, K> {
    let mut kinds: HashMap<String, Option<K>> = HashMap::new();
    for (table, column) in schema
        .tables
        .iter()
        .flat_map(|t| t.columns.iter().map(move |c| (t, c)))
    {
        let this = kind(table, column);
        kinds
            .entry(column.name.to_lowercase())
            .and_modify(|seen| {
                if *seen != this {
                    *seen = None;
                }
            })
            .or_insert(this);
    }
    kinds
        .into_iter()
        .filter_map(|(name, kind)| Some((name, kind?)))
        .collect()
}
