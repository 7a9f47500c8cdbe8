//! Schema compression: keep the tables stage 1 found relevant (claimed and
//! verified, holding a linked value, or named by the question), plus the
//! tables that join them; drop the rest. Whole tables are kept, so every
//! key a join needs stays.

use super::linking::LinkMatch;
use super::text::words;
use super::verify::Verified;
use crate::db::Schema;
use std::collections::BTreeSet;

/// The compressed schema and the kept table names, or None when nothing
/// was found relevant or everything is (then the full schema is used).
/// `also` names more tables to keep (from the embedding ranking).
pub fn compress(
    schema: &Schema,
    question: &str,
    verified: &Verified,
    links: &[LinkMatch],
    also: &[String],
) -> Option<(Schema, Vec<String>)> {
    let mut kept: BTreeSet<String> = BTreeSet::new();
    let canonical = |name: &str| schema.table(name).map(|t| t.name.clone());
    for check in &verified.kept {
        if let Some(resolved) = &check.resolved {
            let table = match check.kind {
                "table" => Some(resolved.as_str()),
                "column" | "key" | "relation" => resolved.split_once('.').map(|(t, _)| t),
                _ => None,
            };
            kept.extend(table.and_then(canonical));
        }
    }
    for table in links.iter().map(|l| &l.table).chain(also) {
        kept.extend(canonical(table));
    }
    kept.extend(named_tables(schema, question));
    if kept.is_empty() {
        return None;
    }
    add_bridges(schema, &mut kept);
    if kept.len() == schema.tables.len() {
        return None;
    }
    // Schema order, not alphabetical.
    let tables: Vec<_> = schema
        .tables
        .iter()
        .filter(|t| kept.contains(&t.name))
        .cloned()
        .collect();
    let names = tables.iter().map(|t| t.name.clone()).collect();
    Some((Schema { tables }, names))
}

/// Adds to `kept` every bridge: a table with keys to (or from) two kept
/// tables that are not directly joined.
pub(super) fn add_bridges(schema: &Schema, kept: &mut BTreeSet<String>) {
    let linked = |a: &str, b: &str| {
        let points = |from: &str, to: &str| {
            schema.table(from).is_some_and(|t| {
                t.foreign_keys
                    .iter()
                    .any(|fk| fk.foreign_table.eq_ignore_ascii_case(to))
            })
        };
        points(a, b) || points(b, a)
    };
    let current: Vec<String> = kept.iter().cloned().collect();
    for (i, a) in current.iter().enumerate() {
        for b in &current[i + 1..] {
            if linked(a, b) {
                continue;
            }
            for bridge in &schema.tables {
                if linked(&bridge.name, a) && linked(&bridge.name, b) {
                    kept.insert(bridge.name.clone());
                }
            }
        }
    }
}

/// Tables whose name's words all occur in the question (a plural `s`
/// allowed).
pub(super) fn named_tables(schema: &Schema, question: &str) -> Vec<String> {
    let question_words = words(question);
    let occurs = |w: &String| {
        question_words
            .iter()
            .any(|q| q == w || q.strip_suffix('s') == Some(w) || q.strip_suffix("es") == Some(w))
    };
    schema
        .tables
        .iter()
        .filter(|t| {
            let name_words = words(&t.name);
            !name_words.is_empty() && name_words.iter().all(occurs)
        })
        .map(|t| t.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::understand::demo::schema;

    #[test]
    fn keeps_named_tables_and_the_tables_that_join_them() {
        let schema = schema();
        // singer and concert are joined only through singer_in_concert.
        let (kept, names) = compress(
            &schema,
            "Which singers performed at the concert named Auditions?",
            &Verified::default(),
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(names, ["singer", "concert", "singer_in_concert"]);
        assert_eq!(kept.tables.len(), 3);
    }

    #[test]
    fn nothing_relevant_means_no_compression() {
        assert!(compress(
            &schema(),
            "How many are there?",
            &Verified::default(),
            &[],
            &[]
        )
        .is_none());
    }
}
