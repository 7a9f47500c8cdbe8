//! The GGUF backend: weights read with candle's GGUF reader, run by our own
//! transformer, with the tokenizer and chat template taken from the file.

use super::chat::ChatTemplate;
use super::decoding::TextCodec;
use super::local::LocalModel;
use super::matrix::Matrix;
use super::transformer::{
    Attention, Config, Embedding, FeedForward, Layer, RopeStyle, Transformer,
};
use crate::error::{Error, Result};
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Tensor};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::Tokenizer;

/// Reads a metadata value or says which key is missing.
struct Metadata<'a> {
    content: &'a Content,
    path: &'a Path,
}

impl Metadata<'_> {
    fn get(&self, key: &str) -> Result<&Value> {
        self.content.metadata.get(key).ok_or_else(|| {
            Error::model_corrupt(self.path, format!("metadata key `{key}` is missing"))
        })
    }

    fn usize(&self, key: &str) -> Result<usize> {
        self.get(key)?
            .to_u64()
            .map(|v| v as usize)
            .map_err(|e| Error::model_corrupt(self.path, format!("{key}: {e}")))
    }

    fn f32_or(&self, key: &str, default: f32) -> f32 {
        self.get(key)
            .and_then(|v| v.to_f32().map_err(|e| Error::model_corrupt(self.path, e)))
            .unwrap_or(default)
    }

    fn string(&self, key: &str) -> Option<String> {
        self.content
            .metadata
            .get(key)
            .and_then(|v| v.to_string().ok())
            .cloned()
    }
}

/// Loads a GGUF file for the CPU.
pub fn load(path: &Path) -> Result<LocalModel> {
    let device = Device::Cpu;
    let mut reader = BufReader::new(open_model_file(path)?);
    let content = Content::read(&mut reader).map_err(|e| Error::model_corrupt(path, e))?;
    let meta = Metadata {
        content: &content,
        path,
    };
    let architecture = meta.string("general.architecture").ok_or_else(|| {
        Error::model_corrupt(path, "metadata key `general.architecture` is missing")
    })?;
    let rope_style = match architecture.as_str() {
        "qwen2" | "qwen3" => RopeStyle::Halves,
        "llama" => RopeStyle::Interleaved,
        _ => {
            return Err(Error::UnknownArchitecture {
                path: path.to_path_buf(),
                architecture,
            })
        }
    };
    let a = architecture.as_str();
    let n_heads = meta.usize(&format!("{a}.attention.head_count"))?;
    let hidden = meta.usize(&format!("{a}.embedding_length"))?;
    let head_dim = meta
        .usize(&format!("{a}.attention.key_length"))
        .unwrap_or(hidden / n_heads);
    let config = Config {
        n_layers: meta.usize(&format!("{a}.block_count"))?,
        n_heads,
        n_kv_heads: meta.usize(&format!("{a}.attention.head_count_kv"))?,
        head_dim,
        hidden,
        vocab: 0,
        rms_eps: meta.f32_or(&format!("{a}.attention.layer_norm_rms_epsilon"), 1e-6) as f64,
        rope_base: meta.f32_or(&format!("{a}.rope.freq_base"), 10_000.0),
        rope_style,
        context_length: meta.usize(&format!("{a}.context_length"))?,
        dtype: DType::F32,
    };

    let mut loader = TensorLoader {
        content: &content,
        reader: &mut reader,
        path,
        device: &device,
    };
    let transformer = loader.transformer(config)?;

    let codec = codec_from(&meta)?;
    Ok(LocalModel::new(codec, transformer))
}

/// Reads the text side of a GGUF file (tokenizer, chat template, end
/// tokens, name), not the weights: what a backend that loads the weights
/// itself needs.
pub fn load_codec(path: &Path) -> Result<TextCodec> {
    let mut reader = BufReader::new(open_model_file(path)?);
    let content = Content::read(&mut reader).map_err(|e| Error::model_corrupt(path, e))?;
    codec_from(&Metadata {
        content: &content,
        path,
    })
}

fn codec_from(meta: &Metadata) -> Result<TextCodec> {
    let (content, path) = (meta.content, meta.path);
    let tokenizer = tokenizer_from(content, path)?;
    let token_text = |key: &str| {
        meta.usize(key)
            .ok()
            .and_then(|id| tokenizer.id_to_token(id as u32))
            .unwrap_or_default()
    };
    let bos = token_text("tokenizer.ggml.bos_token_id");
    let eos = token_text("tokenizer.ggml.eos_token_id");
    let template = match meta.string("tokenizer.chat_template") {
        Some(source) => Some(
            ChatTemplate::new(&source, &bos, &eos).map_err(|e| Error::model_corrupt(path, e))?,
        ),
        None => None,
    };
    let stop_tokens: Vec<u32> = ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"]
        .iter()
        .filter_map(|k| meta.usize(k).ok().map(|id| id as u32))
        .collect();
    let name = meta.string("general.name").unwrap_or_else(|| {
        path.file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    });
    let architecture = meta.string("general.architecture").unwrap_or_default();
    let context_length = meta.usize(&format!("{architecture}.context_length"))?;
    Ok(TextCodec::new(
        name,
        tokenizer,
        template,
        stop_tokens,
        context_length,
    ))
}

/// Reads tensors by name, turning weights into the forms the forward pass
/// wants.
struct TensorLoader<'a, R> {
    content: &'a Content,
    reader: &'a mut R,
    path: &'a Path,
    device: &'a Device,
}

impl<R: std::io::Read + std::io::Seek> TensorLoader<'_, R> {
    fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    fn qtensor(&mut self, name: &str) -> Result<QTensor> {
        self.content
            .tensor(self.reader, name, self.device)
            .map_err(|e| Error::model_corrupt(self.path, format!("tensor {name}: {e}")))
    }

    /// A weight matrix for matrix products (see `Matrix::from_qtensor`).
    fn matrix(&mut self, name: &str) -> Result<Matrix> {
        let tensor = Arc::new(self.qtensor(name)?);
        self.pack(tensor, name)
    }

    fn pack(&self, tensor: Arc<QTensor>, name: &str) -> Result<Matrix> {
        Matrix::from_qtensor(tensor, self.device)
            .map_err(|e| Error::model_corrupt(self.path, format!("tensor {name}: {e}")))
    }

    fn vector(&mut self, name: &str) -> Result<Tensor> {
        let tensor = self.qtensor(name)?;
        tensor
            .dequantize(self.device)
            .map_err(|e| Error::model_corrupt(self.path, format!("tensor {name}: {e}")))
    }

    fn optional_vector(&mut self, name: &str) -> Result<Option<Tensor>> {
        if self.has(name) {
            self.vector(name).map(Some)
        } else {
            Ok(None)
        }
    }

    fn transformer(&mut self, mut config: Config) -> Result<Transformer> {
        // The table stays quantized; rows are dequantized as tokens are
        // looked up, which saves its f32 copy (545 MB for Qwen2.5-0.5B).
        let table = Arc::new(self.qtensor("token_embd.weight")?);
        config.vocab = table.shape().dims()[0];
        let embedding = Embedding::Quantized(Arc::clone(&table));
        let mut layers = Vec::with_capacity(config.n_layers);
        for i in 0..config.n_layers {
            let p = |part: &str| format!("blk.{i}.{part}");
            layers.push(Layer {
                attn_norm: self.vector(&p("attn_norm.weight"))?,
                attention: Attention {
                    q: self.matrix(&p("attn_q.weight"))?,
                    k: self.matrix(&p("attn_k.weight"))?,
                    v: self.matrix(&p("attn_v.weight"))?,
                    o: self.matrix(&p("attn_output.weight"))?,
                    q_bias: self.optional_vector(&p("attn_q.bias"))?,
                    k_bias: self.optional_vector(&p("attn_k.bias"))?,
                    v_bias: self.optional_vector(&p("attn_v.bias"))?,
                    q_norm: self.optional_vector(&p("attn_q_norm.weight"))?,
                    k_norm: self.optional_vector(&p("attn_k_norm.weight"))?,
                },
                ffn_norm: self.vector(&p("ffn_norm.weight"))?,
                ffn: FeedForward {
                    gate: self.matrix(&p("ffn_gate.weight"))?,
                    up: self.matrix(&p("ffn_up.weight"))?,
                    down: self.matrix(&p("ffn_down.weight"))?,
                },
            });
        }
        let final_norm = self.vector("output_norm.weight")?;
        // Small models tie the output projection to the embeddings.
        let output = if self.has("output.weight") {
            self.matrix("output.weight")?
        } else {
            self.pack(table, "token_embd.weight")?
        };
        Transformer::new(config, embedding, layers, final_norm, output, self.device)
            .map_err(|e| Error::model_corrupt(self.path, e))
    }
}

fn tokenizer_from(content: &Content, path: &Path) -> Result<Tokenizer> {
    use candle_core::quantized::tokenizer::TokenizerFromGguf;
    Tokenizer::from_gguf(content).map_err(|e| Error::model_corrupt(path, format!("tokenizer: {e}")))
}

/// Reads only the tokenizer of a GGUF file (its metadata), not the weights.
pub fn load_tokenizer(path: &Path) -> Result<Tokenizer> {
    let mut reader = BufReader::new(open_model_file(path)?);
    let content = Content::read(&mut reader).map_err(|e| Error::model_corrupt(path, e))?;
    tokenizer_from(&content, path)
}

fn open_model_file(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::ModelMissing(path.to_path_buf()),
        _ => Error::io(path, e),
    })
}

/// Resolves `--model`: a path to a GGUF file, or the name of a model card
/// whose file has been pulled.
pub fn resolve_model_path(spec: &str) -> Result<PathBuf> {
    let path = Path::new(spec);
    if spec.ends_with(".gguf") || path.is_file() {
        return Ok(path.to_path_buf());
    }
    let card = super::card::find_card(spec)?;
    let cached = card.cached_path();
    if cached.is_file() {
        Ok(cached)
    } else {
        Err(Error::ModelMissing(cached))
    }
}
