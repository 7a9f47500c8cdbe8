use super::*;
use candle_core::quantized::QMatMul;
use candle_core::{Device, Module};

/// Deterministic values in [-1, 1).
fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn kernels() -> Vec<Kernel> {
    let best = Kernel::best_supported();
    [Kernel::Avx512Vnni, Kernel::Avx2, Kernel::Scalar]
        .into_iter()
        .filter(|&k| match best {
            Kernel::Avx512Vnni => true,
            Kernel::Avx2 => k != Kernel::Avx512Vnni,
            Kernel::Scalar => k == Kernel::Scalar,
        })
        .collect()
}

/// f32 weights, row-major (outputs, inputs), packed in 8 bits.
fn int8_matrix(weights: &[f32], outputs: usize, inputs: usize) -> PackedMatrix {
    assert_eq!(
        weights.len(),
        outputs * inputs,
        "weights do not match the shape"
    );
    PackedMatrix::pack(outputs, inputs, Format::Int8, |_| {
        |row, block| {
            let start = row * inputs + block * BLOCK;
            int8_block(&weights[start..start + BLOCK])
        }
    })
}

/// An (outputs, inputs) tensor of `values` in `dtype`, and how `kernel`
/// packs it, which must be in `format`.
fn packed_tensor(
    dtype: GgmlDType,
    kernel: Kernel,
    format: Format,
    (outputs, inputs): (usize, usize),
    seed: u64,
) -> (QTensor, PackedMatrix) {
    let weights = Tensor::from_vec(
        values(outputs * inputs, seed),
        (outputs, inputs),
        &Device::Cpu,
    )
    .unwrap();
    let tensor = QTensor::quantize(&weights, dtype).unwrap();
    let matrix = PackedMatrix::from_qtensor_for(&tensor, kernel)
        .unwrap()
        .unwrap();
    assert_eq!(matrix.format(), format);
    (tensor, matrix)
}

/// A Q5_0 tensor of `values`, packed in 5 bits.
fn int5_matrix(outputs: usize, inputs: usize, seed: u64) -> (QTensor, PackedMatrix) {
    packed_tensor(
        GgmlDType::Q5_0,
        Kernel::Scalar,
        Format::Int5,
        (outputs, inputs),
        seed,
    )
}

/// A Q4_K tensor of `values`, packed in 4 bits.
fn int4_matrix(outputs: usize, inputs: usize, seed: u64) -> (QTensor, PackedMatrix) {
    packed_tensor(
        GgmlDType::Q4K,
        Kernel::Avx512Vnni,
        Format::Int4,
        (outputs, inputs),
        seed,
    )
}

/// Every weight of a quantized tensor, row-major, as candle dequantizes it.
fn candle_weights(tensor: &QTensor) -> Vec<f32> {
    let weights = tensor.dequantize(&Device::Cpu).unwrap();
    weights.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// Every weight of a packed matrix, row-major, as f32.
fn dequantized(matrix: &PackedMatrix) -> Vec<f32> {
    let size = matrix.format.block_bytes();
    let blocks = matrix.inputs / BLOCK;
    let mut out = Vec::with_capacity(matrix.outputs * matrix.inputs);
    for row in 0..matrix.outputs {
        let (group, column) = (row / GROUP, row % GROUP);
        for input in 0..matrix.inputs {
            let block = &matrix.packed[(group * blocks + input / BLOCK) * size..][..size];
            let q = matrix.format.quant(block, column, input % BLOCK);
            let scale = matrix.format.scale(block, column);
            out.push(q as f32 * scale - matrix.format.minimum(block, column));
        }
    }
    out
}

#[test]
fn simd_paths_match_the_scalar_path_bit_for_bit() {
    // 40 outputs: two full groups and a padded one; 1 to 8 rows: every
    // tile height the kernels write out; 9 and 17 rows: full tiles and tails.
    let (outputs, inputs) = (40, 256);
    let int8 = int8_matrix(&values(outputs * inputs, 1), outputs, inputs);
    let (_, int5) = int5_matrix(outputs, inputs, 2);
    let (_, int4) = int4_matrix(outputs, inputs, 3);
    for matrix in [&int8, &int5, &int4] {
        for rows in (1..=9).chain([17]) {
            let x = values(rows * inputs, rows as u64 + 7);
            let mut reference = vec![0f32; rows * outputs];
            matrix.matmul(&x, rows, &mut reference, Kernel::Scalar);
            for kernel in kernels() {
                let mut out = vec![f32::NAN; rows * outputs];
                matrix.matmul(&x, rows, &mut out, kernel);
                assert_eq!(
                    out,
                    reference,
                    "{:?} with {} and {rows} rows",
                    matrix.format(),
                    kernel.name()
                );
            }
        }
    }
}

#[test]
fn q5_0_tensors_pack_exactly_in_five_bits() {
    let (q5, matrix) = int5_matrix(24, 64, 10);
    assert_eq!(dequantized(&matrix), candle_weights(&q5));
    // 5 bits and an f16 scale per weight block of 32: 22 bytes, as in Q5_0.
    assert_eq!(Format::Int5.block_bytes(), 22 * GROUP);
    // Where only the 8-bit kernels run fast, Q5_0 is requantized to 8 bits.
    let int8 = PackedMatrix::from_qtensor_for(&q5, Kernel::Avx2)
        .unwrap()
        .unwrap();
    assert_eq!(int8.format(), Format::Int8);
}

#[test]
fn products_are_close_to_the_f32_product() {
    let (outputs, inputs, rows) = (48, 256, 5);
    let weights = values(outputs * inputs, 3);
    let x = values(rows * inputs, 4);
    let matrix = int8_matrix(&weights, outputs, inputs);
    let mut out = vec![0f32; rows * outputs];
    matrix.matmul(&x, rows, &mut out, Kernel::detect());
    for r in 0..rows {
        for o in 0..outputs {
            let exact: f32 = (0..inputs)
                .map(|i| weights[o * inputs + i] * x[r * inputs + i])
                .sum();
            // Two 8-bit roundings over 256 terms of size <= 1.
            let got = out[r * outputs + o];
            assert!(
                (got - exact).abs() < 0.15,
                "row {r} output {o}: {got} vs {exact}"
            );
        }
    }
}

#[test]
fn q8_0_tensors_pack_exactly_and_agree_with_candle() {
    let (outputs, inputs, rows) = (32, 128, 3);
    let weights =
        Tensor::from_vec(values(outputs * inputs, 5), (outputs, inputs), &Device::Cpu).unwrap();
    let q8 = QTensor::quantize(&weights, GgmlDType::Q8_0).unwrap();
    let matrix = PackedMatrix::from_qtensor(&q8)
        .unwrap()
        .expect("Q8_0 packs");
    assert_eq!(matrix.format(), Format::Int8);
    // Packing Q8_0 keeps its quants: the dequantized weights requantize to the same blocks.
    let requantized = int8_matrix(&candle_weights(&q8), outputs, inputs);
    assert_eq!(matrix.packed, requantized.packed);

    let x = Tensor::from_vec(values(rows * inputs, 6), (1, rows, inputs), &Device::Cpu).unwrap();
    let ours = matrix.forward(&x).unwrap();
    assert_eq!(ours.dims(), &[1, rows, outputs]);
    let theirs = QMatMul::from_qtensor(q8).unwrap().forward(&x).unwrap();
    let diff = (ours - theirs)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    // Both quantize the activations to 8 bits, candle with an f16 scale.
    assert!(
        diff < 1e-2,
        "largest difference from candle's Q8_0 product: {diff}"
    );
}

#[test]
fn q4_k_products_are_as_close_to_the_exact_product_as_candles() {
    let (outputs, inputs, rows) = (32, 512, 3);
    let (q4k, matrix) = int4_matrix(outputs, inputs, 11);
    let weights = candle_weights(&q4k);
    let x = values(rows * inputs, 6);
    let mut ours = vec![0f32; rows * outputs];
    matrix.matmul(&x, rows, &mut ours, Kernel::detect());
    let activations = Tensor::from_vec(x.clone(), (rows, inputs), &Device::Cpu).unwrap();
    let theirs = QMatMul::from_qtensor(q4k)
        .unwrap()
        .forward(&activations)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    // Both products round the activations to 8 bits (candle per 256
    // inputs, ours per 32): neither is exact, ours must be no further off.
    let (mut ours_off, mut theirs_off) = (0f32, 0f32);
    for r in 0..rows {
        for o in 0..outputs {
            let exact: f32 = (0..inputs)
                .map(|i| weights[o * inputs + i] * x[r * inputs + i])
                .sum();
            ours_off = ours_off.max((ours[r * outputs + o] - exact).abs());
            theirs_off = theirs_off.max((theirs[r * outputs + o] - exact).abs());
        }
    }
    assert!(
        ours_off <= 1.25 * theirs_off,
        "ours {ours_off} off the exact product, candle's {theirs_off}"
    );
}

/// The weights of `matrix` each within `tolerance(block's largest
/// magnitude)` of `stored`.
fn assert_close_blockwise(matrix: &PackedMatrix, stored: &[f32], tolerance: impl Fn(f32) -> f32) {
    let packed = dequantized(matrix);
    for block in 0..stored.len() / BLOCK {
        let range = block * BLOCK..(block + 1) * BLOCK;
        let max = stored[range.clone()]
            .iter()
            .fold(0f32, |m, v| m.max(v.abs()));
        for i in range {
            assert!(
                (packed[i] - stored[i]).abs() <= tolerance(max),
                "{:?} weight {i}: {} vs {}",
                matrix.format(),
                packed[i],
                stored[i]
            );
        }
    }
}

#[test]
fn k_quants_pack_close_to_their_own_weights() {
    let (outputs, inputs) = (24, 512);
    let weights =
        Tensor::from_vec(values(outputs * inputs, 8), (outputs, inputs), &Device::Cpu).unwrap();
    // Q4_K keeps its nibbles; its sub-block scale and minimum, each a
    // product of an f16 and a 6-bit integer, are rounded to f16 (a relative
    // 2^-11 of each, over quants up to 15).
    let (q4k, int4) = int4_matrix(outputs, inputs, 8);
    assert_close_blockwise(&int4, &candle_weights(&q4k), |max| 2e-3 * max + 1e-6);
    // 5 bits a weight: 16 bytes of nibbles, an f16 scale and minimum.
    assert_eq!(Format::Int4.block_bytes(), 20 * GROUP);
    // Q6_K goes to 8 bits: at most half a step of max/127 off its own
    // weight, far below its own 6-bit step.
    let q6k = QTensor::quantize(&weights, GgmlDType::Q6K).unwrap();
    let int8 = PackedMatrix::from_qtensor_for(&q6k, Kernel::Avx512Vnni)
        .unwrap()
        .expect("Q6_K packs for the VNNI kernel");
    assert_eq!(int8.format(), Format::Int8);
    assert_close_blockwise(&int8, &candle_weights(&q6k), |max| max / 254.0 + 1e-3 * max);
    // The AVX2 kernel runs Q4_K in 4 bits too and leaves Q6_K to candle,
    // the portable one leaves both.
    let format_for = |tensor: &QTensor, kernel| {
        PackedMatrix::from_qtensor_for(tensor, kernel)
            .unwrap()
            .map(|m| m.format())
    };
    assert_eq!(format_for(&q4k, Kernel::Avx2), Some(Format::Int4));
    assert_eq!(format_for(&q6k, Kernel::Avx2), None);
    assert_eq!(format_for(&q4k, Kernel::Scalar), None);
    assert_eq!(format_for(&q6k, Kernel::Scalar), None);
}

#[test]
fn unquantized_tensors_stay_with_candle() {
    let weights = Tensor::from_vec(values(16 * 64, 8), (16, 64), &Device::Cpu).unwrap();
    let f32_tensor = QTensor::quantize(&weights, GgmlDType::F32).unwrap();
    assert!(PackedMatrix::from_qtensor(&f32_tensor).unwrap().is_none());
}

#[test]
fn wrong_activation_width_is_an_error() {
    let matrix = int8_matrix(&values(16 * 64, 9), 16, 64);
    let x = Tensor::zeros((2, 32), candle_core::DType::F32, &Device::Cpu).unwrap();
    let err = matrix.forward(&x).unwrap_err().to_string();
    assert!(err.contains("64 inputs"), "{err}");
}

#[test]
fn rows_quantized_on_the_pool_match_block_by_block() {
    // Above the pooled threshold, with a row width that is not a multiple
    // of the pool's chunks.
    let (rows, inputs) = (70, 1056);
    assert!(rows * inputs / BLOCK >= POOLED_QUANTIZE_BLOCKS);
    let x = values(rows * inputs, 11);
    let kernel = Kernel::detect();
    let pooled = quantize_rows(&x, rows, inputs, kernel);
    let one_by_one: Vec<ActBlock> = x
        .chunks_exact(BLOCK)
        .map(|b| act_block(b, kernel))
        .collect();
    assert_eq!(pooled.len(), one_by_one.len());
    for (index, (a, b)) in pooled.iter().zip(&one_by_one).enumerate() {
        assert!(
            a.q == b.q && a.d == b.d && a.sum == b.sum && a.scaled_sum == b.scaled_sum,
            "block {index} differs"
        );
    }
}

#[test]
fn vector_quantizing_matches_the_portable_one() {
    // Random blocks, blocks of exact halves (ties round away from zero),
    // a zero block and one holding a NaN.
    let mut blocks: Vec<Vec<f32>> = (0..64).map(|seed| values(BLOCK, seed + 100)).collect();
    // A largest magnitude of 127 makes the scale 1: the halves stay halves.
    let mut halves: Vec<f32> = (0..BLOCK).map(|i| i as f32 - 15.5).collect();
    halves[BLOCK - 1] = -127.0;
    blocks.push(halves);
    blocks.push(vec![0.0; BLOCK]);
    let mut with_nan = values(BLOCK, 7);
    with_nan[5] = f32::NAN;
    blocks.push(with_nan);
    for kernel in kernels() {
        for block in &blocks {
            assert_eq!(
                kernel.quantize(block),
                quantize_block(block),
                "{}",
                kernel.name()
            );
        }
    }
}
