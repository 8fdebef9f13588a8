//! Out-of-place launchers refuse outputs that overlap an input.
//!
//! cust's `DeviceSlice::index` takes `&self`, so safe code can hold an input
//! `buf.index(0..n)` and an output `buf.index(32..n + 32)` of one buffer at
//! once. Every launcher compares the device byte ranges and returns
//! `Error::Aliased` for any shared byte, before anything is queued; slices of
//! one buffer that only touch (`0..n` and `n..2n`) are accepted and give the
//! right answer. The in-place entry points stay explicit.

mod common;

use coalesce::copy::{self, Strided};
use coalesce::gemm::{self, AlphaBeta, GemmShape};
use coalesce::{Error, MatrixShape, MatrixView, Result, nested_sin, softmax, transpose};
use common::*;
use cust::memory::{CopyDestination, DeviceSlice};

fn aliased(what: &str, r: Result<()>) {
    match r {
        Err(Error::Aliased { kernel }) => println!("{what}: refused ({kernel})"),
        other => panic!("{what}: expected Error::Aliased, got {other:?}"),
    }
}

/// Input and output windows of one buffer `shift` elements apart, for each
/// shift in `shifts`: 0 (the same range), 1 (one element), 32, and `n - 1`
/// (the last element of one is the first of the other).
fn windows(buf: &DeviceSlice<f32>, n: usize, shift: usize) -> (DeviceSlice<f32>, DeviceSlice<f32>) {
    (buf.index(0..n), buf.index(shift..shift + n))
}

#[test]
fn gpu_every_launcher_refuses_overlapping_ranges() {
    let Some(gpu) = gpu_or_skip("gpu aliasing") else { return };
    let stream = gpu.stream().unwrap();
    let shape = MatrixShape::new(33, 65).unwrap();
    let n = shape.len();
    let buf = gpu.upload(&poison(2 * n + 64)).unwrap();
    for shift in [0, 1, 32, n - 1] {
        let (input, mut output) = windows(&buf, n, shift);
        let (mut o2, mut o3) = (output, output); // DeviceSlice is Copy: the same window
        for variant in transpose::Variant::ALL {
            aliased(
                &format!("transpose {} shift {shift}", variant.name()),
                transpose::launch(&stream, variant, &input, &mut output, shape),
            );
        }
        aliased(&format!("copy shift {shift}"), copy::copy(&stream, &input, &mut output));
        aliased(&format!("cuMemcpyDtoD shift {shift}"), stream.copy(&input, &mut o2));
        for variant in nested_sin::Variant::ALL {
            aliased(
                &format!("nested_sin {} shift {shift}", variant.name()),
                nested_sin::launch(&stream, variant, &input, &mut output),
            );
        }
        aliased(&format!("sin shift {shift}"), nested_sin::sin(&stream, &input, &mut o3));
        for kernel in softmax::Kernel::ALL {
            if shape.cols() as u32 <= kernel.max_cols() {
                aliased(
                    &format!("softmax {kernel:?} shift {shift}"),
                    softmax::launch(&stream, kernel, &input, &mut output, shape),
                );
            }
        }
        aliased(&format!("softmax auto shift {shift}"), softmax::softmax(&stream, &input, &mut output, shape));
        let view = MatrixView::new(&input, shape).unwrap();
        aliased(&format!("contiguous_into shift {shift}"), view.t().contiguous_into(&stream, &mut output));
        aliased(&format!("contiguous_into (copy) shift {shift}"), view.contiguous_into(&stream, &mut output));
    }

    // GEMM: C against A and against B; A and B may share memory (both read).
    let g = GemmShape::new(17, 17, 17).unwrap();
    let m = g.a().len();
    let big = gpu.upload(&vec![0.25f32; 4 * m]).unwrap();
    for variant in gemm::Variant::ALL {
        let (a, b) = (big.index(0..m), big.index(2 * m..3 * m));
        let mut c_over_a = big.index(m - 1..2 * m - 1);
        aliased(
            &format!("gemm {} C over A", variant.name()),
            gemm::launch(&stream, variant, &a, &b, &mut c_over_a, g, AlphaBeta::PRODUCT),
        );
        let mut c_over_b = big.index(2 * m + 5..3 * m + 5);
        aliased(
            &format!("gemm {} C over B", variant.name()),
            gemm::launch(&stream, variant, &a, &b, &mut c_over_b, g, AlphaBeta::PRODUCT),
        );
        let mut c = big.index(3 * m..4 * m);
        gemm::launch(&stream, variant, &a, &a, &mut c, g, AlphaBeta::PRODUCT).expect("A and B may be the same memory");
    }
    stream.synchronize().unwrap();

    // Strided copy: the spans from first to last element decide.
    let src = Strided { offset: 0, stride: 4, len: 10 }; // elements 0..=36
    aliased(
        "copy_strided into its own span",
        copy::copy_strided(&stream, &buf, src, &mut buf.index(..), Strided { offset: 36, stride: 1, len: 10 }),
    );
    copy::copy_strided(&stream, &buf, src, &mut buf.index(..), Strided { offset: 37, stride: 1, len: 10 })
        .expect("a destination past the source's last element is disjoint");
    stream.synchronize().unwrap();
}

/// Windows of one buffer that touch but do not overlap are accepted, and the
/// results are right: the guard elements around the output keep their poison.
#[test]
fn gpu_adjacent_windows_of_one_buffer_work() {
    let Some(gpu) = gpu_or_skip("gpu adjacent windows") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu adjacent windows");
    let shape = MatrixShape::new(33, 65).unwrap();
    let n = shape.len();
    let x = random_matrix(&mut rng, n);
    let mut host = x.clone();
    host.extend(poison(n + 3));
    let buf = gpu.upload(&host).unwrap();
    let input = buf.index(0..n);
    let mut output = buf.index(n + 1..2 * n + 1);
    transpose::vec4(&stream, &input, &mut output, shape).unwrap();
    stream.synchronize().unwrap();
    let mut got = poison(2 * n + 3);
    buf.copy_to(&mut got[..]).unwrap();
    assert_eq!(got[n].to_bits(), POISON_BITS, "the guard before the output");
    assert_eq!(got[2 * n + 1].to_bits(), POISON_BITS, "the guard after the output");
    for r in 0..shape.rows() {
        for c in 0..shape.cols() {
            assert_eq!(got[n + 1 + c * shape.rows() + r], x[r * shape.cols() + c], "({r}, {c})");
        }
    }
    // In place stays explicit, and allowed.
    let mut whole = buf.index(0..n);
    nested_sin::launch_in_place(&stream, nested_sin::Variant::FusedReduced, &mut whole).unwrap();
    stream.synchronize().unwrap();
}
