//! A weight matrix of the transformer: our packed 8- or 5-bit blocks on CPU
//! where the type allows, candle's quantized matrices for other GGUF types,
//! and plain dense matrices for Hugging Face checkpoints.

use super::packed::PackedMatrix;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Result, Tensor};
use std::sync::Arc;

pub enum Matrix {
    Packed(PackedMatrix),
    Candle(QMatMul),
    /// A dense (out, in) matrix.
    Dense(Tensor),
}

impl Matrix {
    /// Packs `tensor` (see `PackedMatrix::from_qtensor`) when it runs on
    /// the CPU and its type packs, unless `IESR_KERNELS=candle` asks for candle's kernels (for
    /// comparisons). For candle, Q5_0/Q5_1 (no SIMD kernel in its CPU
    /// backend) are requantized to Q8_0, which has one.
    pub fn from_qtensor(tensor: Arc<QTensor>, device: &Device) -> Result<Matrix> {
        if device.is_cpu() && !candle_kernels_only() {
            if let Some(packed) = PackedMatrix::from_qtensor(&tensor)? {
                return Ok(Matrix::Packed(packed));
            }
        }
        let tensor = if matches!(tensor.dtype(), GgmlDType::Q5_0 | GgmlDType::Q5_1) {
            Arc::new(QTensor::quantize(
                &tensor.dequantize(device)?,
                GgmlDType::Q8_0,
            )?)
        } else {
            tensor
        };
        Ok(Matrix::Candle(QMatMul::from_arc(tensor)?))
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Matrix::Packed(m) => m.forward(x),
            Matrix::Candle(m) => m.forward(x),
            Matrix::Dense(w) => dense_forward(w, x),
        }
    }
}

/// `x` (..., in) times the transpose of `w` (out, in) as one product over
/// all leading positions. Broadcasting `w` over a batch dimension instead
/// (as candle's dense `QMatMul` does) makes a batched product that reads
/// the whole matrix once per row: on a GPU, decoding 64 rows then cost
/// about 64 times one row's weight traffic.
fn dense_forward(w: &Tensor, x: &Tensor) -> Result<Tensor> {
    let dims = x.dims();
    let Some((&inner, leading)) = dims.split_last() else {
        candle_core::bail!("a matrix product needs a vector or more")
    };
    let rows: usize = leading.iter().product();
    let out = x.reshape((rows, inner))?.matmul(&w.t()?)?;
    let mut shape = leading.to_vec();
    shape.push(w.dim(0)?);
    out.reshape(shape)
}

/// The kernel packed matrices run on, for reports.
pub fn packed_kernel() -> String {
    if candle_kernels_only() {
        "off".to_string()
    } else {
        super::packed::Kernel::detect().name().to_string()
    }
}

fn candle_kernels_only() -> bool {
    std::env::var("IESR_KERNELS").as_deref() == Ok("candle")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_rows_of_every_leading_position_meet_the_matrix() -> Result<()> {
        let device = Device::Cpu;
        let w = Tensor::arange(0f32, 15.0, &device)?.reshape((5, 3))?;
        let x = Tensor::arange(0f32, 12.0, &device)?.reshape((2, 2, 3))?;
        let got = Matrix::Dense(w.clone()).forward(&x)?;
        assert_eq!(got.dims(), &[2, 2, 5]);
        for b in 0..2 {
            for r in 0..2 {
                let row = x.get(b)?.get(r)?.unsqueeze(0)?;
                let want = row.matmul(&w.t()?)?.squeeze(0)?.to_vec1::<f32>()?;
                assert_eq!(got.get(b)?.get(r)?.to_vec1::<f32>()?, want);
            }
        }
        let single = Matrix::Dense(w).forward(&x.get(0)?.get(1)?)?;
        assert_eq!(single.dims(), &[5]);
        Ok(())
    }
}
