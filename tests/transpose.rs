//! Every transpose version against an exact reference: on the CPU emulator
//! (always, in CI) and on the GPU (skipped when none is present).
//!
//! A transpose moves bits and computes nothing, so the tolerance is 0 ulp:
//! every output element must equal its input element bit for bit.

mod common;

use coalesce::transpose::{self, Variant};
use coalesce::{Error, MatrixShape, emu};
use common::*;
use cust::memory::CopyDestination;

/// Odd shapes: single elements, single rows and columns, sizes that are not
/// multiples of the 32x32 tile in either direction, and one (132x200) that
/// is a multiple of 4 but not of 64, so `vec4` takes its vector path on the
/// interior tiles and its scalar path on the edges.
const SHAPES: [(usize, usize); 6] = [(1, 1), (1, 1000), (1000, 1), (33, 65), (1023, 517), (132, 200)];

/// The reference, in f64 as every reference here (exact for a transpose).
fn reference(input: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = input[r * cols + c] as f64;
        }
    }
    out
}

/// Fails with the first mismatching (row, col) of the output.
fn check(variant: Variant, shape: MatrixShape, got: &[f32], want: &[f64]) {
    let (out_rows, out_cols) = (shape.cols(), shape.rows());
    if let Some(i) = got.iter().zip(want).position(|(&g, &w)| g as f64 != w || g.to_bits() == POISON_BITS) {
        let bad = got.iter().zip(want).filter(|&(&g, &w)| g as f64 != w).count();
        panic!(
            "{} on {shape}: output[{}][{}] = {} (bits {:#x}), expected {}; {bad} of {} elements wrong",
            variant.name(),
            i / out_cols,
            i % out_cols,
            got[i],
            got[i].to_bits(),
            want[i],
            got.len(),
        );
    }
    assert_eq!(out_rows * out_cols, got.len());
}

#[test]
fn every_variant_on_the_emulator_at_odd_shapes() {
    let mut rng = rng("emulator transpose");
    for (rows, cols) in SHAPES {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let input = random_matrix(&mut rng, shape.len());
        let want = reference(&input, rows, cols);
        for variant in Variant::ALL {
            let mut output = poison(shape.len());
            emu::transpose(variant, &input, &mut output, shape).unwrap();
            check(variant, shape, &output, &want);
        }
    }
}

#[test]
fn every_variant_on_the_gpu_at_odd_shapes_and_8192() {
    let Some(gpu) = gpu_or_skip("gpu transpose") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu transpose");
    let mut shapes = SHAPES.to_vec();
    if !under_sanitizer() {
        shapes.push((8192, 8192));
        shapes.push((8191, 2049));
    }
    for (rows, cols) in shapes {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let input = random_matrix(&mut rng, shape.len());
        let want = reference(&input, rows, cols);
        let d_in = gpu.upload(&input).unwrap();
        for variant in Variant::ALL {
            let mut d_out = gpu.upload(&poison(shape.len())).unwrap();
            transpose::launch(&stream, variant, &d_in, &mut d_out, shape).unwrap();
            stream.synchronize().unwrap();
            let mut output = poison(shape.len());
            d_out.copy_to(&mut output[..]).unwrap();
            check(variant, shape, &output, &want);
        }
    }
}

#[test]
fn zero_and_oversized_dimensions_are_errors() {
    assert!(matches!(MatrixShape::new(0, 5), Err(Error::ZeroDimension { rows: 0, cols: 5 })));
    assert!(matches!(MatrixShape::new(5, 0), Err(Error::ZeroDimension { .. })));
    assert!(matches!(MatrixShape::new(1, u32::MAX as usize + 1), Err(Error::ShapeTooLarge { .. })));
    assert!(
        matches!(MatrixShape::new(u32::MAX as usize, u32::MAX as usize), Err(Error::ShapeTooLarge { .. }))
            || cfg!(target_pointer_width = "32")
    );
}

#[test]
fn mismatched_buffers_are_errors_on_the_emulator() {
    let shape = MatrixShape::new(33, 65).unwrap();
    let input = vec![1.0f32; shape.len()];
    for variant in Variant::ALL {
        let mut short = vec![0.0f32; shape.len() - 1];
        let e = emu::transpose(variant, &input, &mut short, shape).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 2145, actual: 2144, .. }), "{e}");
        let mut out = vec![0.0f32; shape.len()];
        let e = emu::transpose(variant, &input[1..], &mut out, shape).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "input", .. }), "{e}");
    }
}

/// 2^21 + 1 rows need 65537 blocks in y, past CUDA's 65535: refused before
/// launch. One column keeps the check cheap: nothing is allocated.
#[test]
fn shapes_past_the_grid_limit_are_errors_on_the_emulator() {
    let rows = 65_536 * 32 + 1;
    let shape = MatrixShape::new(rows, 1).unwrap();
    let input = vec![1.0f32; rows];
    let mut out = vec![0.0f32; rows];
    let e = emu::transpose(Variant::Padded, &input, &mut out, shape).unwrap_err();
    assert!(matches!(e, Error::GridTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("past the device limit"), "{e}");
}

#[test]
fn bad_input_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu bad input") else { return };
    let stream = gpu.stream().unwrap();
    let shape = MatrixShape::new(33, 65).unwrap();
    let input = gpu.upload(&vec![1.0f32; shape.len()]).unwrap();
    let mut short = gpu.alloc::<f32>(shape.len() - 1).unwrap();
    let e = transpose::tiled(&stream, &input, &mut short, shape).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "output", .. }), "{e}");

    let tall = MatrixShape::new(65_536 * 32 + 1, 1).unwrap();
    let a = gpu.alloc::<f32>(tall.len()).unwrap();
    let mut b = gpu.alloc::<f32>(tall.len()).unwrap();
    let e = transpose::naive(&stream, &a, &mut b, tall).unwrap_err();
    assert!(matches!(e, Error::GridTooLarge { .. }), "{e}");

    // compute-sanitizer reports every failed driver call, this deliberate one too.
    if !under_sanitizer() {
        let e = gpu.alloc::<f32>(1 << 40).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    }
    stream.synchronize().unwrap();
}
