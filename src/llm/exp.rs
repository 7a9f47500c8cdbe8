//! Exponentials in plain arithmetic that the compiler vectorizes (a libm
//! call per value does not), and the attention softmax built on them: on a
//! 2-core CPU the softmax's exponentials took about 6% of a forward pass.

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};

/// e^x for x <= 0 within 1e-5 relative error; 0 below e^-87 (minus
/// infinity included, as masked attention scores are).
pub fn exp_nonpositive(x: f32) -> f32 {
    let t = (x * std::f32::consts::LOG2_E).max(-126.0);
    let n = t.floor();
    let f = t - n;
    // Taylor series of 2^f = e^(f ln 2), to the 7th power.
    let p = 1.0
        + f * (std::f32::consts::LN_2
            + f * (0.240_226_5
                + f * (0.055_504_11
                    + f * (0.009_618_129
                        + f * (0.001_333_355_8 + f * (0.000_154_035_3 + f * 0.000_015_252_73))))));
    let value = f32::from_bits(((n as i32 + 127) as u32) << 23) * p;
    if x < -87.0 {
        0.0
    } else {
        value
    }
}

/// Lanes of the vectorized reductions.
const LANES: usize = 16;

/// Softmax over the last dimension: our kernel for contiguous f32 on the
/// CPU, candle's elsewhere.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if x.device().is_cpu() && x.dtype() == candle_core::DType::F32 {
        x.contiguous()?.apply_op1_no_bwd(&Softmax)
    } else {
        candle_nn::ops::softmax_last_dim(x)
    }
}

struct Softmax;

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "softmax-last-dim"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(values) = storage else {
            candle_core::bail!("softmax takes f32 values")
        };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("softmax takes contiguous values")
        };
        let width = layout.dims().last().copied().unwrap_or(1).max(1);
        let mut out = values[start..end].to_vec();
        let rows = out.len() / width;
        let shared = SharedRows(out.as_mut_ptr());
        candle_core::utils::barrier_pool().execute_chunked(rows, |range| {
            for row in range {
                // SAFETY: each row is handed to one worker only.
                softmax_in_place(unsafe { shared.row(row, width) });
            }
        });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

fn softmax_in_place(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut lanes = [0.0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for (lane, value) in lanes.iter_mut().zip(chunk) {
            *value = exp_nonpositive(*value - max);
            *lane += *value;
        }
    }
    let mut total: f32 = lanes.iter().sum();
    for value in chunks.into_remainder() {
        *value = exp_nonpositive(*value - max);
        total += *value;
    }
    let inverse = 1.0 / total;
    row.iter_mut().for_each(|value| *value *= inverse);
}

/// The output buffer, its rows written by the pool's workers.
struct SharedRows(*mut f32);

// SAFETY: every row goes to exactly one worker (see `Softmax::cpu_fwd`).
unsafe impl Sync for SharedRows {}

impl SharedRows {
    /// SAFETY: row `row` of `width` values lies in the buffer and no other
    /// thread touches it.
    #[allow(clippy::mut_from_ref)]
    unsafe fn row(&self, row: usize, width: usize) -> &mut [f32] {
        unsafe { std::slice::from_raw_parts_mut(self.0.add(row * width), width) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn fast_exponential_matches_the_library() {
        for i in 0..=1_700 {
            let x = -(i as f32) * 0.05;
            let (fast, exact) = (exp_nonpositive(x), x.exp());
            assert!(
                (fast - exact).abs() <= 1e-5 * exact,
                "e^{x}: {fast} vs {exact}"
            );
        }
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive(-90.0), 0.0);
    }

    #[test]
    fn softmax_matches_candles_with_masked_scores() -> Result<()> {
        let mut scores: Vec<f32> = (0..3 * 37)
            .map(|i| ((i * 7919) % 97) as f32 / 9.0)
            .collect();
        scores[5] = f32::NEG_INFINITY;
        scores[40] = f32::NEG_INFINITY;
        let x = Tensor::from_vec(scores, (3, 37), &Device::Cpu)?;
        let ours = softmax_last_dim(&x)?.flatten_all()?.to_vec1::<f32>()?;
        let theirs = candle_nn::ops::softmax_last_dim(&x)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        for (a, b) in ours.iter().zip(&theirs) {
            assert!((a - b).abs() <= 1e-6, "{a} vs {b}");
        }
        assert_eq!((ours[5], ours[40]), (0.0, 0.0));
        Ok(())
    }
}
