//! Strided matrix views: `.t()` is shape-and-stride arithmetic (checked
//! without a GPU), `.contiguous()` is a transpose (checked against an exact
//! reference on the CPU emulator always, and on the GPU when there is one).
//!
//! Materialising moves bits and computes nothing, so the tolerance is 0 ulp.

mod common;

use coalesce::view::{self, StridedLayout};
use coalesce::{Error, MatrixShape, MatrixView};
use common::*;

/// Odd shapes: a single element, a single row, a single column, and sizes
/// that are not multiples of the 32x32 tile in either direction.
const SHAPES: [(usize, usize); 5] = [(1, 1), (1, 1000), (1000, 1), (33, 65), (1023, 517)];

fn exact(input: &[f32]) -> Vec<f64> {
    input.iter().map(|&x| x as f64).collect()
}

#[test]
fn t_swaps_shape_and_strides_and_is_an_involution() {
    for (rows, cols) in SHAPES {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let a = StridedLayout::row_major(shape);
        assert_eq!((a.shape(), a.strides()), (shape, (cols, 1)));
        assert!(a.is_contiguous());

        let t = a.t();
        assert_eq!((t.shape(), t.strides()), (shape.t(), (1, cols)), "{shape}");
        assert_eq!(t.storage_shape(), shape);
        // Like PyTorch: only a vector's transpose is still contiguous.
        assert_eq!(t.is_contiguous(), rows == 1 || cols == 1, "{shape}");
        assert_eq!(t.t(), a, "{shape}");
        assert_eq!(t.t().t(), t, "{shape}");
    }
}

#[test]
fn offsets_agree_with_the_logical_element() {
    let mut rng = rng("view offsets");
    for (shape, data) in random_matrices(&mut rng, &SHAPES) {
        let (rows, cols) = (shape.rows(), shape.cols());
        let (a, t) = (StridedLayout::row_major(shape), StridedLayout::row_major(shape).t());
        for r in 0..rows {
            for c in 0..cols {
                let element = data[r * cols + c].to_bits();
                assert_eq!(data[a.offset(r, c).unwrap()].to_bits(), element, "{shape} ({r}, {c})");
                // Logical (c, r) of the transpose is (r, c) of the original.
                assert_eq!(data[t.offset(c, r).unwrap()].to_bits(), element, "{shape}.t() ({c}, {r})");
            }
        }
        assert_eq!(a.offset(rows, 0), None);
        assert_eq!(a.offset(0, cols), None);
        assert_eq!(t.offset(cols, 0), None);
        assert_eq!(t.offset(0, rows), None);
    }
}

#[test]
fn contiguous_on_the_emulator_matches_reference_at_odd_shapes() {
    let mut rng = rng("emulator contiguous");
    for (shape, input) in random_matrices(&mut rng, &SHAPES) {
        let a = StridedLayout::row_major(shape);

        let want_t = transpose_reference(&input, shape.rows(), shape.cols());
        let mut output = poison(shape.len());
        view::emu::contiguous(a.t(), &input, &mut output).unwrap();
        check_exact("emu contiguous of .t()", shape.t(), &output, &want_t);

        for (what, layout) in [("row-major", a), (".t().t()", a.t().t())] {
            let mut output = poison(shape.len());
            view::emu::contiguous(layout, &input, &mut output).unwrap();
            check_exact(&format!("emu contiguous of {what}"), shape, &output, &exact(&input));
        }
    }
}

#[test]
fn length_mismatch_is_an_error_on_the_emulator() {
    let shape = MatrixShape::new(33, 65).unwrap();
    let input = vec![1.0f32; shape.len()];
    for layout in [StridedLayout::row_major(shape), StridedLayout::row_major(shape).t()] {
        let mut short = vec![0.0f32; shape.len() - 1];
        let e = view::emu::contiguous(layout, &input, &mut short).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 2145, actual: 2144, .. }), "{e}");
        let mut out = vec![0.0f32; shape.len()];
        let e = view::emu::contiguous(layout, &input[1..], &mut out).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "view buffer", expected: 2145, actual: 2144, .. }), "{e}");
    }
}

/// Views of empty matrices are contiguous either way, as every empty
/// PyTorch tensor is: materialising one copies nothing and launches nothing.
#[test]
fn empty_views_are_contiguous_and_materialise_to_nothing_on_the_emulator() {
    for shape in empty_shapes() {
        let a = StridedLayout::row_major(shape);
        for layout in [a, a.t(), a.t().t()] {
            assert!(layout.is_contiguous(), "{layout:?}");
            assert_eq!(layout.offset(0, 0), None, "{layout:?}");
            view::emu::contiguous(layout, &[], &mut []).unwrap_or_else(|e| panic!("{layout:?}: {e}"));
            let e = view::emu::contiguous(layout, &[], &mut [0.0]).unwrap_err();
            assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 0, actual: 1, .. }), "{e}");
        }
        assert_eq!((a.t().shape(), a.t().strides()), (shape.t(), (1, shape.cols())));
    }
}

#[test]
fn empty_views_materialise_to_nothing_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu empty views") else { return };
    let stream = gpu.stream().unwrap();
    for shape in empty_shapes() {
        empty_is_a_no_op(&stream, &format!("view of {shape}"), |input, output| {
            let a = MatrixView::new(input, shape)?;
            for v in [a, a.t()] {
                assert!(v.is_contiguous(), "{shape}");
                let materialised = v.contiguous(&stream)?;
                assert!(!materialised.is_owned() && materialised.is_empty(), "{shape}: a kernel ran");
                v.contiguous_into(&stream, output)?;
            }
            Ok(())
        });
    }
}

#[test]
fn contiguous_on_the_gpu_matches_reference() {
    let Some(gpu) = gpu_or_skip("gpu contiguous") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu contiguous");
    let shapes = with_large(&SHAPES, [(8191, 2049)]);
    for (shape, input) in random_matrices(&mut rng, &shapes) {
        let (rows, cols) = (shape.rows(), shape.cols());
        let want_t = transpose_reference(&input, rows, cols);
        let d_in = gpu.upload(&input).unwrap();
        let a = MatrixView::new(&d_in, shape).unwrap();
        let t = a.t();
        assert_eq!((t.shape(), t.strides()), (shape.t(), (1, cols)));

        let materialised = t.contiguous(&stream).unwrap();
        assert_eq!(materialised.is_owned(), !(rows == 1 || cols == 1), "{shape}");
        stream.synchronize().unwrap();
        check_exact("gpu .t().contiguous()", shape.t(), &download(&materialised), &want_t);

        let mut into = gpu.upload(&poison(shape.len())).unwrap();
        t.contiguous_into(&stream, &mut into).unwrap();
        stream.synchronize().unwrap();
        check_exact("gpu .t().contiguous_into()", shape.t(), &download(&into), &want_t);

        let back = t.t().contiguous(&stream).unwrap();
        assert!(!back.is_owned(), "{shape}: a row-major view needs no kernel");
        assert_eq!(back.as_device_ptr(), d_in.as_device_ptr());
        check_exact("gpu .t().t().contiguous()", shape, &download(&back), &exact(&input));

        let mut copy = gpu.upload(&poison(shape.len())).unwrap();
        a.contiguous_into(&stream, &mut copy).unwrap();
        let owned = back.into_owned(&stream).unwrap();
        stream.synchronize().unwrap();
        check_exact("gpu contiguous_into of a row-major view", shape, &download(&copy), &exact(&input));
        check_exact("gpu into_owned", shape, &download(&owned), &exact(&input));
    }
}

#[test]
fn bad_view_input_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu view bad input") else { return };
    let stream = gpu.stream().unwrap();
    let shape = MatrixShape::new(33, 65).unwrap();
    let data = gpu.upload(&vec![1.0f32; 2 * shape.len()]).unwrap();

    let e = MatrixView::new(&data, shape).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "view buffer", expected: 2145, actual: 4290, .. }), "{e}");

    let first = data.index(..shape.len());
    let view = MatrixView::new(&first, shape).unwrap().t();
    let mut short = gpu.alloc::<f32>(shape.len() - 1).unwrap();
    let e = view.contiguous_into(&stream, &mut short).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "output", .. }), "{e}");

    // `DeviceSlice` is `Copy`: safe code can write over the view's own memory.
    for start in [0, 1, shape.len() - 1] {
        let mut overlapping = data.index(start..start + shape.len());
        for v in [view, view.t()] {
            let e = v.contiguous_into(&stream, &mut overlapping).unwrap_err();
            assert!(matches!(e, Error::Aliased { .. }), "{e}");
        }
    }
    let mut disjoint = data.index(shape.len()..);
    view.contiguous_into(&stream, &mut disjoint).unwrap();

    // Past the grid limit of the kernel that materialises (`Variant::BEST`).
    let (long, _) = past_the_grid_y(coalesce::transpose::Variant::BEST, 2);
    let big = gpu.alloc::<f32>(long.len()).unwrap();
    let e = MatrixView::new(&big, long).unwrap().t().t().t().contiguous(&stream).unwrap_err();
    assert!(matches!(e, Error::GridTooLarge { .. }), "{e}");
    stream.synchronize().unwrap();
}
