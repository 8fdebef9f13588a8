//! Every GEMM version against a float64 reference: on the CPU emulator
//! (always, in CI) and on the GPU (skipped when none is present).
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
//! None of these bounds sees a bias: the tensor cores truncate each 8-deep
//! step's sum into the accumulator, so step 10's error over `K` terms grows
//! like `K` where an FP32 GEMM's grows like `sqrt(K)` in practice, within
//! the worst case all the same. The emulator truncates too (`emu.rs`), and
//! `tensor_core_truncation_drifts_with_k_unless_promoted_on_the_emulator`
//! measures that drift and step 11's fix.
//!
//! Steps 1-8 also run under the emulator's checker with its memory counters
//! (`steps_1_to_8_pass_the_checker_at_odd_shapes`), and
//! `the_ladder_in_the_memory_counters_on_the_emulator` reads in the counters
//! what each step changes: sectors per global request, wavefronts per
//! shared request.

mod common;

use coalesce::Error;
use coalesce::emu::{Counters, Op};
use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};
use common::*;
use cust::memory::CopyDestination;
use rand::Rng;
use rand::rngs::StdRng;

/// Emulator shapes `(m, n, k)`: a single element, odd sizes below one tile
/// in every dimension, odd sizes spanning several tiles, and one with every
/// dimension a multiple of 4 but not of a tile (vector paths on interior
/// tiles, scalar paths on the edges).
const EMU_SHAPES: [(usize, usize, usize); 4] = [(1, 1, 1), (17, 33, 65), (70, 45, 130), (132, 260, 68)];

/// Shapes for step 7's three ways of loading a block (INTERIOR, EDGE,
/// CHECKED in `07_double_buffered.rs`): `N < 4` over several `K` tiles
/// (checked loads), a vector crossing `N` near the end of `B` (the shifted
/// window of `load_b_clamped`: shifts 1, 2 and 3), `N = 4` exactly, every
/// `K` residue from 1 to 7 and none, and blocks past `M` and `N` in a
/// second block row and column.
const EDGE_SHAPES: [(usize, usize, usize); 9] = [
    (5, 3, 21),
    (9, 1, 40),
    (2, 6, 9),
    (3, 4, 17),
    (7, 7, 26),
    (130, 259, 23),
    (129, 257, 16),
    (33, 5, 44),
    (12, 263, 11),
];

/// Shapes for steps 9-13 (`wgmma`, 128x256 tiles, 128x128 for steps 11 and 13, 32
/// deep): `K = 1`, `N < 4` (checked loads of `B` everywhere), `K` below, at
/// and past one tile with residues, `M` and `N` just past a tile (a second
/// block row and column that is almost empty), `N` a multiple of 4 just
/// past 128 (step 11's second block column, vector rows, not whole), and a
/// shape whose interior blocks take the vector paths.
const WGMMA_SHAPES: [(usize, usize, usize); 9] = [
    (1, 1, 1),
    (5, 3, 1),
    (9, 1, 40),
    (3, 2, 33),
    (130, 259, 33),
    (129, 257, 64),
    (64, 300, 7),
    (192, 132, 97),
    (256, 512, 96),
];

/// The tensor-core steps that run `wgmma` (`sm_90a` only); the last two
/// read their operands through TMA tensor maps.
const WGMMA_STEPS: [Variant; 5] =
    [Variant::Wgmma, Variant::Wgmma3xTf32, Variant::WgmmaPromoted, Variant::WgmmaTma, Variant::WgmmaTma3xTf32];

/// GPU shapes: the emulator's and large odd ones.
const GPU_SHAPES: [(usize, usize, usize); 7] =
    [(1, 1, 1), (17, 33, 65), (70, 45, 130), (132, 260, 68), (1000, 3000, 777), (4097, 4095, 513), (1024, 1024, 1024)];

/// The epilogue cases: the plain product (C is NaN-poisoned and must not be
/// read), a scaled product (also poisoned), the general update, and
/// `alpha = 0` (C scaled only).
const SCALARS: [AlphaBeta; 4] =
    [AlphaBeta::PRODUCT, AlphaBeta::new(0.5, 0.0), AlphaBeta::new(1.5, -0.75), AlphaBeta::new(0.0, 2.0)];

/// `u = 2^-24`, the unit roundoff of f32.
const U: f64 = 1.0 / (1u64 << 24) as f64;

/// Inputs of one case: `A`, `B` and `C0` (random, or NaN when `beta == 0`).
struct Case {
    shape: GemmShape,
    s: AlphaBeta,
    a: Vec<f32>,
    b: Vec<f32>,
    c0: Vec<f32>,
}

impl Case {
    fn new(rng: &mut StdRng, (m, n, k): (usize, usize, usize), s: AlphaBeta) -> Case {
        let shape = GemmShape::new(m, n, k).unwrap();
        let mut uniform = |len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
        let (a, b) = (uniform(m * k), uniform(k * n));
        let c0 = if s.beta == 0.0 { poison(m * n) } else { uniform(m * n) };
        Case { shape, s, a, b, c0 }
    }
}

/// The factor of the error bound (module doc) for version `v` and depth `k`.
fn bound_factor(v: Variant, k: usize) -> f64 {
    let gamma = |n: usize| n as f64 * U / (1.0 - n as f64 * U);
    let want = match v {
        Variant::Wgmma3xTf32 => 3.0 * f64::powi(2.0, -22) * (1.0 + f64::powi(2.0, -20)) + 2.0 * gamma(3 * k + 3),
        Variant::WgmmaPromoted | Variant::WgmmaTma3xTf32 => {
            3.0 * f64::powi(2.0, -22) * (1.0 + f64::powi(2.0, -20))
                + 2.0 * gamma(3 * k.min(32))
                + gamma(k.div_ceil(32) + 3)
        }
        v if v.is_tf32() => f64::powi(2.0, -10) + f64::powi(2.0, -22) + 2.0 * gamma(k + 3),
        _ => gamma(k + 3),
    };
    assert_eq!(v.error_bound(k), want, "{}: Variant::error_bound and the module doc disagree", v.name());
    want
}

/// The exact result and the magnitude its error bound scales,
/// `|alpha| * sum_k |a_ik b_kj| + |beta * c0|` (see the module doc), for the
/// elements listed in `at` (all of them when `None`). Rows are split over
/// the host's threads.
fn reference(case: &Case, at: Option<&[(usize, usize)]>) -> (Vec<f64>, Vec<f64>) {
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

/// Whether `got` is within `bound` of `want` (false for NaN).
fn within(got: f32, want: f64, bound: f64) -> bool {
    (got as f64 - want).abs() <= bound
}

/// Fails with the first element outside its bound (`bound_factor(v) *
/// mag`); returns the largest ratio `|got - want| / bound` (0 where the bound
/// is 0 and the match exact).
fn check(v: Variant, case: &Case, at: Option<&[(usize, usize)]>, got: &[f32], want: &[f64], mag: &[f64]) -> f64 {
    let (n, what) = (case.shape.n(), v.name());
    let factor = bound_factor(v, case.shape.k());
    let bound: Vec<f64> = mag.iter().map(|m| factor * m).collect();
    let index = |e: usize| at.map_or((e / n, e % n), |p| p[e]);
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

#[test]
fn every_variant_on_the_emulator_at_odd_shapes() {
    let mut rng = rng("emulator gemm");
    for (si, &dims) in EMU_SHAPES.iter().enumerate() {
        // Every epilogue on the small shapes, the plain product on the rest.
        let cases: &[AlphaBeta] = if si <= 1 { &SCALARS } else { &SCALARS[..1] };
        for &s in cases {
            let case = Case::new(&mut rng, dims, s);
            let (want, bound) = reference(&case, None);
            for v in Variant::ALL {
                let t0 = std::time::Instant::now();
                let mut c = case.c0.clone();
                gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, s).unwrap();
                let worst = check(v, &case, None, &c, &want, &bound);
                eprintln!(
                    "emulator {:>16} {:>12} {s:?}: max error / bound {worst:.2e} ({:.2} s)",
                    v.name(),
                    case.shape.to_string(),
                    t0.elapsed().as_secs_f64()
                );
            }
        }
    }
}

/// Runs each of `variants` on `case` on the emulator and checks it against
/// the f64 reference; prints each one's worst error over its bound.
fn check_on_emulator(case: &Case, variants: &[Variant]) {
    let (want, bound) = reference(case, None);
    for &v in variants {
        let mut c = case.c0.clone();
        gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, case.s).unwrap();
        let worst = check(v, case, None, &c, &want, &bound);
        eprintln!("emulator {:>16} {:>16}: max error / bound {worst:.2e}", v.name(), case.shape.to_string());
    }
}

#[test]
fn double_buffered_at_every_kind_of_edge_on_the_emulator() {
    let mut rng = rng("emulator gemm edges");
    for dims in EDGE_SHAPES {
        let s = AlphaBeta::new(1.5, -0.5);
        check_on_emulator(&Case::new(&mut rng, dims, s), &[Variant::DoubleBuffered]);
    }
}

#[test]
fn wgmma_at_every_kind_of_edge_on_the_emulator() {
    let mut rng = rng("emulator gemm wgmma");
    for (i, dims) in WGMMA_SHAPES.into_iter().enumerate() {
        let s = if i % 2 == 0 { AlphaBeta::new(1.5, -0.5) } else { AlphaBeta::PRODUCT };
        check_on_emulator(&Case::new(&mut rng, dims, s), &WGMMA_STEPS);
    }
}

/// 3xTF32 is FP32-accurate where TF32 is not: on the emulator, its largest
/// error at `K = 512` is within FP32's own bound (`gamma_{K+3}`, itself a
/// worst case far above typical FP32 errors), and step 9's is over 20 times
/// 3xTF32's.
#[test]
fn wgmma_3xtf32_is_fp32_accurate_on_the_emulator() {
    let mut rng = rng("emulator gemm 3xtf32");
    let case = Case::new(&mut rng, (64, 256, 512), AlphaBeta::PRODUCT);
    let (want, mag) = reference(&case, None);
    let fp32 = Variant::DoubleBuffered.error_bound(512);
    let worst = |v: Variant| {
        let mut c = case.c0.clone();
        gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, case.s).unwrap();
        c.iter().zip(&want).zip(&mag).map(|((&g, &w), &m)| (g as f64 - w).abs() / (fp32 * m)).fold(0.0, f64::max)
    };
    let (x3, tf32) = (worst(Variant::Wgmma3xTf32), worst(Variant::Wgmma));
    eprintln!("max error / FP32 bound at K = 512: 3xTF32 {x3:.2e}, TF32 {tf32:.2e}");
    assert!(x3 <= 1.0, "3xTF32 outside the FP32 bound: {x3}");
    assert!(tf32 > 20.0 * x3, "TF32 ({tf32:.2e}) not far less accurate than 3xTF32 ({x3:.2e})");
}

/// The tensor cores truncate each 8-deep step's sum into the accumulator,
/// and the emulator does too: step 10, whose accumulator runs over all of
/// `K`, drifts in proportion to `K` (its error against `|C|` grows 4 times
/// when `K` does, as on the H100, where an FP32 GEMM's grows 2 times),
/// while step 11, which promotes each 32-deep partial sum into f32
/// registers rounded to nearest, is at least as accurate as the FP32 step
/// 7, which rounds every FMA to nearest.
#[test]
fn tensor_core_truncation_drifts_with_k_unless_promoted_on_the_emulator() {
    let mut rng = rng("emulator gemm truncation");
    let steps = [Variant::DoubleBuffered, Variant::Wgmma3xTf32, Variant::WgmmaPromoted];
    // Per K: (largest error / largest |ref|, ||err|| / ||ref||) of each step.
    let mut errors = Vec::new();
    for k in [256, 1024] {
        let case = Case::new(&mut rng, (128, 256, k), AlphaBeta::PRODUCT);
        let (want, _) = reference(&case, None);
        let ref_max = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
        let ref_norm = want.iter().map(|w| w * w).sum::<f64>().sqrt();
        let errs = steps.map(|v| {
            let mut c = case.c0.clone();
            gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, case.s).unwrap();
            let err: Vec<f64> = c.iter().zip(&want).map(|(&g, &w)| g as f64 - w).collect();
            let max = err.iter().fold(0.0f64, |m, e| m.max(e.abs()));
            let norm = err.iter().map(|e| e * e).sum::<f64>().sqrt();
            eprintln!(
                "K = {k:>5} {:>16}: max |err| / max |ref| {:.2e}, ||err|| / ||ref|| {:.2e}",
                v.name(),
                max / ref_max,
                norm / ref_norm
            );
            (max / ref_max, norm / ref_norm)
        });
        errors.push(errs);
    }
    // K four times larger: a bias grows 4 times, rounding errors 2 times.
    let growth = |i: usize| errors[1][i].1 / errors[0][i].1;
    let (fp32, x3, promoted) = (errors[1][0].0, errors[1][1].0, errors[1][2].0);
    eprintln!(
        "||err|| growth, K = 256 -> 1024: FP32 {:.2}, 3xTF32 {:.2}, promoted {:.2}",
        growth(0),
        growth(1),
        growth(2)
    );
    assert!(growth(1) > 3.0, "3xTF32's error grew {:.2} times with K 4 times larger: no drift", growth(1));
    assert!(growth(2) < 2.5, "promoted 3xTF32's error grew {:.2} times with K 4 times larger", growth(2));
    assert!(x3 > 5.0 * fp32, "at K = 1024, 3xTF32's largest error {x3:.2e} is not far above FP32's {fp32:.2e}");
    assert!(promoted <= fp32, "at K = 1024, promoted 3xTF32's largest error {promoted:.2e} is above FP32's {fp32:.2e}");
}

/// The split is exact as far as it goes: `hi` and `lo` are TF32 values, and
/// `x - hi - lo` is below `2^-22 |x|`.
#[test]
fn split_tf32_keeps_22_bits() {
    use coalesce::kernels::gemm::{split_tf32, to_tf32};
    let mut rng = rng("split tf32");
    for _ in 0..100_000 {
        let x: f32 = rng.random_range(-1.0e3f32..1.0e3);
        let (hi, lo) = split_tf32(x);
        assert_eq!((to_tf32(hi), to_tf32(lo)), (hi, lo), "{x}: halves not TF32");
        let rest = x as f64 - hi as f64 - lo as f64;
        assert!(rest.abs() <= f64::powi(2.0, -22) * (x as f64).abs(), "{x}: {hi} + {lo} leaves {rest}");
    }
}

/// The descriptor the kernel builds, read back as the emulator's tensor
/// cores read it, lands on the bytes the kernel's swizzled stores wrote:
/// chunk `c` of row `r` at `128 r + 16 (c ^ (r % 8))`, for every `k` step.
#[test]
fn wgmma_descriptor_addresses_the_128_byte_swizzle() {
    use coalesce::kernels::emu::descriptor_address;
    use coalesce::kernels::gemm::k_major_128b;
    for base in [0u32, 1024, 49152] {
        for step in 0..4usize {
            let desc = k_major_128b(base + 32 * step as u32);
            for row in 0..256usize {
                for kb in 0..32usize {
                    let (k, chunk) = (8 * step + kb / 4, (32 * step + kb) / 16);
                    let want = base as usize + 128 * row + 16 * (chunk ^ (row % 8)) + (4 * k + kb % 4) % 16;
                    assert_eq!(descriptor_address(desc, row, kb), want, "base {base} step {step} row {row} byte {kb}");
                }
            }
        }
    }
}

/// Buffers one float past a 16-byte boundary: the vector steps must notice
/// and take their scalar paths (a misaligned `ld.global.v4` would fault).
#[test]
fn misaligned_buffers_on_the_emulator() {
    let mut rng = rng("emulator gemm misaligned");
    let s = AlphaBeta::new(1.0, 0.5);
    let case = Case::new(&mut rng, (132, 260, 68), s);
    let (want, bound) = reference(&case, None);
    let shift = |v: &[f32]| -> Vec<f32> { std::iter::once(0.0).chain(v.iter().copied()).collect() };
    let (a, b) = (shift(&case.a), shift(&case.b));
    for v in [
        Variant::Vectorized,
        Variant::Warptile,
        Variant::DoubleBuffered,
        Variant::Tf32,
        Variant::Wgmma,
        Variant::Wgmma3xTf32,
        Variant::WgmmaPromoted,
        Variant::WgmmaTma,
        Variant::WgmmaTma3xTf32,
    ] {
        let mut c = shift(&case.c0);
        gemm::emu::launch(v, &a[1..], &b[1..], &mut c[1..], case.shape, s).unwrap();
        check(v, &case, None, &c[1..], &want, &bound);
    }
}

/// Shapes for the checker on steps 1-8: `K = 1` with `N < 4` (step 7's
/// checked loads); `N < 4` over several `K` tiles with a residue; `N` 2 past
/// 128 (a second block column for the 128-wide tiles, and a vector of `B`
/// crossing `N`: step 7's shifted window); `M` past 128 with a narrow odd `N`
/// and `K` a multiple of 4 but of no tile; every dimension a multiple of 4
/// past one 128x128 tile (block (0, 0) of steps 4-6 and 8 on the vector
/// paths, the others on the scalar ones); and step 7's whole tile, every
/// block interior.
const CHECKER_SHAPES: [(usize, usize, usize); 6] =
    [(5, 3, 1), (9, 2, 21), (17, 130, 13), (130, 7, 36), (132, 132, 24), (128, 256, 16)];

/// Steps 1-8 under the checker: no out-of-bounds or misaligned access, no
/// shared-memory race, no read of unwritten shared memory, at shapes that
/// take every edge path; results within their bounds, and every element of
/// `C` stored once through a view.
#[test]
fn steps_1_to_8_pass_the_checker_at_odd_shapes() {
    let mut rng = rng("checked gemm");
    for (i, dims) in CHECKER_SHAPES.into_iter().enumerate() {
        // Half the shapes read C (beta != 0), half only write it.
        let s = if i % 2 == 0 { AlphaBeta::new(1.5, -0.5) } else { AlphaBeta::PRODUCT };
        let case = Case::new(&mut rng, dims, s);
        let (want, bound) = reference(&case, None);
        // Steps 1-3 check every element alike, on every shape: the shapes
        // below 128 rows take them through each of their edges.
        // Steps 1-8: the FP32 ladder and step 8's `mma.sync`; steps 1-3
        // (blocks of up to 1024 threads, slow to emulate) on the small shapes.
        let first = if dims.0 < 128 { 1 } else { 4 };
        let steps: Vec<Variant> = Variant::ALL
            .into_iter()
            .filter(|v| v.step().parse().is_ok_and(|s: u32| (first..=8).contains(&s)))
            .collect();
        for v in steps {
            let mut c = case.c0.clone();
            let report = gemm::emu::launch_checked(v, &case.a, &case.b, &mut c, case.shape, s).unwrap();
            let what = format!("{} at {}", v.name(), case.shape);
            assert!(report.findings.is_empty(), "{what}: {:#?}", report.findings);
            check(v, &case, None, &c, &want, &bound);
            let stored = report.counters.total(Op::GlobalStore).bytes;
            assert_eq!(stored, 4 * case.shape.c().len() as u64, "{what}: bytes stored to C");
        }
    }
}

/// `v`'s memory counters on random inputs of shape `dims` (the plain
/// product, buffers 256-byte aligned), with no finding.
fn counters(v: Variant, dims: (usize, usize, usize)) -> Counters {
    let case = Case::new(&mut rng(v.name()), dims, AlphaBeta::PRODUCT);
    let mut c = case.c0.clone();
    let report = gemm::emu::launch_checked(v, &case.a, &case.b, &mut c, case.shape, case.s).unwrap();
    assert!(report.findings.is_empty(), "{}: {:#?}", v.name(), report.findings);
    report.counters
}

/// The per-request transactions (sectors or wavefronts) of each line of
/// `file` that does `op`, in source order (line, then column).
fn per_request(c: &Counters, file: &str, op: Op) -> Vec<f64> {
    c.of(op).filter(|s| s.site.file_name() == file).map(|s| s.tally.per_request()).collect()
}

/// What the ladder teaches, in the emulator's counters, on whole tiles:
///
/// - step 1 loads `A` and `B` for every FMA: the warp's `A` load is one
///   address (1 sector), its `B` load 32 consecutive floats (4 sectors);
///   step 2 loads each element once per 32x32 tile, coalesced (4 sectors a
///   request): 32 times fewer requests, 20 times fewer sectors;
/// - step 2's inner loop reads `As[ty][i]`, one word for the whole warp (a
///   broadcast), and `Bs[i][tx]`, 32 consecutive words in 32 banks: one
///   wavefront each;
/// - step 5's 16-byte global loads move step 4's sectors in a quarter of
///   the requests, every sector whole;
/// - step 5's threads read 8 adjacent columns of `B` each, so a quarter
///   warp's 16-byte reads lie 32 bytes apart, two per bank group: 8
///   wavefronts a request where 4 would do; step 6's interleaved fragments
///   read adjacent vectors, 4. Its padded `A` tile takes the 2-way conflict
///   off step 5's transposed stores, and its 16-byte stores of `C` fill
///   whole sectors (step 5's lanes store 32 bytes apart: 32 sectors for 16).
#[test]
fn the_ladder_in_the_memory_counters_on_the_emulator() {
    use Op::{GlobalLoad, GlobalStore, SharedLoad, SharedStore};

    let (s1, s2) = (counters(Variant::Naive, (64, 64, 64)), counters(Variant::SmemTiled, (64, 64, 64)));
    // One line loads A then B.
    assert_eq!(per_request(&s1, "01_naive.rs", GlobalLoad), [1.0, 4.0]);
    assert!(s1.of(GlobalLoad).all(|s| s.tally.requests == 64 * 64 * 64 / 32), "one request per warp and k");
    assert_eq!(per_request(&s2, "02_smem_tiled.rs", GlobalLoad), [4.0, 4.0]);
    let (g1, g2) = (s1.total(GlobalLoad), s2.total(GlobalLoad));
    assert_eq!((g1.requests, g1.transactions), (32 * g2.requests, 20 * g2.transactions));
    // One line reads As[ty][i] then Bs[i][tx].
    assert_eq!(per_request(&s2, "02_smem_tiled.rs", SharedLoad), [1.0, 1.0]);
    assert!(s2.of(SharedLoad).all(|s| s.tally.accesses == 32 * s.tally.requests), "whole warps");

    let tile = (128, 128, 16);
    let (s4, s5, s6) =
        (counters(Variant::Blocktile2d, tile), counters(Variant::Vectorized, tile), counters(Variant::Warptile, tile));
    let (g4, g5) = (s4.total(GlobalLoad), s5.total(GlobalLoad));
    assert!(s4.of(GlobalLoad).all(|s| s.width == 4) && s5.of(GlobalLoad).all(|s| s.width == 16));
    assert_eq!((g5.transactions, 4 * g5.requests), (g4.transactions, g4.requests));
    assert_eq!((g5.per_request(), g5.efficiency()), (16.0, 1.0));
    // Step 5 reads two vectors of A, then two of B, on one line; step 6 its
    // fragments of A, then of B.
    assert_eq!(per_request(&s5, "05_vectorized.rs", SharedLoad), [4.0, 4.0, 8.0, 8.0]);
    assert_eq!(per_request(&s6, "06_warptile.rs", SharedLoad), [4.0, 4.0]);
    assert!(s6.of(SharedLoad).all(|s| s.width == 16 && s.tally.efficiency() == 1.0));
    // The transposed A tile's scalar stores (tiles.rs, stage_a).
    let stage_a = |c: &Counters| c.of(SharedStore).filter(|s| s.width == 4).map(|s| s.tally.per_request()).collect();
    assert_eq!((stage_a(&s5), stage_a(&s6)), (vec![2.0], vec![1.0]));
    let (c5, c6) = (s5.total(GlobalStore), s6.total(GlobalStore));
    assert_eq!((c5.per_request(), c5.ideal_per_request()), (32.0, 16.0));
    assert_eq!((c6.per_request(), c6.efficiency()), (16.0, 1.0));
}

/// Too large a matrix is still an error; zero dimensions are not (see
/// `empty_products_are_blas_on_the_emulator`).
#[test]
fn shapes_too_large_are_errors() {
    let e = GemmShape::new(1, 1, u32::MAX as usize + 1).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e}");
    let e = GemmShape::new(0, 1 << 31, 1 << 31).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { rows, .. } if rows == 1 << 31), "B first: {e}");
}

/// The empty-product cases, `(m, n, k)`: no `C`, and `k = 0`.
const EMPTY_SHAPES: [(usize, usize, usize); 5] = [(0, 5, 7), (5, 0, 7), (0, 0, 0), (0, 3, 0), (13, 29, 0)];

/// What BLAS gives for an empty product: nothing for `m = 0` or `n = 0`, `C
/// = beta * C` for `k = 0` (`0` where `beta == 0`, even over NaN; `C`
/// untouched where `beta == 1`).
fn empty_product_want(c0: &[f32], s: AlphaBeta) -> Vec<f32> {
    c0.iter()
        .map(|&c| {
            if s.beta == 0.0 {
                0.0
            } else if s.beta == 1.0 {
                c
            } else {
                s.beta * c
            }
        })
        .collect()
}

/// `C0` for the empty products: random, with an inf and a NaN in it.
fn empty_product_c0(rng: &mut StdRng, len: usize) -> Vec<f32> {
    let mut c0 = random_matrix(rng, len);
    if len > 2 {
        (c0[1], c0[len - 1]) = (f32::INFINITY, f32::from_bits(POISON_BITS));
    }
    c0
}

/// The scalars of the empty products: the product (C poisoned, not read),
/// an update, `beta == 1` (BLAS's quick return), and a NaN `alpha` (`k = 0`:
/// no term it could scale).
const EMPTY_SCALARS: [AlphaBeta; 4] =
    [AlphaBeta::PRODUCT, AlphaBeta::new(1.5, -0.75), AlphaBeta::new(2.0, 1.0), AlphaBeta::new(f32::NAN, 2.0)];

fn same_bits_or_both_nan(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g == w || (g.is_nan() && w.is_nan()))
}

#[test]
fn empty_products_are_blas_on_the_emulator() {
    let mut rng = rng("emulator gemm empty");
    for (m, n, k) in EMPTY_SHAPES {
        let shape = GemmShape::new(m, n, k).unwrap();
        assert_eq!((shape.a().len(), shape.b().len(), shape.c().len()), (m * k, k * n, m * n));
        let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
        for s in EMPTY_SCALARS {
            let c0 = empty_product_c0(&mut rng, m * n);
            let want = empty_product_want(&c0, s);
            for v in Variant::ALL {
                let mut c = c0.clone();
                gemm::emu::launch(v, &a, &b, &mut c, shape, s).unwrap();
                assert!(same_bits_or_both_nan(&c, &want), "{} on {shape} {s:?}", v.name());
                let mut c = c0.clone();
                let report = gemm::emu::launch_checked(v, &a, &b, &mut c, shape, s).unwrap();
                assert!(report.findings.is_empty(), "{} on {shape}: {:?}", v.name(), report.findings);
                assert!(same_bits_or_both_nan(&c, &want), "{} checked on {shape} {s:?}", v.name());
            }
        }
        // The buffers are still checked.
        let mut c = vec![0.0f32; m * n + 1];
        let e = gemm::emu::launch(Variant::Naive, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "C", .. }), "{shape}: {e}");
    }
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

/// `m = 2^23 + 1` needs more than 65535 block rows for every tile height
/// (8 to 128): refused before launch. `n = k = 1` keeps the buffers small.
#[test]
fn shapes_past_the_grid_limit_are_errors_on_the_emulator() {
    let m = (1 << 23) + 1;
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
    assert_eq!(s.to_string(), "2x3x4");
}

/// Runs `v` on the GPU for `case`, with C uploaded fresh, and returns C.
fn run_gpu(stream: &coalesce::Stream<'_>, v: Variant, case: &Case, bufs: &GpuBufs, offset: usize) -> Vec<f32> {
    let gpu = stream.gpu();
    let len = case.c0.len();
    let c = gpu.alloc::<f32>(len + offset).unwrap();
    c.index(offset..).copy_from(&case.c0[..]).unwrap();
    gemm::launch(
        stream,
        v,
        &bufs.a.index(offset..),
        &bufs.b.index(offset..),
        &mut c.index(offset..),
        case.shape,
        case.s,
    )
    .unwrap();
    stream.synchronize().unwrap();
    download(&c.index(offset..))
}

struct GpuBufs {
    a: cust::memory::DeviceBuffer<f32>,
    b: cust::memory::DeviceBuffer<f32>,
}

impl GpuBufs {
    fn new(gpu: &coalesce::Gpu, case: &Case, offset: usize) -> GpuBufs {
        let pad = |v: &[f32]| -> Vec<f32> { std::iter::repeat_n(0.0, offset).chain(v.iter().copied()).collect() };
        GpuBufs { a: gpu.upload(&pad(&case.a)).unwrap(), b: gpu.upload(&pad(&case.b)).unwrap() }
    }
}

/// Runs each of `variants` on `case` on the GPU (A and B uploaded once, C
/// poisoned before each) and checks it against the f64 reference; prints
/// each one's worst error over its bound.
fn check_on_gpu(gpu: &coalesce::Gpu, stream: &coalesce::Stream<'_>, case: &Case, variants: &[Variant]) {
    let (want, bound) = reference(case, None);
    let bufs = GpuBufs::new(gpu, case, 0);
    for &v in variants {
        let got = run_gpu(stream, v, case, &bufs, 0);
        let worst = check(v, case, None, &got, &want, &bound);
        eprintln!("gpu {:>16} {:>16} {:?}: max error / bound {worst:.2e}", v.name(), case.shape.to_string(), case.s);
    }
}

#[test]
fn every_variant_on_the_gpu_at_odd_shapes() {
    let Some(gpu) = gpu_or_skip("gpu gemm") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm");
    let shapes: Vec<_> =
        GPU_SHAPES.iter().copied().filter(|&(m, n, k)| !under_sanitizer() || m * n * k < 1 << 22).collect();
    for (si, &dims) in shapes.iter().enumerate() {
        // Every epilogue on two shapes, the plain product on the rest.
        let cases: &[AlphaBeta] = if si == 1 || si == 4 { &SCALARS } else { &SCALARS[..1] };
        for &s in cases {
            check_on_gpu(&gpu, &stream, &Case::new(&mut rng, dims, s), &Variant::ALL);
        }
    }
}

/// Step 7 at the emulator's edge shapes and at large ones with each kind of
/// edge: `N < 4`, `K` and `N` not multiples of 4, only `M` and `N` past the tile.
#[test]
fn double_buffered_at_every_kind_of_edge_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm edges") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm edges");
    let large = [(300, 3, 1000), (1000, 1001, 1003), (1030, 1028, 1032), (513, 4095, 1025)];
    let shapes = EDGE_SHAPES.iter().chain(if under_sanitizer() { &large[..1] } else { &large[..] });
    for &dims in shapes {
        let s = AlphaBeta::new(1.5, -0.5);
        check_on_gpu(&gpu, &stream, &Case::new(&mut rng, dims, s), &[Variant::DoubleBuffered]);
    }
}

/// The benchmark shape, 4096^3, every version, 20000 random elements checked
/// (a full f64 reference would take minutes on the host).
#[test]
fn every_variant_on_the_gpu_at_4096_spot_checked() {
    let Some(gpu) = gpu_or_skip("gpu gemm 4096") else { return };
    if under_sanitizer() {
        return;
    }
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm 4096");
    let case = Case::new(&mut rng, (4096, 4096, 4096), AlphaBeta::new(1.0, 1.0));
    let at: Vec<(usize, usize)> = (0..20_000).map(|_| (rng.random_range(0..4096), rng.random_range(0..4096))).collect();
    let (want, bound) = reference(&case, Some(&at));
    let bufs = GpuBufs::new(&gpu, &case, 0);
    for v in Variant::ALL {
        let full = run_gpu(&stream, v, &case, &bufs, 0);
        let got: Vec<f32> = at.iter().map(|&(i, j)| full[i * 4096 + j]).collect();
        assert!(full.iter().all(|x| x.is_finite()), "{}: non-finite output", v.name());
        let worst = check(v, &case, Some(&at), &got, &want, &bound);
        eprintln!("gpu {:>16} 4096x4096x4096 spot: max error / bound {worst:.2e}", v.name());
    }
}

/// Sub-slices one float into their buffers: 4-byte aligned, not 16.
#[test]
fn misaligned_buffers_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm misaligned") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm misaligned");
    let case = Case::new(&mut rng, (132, 260, 68), AlphaBeta::new(1.0, 0.5));
    let (want, bound) = reference(&case, None);
    let bufs = GpuBufs::new(&gpu, &case, 1);
    for v in Variant::ALL {
        let got = run_gpu(&stream, v, &case, &bufs, 1);
        check(v, &case, None, &got, &want, &bound);
    }
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

    let tall = GemmShape::new((1 << 23) + 1, 1, 1).unwrap();
    let a = gpu.alloc::<f32>(tall.a().len()).unwrap();
    let one = gpu.alloc::<f32>(1).unwrap();
    let mut c = gpu.alloc::<f32>(tall.c().len()).unwrap();
    for v in Variant::ALL {
        let e = gemm::launch(&stream, v, &a, &one, &mut c, tall, AlphaBeta::PRODUCT).unwrap_err();
        assert!(matches!(e, Error::GridTooLarge { .. }), "{}: {e}", v.name());
    }
}

/// Steps 9-13 at their edge shapes and at large ones on the GPU (an H100:
/// the `sm_90a` module), C poisoned.
#[test]
fn wgmma_at_every_kind_of_edge_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm wgmma") else { return };
    if !gpu.has_kernel(Variant::Wgmma.entry_point()) {
        eprintln!("skipping gpu gemm wgmma: {} loaded {:?}, not sm_90a", gpu.name(), gpu.module_name());
        return;
    }
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm wgmma");
    let large = [(300, 3, 1000), (1000, 1001, 1003), (1030, 1028, 1032), (513, 4095, 1025), (2048, 2048, 8192)];
    let shapes = WGMMA_SHAPES.iter().chain(if under_sanitizer() { &large[..1] } else { &large[..] });
    for &dims in shapes {
        let s = AlphaBeta::new(1.5, -0.5);
        check_on_gpu(&gpu, &stream, &Case::new(&mut rng, dims, s), &WGMMA_STEPS);
    }
}

/// A kernel that only the sm_90a module has, launched with another module
/// loaded (here the sm_90 one, forced on whatever GPU this is): a clear
/// error, no launch.
#[test]
fn wgmma_without_the_sm_90a_module_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm wgmma without sm_90a") else { return };
    if under_sanitizer() {
        // Opening the sm_90 module looks up (and misses) the sm_90a kernels:
        // driver errors by design, which memcheck would count.
        return;
    }
    drop(gpu);
    let sm_90: Vec<coalesce::Ptx> = coalesce::MODULES.iter().copied().filter(|m| !m.arch_specific).collect();
    let gpu = coalesce::Gpu::open(0, &sm_90).unwrap();
    assert!(!gpu.has_kernel(Variant::Wgmma.entry_point()));
    let stream = gpu.stream().unwrap();
    let shape = GemmShape::new(64, 64, 64).unwrap();
    let a = gpu.upload(&vec![1.0f32; shape.a().len()]).unwrap();
    let b = gpu.upload(&vec![1.0f32; shape.b().len()]).unwrap();
    let mut c = gpu.alloc::<f32>(shape.c().len()).unwrap();
    for v in WGMMA_STEPS {
        // The TMA steps refuse before they allocate or encode anything.
        let e = gemm::launch(&stream, v, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap_err();
        assert!(matches!(e, Error::ArchitectureRequired { needs: "sm_90a", .. }), "{}: {e}", v.name());
        eprintln!("{} on {:?}: {e}", v.name(), gpu.module_name());
    }
    // The rest of the ladder runs on that module.
    gemm::tf32(&stream, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap();
    stream.synchronize().unwrap();
}

/// `gemm::sgemm` launches step 13 with the `sm_90a` module loaded (the
/// H100's, the one module that has it), and step 7 otherwise.
#[test]
fn sgemm_picks_step_13_in_the_sm_90a_module_and_step_7_elsewhere() {
    for m in coalesce::MODULES {
        let want = if m.name() == "sm_90a" { Variant::WgmmaTma3xTf32 } else { Variant::DoubleBuffered };
        assert_eq!(Variant::sgemm_for(&m.name()), want, "{}", m.name());
    }
    assert_eq!(Variant::sgemm_for("sm_100"), Variant::DoubleBuffered);
}

/// On the GPU, `gemm::sgemm` runs what its module picks: its output is bit
/// for bit that version's, within that version's bound. First with the
/// module this GPU gets (step 13 on an H100), then with the sm_90 module
/// forced (step 7).
#[test]
fn sgemm_runs_the_version_its_module_picks_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu sgemm") else { return };
    drop(gpu);
    let mut rng = rng("gpu sgemm");
    let case = Case::new(&mut rng, (300, 260, 1000), AlphaBeta::new(1.5, -0.5));
    let (want, bound) = reference(&case, None);
    let sm_90: Vec<coalesce::Ptx> = coalesce::MODULES.iter().copied().filter(|m| !m.arch_specific).collect();
    for modules in [coalesce::MODULES, &sm_90[..]] {
        let gpu = coalesce::Gpu::open(0, modules).unwrap();
        let module = gpu.module_name().unwrap().to_owned();
        let stream = gpu.stream().unwrap();
        let bufs = GpuBufs::new(&gpu, &case, 0);
        let v = gemm::sgemm_variant(&gpu);
        assert_eq!(v, Variant::sgemm_for(&module), "{module}");
        let mut c = gpu.upload(&case.c0).unwrap();
        gemm::sgemm(&stream, &bufs.a, &bufs.b, &mut c, case.shape, case.s).unwrap();
        stream.synchronize().unwrap();
        let got = download(&c);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        assert_eq!(bits(&got), bits(&run_gpu(&stream, v, &case, &bufs, 0)), "{module}: sgemm is not {}", v.name());
        let worst = check(v, &case, None, &got, &want, &bound);
        eprintln!("gpu sgemm with {module}: {} {}: max error / bound {worst:.2e}", v.name(), case.shape);
    }
}

/// The emulator's TF32 rounding is `cvt.rna.tf32.f32`: to nearest, ties
/// away from zero, 10 mantissa bits kept.
#[test]
fn tf32_rounding_is_to_nearest_ties_away() {
    use coalesce::kernels::gemm::to_tf32;
    let ulp = f32::powi(2.0, -10); // of 1.0 in TF32
    assert_eq!(to_tf32(1.0), 1.0);
    assert_eq!(to_tf32(1.0 + ulp / 4.0), 1.0);
    assert_eq!(to_tf32(1.0 + ulp / 2.0), 1.0 + ulp); // a tie: away from zero
    assert_eq!(to_tf32(-(1.0 + ulp / 2.0)), -(1.0 + ulp));
    assert_eq!(to_tf32(1.0 + 0.75 * ulp), 1.0 + ulp);
    assert_eq!(to_tf32(1.0 + 1.25 * ulp), 1.0 + ulp);
    assert!(to_tf32(f32::NAN).is_nan());
    assert_eq!(to_tf32(f32::INFINITY), f32::INFINITY);
}

/// The TMA steps allocate their workspace on the stream: captured into a
/// CUDA graph, the allocation becomes the graph's own, and two replays give
/// the direct launch's bits; meanwhile another thread's direct launches on
/// its own stream use their own workspaces.
#[test]
fn tma_steps_in_a_graph_and_beside_another_thread_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm tma graph") else { return };
    if !gpu.has_kernel(Variant::WgmmaTma3xTf32.entry_point()) {
        eprintln!("skipping gpu gemm tma graph: {} loaded {:?}, not sm_90a", gpu.name(), gpu.module_name());
        return;
    }
    let mut rng = rng("gpu gemm tma graph");
    let case = Case::new(&mut rng, (300, 260, 1001), AlphaBeta::PRODUCT);
    let (want, bound) = reference(&case, None);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    for v in [Variant::WgmmaTma, Variant::WgmmaTma3xTf32] {
        let stream = gpu.nonblocking_stream().unwrap();
        let bufs = GpuBufs::new(&gpu, &case, 0);
        let direct = run_gpu(&stream, v, &case, &bufs, 0);
        check(v, &case, None, &direct, &want, &bound);
        let mut c = gpu.upload(&case.c0).unwrap();
        std::thread::scope(|s| {
            // Another thread, another stream, the same step, all the while.
            let other = s.spawn(|| {
                let stream = gpu.nonblocking_stream().unwrap();
                (0..20).map(|_| run_gpu(&stream, v, &case, &bufs, 0)).all(|got| bits(&got) == bits(&direct))
            });
            let graph = coalesce::graph::capture(&stream, || {
                gemm::launch(&stream, v, &bufs.a, &bufs.b, &mut c, case.shape, case.s)
            })
            .unwrap();
            for _ in 0..2 {
                graph.launch(&stream).unwrap();
            }
            stream.synchronize().unwrap();
            drop(graph);
            assert!(other.join().unwrap(), "{}: another thread's launches differ", v.name());
        });
        assert_eq!(
            bits(&download(&c)),
            bits(&direct),
            "{}: the graph's replays differ from the direct launch",
            v.name()
        );
    }
}

/// A NaN whose payload lies only in the low 13 bits: rounded or truncated
/// to TF32 (10 mantissa bits) it would read as inf.
const LOW_NAN: u32 = 0x7f80_0001;
/// The largest f32 (`0x7f7f_ffff`), whose TF32 rounding to nearest is inf.
const BIG: f32 = f32::MAX;
/// Shapes for the special values: step 13's edge blocks (128x128 tiles: a
/// second block row of 2 rows, a third block column of 3), and a small one
/// where every special lands in one tile. `K >= 9`: the huge values of `A`
/// and `B` sit at different depths (`with_huge`).
const SPECIAL_SHAPES: [(usize, usize, usize); 2] = [(130, 259, 33), (5, 3, 9)];
/// What `sgemm` runs: step 7 (FMA units, every GPU) and step 13 (an H100).
const SGEMM_STEPS: [Variant; 2] = [Variant::DoubleBuffered, Variant::WgmmaTma3xTf32];

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
struct SpecialRef {
    fp32: Vec<f32>,
    want: Vec<f64>,
    mag: Vec<f64>,
    slack: Vec<f64>,
}

fn special_reference(case: &Case) -> SpecialRef {
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
fn check_fp32_semantics(v: Variant, what: &str, case: &Case, r: &SpecialRef, got: &[f32]) -> (usize, usize, usize) {
    let (n, factor) = (case.shape.n(), v.error_bound(case.shape.k()));
    let mut counts = (0, 0, 0);
    for (e, &g) in got.iter().enumerate() {
        let (f, w) = (r.fp32[e], r.want[e]);
        let bound = factor * r.mag[e] + r.slack[e];
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
/// poisoned) and an update whose `C0` holds specials too.
fn special_cases(rng: &mut StdRng, dims: (usize, usize, usize)) -> Vec<(&'static str, Case)> {
    let mut out = Vec::new();
    for s in [AlphaBeta::PRODUCT, AlphaBeta::new(1.5, -0.75)] {
        let mut c = Case::new(rng, dims, s);
        with_non_finite(&mut c);
        out.push(("non-finite", c));
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
        for (kind, case) in special_cases(&mut rng, dims) {
            let r = special_reference(&case);
            for v in SGEMM_STEPS {
                let mut c = case.c0.clone();
                gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, case.s).unwrap();
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

/// `sgemm` and the versions it may run, on the GPU, with the special values
/// of the emulator's test and at a large shape off the tile; each checked
/// against FP32's non-finite pattern and the exact result.
#[test]
fn special_values_give_fp32_results_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm specials") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm specials");
    let steps: Vec<Variant> = SGEMM_STEPS.into_iter().filter(|v| gpu.has_kernel(v.entry_point())).collect();
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
            check_fp32_semantics(gemm::sgemm_variant(&gpu), "sgemm", &case, &r, &download(&c));
        }
    }
}

#[test]
fn empty_products_are_blas_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm empty") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm empty");
    for (m, n, k) in EMPTY_SHAPES {
        let shape = GemmShape::new(m, n, k).unwrap();
        let a = gpu.upload(&random_matrix(&mut rng, m * k)).unwrap();
        let b = gpu.upload(&random_matrix(&mut rng, k * n)).unwrap();
        for s in EMPTY_SCALARS {
            let c0 = empty_product_c0(&mut rng, m * n);
            let want = empty_product_want(&c0, s);
            let runs = Variant::ALL.iter().filter(|v| gpu.has_kernel(v.entry_point())).map(|&v| Some(v));
            for v in runs.chain([None]) {
                let mut c = gpu.upload(&c0).unwrap();
                match v {
                    Some(v) => gemm::launch(&stream, v, &a, &b, &mut c, shape, s).unwrap(),
                    None => gemm::sgemm(&stream, &a, &b, &mut c, shape, s).unwrap(),
                }
                stream.synchronize().unwrap();
                let name = v.map_or("sgemm", |v| v.name());
                assert!(same_bits_or_both_nan(&download(&c), &want), "{name} on {shape} {s:?}");
            }
        }
    }
}
