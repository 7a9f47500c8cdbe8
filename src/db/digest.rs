//! A compact fingerprint of a whole query result: one 64-bit canonical hash
//! per cell. Comparing results through digests keeps memory at 8 bytes a cell
//! whatever the values hold, so huge results can be compared safely.

use super::value::Value;
use rusqlite::types::ValueRef;
use xxhash_rust::xxh3::xxh3_128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultDigest {
    width: usize,
    cells: Vec<u64>,
}

impl ResultDigest {
    pub fn new(width: usize) -> Self {
        ResultDigest {
            width,
            cells: Vec::new(),
        }
    }

    /// Builds a digest from owned rows (handy in tests and for cached results).
    pub fn from_rows(width: usize, rows: &[Vec<Value>]) -> Self {
        let mut digest = ResultDigest::new(width);
        for row in rows {
            digest.push_row(row.iter().map(Value::as_value_ref));
        }
        digest
    }

    pub fn push_row<'a>(&mut self, cells: impl Iterator<Item = ValueRef<'a>>) {
        let before = self.cells.len();
        self.cells.extend(cells.map(Value::canonical_hash));
        debug_assert_eq!(self.cells.len() - before, self.width);
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn row_count(&self) -> usize {
        self.cells.len().checked_div(self.width).unwrap_or(0)
    }

    pub fn rows(&self) -> impl Iterator<Item = &[u64]> {
        self.cells.chunks(self.width.max(1))
    }

    /// One hash per row that keeps column order (and the row's width).
    pub fn row_hash(row: &[u64]) -> u128 {
        let mut bytes = Vec::with_capacity(row.len() * 8 + 8);
        bytes.extend_from_slice(&(row.len() as u64).to_le_bytes());
        for cell in row {
            bytes.extend_from_slice(&cell.to_le_bytes());
        }
        xxh3_128(&bytes)
    }

    /// One key for the result as a set of rows (BIRD's rule): two results
    /// share it exactly when `bird_equal` holds for them.
    pub fn set_key(&self) -> u128 {
        let mut rows: Vec<u128> = self.rows().map(Self::row_hash).collect();
        rows.sort_unstable();
        rows.dedup();
        let mut bytes = Vec::with_capacity(rows.len() * 16);
        for row in rows {
            bytes.extend_from_slice(&row.to_le_bytes());
        }
        xxh3_128(&bytes)
    }

    /// Whether any cell is not NULL (an "empty" gold result has none).
    pub fn has_non_null(&self) -> bool {
        let null = Value::canonical_hash(ValueRef::Null);
        self.cells.iter().any(|&c| c != null)
    }
}
