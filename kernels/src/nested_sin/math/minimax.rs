//! [`sin3_minimax`]: `sin(sin(sin(x)))` for |x| <= 1 as one odd minimax
//! polynomial, with its own bits and its own error bound.
//!
//! Unlike the rest of [`super`], it does not reproduce libdevice: it
//! replaces three sines (each rounded to f32) by one polynomial rounded
//! once. How its coefficients were fitted is at [`K`]; the tests measure
//! its error against f64, alone and after a first sine that is off by up
//! to its own bound, and the largest they find is
//! [`SIN3_MINIMAX_MAX_ULP`].

use crate::math::fma;

/// [`sin3_minimax`]'s coefficients: `sin(sin(sin(x))) ~ x + x^3 (K[0] +
/// x^2 (K[1] + x^2 (K[2] + ... + x^2 K[7])))`, a degree-17 odd polynomial.
///
/// How they were obtained (offline, mpmath at 40 digits, 6000 points
/// uniform in x^2 on (0, 1]): a Remez exchange for the least maximum
/// *relative* error in that form (1.71e-9 with real coefficients; degree
/// 15 reaches only 2.0e-8, a third of an ulp); then K[0], K[1], .. rounded
/// to f32 in turn, the ones not yet rounded refitted by Remez after each
/// rounding (as Sollya's fpminimax does). With these f32 values the
/// polynomial, in exact arithmetic, is within 1.78e-9 relative of
/// sin(sin(sin(x))) on [-1, 1] (0.03 x 2^-24): what is left is the f32
/// evaluation's rounding, measured over every f32 in [-1, 1] by the tests
/// ([`SIN3_MINIMAX_MAX_ULP`]).
const K: [f32; 8] = [
    f32::from_bits(0xbeff_fffa), // -0.49999982
    f32::from_bits(0x3e8c_cc0a), // 0.27499419
    f32::from_bits(0xbe14_742a), // -0.14497438
    f32::from_bits(0x3d91_30dc), // 0.070893973
    f32::from_bits(0xbd01_f03e), // -0.031723253
    f32::from_bits(0x3c47_4709), // 0.012162932
    f32::from_bits(0xbb60_3f50), // -0.0034217425
    f32::from_bits(0x3a02_b2dd), // 0.00049857592
];
/// [`sin3_minimax`] is for |x| up to this: the output range of any sine.
pub const SIN3_LIMIT: f32 = 1.0;
/// [`sin3_minimax`]'s largest error on [-1, 1], in ulp of the f64
/// sin(sin(sin(x))): 1.0945 measured over every f32 there (at x =
/// 0.99398214; `sin3_minimax_within_its_bounds_exhaustive`), with a little
/// room.
pub const SIN3_MINIMAX_MAX_ULP: f64 = 1.1;

/// sin(sin(sin(x))) for |x| <= [`SIN3_LIMIT`] in one odd minimax
/// polynomial: no range reduction, and one rounding of the result where
/// three sines in f32 round three times. 10 instructions (two multiplies'
/// worth and eight FMAs), against 37 for `sin_quarter(sin_unit(sin_unit(x)))`.
/// Not libdevice's bits: its own bound, [`SIN3_MINIMAX_MAX_ULP`] ulp.
///
/// Odd to the bit (`sin3_minimax(-x) == -sin3_minimax(x)`, the sign of zero
/// too: `p` is `fma(x2, x, 0)` as in libdevice, +0 for x = -0, so the last
/// FMA adds -0 to -0). NaN gives NaN. Pure IEEE FMA arithmetic, so the
/// host computes the GPU's bits.
#[inline(always)]
pub fn sin3_minimax(x: f32) -> f32 {
    let x2 = x * x;
    let p = fma(x2, x, 0.0);
    let mut z = K[7];
    let mut k = 7;
    while k > 0 {
        k -= 1;
        z = fma(z, x2, K[k]);
    }
    fma(z, p, x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spacing of f32 at `r` (an f64), subnormals included.
    fn ulp_at(r: f64) -> f64 {
        let a = r.abs();
        if a < f32::MIN_POSITIVE as f64 {
            return 2f64.powi(-149);
        }
        2f64.powi(((a.to_bits() >> 52) & 0x7ff) as i32 - 1023 - 23)
    }

    fn sin3(t: f64) -> f64 {
        t.sin().sin().sin()
    }

    /// What step 5 (`poly`) does after its first sine, `s`, judged two ways
    /// against f64, in ulp of the f64 result:
    /// - `inner`: with `s` exact, [`sin3_minimax`] alone;
    /// - `nested`: the worst over every true sine `t` that a first sine
    ///   within `first_ulp` ulp could have rounded to `s`
    ///   (|s - t| <= first_ulp * ulp(t)). With `first_ulp` the single
    ///   sine's bound, the largest of these over every `s` bounds the nested
    ///   result for every input x.
    ///
    /// The f64 references are off by about 1e-16 relative, noise beside
    /// the ulp (6e-8) they are counted in.
    fn poly_errors(s: f32, first_ulp: f64) -> (f64, f64) {
        let got = sin3_minimax(s) as f64;
        let (s, u) = (s as f64, ulp_at(s as f64));
        let inner = (got - sin3(s)).abs() / ulp_at(sin3(s));
        // The true sines t within first_ulp ulp(t) of s: the ulp halves
        // below the binade's floor q and doubles at its top 2q.
        let q = if s < f32::MIN_POSITIVE as f64 { 0.0 } else { u * 2f64.powi(23) };
        let lo = if q == 0.0 || s - first_ulp * u >= q { s - first_ulp * u } else { q.min(s - first_ulp * u / 2.0) };
        let hi =
            if q != 0.0 && 2.0 * q - s <= 2.0 * first_ulp * u { s + 2.0 * first_ulp * u } else { s + first_ulp * u };
        // |got - sin3(t)| is largest at an end of [lo, hi]; the ulp it is
        // counted in is smallest just below a power of two inside the range.
        let mut nested = [lo, hi].iter().map(|&t| (got - sin3(t)).abs() / ulp_at(sin3(t))).fold(0.0, f64::max);
        let (a, b) = (sin3(lo), sin3(hi));
        let p = 2f64.powi(b.abs().log2().floor() as i32);
        if a.abs() < p && p <= b.abs() {
            // The ulp just below p: half p's, or the subnormals' fixed one.
            let below = if p > f32::MIN_POSITIVE as f64 { ulp_at(p) / 2.0 } else { ulp_at(0.0) };
            nested = nested.max((got - p).abs() / below);
        }
        (inner, nested)
    }

    /// The worst `inner` and `nested` of [`poly_errors`] (and where) over
    /// every `step`-th f32 in [0, 1], on every core; odd to the bit, so
    /// [-1, 0] is the mirror image.
    fn poly_worst(step: u32, first_ulp: f64) -> [(f64, f32); 2] {
        let top = SIN3_LIMIT.to_bits();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let merge = |a: [(f64, f32); 2], b: [(f64, f32); 2]| {
            core::array::from_fn(|i| if b[i].0 > a[i].0 { b[i] } else { a[i] })
        };
        std::thread::scope(|scope| {
            let parts: std::vec::Vec<_> = (0..threads)
                .map(|k| {
                    scope.spawn(move || {
                        let mut w = [(0.0, 0.0f32); 2];
                        let mut bits = k * step;
                        while bits <= top {
                            let x = f32::from_bits(bits);
                            assert_eq!((-sin3_minimax(x)).to_bits(), sin3_minimax(-x).to_bits(), "odd at {x:e}");
                            let (inner, nested) = poly_errors(x, first_ulp);
                            w = merge(w, [(inner, x), (nested, x)]);
                            bits += threads * step;
                        }
                        w
                    })
                })
                .collect();
            parts.into_iter().map(|p| p.join().unwrap()).fold([(0.0, 0.0f32); 2], merge)
        })
    }

    /// The single sine's bound (issue 24) that the nested bound assumes of
    /// the first sine, libdevice's `sinf`: measured at 1.479 ulp on the GPU
    /// (docs/nested_sin.md). CUDA documents 2; that figure is printed too.
    const FIRST_SINE_ULP: f64 = 1.5;
    /// What the nested result may be off by, in ulp of its own f64 value.
    const NESTED_BOUND_ULP: f64 = 4.5;

    fn check_poly(step: u32) {
        let [inner, nested] = poly_worst(step, FIRST_SINE_ULP);
        let [_, nested2] = poly_worst(step, 2.0);
        std::println!(
            "sin3_minimax over every {step}th f32 of [0, 1]: {:.4} ulp at x = {:e}; nested, first sine within \
             {FIRST_SINE_ULP} ulp: {:.4} ulp at s = {:e} (within CUDA's documented 2 ulp: {:.4} ulp at s = {:e})",
            inner.0,
            inner.1,
            nested.0,
            nested.1,
            nested2.0,
            nested2.1
        );
        assert!(inner.0 <= SIN3_MINIMAX_MAX_ULP, "sin3_minimax: {inner:?}");
        assert!(nested.0 <= NESTED_BOUND_ULP, "nested: {nested:?}");
        assert_eq!(sin3_minimax(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sin3_minimax(0.0).to_bits(), 0.0f32.to_bits());
        assert!(sin3_minimax(f32::NAN).is_nan());
    }

    /// About a million arguments of the polynomial and of the nested bound.
    #[test]
    fn sin3_minimax_within_its_bounds() {
        check_poly(1021);
    }

    /// Every f32 in [0, 1] (1.07e9 of them; the negatives by oddness):
    /// about 15 minutes on 2 cores.
    /// `cargo test --release -p coalesce-kernels -- --ignored exhaustive`
    #[test]
    #[ignore]
    fn sin3_minimax_within_its_bounds_exhaustive() {
        check_poly(1);
    }
}
