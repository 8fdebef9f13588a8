//! Every transpose version against an exact reference: on the CPU emulator
//! (always, in CI) and on the GPU (skipped when none is present).
//!
//! A transpose moves bits and computes nothing, so the tolerance is 0 ulp:
//! every output element must equal its input element bit for bit.

mod common;

use coalesce::transpose::{self, Variant};
use coalesce::{Error, MatrixShape};
use common::*;

/// Odd shapes: single elements, single rows and columns, sizes that are not
/// multiples of the 32x32 tile in either direction, and one (132x200) that
/// is a multiple of 4 but not of 64, so `vec4` takes its vector path on the
/// interior tiles and its scalar path on the edges.
const SHAPES: [(usize, usize); 6] = [(1, 1), (1, 1000), (1000, 1), (33, 65), (1023, 517), (132, 200)];

#[test]
fn every_variant_on_the_emulator_at_odd_shapes() {
    let mut rng = rng("emulator transpose");
    for (shape, input) in random_matrices(&mut rng, &SHAPES) {
        let want = transpose_reference(&input, shape.rows(), shape.cols());
        for variant in Variant::ALL {
            let mut output = poison(shape.len());
            coalesce::transpose::emu::launch(variant, &input, &mut output, shape).unwrap();
            check_exact(&format!("{} of {shape}", variant.name()), shape.t(), &output, &want);
        }
    }
}

#[test]
fn every_variant_on_the_gpu_at_odd_shapes_and_8192() {
    let Some(gpu) = gpu_or_skip("gpu transpose") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu transpose");
    let shapes = with_large(&SHAPES, [(8192, 8192), (8191, 2049)]);
    for (shape, input) in random_matrices(&mut rng, &shapes) {
        let want = transpose_reference(&input, shape.rows(), shape.cols());
        let d_in = gpu.upload(&input).unwrap();
        for variant in Variant::ALL {
            let output =
                run_poisoned(&stream, shape.len(), |out| transpose::launch(&stream, variant, &d_in, out, shape));
            check_exact(&format!("{} of {shape}", variant.name()), shape.t(), &output, &want);
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
        let e = coalesce::transpose::emu::launch(variant, &input, &mut short, shape).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 2145, actual: 2144, .. }), "{e}");
        let mut out = vec![0.0f32; shape.len()];
        let e = coalesce::transpose::emu::launch(variant, &input[1..], &mut out, shape).unwrap_err();
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
    let e = coalesce::transpose::emu::launch(Variant::Padded, &input, &mut out, shape).unwrap_err();
    assert!(matches!(e, Error::GridTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("past the device limit"), "{e}");
}

#[test]
fn bad_input_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu bad input") else { return };
    let stream = gpu.stream().unwrap();
    let shape = MatrixShape::new(33, 65).unwrap();
    short_output_is_an_error(&gpu, shape, |input, short| transpose::tiled(&stream, input, short, shape));

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
