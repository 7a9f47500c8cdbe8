//! Safetensors checkpoints (Qwen2, Qwen3, Llama) in the Hugging Face layout,
//! from a local directory or downloaded from the hub with hf-hub, run by the
//! same transformer as GGUF files, in f32 or bf16.

use super::chat::ChatTemplate;
use super::decoding::TextCodec;
use super::local::LocalModel;
use super::matrix::Matrix;
use super::transformer::{
    Attention, Config, Embedding, FeedForward, Layer, RopeStyle, Transformer,
};
use crate::error::{first_line, Error, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

/// The files of one checkpoint.
pub struct CheckpointFiles {
    pub config: PathBuf,
    pub tokenizer: PathBuf,
    pub tokenizer_config: Option<PathBuf>,
    pub weights: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct HfConfig {
    model_type: String,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    vocab_size: usize,
    rms_norm_eps: f64,
    rope_theta: Option<f32>,
    max_position_embeddings: usize,
    #[serde(default)]
    tie_word_embeddings: bool,
    #[serde(default)]
    eos_token_id: Option<Value>,
}

impl CheckpointFiles {
    /// The checkpoint's tokenizer, read from tokenizer.json.
    pub fn tokenizer(&self) -> Result<Tokenizer> {
        Tokenizer::from_file(&self.tokenizer).map_err(|e| Error::model_corrupt(&self.tokenizer, e))
    }

    /// The files of a checkpoint directory (`model.safetensors`, or the
    /// shards listed in `model.safetensors.index.json`).
    pub fn in_dir(dir: &Path) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::ModelMissing(dir.to_path_buf()));
        }
        let index = dir.join("model.safetensors.index.json");
        let weights = if index.is_file() {
            shard_names(&index)?
                .into_iter()
                .map(|f| dir.join(f))
                .collect()
        } else {
            vec![dir.join("model.safetensors")]
        };
        let tokenizer_config = Some(dir.join("tokenizer_config.json")).filter(|p| p.is_file());
        let files = CheckpointFiles {
            config: dir.join("config.json"),
            tokenizer: dir.join("tokenizer.json"),
            tokenizer_config,
            weights,
        };
        for required in [&files.config, &files.tokenizer]
            .into_iter()
            .chain(&files.weights)
        {
            if !required.is_file() {
                return Err(Error::ModelMissing(required.clone()));
            }
        }
        Ok(files)
    }

    /// Downloads (or finds in the hf-hub cache) a hub repository's files.
    pub fn from_hub(repo: &str, revision: &str) -> Result<Self> {
        let failed = |e: hf_hub::api::sync::ApiError| {
            Error::ModelPull(format!("hub repository {repo}: {}", first_line(e)))
        };
        let api = hf_hub::api::sync::Api::new().map_err(failed)?;
        let repo_api = api.repo(hf_hub::Repo::with_revision(
            repo.to_string(),
            hf_hub::RepoType::Model,
            revision.to_string(),
        ));
        let weights = match repo_api.get("model.safetensors.index.json") {
            Ok(index) => shard_names(&index)?
                .into_iter()
                .map(|f| repo_api.get(&f).map_err(failed))
                .collect::<Result<_>>()?,
            Err(_) => vec![repo_api.get("model.safetensors").map_err(failed)?],
        };
        Ok(CheckpointFiles {
            config: repo_api.get("config.json").map_err(failed)?,
            tokenizer: repo_api.get("tokenizer.json").map_err(failed)?,
            tokenizer_config: repo_api.get("tokenizer_config.json").ok(),
            weights,
        })
    }
}

fn shard_names(index: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(index).map_err(|e| Error::io(index, e))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| Error::model_corrupt(index, e))?;
    let map = json["weight_map"]
        .as_object()
        .ok_or_else(|| Error::model_corrupt(index, "no weight_map"))?;
    let mut names: Vec<String> = map
        .values()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Loads a checkpoint onto `device`, computing in `dtype` (f32 or bf16).
pub fn load(files: &CheckpointFiles, device: &Device, dtype: DType) -> Result<LocalModel> {
    let config_text =
        std::fs::read_to_string(&files.config).map_err(|e| Error::io(&files.config, e))?;
    let hf: HfConfig =
        serde_json::from_str(&config_text).map_err(|e| Error::model_corrupt(&files.config, e))?;
    if !matches!(hf.model_type.as_str(), "qwen2" | "qwen3" | "llama") {
        return Err(Error::UnknownArchitecture {
            path: files.config.clone(),
            architecture: hf.model_type,
        });
    }
    let config = Config {
        n_layers: hf.num_hidden_layers,
        n_heads: hf.num_attention_heads,
        n_kv_heads: hf.num_key_value_heads.unwrap_or(hf.num_attention_heads),
        head_dim: hf
            .head_dim
            .unwrap_or(hf.hidden_size / hf.num_attention_heads),
        hidden: hf.hidden_size,
        vocab: hf.vocab_size,
        rms_eps: hf.rms_norm_eps,
        rope_base: hf.rope_theta.unwrap_or(10_000.0),
        // Hugging Face checkpoints rotate halves for all three families.
        rope_style: RopeStyle::Halves,
        context_length: hf.max_position_embeddings,
        dtype,
    };
    let weights_path = &files.weights[0];
    // SAFETY: the files are memory-mapped read-only and must not change
    // while loaded, as with every mmap-based loader.
    let vb = unsafe { VarBuilder::from_mmaped_safetensors(&files.weights, dtype, device) }
        .map_err(|e| Error::model_corrupt(weights_path, e))?;
    let transformer = build(&config, hf.tie_word_embeddings, vb, device)
        .map_err(|e| Error::model_corrupt(weights_path, e))?;

    let tokenizer = files.tokenizer()?;
    let (template, bos, eos) = match &files.tokenizer_config {
        Some(path) => read_tokenizer_config(path)?,
        None => (None, String::new(), String::new()),
    };
    let template = match template {
        Some(source) => Some(
            ChatTemplate::new(&source, &bos, &eos)
                .map_err(|e| Error::model_corrupt(&files.config, e))?,
        ),
        None => None,
    };
    let mut stop_tokens: Vec<u32> = match &hf.eos_token_id {
        Some(Value::Number(n)) => n.as_u64().map(|id| vec![id as u32]).unwrap_or_default(),
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(|v| v.as_u64().map(|id| id as u32))
            .collect(),
        _ => Vec::new(),
    };
    stop_tokens.extend(tokenizer.token_to_id(&eos));
    let name = files
        .config
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "checkpoint".into());
    let codec = TextCodec::new(
        name,
        tokenizer,
        template,
        stop_tokens,
        transformer.config.context_length,
    );
    Ok(LocalModel::new(codec, transformer))
}

/// The chat template and the BOS/EOS token texts from tokenizer_config.json.
fn read_tokenizer_config(path: &Path) -> Result<(Option<String>, String, String)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| Error::model_corrupt(path, e))?;
    let token = |key: &str| match &json[key] {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    };
    let template = match &json["chat_template"] {
        Value::String(s) => Some(s.clone()),
        // A list of named templates: take the default one.
        Value::Array(list) => list
            .iter()
            .find(|t| t["name"] == "default")
            .and_then(|t| t["template"].as_str())
            .map(String::from),
        _ => None,
    };
    Ok((template, token("bos_token"), token("eos_token")))
}

fn build(
    config: &Config,
    tied: bool,
    vb: VarBuilder,
    device: &Device,
) -> candle_core::Result<Transformer> {
    let (h, hd) = (config.hidden, config.head_dim);
    let linear = |name: &str, out: usize, inp: usize| -> candle_core::Result<Matrix> {
        Ok(Matrix::Dense(vb.get((out, inp), name)?))
    };
    let optional = |name: &str, size: usize| -> candle_core::Result<Option<Tensor>> {
        if vb.contains_tensor(name) {
            vb.get(size, name).map(Some)
        } else {
            Ok(None)
        }
    };
    let embed = vb.get((config.vocab, h), "model.embed_tokens.weight")?;
    let mut layers = Vec::with_capacity(config.n_layers);
    for i in 0..config.n_layers {
        let p = |part: &str| format!("model.layers.{i}.{part}");
        let (q_out, kv_out) = (config.n_heads * hd, config.n_kv_heads * hd);
        let intermediate = vb.get_unchecked(&p("mlp.up_proj.weight"))?.dim(0)?;
        layers.push(Layer {
            attn_norm: vb.get(h, &p("input_layernorm.weight"))?,
            attention: Attention {
                q: linear(&p("self_attn.q_proj.weight"), q_out, h)?,
                k: linear(&p("self_attn.k_proj.weight"), kv_out, h)?,
                v: linear(&p("self_attn.v_proj.weight"), kv_out, h)?,
                o: linear(&p("self_attn.o_proj.weight"), h, q_out)?,
                q_bias: optional(&p("self_attn.q_proj.bias"), q_out)?,
                k_bias: optional(&p("self_attn.k_proj.bias"), kv_out)?,
                v_bias: optional(&p("self_attn.v_proj.bias"), kv_out)?,
                q_norm: optional(&p("self_attn.q_norm.weight"), hd)?,
                k_norm: optional(&p("self_attn.k_norm.weight"), hd)?,
            },
            ffn_norm: vb.get(h, &p("post_attention_layernorm.weight"))?,
            ffn: FeedForward {
                gate: linear(&p("mlp.gate_proj.weight"), intermediate, h)?,
                up: linear(&p("mlp.up_proj.weight"), intermediate, h)?,
                down: linear(&p("mlp.down_proj.weight"), h, intermediate)?,
            },
        });
    }
    let final_norm = vb.get(h, "model.norm.weight")?;
    let output = if tied || !vb.contains_tensor("lm_head.weight") {
        Matrix::Dense(embed.clone())
    } else {
        linear("lm_head.weight", config.vocab, h)?
    };
    Transformer::new(
        config.clone(),
        Embedding::Dense(embed),
        layers,
        final_norm,
        output,
        device,
    )
}
