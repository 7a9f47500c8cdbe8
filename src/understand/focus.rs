//! Focusing a wide schema on one question for the prompts that write a
//! query in one call (greedy, sc, the search's direct samples), with no
//! model call: tables are ranked by how plainly the question points at them
//! (named by it, holding a value it mentions, holding a column close to it
//! in meaning) and kept in that order while the schema fits its budget.
//! Tables that join two kept ones come along, and whole tables are kept, so
//! every join key stays. A wide table shows its numeric columns without
//! example values.

use super::compress::{add_bridges, named_tables};
use super::embedding::ColumnScore;
use super::linking::LinkMatch;
use crate::db::schema::Table;
use crate::db::{render_schema, Schema, Value};
use std::collections::BTreeSet;

/// Score of a table the question names, and of one holding a linked value
/// or column name, added to the similarity (at most 1) of its closest column.
const NAMED: f32 = 2.0;
const LINKED: f32 = 1.0;

/// Prompt tokens of `schema` rendered at its richest detail, as
/// `count_tokens` counts a text's.
pub fn rendered_tokens(schema: &Schema, count_tokens: &dyn Fn(&str) -> usize) -> usize {
    count_tokens(&render_schema(schema, usize::MAX))
}

/// The tables of `schema` that `question` needs most, within `max_tokens`
/// at the richest detail (counted by `count_tokens`), in schema order; None
/// when the whole schema fits or would be kept. Named tables are kept even
/// past the budget.
pub fn focus(
    schema: &Schema,
    question: &str,
    links: &[LinkMatch],
    ranked: &[ColumnScore],
    max_tokens: usize,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Option<Schema> {
    // A schema that fits whole keeps every table below, so needs no check
    // (and no rendering) of its own here.
    let named = named_tables(schema, question);
    let score = |table: &str| {
        let is = |name: &str| name.eq_ignore_ascii_case(table);
        let closest = ranked
            .iter()
            .filter(|c| is(&c.table))
            .map(|c| c.similarity)
            .fold(0.0f32, f32::max);
        let named = if named.iter().any(|n| is(n)) {
            NAMED
        } else {
            0.0
        };
        let linked = if links.iter().any(|l| is(&l.table)) {
            LINKED
        } else {
            0.0
        };
        named + linked + closest
    };
    let mut order: Vec<(f32, &crate::db::schema::Table)> =
        schema.tables.iter().map(|t| (score(&t.name), t)).collect();
    // Stable: equal scores keep schema order.
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut kept = BTreeSet::new();
    let mut used = 0;
    for (score, table) in order {
        let size = rendered_tokens(
            &Schema {
                tables: vec![table.clone()],
            },
            count_tokens,
        );
        let fits = used + size <= max_tokens;
        if !(fits || kept.is_empty() || score >= NAMED) {
            break;
        }
        used += size;
        kept.insert(table.name.clone());
    }
    add_bridges(schema, &mut kept);
    if kept.len() == schema.tables.len() {
        return None;
    }
    let tables = schema
        .tables
        .iter()
        .filter(|t| kept.contains(&t.name))
        .cloned()
        .collect();
    Some(Schema { tables })
}

/// A table with more columns than this is wide: past the budget, its
/// numeric columns are listed without example values. (No table of the
/// benchmarks' databases has more than 26.)
pub const WIDE_TABLE_COLUMNS: usize = 30;

/// `schema` with the example values of its wide tables' numeric columns
/// left out, keys aside: a 250-column table of yearly figures spends
/// thousands of prompt tokens on digits that tell the model little more
/// than the column's type, while text examples show how values are
/// spelt. The same for every question, so a prompt's schema stays a
/// prefix the model has already read. None when no table is wide.
pub fn thin_wide_tables(schema: &Schema) -> Option<Schema> {
    let wide = |table: &Table| table.columns.len() > WIDE_TABLE_COLUMNS;
    if !schema.tables.iter().any(wide) {
        return None;
    }
    let mut thinned = schema.clone();
    for table in thinned.tables.iter_mut().filter(|t| wide(t)) {
        let keys: Vec<String> = table
            .foreign_keys
            .iter()
            .map(|fk| fk.column.clone())
            .collect();
        for column in &mut table.columns {
            let is_key =
                column.primary_key || keys.iter().any(|k| k.eq_ignore_ascii_case(&column.name));
            let numeric = column
                .examples
                .iter()
                .all(|v| matches!(v, Value::Integer(_) | Value::Real(_)));
            if numeric && !is_key {
                column.examples.clear();
            }
        }
    }
    Some(thinned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::understand::demo::schema;

    fn column(table: &str, similarity: f32) -> ColumnScore {
        ColumnScore {
            table: table.into(),
            column: "x".into(),
            similarity,
        }
    }

    /// Counts characters for tokens: the focus reads sizes, not texts.
    fn chars(text: &str) -> usize {
        text.chars().count()
    }

    fn rendered_chars(schema: &Schema) -> usize {
        rendered_tokens(schema, &chars)
    }

    fn names(schema: &Schema) -> Vec<&str> {
        schema.tables.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn a_schema_within_budget_is_left_whole() {
        let schema = schema();
        let all = rendered_chars(&schema);
        assert!(focus(&schema, "How many singers?", &[], &[], all, &chars).is_none());
    }

    #[test]
    fn tables_are_kept_by_rank_while_they_fit_and_joined_by_their_bridges() {
        let schema = schema();
        let one = |name: &str| {
            rendered_chars(&Schema {
                tables: vec![schema.table(name).unwrap().clone()],
            })
        };
        // Room for singer and concert but not for a third table: the
        // bridge between them comes along all the same.
        let budget = one("singer") + one("concert") + 1;
        let ranked = [column("concert", 0.8), column("stadium", 0.3)];
        let focused = focus(
            &schema,
            "Which singers sang at the Auditions?",
            &[],
            &ranked,
            budget,
            &chars,
        )
        .unwrap();
        assert_eq!(names(&focused), ["singer", "concert", "singer_in_concert"]);
    }

    #[test]
    fn a_named_table_is_kept_past_the_budget() {
        let schema = schema();
        let ranked = [column("stadium", 0.9)];
        let focused = focus(&schema, "List every singer.", &[], &ranked, 10, &chars).unwrap();
        assert_eq!(names(&focused), ["singer"]);
    }

    /// A table of `width` columns: a key, a city and yearly figures, each
    /// with an example value and a description.
    fn stats_table(width: usize) -> Table {
        use crate::db::schema::Column;
        let column = |name: &str, example: Value| Column {
            name: name.into(),
            declared_type: String::new(),
            primary_key: name == "store_id",
            examples: vec![example],
            description: Some(format!("the {name}")),
            value_description: None,
            json: None,
        };
        let mut columns = vec![
            column("store_id", Value::Integer(7)),
            column("city", Value::Text("Oslo".into())),
        ];
        columns
            .extend((2..width).map(|i| column(&format!("sales_{}", 1990 + i), Value::Real(2.5))));
        Table {
            name: "store_stats".into(),
            is_view: false,
            row_count: Some(500),
            columns,
            foreign_keys: Vec::new(),
        }
    }

    fn with_examples(table: &Table) -> Vec<&str> {
        table
            .columns
            .iter()
            .filter(|c| !c.examples.is_empty())
            .map(|c| c.name.as_str())
            .collect()
    }

    #[test]
    fn a_wide_tables_numbers_lose_their_examples_and_its_keys_and_texts_keep_them() {
        let mut schema = schema();
        schema.tables.push(stats_table(WIDE_TABLE_COLUMNS + 10));
        let thinned = thin_wide_tables(&schema).unwrap();
        let stats = thinned.table("store_stats").unwrap();
        assert_eq!(with_examples(stats), ["store_id", "city"]);
        // Every column is still there with its description, and narrow
        // tables are untouched.
        assert_eq!(stats.columns.len(), WIDE_TABLE_COLUMNS + 10);
        assert!(stats.columns.iter().all(|c| c.description.is_some()));
        let narrow = |s: &Schema| {
            render_schema(
                &Schema {
                    tables: s.tables[..4].to_vec(),
                },
                usize::MAX,
            )
        };
        assert_eq!(narrow(&thinned), narrow(&schema));
        assert!(rendered_chars(&thinned) < rendered_chars(&schema));
    }

    #[test]
    fn a_schema_without_wide_tables_is_not_thinned() {
        let mut schema = schema();
        schema.tables.push(stats_table(WIDE_TABLE_COLUMNS));
        assert!(thin_wide_tables(&schema).is_none());
    }
}
