//! Knowledge graphs as tables. A triples file is read once into an indexed
//! SQLite store in the cache; for a question, its topic entities are linked
//! to graph nodes, the subgraph within H hops is cut, and it becomes tables
//! (`graph_tables`): one per stated entity type, else one per relation,
//! whose first column `entity` holds the subject and whose further columns,
//! named after relations, hold objects. Tables share entity names, so a
//! multi-hop question is a join: `SELECT s.starred_actors FROM directed_by
//! d JOIN starred_actors s ON s.entity = d.entity WHERE d.directed_by =
//! 'Joel Zwick'`.

use super::graph_tables;
use super::sqlite_file::{self, Overwrite};
use crate::error::{Error, Result};
use crate::llm::card::iesr_home;
use crate::understand::text::{jaccard, trigrams};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// Bumped whenever the stores or subgraph tables built from the same file
/// would differ.
const FORMAT: &str = "iesr-graph-3";

/// A node with more edges than this is reached but not expanded: a year or
/// a language links to thousands of entities no question walks through.
const MAX_FANOUT: usize = 500;

/// A triples file's indexed store.
pub struct Graph {
    conn: Connection,
    key: u128,
    /// The folder of the store, where subgraph databases are cached too.
    cache: PathBuf,
    /// The store's file, named in errors.
    store: PathBuf,
    /// The relations that state an entity's type (`graph_tables`); where
    /// there are some, a subgraph's tables depend on the question.
    type_relations: HashSet<String>,
}

impl Graph {
    /// The store of `file` (`head|relation|tail` or tab-separated lines),
    /// built on first use in the cache folder.
    pub fn open(file: &Path) -> Result<Graph> {
        Self::open_in(file, &iesr_home().join("graphs"))
    }

    /// The store of `file`, kept in `dir`.
    pub fn open_in(file: &Path, dir: &Path) -> Result<Graph> {
        let key = super::content_key(FORMAT, &[file.to_path_buf()])?;
        let store = dir.join(format!("{key:032x}.sqlite"));
        if !store.is_file() {
            let triples = read_triples(file)?;
            std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
            write_store(&triples, &store)?;
        }
        let conn = Connection::open_with_flags(&store, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| store_error(&store, e))?;
        let type_relations = distinct_relations(&conn)
            .map_err(|e| store_error(&store, e))?
            .into_iter()
            .filter(|r| graph_tables::is_type_relation(r))
            .collect();
        Ok(Graph {
            conn,
            key,
            cache: dir.to_path_buf(),
            store,
            type_relations,
        })
    }

    /// The graph node a topic names: the same name, else the same name
    /// ignoring case, else the name sharing the most character trigrams
    /// (Jaccard similarity, which MinHash estimates; exact here, as one
    /// pass over the names is fast enough).
    pub fn link(&self, topic: &str) -> Result<String> {
        if let Some(name) = self.named(topic)? {
            return Ok(name);
        }
        let wanted = trigrams(topic);
        self.names()?
            .iter()
            .map(|n| (jaccard(&wanted, &trigrams(n)), n))
            .filter(|(score, _)| *score > 0.0)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| n.clone())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "no entity of the graph resembles the topic `{topic}`; check its spelling"
                ))
            })
    }

    /// The nodes `question` names (see `topics::find`), for a question
    /// asked without `--topic`.
    pub fn topics_in(&self, question: &str) -> Result<Vec<String>> {
        let topics = super::topics::find(question, |text| self.named(text))?;
        if topics.is_empty() {
            return Err(Error::InvalidArgument(
                "the question names no entity of the graph; name one with --topic ENTITY".into(),
            ));
        }
        Ok(topics)
    }

    /// The node named `text` exactly, else ignoring case.
    fn named(&self, text: &str) -> Result<Option<String>> {
        let find = |sql: &str, key: &str| {
            self.conn
                .query_row(sql, [key], |r| r.get(0))
                .optional()
                .map_err(|e| store_error(&self.store, e))
        };
        if let Some(name) = find("SELECT name FROM names WHERE name = ?1", text)? {
            return Ok(Some(name));
        }
        find(
            "SELECT name FROM names WHERE folded = ?1 ORDER BY name LIMIT 1",
            &text.to_lowercase(),
        )
    }

    fn names(&self) -> Result<Vec<String>> {
        let mut statement = self
            .conn
            .prepare("SELECT name FROM names")
            .map_err(|e| store_error(&self.store, e))?;
        let names = statement
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
            .map_err(|e| store_error(&self.store, e))?;
        Ok(names)
    }

    /// The triples within `hops` of the topics: every edge of every node
    /// reached in fewer than `hops` steps, in either direction, never
    /// through a type, and the types of the nodes reached last.
    pub fn subgraph(&self, topics: &[String], hops: usize) -> Result<Vec<Triple>> {
        let failed = |e| store_error(&self.store, e);
        let mut statement = self
            .conn
            .prepare(
                "SELECT head, relation, tail FROM triples WHERE head = ?1
                 UNION ALL SELECT head, relation, tail FROM triples WHERE tail = ?1 LIMIT ?2",
            )
            .map_err(failed)?;
        let mut seen: HashSet<String> = topics.iter().cloned().collect();
        let mut frontier: Vec<String> = topics.to_vec();
        let mut kept: BTreeSet<Triple> = BTreeSet::new();
        for _ in 0..hops {
            let mut next = Vec::new();
            for node in &frontier {
                let edges: Vec<Triple> = statement
                    .query_map(params![node, MAX_FANOUT as i64 + 1], |r| {
                        Ok(Triple {
                            head: r.get(0)?,
                            relation: r.get(1)?,
                            tail: r.get(2)?,
                        })
                    })
                    .and_then(|rows| rows.collect())
                    .map_err(failed)?;
                if edges.len() > MAX_FANOUT && !topics.contains(node) {
                    continue;
                }
                for edge in edges {
                    // A type links every entity of its kind: its edges are
                    // kept, but the walk does not pass through it.
                    let ends = match self.type_relations.contains(&edge.relation) {
                        true => &[&edge.head][..],
                        false => &[&edge.head, &edge.tail][..],
                    };
                    for &end in ends {
                        if seen.insert(end.clone()) {
                            next.push(end.clone());
                        }
                    }
                    kept.insert(edge);
                }
            }
            frontier = next;
        }
        if !self.type_relations.is_empty() {
            // The nodes reached last are typed too, so that every entity a
            // table names is listed in its type's table.
            let mut typing = self
                .conn
                .prepare("SELECT relation, tail FROM triples WHERE head = ?1")
                .map_err(failed)?;
            for node in &frontier {
                let edges: Vec<(String, String)> = typing
                    .query_map([node], |r| Ok((r.get(0)?, r.get(1)?)))
                    .and_then(|rows| rows.collect())
                    .map_err(failed)?;
                for (relation, tail) in edges {
                    if self.type_relations.contains(&relation) {
                        kept.insert(Triple {
                            head: node.clone(),
                            relation,
                            tail,
                        });
                    }
                }
            }
        }
        Ok(kept.into_iter().collect())
    }

    /// The cached database of the subgraph around `topics` (linked), laid
    /// out for `question`.
    pub fn subgraph_database(
        &self,
        topics: &[String],
        hops: usize,
        question: &str,
    ) -> Result<PathBuf> {
        let linked = self.link_all(topics)?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&self.key.to_le_bytes());
        hasher.update(&(hops as u64).to_le_bytes());
        for topic in &linked {
            hasher.update(topic.as_bytes());
            hasher.update(&[0]);
        }
        // Only a type table's column order depends on the question.
        if !self.type_relations.is_empty() {
            hasher.update(question.as_bytes());
        }
        let dir = self.cache.join("subgraphs");
        let path = dir.join(format!("{:032x}.sqlite", hasher.digest128()));
        if !path.is_file() {
            let triples = self.subgraph(&linked, hops)?;
            std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, e))?;
            let tables = graph_tables::layout(&triples, question);
            graph_tables::write(&tables, &path, Overwrite::Replace)?;
        }
        Ok(path)
    }

    /// Writes the subgraph's tables to a new SQLite file at `out`, for
    /// users who want to keep them; an existing file is left as it is.
    pub fn import_subgraph(&self, topics: &[String], hops: usize, out: &Path) -> Result<()> {
        super::refuse_existing(out)?;
        let triples = self.subgraph(&self.link_all(topics)?, hops)?;
        graph_tables::write(&graph_tables::layout(&triples, ""), out, Overwrite::Refuse)
    }

    fn link_all(&self, topics: &[String]) -> Result<Vec<String>> {
        topics.iter().map(|t| self.link(t)).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Triple {
    pub head: String,
    pub relation: String,
    pub tail: String,
}

/// One triple per line: `head|relation|tail`, or the three tab-separated.
fn read_triples(path: &Path) -> Result<Vec<Triple>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut triples = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parts: Vec<&str> = if line.contains('\t') {
            line.split('\t').collect()
        } else {
            line.split('|').collect()
        };
        let [head, relation, tail] = parts[..] else {
            return Err(graph_file_error(
                path,
                format!(
                    "line {} has {} fields; write each triple as head|relation|tail (or tab-separated)",
                    i + 1,
                    parts.len()
                ),
            ));
        };
        let field = |s: &str| s.trim().to_string();
        triples.push(Triple {
            head: field(head),
            relation: field(relation),
            tail: field(tail),
        });
    }
    if triples.is_empty() {
        return Err(graph_file_error(path, "holds no triples".into()));
    }
    Ok(triples)
}

fn graph_file_error(path: &Path, detail: String) -> Error {
    Error::GraphFile {
        path: path.to_path_buf(),
        detail,
    }
}

fn distinct_relations(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare("SELECT DISTINCT relation FROM triples")?
        .query_map([], |r| r.get(0))?
        .collect()
}

fn store_error(path: &Path, error: rusqlite::Error) -> Error {
    Error::DatabaseOpen {
        path: path.to_path_buf(),
        detail: error.to_string(),
    }
}

/// The triples, indexed by head and tail, and every node's name with its
/// lowercase form (folded here, as SQLite's lower() folds ASCII only).
fn write_store(triples: &[Triple], path: &Path) -> Result<()> {
    sqlite_file::write_new(path, Overwrite::Replace, |conn| {
        conn.execute_batch(
            "CREATE TABLE triples (head TEXT, relation TEXT, tail TEXT);
             CREATE TABLE names (name TEXT PRIMARY KEY, folded TEXT) WITHOUT ROWID;",
        )?;
        let mut insert = conn.prepare("INSERT INTO triples VALUES (?1, ?2, ?3)")?;
        let mut name = conn.prepare("INSERT OR IGNORE INTO names VALUES (?1, ?2)")?;
        for t in triples {
            insert.execute(params![t.head, t.relation, t.tail])?;
            for node in [&t.head, &t.tail] {
                name.execute(params![node, node.to_lowercase()])?;
            }
        }
        conn.execute_batch(
            "CREATE INDEX triples_head ON triples(head); CREATE INDEX triples_tail ON triples(tail);
             CREATE INDEX names_folded ON names(folded);",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILMS: &str = "\
Heat|directed_by|Michael Mann
Heat|starred_actors|Al Pacino
Heat|starred_actors|Robert De Niro
Collateral|directed_by|Michael Mann
Collateral|starred_actors|Tom Cruise
Top Gun|starred_actors|Tom Cruise
Top Gun|release_year|1986
Ronin|starred_actors|Robert De Niro
";

    fn graph(dir: &tempfile::TempDir, text: &str) -> Result<Graph> {
        let file = dir.path().join("films.txt");
        std::fs::write(&file, text).unwrap();
        Graph::open_in(&file, &dir.path().join("cache"))
    }

    /// The subgraph around `topic` as `head>tail` lines.
    fn edges(graph: &Graph, topic: &str, hops: usize) -> Vec<String> {
        let triples = graph.subgraph(&[topic.into()], hops).unwrap();
        triples
            .iter()
            .map(|t| format!("{}>{}", t.head, t.tail))
            .collect()
    }

    #[test]
    fn a_graph_file_without_triples_is_named_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let refusal = |text| graph(&dir, text).err().expect("refused").to_string();
        let empty = refusal("\n");
        assert!(empty.starts_with("graph file "), "{empty}");
        assert!(empty.ends_with("holds no triples"), "{empty}");
        let two_fields = refusal("Heat|Michael Mann\n");
        assert!(two_fields.starts_with("graph file "), "{two_fields}");
        assert!(two_fields.contains("line 1 has 2 fields"), "{two_fields}");
    }

    #[test]
    fn topics_link_exactly_then_ignoring_case_then_by_trigrams() {
        let dir = tempfile::tempdir().unwrap();
        let graph = graph(&dir, FILMS).unwrap();
        assert_eq!(graph.link("Heat").unwrap(), "Heat");
        assert_eq!(graph.link("michael mann").unwrap(), "Michael Mann");
        assert_eq!(graph.link("Robert DeNiro").unwrap(), "Robert De Niro");
    }

    #[test]
    fn a_question_names_its_topics_in_any_case() {
        let dir = tempfile::tempdir().unwrap();
        let graph = graph(&dir, FILMS).unwrap();
        assert_eq!(
            graph
                .topics_in("who acted in films directed by michael mann?")
                .unwrap(),
            ["Michael Mann"]
        );
        assert_eq!(
            graph.topics_in("Did Al Pacino act in Top Gun").unwrap(),
            ["Al Pacino", "Top Gun"]
        );
        let error = graph
            .topics_in("who won the race?")
            .unwrap_err()
            .to_string();
        assert!(error.contains("--topic"), "{error}");
    }

    #[test]
    fn the_subgraph_holds_what_lies_within_the_hops() {
        let dir = tempfile::tempdir().unwrap();
        let graph = graph(&dir, FILMS).unwrap();
        let heads = |hops| edges(&graph, "Michael Mann", hops);
        assert_eq!(heads(1), ["Collateral>Michael Mann", "Heat>Michael Mann"]);
        let two = heads(2);
        assert!(two.contains(&"Heat>Al Pacino".to_string()), "{two:?}");
        assert!(!two.iter().any(|t| t.starts_with("Top Gun")), "{two:?}");
        let three = heads(3);
        assert!(
            three.contains(&"Top Gun>Tom Cruise".to_string()),
            "{three:?}"
        );
        assert!(!three.contains(&"Top Gun>1986".to_string()), "{three:?}");
    }

    #[test]
    fn the_walk_keeps_types_but_never_passes_through_one() {
        let dir = tempfile::tempdir().unwrap();
        let typed = format!("{FILMS}Heat|type|film\nRonin|type|film\nAl Pacino|type|person\n");
        let graph = graph(&dir, &typed).unwrap();
        let edges = |hops| edges(&graph, "Al Pacino", hops);
        // Heat, reached last, is typed; Ronin, a film too, is not reached.
        assert_eq!(
            edges(1),
            ["Al Pacino>person", "Heat>Al Pacino", "Heat>film"]
        );
        let two = edges(2);
        assert!(two.contains(&"Heat>Michael Mann".to_string()), "{two:?}");
        assert!(!two.iter().any(|t| t.starts_with("Ronin")), "{two:?}");
    }

    #[test]
    fn a_two_hop_question_is_a_join_of_relation_tables() {
        let dir = tempfile::tempdir().unwrap();
        let graph = graph(&dir, FILMS).unwrap();
        let path = graph
            .subgraph_database(&["michael mann".into()], 2, "")
            .unwrap();
        let conn = Connection::open(&path).unwrap();
        let mut actors: Vec<String> = conn
            .prepare(
                "SELECT s.starred_actors FROM directed_by d JOIN starred_actors s \
                 ON s.entity = d.entity WHERE d.directed_by = 'Michael Mann'",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        actors.sort();
        assert_eq!(actors, ["Al Pacino", "Robert De Niro", "Tom Cruise"]);
    }

    #[test]
    fn a_line_that_is_not_a_triple_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let error = graph(&dir, "a|b|c\na|b\n").err().unwrap().to_string();
        assert!(error.contains("line 2 has 2 fields"), "{error}");
    }
}
