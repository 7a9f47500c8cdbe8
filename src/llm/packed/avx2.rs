//! AVX2: 16 outputs as two halves of 8 lanes. `vpmaddubsw` needs an
//! unsigned operand: for 8-bit weights each weight's magnitude is
//! multiplied by the activation carrying the weight's sign, so that no pair
//! of products can saturate (128 * 127 * 2 < 32767); 4-bit weights are
//! unsigned already, unpacked once per block for every row, and their
//! products add up in 16 bits over a whole block (8 * 15 * 127 * 2 <
//! 32767).

#![cfg(target_arch = "x86_64")]

use super::{prefetch_ahead, ActBlock, Format, Tile, TileSums, CHUNK, ROW_TILE};

/// Bytes of one 8-bit block, and where its scales start.
const SIZE: usize = Format::Int8.block_bytes();
const SCALES: usize = Format::Int8.scales_at();
/// The same for a 4-bit block, and where its minimums start.
const SIZE4: usize = Format::Int4.block_bytes();
const SCALES4: usize = Format::Int4.scales_at();
const MINIMUMS4: usize = Format::Int4.minimums_at();
use std::arch::x86_64::*;

pub fn supported() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// SAFETY: the CPU must have AVX2, FMA and F16C; the tile is in 8-bit or
/// 4-bit format and its slices hold its blocks and rows.
pub unsafe fn tile(tile: Tile<'_>, sums: &mut TileSums) {
    debug_assert!(matches!(tile.format, Format::Int8 | Format::Int4));
    macro_rules! rows_of {
        ($kernel:ident, $($r:literal)*) => {
            match tile.rows {
                $($r => unsafe { $kernel::<$r>(tile.packed, tile.acts, tile.blocks, sums) },)*
                _ => unsafe { $kernel::<ROW_TILE>(tile.packed, tile.acts, tile.blocks, sums) },
            }
        };
    }
    if tile.format == Format::Int4 {
        rows_of!(int4_rows_of, 1 2 3 4 5 6 7);
    } else {
        rows_of!(rows_of, 1 2 3 4 5 6 7);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows_of<const R: usize>(
    packed: &[u8],
    acts: &[ActBlock],
    blocks: usize,
    sums: &mut TileSums,
) {
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let offset = _mm256_set1_epi8(-128);
    let ones = _mm256_set1_epi16(1);
    for block in 0..blocks {
        let base = packed[block * SIZE..][..SIZE].as_ptr();
        prefetch_ahead(base, SIZE);
        // SAFETY: the slice above holds 8 x 64 quant bytes and 16 f16 scales.
        let scales = unsafe { sixteen_f16(base.add(SCALES)) };
        for (r, acc) in acc.iter_mut().enumerate() {
            let act = &acts[r * blocks + block];
            let mut dot = [_mm256_setzero_si256(); 2];
            for j in 0..8 {
                let four = act.four(j);
                let four = _mm256_set1_epi32(four);
                for (half, dot) in dot.iter_mut().enumerate() {
                    // SAFETY: within the block's quant bytes.
                    let stored =
                        unsafe { _mm256_loadu_si256(base.add(j * CHUNK + half * 32) as *const _) };
                    let w = _mm256_xor_si256(stored, offset);
                    let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(four, w));
                    *dot = _mm256_add_epi32(*dot, _mm256_madd_epi16(pairs, ones));
                }
            }
            let d = _mm256_set1_ps(act.d);
            for half in 0..2 {
                let scale = _mm256_mul_ps(scales[half], d);
                acc[half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[half]), scale, acc[half]);
            }
        }
    }
    store(&acc, sums);
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn int4_rows_of<const R: usize>(
    packed: &[u8],
    acts: &[ActBlock],
    blocks: usize,
    sums: &mut TileSums,
) {
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let nibble = _mm256_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    // The block's quants as bytes, chunk j's half h at 2j + h.
    let mut weights = [_mm256_setzero_si256(); 16];
    for block in 0..blocks {
        let base = packed[block * SIZE4..][..SIZE4].as_ptr();
        prefetch_ahead(base, SIZE4);
        // SAFETY: the slice above holds 4 x 64 nibble bytes, then 16 f16
        // scales and 16 f16 minimums.
        let (scales, minimums) = unsafe {
            (
                sixteen_f16(base.add(SCALES4)),
                sixteen_f16(base.add(MINIMUMS4)),
            )
        };
        for pair in 0..4 {
            for half in 0..2 {
                // SAFETY: within the block's nibble bytes.
                let bytes =
                    unsafe { _mm256_loadu_si256(base.add(pair * CHUNK + half * 32) as *const _) };
                weights[4 * pair + half] = _mm256_and_si256(bytes, nibble);
                weights[4 * pair + 2 + half] =
                    _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
            }
        }
        for (r, acc) in acc.iter_mut().enumerate() {
            let act = &acts[r * blocks + block];
            let mut dot = [_mm256_setzero_si256(); 2];
            for j in 0..8 {
                let four = act.four(j);
                let four = _mm256_set1_epi32(four);
                for (half, dot) in dot.iter_mut().enumerate() {
                    let pairs = _mm256_maddubs_epi16(weights[2 * j + half], four);
                    *dot = _mm256_add_epi16(*dot, pairs);
                }
            }
            let d = _mm256_set1_ps(act.d);
            let scaled_sum = _mm256_set1_ps(act.scaled_sum);
            for half in 0..2 {
                let dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(dot[half], ones));
                let scale = _mm256_mul_ps(scales[half], d);
                acc[half] = _mm256_fmadd_ps(dot, scale, acc[half]);
                acc[half] = _mm256_fnmadd_ps(minimums[half], scaled_sum, acc[half]);
            }
        }
    }
    store(&acc, sums);
}

/// 16 f16 values at `at`, the outputs' halves as 8 f32 each.
///
/// SAFETY: 32 bytes from `at` are readable.
#[inline]
#[target_feature(enable = "avx,f16c")]
unsafe fn sixteen_f16(at: *const u8) -> [__m256; 2] {
    unsafe {
        [
            _mm256_cvtph_ps(_mm_loadu_si128(at as *const _)),
            _mm256_cvtph_ps(_mm_loadu_si128(at.add(16) as *const _)),
        ]
    }
}

#[inline]
#[target_feature(enable = "avx")]
fn store<const R: usize>(acc: &[[__m256; 2]; R], sums: &mut TileSums) {
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: a row of sums holds 2 x 8 f32.
        unsafe {
            _mm256_storeu_ps(sums[r].as_mut_ptr(), acc[0]);
            _mm256_storeu_ps(sums[r].as_mut_ptr().add(8), acc[1]);
        }
    }
}

/// `super::quantize_block` eight lanes at a time, equal to it value for
/// value: round half away from zero is the truncation plus one step away
/// from zero where the part cut off is at least a half.
///
/// SAFETY: the CPU must have AVX2; `values` is one block.
#[target_feature(enable = "avx2")]
pub unsafe fn quantize_block(values: &[f32]) -> ([i8; super::BLOCK], f32) {
    assert_eq!(values.len(), super::BLOCK, "a block of activations");
    let sign = _mm256_set1_ps(-0.0);
    let lanes: [__m256; 4] =
        std::array::from_fn(|i| unsafe { _mm256_loadu_ps(values.as_ptr().add(i * 8)) });
    // `max_ps` returns its second operand when either is NaN: a NaN never
    // replaces the running maximum.
    let max = lanes.iter().fold(_mm256_setzero_ps(), |m, &v| {
        _mm256_max_ps(_mm256_andnot_ps(sign, v), m)
    });
    let mut max_lanes = [0f32; 8];
    unsafe { _mm256_storeu_ps(max_lanes.as_mut_ptr(), max) };
    let max = max_lanes.into_iter().fold(0f32, f32::max);
    let d = max / 127.0;
    let inverse = _mm256_set1_ps(if d > 0.0 { 1.0 / d } else { 0.0 });
    let half = _mm256_set1_ps(0.5);
    let one = _mm256_set1_ps(1.0);
    let (low, high) = (_mm256_set1_ps(-127.0), _mm256_set1_ps(127.0));
    let quants = lanes.map(|v| {
        let x = _mm256_mul_ps(v, inverse);
        let whole = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
        let cut = _mm256_andnot_ps(sign, _mm256_sub_ps(x, whole));
        let away = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(cut, half), one);
        let rounded = _mm256_add_ps(whole, _mm256_or_ps(away, _mm256_and_ps(x, sign)));
        // NaN lanes take the second operand of `max_ps`: -127.
        _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(rounded, low), high))
    });
    // Packing works within 128-bit halves; the permutation puts the four
    // groups of four back in order.
    let words = _mm256_packs_epi16(
        _mm256_packs_epi32(quants[0], quants[1]),
        _mm256_packs_epi32(quants[2], quants[3]),
    );
    let ordered = _mm256_permutevar8x32_epi32(words, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    let mut q = [0i8; super::BLOCK];
    unsafe { _mm256_storeu_si256(q.as_mut_ptr() as *mut __m256i, ordered) };
    (q, d)
}
