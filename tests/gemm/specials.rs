//! Special values: non-finite inputs, values near `FLT_MAX` and
//! subnormals give what an FP32 GEMM gives (its NaNs and infs, its finite
//! values within the version's bound), on the emulator and on the GPU, for
//! the versions `sgemm` runs; and `gemm_pack`'s split never overflows.

use crate::common::*;
use crate::gpu::{GpuBufs, run_gpu};
use crate::reference::{Case, peaks_magnitude, reference};
use crate::{fixup_steps, split_k_steps};
use coalesce::gemm::{self, AlphaBeta, Variant};
use rand::Rng;
use rand::rngs::StdRng;

/// A NaN whose payload lies only in the low 13 bits: rounded or truncated
/// to TF32 (10 mantissa bits) it would read as inf.
const LOW_NAN: u32 = 0x7f80_0001;
/// The largest f32 (`0x7f7f_ffff`), whose TF32 rounding to nearest is inf.
const BIG: f32 = f32::MAX;
/// Shapes for the special values: step 13's edge blocks (128x128 tiles: a
/// second block row of 2 rows, a third block column of 3), and a small one
/// where every special lands in one tile, and one whose `K` steps 15 and 16
/// split in two runs (`split_k.rs`), the marks raised from both (on the
/// emulator only those two run it: the others' paths are the first two
/// shapes').
/// `K >= 9`: the huge values of `A` and `B` sit at different depths
/// (`with_huge`).
const SPECIAL_SHAPES: [(usize, usize, usize); 3] = [(130, 259, 33), (5, 3, 9), SPLIT_SHAPE];
const SPLIT_SHAPE: (usize, usize, usize) = (130, 100, 600);

/// Element `(i, p)` of an `r x c` matrix, the indices wrapped into it (the
/// positions below are for the large shape; on a small one they still land).
fn at(r: usize, c: usize, i: usize, p: usize) -> usize {
    i % r * c + p % c
}

/// Non-finite values at odd positions of `A` and `B` (and of `C0` when it is
/// read): rows of `A` and columns of `B` in the edge blocks, `inf * 0`, `inf
/// - inf` within a row, NaNs of both signs and a low-payload NaN.
fn with_non_finite(case: &mut Case) {
    let (m, n, k) = (case.shape.m(), case.shape.n(), case.shape.k());
    let (inf, nan) = (f32::INFINITY, f32::from_bits(LOW_NAN));
    for (i, p, x) in [(1, 5, inf), (129, 32, -inf), (77, 0, nan), (40, k - 1, -f32::NAN), (60, 2, inf), (60, 3, -inf)] {
        case.a[at(m, k, i, p)] = x;
    }
    for (p, j, x) in [(7, 258, inf), (k - 1, 3, nan), (0, 130, -inf), (5, 100, 0.0), (k / 2, 201, -f32::NAN)] {
        case.b[at(k, n, p, j)] = x;
    }
    if case.s.beta != 0.0 {
        for (i, j, x) in [(1, 10, inf), (2, 11, -inf), (129, 200, nan), (60, 1, -inf)] {
            case.c0[at(m, n, i, j)] = x;
        }
    }
}

/// `A` and `B` in `(-0.5, 0.5)` with `±FLT_MAX` and the f32s either side of
/// TF32's rounding to inf: no product or sum overflows. At most one huge
/// value per row of `A` and per column of `B` (on both shapes: the rows
/// differ mod 5), at depths that differ between `A` and `B`: no two meet
/// in one term, and the two huge terms of one sum stay below `FLT_MAX`.
fn with_huge(case: &mut Case) {
    let (m, n, k) = (case.shape.m(), case.shape.n(), case.shape.k());
    for x in case.a.iter_mut().chain(case.b.iter_mut()) {
        *x *= 0.5;
    }
    let below = f32::from_bits(0x7f7f_efff); // rounds to nearest TF32 below FLT_MAX
    let rounds_up = f32::from_bits(0x7f7f_f000); // the smallest that rounds to inf
    for (i, p, x) in [(3, 1, BIG), (129, 2, -BIG), (66, 3, below), (2, 3, -rounds_up)] {
        case.a[at(m, k, i, p)] = x;
    }
    for (p, j, x) in [(0, 258, BIG), (k / 2, 7, -BIG), (k - 1, 128, rounds_up), (k - 1, 2, below)] {
        case.b[at(k, n, p, j)] = x;
    }
}

/// Subnormal inputs that matter: a row of `A` of subnormals (and one of
/// normals below `2^-115`, whose TF32 `lo` halves are subnormal) against a
/// column of `B` scaled by `2^60`, and a column of `B` of subnormals
/// against a row of `A` so scaled (where the two scaled ones meet, no
/// overflow).
fn with_subnormals(rng: &mut StdRng, case: &mut Case) {
    let (m, n, k) = (case.shape.m(), case.shape.n(), case.shape.k());
    let mut sub = || f32::from_bits(rng.random_range(1..0x80_0000u32) | rng.random::<u32>() & 0x8000_0000);
    let big = f32::powi(2.0, 60);
    for p in 0..k {
        case.a[at(m, k, 11, p)] = sub();
        case.b[at(k, n, p, 21)] = sub();
        case.a[at(m, k, 13, p)] *= f32::powi(2.0, -116);
        case.b[at(k, n, p, 17)] *= big;
        case.a[at(m, k, 12, p)] *= big;
    }
}

/// The references of the special-value tests, per element of `C`: an FP32
/// FMA GEMM's result (one FMA per term in order, then `alpha * dot + beta *
/// c0`), whose non-finite pattern is the one to match; the exact result
/// and the magnitude its bound scales (as [`reference`]); and the absolute
/// slack that subnormals may take, `|alpha| sum_k (d(a) |b| + |a| d(b) + 4 *
/// 2^-126)`, `d(x) = 2^-126` for `0 < |x| < 2^-115`: a TF32 operand (or its
/// `lo` half) in the subnormal range may be flushed by the tensor cores,
/// and a product of halves may underflow (docs/gemm.md).
pub(crate) struct SpecialRef {
    fp32: Vec<f32>,
    want: Vec<f64>,
    mag: Vec<f64>,
    slack: Vec<f64>,
}

pub(crate) fn special_reference(case: &Case) -> SpecialRef {
    let (m, n, k) = (case.shape.m(), case.shape.n(), case.shape.k());
    let (want, mag) = reference(case, None);
    let tiny = f64::powi(2.0, -126);
    let d = |x: f32| if x != 0.0 && x.abs() < f32::powi(2.0, -115) { tiny } else { 0.0 };
    let s = case.s;
    let mut fp32 = vec![0.0f32; m * n];
    let mut slack = vec![0.0f64; m * n];
    std::thread::scope(|sc| {
        let rows = m.div_ceil(16).max(1);
        for ((r, f), sl) in (0..m).step_by(rows).zip(fp32.chunks_mut(rows * n)).zip(slack.chunks_mut(rows * n)) {
            sc.spawn(move || {
                for (e, (f, sl)) in f.iter_mut().zip(sl).enumerate() {
                    let (i, j) = (r + e / n, e % n);
                    let (mut dot, mut extra) = (0.0f32, 0.0f64);
                    for p in 0..k {
                        let (a, b) = (case.a[i * k + p], case.b[p * n + j]);
                        dot = a.mul_add(b, dot);
                        if a.is_finite() && b.is_finite() {
                            extra += d(a) * b.abs() as f64 + a.abs() as f64 * d(b) + 4.0 * tiny;
                        }
                    }
                    let old = if s.beta == 0.0 { 0.0 } else { s.beta * case.c0[i * n + j] };
                    *f = if s.beta == 0.0 { s.alpha * dot } else { s.alpha * dot + old };
                    *sl = s.alpha.abs() as f64 * extra;
                }
            });
        }
    });
    SpecialRef { fp32, want, mag, slack }
}

/// Fails unless `got` has FP32's non-finite pattern (NaN where the FP32
/// reference is NaN, the same inf where it is inf) and its finite values
/// lie within `v`'s bound plus the subnormal slack of the exact result;
/// returns the counts of NaN, inf and finite outputs.
pub(crate) fn check_fp32_semantics(
    v: Variant, what: &str, case: &Case, r: &SpecialRef, got: &[f32],
) -> (usize, usize, usize) {
    let (n, factor) = (case.shape.n(), v.error_bound(case.shape.k()));
    let peaks = v.geometry().precision.bounds_peaks().then(|| peaks_magnitude(v, case));
    let mut counts = (0, 0, 0);
    for (e, &g) in got.iter().enumerate() {
        let (f, w) = (r.fp32[e], r.want[e]);
        // A step on scaled operands keeps FP32's bound on subnormals too,
        // but for the rounding of a result in the subnormal range (which
        // FP32's own takes: two of its ulps, 2^-148).
        let slack = if v.geometry().feed.is_some_and(|f| f.scaled) { f64::powi(2.0, -148) } else { r.slack[e] };
        let bound = factor * peaks.as_ref().map_or(r.mag[e], |p| p((e / n, e % n))) + slack;
        let ok = if f.is_nan() {
            g.is_nan()
        } else if f.is_infinite() {
            g == f
        } else {
            g.is_finite() && (g as f64 - w).abs() <= bound
        };
        assert!(
            ok,
            "{what} on {} {:?}: C[{}][{}] = {g} (bits {:#x}), FP32 gives {f}, exact {w:e} within {bound:.3e}",
            case.shape,
            case.s,
            e / n,
            e % n,
            g.to_bits()
        );
        if g.is_nan() {
            counts.0 += 1
        } else if g.is_infinite() {
            counts.1 += 1
        } else {
            counts.2 += 1
        }
    }
    counts
}

/// The three kinds of special inputs on `shape`, with the product (C
/// poisoned) and an update whose `C0` holds specials too; and the
/// non-finite inputs under an inf or NaN `alpha`, which makes every
/// element of `C` inf or NaN (the finite inputs made positive, so that no
/// dot product lies near 0, where the sign of `alpha * dot` would be the
/// summation order's).
pub(crate) fn special_cases(rng: &mut StdRng, dims: (usize, usize, usize)) -> Vec<(&'static str, Case)> {
    let mut out = Vec::new();
    for s in [AlphaBeta::PRODUCT, AlphaBeta::new(1.5, -0.75)] {
        let mut c = Case::new(rng, dims, s);
        with_non_finite(&mut c);
        out.push(("non-finite", c));
    }
    for s in [AlphaBeta::new(f32::INFINITY, 1.0), AlphaBeta::new(f32::NEG_INFINITY, 0.5), AlphaBeta::new(f32::NAN, 0.0)]
    {
        let mut c = Case::new(rng, dims, s);
        for x in c.a.iter_mut().chain(c.b.iter_mut()) {
            *x = x.abs() + 0.125;
        }
        with_non_finite(&mut c);
        out.push(("alpha", c));
    }
    let mut c = Case::new(rng, dims, AlphaBeta::new(1.0, 0.5));
    with_huge(&mut c);
    out.push(("huge", c));
    let mut c = Case::new(rng, dims, AlphaBeta::PRODUCT);
    with_subnormals(rng, &mut c);
    out.push(("subnormal", c));
    out
}

#[test]
fn special_values_give_fp32_results_on_the_emulator() {
    let mut rng = rng("emulator gemm specials");
    for dims in SPECIAL_SHAPES {
        // What `sgemm` may run or has run, and the other steps that fix
        // up; at the split shape, the steps that split it.
        let steps = if dims == SPLIT_SHAPE { split_k_steps() } else { fixup_steps() };
        for (kind, case) in special_cases(&mut rng, dims) {
            let r = special_reference(&case);
            for &v in &steps {
                let c = case.on_emulator(v);
                let (nan, inf, fin) = check_fp32_semantics(v, v.name(), &case, &r, &c);
                eprintln!("emulator {:>16} {kind:>10} {}: {nan} NaN, {inf} inf, {fin} finite", v.name(), case.shape);
            }
        }
    }
}

/// The split of `gemm_pack`: finite halves for every finite input, `hi`
/// truncated only where rounding would pass `FLT_MAX`, 22 bits kept.
#[test]
fn the_pack_split_never_overflows() {
    use coalesce::kernels::gemm::pack::split;
    use coalesce::kernels::gemm::split_tf32;
    for x in [BIG, -BIG, f32::from_bits(0x7f7f_f000), f32::from_bits(0x7f7f_efff), 1.0, -3.25e-20, 1.0e30] {
        let (hi, lo) = split(x);
        assert!(hi.is_finite() && lo.is_finite(), "{x:e}: {hi:e} + {lo:e}");
        assert!(
            hi.abs() <= x.abs() || split_tf32(x) == (hi, lo),
            "{x:e}: hi {hi:e} rounds up and differs from split_tf32"
        );
        let err = (x as f64 - hi as f64 - lo as f64).abs();
        assert!(err <= f64::powi(2.0, -22) * x.abs() as f64, "{x:e}: {hi:e} + {lo:e} off by {err:e}");
    }
    assert_eq!(split(BIG).0.to_bits(), 0x7f7f_e000, "truncated");
    // Below FLT_MAX's rounding, the same halves as steps 10 and 11.
    let mut rng = rng("pack split");
    for _ in 0..10_000 {
        let x = f32::from_bits(rng.random_range(0..0x7f7f_f000u32) | rng.random::<u32>() & 0x8000_0000);
        assert_eq!(split(x), split_tf32(x), "{x:e}");
    }
    // Subnormals keep their bits from 2^-136 up; below 2^-137 they split into zeros.
    assert_eq!(split(f32::powi(2.0, -136)), (f32::powi(2.0, -136), 0.0));
    assert_eq!(split(f32::from_bits(0x0fff)), (0.0, 0.0));
}

/// Step 15's split: the tensor cores read `hi = trunc(x)` (the f32's top 19
/// bits) and the block writes `lo = low_half(x)`: a TF32 value, finite for
/// every finite `x` (`FLT_MAX` included: truncation never rounds up), and
/// `|x - hi - lo| <= 2^-21 |x|`; subnormals keep their bits from `2^-136` up.
#[test]
fn the_direct_split_is_exact_to_2_pow_21() {
    use coalesce::kernels::gemm::low_half;
    let trunc = |x: f32| f32::from_bits(x.to_bits() & 0xffff_e000);
    let check = |x: f32| {
        let (hi, lo) = (trunc(x), low_half(x));
        assert!(lo.is_finite() && lo.to_bits() & 0x1fff == 0, "{x:e}: lo {lo:e} is not a finite TF32 value");
        let err = (x as f64 - hi as f64 - lo as f64).abs();
        let bound = f64::powi(2.0, -21) * x.abs() as f64 + f64::powi(2.0, -137);
        assert!(err <= bound, "{x:e}: {hi:e} + {lo:e} off by {err:e}");
    };
    for x in [BIG, -BIG, f32::from_bits(0x7f7f_f000), 1.0, -3.25e-20, 1.0e30, f32::MIN_POSITIVE, 0.0, -0.0] {
        check(x);
    }
    let mut rng = rng("direct split");
    for _ in 0..100_000 {
        check(f32::from_bits(rng.random_range(0..0x7f80_0000u32) | rng.random::<u32>() & 0x8000_0000));
    }
    assert_eq!(low_half(f32::from_bits(0x0fff)), 0.0, "a subnormal under 2^-137 splits into zeros");
    assert_eq!(low_half(f32::from_bits(0x1000)).to_bits(), 0x2000, "2^-137 rounds up to 2^-136 (ties away)");
}

/// Step 16's power-of-two scaling rounds nothing: with `A` in `(-1, 1)`
/// times `2^-20` (peaks below the window, scaled up) and `B` in `(-1, 1)`
/// times `2^50` (above it, scaled down), `C` is the unscaled operands'
/// `C` (peaks inside the window: the factor 1) times `2^30`, bit for bit.
#[test]
fn scaling_rounds_nothing_on_the_emulator() {
    let mut rng = rng("emulator gemm scaling");
    let plain = Case::new(&mut rng, (130, 260, 300), AlphaBeta::PRODUCT);
    let mut scaled = Case::new(&mut rng, (130, 260, 300), AlphaBeta::PRODUCT);
    scaled.a = plain.a.iter().map(|x| x * 2f32.powi(-20)).collect();
    scaled.b = plain.b.iter().map(|x| x * 2f32.powi(50)).collect();
    let step = Variant::WgmmaSplitA3xTf32;
    let (want, got) = (plain.on_emulator(step), scaled.on_emulator(step));
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!((w * 2f32.powi(30)).to_bits(), g.to_bits(), "element {i}: {w:e} x 2^30 against {g:e}");
    }
}

/// `sgemm` and the versions it may run, on the GPU, with the special values
/// of the emulator's test and at a large shape off the tile; each checked
/// against FP32's non-finite pattern and the exact result.
#[test]
fn special_values_give_fp32_results_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm specials") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm specials");
    let steps: Vec<Variant> = fixup_steps().into_iter().filter(|v| gpu.has_kernel(v.entry_point())).collect();
    for dims in with_large(&SPECIAL_SHAPES, [(1000, 1001, 1003)]) {
        for (kind, case) in special_cases(&mut rng, dims) {
            let r = special_reference(&case);
            let bufs = GpuBufs::new(&gpu, &case, 0);
            for &v in &steps {
                let got = run_gpu(&stream, v, &case, &bufs, 0);
                let (nan, inf, fin) = check_fp32_semantics(v, v.name(), &case, &r, &got);
                eprintln!("gpu {:>16} {kind:>10} {}: {nan} NaN, {inf} inf, {fin} finite", v.name(), case.shape);
            }
            let mut c = gpu.upload(&case.c0).unwrap();
            gemm::sgemm(&stream, &bufs.a, &bufs.b, &mut c, case.shape, case.s).unwrap();
            stream.synchronize().unwrap();
            check_fp32_semantics(gemm::sgemm_variant(&gpu, case.shape), "sgemm", &case, &r, &download(&c));
        }
    }
}
