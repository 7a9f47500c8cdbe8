//! Weight matrices with 8-bit quants in blocks of 32 inputs, packed so that
//! one pass over a group of 16 outputs serves up to 8 activation rows.
//!
//! candle's CPU kernels for 32-value block types compute one dot product
//! per (activation row, output) and unpack the weights again for every row,
//! so a batch of 8 rows costs about 8 single rows and prefill is a long series
//! of dot products. Here the weights of 16 outputs are laid out so that one
//! 512-bit VNNI instruction multiplies 4 inputs of all 16 at once, and the
//! loaded weights are reused across the rows of a tile. Q8_0 weights pack
//! exactly; Q5_0/Q5_1 are requantized to 8 bits (as fine as Q8_0).

mod avx2;
mod avx512;
mod scalar;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{CpuStorage, CustomOp1, Device, Layout, Result, Shape, Tensor};
use half::f16;

/// Inputs per block: each block of each output has one scale.
pub const BLOCK: usize = 32;
/// Outputs computed together: sixteen i32 lanes of one 512-bit register.
pub const GROUP: usize = 16;
/// Activation rows that share one pass over a group's weights.
pub const ROW_TILE: usize = 8;
/// Quant bytes of one packed block: [4-input chunk (8)][output (16)][4 bytes].
const QUANT_BYTES: usize = BLOCK * GROUP;
/// One packed block: the quants, then the 16 outputs' scales as f16.
const PACKED_BLOCK: usize = QUANT_BYTES + GROUP * 2;

/// One block of one activation row, quantized symmetrically.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct ActBlock {
    pub q: [i8; BLOCK],
    pub d: f32,
    /// Sum of `q`: the VNNI kernel stores weights offset by 128 and
    /// subtracts 128 times this sum.
    pub sum: i32,
}

/// Row sums of one tile: ROW_TILE rows of GROUP outputs.
pub type TileSums = [[f32; GROUP]; ROW_TILE];

/// The SIMD code path, chosen once from the CPU at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Avx512Vnni,
    Avx2,
    Scalar,
}

impl Kernel {
    /// The fastest path this CPU supports; `IESR_INT8_KERNEL` (avx512vnni,
    /// avx2 or scalar) picks a slower one for comparisons.
    pub fn detect() -> Kernel {
        static KERNEL: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *KERNEL.get_or_init(|| {
            let best = Kernel::best_supported();
            match std::env::var("IESR_INT8_KERNEL").as_deref() {
                Ok("scalar") => Kernel::Scalar,
                Ok("avx2") if best != Kernel::Scalar => Kernel::Avx2,
                _ => best,
            }
        })
    }

    fn best_supported() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if avx512::supported() {
                return Kernel::Avx512Vnni;
            }
            if avx2::supported() {
                return Kernel::Avx2;
            }
        }
        Kernel::Scalar
    }

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Avx512Vnni => "avx512vnni",
            Kernel::Avx2 => "avx2",
            Kernel::Scalar => "scalar",
        }
    }

    /// Sums of `rows` activation rows (`acts`, `blocks` blocks each)
    /// against one group's packed weights.
    fn tile(
        self,
        packed: &[u8],
        acts: &[ActBlock],
        blocks: usize,
        rows: usize,
        sums: &mut TileSums,
    ) {
        debug_assert!(packed.len() >= blocks * PACKED_BLOCK && acts.len() >= rows * blocks);
        match self {
            // SAFETY: the variant is only chosen when the CPU has the features.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => unsafe { avx512::tile(packed, acts, blocks, rows, sums) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { avx2::tile(packed, acts, blocks, rows, sums) },
            _ => scalar::tile(packed, acts, blocks, rows, sums),
        }
    }
}

/// An (outputs, inputs) weight matrix in packed 8-bit blocks.
pub struct Int8Matrix {
    outputs: usize,
    inputs: usize,
    /// [group][block] of PACKED_BLOCK bytes; the last group is padded with
    /// zero outputs.
    packed: Vec<u8>,
}

impl Int8Matrix {
    /// Packs a quantized (outputs, inputs) tensor, or returns `None` for the
    /// types left to candle (the k-quants, which have fast kernels there).
    pub fn from_qtensor(tensor: &QTensor) -> Result<Option<Int8Matrix>> {
        let (outputs, inputs) = tensor.shape().dims2()?;
        if inputs % BLOCK != 0 {
            return Ok(None);
        }
        match tensor.dtype() {
            GgmlDType::Q8_0 => {
                let bytes = tensor.data()?;
                Ok(Some(Int8Matrix::from_q8_0(&bytes, outputs, inputs)))
            }
            GgmlDType::Q5_0 | GgmlDType::Q5_1 => {
                let weights = tensor
                    .dequantize(&Device::Cpu)?
                    .flatten_all()?
                    .to_vec1::<f32>()?;
                Ok(Some(Int8Matrix::quantize(&weights, outputs, inputs)))
            }
            _ => Ok(None),
        }
    }

    /// Quantizes f32 weights, row-major (outputs, inputs): each block's
    /// largest magnitude maps to 127.
    pub fn quantize(weights: &[f32], outputs: usize, inputs: usize) -> Int8Matrix {
        assert_eq!(
            weights.len(),
            outputs * inputs,
            "weights do not match the shape"
        );
        Int8Matrix::pack(outputs, inputs, |row, block| {
            let start = row * inputs + block * BLOCK;
            let (q, d) = quantize_block(&weights[start..start + BLOCK]);
            (q, f16::from_f32(d))
        })
    }

    /// Packs GGUF Q8_0 blocks (an f16 scale, then 32 signed quants) as they are.
    fn from_q8_0(bytes: &[u8], outputs: usize, inputs: usize) -> Int8Matrix {
        const Q8_0_BYTES: usize = 2 + BLOCK;
        let per_row = inputs / BLOCK;
        Int8Matrix::pack(outputs, inputs, |row, block| {
            let start = (row * per_row + block) * Q8_0_BYTES;
            let raw = &bytes[start..start + Q8_0_BYTES];
            let d = f16::from_le_bytes([raw[0], raw[1]]);
            let q = std::array::from_fn(|i| raw[2 + i] as i8);
            (q, d)
        })
    }

    /// Lays out blocks given by `block_of(output, block)`.
    fn pack(
        outputs: usize,
        inputs: usize,
        block_of: impl Fn(usize, usize) -> ([i8; BLOCK], f16),
    ) -> Int8Matrix {
        let blocks = inputs / BLOCK;
        let groups = outputs.div_ceil(GROUP);
        let mut packed = vec![0u8; groups * blocks * PACKED_BLOCK];
        for (index, dst) in packed.chunks_exact_mut(PACKED_BLOCK).enumerate() {
            let (group, block) = (index / blocks, index % blocks);
            for column in 0..GROUP {
                let row = group * GROUP + column;
                let (q, d) = if row < outputs {
                    block_of(row, block)
                } else {
                    ([0; BLOCK], f16::ZERO)
                };
                for (i, &value) in q.iter().enumerate() {
                    // Stored offset by 128 (u8), as VNNI's unsigned operand.
                    dst[(i / 4) * GROUP * 4 + column * 4 + i % 4] = (value as u8) ^ 0x80;
                }
                let scale = QUANT_BYTES + column * 2;
                dst[scale..scale + 2].copy_from_slice(&d.to_le_bytes());
            }
        }
        Int8Matrix {
            outputs,
            inputs,
            packed,
        }
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// `out` (rows, outputs) = `x` (rows, inputs) times the transpose of
    /// this matrix, on candle's CPU worker pool.
    pub fn matmul(&self, x: &[f32], rows: usize, out: &mut [f32], kernel: Kernel) {
        assert_eq!(
            x.len(),
            rows * self.inputs,
            "activations do not match the inputs"
        );
        assert_eq!(
            out.len(),
            rows * self.outputs,
            "output does not match the shape"
        );
        let blocks = self.inputs / BLOCK;
        let acts = quantize_rows(x, rows, self.inputs);
        let groups = self.outputs.div_ceil(GROUP);
        let out = SharedOut(out.as_mut_ptr());
        let work = |range: std::ops::Range<usize>| {
            let mut sums = [[0f32; GROUP]; ROW_TILE];
            for group in range {
                let packed = &self.packed[group * blocks * PACKED_BLOCK..][..blocks * PACKED_BLOCK];
                let first = group * GROUP;
                let width = GROUP.min(self.outputs - first);
                for tile in (0..rows).step_by(ROW_TILE) {
                    let tile_rows = ROW_TILE.min(rows - tile);
                    kernel.tile(packed, &acts[tile * blocks..], blocks, tile_rows, &mut sums);
                    for (r, row_sums) in sums.iter().take(tile_rows).enumerate() {
                        // SAFETY: each group writes only its own columns.
                        unsafe { out.write((tile + r) * self.outputs + first, &row_sums[..width]) };
                    }
                }
            }
        };
        candle_core::utils::barrier_pool().execute_chunked(groups, work);
    }

    /// `x` (..., inputs) times the transpose of this matrix, as a tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.contiguous()?.apply_op1_no_bwd(self)
    }
}

impl CustomOp1 for Int8Matrix {
    fn name(&self) -> &'static str {
        "int8-matmul"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(values) = storage else {
            candle_core::bail!("8-bit matrices take f32 activations")
        };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("8-bit matrices take contiguous activations")
        };
        let mut dims = layout.shape().dims().to_vec();
        if dims.last() != Some(&self.inputs) {
            candle_core::bail!("activations {dims:?} do not end in {} inputs", self.inputs)
        }
        let rows = (end - start) / self.inputs;
        let mut out = vec![0f32; rows * self.outputs];
        self.matmul(&values[start..end], rows, &mut out, Kernel::detect());
        *dims.last_mut().expect("checked above") = self.outputs;
        Ok((CpuStorage::F32(out), Shape::from(dims)))
    }
}

/// The output buffer, written by the pool's workers at disjoint places.
struct SharedOut(*mut f32);

// SAFETY: writers never overlap (see `Int8Matrix::matmul`).
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// SAFETY: `at..at + values.len()` lies in the buffer and no other
    /// thread writes there.
    unsafe fn write(&self, at: usize, values: &[f32]) {
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), self.0.add(at), values.len()) }
    }
}

/// Symmetric 8-bit quants of one block and their scale.
fn quantize_block(values: &[f32]) -> ([i8; BLOCK], f32) {
    let max = values.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = max / 127.0;
    let inverse = if d > 0.0 { 1.0 / d } else { 0.0 };
    let q = std::array::from_fn(|i| (values[i] * inverse).round().clamp(-127.0, 127.0) as i8);
    (q, d)
}

/// Every row of `x` (rows, inputs) as blocks, row-major.
pub fn quantize_rows(x: &[f32], rows: usize, inputs: usize) -> Vec<ActBlock> {
    debug_assert_eq!(x.len(), rows * inputs);
    x.chunks_exact(BLOCK)
        .map(|values| {
            let (q, d) = quantize_block(values);
            let sum = q.iter().map(|&v| v as i32).sum();
            ActBlock { q, d, sum }
        })
        .collect()
}

#[cfg(test)]
mod tests;
