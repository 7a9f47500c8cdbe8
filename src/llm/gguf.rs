//! The GGUF backend: weights read with candle's GGUF reader, run by our own
//! transformer, with the tokenizer and chat template taken from the file.

use super::chat::ChatTemplate;
use super::kv::KvCache;
use super::prefix_cache::PrefixCache;
use super::sampler::Sampler;
use super::transformer::{
    row_logits, Attention, Config, Embedding, FeedForward, Layer, RopeStyle, Transformer,
};
use super::{Completion, FinishReason, Generation, LanguageModel, Prompt, Sampling, Usage};
use crate::error::{first_line, Error, Result};
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Tensor};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;
use tokenizers::Tokenizer;

/// Prompt tokens computed per forward pass during prefill: bounds the size
/// of the attention score matrix without costing throughput.
const PREFILL_CHUNK: usize = 512;

/// Memory kept for cached prompt prefixes.
const PREFIX_CACHE_BYTES: usize = 512 << 20;

pub struct GgufModel {
    name: String,
    transformer: Transformer,
    tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    /// Tokens that end a turn.
    stop_tokens: Vec<u32>,
    prefix_cache: Mutex<PrefixCache>,
}

/// Reads a metadata value or says which key is missing.
struct Metadata<'a> {
    content: &'a Content,
    path: &'a Path,
}

impl Metadata<'_> {
    fn get(&self, key: &str) -> Result<&Value> {
        self.content
            .metadata
            .get(key)
            .ok_or_else(|| corrupt(self.path, format!("metadata key `{key}` is missing")))
    }

    fn usize(&self, key: &str) -> Result<usize> {
        self.get(key)?
            .to_u64()
            .map(|v| v as usize)
            .map_err(|e| corrupt(self.path, format!("{key}: {e}")))
    }

    fn f32_or(&self, key: &str, default: f32) -> f32 {
        self.get(key)
            .and_then(|v| v.to_f32().map_err(|e| corrupt(self.path, e)))
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

fn corrupt(path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::ModelCorrupt {
        path: path.to_path_buf(),
        detail: first_line(detail),
    }
}

impl GgufModel {
    /// Loads a GGUF file for the CPU.
    pub fn load(path: &Path) -> Result<Self> {
        let device = Device::Cpu;
        let mut reader = BufReader::new(open_model_file(path)?);
        let content = Content::read(&mut reader).map_err(|e| corrupt(path, e))?;
        let meta = Metadata {
            content: &content,
            path,
        };
        let architecture = meta
            .string("general.architecture")
            .ok_or_else(|| corrupt(path, "metadata key `general.architecture` is missing"))?;
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
        };

        let mut loader = TensorLoader {
            content: &content,
            reader: &mut reader,
            path,
            device: &device,
        };
        let transformer = loader.transformer(config)?;

        let tokenizer = tokenizer_from(&content, path)?;
        let token_text = |key: &str| {
            meta.usize(key)
                .ok()
                .and_then(|id| tokenizer.id_to_token(id as u32))
                .unwrap_or_default()
        };
        let bos = token_text("tokenizer.ggml.bos_token_id");
        let eos = token_text("tokenizer.ggml.eos_token_id");
        let template = match meta.string("tokenizer.chat_template") {
            Some(source) => {
                Some(ChatTemplate::new(&source, &bos, &eos).map_err(|e| corrupt(path, e))?)
            }
            None => None,
        };
        let mut stop_tokens: Vec<u32> =
            ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"]
                .iter()
                .filter_map(|k| meta.usize(k).ok().map(|id| id as u32))
                .collect();
        // Chat models end a turn with these even when the file names another EOS.
        for marker in [
            "<|im_end|>",
            "<|endoftext|>",
            "<|eot_id|>",
            "<|end_of_text|>",
        ] {
            if let Some(id) = tokenizer.token_to_id(marker) {
                stop_tokens.push(id);
            }
        }
        stop_tokens.sort_unstable();
        stop_tokens.dedup();
        let name = meta.string("general.name").unwrap_or_else(|| {
            path.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        });
        Ok(GgufModel {
            name,
            transformer,
            tokenizer,
            template,
            stop_tokens,
            prefix_cache: Mutex::new(PrefixCache::new(PREFIX_CACHE_BYTES)),
        })
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn config(&self) -> &Config {
        &self.transformer.config
    }

    pub fn transformer(&self) -> &Transformer {
        &self.transformer
    }

    /// Forgets every cached prompt prefix.
    pub fn clear_prefix_cache(&self) {
        *self.prefix_cache.lock().expect("prefix cache lock") =
            PrefixCache::new(PREFIX_CACHE_BYTES);
    }

    /// The exact text the model sees for a prompt.
    pub fn render(&self, prompt: &Prompt) -> Result<String> {
        match prompt {
            Prompt::Raw(text) => Ok(text.clone()),
            Prompt::Chat(messages) => self
                .template
                .as_ref()
                .ok_or_else(|| {
                    Error::Inference(format!(
                        "{} has no chat template; use a raw prompt",
                        self.name
                    ))
                })?
                .render(messages)
                .map_err(Error::Inference),
        }
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| Error::Inference(format!("tokenizer: {e}")))
    }

    fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer
            .decode(ids, true)
            .map_err(|e| Error::Inference(format!("tokenizer: {e}")))
    }

    /// Fills a one-row cache with the prompt's states, reusing the longest
    /// cached prefix; returns the cache, the last position's logits and how
    /// many prompt tokens came from the prefix cache.
    pub fn prefill(
        &self,
        ids: &[u32],
        capacity: usize,
    ) -> candle_core::Result<(KvCache, Tensor, usize)> {
        let reusable = ids.len() - 1;
        let hit = self
            .prefix_cache
            .lock()
            .expect("prefix cache lock")
            .lookup(ids, reusable);
        let (mut cache, cached) = match hit {
            Some((snapshot, shared)) => {
                let snapshot = snapshot.truncated(shared)?;
                (
                    KvCache::from_snapshot(&snapshot, 1, capacity, self.transformer.device())?,
                    shared,
                )
            }
            None => (self.transformer.new_cache(1, capacity)?, 0),
        };
        let mut logits = None;
        for chunk in ids[cached..].chunks(PREFILL_CHUNK) {
            let input = Tensor::new(chunk, self.transformer.device())?.unsqueeze(0)?;
            logits = Some(self.transformer.forward(&input, &mut cache)?);
        }
        let snapshot = cache.snapshot(0, ids.len())?;
        self.prefix_cache
            .lock()
            .expect("prefix cache lock")
            .insert(ids.to_vec(), snapshot);
        Ok((
            cache,
            logits.expect("at least one token is computed"),
            cached,
        ))
    }

    fn run(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let text = self.render(prompt)?;
        let ids = self.encode(&text)?;
        let context = self.transformer.config.context_length;
        if ids.is_empty() {
            return Err(Error::Inference("the prompt is empty".into()));
        }
        if ids.len() >= context {
            return Err(Error::PromptTooLong {
                tokens: ids.len(),
                context,
            });
        }
        let max_tokens = sampling.max_tokens.min(context - ids.len());
        let n = sampling.n.max(1);
        let capacity = ids.len() + max_tokens;
        let started = Instant::now();
        let inference = |e: candle_core::Error| Error::Inference(first_line(e));
        let (single, first_logits, cached) = self.prefill(&ids, capacity).map_err(inference)?;
        let prefill_seconds = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let mut cache = if n == 1 {
            single
        } else {
            let snapshot = single.snapshot(0, ids.len()).map_err(inference)?;
            KvCache::from_snapshot(&snapshot, n, capacity, self.transformer.device())
                .map_err(inference)?
        };
        let first = row_logits(&first_logits, 0).map_err(inference)?;
        let mut rows: Vec<RowState> = (0..n)
            .map(|row| RowState::new(Sampler::new(sampling, row)))
            .collect();
        let mut logits: Vec<Vec<f32>> = vec![first; n];
        for step in 0..max_tokens {
            let mut next = Vec::with_capacity(n);
            for (row, state) in rows.iter_mut().enumerate() {
                if state.finished.is_some() {
                    next.push(state.last_token());
                    continue;
                }
                let token = state.sampler.next_token(&logits[row]);
                if self.stop_tokens.contains(&token) {
                    state.finished = Some(FinishReason::Stop);
                    next.push(token);
                    continue;
                }
                state.tokens.push(token);
                if !sampling.stop.is_empty() {
                    let text = self.decode(&state.tokens)?;
                    if sampling.stop.iter().any(|s| text.contains(s.as_str())) {
                        state.finished = Some(FinishReason::Stop);
                    }
                }
                next.push(token);
            }
            if rows.iter().all(|r| r.finished.is_some()) || step + 1 == max_tokens {
                break;
            }
            let input = Tensor::new(next.as_slice(), self.transformer.device())
                .and_then(|t| t.unsqueeze(1))
                .map_err(inference)?;
            let out = self
                .transformer
                .forward(&input, &mut cache)
                .map_err(inference)?;
            for (row, slot) in logits.iter_mut().enumerate() {
                if rows[row].finished.is_none() {
                    *slot = row_logits(&out, row).map_err(inference)?;
                }
            }
        }
        let decode_seconds = started.elapsed().as_secs_f64();

        let mut completions = Vec::with_capacity(n);
        let mut generated = 0;
        for state in rows {
            let mut text = self.decode(&state.tokens)?;
            let mut finish = state.finished.unwrap_or(FinishReason::Length);
            if let Some(cut) = sampling
                .stop
                .iter()
                .filter_map(|s| text.find(s.as_str()))
                .min()
            {
                text.truncate(cut);
                finish = FinishReason::Stop;
            }
            generated += state.tokens.len();
            completions.push(Completion {
                text,
                finish_reason: finish,
                generated_tokens: state.tokens.len(),
            });
        }
        Ok(Generation {
            completions,
            usage: Usage {
                prompt_tokens: ids.len(),
                cached_prompt_tokens: cached,
                generated_tokens: generated,
                prefill_seconds,
                decode_seconds,
            },
        })
    }
}

struct RowState {
    sampler: Sampler,
    tokens: Vec<u32>,
    finished: Option<FinishReason>,
}

impl RowState {
    fn new(sampler: Sampler) -> Self {
        RowState {
            sampler,
            tokens: Vec::new(),
            finished: None,
        }
    }

    /// What to feed for a finished row (its output is ignored).
    fn last_token(&self) -> u32 {
        self.tokens.last().copied().unwrap_or(0)
    }
}

impl LanguageModel for GgufModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        self.run(prompt, sampling)
    }
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
            .map_err(|e| corrupt(self.path, format!("tensor {name}: {e}")))
    }

    /// A weight matrix for matrix products. Q5_0/Q5_1 have no SIMD kernel
    /// in candle's CPU backend, so they are requantized to Q8_0, which has.
    fn matrix(&mut self, name: &str) -> Result<QMatMul> {
        let mut tensor = self.qtensor(name)?;
        if matches!(tensor.dtype(), GgmlDType::Q5_0 | GgmlDType::Q5_1) {
            tensor = tensor
                .dequantize(self.device)
                .and_then(|t| QTensor::quantize(&t, GgmlDType::Q8_0))
                .map_err(|e| corrupt(self.path, format!("requantizing {name}: {e}")))?;
        }
        QMatMul::from_qtensor(tensor).map_err(|e| corrupt(self.path, format!("tensor {name}: {e}")))
    }

    fn vector(&mut self, name: &str) -> Result<Tensor> {
        let tensor = self.qtensor(name)?;
        tensor
            .dequantize(self.device)
            .map_err(|e| corrupt(self.path, format!("tensor {name}: {e}")))
    }

    fn optional_vector(&mut self, name: &str) -> Result<Option<Tensor>> {
        if self.has(name) {
            self.vector(name).map(Some)
        } else {
            Ok(None)
        }
    }

    fn transformer(&mut self, mut config: Config) -> Result<Transformer> {
        let embedding_table = self.vector("token_embd.weight")?;
        config.vocab = embedding_table.dim(0).map_err(|e| corrupt(self.path, e))?;
        let embedding = Embedding(
            embedding_table
                .to_dtype(DType::F16)
                .map_err(|e| corrupt(self.path, e))?,
        );
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
        let output_name = if self.has("output.weight") {
            "output.weight"
        } else {
            "token_embd.weight"
        };
        let output = self.matrix(output_name)?;
        Transformer::new(config, embedding, layers, final_norm, output, self.device)
            .map_err(|e| corrupt(self.path, e))
    }
}

fn tokenizer_from(content: &Content, path: &Path) -> Result<Tokenizer> {
    use candle_core::quantized::tokenizer::TokenizerFromGguf;
    Tokenizer::from_gguf(content).map_err(|e| corrupt(path, format!("tokenizer: {e}")))
}

/// Reads only the tokenizer of a GGUF file (its metadata), not the weights.
pub fn load_tokenizer(path: &Path) -> Result<Tokenizer> {
    let mut reader = BufReader::new(open_model_file(path)?);
    let content = Content::read(&mut reader).map_err(|e| corrupt(path, e))?;
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
