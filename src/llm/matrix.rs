//! A weight matrix of the transformer: our packed 8- or 5-bit blocks on CPU
//! where the type allows, otherwise candle's quantized or dense matrices.

use super::packed::PackedMatrix;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Result, Tensor};
use std::sync::Arc;

pub enum Matrix {
    Packed(PackedMatrix),
    Candle(QMatMul),
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
        }
    }
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
