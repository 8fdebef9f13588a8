//! The tensor-core steps' arithmetic on the emulator: TF32 rounding and
//! the 3xTF32 split, the accuracy they give, the tensor cores' truncation
//! (and step 11's fix), and the `wgmma` descriptors' swizzled addressing.

use crate::common::*;
use crate::reference::{Case, reference};
use coalesce::gemm::{self, AlphaBeta, Variant};
use rand::Rng;

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
        let c = case.on_emulator(v);
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
            let c = case.on_emulator(v);
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
    // The bias shows in the norm, which sums every element's error. One
    // element's largest error is FP32's noisiest figure (1.0e-6 to 2.4e-6
    // of max |ref| at K = 1024 over seven seeds, against 3xTF32's 9.6e-6 to
    // 1.3e-5: under 5x apart once), while the norms sit at 5.7e-7 and
    // 9.4e-6 for every seed.
    let (fp32, x3, promoted) = (errors[1][0], errors[1][1].1, errors[1][2].0);
    eprintln!(
        "||err|| growth, K = 256 -> 1024: FP32 {:.2}, 3xTF32 {:.2}, promoted {:.2}",
        growth(0),
        growth(1),
        growth(2)
    );
    assert!(growth(1) > 3.0, "3xTF32's error grew {:.2} times with K 4 times larger: no drift", growth(1));
    assert!(growth(2) < 2.5, "promoted 3xTF32's error grew {:.2} times with K 4 times larger", growth(2));
    assert!(
        x3 > 5.0 * fp32.1,
        "at K = 1024, 3xTF32's ||err|| / ||ref|| {x3:.2e} is not far above FP32's {:.2e}",
        fp32.1
    );
    assert!(
        promoted <= fp32.0,
        "at K = 1024, promoted 3xTF32's largest error {promoted:.2e} is above FP32's {:.2e}",
        fp32.0
    );
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

/// A product whose every output is one exact product of two TF32 values:
/// `K = 4` with only `k = 0` nonzero, so `C[i][j] = tf32(a_i) tf32(b_j)`
/// (11 by 11 significant bits: exact in f32), and the rounding shows bit
/// for bit. The `a_i` and `b_j` include ties with an even and an odd kept
/// bit, a carry into the exponent, both signs, and random values.
pub fn rounding_case() -> (gemm::GemmShape, Vec<f32>, Vec<f32>) {
    let (m, n, k) = (37, 44, 4);
    let ties = [0x3f80_1000u32, 0x3f80_3000, 0xbf80_1000, 0xbf80_3000, 0x3fff_ffff, 0x4000_0fff, 0x4000_1001];
    let mut rng = rng("gemm tf32 rounding");
    let mut value = |i: usize| {
        f32::from_bits(ties.get(i).copied().unwrap_or_else(|| 0x3e00_0000 + rng.random_range(0..0x0200_0000)))
    };
    let mut a = vec![0.0f32; m * k];
    let mut b = vec![0.0f32; k * n];
    for i in 0..m {
        a[i * k] = value(i);
    }
    for (j, x) in b[..n].iter_mut().enumerate() {
        *x = -value((j + 3) % n);
    }
    (gemm::GemmShape::new(m, n, k).unwrap(), a, b)
}

/// Checks `c` (from [`rounding_case`]'s `a` and `b`) against the products of
/// the inputs rounded to TF32 to nearest, ties to even, bit for bit.
pub fn check_rounding(what: &str, (shape, a, b): &(gemm::GemmShape, Vec<f32>, Vec<f32>), c: &[f32]) {
    use coalesce_kernels::emu::round_tf32;
    let tf32 = |x: f32| f32::from_bits(round_tf32(x.to_bits()));
    for i in 0..shape.m() {
        for j in 0..shape.n() {
            let want = tf32(a[i * shape.k()]) * tf32(b[j]);
            let got = c[i * shape.n() + j];
            assert_eq!(got.to_bits(), want.to_bits(), "{what}: C[{i}][{j}] = {got:e}, want {want:e}");
        }
    }
}

/// Step 14's copies round its operands to TF32 to nearest, ties to even,
/// on the emulator as an H100's TMA does: on both paths, the matrices in
/// place and copied first (`A` one float off a 16-byte boundary).
#[test]
fn wgmma_direct_rounds_to_nearest_even_on_the_emulator() {
    let case = rounding_case();
    let (shape, a, b) = &case;
    let mut c = vec![f32::NAN; shape.c().len()];
    gemm::emu::launch(Variant::WgmmaDirect, a, b, &mut c, *shape, AlphaBeta::PRODUCT).unwrap();
    check_rounding("in place", &case, &c);
    let shifted: Vec<f32> = std::iter::once(0.0).chain(a.iter().copied()).collect();
    let mut c = vec![f32::NAN; shape.c().len()];
    gemm::emu::launch(Variant::WgmmaDirect, &shifted[1..], b, &mut c, *shape, AlphaBeta::PRODUCT).unwrap();
    check_rounding("A copied", &case, &c);
}

/// The tensor cores truncate each sum they accumulate, up to an ulp of the
/// partial sum: steps 15 and 16 issue a pass's eight small products (`hi *
/// lo`, `lo * hi`) before its four `hi * hi`, so that four truncations a
/// pass happen at the partial sum's full size, where step 13, which issues
/// each 8-deep slice's three in turn, has ten. On the emulator, which
/// truncates as the tensor cores do, step 16's `||err|| / ||ref||` at `K =
/// 1024` is half step 13's (0.51; 0.99 with step 13's order), and its
/// scaling keeps a row of subnormals against `B x 1e3` as accurate (the
/// subnormal class of docs/gemm.md).
#[test]
fn small_products_first_halve_the_truncation_error_on_the_emulator() {
    let mut rng = rng("emulator gemm product order");
    let norm = |case: &Case, v: Variant| {
        let (want, _) = reference(case, None);
        let err = case.on_emulator(v).iter().zip(&want).map(|(&g, &w)| (g as f64 - w).powi(2)).sum::<f64>();
        (err / want.iter().map(|w| w * w).sum::<f64>()).sqrt()
    };
    let uniform = Case::new(&mut rng, (128, 256, 1024), AlphaBeta::PRODUCT);
    let mut subnormal = Case::new(&mut rng, (128, 256, 1024), AlphaBeta::PRODUCT);
    subnormal.a.iter_mut().for_each(|x| *x *= 1e-39);
    subnormal.b.iter_mut().for_each(|x| *x *= 1e3);
    let (interleaved, first) = (norm(&uniform, Variant::WgmmaTma3xTf32), norm(&uniform, Variant::WgmmaSplitA3xTf32));
    let first_subnormal = norm(&subnormal, Variant::WgmmaSplitA3xTf32);
    eprintln!(
        "||err|| / ||ref||: step 13 {interleaved:.2e}, step 16 {first:.2e}, step 16 subnormal {first_subnormal:.2e}"
    );
    assert!(
        first < 0.75 * interleaved,
        "step 16 {first:.2e} against step 13's {interleaved:.2e}: no gain from the order"
    );
    assert!(first_subnormal < 1.25 * first, "step 16 on subnormal rows {first_subnormal:.2e}, uniform {first:.2e}");
}
