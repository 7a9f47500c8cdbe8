//! A query parsed, changed by a visitor of its syntax tree, and written
//! again: the frame of the repairs that change a query's structure rather
//! than its words.

use crate::db::schema::Column;
use crate::db::Schema;
use sqlparser::ast::{Expr, Ident, Query, Statement, VisitMut, VisitorMut};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;
use std::collections::HashMap;

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

/// What `kind` says of the columns of `schema`, by lowercased name, where
/// it says something and says the same of every column so named: a
/// query's bare or aliased column could be any of them.
pub(super) fn columns_of_a_kind<K: Copy + PartialEq>(
    schema: &Schema,
    kind: impl Fn(&Column) -> Option<K>,
) -> HashMap<String, K> {
    let mut kinds: HashMap<String, Option<K>> = HashMap::new();
    for column in schema.tables.iter().flat_map(|t| &t.columns) {
        let this = kind(column);
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
