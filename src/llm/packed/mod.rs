//! Weight matrices in blocks of 32 inputs, packed so that one pass over a
//! group of 16 outputs serves up to 8 activation rows.
//!
//! candle's CPU kernels for 32-value block types compute one dot product
//! per (activation row, output) and unpack the weights again for every row,
//! so a batch of 8 rows costs about 8 single rows and prefill is a long series
//! of dot products. Here the weights of 16 outputs are laid out so that one
//! 512-bit VNNI instruction multiplies 4 inputs of all 16 at once, and the
//! unpacked weights are reused across the rows of a tile.
//!
//! Three formats: 8-bit quants (Q8_0 packs exactly; Q5_1 and Q6_K are
//! requantized), 5-bit quants where AVX-512 can unpack them (Q5_0 packs
//! exactly, in 35% fewer bytes than 8 bits) and 4-bit quants above a
//! minimum on the AVX-512 and AVX2 kernels (Q4_K packs exactly but for the
//! f16 rounding of its sub-block scales, in 5 bits a weight). Decoding one
//! token reads every weight once, so bytes are time.

mod avx2;
mod avx512;
mod scalar;

use super::shared_out::SharedOut;
use candle_core::quantized::k_quants::{BlockQ5_0, BlockQ5_1, BlockQ6K, GgmlType};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use half::f16;
use rayon::prelude::*;
use std::ops::Range;

/// Inputs per block: each block of each output has one scale.
pub const BLOCK: usize = 32;
/// Outputs computed together: sixteen i32 lanes of one 512-bit register.
pub const GROUP: usize = 16;
/// Activation rows that share one pass over a group's weights.
pub const ROW_TILE: usize = 8;
/// Bytes of one chunk of a block: 4 inputs of each of the 16 outputs, byte
/// `output * 4 + input % 4`, as one 512-bit register holds them.
const CHUNK: usize = GROUP * 4;
/// Chunks per block.
const CHUNKS: usize = BLOCK / 4;

/// How a matrix stores its quants. Every format stores each quant as an
/// unsigned number, the signed quant plus `offset()`, since VNNI multiplies
/// unsigned weights by signed activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One byte per quant: the 8 chunks of a block, then 16 f16 scales.
    Int8,
    /// Quants in -16..=15: the low four bits of chunks 2p and 2p + 1 share
    /// bytes (low and high nibble) for p in 0..4; then each chunk's fifth
    /// bits as one little-endian u64 (bit = byte position); then the scales.
    Int5,
    /// Quants in 0..=15 above a minimum, as Q4_K stores them: the nibbles
    /// as in `Int5`, without fifth bits; then the scales, then 16 f16
    /// minimums. A weight is scale * quant - minimum.
    Int4,
}

impl Format {
    pub const fn block_bytes(self) -> usize {
        let minimums = if self.has_minimums() { GROUP * 2 } else { 0 };
        self.minimums_at() + minimums
    }

    /// Where a block's minimums start (or would): after its scales.
    pub(super) const fn minimums_at(self) -> usize {
        self.scales_at() + GROUP * 2
    }

    pub(super) const fn scales_at(self) -> usize {
        match self {
            Format::Int8 => CHUNKS * CHUNK,
            Format::Int5 => CHUNKS / 2 * CHUNK + CHUNKS * 8,
            Format::Int4 => CHUNKS / 2 * CHUNK,
        }
    }

    /// Whether a block stores minimums after its scales.
    pub const fn has_minimums(self) -> bool {
        matches!(self, Format::Int4)
    }

    pub const fn offset(self) -> i32 {
        match self {
            Format::Int8 => 128,
            Format::Int5 => 16,
            Format::Int4 => 0,
        }
    }

    /// The signed quant of `input` (0..32) of `column` in a packed block.
    fn quant(self, block: &[u8], column: usize, input: usize) -> i32 {
        let (chunk, at) = (input / 4, column * 4 + input % 4);
        let stored = match self {
            Format::Int8 => block[chunk * CHUNK + at] as i32,
            Format::Int5 | Format::Int4 => {
                let byte = block[chunk / 2 * CHUNK + at];
                let low = if chunk % 2 == 0 {
                    byte & 0x0F
                } else {
                    byte >> 4
                };
                let high = if self == Format::Int5 {
                    let high_bits = CHUNKS / 2 * CHUNK + chunk * 8;
                    (block[high_bits + at / 8] >> (at % 8)) & 1
                } else {
                    0
                };
                (low | high << 4) as i32
            }
        };
        stored - self.offset()
    }

    fn scale(self, block: &[u8], column: usize) -> f32 {
        let at = self.scales_at() + column * 2;
        f16::from_le_bytes([block[at], block[at + 1]]).to_f32()
    }

    /// The minimum of `column` in a block (zero for symmetric formats).
    fn minimum(self, block: &[u8], column: usize) -> f32 {
        if !self.has_minimums() {
            return 0.0;
        }
        let at = self.minimums_at() + column * 2;
        f16::from_le_bytes([block[at], block[at + 1]]).to_f32()
    }

    /// Writes one output's block of quants into a packed block at `column`.
    fn put(self, block: &mut [u8], column: usize, quants: &Quants) {
        for (input, &value) in quants.q.iter().enumerate() {
            let stored = (value as i32 + self.offset()) as u8;
            let (chunk, at) = (input / 4, column * 4 + input % 4);
            match self {
                Format::Int8 => block[chunk * CHUNK + at] = stored,
                Format::Int5 | Format::Int4 => {
                    let shift = if chunk % 2 == 0 { 0 } else { 4 };
                    block[chunk / 2 * CHUNK + at] |= (stored & 0x0F) << shift;
                    if self == Format::Int5 {
                        let high_bits = CHUNKS / 2 * CHUNK + chunk * 8;
                        block[high_bits + at / 8] |= ((stored >> 4) & 1) << (at % 8);
                    }
                }
            }
        }
        let at = self.scales_at() + column * 2;
        block[at..at + 2].copy_from_slice(&quants.scale.to_le_bytes());
        if self.has_minimums() {
            let at = self.minimums_at() + column * 2;
            block[at..at + 2].copy_from_slice(&quants.minimum.to_le_bytes());
        }
    }
}

/// One output's block of weights as a format stores it: quants in the
/// format's range (signed, before its offset), a scale and, for formats
/// with minimums, the minimum: weight = scale * quant - minimum.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Quants {
    q: [i8; BLOCK],
    scale: f16,
    minimum: f16,
}

impl Quants {
    /// Quants with a scale alone, as the symmetric formats store them.
    fn symmetric(q: [i8; BLOCK], scale: f16) -> Quants {
        Quants {
            q,
            scale,
            minimum: f16::ZERO,
        }
    }
}

/// One block of one activation row, quantized symmetrically.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct ActBlock {
    pub q: [i8; BLOCK],
    pub d: f32,
    /// Sum of `q`: weights are stored plus the format's offset, so the VNNI
    /// kernel subtracts the offset times this sum.
    pub sum: i32,
    /// `d * sum`, the weight of a block's minimum in the row's product.
    pub scaled_sum: f32,
}

impl ActBlock {
    /// Quants 4j..4j + 4 as the bytes of one little-endian i32, the word
    /// the SIMD kernels broadcast against a chunk of weights.
    #[inline]
    pub fn four(&self, j: usize) -> i32 {
        i32::from_le_bytes(std::array::from_fn(|t| self.q[j * 4 + t] as u8))
    }
}

/// One tile's work: `rows` activation rows (`acts`, `blocks` blocks each)
/// against one group's packed weights in `format`.
#[derive(Clone, Copy)]
pub struct Tile<'a> {
    pub format: Format,
    pub packed: &'a [u8],
    pub acts: &'a [ActBlock],
    pub blocks: usize,
    pub rows: usize,
}

/// Row sums of one tile: ROW_TILE rows of GROUP outputs.
pub type TileSums = [[f32; GROUP]; ROW_TILE];

/// Blocks ahead of the one being multiplied whose bytes the SIMD kernels
/// request from memory. The hardware prefetcher alone left them waiting on
/// the first line of most blocks: with 8 rows a tile, batch 8 decoded no
/// faster than batch 4 (docs/performance.md).
#[cfg(target_arch = "x86_64")]
const PREFETCH_BLOCKS: usize = 16;

/// Asks for the cache lines of the block `PREFETCH_BLOCKS` after `block`
/// (`size` bytes a block). A prefetch never faults, so one past the
/// matrix's end only wastes a request.
#[cfg(target_arch = "x86_64")]
#[inline]
fn prefetch_ahead(block: *const u8, size: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    let ahead = block.wrapping_add(PREFETCH_BLOCKS * size);
    for line in (0..size).step_by(64) {
        // SAFETY: a prefetch reads nothing the program sees and never faults.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line) as *const i8) };
    }
}

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

    fn tile(self, tile: Tile<'_>, sums: &mut TileSums) {
        debug_assert!(tile.packed.len() >= tile.blocks * tile.format.block_bytes());
        debug_assert!(tile.acts.len() >= tile.rows * tile.blocks);
        match (self, tile.format) {
            // SAFETY: the variants are only chosen when the CPU has the features.
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx512Vnni, _) => unsafe { avx512::tile(tile, sums) },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx2, Format::Int8 | Format::Int4) => unsafe { avx2::tile(tile, sums) },
            _ => scalar::tile(tile, sums),
        }
    }

    /// `quantize_block` on this path's vector unit: it runs on every
    /// activation block before every product.
    fn quantize(self, values: &[f32]) -> ([i8; BLOCK], f32) {
        match self {
            // SAFETY: both variants are only chosen when the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni | Kernel::Avx2 => unsafe { avx2::quantize_block(values) },
            _ => quantize_block(values),
        }
    }

    /// The format Q5_0 weights pack into: 5 bits where this kernel unpacks
    /// them fast, else 8 bits.
    fn q5_0_format(self) -> Format {
        match self {
            Kernel::Avx2 => Format::Int8,
            Kernel::Avx512Vnni | Kernel::Scalar => Format::Int5,
        }
    }
}

/// An (outputs, inputs) weight matrix in packed blocks.
pub struct PackedMatrix {
    outputs: usize,
    inputs: usize,
    format: Format,
    /// [group][block] of `format.block_bytes()`; the last group is padded
    /// with zero outputs.
    packed: Vec<u8>,
}

impl PackedMatrix {
    /// Packs a quantized (outputs, inputs) tensor, or returns `None` for the
    /// types left to candle (unquantized tensors, and the k-quants where the
    /// VNNI kernel does not run).
    pub fn from_qtensor(tensor: &QTensor) -> Result<Option<PackedMatrix>> {
        PackedMatrix::from_qtensor_for(tensor, Kernel::detect())
    }

    fn from_qtensor_for(tensor: &QTensor, kernel: Kernel) -> Result<Option<PackedMatrix>> {
        let (outputs, inputs) = tensor.shape().dims2()?;
        if inputs % BLOCK != 0 {
            return Ok(None);
        }
        let per_row = inputs / BLOCK;
        let packed = match (tensor.dtype(), kernel.q5_0_format()) {
            (GgmlDType::Q8_0, _) => {
                // An f16 scale, then 32 signed quants.
                let bytes = tensor.data()?;
                PackedMatrix::pack(outputs, inputs, Format::Int8, |_| {
                    |row, block| {
                        let raw = &bytes[(row * per_row + block) * 34..][..34];
                        let q = std::array::from_fn(|i| raw[2 + i] as i8);
                        Quants::symmetric(q, f16::from_le_bytes([raw[0], raw[1]]))
                    }
                })
            }
            (GgmlDType::Q5_0, Format::Int5) => {
                // An f16 scale, the fifth bits as a u32, then low nibbles:
                // input i < 16 in the low half of byte i, input i + 16 in its
                // high half.
                let bytes = tensor.data()?;
                PackedMatrix::pack(outputs, inputs, Format::Int5, |_| {
                    |row, block| {
                        let raw = &bytes[(row * per_row + block) * 22..][..22];
                        let high = u32::from_le_bytes([raw[2], raw[3], raw[4], raw[5]]);
                        let q = std::array::from_fn(|i| {
                            let byte = raw[6 + i % 16];
                            let low = if i < 16 { byte & 0x0F } else { byte >> 4 };
                            ((low as u32 | ((high >> i) & 1) << 4) as i32 - 16) as i8
                        });
                        Quants::symmetric(q, f16::from_le_bytes([raw[0], raw[1]]))
                    }
                })
            }
            (GgmlDType::Q5_0, _) => requantize::<BlockQ5_0>(tensor, outputs, inputs)?,
            (GgmlDType::Q5_1, _) => requantize::<BlockQ5_1>(tensor, outputs, inputs)?,
            // The k-quants run faster on our SIMD kernels than on candle's
            // (docs/performance.md): Q4_K in 4 bits on both (the 1.5B
            // model's greedy and sc questions 10-16% quicker on AVX2), Q6_K
            // in 8 bits (a rounding far below its own 6-bit step) on VNNI
            // only, since 8-bit batches ran at half candle's rate on AVX2.
            (GgmlDType::Q4K, _) if kernel != Kernel::Scalar => {
                q4_k_matrix(tensor, outputs, inputs)?
            }
            (GgmlDType::Q6K, _) if kernel == Kernel::Avx512Vnni => {
                requantize::<BlockQ6K>(tensor, outputs, inputs)?
            }
            _ => return Ok(None),
        };
        Ok(Some(packed))
    }

    /// Lays out the matrix one group of outputs at a time, the groups in
    /// parallel: `blocks_of(outputs of the group)` gives the group's
    /// `block_of(output, block)`, the quants of that block in the format's
    /// range (it may first unpack the group's rows).
    fn pack<B>(
        outputs: usize,
        inputs: usize,
        format: Format,
        blocks_of: impl Fn(Range<usize>) -> B + Sync,
    ) -> PackedMatrix
    where
        B: Fn(usize, usize) -> Quants,
    {
        let blocks = inputs / BLOCK;
        let groups = outputs.div_ceil(GROUP);
        let mut packed = vec![0u8; groups * blocks * format.block_bytes()];
        packed
            .par_chunks_mut(blocks * format.block_bytes())
            .enumerate()
            .for_each(|(group, group_bytes)| {
                let first = group * GROUP;
                let block_of = blocks_of(first..outputs.min(first + GROUP));
                for (block, dst) in group_bytes
                    .chunks_exact_mut(format.block_bytes())
                    .enumerate()
                {
                    for column in 0..GROUP {
                        let row = first + column;
                        let quants = if row < outputs {
                            block_of(row, block)
                        } else {
                            Quants::symmetric([0; BLOCK], f16::ZERO)
                        };
                        format.put(dst, column, &quants);
                    }
                }
            });
        PackedMatrix {
            outputs,
            inputs,
            format,
            packed,
        }
    }

    pub fn format(&self) -> Format {
        self.format
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
        let group_bytes = blocks * self.format.block_bytes();
        let acts = quantize_rows(x, rows, self.inputs, kernel);
        let groups = self.outputs.div_ceil(GROUP);
        let out = SharedOut::new(out.as_mut_ptr());
        let work = |range: std::ops::Range<usize>| {
            let mut sums = [[0f32; GROUP]; ROW_TILE];
            for group in range {
                let packed = &self.packed[group * group_bytes..][..group_bytes];
                let first = group * GROUP;
                let width = GROUP.min(self.outputs - first);
                for tile in (0..rows).step_by(ROW_TILE) {
                    let tile_rows = ROW_TILE.min(rows - tile);
                    let job = Tile {
                        format: self.format,
                        packed,
                        acts: &acts[tile * blocks..],
                        blocks,
                        rows: tile_rows,
                    };
                    kernel.tile(job, &mut sums);
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

impl CustomOp1 for PackedMatrix {
    fn name(&self) -> &'static str {
        "packed-matmul"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(values) = storage else {
            candle_core::bail!("packed matrices take f32 activations")
        };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("packed matrices take contiguous activations")
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

/// A tensor of another block type in 8 bits, each group of outputs
/// unpacked by candle's own code and requantized on its own, so that no
/// f32 copy of the whole matrix is made (an embedding matrix would take
/// 0.9 GB) and the groups spread over the threads.
fn requantize<T: GgmlType>(
    tensor: &QTensor,
    outputs: usize,
    inputs: usize,
) -> Result<PackedMatrix> {
    let bytes = tensor.data()?;
    let size = std::mem::size_of::<T>();
    let per_row = inputs / T::BLCK_SIZE;
    if !inputs.is_multiple_of(T::BLCK_SIZE) || bytes.len() != outputs * per_row * size {
        candle_core::bail!(
            "a {:?} tensor of {} bytes is not ({outputs}, {inputs})",
            T::DTYPE,
            bytes.len()
        )
    }
    if bytes.as_ptr().align_offset(std::mem::align_of::<T>()) != 0 {
        candle_core::bail!("a {:?} tensor is not aligned to its blocks", T::DTYPE)
    }
    // SAFETY: the bytes are candle's own storage of `T` blocks (length and
    // alignment checked above), and every bit pattern of these blocks of
    // integers and f16 values is a valid value.
    let typed: &[T] =
        unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size) };
    Ok(PackedMatrix::pack(outputs, inputs, Format::Int8, |rows| {
        let start = rows.start;
        let mut weights = vec![0f32; rows.len() * inputs];
        T::to_float(
            &typed[rows.start * per_row..rows.end * per_row],
            &mut weights,
        );
        move |row, block| {
            let at = (row - start) * inputs + block * BLOCK;
            int8_block(&weights[at..at + BLOCK])
        }
    }))
}

/// One block of weights in 8 bits: its largest magnitude maps to 127,
/// the scale stored as f16.
fn int8_block(values: &[f32]) -> Quants {
    let (q, d) = quantize_block(values);
    Quants::symmetric(q, f16::from_f32(d))
}

/// Bytes of one Q4_K super-block of 256 weights: f16 `d` and `dmin`, 12
/// bytes of 6-bit sub-block scales and minimums, then 128 bytes of nibbles.
const Q4_K_BYTES: usize = 144;
const Q4_K_WEIGHTS: usize = 256;

/// A Q4_K tensor in 4 bits: each sub-block of 32 weights is
/// `d * scale * q - dmin * min`, its own scale and minimum folded into one
/// f16 each.
fn q4_k_matrix(tensor: &QTensor, outputs: usize, inputs: usize) -> Result<PackedMatrix> {
    let bytes = tensor.data()?;
    let per_row = inputs / Q4_K_WEIGHTS;
    if !inputs.is_multiple_of(Q4_K_WEIGHTS) || bytes.len() != outputs * per_row * Q4_K_BYTES {
        candle_core::bail!(
            "a Q4_K tensor of {} bytes is not ({outputs}, {inputs})",
            bytes.len()
        )
    }
    Ok(PackedMatrix::pack(outputs, inputs, Format::Int4, |_| {
        |row, block| {
            let sub = block % (Q4_K_WEIGHTS / BLOCK);
            let raw = &bytes[(row * per_row + block / (Q4_K_WEIGHTS / BLOCK)) * Q4_K_BYTES..]
                [..Q4_K_BYTES];
            let d = f16::from_le_bytes([raw[0], raw[1]]).to_f32();
            let dmin = f16::from_le_bytes([raw[2], raw[3]]).to_f32();
            let (scale, min) = q4_k_scale_and_min(&raw[4..16], sub);
            // Sub-blocks 2p and 2p + 1 share 32 bytes: low and high nibbles.
            let nibbles = &raw[16 + sub / 2 * 32..][..32];
            let shift = 4 * (sub % 2);
            Quants {
                q: std::array::from_fn(|i| ((nibbles[i] >> shift) & 0x0F) as i8),
                scale: f16::from_f32(d * scale as f32),
                minimum: f16::from_f32(dmin * min as f32),
            }
        }
    }))
}

/// The 6-bit scale and minimum of sub-block `sub` (0..8) of a Q4_K
/// super-block: sub-blocks 0-3 in the low six bits of bytes 0-3 and 4-7;
/// sub-blocks 4-7 in the nibbles of bytes 8-11, their top two bits in the
/// top bits of bytes 0-7.
fn q4_k_scale_and_min(packed: &[u8], sub: usize) -> (u8, u8) {
    if sub < 4 {
        (packed[sub] & 63, packed[sub + 4] & 63)
    } else {
        (
            (packed[sub + 4] & 0x0F) | ((packed[sub - 4] >> 6) << 4),
            (packed[sub + 4] >> 4) | ((packed[sub] >> 6) << 4),
        )
    }
}

/// Symmetric 8-bit quants of one block and their scale: its largest
/// magnitude maps to 127 (a NaN counts for nothing and quantizes to -127).
fn quantize_block(values: &[f32]) -> ([i8; BLOCK], f32) {
    let max = values
        .iter()
        .fold(0f32, |m, v| if v.abs() > m { v.abs() } else { m });
    let d = max / 127.0;
    let inverse = if d > 0.0 { 1.0 / d } else { 0.0 };
    let q = std::array::from_fn(|i| {
        let r = (values[i] * inverse).round();
        if r >= -127.0 {
            r.min(127.0) as i8
        } else {
            -127
        }
    });
    (q, d)
}

/// Blocks below which quantizing stays on the calling thread: one decode
/// step's rows take microseconds, less than waking the pool.
const POOLED_QUANTIZE_BLOCKS: usize = 1024;

/// Every row of `x` (rows, inputs) as blocks, row-major. A prefill's blocks
/// are spread over the worker pool: on one thread, the other core waited
/// for them before every product.
pub fn quantize_rows(x: &[f32], rows: usize, inputs: usize, kernel: Kernel) -> Vec<ActBlock> {
    debug_assert_eq!(x.len(), rows * inputs);
    let blocks = x.len() / BLOCK;
    if blocks < POOLED_QUANTIZE_BLOCKS {
        return x
            .chunks_exact(BLOCK)
            .map(|b| act_block(b, kernel))
            .collect();
    }
    let mut acts = Vec::with_capacity(blocks);
    let out = SharedOut::new(acts.as_mut_ptr());
    candle_core::utils::barrier_pool().execute_chunked(blocks, |range| {
        for block in range {
            let act = act_block(&x[block * BLOCK..][..BLOCK], kernel);
            // SAFETY: the ranges the pool hands out are disjoint and within
            // `blocks`, the capacity reserved above.
            unsafe { out.write(block, &[act]) };
        }
    });
    // SAFETY: the pool has returned, and its ranges covered 0..blocks.
    unsafe { acts.set_len(blocks) };
    acts
}

fn act_block(values: &[f32], kernel: Kernel) -> ActBlock {
    let (q, d) = kernel.quantize(values);
    let sum = q.iter().map(|&v| v as i32).sum::<i32>();
    ActBlock {
        q,
        d,
        sum,
        scaled_sum: d * sum as f32,
    }
}

#[cfg(test)]
mod tests;
