//! AVX-512 VNNI: `vpdpbusd` multiplies 4 unsigned weight bytes by 4 signed
//! activation bytes in each of 16 lanes, one lane per output.

#![cfg(target_arch = "x86_64")]

use super::{ActBlock, TileSums, GROUP, PACKED_BLOCK, QUANT_BYTES, ROW_TILE};
use std::arch::x86_64::*;

pub fn supported() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

/// SAFETY: the CPU must have AVX-512 F, BW and VNNI; `packed` holds
/// `blocks` packed blocks and `acts` `rows` rows of `blocks` blocks.
pub unsafe fn tile(
    packed: &[u8],
    acts: &[ActBlock],
    blocks: usize,
    rows: usize,
    sums: &mut TileSums,
) {
    // A constant row count keeps every accumulator in a register.
    unsafe {
        match rows {
            1 => rows_of::<1>(packed, acts, blocks, sums),
            2 => rows_of::<2>(packed, acts, blocks, sums),
            3 => rows_of::<3>(packed, acts, blocks, sums),
            4 => rows_of::<4>(packed, acts, blocks, sums),
            5 => rows_of::<5>(packed, acts, blocks, sums),
            6 => rows_of::<6>(packed, acts, blocks, sums),
            7 => rows_of::<7>(packed, acts, blocks, sums),
            _ => rows_of::<ROW_TILE>(packed, acts, blocks, sums),
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn rows_of<const R: usize>(
    packed: &[u8],
    acts: &[ActBlock],
    blocks: usize,
    sums: &mut TileSums,
) {
    let mut acc = [_mm512_setzero_ps(); R];
    for block in 0..blocks {
        let base = packed[block * PACKED_BLOCK..][..PACKED_BLOCK].as_ptr();
        // SAFETY: the slice above holds 8 x 64 quant bytes and 16 f16 scales.
        let (weights, scales) = unsafe {
            let weights: [__m512i; 8] =
                std::array::from_fn(|j| _mm512_loadu_si512(base.add(j * GROUP * 4) as *const _));
            let scales = _mm512_cvtph_ps(_mm256_loadu_si256(base.add(QUANT_BYTES) as *const _));
            (weights, scales)
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            let act = &acts[r * blocks + block];
            // Weights are stored plus 128: start from -128 * sum(q).
            let mut dot = _mm512_set1_epi32(-128 * act.sum);
            for (j, &w) in weights.iter().enumerate() {
                let four = i32::from_le_bytes(std::array::from_fn(|t| act.q[j * 4 + t] as u8));
                dot = _mm512_dpbusd_epi32(dot, w, _mm512_set1_epi32(four));
            }
            let scale = _mm512_mul_ps(scales, _mm512_set1_ps(act.d));
            *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, *acc);
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: a row of sums holds GROUP f32.
        unsafe { _mm512_storeu_ps(sums[r].as_mut_ptr(), *acc) };
    }
}
