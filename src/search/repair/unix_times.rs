//! Unix times handed to SQLite's date functions bare
//! (`strftime('%Y', placed_at)`): SQLite reads a bare number as a Julian
//! day, and any time after 1970 counted in seconds is past the last day
//! it knows, so every such call gives NULL and the query counts nothing.
//! The model knew the column held a time, not how SQLite reads one. Each
//! such call gets the 'unixepoch' modifier right after the time, which is
//! where SQLite requires it, and a column of milliseconds is divided by
//! 1000 first.

use super::rewrite::{
    column_named, columns_of_a_kind, parse_expr, rewrite_query, time_value_position,
};
use crate::db::Schema;
use crate::search::dates::{unix_time_unit, UnixUnit};
use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, VisitorMut};
use std::collections::HashMap;
use std::ops::ControlFlow;

/// The database's columns of Unix times by lowercased name, with their
/// unit (`columns_of_a_kind`).
#[derive(Debug, Clone, Default)]
pub(super) struct UnixColumns(HashMap<String, UnixUnit>);

impl UnixColumns {
    pub(super) fn of(schema: &Schema) -> Self {
        UnixColumns(columns_of_a_kind(schema, |_, column| {
            unix_time_unit(column)
        }))
    }

    fn unit_of(&self, expr: &Expr) -> Option<UnixUnit> {
        let name = column_named(expr)?;
        self.0.get(&name.value.to_lowercase()).copied()
    }
}

/// `sql` with every date function call that reads a Unix time column bare
/// given the 'unixepoch' modifier; None when it has none (or is no query
/// the parser reads).
pub(super) fn read_as_unix_times(sql: &str, columns: &UnixColumns) -> Option<String> {
    if columns.0.is_empty() {
        return None;
    }
    let mut reader = Reader {
        columns,
        changed: false,
    };
    rewrite_query(sql, &mut reader, |r| r.changed)
}

struct Reader<'a> {
    columns: &'a UnixColumns,
    changed: bool,
}

impl VisitorMut for Reader<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let Some(at) = time_value_position(function) else {
            return ControlFlow::Continue(());
        };
        let FunctionArguments::List(list) = &mut function.args else {
            return ControlFlow::Continue(());
        };
        let read_already = list.args.iter().skip(at + 1).any(|arg| {
            matches!(
                argument(arg)
                    .map(|e| e.to_string().to_lowercase())
                    .as_deref(),
                Some("'unixepoch'" | "'auto'")
            )
        });
        if read_already {
            return ControlFlow::Continue(());
        }
        let Some(time) = list.args.get(at).and_then(argument) else {
            return ControlFlow::Continue(());
        };
        let seconds = match (self.columns.unit_of(time), time) {
            (Some(UnixUnit::Seconds), _) => time.to_string(),
            (Some(UnixUnit::Milliseconds), _) => format!("{time} / 1000"),
            (None, Expr::BinaryOp { left, op, right })
                if self.columns.unit_of(left) == Some(UnixUnit::Milliseconds)
                    && op.to_string() == "/"
                    && right.to_string() == "1000" =>
            {
                time.to_string()
            }
            _ => return ControlFlow::Continue(()),
        };
        let (Some(seconds), Some(modifier)) = (parse_expr(&seconds), parse_expr("'unixepoch'"))
        else {
            return ControlFlow::Continue(());
        };
        list.args[at] = FunctionArg::Unnamed(FunctionArgExpr::Expr(seconds));
        list.args.insert(
            at + 1,
            FunctionArg::Unnamed(FunctionArgExpr::Expr(modifier)),
        );
        self.changed = true;
        ControlFlow::Continue(())
    }
}

/// An argument's expression, when it is a plain one.
fn argument(arg: &FunctionArg) -> Option<&Expr> {
    match arg {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::schema::{Column, Table};
    use crate::db::Value as Cell;

    fn columns() -> UnixColumns {
        let column = |name: &str, example: i64| Column {
            name: name.into(),
            declared_type: "INTEGER".into(),
            primary_key: false,
            examples: vec![Cell::Integer(example)],
            description: None,
            value_description: None,
            json: None,
        };
        let table = |name: &str, columns: Vec<Column>| Table {
            name: name.into(),
            is_view: false,
            row_count: Some(1),
            columns,
            foreign_keys: Vec::new(),
        };
        UnixColumns::of(&Schema {
            tables: vec![
                table(
                    "orders",
                    vec![column("placed_at", 1_609_459_200), column("id", 3)],
                ),
                table("readings", vec![column("ts", 1_675_741_410_871)]),
                // `updated` is a Unix time in one table and a count in
                // another: a query's `updated` could be either.
                table("a", vec![column("updated", 1_609_459_200)]),
                table("b", vec![column("updated", 4)]),
            ],
        })
    }

    fn read(sql: &str) -> Option<String> {
        read_as_unix_times(sql, &columns())
    }

    #[test]
    fn a_bare_unix_time_is_read_with_unixepoch() {
        assert_eq!(
            read("SELECT COUNT(*) FROM orders WHERE strftime('%Y', placed_at) = '2021'").as_deref(),
            Some(
                "SELECT COUNT(*) FROM orders WHERE strftime('%Y', placed_at, 'unixepoch') = '2021'"
            )
        );
        // Milliseconds, bare or already divided; modifiers after the time
        // stay after 'unixepoch'.
        assert_eq!(
            read("SELECT date(T.ts, '+1 day'), datetime(ts / 1000) FROM readings AS T").as_deref(),
            Some(
                "SELECT date(T.ts / 1000, 'unixepoch', '+1 day'), \
                 datetime(ts / 1000, 'unixepoch') FROM readings AS T"
            )
        );
    }

    #[test]
    fn times_read_already_and_other_columns_are_left() {
        for sql in [
            "SELECT strftime('%Y', placed_at, 'unixepoch') FROM orders",
            "SELECT strftime('%w', datetime(placed_at, 'unixepoch')) FROM orders",
            "SELECT date(ts / 1000, 'auto') FROM readings",
            "SELECT strftime('%Y', updated) FROM a",
            "SELECT strftime('%Y', id) FROM orders",
            "SELECT placed_at FROM orders WHERE placed_at > 1600000000",
        ] {
            assert_eq!(read(sql), None, "{sql}");
        }
    }
}
