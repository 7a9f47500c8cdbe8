//! Sources other than a SQLite file, turned into one. Each table file (CSV,
//! TSV, JSON) becomes a table of a SQLite database that is built once in
//! the iesr cache folder, keyed by the files' contents, never beside them;
//! the engine then reads it as it reads any database.

pub mod cells;
pub mod graph;
mod graph_tables;
mod links;
mod names;
mod read;
mod sqlite_file;
mod store;
mod topics;

use crate::error::{Error, Result};
use crate::llm::card::iesr_home;
use names::NameSet;
use sqlite_file::Overwrite;
use std::path::{Path, PathBuf};

pub use read::{read_table, RawTable};
pub use store::identifier;
use store::StoredTable;

/// Bumped whenever the tables written for the same files would differ, so
/// that older cached databases are not reused.
const FORMAT: &str = "iesr-tables-4";

/// The cached SQLite database holding one table per file, built on first
/// use.
pub fn database_for_tables(files: &[PathBuf]) -> Result<PathBuf> {
    cached_database(content_key(FORMAT, files)?, || read_all(files))
}

/// The cached SQLite database holding one table given in memory (a
/// benchmark's inline table), named `name`.
pub fn database_for_table(name: &str, table: RawTable) -> Result<PathBuf> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for text in [FORMAT, name]
        .into_iter()
        .chain(table.header.iter().map(String::as_str))
    {
        hasher.update(text.as_bytes());
        hasher.update(&[0]);
    }
    for row in &table.rows {
        for cell in row {
            // An empty cell and an empty string must not hash alike.
            match cell {
                Some(text) => hasher.update(text.as_bytes()),
                None => hasher.update(&[1]),
            }
            hasher.update(&[0]);
        }
        hasher.update(&[2]);
    }
    let name = identifier(name, "table");
    cached_database(hasher.digest128(), || {
        Ok(vec![StoredTable::new(name, table)])
    })
}

/// `$IESR_HOME/tables/<key>.sqlite`, written from `tables` unless it is
/// already there.
fn cached_database(
    key: u128,
    tables: impl FnOnce() -> Result<Vec<StoredTable>>,
) -> Result<PathBuf> {
    let dir = iesr_home().join("tables");
    let path = dir.join(format!("{key:032x}.sqlite"));
    if path.is_file() {
        return Ok(path);
    }
    let tables = tables()?;
    std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, e))?;
    store::write_new(&tables, &path, Overwrite::Replace)?;
    Ok(path)
}

/// Writes the tables of `files` to a new SQLite file at `out`, for users
/// who want to keep them; an existing file is left as it is.
pub fn import_tables(files: &[PathBuf], out: &Path) -> Result<()> {
    refuse_existing(out)?;
    let tables = read_all(files)?;
    store::write_new(&tables, out, Overwrite::Refuse)
}

/// An import's destination must be new: a user's file is never replaced.
fn refuse_existing(out: &Path) -> Result<()> {
    if out.exists() {
        return Err(Error::InvalidArgument(format!(
            "{} already exists; name a new file with --out",
            out.display()
        )));
    }
    Ok(())
}

/// Every file read and named (a table is named after its file, made a
/// unique SQL identifier), with the keys that link the files.
fn read_all(files: &[PathBuf]) -> Result<Vec<StoredTable>> {
    if files.is_empty() {
        return Err(Error::InvalidArgument(
            "no table files given; pass --table FILE".into(),
        ));
    }
    let mut names = NameSet::default();
    let mut tables = files
        .iter()
        .map(|path| {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let name = names.take(identifier(stem, "table"));
            Ok(StoredTable::new(name, read_table(path)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let references = links::references(&tables);
    for (table, references) in tables.iter_mut().zip(references) {
        table.references = references;
    }
    Ok(tables)
}

/// A hash of the files' names and contents and of the format of what is
/// built from them.
fn content_key(format: &str, files: &[PathBuf]) -> Result<u128> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(format.as_bytes());
    for path in files {
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        hasher.update(name.as_bytes());
        hasher.update(&[0]);
        let mut length = 0u64;
        crate::files::for_each_chunk(path, |chunk| {
            length += chunk.len() as u64;
            hasher.update(chunk);
        })?;
        hasher.update(&length.to_le_bytes());
    }
    Ok(hasher.digest128())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_contents_and_names_not_folders() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for dir in [&a, &b] {
            std::fs::write(dir.path().join("t.csv"), "x\n1\n").unwrap();
        }
        std::fs::write(a.path().join("u.csv"), "x\n1\n").unwrap();
        std::fs::write(b.path().join("u.csv"), "x\n2\n").unwrap();
        let key = |dir: &tempfile::TempDir, name: &str| {
            content_key(FORMAT, &[dir.path().join(name)]).unwrap()
        };
        assert_eq!(key(&a, "t.csv"), key(&b, "t.csv"));
        assert_ne!(key(&a, "u.csv"), key(&b, "u.csv"));
        assert_ne!(key(&a, "t.csv"), key(&a, "u.csv"));
    }

    #[test]
    fn import_refuses_to_replace_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("t.csv");
        std::fs::write(&csv, "x\n1\n").unwrap();
        let out = dir.path().join("out.sqlite");
        std::fs::write(&out, "keep me").unwrap();
        let error = import_tables(&[csv], &out).unwrap_err().to_string();
        assert!(error.contains("already exists"), "{error}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
    }
}
