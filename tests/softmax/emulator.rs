//! Every softmax kernel on the emulator against the f64 reference: at odd
//! shapes with both input distributions, on misaligned buffers, on rows of
//! several online chunks, and at the hard cases.

use crate::common::*;
use crate::reference::{check, check_every_kernel, hard_rows, logits, on_emulator, reference};
use coalesce::MatrixShape;
use coalesce::softmax::{Kernel, emu};

/// Every kernel on the emulator at the shapes it takes: a few rows each of
/// 1 column, 3 (less than a group), 33 (neither 32 nor 4 divides it), 128,
/// 130, 255, 1000, 1023, 1024, 2050, 4100 and 5000 columns (the last
/// through both block kernels and online), with both input distributions.
#[test]
fn every_kernel_on_the_emulator_at_odd_shapes() {
    let mut rng = rng("emulator softmax");
    let shapes = [
        (7, 1),
        (5, 3),
        (5, 33),
        (3, 128),
        (4, 130),
        (3, 255),
        (3, 1000),
        (2, 1023),
        (2, 1024),
        (2, 2050),
        (2, 4100),
        (2, 5000),
    ];
    for (rows, cols) in shapes {
        let shape = MatrixShape::new(rows, cols).unwrap();
        for wide in [false, true] {
            let input = if wide { random_matrix(&mut rng, shape.len()) } else { logits(&mut rng, shape.len()) };
            check_every_kernel(shape, &input, "", |k| Some(on_emulator(k, &input, shape)), |_, _, _| {});
        }
    }
}

/// Buffers one float off 16-byte alignment take the scalar path even when
/// `cols % 4 == 0`; rows of 20000 columns take online through two chunks of
/// 1024 threads, the second partial (and, at 20001, a tail).
#[test]
fn misaligned_buffers_and_multi_chunk_rows_on_the_emulator() {
    let mut rng = rng("emulator softmax misaligned");
    for (rows, cols) in [(3, 128), (3, 1000), (2, 4096)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let storage = logits(&mut rng, shape.len() + 1);
        let input = &storage[1..];
        let run = |kernel| {
            let mut output = poison(shape.len() + 1);
            emu::launch(kernel, input, &mut output[1..], shape).unwrap();
            Some(output.split_off(1))
        };
        check_every_kernel(shape, input, " (misaligned)", run, |_, _, _| {});
    }
    for cols in [20000, 20001] {
        let shape = MatrixShape::new(2, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        let want = reference(&input, 2, cols);
        for kernel in [Kernel::Online, Kernel::OnlineStash] {
            let mut output = poison(shape.len());
            emu::launch(kernel, &input, &mut output, shape).unwrap();
            check(kernel.entry_point(), shape, &input, &output, &want);
        }
    }
}

/// The hard cases through every kernel that takes the row length. With one
/// column: a row of `-inf` is NaN, 1e30 gives exactly 1, NaN stays NaN.
#[test]
fn hard_cases_on_the_emulator() {
    let mut rng = rng("emulator softmax hard cases");
    for cols in [1, 33, 1000, 5000] {
        let (input, names) = hard_rows(&mut rng, cols);
        let shape = MatrixShape::new(names.len(), cols).unwrap();
        check_every_kernel(
            shape,
            &input,
            "",
            |k| Some(on_emulator(k, &input, shape)),
            |kernel, output, _| {
                // Spelled out, beyond the reference: NaN rows are NaN everywhere.
                for (r, name) in names.iter().enumerate() {
                    let row = &output[r * cols..(r + 1) * cols];
                    let nan_row = name.starts_with("all -inf") || name.starts_with("one ");
                    assert!(
                        !nan_row || row.iter().all(|v| v.is_nan()),
                        "{}: row '{name}' should be NaN",
                        kernel.entry_point()
                    );
                    if name.starts_with("all 1e30") || name.starts_with("constant") {
                        let u = 1.0 / cols as f32;
                        assert!(row.iter().all(|&v| (v - u).abs() <= 4.0 * f32::EPSILON * u), "{name}: {row:?}");
                    }
                }
            },
        );
    }
}
