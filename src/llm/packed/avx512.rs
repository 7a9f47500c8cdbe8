//! AVX-512 VNNI: `vpdpbusd` multiplies 4 unsigned weight bytes by 4 signed
//! activation bytes in each of 16 lanes, one lane per output. A block's
//! weights are unpacked into 8 registers once and used for every row.

#![cfg(target_arch = "x86_64")]

use super::{prefetch_ahead, Format, Tile, TileSums, CHUNK, CHUNKS, ROW_TILE};
use std::arch::x86_64::*;

pub fn supported() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

/// SAFETY: the CPU must have AVX-512 F, BW and VNNI; the tile's slices
/// hold its blocks and rows.
pub unsafe fn tile(tile: Tile<'_>, sums: &mut TileSums) {
    // A constant row count keeps every accumulator in a register; a
    // constant for the minimums keeps their step out of the other formats'
    // loops.
    macro_rules! rows_of {
        ($minimums:literal, $($r:literal)*) => {
            match tile.rows {
                $($r => unsafe { rows_of::<$r, $minimums>(tile, sums) },)*
                _ => unsafe { rows_of::<ROW_TILE, $minimums>(tile, sums) },
            }
        };
    }
    if tile.format.has_minimums() {
        rows_of!(true, 1 2 3 4 5 6 7);
    } else {
        rows_of!(false, 1 2 3 4 5 6 7);
    }
}

/// The 8 chunks of one block as unsigned bytes, and the 16 scales.
///
/// SAFETY: `block` is one whole block of `format`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn unpack(format: Format, block: *const u8) -> ([__m512i; CHUNKS], __m512) {
    unsafe {
        let scales = _mm512_cvtph_ps(_mm256_loadu_si256(block.add(format.scales_at()) as *const _));
        let chunks = match format {
            Format::Int8 => {
                std::array::from_fn(|j| _mm512_loadu_si512(block.add(j * CHUNK) as *const _))
            }
            Format::Int4 | Format::Int5 => {
                let nibble = _mm512_set1_epi8(0x0F);
                let mut chunks: [__m512i; CHUNKS] = std::array::from_fn(|j| {
                    let pair = _mm512_loadu_si512(block.add(j / 2 * CHUNK) as *const _);
                    if j % 2 == 0 {
                        _mm512_and_si512(pair, nibble)
                    } else {
                        _mm512_and_si512(_mm512_srli_epi16(pair, 4), nibble)
                    }
                });
                if format == Format::Int5 {
                    let fifth = _mm512_set1_epi8(0x10);
                    let high_bits = block.add(CHUNKS / 2 * CHUNK) as *const u64;
                    for (j, chunk) in chunks.iter_mut().enumerate() {
                        let high = _mm512_maskz_mov_epi8(high_bits.add(j).read_unaligned(), fifth);
                        *chunk = _mm512_or_si512(*chunk, high);
                    }
                }
                chunks
            }
        };
        (chunks, scales)
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn rows_of<const R: usize, const MINIMUMS: bool>(tile: Tile<'_>, sums: &mut TileSums) {
    let Tile {
        format,
        packed,
        acts,
        blocks,
        ..
    } = tile;
    let size = format.block_bytes();
    let offset = format.offset();
    let mut acc = [_mm512_setzero_ps(); R];
    for block in 0..blocks {
        let base = packed[block * size..][..size].as_ptr();
        prefetch_ahead(base, size);
        // SAFETY: the slice above is one whole block.
        let (weights, scales) = unsafe { unpack(format, base) };
        let minimums = MINIMUMS.then(|| {
            // SAFETY: formats with minimums store 16 f16 after the scales.
            unsafe {
                _mm512_cvtph_ps(_mm256_loadu_si256(
                    base.add(format.minimums_at()) as *const _
                ))
            }
        });
        let mut row = |r: usize| {
            let act = &acts[r * blocks + block];
            // Weights are stored plus the offset: start from -offset * sum(q).
            let mut dot = _mm512_set1_epi32(-offset * act.sum);
            for (j, &w) in weights.iter().enumerate() {
                let four = act.four(j);
                dot = _mm512_dpbusd_epi32(dot, w, _mm512_set1_epi32(four));
            }
            let scale = _mm512_mul_ps(scales, _mm512_set1_ps(act.d));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r]);
            if let Some(minimums) = minimums {
                acc[r] = _mm512_fnmadd_ps(minimums, _mm512_set1_ps(act.scaled_sum), acc[r]);
            }
        };
        // Each row written out with a constant index: as a loop, the
        // compiler kept the 4-bit kernel's eight accumulators in memory.
        macro_rules! each_row {
            ($($r:literal)*) => { $(if $r < R { row($r) })* };
        }
        const _: () = assert!(ROW_TILE == 8, "each_row lists ROW_TILE rows");
        each_row!(0 1 2 3 4 5 6 7);
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: a row of sums holds 16 f32.
        unsafe { _mm512_storeu_ps(sums[r].as_mut_ptr(), *acc) };
    }
}
