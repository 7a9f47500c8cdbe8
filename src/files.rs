//! Reading large files (models, databases) in fixed-size chunks, for
//! hashing without holding them in memory.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// Calls `consume` with successive chunks of the file at `path`.
pub fn for_each_chunk(path: &Path, mut consume: impl FnMut(&[u8])) -> Result<()> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(());
        }
        consume(&buffer[..n]);
    }
}
