//! The tables a subgraph becomes. Every entity type the graph states
//! (`Heat|type|film`, `rdf:type`, `instance_of`, `is_a`) becomes a table
//! whose first column `entity` holds the entities of that type and whose
//! further columns are the relations those entities hold one object of,
//! the relations closest to the question first. Every other relation (one
//! with several objects per subject, one whose subjects share no type, one
//! past the column cap) is a table of its own: `entity` (the subject) and a
//! column named after the relation (the object). The type relation itself
//! is no table: a type's table lists its entities. A graph that states no
//! types is therefore one table per relation. Tables are linked like foreign keys wherever a column holds
//! another table's entities, so a multi-hop question is a join.

use super::graph::Triple;
use super::names::NameSet;
use super::sqlite_file::{self, Overwrite};
use super::store::identifier;
use crate::error::Result;
use crate::understand::text::{is_stopword, similarity, words};
use rusqlite::params_from_iter;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

/// Relation columns of one type's table at most; the others stay tables of
/// their own, so nothing is lost and the widest tables stay readable.
const MAX_TYPE_COLUMNS: usize = 10;

/// The first column of every table.
const ENTITY: &str = "entity";

/// Whether `relation` states its subject's type: `type`, `is_a`, `isa`,
/// `instance_of`, also as the last part of a path or prefixed name
/// (`rdf:type`, `/type/object/type`).
pub fn is_type_relation(relation: &str) -> bool {
    let last = relation
        .rsplit(['/', '#', ':', '.'])
        .next()
        .unwrap_or(relation);
    matches!(
        identifier(last, "relation").as_str(),
        "type" | "is_a" | "isa" | "instance_of"
    )
}

/// One table to write: its name, its columns (`entity` first) and its rows.
#[derive(Debug, PartialEq)]
pub struct GraphTable {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

impl GraphTable {
    fn subjects(&self) -> HashSet<&str> {
        self.column_values(0)
    }

    fn column_values(&self, column: usize) -> HashSet<&str> {
        self.rows
            .iter()
            .filter_map(|row| row[column].as_deref())
            .collect()
    }
}

/// The tables of `triples`, with the relations closest to `question` first
/// among a type table's columns.
pub fn layout(triples: &[Triple], question: &str) -> Vec<GraphTable> {
    let mut by_relation: BTreeMap<String, Vec<&Triple>> = BTreeMap::new();
    for t in triples {
        by_relation
            .entry(identifier(&t.relation, "relation"))
            .or_default()
            .push(t);
    }
    let types = entity_types(triples);
    let folded = fold_into_types(&by_relation, &types, question);
    let mut names = NameSet::default();
    let mut tables = Vec::new();
    for (type_name, members) in &types {
        let relations = folded.get(type_name).map(Vec::as_slice).unwrap_or(&[]);
        tables.push(type_table(
            names.take(identifier(type_name, "type")),
            members,
            relations,
            &by_relation,
        ));
    }
    let folded: HashSet<&str> = folded.values().flatten().map(String::as_str).collect();
    for (name, rows) in &by_relation {
        if folded.contains(name.as_str()) || states_types(rows) {
            continue;
        }
        let column = if name == ENTITY { "entity_2" } else { name };
        tables.push(GraphTable {
            name: names.take(name.clone()),
            columns: vec![ENTITY.to_string(), column.to_string()],
            rows: rows
                .iter()
                .map(|t| vec![Some(t.head.clone()), Some(t.tail.clone())])
                .collect(),
        });
    }
    tables
}

fn states_types(rows: &[&Triple]) -> bool {
    rows.iter().any(|t| is_type_relation(&t.relation))
}

/// Each stated type's entities, by type name.
fn entity_types(triples: &[Triple]) -> BTreeMap<String, BTreeSet<String>> {
    let mut types: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in triples.iter().filter(|t| is_type_relation(&t.relation)) {
        types
            .entry(t.tail.clone())
            .or_default()
            .insert(t.head.clone());
    }
    types
}

/// The relations that become columns of a type's table, by type, closest
/// to the question first: those whose every subject is of the type (the
/// most specific such type) and holds one object.
fn fold_into_types(
    by_relation: &BTreeMap<String, Vec<&Triple>>,
    types: &BTreeMap<String, BTreeSet<String>>,
    question: &str,
) -> BTreeMap<String, Vec<String>> {
    let mut folded: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, rows) in by_relation {
        if states_types(rows) || name == ENTITY {
            continue;
        }
        let mut objects: BTreeMap<&str, &str> = BTreeMap::new();
        let single = rows
            .iter()
            .all(|t| *objects.entry(&t.head).or_insert(&t.tail) == t.tail);
        if !single {
            continue;
        }
        let home = types
            .iter()
            .filter(|(_, members)| objects.keys().all(|s| members.contains(*s)))
            .min_by_key(|(_, members)| members.len());
        if let Some((type_name, _)) = home {
            folded
                .entry(type_name.clone())
                .or_default()
                .push(name.clone());
        }
    }
    let asked = content_words(question);
    for relations in folded.values_mut() {
        let mut scored: Vec<(f64, String)> = relations
            .drain(..)
            .map(|r| (relevance(&r, &asked), r))
            .collect();
        // Stable: equally close relations keep name order.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        relations.extend(scored.into_iter().take(MAX_TYPE_COLUMNS).map(|(_, r)| r));
    }
    folded
}

/// The words of `text` that are not stopwords.
fn content_words(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stopword(w))
        .collect()
}

/// How close a relation's name comes to the question's words `asked`: the
/// best trigram similarity of one of its words to one of them.
fn relevance(relation: &str, asked: &[String]) -> f64 {
    content_words(relation)
        .iter()
        .flat_map(|r| asked.iter().map(move |q| similarity(r, q)))
        .fold(0.0, f64::max)
}

fn type_table(
    name: String,
    members: &BTreeSet<String>,
    relations: &[String],
    by_relation: &BTreeMap<String, Vec<&Triple>>,
) -> GraphTable {
    let objects: Vec<BTreeMap<&str, &str>> = relations
        .iter()
        .map(|r| {
            by_relation[r]
                .iter()
                .map(|t| (t.head.as_str(), t.tail.as_str()))
                .collect()
        })
        .collect();
    GraphTable {
        name,
        columns: std::iter::once(ENTITY.to_string())
            .chain(relations.iter().cloned())
            .collect(),
        rows: members
            .iter()
            .map(|entity| {
                std::iter::once(Some(entity.clone()))
                    .chain(
                        objects
                            .iter()
                            .map(|o| o.get(entity.as_str()).map(|v| v.to_string())),
                    )
                    .collect()
            })
            .collect(),
    }
}

/// Writes `tables` to a new SQLite file. A column is declared a foreign key
/// of every other table whose entities it holds, so that joins are visible
/// to the model and to the join repair. They are declared largest table
/// first; SQLite lists them last declared first and the schema shows the
/// first listed, so each column shows its key to the smallest such table,
/// which links the tables in a chain (showing the largest, a star through
/// one table, was measured worse on the two-hop test question). An
/// `entity` column is linked only to larger tables, so that two tables
/// sharing subjects are linked by one key, not by two mirrored ones.
pub fn write(tables: &[GraphTable], path: &Path, overwrite: Overwrite) -> Result<()> {
    let subjects: Vec<HashSet<&str>> = tables.iter().map(GraphTable::subjects).collect();
    let mut by_size: Vec<usize> = (0..tables.len()).collect();
    // Stable: equally large tables keep their order.
    by_size.sort_by_key(|&i| std::cmp::Reverse(subjects[i].len()));
    let rank = |table: usize| by_size.iter().position(|&i| i == table);
    sqlite_file::write_new(path, overwrite, |conn| {
        for (own, table) in tables.iter().enumerate() {
            let mut keys = Vec::new();
            for (c, column) in table.columns.iter().enumerate() {
                let values = table.column_values(c);
                let is_entity = c == 0;
                for &other in &by_size {
                    let linked = other != own
                        && !(is_entity && rank(other) > rank(own))
                        && !subjects[other].is_disjoint(&values);
                    if linked {
                        keys.push(format!(
                            ", FOREIGN KEY ({column}) REFERENCES {}({ENTITY})",
                            tables[other].name
                        ));
                    }
                }
            }
            let columns: Vec<String> = table.columns.iter().map(|c| format!("{c} TEXT")).collect();
            conn.execute_batch(&format!(
                "CREATE TABLE {} ({}{})",
                table.name,
                columns.join(", "),
                keys.concat()
            ))?;
            let placeholders = vec!["?"; table.columns.len()].join(", ");
            let mut insert = conn.prepare(&format!(
                "INSERT INTO {} VALUES ({placeholders})",
                table.name
            ))?;
            for row in &table.rows {
                insert.execute(params_from_iter(row))?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triples(text: &str) -> Vec<Triple> {
        text.lines()
            .map(|line| {
                let parts: Vec<&str> = line.split('|').collect();
                Triple {
                    head: parts[0].into(),
                    relation: parts[1].into(),
                    tail: parts[2].into(),
                }
            })
            .collect()
    }

    const TYPED: &str = "\
Heat|type|film
Collateral|type|film
Michael Mann|type|person
Heat|directed_by|Michael Mann
Collateral|directed_by|Michael Mann
Heat|release_year|1995
Collateral|release_year|2004
Heat|starred_actors|Al Pacino
Heat|starred_actors|Robert De Niro
Michael Mann|born_in|Chicago";

    fn shape(tables: &[GraphTable]) -> Vec<String> {
        tables
            .iter()
            .map(|t| format!("{}({})", t.name, t.columns.join(",")))
            .collect()
    }

    #[test]
    fn type_relations_are_recognised_in_any_spelling() {
        for relation in [
            "type",
            "rdf:type",
            "/type/object/type",
            "instance of",
            "is_a",
        ] {
            assert!(is_type_relation(relation), "{relation}");
        }
        for relation in ["type_of_music", "genre", "directed_by"] {
            assert!(!is_type_relation(relation), "{relation}");
        }
    }

    #[test]
    fn a_stated_type_is_a_table_of_its_single_valued_relations() {
        let tables = layout(&triples(TYPED), "when was Heat released?");
        assert_eq!(
            shape(&tables),
            [
                "film(entity,release_year,directed_by)",
                "person(entity,born_in)",
                "starred_actors(entity,starred_actors)",
            ]
        );
        let film = &tables[0];
        assert_eq!(
            film.rows[1],
            [
                Some("Heat".into()),
                Some("1995".into()),
                Some("Michael Mann".into())
            ]
        );
        // Asked about directors, that relation comes first.
        let tables = layout(&triples(TYPED), "who directed Heat?");
        assert_eq!(tables[0].columns, ["entity", "directed_by", "release_year"]);
    }

    #[test]
    fn without_types_every_relation_is_a_table() {
        let untyped: String = TYPED
            .lines()
            .filter(|l| !l.contains("|type|"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            shape(&layout(&triples(&untyped), "")),
            [
                "born_in(entity,born_in)",
                "directed_by(entity,directed_by)",
                "release_year(entity,release_year)",
                "starred_actors(entity,starred_actors)",
            ]
        );
    }

    #[test]
    fn a_two_hop_question_over_typed_tables_is_a_join() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("typed.sqlite");
        write(&layout(&triples(TYPED), ""), &path, Overwrite::Refuse).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let city: String = conn
            .query_row(
                "SELECT p.born_in FROM film f JOIN person p ON p.entity = f.directed_by \
                 WHERE f.entity = 'Collateral'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(city, "Chicago");
        // The film table's director column is declared a key into person.
        let keys: Vec<String> = conn
            .prepare("SELECT \"from\" || '>' || \"table\" FROM pragma_foreign_key_list('film')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(keys.contains(&"directed_by>person".to_string()), "{keys:?}");
    }
}
