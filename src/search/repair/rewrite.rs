//! A query parsed, changed by a visitor of its syntax tree, and written
//! again: the frame of the repairs that change a query's structure rather
//! than its words.

use sqlparser::ast::{Query, Statement, VisitMut, VisitorMut};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

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
