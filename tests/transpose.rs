//! Every transpose version against an exact reference: on the CPU emulator
//! (always, in CI) and on the GPU (skipped when none is present).
//!
//! A transpose moves bits and computes nothing, so the tolerance is 0 ulp:
//! every output element must equal its input element bit for bit.

mod common;

use coalesce::emu::Report;
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
fn oversized_dimensions_are_errors_and_zero_ones_are_empty() {
    let empty = MatrixShape::new(0, 5).unwrap();
    assert_eq!((empty.rows(), empty.cols(), empty.len(), empty.is_empty()), (0, 5, 0, true));
    assert_eq!((empty.t(), empty.to_string()), (MatrixShape::new(5, 0).unwrap(), "0x5".to_owned()));
    assert!(!MatrixShape::new(1, 1).unwrap().is_empty());
    assert!(matches!(MatrixShape::new(1, u32::MAX as usize + 1), Err(Error::ShapeTooLarge { .. })));
    assert!(
        matches!(MatrixShape::new(u32::MAX as usize, u32::MAX as usize), Err(Error::ShapeTooLarge { .. }))
            || cfg!(target_pointer_width = "32")
    );
}

/// An empty matrix launches nothing (an empty report, no finding), once its
/// buffers are checked: a buffer of the wrong length is still an error.
#[test]
fn empty_matrices_are_no_ops_on_the_emulator() {
    for shape in empty_shapes() {
        for variant in Variant::ALL {
            let what = format!("{} of {shape}", variant.name());
            transpose::emu::launch(variant, &[], &mut [], shape).unwrap_or_else(|e| panic!("{what}: {e}"));
            let report = transpose::emu::launch_checked(variant, &[], &mut [], shape).unwrap();
            assert_eq!(report, Report::default(), "{what}: something was launched");
            let e = transpose::emu::launch(variant, &[], &mut [0.0], shape).unwrap_err();
            assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 0, actual: 1, .. }), "{e}");
            let e = transpose::emu::launch_checked(variant, &[1.0], &mut [], shape).unwrap_err();
            assert!(matches!(e, Error::LengthMismatch { buffer: "input", expected: 0, actual: 1, .. }), "{e}");
        }
    }
}

#[test]
fn empty_matrices_are_no_ops_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu empty transpose") else { return };
    let stream = gpu.stream().unwrap();
    for shape in empty_shapes() {
        for variant in Variant::ALL {
            let what = format!("{} of {shape}", variant.name());
            empty_is_a_no_op(&stream, &what, |input, output| transpose::launch(&stream, variant, input, output, shape));
        }
        let (one, mut none) = (gpu.alloc::<f32>(1).unwrap(), gpu.alloc::<f32>(0).unwrap());
        let e = transpose::vec4(&stream, &one, &mut none, shape).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "input", expected: 0, actual: 1, .. }), "{e}");
    }
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

/// Each step refuses a shape past its grid's 65535 rows of blocks:
/// the input's tile rows, or its tile columns where the grid covers the
/// output's tiles (steps 2 and 8), which then accept the transposed shape.
#[test]
fn each_step_refuses_the_side_its_grid_counts_in_y() {
    for variant in Variant::ALL {
        let (refused, planned) = past_the_grid_y(variant, 1);
        let (input, mut out) = (vec![1.0f32; refused.len()], vec![0.0f32; refused.len()]);
        let e = coalesce::transpose::emu::launch(variant, &input, &mut out, refused).unwrap_err();
        assert!(matches!(e, Error::GridTooLarge { .. }), "{}: {e}", variant.name());
        let dims = variant.launch_dims(planned.rows() as u32, planned.cols() as u32);
        assert!(dims.grid.y <= 65_535, "{}: {planned} needs {} blocks in y", variant.name(), dims.grid.y);
    }
}

#[test]
fn bad_input_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu bad input") else { return };
    let stream = gpu.stream().unwrap();
    short_output_is_an_error(&stream, (33, 65), transpose::tiled);

    let e = refusal(&stream, (65_536 * 32 + 1, 1), transpose::naive);
    assert!(matches!(e, Error::GridTooLarge { .. }), "{e}");

    // compute-sanitizer reports every failed driver call, this deliberate one too.
    if !under_sanitizer() {
        let e = gpu.alloc::<f32>(1 << 40).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    }
    stream.synchronize().unwrap();
}
