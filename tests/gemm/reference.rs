//! The f64 reference every GEMM test checks against, and each version's
//! error bound.
//!
//! # The error bound
//!
//! Each output is `c = fl(alpha * fl(sum_k a_ik b_kj) + beta * c0)`, computed
//! in f32 with FMAs, one accumulator per output, `K` terms. The classic
//! bound for a dot product of `K` terms in floating point (Higham, *Accuracy
//! and Stability of Numerical Algorithms*, 3.1), whatever the summation
//! order and with or without FMA, is `|fl(x.y) - x.y| <= gamma_K sum_k
//! |x_k y_k|` with `gamma_K = K u / (1 - K u)` and `u = 2^-24`. Scaling by
//! `alpha`, adding `beta * c0` and rounding adds up to three roundings, so
//!
//! ```text
//! |c - ref| <= gamma_{K+3} * (|alpha| * sum_k |a_ik b_kj| + |beta * c0|)
//! ```
//!
//! where `ref` is the exact result, computed here in f64 from the same f32
//! inputs (its own error, ~K 2^-53, is negligible). The bound grows linearly
//! with `K`: 777 terms allow a relative error (against the sum of absolute
//! terms) of 4.6e-5, 4096 terms 2.4e-4. It is a worst case, so it never
//! fails a correct kernel; a wrong index or a lost tile is an error of order
//! one and fails it at once. The tests also print the largest observed ratio
//! `|c - ref| / bound` per version, typically 0.001-0.03 (random-sign rounding
//! errors grow like sqrt(K), not K).
//!
//! The TF32 step rounds each input to 10 mantissa bits first (round to
//! nearest, unit roundoff `u' = 2^-11`), so each product carries a relative
//! error up to `2u' + u'^2` before any summation; the tensor cores' f32
//! accumulation is not specified to round to nearest, so we allow it twice
//! the FP32 accumulation bound:
//!
//! ```text
//! |c - ref| <= (2^-10 + 2^-22 + 2 gamma_{K+3}) * (|alpha| * sum_k |a_ik b_kj| + |beta * c0|)
//! ```
//!
//! about 1e-3 relative, independent of `K` to first order: TF32 results are
//! good to about three significant digits. The first term is the TF32 unit
//! at work: each operand carries a relative error up to `2^-11`, each
//! product up to `2^-10 + 2^-22`; the `gamma` term, the accumulation's, is
//! what grows with `K`. Steps 8 (`mma.sync`) and 9 (`wgmma`) both round
//! their operands so (`cvt.rna.tf32.f32`) before the tensor cores read them.
//!
//! Step 10 (3xTF32) splits each input `x` into `hi = tf32(x)` and `lo =
//! tf32(x - hi)`, so `|x - hi - lo| <= 2^-22 |x|`, and sums `a_hi b_hi + a_hi
//! b_lo + a_lo b_hi`: each product's relative error is below `3 * 2^-22 (1 +
//! 2^-20)` (the dropped `a_lo b_lo` and the two split residues), the products
//! of TF32 values are exact in f32, and `3 K` of them are accumulated:
//!
//! ```text
//! |c - ref| <= (3 * 2^-22 (1 + 2^-20) + 2 gamma_{3K+3}) * (|alpha| * sum_k |a_ik b_kj| + |beta * c0|)
//! ```
//!
//! the FP32 bound's order (six times it, for the tensor cores' accumulation
//! and the three products per term).
//!
//! Steps 11 and 13 (3xTF32, promoted) have the same split, but the tensor cores sum
//! one 32-deep tile at a time (at most `3 min(K, 32)` products, with twice
//! FP32's accumulation error), and the `ceil(K/32)` partial sums are added
//! in f32, rounded to nearest, before the epilogue's three roundings:
//!
//! ```text
//! |c - ref| <= (3 * 2^-22 (1 + 2^-20) + 2 gamma_{3 min(K,32)} + gamma_{ceil(K/32)+3}) * (|alpha| * sum_k |a_ik b_kj| + |beta * c0|)
//! ```
//!
//! which is below the FP32 bound `gamma_{K+3}` from `K = 256` on (12 times
//! below at 4096), but not for small `K`: at `K = 1` the split's `12 u`
//! alone is three times `gamma_4`, so step 11 does not get the FP32 bound.
//!
//! Step 15 promotes as step 13, but its tensor cores read each high half as
//! `x` truncated to TF32, not rounded: `x = hi + r` with `|r| < 2^-10 |x|`,
//! and `lo = tf32(r)` within `2^-11 |r| < 2^-21 |x|`. The split of `a b`
//! then leaves `2^-21 + 2^-21` (the residues) `+ 2^-20` (the dropped `lo *
//! lo`) of `|a b|`, `2^-19`, in place of `3 * 2^-22 (1 + 2^-20)`; the rest
//! of the bound is step 13's. Step 16 splits `B` as step 15 and `A` as
//! step 13 (`2^-22 + 2^-21 + 2^-21` of `|a b|`, under `2^-19`): it is held
//! to step 15's bound.
//!
//! None of these bounds sees a bias: the tensor cores truncate each 8-deep
//! step's sum into the accumulator, so step 10's error over `K` terms grows
//! like `K` where an FP32 GEMM's grows like `sqrt(K)` in practice, within
//! the worst case all the same. The emulator truncates too (`emu/wgmma.rs`), and
//! `tensor_core_truncation_drifts_with_k_unless_promoted_on_the_emulator`
//! (`tensor_cores.rs`) measures that drift and step 11's fix.

use crate::common::*;
use coalesce::gemm::{AlphaBeta, GemmShape, Precision, Split, Variant};
use coalesce::kernels::gemm::{ozaki, peak_and_sum, peaks_scale};
use rand::Rng;
use rand::rngs::StdRng;

/// `u = 2^-24`, the unit roundoff of f32.
const U: f64 = 1.0 / (1u64 << 24) as f64;

/// Inputs of one case: `A`, `B` and `C0` (random, or NaN when `beta == 0`).
pub struct Case {
    pub shape: GemmShape,
    pub s: AlphaBeta,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub c0: Vec<f32>,
}

impl Case {
    pub fn new(rng: &mut StdRng, (m, n, k): (usize, usize, usize), s: AlphaBeta) -> Case {
        let shape = GemmShape::new(m, n, k).unwrap();
        let mut uniform = |len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
        let (a, b) = (uniform(m * k), uniform(k * n));
        let c0 = if s.beta == 0.0 { poison(m * n) } else { uniform(m * n) };
        Case { shape, s, a, b, c0 }
    }

    /// `C` as version `v` computes it on the emulator, from `C0` and the
    /// case's own scalars.
    pub fn on_emulator(&self, v: Variant) -> Vec<f32> {
        let mut c = self.c0.clone();
        coalesce::gemm::emu::launch(v, &self.a, &self.b, &mut c, self.shape, self.s).unwrap();
        c
    }
}

/// The factor of the error bound (module doc) for version `v` and depth `k`.
fn bound_factor(v: Variant, k: usize) -> f64 {
    let gamma = |n: usize| n as f64 * U / (1.0 - n as f64 * U);
    let split = |s: Split| match s {
        Split::Rounded => 3.0 * f64::powi(2.0, -22) * (1.0 + f64::powi(2.0, -20)),
        Split::TopBits => f64::powi(2.0, -19),
    };
    let want = match v.geometry().precision {
        Precision::Fp32 => gamma(k + 3),
        Precision::Tf32 => f64::powi(2.0, -10) + f64::powi(2.0, -22) + 2.0 * gamma(k + 3),
        Precision::Split3xTf32 { split: s, promoted: false } => split(s) + 2.0 * gamma(3 * k + 3),
        Precision::Split3xTf32 { split: s, promoted: true } => {
            split(s) + 2.0 * gamma(3 * k.min(32)) + gamma(k.div_ceil(32) + 3)
        }
        Precision::Ozaki { moduli } => {
            let bits = f64::powi(2.0, -(ozaki::alpha(moduli as usize, k) as i32));
            let g = bits * (1.0 + k as f64 * bits);
            g + gamma(4) * (1.0 + g)
        }
    };
    assert_eq!(v.error_bound(k), want, "{}: Variant::error_bound and the module doc disagree", v.name());
    want
}

/// The exact result and the magnitude its error bound scales,
/// `|alpha| * sum_k |a_ik b_kj| + |beta * c0|` (see the module doc), for the
/// elements listed in `at` (all of them when `None`). Rows are split over
/// the host's threads.
pub fn reference(case: &Case, at: Option<&[(usize, usize)]>) -> (Vec<f64>, Vec<f64>) {
    let (n, k) = (case.shape.n(), case.shape.k());
    let (alpha, beta) = (case.s.alpha as f64, case.s.beta as f64);
    let one = |i: usize, j: usize| -> (f64, f64) {
        let (mut dot, mut abs) = (0.0f64, 0.0f64);
        for p in 0..k {
            let t = case.a[i * k + p] as f64 * case.b[p * n + j] as f64;
            dot += t;
            abs += t.abs();
        }
        let old = if beta == 0.0 { 0.0 } else { beta * case.c0[i * n + j] as f64 };
        (alpha * dot + old, alpha.abs() * abs + old.abs())
    };
    let points: Vec<(usize, usize)> = match at {
        Some(p) => p.to_vec(),
        None => (0..case.shape.m()).flat_map(|i| (0..n).map(move |j| (i, j))).collect(),
    };
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get()).min(32);
    let chunk = points.len().div_ceil(threads).max(1);
    let mut want = vec![0.0; points.len()];
    let mut bound = vec![0.0; points.len()];
    std::thread::scope(|s| {
        for ((pts, w), b) in points.chunks(chunk).zip(want.chunks_mut(chunk)).zip(bound.chunks_mut(chunk)) {
            s.spawn(move || {
                for ((&(i, j), w), b) in pts.iter().zip(w).zip(b) {
                    (*w, *b) = one(i, j);
                }
            });
        }
    });
    (want, bound)
}

/// The magnitude an Ozaki step's bound scales at element `(i, j)`:
/// `|alpha| (max |a_i.| sum |b_.j| + sum |a_i.| max |b_.j|) + |beta c0|`
/// ([`Variant::error_scale`]), from each row's and column's peak and sum,
/// found once.
pub fn peaks_magnitude(v: Variant, case: &Case) -> impl Fn((usize, usize)) -> f64 + '_ {
    assert!(v.geometry().precision.bounds_peaks(), "{} bounds sum |a b|, not the peaks", v.name());
    let (m, n, k) = (case.shape.m(), case.shape.n(), case.shape.k());
    let (alpha, beta) = (case.s.alpha.abs() as f64, case.s.beta as f64);
    let rows: Vec<_> = (0..m).map(|i| peak_and_sum(case.a[i * k..][..k].iter().copied())).collect();
    let columns: Vec<_> = (0..n).map(|j| peak_and_sum((0..k).map(|h| case.b[h * n + j]))).collect();
    move |(i, j)| {
        let old = if beta == 0.0 { 0.0 } else { (beta * case.c0[i * n + j] as f64).abs() };
        alpha * peaks_scale(rows[i], columns[j]) + old
    }
}

/// Whether `got` is within `bound` of `want` (false for NaN).
fn within(got: f32, want: f64, bound: f64) -> bool {
    (got as f64 - want).abs() <= bound
}

/// Fails with the first element outside its bound (`bound_factor(v) *
/// mag`); returns the largest ratio `|got - want| / bound` (0 where the bound
/// is 0 and the match exact).
pub fn check(v: Variant, case: &Case, at: Option<&[(usize, usize)]>, got: &[f32], want: &[f64], mag: &[f64]) -> f64 {
    let (n, what) = (case.shape.n(), v.name());
    let factor = bound_factor(v, case.shape.k());
    let index = |e: usize| at.map_or((e / n, e % n), |p| p[e]);
    let bound: Vec<f64> = if v.geometry().precision.bounds_peaks() {
        let peaks = peaks_magnitude(v, case);
        (0..got.len()).map(|e| factor * peaks(index(e))).collect()
    } else {
        mag.iter().map(|m| factor * m).collect()
    };
    let mut worst = 0.0f64;
    for (e, ((&g, &w), &b)) in got.iter().zip(want).zip(&bound).enumerate() {
        let err = (g as f64 - w).abs();
        if !within(g, w, b) {
            let bad = got.iter().zip(want).zip(&bound).filter(|((g, w), b)| !within(**g, **w, **b)).count();
            let (i, j) = index(e);
            panic!(
                "{what} on {} {:?}: C[{i}][{j}] = {g} (bits {:#x}), expected {w} within {b:.3e}; {bad} of {} elements wrong",
                case.shape,
                case.s,
                g.to_bits(),
                got.len()
            );
        }
        if b > 0.0 {
            worst = worst.max(err / b);
        }
    }
    worst
}
