//! What the GEMM launchers refuse: shapes too large for the API or for
//! the grid, and buffers that do not match the shape; and the shape
//! accessors.

use crate::common::*;
use coalesce::Error;
use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};

/// Too large a matrix is still an error; zero dimensions are not (see
/// `empty_products_are_blas_on_the_emulator`).
#[test]
fn shapes_too_large_are_errors() {
    let e = GemmShape::new(1, 1, u32::MAX as usize + 1).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e}");
    let e = GemmShape::new(0, 1 << 31, 1 << 31).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { rows, .. } if rows == 1 << 31), "B first: {e}");
}

#[test]
fn mismatched_buffers_are_errors_on_the_emulator() {
    let shape = GemmShape::new(17, 33, 65).unwrap();
    let (a, b) = (vec![1.0f32; shape.a().len()], vec![1.0f32; shape.b().len()]);
    let s = AlphaBeta::PRODUCT;
    for v in Variant::ALL {
        let mut c = vec![0.0f32; shape.c().len()];
        let e = gemm::emu::launch(v, &a[1..], &b, &mut c, shape, s).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "A", expected: 1105, actual: 1104, .. }), "{e}");
        let e = gemm::emu::launch(v, &a, &b[..10], &mut c, shape, s).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "B", .. }), "{e}");
        let e = gemm::emu::launch(v, &a, &b, &mut c[..560], shape, s).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "C", expected: 561, actual: 560, .. }), "{e}");
    }
    // A transposed shape is a mismatch too (A is 17x65, not 65x17: same length, so pass B's).
    let mut c = vec![0.0f32; shape.c().len()];
    let e = gemm::emu::launch(Variant::Naive, &b, &b, &mut c, shape, s).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "A", .. }), "{e}");
}

/// `m = 2^24 + 1` needs more than 65535 block rows for every tile height
/// (8 to 256): refused before launch. `n = k = 1` keeps the buffers small.
#[test]
fn shapes_past_the_grid_limit_are_errors_on_the_emulator() {
    let m = (1 << 24) + 1;
    let shape = GemmShape::new(m, 1, 1).unwrap();
    let (a, b) = (vec![1.0f32; m], vec![1.0f32; 1]);
    let mut c = vec![0.0f32; m];
    for v in Variant::ALL {
        let e = gemm::emu::launch(v, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap_err();
        assert!(matches!(e, Error::GridTooLarge { .. }), "{}: {e}", v.name());
    }
}

#[test]
fn shape_accessors() {
    let s = GemmShape::new(2, 3, 4).unwrap();
    assert_eq!((s.m(), s.n(), s.k()), (2, 3, 4));
    let dims = |o: gemm::OperandShape| (o.rows(), o.cols(), o.len(), o.is_empty(), o.to_string());
    assert_eq!(dims(s.a()), (2, 4, 8, false, "2x4".to_owned()));
    assert_eq!(dims(s.b()), (4, 3, 12, false, "4x3".to_owned()));
    assert_eq!(dims(s.c()), (2, 3, 6, false, "2x3".to_owned()));
    assert_eq!(dims(GemmShape::new(0, 3, 5).unwrap().c()), (0, 3, 0, true, "0x3".to_owned()));
    assert_eq!(s.flops(), 48);
    // 2^64 - 2^43 is the last below u64::MAX; 2^91 (each matrix 2^60
    // elements) saturates.
    assert_eq!(GemmShape::new(1 << 21, 1 << 21, (1 << 21) - 1).unwrap().flops(), u64::MAX - (1 << 43) + 1);
    assert_eq!(GemmShape::new(1 << 21, 1 << 21, 1 << 21).unwrap().flops(), u64::MAX);
    assert_eq!(GemmShape::new(1 << 30, 1 << 30, 1 << 30).unwrap().flops(), u64::MAX);
    assert_eq!(s.to_string(), "2x3x4");
}

#[test]
fn bad_input_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm bad input") else { return };
    let stream = gpu.stream().unwrap();
    let shape = GemmShape::new(17, 33, 65).unwrap();
    let a = gpu.upload(&vec![1.0f32; shape.a().len()]).unwrap();
    let b = gpu.upload(&vec![1.0f32; shape.b().len()]).unwrap();
    let mut short = gpu.alloc::<f32>(shape.c().len() - 1).unwrap();
    let e = gemm::sgemm(&stream, &a, &b, &mut short, shape, AlphaBeta::PRODUCT).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "C", .. }), "{e}");
    let e = gemm::naive(&stream, &b, &b, &mut short, shape, AlphaBeta::PRODUCT).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "A", .. }), "{e}");

    let tall = GemmShape::new((1 << 24) + 1, 1, 1).unwrap();
    let a = gpu.alloc::<f32>(tall.a().len()).unwrap();
    let one = gpu.alloc::<f32>(1).unwrap();
    let mut c = gpu.alloc::<f32>(tall.c().len()).unwrap();
    for v in Variant::ALL {
        let e = gemm::launch(&stream, v, &a, &one, &mut c, tall, AlphaBeta::PRODUCT).unwrap_err();
        assert!(matches!(e, Error::GridTooLarge { .. }), "{}: {e}", v.name());
    }
}
