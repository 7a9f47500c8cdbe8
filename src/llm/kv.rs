//! The key/value cache: per layer, one buffer of shape
//! (batch, kv_heads, capacity, head_dim) allocated once for a whole
//! generation and written in place, so decoding never concatenates or
//! copies what is already cached. Snapshots (contiguous copies of a prefix)
//! seed new caches: the prefix cache and the n rows of a sampling batch.

use candle_core::{DType, Device, Result, Tensor};

pub struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    /// Positions filled (the same for every row).
    len: usize,
    capacity: usize,
    /// Per row, how many leading positions are padding: rows holding
    /// prompts of unequal length are left-padded to a common length, and the
    /// padding is masked out and skipped by the rotary positions.
    padding: Vec<usize>,
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
            layers,
            len: 0,
            capacity,
            padding: vec![0; batch],
        })
    }

    /// A cache of `batch` rows whose first positions hold `prefix`.
    pub fn from_snapshot(
        prefix: &KvSnapshot,
        batch: usize,
        capacity: usize,
        device: &Device,
    ) -> Result<Self> {
        let (k0, _) = &prefix.layers[0];
        let (_, kv_heads, _, head_dim) = k0.dims4()?;
        let cache = KvCache::new(
            prefix.layers.len(),
            batch,
            kv_heads,
            head_dim,
            capacity,
            k0.dtype(),
            device,
        )?;
        for ((k, v), (pk, pv)) in cache.layers.iter().zip(&prefix.layers) {
            let rows = |t: &Tensor| t.repeat((batch, 1, 1, 1));
            k.slice_set(&rows(pk)?, 2, 0)?;
            v.slice_set(&rows(pv)?, 2, 0)?;
        }
        Ok(KvCache {
            len: prefix.len,
            ..cache
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn batch(&self) -> usize {
        self.padding.len()
    }

    /// Leading padding positions per row.
    pub fn padding(&self) -> &[usize] {
        &self.padding
    }

    /// Declares the left padding of each row before the first forward pass.
    pub fn set_padding(&mut self, padding: Vec<usize>) {
        assert_eq!(padding.len(), self.batch(), "one padding count per row");
        self.padding = padding;
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Writes one layer's new keys and values, shaped (batch, kv_heads,
    /// new, head_dim), after the filled positions, and returns views of
    /// everything cached for that layer including them. [`Self::advance`]
    /// moves the fill mark once every layer has written.
    pub fn write(&self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let new = k.dim(2)?;
        if self.len + new > self.capacity {
            candle_core::bail!(
                "key/value cache full: {} + {new} positions exceed its capacity of {}",
                self.len,
                self.capacity
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
            layers,
            len: self.len,
            capacity: self.capacity,
            padding: rows.iter().map(|&r| self.padding[r]).collect(),
        })
    }

    /// A contiguous copy of row `row`'s first `len` positions.
    pub fn snapshot(&self, row: usize, len: usize) -> Result<KvSnapshot> {
        let len = len.min(self.len);
        let layers = self
            .layers
            .iter()
            .map(|(k, v)| {
                let cut = |t: &Tensor| t.narrow(0, row, 1)?.narrow(2, 0, len)?.contiguous();
                Ok((cut(k)?, cut(v)?))
            })
            .collect::<Result<_>>()?;
        Ok(KvSnapshot { layers, len })
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
        let batch = KvCache::from_snapshot(&snapshot, 3, 6, &device)?;
        assert_eq!(batch.len(), 3);
        let row2 = batch.snapshot(2, 3)?;
        let got = row2.layers[1].0.flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(got, k.flatten_all()?.to_vec1::<f32>()?);
        assert!(cache
            .write(0, &Tensor::ones((1, 2, 9, 4), DType::F32, &device)?, &step)
            .is_err());
        Ok(())
    }
}
