//! Batched f32 products (attention's scores and weighted values) with the
//! batch items spread over candle's worker pool.
//!
//! candle's CPU product runs the items of a batch one after another, each
//! too small for its own threading: through every attention step the pool's
//! other threads waited, about a seventh of a search's wall time on two
//! cores. It also asks for the thread count on every call, which reads
//! `/proc/cpuinfo` where the CPUs report no capacity.

use super::shared_out::SharedOut;
use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor};
use gemm::Parallelism;

/// `a` (..., m, k) times `b` (..., k, n), both with the same leading
/// dimensions, as `Tensor::matmul` computes it; `a` may be any view.
pub fn pooled_matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if !a.device().is_cpu() || a.dtype() != DType::F32 || b.dtype() != DType::F32 {
        return a.contiguous()?.matmul(b);
    }
    a.apply_op2_no_bwd(b, &PooledMatmul)
}

struct PooledMatmul;

/// One operand's batch items: where each starts and how its rows and
/// columns step, in elements of its storage.
struct Operand<'a> {
    values: &'a [f32],
    start: usize,
    leading: Vec<(usize, usize)>,
    row_stride: isize,
    column_stride: isize,
}

impl<'a> Operand<'a> {
    fn new(values: &'a [f32], layout: &Layout) -> Operand<'a> {
        let dims = layout.dims();
        let strides = layout.stride();
        let rank = dims.len();
        Operand {
            values,
            start: layout.start_offset(),
            leading: dims[..rank - 2]
                .iter()
                .copied()
                .zip(strides[..rank - 2].iter().copied())
                .collect(),
            row_stride: strides[rank - 2] as isize,
            column_stride: strides[rank - 1] as isize,
        }
    }

    /// The first element of batch item `item` (row-major over the leading
    /// dimensions).
    fn item(&self, mut item: usize) -> *const f32 {
        let mut offset = self.start;
        for &(dim, stride) in self.leading.iter().rev() {
            offset += item % dim * stride;
            item /= dim;
        }
        self.values[offset..].as_ptr()
    }
}

impl CustomOp2 for PooledMatmul {
    fn name(&self) -> &'static str {
        "pooled-matmul"
    }

    fn cpu_fwd(
        &self,
        a: &CpuStorage,
        a_layout: &Layout,
        b: &CpuStorage,
        b_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(a), CpuStorage::F32(b)) = (a, b) else {
            candle_core::bail!("pooled products take f32 operands")
        };
        let (a_dims, b_dims) = (a_layout.dims(), b_layout.dims());
        let rank = a_dims.len();
        if rank < 2
            || b_dims.len() != rank
            || a_dims[..rank - 2] != b_dims[..rank - 2]
            || a_dims[rank - 1] != b_dims[rank - 2]
        {
            candle_core::bail!("cannot multiply {a_dims:?} by {b_dims:?}")
        }
        let (m, k, n) = (a_dims[rank - 2], a_dims[rank - 1], b_dims[rank - 1]);
        let batch: usize = a_dims[..rank - 2].iter().product();
        let (lhs, rhs) = (Operand::new(a, a_layout), Operand::new(b, b_layout));
        let mut out = vec![0f32; batch * m * n];
        let items = SharedOut::new(out.as_mut_ptr());
        let items = &items;
        candle_core::utils::barrier_pool().execute_chunked(batch, |range| {
            for item in range {
                // SAFETY: the operands' pointers and strides come from their
                // layouts, which candle checked against their storage; the
                // output item lies inside `out` and no other worker writes it.
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        items.at(item * m * n),
                        1,
                        n as isize,
                        false,
                        lhs.item(item),
                        lhs.column_stride,
                        lhs.row_stride,
                        rhs.item(item),
                        rhs.column_stride,
                        rhs.row_stride,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    )
                }
            }
        });
        let mut dims = a_dims.to_vec();
        dims[rank - 1] = n;
        Ok((CpuStorage::F32(out), Shape::from(dims)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, IndexOp};

    fn ramp(shape: &[usize], seed: f32) -> Tensor {
        let count: usize = shape.iter().product();
        let values: Vec<f32> = (0..count)
            .map(|i| ((i as f32 * 0.37 + seed).sin() * 3.0).round() / 4.0)
            .collect();
        Tensor::from_vec(values, shape, &Device::Cpu).unwrap()
    }

    fn assert_same(a: &Tensor, b: &Tensor) {
        let ours = pooled_matmul(a, b).unwrap();
        let theirs = a.matmul(b).unwrap();
        assert_eq!(ours.dims(), theirs.dims());
        let difference = (ours - theirs)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(difference < 1e-4, "differs by {difference}");
    }

    #[test]
    fn products_match_candles_for_every_layout_attention_uses() {
        // Contiguous (batch, heads, rows, d) by (batch, heads, d, total).
        assert_same(&ramp(&[3, 2, 5, 8], 0.1), &ramp(&[3, 2, 8, 7], 0.2));
        // Keys read through a transpose of a cache narrowed to its length.
        let cache = ramp(&[2, 2, 16, 8], 0.3);
        let keys = cache.narrow(2, 0, 9).unwrap();
        let queries = ramp(&[2, 2, 6, 8], 0.4);
        assert_same(&queries, &keys.t().unwrap());
        // Weights narrowed along their last dimension, by the narrowed values.
        let weights = ramp(&[2, 2, 6, 20], 0.5).narrow(3, 4, 9).unwrap();
        assert_same(&weights, &keys);
        // One item, and an item picked out of a larger batch.
        assert_same(&ramp(&[1, 1, 4, 3], 0.6), &ramp(&[1, 1, 3, 5], 0.7));
        let picked = ramp(&[4, 2, 5, 8], 0.8).i(2).unwrap();
        assert_same(&picked, &ramp(&[2, 8, 3], 0.9));
    }

    #[test]
    fn mismatched_shapes_are_an_error() {
        let error = pooled_matmul(&ramp(&[2, 3, 4], 0.1), &ramp(&[2, 5, 6], 0.2)).unwrap_err();
        assert!(error.to_string().contains("cannot multiply"), "{error}");
    }
}
