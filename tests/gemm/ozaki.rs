//! Step 17 (Ozaki scheme II) computes the scheme exactly: on the emulator
//! its `C` is, bit for bit, the one the scheme's arithmetic gives on the
//! CPU (`coalesce::kernels::gemm::ozaki`), on inputs whose rows spread
//! over many magnitudes, with subnormal rows and rows of zeros, at depths
//! that end inside a stage, inside a 4-byte element and on one.

use crate::common::*;
use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};
use coalesce::kernels::gemm::ozaki::{LADDER_MODULI, alpha, exponent, product_by_residues, to_integer};
use rand::Rng;

/// The scheme at every element of `a (m x k) * b (k x n)`: each operand
/// rounded to `alpha` bits by its row's (column's) peak, the product of
/// each pair of lines by [`product_by_residues`], scaled back and rounded
/// to f32.
fn scheme(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f32> {
    let peak = |x: &mut dyn Iterator<Item = f32>| {
        exponent(x.filter(|v| v.is_finite()).map(|v| v.abs().to_bits()).max().unwrap_or(0))
    };
    let ea: Vec<i32> = (0..m).map(|i| peak(&mut a[i * k..][..k].iter().copied())).collect();
    let eb: Vec<i32> = (0..n).map(|j| peak(&mut (0..k).map(|h| b[h * n + j]))).collect();
    let bits = alpha(LADDER_MODULI, k) as i32;
    let x: Vec<i64> = (0..m * k).map(|e| to_integer(a[e], bits - ea[e / k])).collect();
    let y: Vec<i64> = (0..k * n).map(|e| to_integer(b[e], bits - eb[e % n])).collect();
    let element = |i: usize, j: usize| {
        let v = product_by_residues(LADDER_MODULI, k, |h| x[i * k + h], |h| y[h * n + j]);
        (v * 2f64.powi(ea[i] + eb[j] - 2 * bits)) as f32
    };
    (0..m * n).map(|e| element(e / n, e % n)).collect()
}

#[test]
fn step_17_computes_the_scheme_bit_for_bit_on_the_emulator() {
    let mut rng = rng("emulator ozaki");
    // Depths: one value, inside a 4-byte element (3, 301), on one (300),
    // a whole stage of 128 and past it.
    for (m, n, k) in [(1, 1, 1), (5, 3, 3), (130, 259, 301), (67, 129, 128), (9, 300, 300)] {
        let shape = GemmShape::new(m, n, k).unwrap();
        // Magnitudes from 2^-40 to 2^40 in every row, a row of subnormals,
        // a row of zeros, a column near FLT_MAX.
        let mut spread = |len: usize| -> Vec<f32> {
            (0..len).map(|_| rng.random_range(-1.0f32..1.0) * f32::powi(2.0, rng.random_range(-40..=40))).collect()
        };
        let (mut a, mut b) = (spread(m * k), spread(k * n));
        if m > 2 {
            for h in 0..k {
                a[k + h] = f32::from_bits(0x1234 + h as u32);
                a[2 * k + h] = 0.0;
            }
        }
        for h in 0..k {
            b[h * n + n - 1] *= f32::powi(2.0, 80);
        }
        let want = scheme(&a, &b, (m, n, k));
        let mut c = poison(m * n);
        gemm::emu::launch(Variant::WgmmaOzaki, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap();
        for (e, (g, w)) in c.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{shape}: C[{}][{}] = {g:e}, the scheme gives {w:e}", e / n, e % n);
        }
    }
}
