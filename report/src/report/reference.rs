//! The f64 references the report checks every kernel against before timing
//! it, shared by the GPU run and `--emulate`.

use coalesce::gemm::{Precision, Variant as Gemm};
use coalesce::nested_sin::Variant as Sin;

/// Whether `got` is `sin(sin(sin(sin(x))))` within the version's accuracy:
/// relative 1e-6 for the accurate versions (their worst case is about
/// 3e-7; `poly`'s 4.5 ulp bound is at most 5.4e-7), absolute 2e-4 for `fast` (sin.approx, 3.7e-5 per sin for
/// |x| <= 300, four times).
pub fn nested_sin_ok(v: Sin, x: f32, got: f32) -> bool {
    let want = (0..4).fold(x as f64, |y, _| y.sin());
    let (tol, floor) = if v == Sin::Fast { (2e-4, 1.0) } else { (1e-6, 1e-30) };
    let err = (got as f64 - want).abs();
    !err.is_nan() && err <= tol * want.abs().max(floor)
}

/// Whether `got` is element (i, j) of `a (m x k) * b (k x n)`, row-major,
/// within a bound on `sum |a_it b_tj|` (on the operands' peaks for Ozaki,
/// [`Gemm::error_scale`]): 1e-5 for FP32 (K rounding errors of 2^-24 each,
/// K <= 8192), 1e-2 for TF32 (10-bit mantissa inputs).
pub fn gemm_element_ok(
    v: Gemm, a: &[f32], b: &[f32], (k, n): (usize, usize), (i, j): (usize, usize), got: f32,
) -> bool {
    let terms = (0..k).map(|t| a[i * k + t] as f64 * b[t * n + j] as f64);
    let want: f64 = terms.sum();
    let size = v.error_scale(a[i * k..][..k].iter().copied(), (0..k).map(|t| b[t * n + j]));
    let rel = match v.geometry().precision {
        Precision::Fp32 | Precision::Split3xTf32 { promoted: true, .. } => 1e-5,
        // The tensor cores' accumulator truncates: the error grows with
        // `K`. Ozaki's bound is of its operands' peaks (`size` is so).
        Precision::Split3xTf32 { promoted: false, .. } | Precision::Ozaki { .. } => v.error_bound(k),
        Precision::Tf32 => 1e-2,
    };
    let err = (got as f64 - want).abs();
    !err.is_nan() && err <= rel * size
}

/// The first (row, col) of the `cols x rows` output that is not the
/// transpose of the `rows x cols` input, compared bit for bit.
pub fn transpose_mismatch(input: &[f32], output: &[f32], rows: usize, cols: usize) -> Option<(usize, usize)> {
    output.iter().enumerate().find_map(|(i, g)| {
        let (c, r) = (i / rows, i % rows);
        (g.to_bits() != input[r * cols + c].to_bits()).then_some((c, r))
    })
}
