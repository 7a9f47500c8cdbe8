//! Focusing a wide schema on one question for the prompts that write a
//! query in one call (greedy, sc, the search's direct samples), with no
//! model call: tables are ranked by how plainly the question points at them
//! (named by it, holding a value it mentions, holding a column close to it
//! in meaning) and kept in that order while the schema fits its budget.
//! Tables that join two kept ones come along, and whole tables are kept, so
//! every join key stays.

use super::compress::{add_bridges, named_tables};
use super::embedding::ColumnScore;
use super::linking::LinkMatch;
use crate::db::{render_schema, Schema};
use std::collections::BTreeSet;

/// Score of a table the question names, and of one holding a linked value
/// or column name, added to the similarity (at most 1) of its closest column.
const NAMED: f32 = 2.0;
const LINKED: f32 = 1.0;

/// Characters of `schema` rendered at its richest detail.
pub fn rendered_chars(schema: &Schema) -> usize {
    render_schema(schema, usize::MAX).chars().count()
}

/// The tables of `schema` that `question` needs most, within `max_chars`
/// at the richest detail, in schema order; None when the whole schema fits
/// or would be kept. Named tables are kept even past the budget.
pub fn focus(
    schema: &Schema,
    question: &str,
    links: &[LinkMatch],
    ranked: &[ColumnScore],
    max_chars: usize,
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
        let size = rendered_chars(&Schema {
            tables: vec![table.clone()],
        });
        let fits = used + size <= max_chars;
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

    fn names(schema: &Schema) -> Vec<&str> {
        schema.tables.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn a_schema_within_budget_is_left_whole() {
        let schema = schema();
        let all = rendered_chars(&schema);
        assert!(focus(&schema, "How many singers?", &[], &[], all).is_none());
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
        )
        .unwrap();
        assert_eq!(names(&focused), ["singer", "concert", "singer_in_concert"]);
    }

    #[test]
    fn a_named_table_is_kept_past_the_budget() {
        let schema = schema();
        let ranked = [column("stadium", 0.9)];
        let focused = focus(&schema, "List every singer.", &[], &ranked, 10).unwrap();
        assert_eq!(names(&focused), ["singer"]);
    }
}
