//! The key/value cache: per layer, one buffer of shape
//! (batch, kv_heads, capacity, head_dim) allocated once for a whole
//! generation and written in place, so decoding never concatenates or
//! copies what is already cached. Snapshots (contiguous copies of a prefix)
//! seed new caches: the prefix cache and the n rows of a sampling batch.
//! The rows of a sampling batch share their prompt: it is stored once, and
//! attention reads it once for all rows (see `Transformer::attention`).
//! Every row holds the same number of own positions, but a row may hide
//! some: the left padding of a shorter prompt, and guessed tokens it
//! rejected while other rows of its batch kept theirs. Hidden positions
//! are masked out and skipped by the rotary positions.

use candle_core::{DType, Device, Result, Tensor};

pub struct KvCache {
    /// Leading positions every row reads but no row owns, stored once.
    shared: Option<KvSnapshot>,
    /// Each row's own positions, after the shared ones.
    layers: Vec<(Tensor, Tensor)>,
    /// Own positions filled (the same for every row).
    len: usize,
    /// Own positions the buffers hold.
    capacity: usize,
    /// Per row, the own positions it hides, ascending.
    hidden: Vec<Vec<usize>>,
}

/// The first `len` positions of a cache, for one row.
#[derive(Clone)]
pub struct KvSnapshot {
    /// Per layer, keys and values of shape (1, kv_heads, len, head_dim).
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
}

impl KvSnapshot {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory held, for the prefix cache's budget.
    pub fn bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|(k, v)| (k.elem_count() + v.elem_count()) * k.dtype().size_in_bytes())
            .sum()
    }
}

impl KvCache {
    pub fn new(
        n_layers: usize,
        batch: usize,
        kv_heads: usize,
        head_dim: usize,
        capacity: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let shape = (batch, kv_heads, capacity, head_dim);
        let layers = (0..n_layers)
            .map(|_| {
                Ok((
                    Tensor::zeros(shape, dtype, device)?,
                    Tensor::zeros(shape, dtype, device)?,
                ))
            })
            .collect::<Result<_>>()?;
        Ok(KvCache {
            shared: None,
            layers,
            len: 0,
            capacity,
            hidden: vec![Vec::new(); batch],
        })
    }

    /// A cache of `batch` rows starting with `prefix`, for up to `capacity`
    /// positions in all: one row gets its own copy, several rows share it.
    pub fn from_snapshot(
        prefix: &KvSnapshot,
        batch: usize,
        capacity: usize,
        device: &Device,
    ) -> Result<Self> {
        let (k0, _) = &prefix.layers[0];
        let (_, kv_heads, _, head_dim) = k0.dims4()?;
        let own_capacity = if batch == 1 {
            capacity
        } else {
            capacity.saturating_sub(prefix.len)
        };
        let cache = KvCache::new(
            prefix.layers.len(),
            batch,
            kv_heads,
            head_dim,
            own_capacity,
            k0.dtype(),
            device,
        )?;
        if batch > 1 {
            return Ok(KvCache {
                shared: Some(prefix.clone()),
                ..cache
            });
        }
        for ((k, v), (pk, pv)) in cache.layers.iter().zip(&prefix.layers) {
            k.slice_set(pk, 2, 0)?;
            v.slice_set(pv, 2, 0)?;
        }
        Ok(KvCache {
            len: prefix.len,
            ..cache
        })
    }

    /// Positions filled, shared ones included: the next token's position.
    pub fn len(&self) -> usize {
        self.shared_len() + self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions each row holds itself.
    pub fn own_len(&self) -> usize {
        self.len
    }

    pub fn shared_len(&self) -> usize {
        self.shared.as_ref().map_or(0, KvSnapshot::len)
    }

    /// The shared keys and values of `layer`, (1, kv_heads, shared, d).
    pub fn shared_layer(&self, layer: usize) -> Option<&(Tensor, Tensor)> {
        self.shared.as_ref().map(|s| &s.layers[layer])
    }

    pub fn batch(&self) -> usize {
        self.hidden.len()
    }

    /// Per row, the own positions it hides, ascending.
    pub fn hidden(&self) -> &[Vec<usize>] {
        &self.hidden
    }

    pub fn has_hidden(&self) -> bool {
        self.hidden.iter().any(|h| !h.is_empty())
    }

    /// Declares the left padding of each row before the first forward pass.
    pub fn set_padding(&mut self, padding: Vec<usize>) {
        assert_eq!(padding.len(), self.batch(), "one padding count per row");
        self.hidden = padding.into_iter().map(|pad| (0..pad).collect()).collect();
    }

    pub fn capacity(&self) -> usize {
        self.shared_len() + self.capacity
    }

    /// Writes one layer's new keys and values, shaped (batch, kv_heads,
    /// new, head_dim), after the filled positions, and returns views of
    /// the rows' own keys and values for that layer including them (shared
    /// ones come from [`Self::shared_layer`]). [`Self::advance`]
    /// moves the fill mark once every layer has written.
    pub fn write(&self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let new = k.dim(2)?;
        if self.len + new > self.capacity {
            candle_core::bail!(
                "key/value cache full: {} + {new} positions exceed its capacity of {}",
                self.len(),
                self.capacity()
            );
        }
        let (kc, vc) = &self.layers[layer];
        kc.slice_set(&k.contiguous()?, 2, self.len)?;
        vc.slice_set(&v.contiguous()?, 2, self.len)?;
        let total = self.len + new;
        Ok((kc.narrow(2, 0, total)?, vc.narrow(2, 0, total)?))
    }

    pub fn advance(&mut self, positions: usize) {
        self.len += positions;
    }

    /// Forgets the last `positions` own positions (a rejected draft's); the
    /// next write overwrites them.
    pub fn rewind(&mut self, positions: usize) {
        assert!(
            positions <= self.len,
            "cannot rewind past the own positions"
        );
        self.len -= positions;
        let len = self.len;
        for hidden in &mut self.hidden {
            hidden.retain(|&p| p < len);
        }
    }

    /// Drops the states of row r's last `positions[r]` positions: the
    /// positions no row keeps are forgotten, and each row hides the rest of
    /// its own.
    pub fn discard(&mut self, positions: &[usize]) {
        assert_eq!(positions.len(), self.batch(), "one count per row");
        let common = positions.iter().copied().min().unwrap_or(0);
        self.rewind(common);
        let len = self.len;
        for (hidden, &count) in self.hidden.iter_mut().zip(positions) {
            let extra = count - common;
            assert!(extra <= len, "cannot hide past the own positions");
            hidden.extend(len - extra..len);
            hidden.sort_unstable();
            hidden.dedup();
        }
    }

    /// Own positions free for writing.
    pub fn room(&self) -> usize {
        self.capacity - self.len
    }

    /// Moves each row's hidden positions to its front and drops the leading
    /// ones every row hides, making room. Rotary positions were applied
    /// when the states were written and only the order of a row's visible
    /// positions matters, so every row attends as before.
    pub fn compact(&mut self) -> Result<()> {
        if !self.has_hidden() {
            return Ok(());
        }
        let visible: Vec<Vec<u32>> = self
            .hidden
            .iter()
            .map(|hidden| {
                (0..self.len)
                    .filter(|p| hidden.binary_search(p).is_err())
                    .map(|p| p as u32)
                    .collect()
            })
            .collect();
        let len = visible.iter().map(Vec::len).max().unwrap_or(0);
        let device = self.layers[0].0.device().clone();
        // Row r keeps its visible positions at the end, after filler
        // positions (copies of position 0) that it hides.
        let indices = visible
            .iter()
            .map(|row| {
                let mut index = vec![0u32; len - row.len()];
                index.extend_from_slice(row);
                Tensor::new(index.as_slice(), &device)
            })
            .collect::<Result<Vec<_>>>()?;
        let gather = |t: &Tensor| -> Result<Tensor> {
            let rows = indices
                .iter()
                .enumerate()
                .map(|(r, index)| t.narrow(0, r, 1)?.index_select(index, 2))
                .collect::<Result<Vec<_>>>()?;
            let buffer = t.zeros_like()?;
            buffer.slice_set(&Tensor::cat(&rows, 0)?, 2, 0)?;
            Ok(buffer)
        };
        self.layers = self
            .layers
            .iter()
            .map(|(k, v)| Ok((gather(k)?, gather(v)?)))
            .collect::<Result<_>>()?;
        self.hidden = visible
            .iter()
            .map(|row| (0..len - row.len()).collect())
            .collect();
        self.len = len;
        Ok(())
    }

    /// A cache whose row i copies row `rows[i]` of this one (same length,
    /// capacity and padding): one prompt's states fanned out to n samples.
    pub fn select_rows(&self, rows: &[usize]) -> Result<KvCache> {
        let device = self.layers[0].0.device();
        let index: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
        let index = Tensor::new(index.as_slice(), device)?;
        let layers = self
            .layers
            .iter()
            .map(|(k, v)| Ok((k.index_select(&index, 0)?, v.index_select(&index, 0)?)))
            .collect::<Result<_>>()?;
        Ok(KvCache {
            shared: self.shared.clone(),
            layers,
            len: self.len,
            capacity: self.capacity,
            hidden: rows.iter().map(|&r| self.hidden[r].clone()).collect(),
        })
    }

    /// A contiguous copy of the positions row `row` shows, shared ones
    /// included, when every position it hides comes before them (left
    /// padding): the row's states as a prompt prefix.
    pub fn row_states(&self, row: usize) -> Result<KvSnapshot> {
        let hidden = &self.hidden[row];
        let pad = hidden.len();
        if hidden.iter().enumerate().any(|(i, &p)| i != p) {
            candle_core::bail!("row {row} hides positions between the ones it shows");
        }
        self.shared_then_own(row, pad, self.len - pad)
    }

    /// A contiguous copy of row `row`'s first `len` positions, shared ones
    /// included; none of them may be hidden.
    pub fn snapshot(&self, row: usize, len: usize) -> Result<KvSnapshot> {
        let len = len.min(self.len());
        let shared = self.shared_len();
        // A snapshot's positions are its rotary positions: no gaps.
        if self.hidden[row].first().is_some_and(|&p| shared + p < len) {
            candle_core::bail!("row {row} hides positions inside the snapshot");
        }
        if let Some(prefix) = &self.shared {
            if len <= shared {
                return prefix.truncated(len);
            }
        }
        self.shared_then_own(row, 0, len - shared)
    }

    /// A contiguous copy of the shared positions followed by row `row`'s
    /// own positions `from..from + count`.
    fn shared_then_own(&self, row: usize, from: usize, count: usize) -> Result<KvSnapshot> {
        let layers = self
            .layers
            .iter()
            .enumerate()
            .map(|(layer, (k, v))| {
                let own = |t: &Tensor| t.narrow(0, row, 1)?.narrow(2, from, count);
                match self.shared_layer(layer) {
                    Some((pk, pv)) => Ok((
                        Tensor::cat(&[pk, &own(k)?], 2)?,
                        Tensor::cat(&[pv, &own(v)?], 2)?,
                    )),
                    None => Ok((own(k)?.contiguous()?, own(v)?.contiguous()?)),
                }
            })
            .collect::<Result<_>>()?;
        Ok(KvSnapshot {
            layers,
            len: self.shared_len() + count,
        })
    }
}

impl KvSnapshot {
    /// The first `len` positions of this snapshot (shares no storage).
    pub fn truncated(&self, len: usize) -> Result<KvSnapshot> {
        if len >= self.len {
            return Ok(self.clone());
        }
        let layers = self
            .layers
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.narrow(2, 0, len)?.contiguous()?,
                    v.narrow(2, 0, len)?.contiguous()?,
                ))
            })
            .collect::<Result<_>>()?;
        Ok(KvSnapshot { layers, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_in_place_and_snapshots_seed_batches() -> Result<()> {
        let device = Device::Cpu;
        let mut cache = KvCache::new(2, 1, 2, 4, 8, DType::F32, &device)?;
        let k = Tensor::arange(0f32, 24., &device)?.reshape((1, 2, 3, 4))?;
        for layer in 0..2 {
            let (all_k, _) = cache.write(layer, &k, &k)?;
            assert_eq!(all_k.dims(), &[1, 2, 3, 4]);
        }
        cache.advance(3);
        let step = Tensor::ones((1, 2, 1, 4), DType::F32, &device)?;
        let (all_k, _) = cache.write(0, &step, &step)?;
        assert_eq!(all_k.dims(), &[1, 2, 4, 4]);
        let first = all_k.narrow(2, 0, 3)?.flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(first, k.flatten_all()?.to_vec1::<f32>()?);

        let snapshot = cache.snapshot(0, 3)?;
        assert_eq!(snapshot.len(), 3);
        // Three rows share the prefix and own what follows.
        let mut batch = KvCache::from_snapshot(&snapshot, 3, 6, &device)?;
        assert_eq!((batch.len(), batch.own_len(), batch.capacity()), (3, 0, 6));
        assert_eq!(batch.shared_layer(1).unwrap().0.dims(), &[1, 2, 3, 4]);
        let own = Tensor::full(7f32, (3, 2, 1, 4), &device)?;
        for layer in 0..2 {
            let (own_k, _) = batch.write(layer, &own, &own)?;
            assert_eq!(own_k.dims(), &[3, 2, 1, 4]);
        }
        batch.advance(1);
        let row2 = batch.snapshot(2, 4)?;
        let got = row2.layers[1]
            .0
            .narrow(2, 0, 3)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        assert_eq!(got, k.flatten_all()?.to_vec1::<f32>()?);
        let last = row2.layers[1]
            .0
            .narrow(2, 3, 1)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        assert_eq!(last, vec![7.0; 8]);
        assert_eq!(batch.snapshot(0, 2)?.len(), 2);
        assert!(cache
            .write(0, &Tensor::ones((1, 2, 9, 4), DType::F32, &device)?, &step)
            .is_err());
        Ok(())
    }

    /// One layer's keys of one row as numbers, position by position.
    fn keys_of(snapshot: &KvSnapshot) -> Result<Vec<f32>> {
        snapshot.layers[0].0.flatten_all()?.to_vec1::<f32>()
    }

    #[test]
    fn unequal_rows_are_left_padded_and_come_back_out_unchanged() -> Result<()> {
        let device = Device::Cpu;
        let filled = |len: usize, start: f32| -> Result<KvSnapshot> {
            let mut cache = KvCache::new(1, 1, 1, 2, len, DType::F32, &device)?;
            let k = Tensor::arange(start, start + 2.0 * len as f32, &device)?
                .reshape((1, 1, len, 2))?;
            cache.write(0, &k, &k)?;
            cache.advance(len);
            cache.snapshot(0, len)
        };
        let (short, long) = (filled(2, 100.0)?, filled(5, 0.0)?);
        // The short row behind three hidden positions, as unequal prompts
        // decode together.
        let mut batch = KvCache::new(1, 2, 1, 2, 8, DType::F32, &device)?;
        let pad = Tensor::zeros((1, 1, 3, 2), DType::F32, &device)?;
        let rows = [
            Tensor::cat(&[&pad, &short.layers[0].0], 2)?,
            long.layers[0].0.clone(),
        ];
        let both = Tensor::cat(&rows, 0)?;
        batch.write(0, &both, &both)?;
        batch.advance(5);
        batch.set_padding(vec![3, 0]);
        assert_eq!((batch.batch(), batch.len(), batch.room()), (2, 5, 3));
        assert_eq!(batch.hidden(), &[vec![0, 1, 2], vec![]]);
        assert_eq!(keys_of(&batch.row_states(0)?)?, keys_of(&short)?);
        assert_eq!(keys_of(&batch.row_states(1)?)?, keys_of(&long)?);

        // A position written after both rows belongs to each.
        let step = Tensor::full(7f32, (2, 1, 1, 2), &device)?;
        batch.write(0, &step, &step)?;
        batch.advance(1);
        let grown = batch.row_states(0)?;
        assert_eq!(grown.len(), 3);
        assert_eq!(keys_of(&grown)?, vec![100.0, 101.0, 102.0, 103.0, 7.0, 7.0]);

        // A rejected guess hidden after shown positions cannot be a prefix.
        batch.discard(&[1, 0]);
        assert!(batch.row_states(0).is_err());
        Ok(())
    }
}
