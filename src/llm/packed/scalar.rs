//! The portable path, and the reference the SIMD paths must match bit for
//! bit: integer block sums, then one fused multiply-add per block in the
//! same order.

use super::{Tile, TileSums, BLOCK};

pub fn tile(tile: Tile<'_>, sums: &mut TileSums) {
    let Tile {
        format,
        packed,
        acts,
        blocks,
        rows,
    } = tile;
    let size = format.block_bytes();
    for (r, row_sums) in sums.iter_mut().take(rows).enumerate() {
        for (column, sum) in row_sums.iter_mut().enumerate() {
            let mut acc = 0f32;
            for block in 0..blocks {
                let weights = &packed[block * size..][..size];
                let act = &acts[r * blocks + block];
                let dot: i32 = (0..BLOCK)
                    .map(|i| format.quant(weights, column, i) * act.q[i] as i32)
                    .sum();
                let scale = format.scale(weights, column);
                acc = (dot as f32).mul_add(scale * act.d, acc);
                if format.has_minimums() {
                    let minimum = format.minimum(weights, column);
                    acc = (-minimum).mul_add(act.scaled_sum, acc);
                }
            }
            *sum = acc;
        }
    }
}
