//! The decoder-only transformer shared by Qwen2, Qwen3 and Llama: our own
//! forward pass over candle tensors and quantized matrices, with the key/value
//! cache passed in explicitly. Grouped-query attention runs without copying
//! keys and values per query head: the query heads of one key/value head are
//! folded into the rows of a single matrix product.

use super::kv::KvCache;
use super::matrix::Matrix;
use super::pooled_product::pooled_matmul;
use candle_core::quantized::ggml_file::qtensor_from_ggml;
use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Result, Tensor};
use std::sync::Arc;

/// How rotary position embeddings pair the dimensions of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Dimension i with i + d/2 (Qwen2, Qwen3; "NeoX").
    Halves,
    /// Dimension 2i with 2i + 1 (Llama in GGUF files).
    Interleaved,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub n_layers: usize,
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
    pub hidden: usize,
    pub vocab: usize,
    pub rms_eps: f64,
    pub rope_base: f32,
    pub rope_style: RopeStyle,
    pub context_length: usize,
    /// Activations and key/value states (f32 on CPU; bf16 suits GPUs).
    pub dtype: DType,
}

pub struct Attention {
    pub q: Matrix,
    pub k: Matrix,
    pub v: Matrix,
    pub o: Matrix,
    /// Qwen2 adds biases to the projections.
    pub q_bias: Option<Tensor>,
    pub k_bias: Option<Tensor>,
    pub v_bias: Option<Tensor>,
    /// Qwen3 normalises each head's queries and keys.
    pub q_norm: Option<Tensor>,
    pub k_norm: Option<Tensor>,
}

pub struct FeedForward {
    pub gate: Matrix,
    pub up: Matrix,
    pub down: Matrix,
}

pub struct Layer {
    pub attn_norm: Tensor,
    pub attention: Attention,
    pub ffn_norm: Tensor,
    pub ffn: FeedForward,
}

/// The token embedding table.
pub enum Embedding {
    /// A plain matrix (vocab, hidden).
    Dense(Tensor),
    /// A quantized matrix; looked-up rows are dequantized one by one.
    Quantized(Arc<QTensor>),
}

impl Embedding {
    /// Rows for `ids`, shaped (ids.len(), hidden), in `dtype`.
    fn lookup(&self, ids: &[u32], dtype: DType, device: &Device) -> Result<Tensor> {
        match self {
            Embedding::Dense(table) => {
                let ids = Tensor::new(ids, device)?;
                table.index_select(&ids, 0)?.to_dtype(dtype)
            }
            Embedding::Quantized(table) => {
                let (vocab, hidden) = table.shape().dims2()?;
                let data = table.data()?;
                let row_bytes = data.len() / vocab;
                let rows = ids
                    .iter()
                    .map(|&id| {
                        let start = id as usize * row_bytes;
                        let bytes = data.get(start..start + row_bytes).ok_or_else(|| {
                            candle_core::Error::Msg(format!(
                                "token id {id} is outside the vocabulary"
                            ))
                        })?;
                        qtensor_from_ggml(table.dtype(), bytes, vec![1, hidden], &Device::Cpu)?
                            .dequantize(&Device::Cpu)
                    })
                    .collect::<Result<Vec<_>>>()?;
                Tensor::cat(&rows, 0)?.to_dtype(dtype)?.to_device(device)
            }
        }
    }
}

/// Where one group's new positions fall: its rows, rotary tables and the
/// mask over its positions.
struct Frame {
    rows: usize,
    cos: Tensor,
    sin: Tensor,
    mask: Option<Tensor>,
}

pub struct Transformer {
    pub config: Config,
    pub embedding: Embedding,
    pub layers: Vec<Layer>,
    pub final_norm: Tensor,
    pub output: Matrix,
    cos: Tensor,
    sin: Tensor,
    device: Device,
}

impl Transformer {
    pub fn new(
        config: Config,
        embedding: Embedding,
        layers: Vec<Layer>,
        final_norm: Tensor,
        output: Matrix,
        device: &Device,
    ) -> Result<Self> {
        let (cos, sin) = rope_tables(&config, device)?;
        Ok(Transformer {
            config,
            embedding,
            layers,
            final_norm,
            output,
            cos,
            sin,
            device: device.clone(),
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// A cache for `batch` rows of up to `capacity` positions.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> Result<KvCache> {
        let c = &self.config;
        KvCache::new(
            c.n_layers,
            batch,
            c.n_kv_heads,
            c.head_dim,
            capacity,
            c.dtype,
            &self.device,
        )
    }

    /// Runs `tokens` (batch, new) after what `cache` holds (every row at the
    /// same position) and returns the logits of each row's last token,
    /// shaped (batch, vocab).
    pub fn forward(&self, tokens: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        self.forward_groups(&mut [(tokens, cache)])
    }

    /// Like `forward`, but returns the logits of every new position, shaped
    /// (batch, new, vocab): a draft's tokens are checked in one pass.
    pub fn forward_all(&self, tokens: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        let hidden = self.hidden_states(tokens, cache)?;
        self.logits(&hidden)
    }

    fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        let normed = candle_nn::ops::rms_norm(
            &hidden.contiguous()?,
            &self.final_norm,
            self.config.rms_eps as f32,
        )?;
        self.output.forward(&normed)
    }

    /// Runs each group's tokens (its rows, new) after what the group's
    /// cache holds, every group with as many new positions, and returns
    /// the logits of each row's last token, (all rows, vocab), groups in
    /// order: the rows of several prompts decoded together. The matrices
    /// run once over every row; attention reads each group's own cache,
    /// its shared prompt once for all its rows.
    pub fn forward_groups(&self, groups: &mut [(&Tensor, &mut KvCache)]) -> Result<Tensor> {
        let hidden = self.grouped_hidden_states(groups)?;
        let new = hidden.dim(1)?;
        self.logits(&hidden.narrow(1, new - 1, 1)?)?.squeeze(1)
    }

    /// The last layer's output at each new position, (batch, new, hidden).
    fn hidden_states(&self, tokens: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        self.grouped_hidden_states(&mut [(tokens, cache)])
    }

    /// The last layer's output at each new position of every group's rows,
    /// (all rows, new, hidden).
    fn grouped_hidden_states(&self, groups: &mut [(&Tensor, &mut KvCache)]) -> Result<Tensor> {
        let new = match groups.first() {
            Some((tokens, _)) => tokens.dim(1)?,
            None => candle_core::bail!("a forward pass needs at least one group of rows"),
        };
        let mut ids = Vec::new();
        let mut frames = Vec::with_capacity(groups.len());
        for (tokens, cache) in groups.iter() {
            let (rows, positions) = tokens.dims2()?;
            if positions != new {
                candle_core::bail!("groups decoded together must add as many positions each");
            }
            ids.extend(tokens.flatten_all()?.to_vec1::<u32>()?);
            frames.push(self.frame(rows, cache, new)?);
        }
        let mut x = self
            .embedding
            .lookup(&ids, self.config.dtype, &self.device)?
            .reshape((ids.len() / new, new, self.config.hidden))?;
        for (index, layer) in self.layers.iter().enumerate() {
            let normed =
                candle_nn::ops::rms_norm(&x, &layer.attn_norm, self.config.rms_eps as f32)?;
            let attended = self.attention(index, layer, &normed, &frames, groups)?;
            x = (x + attended)?;
            let normed = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, self.config.rms_eps as f32)?;
            let ffn = &layer.ffn;
            let gated =
                (candle_nn::ops::silu(&ffn.gate.forward(&normed)?)? * ffn.up.forward(&normed)?)?;
            x = (x + ffn.down.forward(&gated)?)?;
        }
        for (_, cache) in groups.iter_mut() {
            cache.advance(new);
        }
        Ok(x)
    }

    /// Where a group's `new` positions fall: rotary tables and the mask.
    fn frame(&self, rows: usize, cache: &KvCache, new: usize) -> Result<Frame> {
        if cache.has_hidden() {
            let (cos, sin, mask) = self.ragged_positions(cache, new)?;
            return Ok(Frame {
                rows,
                cos,
                sin,
                mask,
            });
        }
        let start = cache.len();
        // Shared positions are visible to every new one: only the rows'
        // own positions need the causal mask.
        let mask = if new > 1 {
            let own = cache.own_len();
            Some(causal_mask(new, own, &self.device)?.to_dtype(self.config.dtype)?)
        } else {
            None
        };
        Ok(Frame {
            rows,
            cos: self.cos.narrow(0, start, new)?,
            sin: self.sin.narrow(0, start, new)?,
            mask,
        })
    }

    /// One layer's attention over every group's rows: the projections run
    /// over all rows at once, the rest group by group.
    fn attention(
        &self,
        index: usize,
        layer: &Layer,
        x: &Tensor,
        frames: &[Frame],
        groups: &[(&Tensor, &mut KvCache)],
    ) -> Result<Tensor> {
        let c = &self.config;
        let a = &layer.attention;
        let (rows, new, _) = x.dims3()?;
        let project = |m: &Matrix, bias: &Option<Tensor>, heads: usize| -> Result<Tensor> {
            let mut y = m.forward(x)?;
            if let Some(b) = bias {
                y = y.broadcast_add(b)?;
            }
            y.reshape((rows, new, heads, c.head_dim))
        };
        let q = project(&a.q, &a.q_bias, c.n_heads)?;
        let k = project(&a.k, &a.k_bias, c.n_kv_heads)?;
        let v = project(&a.v, &a.v_bias, c.n_kv_heads)?;
        let mut outs = Vec::with_capacity(groups.len());
        let mut first = 0;
        for (frame, (_, cache)) in frames.iter().zip(groups) {
            let (q, k, v) = (
                q.narrow(0, first, frame.rows)?,
                k.narrow(0, first, frame.rows)?,
                v.narrow(0, first, frame.rows)?,
            );
            outs.push(self.attend(index, a, (q, k, v), frame, cache)?);
            first += frame.rows;
        }
        let out = match outs.len() {
            1 => outs.pop().expect("one group"),
            _ => Tensor::cat(&outs, 0)?,
        };
        a.o.forward(&out)
    }

    /// One group's attention from its projected queries, keys and values
    /// (rows, new, heads, d), its new keys and values written to its
    /// cache; (rows, new, heads * d).
    fn attend(
        &self,
        index: usize,
        a: &Attention,
        (q, k, v): (Tensor, Tensor, Tensor),
        frame: &Frame,
        cache: &KvCache,
    ) -> Result<Tensor> {
        let c = &self.config;
        let (batch, new, _, _) = q.dims4()?;
        let (mut q, mut k) = (q, k);
        if let Some(w) = &a.q_norm {
            q = candle_nn::ops::rms_norm(&q.contiguous()?, w, c.rms_eps as f32)?;
        }
        if let Some(w) = &a.k_norm {
            k = candle_nn::ops::rms_norm(&k.contiguous()?, w, c.rms_eps as f32)?;
        }
        let q = self.rope(&q.transpose(1, 2)?.contiguous()?, &frame.cos, &frame.sin)?;
        let k = self.rope(&k.transpose(1, 2)?.contiguous()?, &frame.cos, &frame.sin)?;
        let v = v.transpose(1, 2)?;
        let (keys, values) = cache.write(index, &k, &v)?;
        let total = keys.dim(2)?;

        // (batch, heads, new, d) -> (batch, kv_heads, group * new, d): the
        // heads sharing a key/value head become extra rows of one product.
        let group = c.n_heads / c.n_kv_heads;
        let rows = group * new;
        let q = q.reshape((batch, c.n_kv_heads, rows, c.head_dim))?;
        let scale = 1.0 / (c.head_dim as f64).sqrt();
        let scores = (pooled_matmul(&q, &keys.t()?)? * scale)?;
        let scores = match &frame.mask {
            Some(m) => scores
                .reshape((batch, c.n_kv_heads, group, new, total))?
                .broadcast_add(m)?
                .reshape((batch, c.n_kv_heads, rows, total))?,
            None => scores,
        };
        let out = match cache.shared_layer(index) {
            None => pooled_matmul(&super::exp::softmax_last_dim(&scores)?, &values)?,
            Some((shared_keys, shared_values)) => {
                let own = (&scores, &values);
                attend_with_shared(&q, own, (shared_keys, shared_values), scale)?
            }
        };
        out.reshape((batch, c.n_heads, new, c.head_dim))?
            .transpose(1, 2)?
            .reshape((batch, new, c.n_heads * c.head_dim))
    }

    /// Rotary tables (batch, new, d/2) and a mask (batch, 1, 1, new, own +
    /// new) for rows that hide some of their own positions (left padding,
    /// rejected guesses): a row's positions count only what it shows, and
    /// nothing attends to hidden positions.
    fn ragged_positions(
        &self,
        cache: &KvCache,
        new: usize,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let shared = cache.shared_len();
        let start = cache.own_len();
        let total = start + new;
        let batch = cache.batch();
        let mut cos_rows = Vec::with_capacity(batch);
        let mut sin_rows = Vec::with_capacity(batch);
        let mut mask = Vec::with_capacity(batch * new * total);
        for hidden in cache.hidden() {
            let mut is_hidden = vec![false; total];
            hidden.iter().for_each(|&p| is_hidden[p] = true);
            let mut shown = shared + is_hidden[..start].iter().filter(|h| !**h).count();
            let positions: Vec<u32> = is_hidden[start..]
                .iter()
                .map(|&h| {
                    let position = shown as u32;
                    shown += usize::from(!h);
                    position
                })
                .collect();
            let positions = Tensor::new(positions.as_slice(), &self.device)?;
            cos_rows.push(self.cos.index_select(&positions, 0)?);
            sin_rows.push(self.sin.index_select(&positions, 0)?);
            for i in 0..new {
                mask.extend((0..total).map(|j| {
                    // A hidden query may see itself, so its softmax stays
                    // finite (its output is never used).
                    if j > start + i || (is_hidden[j] && j != start + i) {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                }));
            }
        }
        let mask = Tensor::from_vec(mask, (batch, 1, 1, new, total), &self.device)?
            .to_dtype(self.config.dtype)?;
        Ok((
            Tensor::stack(&cos_rows, 0)?,
            Tensor::stack(&sin_rows, 0)?,
            Some(mask),
        ))
    }

    fn rope(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        match self.config.rope_style {
            RopeStyle::Halves => candle_nn::rotary_emb::rope(x, cos, sin),
            RopeStyle::Interleaved => candle_nn::rotary_emb::rope_i(x, cos, sin),
        }
    }
}

/// Attention when the rows share leading positions. The shared prompt is
/// read once for all rows: every row's queries `q` (batch, kv_heads, rows,
/// d) become rows of one product per key/value head, (1, kv_heads,
/// batch * rows, d), and one softmax spans the shared positions and each
/// row's own (`own`: its scaled, masked scores and its values).
fn attend_with_shared(
    q: &Tensor,
    (own_scores, own_values): (&Tensor, &Tensor),
    (shared_keys, shared_values): (&Tensor, &Tensor),
    scale: f64,
) -> Result<Tensor> {
    let (batch, kv_heads, rows, head_dim) = q.dims4()?;
    let shared = shared_keys.dim(2)?;
    let own = own_scores.dim(3)?;
    let stacked = |t: &Tensor, width: usize| -> Result<Tensor> {
        t.transpose(0, 1)?
            .reshape((1, kv_heads, batch * rows, width))
    };
    let unstacked = |t: &Tensor, width: usize| -> Result<Tensor> {
        t.reshape((kv_heads, batch, rows, width))?.transpose(0, 1)
    };
    let shared_scores = (pooled_matmul(&stacked(q, head_dim)?, &shared_keys.t()?)? * scale)?;
    let shared_scores = unstacked(&shared_scores, shared)?.contiguous()?;
    let all = Tensor::cat(&[&shared_scores, &own_scores.contiguous()?], 3)?;
    let weights = super::exp::softmax_last_dim(&all)?;
    let from_shared = pooled_matmul(
        &stacked(&weights.narrow(3, 0, shared)?, shared)?,
        shared_values,
    )?;
    let from_own = pooled_matmul(&weights.narrow(3, shared, own)?, own_values)?;
    unstacked(&from_shared, head_dim)? + from_own
}

fn rope_tables(config: &Config, device: &Device) -> Result<(Tensor, Tensor)> {
    let half = config.head_dim / 2;
    let inv_freq: Vec<f32> = (0..half)
        .map(|i| {
            1.0 / config
                .rope_base
                .powf(2.0 * i as f32 / config.head_dim as f32)
        })
        .collect();
    let inv_freq = Tensor::from_vec(inv_freq, (1, half), device)?;
    let positions = Tensor::arange(0u32, config.context_length as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((config.context_length, 1))?;
    let angles = positions.matmul(&inv_freq)?;
    Ok((
        angles.cos()?.to_dtype(config.dtype)?,
        angles.sin()?.to_dtype(config.dtype)?,
    ))
}

/// (new, start + new): 0 where row i (at position start + i) may attend,
/// minus infinity where the column lies in its future.
fn causal_mask(new: usize, start: usize, device: &Device) -> Result<Tensor> {
    let total = start + new;
    let values: Vec<f32> = (0..new)
        .flat_map(|i| {
            (0..total).map(move |j| {
                if j > start + i {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
        })
        .collect();
    Tensor::from_vec(values, (new, total), device)
}

/// Keeps the last dimension's values for one row, for sampling.
pub fn row_logits(logits: &Tensor, row: usize) -> Result<Vec<f32>> {
    logits.get(row)?.to_dtype(DType::F32)?.to_vec1()
}

/// Every row's logits of a (rows, vocab) tensor, in one copy from the
/// device (a copy per row waits on the GPU once per row).
pub fn all_row_logits(logits: &Tensor) -> Result<Vec<Vec<f32>>> {
    logits.to_dtype(DType::F32)?.to_vec2()
}
