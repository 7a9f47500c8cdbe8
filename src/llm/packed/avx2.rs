//! AVX2: 16 outputs as two halves of 8 lanes. `vpmaddubsw` needs an
//! unsigned operand, so each weight's magnitude is multiplied by the
//! activation carrying the weight's sign; no pair of products can saturate
//! (128 * 127 * 2 < 32767).

#![cfg(target_arch = "x86_64")]

use super::{ActBlock, Format, Tile, TileSums, CHUNK, ROW_TILE};

/// Bytes of one 8-bit block, and where its scales start.
const SIZE: usize = Format::Int8.block_bytes();
const SCALES: usize = SIZE - 32;
use std::arch::x86_64::*;

pub fn supported() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// SAFETY: the CPU must have AVX2, FMA and F16C; the tile is in 8-bit
/// format and its slices hold its blocks and rows.
pub unsafe fn tile(tile: Tile<'_>, sums: &mut TileSums) {
    debug_assert_eq!(tile.format, Format::Int8);
    macro_rules! rows_of {
        ($($r:literal)*) => {
            match tile.rows {
                $($r => unsafe { rows_of::<$r>(tile.packed, tile.acts, tile.blocks, sums) },)*
                _ => unsafe { rows_of::<ROW_TILE>(tile.packed, tile.acts, tile.blocks, sums) },
            }
        };
    }
    rows_of!(1 2 3 4 5 6 7);
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
        // SAFETY: the slice above holds 8 x 64 quant bytes and 16 f16 scales.
        let scales = unsafe {
            [
                _mm256_cvtph_ps(_mm_loadu_si128(base.add(SCALES) as *const _)),
                _mm256_cvtph_ps(_mm_loadu_si128(base.add(SCALES + 16) as *const _)),
            ]
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            let act = &acts[r * blocks + block];
            let mut dot = [_mm256_setzero_si256(); 2];
            for j in 0..8 {
                let four = i32::from_le_bytes(std::array::from_fn(|t| act.q[j * 4 + t] as u8));
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
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: a row of sums holds 2 x 8 f32.
        unsafe {
            _mm256_storeu_ps(sums[r].as_mut_ptr(), acc[0]);
            _mm256_storeu_ps(sums[r].as_mut_ptr().add(8), acc[1]);
        }
    }
}
