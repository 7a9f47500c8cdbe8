//! The portable path, and the reference the SIMD paths must match bit for
//! bit: integer block sums, then one fused multiply-add per block in the
//! same order.

use super::{ActBlock, TileSums, BLOCK, GROUP, PACKED_BLOCK, QUANT_BYTES};
use half::f16;

pub fn tile(packed: &[u8], acts: &[ActBlock], blocks: usize, rows: usize, sums: &mut TileSums) {
    for (r, row_sums) in sums.iter_mut().take(rows).enumerate() {
        for (column, sum) in row_sums.iter_mut().enumerate() {
            let mut acc = 0f32;
            for block in 0..blocks {
                let weights = &packed[block * PACKED_BLOCK..][..PACKED_BLOCK];
                let act = &acts[r * blocks + block];
                let dot: i32 = (0..BLOCK)
                    .map(|i| {
                        let w = weights[(i / 4) * GROUP * 4 + column * 4 + i % 4] as i32 - 128;
                        w * act.q[i] as i32
                    })
                    .sum();
                let at = QUANT_BYTES + column * 2;
                let scale = f16::from_le_bytes([weights[at], weights[at + 1]]).to_f32();
                acc = (dot as f32).mul_add(scale * act.d, acc);
            }
            *sum = acc;
        }
    }
}
