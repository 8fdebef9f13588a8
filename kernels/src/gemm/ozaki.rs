//! Ozaki scheme II's arithmetic: an FP32 GEMM as products of 8-bit
//! integers, exact, modulo a set of pairwise coprime moduli, and the
//! result rebuilt by the Chinese remainder theorem (Ozaki, Uchino and
//! Imamura; GEMMul8, Uchino, Ozaki and Imamura, SC'25). The integer
//! products are what `wgmma` `m64nNk32` of signed bytes computes
//! ([`crate::ThreadCtx::wgmma_m64n256k32_s8`], measured by the report's
//! `int8_peak`), so the method trades one FP32 product for `L` INT8 ones.
//!
//! **The scheme**, for `C = A B` with `A` `m x k`, `B` `k x n`:
//!
//! 1. Row `i` of `A` is scaled by `2^(alpha - e_i)`, `2^e_i` above its
//!    largest `|a|` ([`exponent`]), and rounded to integers `A'` of at most
//!    `2^alpha` in magnitude ([`to_integer`], exact but for that one
//!    rounding); column `j` of `B` likewise, to `B'`.
//! 2. For each modulus `p_l` ([`MODULI`], at most 256), `A' mod p_l` and
//!    `B' mod p_l` are signed bytes ([`residue`]), and their product is an
//!    exact `i32` sum (`k` below `2^31 / 128^2 = 131072`).
//! 3. `C' = A' B'` is the one integer in `(-P/2, P/2)`, `P` the product of
//!    the `L` moduli, that has those residues ([`reconstruct`]): exact,
//!    since `|C'| <= k 2^(2 alpha) < P / 2` by the choice of `alpha`
//!    ([`alpha`]).
//! 4. `C = 2^(e_i - alpha) C' 2^(f_j - alpha)`, rounded once to f32.
//!
//! **The error** is step 1's alone: each integer is within `1/2` of the
//! scaled value, so `|a - a^| <= 2^(e_i - alpha - 1) <= 2^-alpha max_h
//! |a_ih|`, and `|c - c^| <= 2^-alpha (max |a_i.| sum_h |b_hj| + sum_h
//! |a_ih| max |b_.j|)` plus the final rounding. Against `sum_h |a_ih
//! b_hj|` the bound is tight where a row's values are alike in size and
//! loose where they spread: an element far below its row's peak keeps few
//! bits. More moduli buy about 4 bits of `alpha` each.

/// The most moduli: their product stays below `2^128` (each at most `2^8`,
/// fifteen under `2^120`).
pub const MAX_MODULI: usize = 15;

/// The moduli step 17 takes (`17_wgmma_ozaki.rs`): 9 give an error at
/// most cuBLAS SGEMM's on every input class of `examples/ozaki2_accuracy`
/// (8 lose on log-spread magnitudes at depth 1003).
pub const LADDER_MODULI: usize = 9;

/// The moduli, largest first: from 256 down, each number coprime with
/// every one taken before it, so any first `L` of them are pairwise
/// coprime. At most 256, so a residue in symmetric form (`-128..=127` for
/// 256) is a signed byte.
pub const MODULI: [u32; MAX_MODULI] = {
    let mut out = [0u32; MAX_MODULI];
    let (mut n, mut candidate) = (0, 256u32);
    while n < MAX_MODULI {
        let mut coprime = true;
        let mut i = 0;
        while i < n {
            coprime &= gcd(out[i], candidate) == 1;
            i += 1;
        }
        if coprime {
            out[n] = candidate;
            n += 1;
        }
        candidate -= 1;
    }
    out
};

const fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `P`, the product of the first `moduli` of [`MODULI`].
pub const fn modulus_product(moduli: usize) -> u128 {
    let (mut p, mut i) = (1u128, 0);
    while i < moduli {
        p *= MODULI[i] as u128;
        i += 1;
    }
    p
}

/// The operands' bits for `moduli` moduli and depth `k`: the largest
/// `alpha` with `2 k 2^(2 alpha) < P`, so that `|A' B'| < P / 2` for
/// integers of magnitude at most `2^alpha` (0 where none fits).
///
/// From the bit lengths, no loop over `alpha`: a kernel computes it once a
/// thread.
pub const fn alpha(moduli: usize, k: usize) -> u32 {
    let (p, x) = (modulus_product(moduli), 2 * k as u128);
    if x >= p || x == 0 {
        return if x == 0 { 63 } else { 0 };
    }
    // `x 4^a < p` needs `bits(x) + 2 a <= bits(p)`; the largest such `a`
    // passes or is one too many.
    let (bp, bx) = (128 - p.leading_zeros(), 128 - x.leading_zeros());
    let a = if (bp - bx) / 2 > 63 { 63 } else { (bp - bx) / 2 };
    if a > 0 && x << (2 * a) >= p { a - 1 } else { a }
}

/// The scale exponent of a row (or column) whose largest finite `|x|` is
/// `peak` (its bits, as `gemm_maxima` finds them; 0 for a row of zeros):
/// the `e` with `peak < 2^e <= 2 peak`, so that the row times `2^(alpha -
/// e)` lies within `2^alpha`.
pub const fn exponent(peak: u32) -> i32 {
    let biased = (peak >> 23) as i32;
    if peak == 0 {
        0
    } else if biased == 0 {
        // A subnormal, `peak * 2^-149`.
        32 - peak.leading_zeros() as i32 - 149
    } else {
        biased - 126
    }
}

/// `x * 2^shift` rounded to the nearest integer, ties to even: exact but
/// for that rounding, from the f32's bits (no floating-point operation).
/// Its magnitude must fit an `i64` (the callers' `2^alpha`, `alpha <=
/// 62`); 0 for a non-finite `x` (the fix-up's business).
pub const fn to_integer(x: f32, shift: i32) -> i64 {
    let bits = x.to_bits();
    let biased = ((bits >> 23) & 0xff) as i32;
    if biased == 0xff {
        return 0;
    }
    // x = mantissa * 2^(power), mantissa with its implicit bit.
    let (mantissa, power) = if biased == 0 {
        ((bits & 0x7f_ffff) as i64, -149)
    } else {
        ((bits & 0x7f_ffff | 0x80_0000) as i64, biased - 150)
    };
    let at = power + shift;
    let magnitude = if at >= 0 {
        mantissa << at
    } else if at < -40 {
        0
    } else {
        let drop = -at;
        let (kept, rest, half) = (mantissa >> drop, mantissa & ((1i64 << drop) - 1), 1i64 << (drop - 1));
        kept + (rest > half || (rest == half && kept & 1 == 1)) as i64
    };
    if bits >> 31 == 1 { -magnitude } else { magnitude }
}

/// `v mod p` in symmetric form: in `-p/2..p/2` (`-128..=127` for 256), a
/// signed byte for every modulus of [`MODULI`].
pub const fn residue(v: i64, p: u32) -> i8 {
    let r = v.rem_euclid(p as i64);
    (if r >= (p as i64 + 1) / 2 { r - p as i64 } else { r }) as i8
}

/// [`residue`] for `|v| < 2^48`, in 32-bit arithmetic: `|v| = h 2^24 + l`
/// and `h (2^24 mod p) + l < 2^32`, whose remainder by a constant `p` is a
/// multiply-high and a subtraction. A GPU has no 64-bit divider, so the
/// remainder of an `i64` by a constant is a chain of 32-bit multiplies, and
/// the residue pass takes one per modulus and element.
pub const fn residue_narrow(v: i64, p: u32) -> i8 {
    let m = v.unsigned_abs();
    let (h, l) = ((m >> 24) as u32, (m & 0xff_ffff) as u32);
    let r = (h * ((1 << 24) % p) + l) % p;
    let r = if v < 0 && r != 0 { p - r } else { r };
    (if r >= p.div_ceil(2) { r as i32 - p as i32 } else { r as i32 }) as i8
}

/// The integers the residue pass writes, `|v| <= 2^alpha` for any depth,
/// stay in [`residue_narrow`]'s range.
const _: () = assert!(alpha(LADDER_MODULI, 1) < 48);

/// The weight of modulus `l` among the first `moduli`: `w = (P / p_l)
/// ((P / p_l)^-1 mod p_l)`, which is 1 modulo `p_l` and 0 modulo the others.
pub const fn weight(l: usize, moduli: usize) -> u128 {
    let p = MODULI[l];
    let others = modulus_product(moduli) / p as u128;
    others * inverse((others % p as u128) as u32, p) as u128
}

/// The integer in `(-P/2, P/2)` whose residue modulo each of the first
/// `residues.len()` moduli is `residues[l]` (any representative, such as
/// an `i32` product not yet reduced): `sum_l (r_l mod p_l) w_l mod P`.
pub fn reconstruct(residues: &[i64]) -> i128 {
    let moduli = residues.len();
    let p = modulus_product(moduli);
    let sum = residues.iter().enumerate().fold(0u128, |sum, (l, &r)| {
        let r = r.rem_euclid(MODULI[l] as i64) as u128;
        // r < 256 and w < P < 2^120: the product fits, and so does the sum
        // once reduced.
        (sum + r * weight(l, moduli) % p) % p
    });
    if sum > p / 2 { sum as i128 - p as i128 } else { sum as i128 }
}

/// `x^-1 mod p` for `x` coprime with `p <= 256`, by trial.
const fn inverse(x: u32, p: u32) -> u32 {
    let (x, mut inv) = (x % p, 1);
    while x * inv % p != 1 {
        inv += 1;
    }
    inv
}

/// `RADICES[l][j]`: `p_0 p_1 .. p_(j-1) mod p_l` for `j < l`, the place
/// value of digit `j` modulo `p_l`; `RADICES[l][l]`: the inverse of `p_0 ..
/// p_(l-1)` modulo `p_l` ([`garner`]'s factors).
const RADICES: [[u32; MAX_MODULI]; MAX_MODULI] = {
    let mut out = [[0u32; MAX_MODULI]; MAX_MODULI];
    let mut l = 0;
    while l < MAX_MODULI {
        let (p, mut place, mut j) = (MODULI[l], 1u32, 0);
        while j < l {
            out[l][j] = place;
            place = place * MODULI[j] % p;
            j += 1;
        }
        out[l][l] = inverse(place, p);
        l += 1;
    }
    out
};

/// [`reconstruct`] in small integers and one f64 sum, as a GPU thread
/// computes it: [`garner`] of the residues.
pub fn reconstruct_f64(residues: &[i64]) -> f64 {
    garner(residues.len(), |l| residues[l].rem_euclid(MODULI[l] as i64) as u32)
}

/// The integer in `(-P/2, P/2)`, `P` the product of the first `moduli`
/// moduli, whose residue modulo `p_l` is `residue(l)` (in `0..p_l`), in
/// f64: Garner's mixed-radix digits `d_l`, each in symmetric form modulo
/// `p_l`, `C' = d_0 + p_0 (d_1 + p_1 (d_2 + ..))`, then the digits summed
/// from the top in f64. Modulo `p_l` the digits above `l` vanish, so `d_l
/// = (r_l - sum_(j<l) d_j p_0 .. p_(j-1)) (p_0 .. p_(l-1))^-1 mod p_l`: the
/// sum of at most 14 products of a digit (below 2^7) and a place value
/// (below 2^8) stays below `2^19` in `i32` with no reduction on the way,
/// and times the inverse below `2^27`: one reduction a digit. A value whose
/// magnitude is small has zero digits above its own, so nothing cancels:
/// each of the `L` steps of the f64 sum rounds once, relative error within
/// `2 L 2^-53`, far below an f32's.
#[inline(always)]
pub fn garner(moduli: usize, residue: impl Fn(usize) -> u32) -> f64 {
    // Written out for every `l` and `j`, so that each digit is a register
    // (an array indexed at run time is a stack frame in a kernel).
    let mut digits = [0i32; MAX_MODULI];
    unroll!(l < MAX_MODULI, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14], {
        if l < moduli {
            let q = Modulus::of(l);
            let mut x = residue(l) as i32;
            unroll!(j < l, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], {
                x -= digits[j] * RADICES[l][j] as i32;
            });
            // |x| < 2^19 and the inverse is below 2^8: their product fits
            // an i32, and one reduction gives the digit.
            let (x, p) = (q.reduce(x * RADICES[l][l] as i32) as i32, q.p as i32);
            digits[l] = if x >= (p + 1) / 2 { x - p } else { x };
        }
    });
    let mut v = 0.0f64;
    unroll!(i < MAX_MODULI, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14], {
        let l = MAX_MODULI - 1 - i;
        if l < moduli {
            v = v * MODULI[l] as f64 + digits[l] as f64;
        }
    });
    v
}

/// `sum_h x(h) y(h)` over `h < k` for integers of at most `2^alpha`
/// ([`alpha`] of `moduli` and `k`), as the scheme computes it: for each
/// modulus the `i32` sum of the residues' products (exact for `k` below
/// `131072`), reduced, then rebuilt by [`garner`]. What step 17 computes for
/// one element before it scales it back.
pub fn product_by_residues(moduli: usize, k: usize, x: impl Fn(usize) -> i64, y: impl Fn(usize) -> i64) -> f64 {
    garner(moduli, |l| {
        let q = Modulus::of(l);
        let p = q.p;
        q.reduce((0..k).fold(0i32, |sum, h| sum.wrapping_add(residue(x(h), p) as i32 * residue(y(h), p) as i32)))
    })
}

/// Modulus `l` of [`MODULI`] with its reciprocal `m = floor(2^32 / p)`:
/// it reduces an `i32` in a few integer operations (Barrett's), where a
/// modulus known only at run time would take a division.
#[derive(Clone, Copy, Debug)]
pub struct Modulus {
    pub p: u32,
    m: u32,
}

/// The reciprocals of [`MODULI`], as [`Modulus`] takes them.
const RECIPROCALS: [u32; MAX_MODULI] = {
    let mut out = [0u32; MAX_MODULI];
    let mut l = 0;
    while l < MAX_MODULI {
        out[l] = ((1u64 << 32) / MODULI[l] as u64) as u32;
        l += 1;
    }
    out
};

impl Modulus {
    /// Modulus `l`, below [`MAX_MODULI`].
    #[inline(always)]
    pub fn of(l: usize) -> Modulus {
        Modulus { p: MODULI[l], m: RECIPROCALS[l] }
    }

    /// `x mod p` in `0..p`: an `i32` sum of residue products, reduced.
    /// `t = (|x| m) >> 32` is `|x| / p` or one less, so `|x| - t p` is
    /// below `2 p`.
    #[inline(always)]
    pub fn reduce(self, x: i32) -> u32 {
        let u = x.unsigned_abs();
        let r = u - ((u as u64 * self.m as u64) >> 32) as u32 * self.p;
        let r = if r >= self.p { r - self.p } else { r };
        if x < 0 && r != 0 { self.p - r } else { r }
    }

    /// `(a + b) mod p` for `a` and `b` in `0..p`.
    #[inline(always)]
    pub fn add(self, a: u32, b: u32) -> u32 {
        if a + b >= self.p { a + b - self.p } else { a + b }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_moduli_are_pairwise_coprime_bytes() {
        assert_eq!(&MODULI[..6], &[256, 255, 253, 251, 247, 241]);
        for (i, &p) in MODULI.iter().enumerate() {
            assert!(p <= 256 && MODULI[..i].iter().all(|&q| gcd(p, q) == 1), "{p}");
        }
        for v in [-1_000_000_007i64, -129, -128, -1, 0, 1, 127, 128, 255, 1 << 40] {
            for &p in &MODULI {
                let r = residue(v, p);
                assert_eq!((v - r as i64).rem_euclid(p as i64), 0, "{v} mod {p}");
            }
        }
        let mut next = super::super::xorshift(0xfeed_f00d);
        let edges = [i32::MIN, i32::MIN + 1, -65_536, -257, -256, -255, -1, 0, 1, 255, 256, 257, 1 << 30, i32::MAX];
        for x in edges.into_iter().chain((0..2000).map(|_| next() as i32)) {
            for (l, &p) in MODULI.iter().enumerate() {
                let (q, want) = (Modulus::of(l), (x as i64).rem_euclid(p as i64) as u32);
                assert_eq!(q.reduce(x), want, "{x} mod {p}");
                assert_eq!(q.add(want, p - 1), (want + p - 1) % p, "{want} + {} mod {p}", p - 1);
            }
        }
        let narrow =
            [-(1i64 << 48) + 1, -(1 << 35), -(1 << 24) - 1, -(1 << 24), -257, -1, 0, 1, 255, 1 << 24, (1 << 48) - 1];
        for v in narrow.into_iter().chain((0..2000).map(|_| next() as i64 >> (16 + next() % 48))) {
            for &p in &MODULI {
                assert_eq!(residue_narrow(v, p), residue(v, p), "{v} mod {p}");
            }
        }
        assert_eq!(residue(128, 256), -128);
        assert_eq!(residue(127, 255), 127);
        assert_eq!(residue(128, 255), -127);
    }

    #[test]
    fn alpha_keeps_every_product_sum_below_half_the_modulus() {
        for moduli in 2..=MAX_MODULI {
            for k in [1usize, 3, 1000, 1003, 16384, 100_000, 131_071] {
                let a = alpha(moduli, k);
                if 2 * k as u128 >= modulus_product(moduli) {
                    assert_eq!(a, 0, "{moduli} moduli are too few for k {k}");
                    continue;
                }
                let bound = (2 * (k as u128)) << (2 * a);
                assert!(bound < modulus_product(moduli), "{moduli} moduli, k {k}: alpha {a}");
                assert!((2 * (k as u128)) << (2 * (a + 1)) >= modulus_product(moduli) || a == 62);
            }
        }
        // About 4 bits a modulus: 7 moduli at k = 1003 give 22.
        assert_eq!(alpha(7, 1003), 22);
        // The largest `alpha` that fits, as a search from 0 finds it.
        let mut next = super::super::xorshift(0x0dd_ba11);
        for moduli in 1..=MAX_MODULI {
            let ks = [0usize, 1, 2, 3, 127, 128, 129, 1 << 20, u32::MAX as usize];
            for k in ks.into_iter().chain((0..200).map(|_| (next() >> (next() % 64)) as usize)) {
                let mut want = 0;
                while want < 63 && (2 * (k as u128)) << (2 * (want + 1)) < modulus_product(moduli) {
                    want += 1;
                }
                assert_eq!(alpha(moduli, k), want, "{moduli} moduli, k {k}");
            }
        }
    }

    #[test]
    fn to_integer_rounds_once_to_nearest_even() {
        assert_eq!(to_integer(1.5, 0), 2);
        assert_eq!(to_integer(2.5, 0), 2);
        assert_eq!(to_integer(-2.5, 0), -2);
        assert_eq!(to_integer(-3.5, 0), -4);
        assert_eq!(to_integer(0.75, 2), 3);
        assert_eq!(to_integer(1e-39, 150), (1e-39f64 * 2f64.powi(150)).round() as i64);
        assert_eq!(to_integer(f32::MAX, -100), (f32::MAX as f64 * 2f64.powi(-100)).round() as i64);
        assert_eq!(to_integer(f32::NAN, 3), 0);
        for x in [0.3f32, -7.25, 1.0e-3, 123_456.79, -1e-20] {
            for shift in [-10, 0, 5, 22, 40, 70] {
                let want = (x as f64 * 2f64.powi(shift)).round_ties_even();
                if want.abs() < 2f64.powi(62) {
                    assert_eq!(to_integer(x, shift), want as i64, "{x} * 2^{shift}");
                }
            }
        }
    }

    /// Garner's digits rebuild every integer of the symmetric range, to f64
    /// precision: small ones exactly, the extremes within an ulp or two.
    #[test]
    fn reconstruct_f64_agrees_with_the_exact_reconstruction() {
        let mut next = super::super::xorshift(0x1234_5678_9abc_def1);
        for moduli in 1..=MAX_MODULI {
            let p = modulus_product(moduli);
            let half = (p / 2) as i128;
            let mut values = std::vec![0i128, 1, -1, 5, -5, 255, -256, half - 1, -(half - 1)];
            values.extend((0..200).map(|_| (next() as u128 * next() as u128 % p) as i128 - half));
            for v in values.into_iter().filter(|v| v.abs() < half) {
                let residues: std::vec::Vec<i64> =
                    MODULI[..moduli].iter().map(|&q| v.rem_euclid(q as i128) as i64).collect();
                assert_eq!(reconstruct(&residues), v, "{moduli} moduli: {v}");
                let (got, want) = (reconstruct_f64(&residues), v as f64);
                assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs(), "{moduli} moduli: {v}: {got}");
                if v.abs() < 1 << 53 {
                    assert_eq!(got, want, "{moduli} moduli: {v}");
                }
            }
        }
    }

    #[test]
    fn exponents_put_each_peak_just_below_a_power_of_two() {
        for peak in [1.0f32, 1.5, 0.75, 3e38, 1e-39, 1.4e-45, f32::MIN_POSITIVE] {
            let e = exponent(peak.to_bits());
            let (lo, hi) = (2f64.powi(e - 1), 2f64.powi(e));
            assert!(lo <= peak as f64 && (peak as f64) < hi, "{peak:e}: e {e}");
        }
    }

    /// The scheme end to end on integers: per-modulus products of the
    /// signed-byte residues, summed as `i32`s, rebuild the exact product.
    #[test]
    fn residue_products_rebuild_the_exact_integer_product() {
        let mut next = super::super::xorshift(0x9e37_79b9_7f4a_7c15u64);
        for (moduli, k) in [(6, 33), (7, 1003), (9, 17), (MAX_MODULI, 5)] {
            let a = alpha(moduli, k);
            let limit = 1i64 << a;
            let mut int = || (next() % (2 * limit as u64 + 1)) as i64 - limit;
            let (x, y): (std::vec::Vec<i64>, std::vec::Vec<i64>) = (0..k).map(|_| (int(), int())).unzip();
            let exact: i128 = x.iter().zip(&y).map(|(&p, &q)| p as i128 * q as i128).sum();
            let residues: std::vec::Vec<i64> = (0..moduli)
                .map(|l| {
                    let p = MODULI[l];
                    x.iter().zip(&y).map(|(&u, &v)| residue(u, p) as i32 * residue(v, p) as i32).sum::<i32>() as i64
                })
                .collect();
            assert_eq!(reconstruct(&residues), exact, "{moduli} moduli, k {k}, alpha {a}");
            assert_eq!(reconstruct_f64(&residues), exact as f64, "{moduli} moduli, k {k}, alpha {a}");
            assert_eq!(product_by_residues(moduli, k, |h| x[h], |h| y[h]), exact as f64, "{moduli} moduli, k {k}");
        }
    }
}
