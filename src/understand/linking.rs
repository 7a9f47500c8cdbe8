//! Schema linking by locality-sensitive hashing: a MinHash LSH index over
//! column names and distinct stored text values finds the columns and the
//! exact stored spelling of the values a question mentions. The index is
//! built once per database file and cached under the iesr cache folder,
//! keyed by a hash of the file's bytes (never beside the user's file).

use super::text::{is_stopword, jaccard, trigrams, words};
use crate::db::open::{open_read_only, Deadline};
use crate::db::schema::{quote_identifier, Schema};
use crate::db::PlainNames;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

const BANDS: usize = 8;
const ROWS_PER_BAND: usize = 4;
const PERMUTATIONS: usize = BANDS * ROWS_PER_BAND;
/// Distinct values indexed per column; enough for names and categories.
const VALUES_PER_COLUMN: usize = 2_000;
const MAX_VALUE_CHARS: usize = 60;
/// Bumped when the cached file's shape changes.
const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub table: String,
    pub column: String,
    /// A stored value, or None for the column's own name.
    pub value: Option<String>,
}

/// A question phrase that matched an indexed entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkMatch {
    pub phrase: String,
    pub table: String,
    pub column: String,
    pub value: Option<String>,
    /// Trigram Jaccard similarity of phrase and value (or column name).
    pub similarity: f64,
}

#[derive(Serialize, Deserialize)]
struct CachedIndex {
    format: u32,
    entries: Vec<Entry>,
}

pub struct ValueIndex {
    entries: Vec<Entry>,
    buckets: HashMap<(usize, u64), Vec<u32>>,
}

impl ValueIndex {
    /// The index of `db`, from the cache when it was built before.
    /// `schema` names the database's tables and columns as the engine
    /// shows them: with `plain_names`, plain words for names that must be
    /// quoted, which the index keeps (and caches apart).
    pub fn for_database(
        db: &Path,
        schema: &Schema,
        plain_names: Option<&PlainNames>,
        cache_dir: &Path,
    ) -> Result<Self> {
        let key = file_hash(db)?;
        let plain = if plain_names.is_some() { "-plain" } else { "" };
        let cached = cache_dir.join(format!("{key:032x}{plain}.json"));
        if let Some(entries) = read_cache(&cached) {
            return Ok(Self::from_entries(entries));
        }
        let entries = collect_entries(db, schema, plain_names)?;
        write_cache(&cached, &entries);
        Ok(Self::from_entries(entries))
    }

    pub fn from_entries(entries: Vec<Entry>) -> Self {
        let mut buckets: HashMap<(usize, u64), Vec<u32>> = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let text = entry.value.as_deref().unwrap_or(&entry.column);
            for key in band_keys(&signature(&trigrams(text))) {
                buckets.entry(key).or_default().push(i as u32);
            }
        }
        ValueIndex { entries, buckets }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The stored values that are `text` apart from case, each with the
    /// column holding it: the spelling as written first.
    pub fn holders_of(&self, text: &str) -> Vec<&Entry> {
        let folded = text.to_lowercase();
        let mut found: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| {
                e.value
                    .as_deref()
                    .is_some_and(|v| v.to_lowercase() == folded)
            })
            .collect();
        found.sort_by_key(|e| e.value.as_deref() != Some(text));
        found
    }

    /// Entries whose text is similar to a phrase of `text` (word spans of
    /// one to six words, stop words alone skipped), best first, at most
    /// one match per column and value.
    pub fn lookup(&self, text: &str, min_similarity: f64) -> Vec<LinkMatch> {
        let mut best: HashMap<(String, String, Option<String>), LinkMatch> = HashMap::new();
        for phrase in phrases(text) {
            let shingles = trigrams(&phrase);
            let mut seen = HashSet::new();
            for key in band_keys(&signature(&shingles)) {
                for &i in self.buckets.get(&key).into_iter().flatten() {
                    if !seen.insert(i) {
                        continue;
                    }
                    let entry = &self.entries[i as usize];
                    let stored = entry.value.as_deref().unwrap_or(&entry.column);
                    let similarity = jaccard(&shingles, &trigrams(stored));
                    if similarity < min_similarity {
                        continue;
                    }
                    let id = (
                        entry.table.clone(),
                        entry.column.clone(),
                        entry.value.clone(),
                    );
                    let better = best.get(&id).is_none_or(|m| similarity > m.similarity);
                    if better {
                        best.insert(
                            id,
                            LinkMatch {
                                phrase: phrase.clone(),
                                table: entry.table.clone(),
                                column: entry.column.clone(),
                                value: entry.value.clone(),
                                similarity,
                            },
                        );
                    }
                }
            }
        }
        let mut matches: Vec<LinkMatch> = best.into_values().collect();
        matches.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then_with(|| (&a.table, &a.column, &a.value).cmp(&(&b.table, &b.column, &b.value)))
        });
        matches
    }
}

/// Words of the longest phrase looked up: a name or a title of up to six
/// words is matched whole, not only by its parts.
const MAX_PHRASE_WORDS: usize = 6;

/// Word spans of one to six words that are not only stop words.
fn phrases(text: &str) -> Vec<String> {
    let words = words(text);
    let mut out = Vec::new();
    for len in 1..=MAX_PHRASE_WORDS {
        for span in words.windows(len) {
            if span.iter().all(|w| is_stopword(w) || w.len() < 2) {
                continue;
            }
            out.push(span.join(" "));
        }
    }
    // Quoted phrases keep their inner punctuation.
    for (i, part) in text.split(['"', '\'']).enumerate() {
        if i % 2 == 1 && !part.trim().is_empty() && part.len() <= MAX_VALUE_CHARS {
            out.push(part.trim().to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

fn signature(shingles: &HashSet<String>) -> [u64; PERMUTATIONS] {
    let mut signature = [u64::MAX; PERMUTATIONS];
    for shingle in shingles {
        let h = xxh3_64(shingle.as_bytes());
        for (i, slot) in signature.iter_mut().enumerate() {
            // One hash, many permutations: a_i * h + b_i with odd a_i.
            let (a, b) = permutation(i);
            let v = a.wrapping_mul(h).wrapping_add(b);
            *slot = (*slot).min(v);
        }
    }
    signature
}

fn permutation(i: usize) -> (u64, u64) {
    let mix = |x: u64| {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (mix(2 * i as u64) | 1, mix(2 * i as u64 + 1))
}

fn band_keys(signature: &[u64; PERMUTATIONS]) -> impl Iterator<Item = (usize, u64)> + '_ {
    signature
        .chunks(ROWS_PER_BAND)
        .enumerate()
        .map(|(band, rows)| {
            let bytes: Vec<u8> = rows.iter().flat_map(|r| r.to_le_bytes()).collect();
            (band, xxh3_64(&bytes))
        })
}

fn collect_entries(
    db: &Path,
    schema: &Schema,
    plain_names: Option<&PlainNames>,
) -> Result<Vec<Entry>> {
    let mut conn = open_read_only(db)?;
    let failure = |e: rusqlite::Error| Error::DatabaseOpen {
        path: db.to_path_buf(),
        detail: e.to_string(),
    };
    let deadline = Deadline::install(&mut conn).map_err(failure)?;
    let mut entries = Vec::new();
    for table in &schema.tables {
        for column in &table.columns {
            entries.push(Entry {
                table: table.name.clone(),
                column: column.name.clone(),
                value: None,
            });
            let sql = format!(
                "SELECT DISTINCT {c} FROM {t} WHERE typeof({c}) = 'text' AND length({c}) BETWEEN 1 AND {MAX_VALUE_CHARS} LIMIT {VALUES_PER_COLUMN}",
                c = quote_identifier(&column.name),
                t = quote_identifier(&table.name),
            );
            let sql = match plain_names {
                Some(names) => names.to_real(&sql).0,
                None => sql,
            };
            deadline.arm(Duration::from_secs(5));
            let values: rusqlite::Result<Vec<String>> = conn
                .prepare(&sql)
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect());
            // A column that times out is linked by name only.
            for value in values.unwrap_or_default() {
                entries.push(Entry {
                    table: table.name.clone(),
                    column: column.name.clone(),
                    value: Some(value),
                });
            }
        }
    }
    deadline.disarm();
    Ok(entries)
}

fn file_hash(path: &Path) -> Result<u128> {
    let mut hasher = Xxh3::new();
    crate::files::for_each_chunk(path, |bytes| hasher.update(bytes))?;
    Ok(hasher.digest128())
}

fn read_cache(path: &Path) -> Option<Vec<Entry>> {
    let text = std::fs::read_to_string(path).ok()?;
    let cached: CachedIndex = serde_json::from_str(&text).ok()?;
    (cached.format == FORMAT).then_some(cached.entries)
}

/// Best effort: a cache that cannot be written is rebuilt next time.
fn write_cache(path: &Path, entries: &[Entry]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let cached = CachedIndex {
        format: FORMAT,
        entries: entries.to_vec(),
    };
    let tmp: PathBuf = path.with_extension("tmp");
    if let Ok(text) = serde_json::to_string(&cached) {
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> ValueIndex {
        let entry = |t: &str, c: &str, v: Option<&str>| Entry {
            table: t.into(),
            column: c.into(),
            value: v.map(String::from),
        };
        ValueIndex::from_entries(vec![
            entry("singer", "Country", None),
            entry("singer", "Country", Some("Netherlands")),
            entry("singer", "Country", Some("United States")),
            entry("singer", "Name", Some("Joe Sharp")),
            entry("stadium", "Location", Some("Raith Rovers")),
        ])
    }

    #[test]
    fn holders_of_a_text_are_its_stored_values_apart_from_case() {
        let index = index();
        let holders = |text: &str| -> Vec<(String, String, String)> {
            index
                .holders_of(text)
                .into_iter()
                .map(|e| (e.table.clone(), e.column.clone(), e.value.clone().unwrap()))
                .collect()
        };
        let joe = (
            "singer".to_string(),
            "Name".to_string(),
            "Joe Sharp".to_string(),
        );
        assert_eq!(holders("joe sharp"), vec![joe.clone()]);
        assert_eq!(holders("Joe Sharp"), vec![joe]);
        // Column names are not values, and a part of a value is not it.
        assert!(holders("Country").is_empty());
        assert!(holders("Joe").is_empty());
        // The spelling as written comes first, wherever it is stored.
        let spelt = |value: &str| Entry {
            table: "band".into(),
            column: value.to_lowercase(),
            value: Some(value.into()),
        };
        let index = ValueIndex::from_entries(vec![spelt("QUEEN"), spelt("Queen")]);
        let values: Vec<_> = index
            .holders_of("Queen")
            .into_iter()
            .filter_map(|e| e.value.as_deref())
            .collect();
        assert_eq!(values, ["Queen", "QUEEN"]);
    }

    #[test]
    fn finds_stored_spellings_of_mentioned_values() {
        let matches = index().lookup("Which singers come from the netherland?", 0.5);
        let first = &matches[0];
        assert_eq!(first.value.as_deref(), Some("Netherlands"));
        assert_eq!(
            (first.table.as_str(), first.column.as_str()),
            ("singer", "Country")
        );
        let matches = index().lookup("songs by joe sharp", 0.5);
        assert_eq!(matches[0].value.as_deref(), Some("Joe Sharp"));
        assert_eq!(matches[0].similarity, 1.0);
    }

    #[test]
    fn finds_columns_by_name_and_ignores_unrelated_text() {
        let matches = index().lookup("the country of each singer", 0.6);
        assert!(matches
            .iter()
            .any(|m| m.column == "Country" && m.value.is_none()));
        assert!(index().lookup("how many are there", 0.5).is_empty());
    }

    #[test]
    fn the_index_is_cached_by_file_hash_outside_the_database_folder() {
        let db = crate::understand::demo::database();
        let schema = crate::understand::demo::schema();
        let cache = tempfile::tempdir().unwrap();
        let built = ValueIndex::for_database(&db, &schema, None, cache.path()).unwrap();
        let files: Vec<_> = std::fs::read_dir(cache.path()).unwrap().collect();
        assert_eq!(files.len(), 1);
        let again = ValueIndex::for_database(&db, &schema, None, cache.path()).unwrap();
        assert_eq!(built.entries, again.entries);
        assert!(built
            .lookup("singers from France", 0.6)
            .iter()
            .any(|m| m.value.as_deref() == Some("France")));
    }
}
