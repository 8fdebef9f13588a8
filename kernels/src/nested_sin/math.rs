//! The sines the nested-sin kernels compose, on both targets.
//!
//! | function | what | on the GPU | on the host (emulator) |
//! | --- | --- | --- | --- |
//! | [`libdevice_sinf`] | CUDA's accurate `sinf` (2 ulp documented) | NVIDIA libdevice `__nv_sinf` | [`libdevice_sinf_port`]: the same algorithm, bit for bit |
//! | [`sin_unit`] | `__nv_sinf` for \|x\| < 2.35 (the output range of a sine and more), bit for bit | our code | the same code |
//! | [`sin_quarter`] | `__nv_sinf` for \|x\| <= 0.785 (below pi/4), bit for bit | our code | the same code |
//! | [`sin3_minimax`] | `sin(sin(sin(x)))` for \|x\| <= 1 in one degree-17 odd minimax polynomial (its own bits; at most [`SIN3_MINIMAX_MAX_ULP`] ulp) | our code | the same code (pure FMA arithmetic: the same bits) |
//! | [`sin_approx`] | the SFU's `sin.approx.f32` (fast math, absolute error growing with \|x\|) | `llvm.nvvm.sin.approx.f` | `f32::sin` (the hardware's rounding cannot be reproduced) |
//!
//! # How libdevice computes `sinf`
//!
//! Read from `libdevice.10.bc` (`llvm-dis`, CUDA 12.9): `j = rint(x * 2/pi)`
//! (an `f32` product, rounded to an integer through `int`); the reduced
//! argument `t = x - j * pi/2` by three FMAs with pi/2 split in three `f32`
//! parts (Cody-Waite); then on `t` (|t| <= pi/4) a degree-7 odd polynomial
//! for `sin` when `j` is even or a degree-8 even one for `cos` when `j` is
//! odd, and a sign flip when `j & 2`. Arguments with |x| >= 105615 (where
//! `j * P1` is no longer exact) and infinities take a Payne-Hanek path with a
//! 192-bit 2/pi.
//!
//! # The shortcut the fused kernel takes
//!
//! After one sine every argument lies in [-1, 1]. There `j` is -1, 0 or 1,
//! so the general machinery collapses: no integer conversion, no slow-path
//! test, and the quadrant logic becomes a few selects ([`sin_unit`]). After
//! three sines the argument is within [-0.7457, 0.7457], below pi/4, so `j`
//! is 0 and only the polynomial is left ([`sin_quarter`], 5 instructions).
//! Both perform *the same* IEEE operations libdevice performs for those
//! arguments, in the same order, so their results are identical to
//! `__nv_sinf`'s bit for bit: the fused kernel loses no accuracy at all
//! against four `__nv_sinf` calls, it only skips work whose outcome is known.

use crate::math::fma;

mod minimax;
pub use minimax::{SIN3_LIMIT, SIN3_MINIMAX_MAX_ULP, sin3_minimax};

// libdevice's constants (the f32 values of its hex-double literals).
/// `2/pi`, rounded to f32.
const TWO_OVER_PI: f32 = f32::from_bits(0x3f22_f983);
/// pi/2 = P1 + P2 + P3 (Cody-Waite; P1 has trailing zero bits so `j * P1` is exact).
const PIO2_1: f32 = f32::from_bits(0x3fc9_0fda);
const PIO2_2: f32 = f32::from_bits(0x33a2_2168);
const PIO2_3: f32 = f32::from_bits(0x27c2_34c5);
/// sin(t) ~ t + t^3 (S2 + t^2 (S1 + t^2 S0)) on |t| <= pi/4.
const S0: f32 = f32::from_bits(0xb94d_4153);
const S1: f32 = f32::from_bits(0x3c08_85e4);
const S2: f32 = f32::from_bits(0xbe2a_aaa8);
/// cos(t) ~ 1 + t^2 (C3 + t^2 (C2 + t^2 (C1 + t^2 C0))) on |t| <= pi/4.
const C0: f32 = f32::from_bits(0x37cb_ac00);
const C1: f32 = f32::from_bits(0xbab6_07ed);
const C2: f32 = f32::from_bits(0x3d2a_aabb);
const C3: f32 = f32::from_bits(0xbeff_ffff);
/// At and above this |x| libdevice leaves Cody-Waite for Payne-Hanek.
pub const SLOW_PATH_FROM: f32 = 105_615.0;
/// [`sin_unit`] matches `__nv_sinf` for |x| below this (where `rint(x * 2/pi)` is -1, 0 or 1).
pub const UNIT_LIMIT: f32 = 2.35;
/// [`sin_quarter`] matches `__nv_sinf` for |x| up to this (where `rint(x * 2/pi)` is 0).
pub const QUARTER_LIMIT: f32 = 0.785;

/// Round to the nearest integer, ties to even (PTX `cvt.rni.f32.f32`).
#[inline(always)]
fn rint(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::round_ties_even_f32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.round_ties_even()
    }
}

/// libdevice's polynomial stage (`__internal_sin_cos_kernel` of
/// `__nv_sinf`) on a reduced argument `t` in quadrant `i`.
#[inline(always)]
fn sin_poly(t: f32, i: i32) -> f32 {
    let odd = i & 1 != 0;
    let x2 = t * t;
    let c = if odd { 1.0 } else { t };
    let p = fma(x2, c, 0.0);
    let z = if odd { fma(C0, x2, C1) } else { S0 };
    let z = fma(z, x2, if odd { C2 } else { S1 });
    let z = fma(z, x2, if odd { C3 } else { S2 });
    let r = fma(z, p, c);
    if i & 2 != 0 { fma(r, -1.0, 0.0) } else { r }
}

/// CUDA's accurate `sinf`: libdevice's `__nv_sinf` on the GPU, and its exact
/// port [`libdevice_sinf_port`] on the host, so emulator results are the
/// GPU's bit for bit.
#[inline(always)]
pub fn libdevice_sinf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        unsafe extern "C" {
            // Linked in from libdevice.10.bc by build.rs.
            fn __nv_sinf(x: f32) -> f32;
        }
        // SAFETY: a pure math function, defined for every input.
        unsafe { __nv_sinf(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libdevice_sinf_port(x)
    }
}

/// `__nv_sinf` rewritten in Rust from libdevice's bitcode, operation for
/// operation (every FMA an FMA, every rounding where libdevice rounds), so it
/// returns the same bits for every `f32`. The GPU tests check that claim
/// against the real `__nv_sinf` on 2^24 random and special inputs.
pub fn libdevice_sinf_port(x: f32) -> f32 {
    // j through `int` as in libdevice (f2i.rn then i2f): a zero j is +0.
    let i = rint(x * TWO_OVER_PI) as i32;
    let j = i as f32;
    let (t, i) = if x.abs() < SLOW_PATH_FROM || x.is_nan() {
        let t = fma(j, -PIO2_1, x);
        let t = fma(j, -PIO2_2, t);
        (fma(j, -PIO2_3, t), i)
    } else if x.is_infinite() {
        (x * 0.0, 0) // NaN
    } else {
        payne_hanek(x)
    };
    sin_poly(t, i)
}

/// 2/pi in 192 bits, least significant word first (`__cudart_i2opi_f`).
const TWO_OVER_PI_BITS: [u32; 6] = [0x3c43_9041, 0xdb62_9599, 0xf534_ddc0, 0xfc27_57d1, 0x4e44_1529, 0xa2f9_836e];

/// libdevice's `__internal_trig_reduction_slowpath` for finite |x| >= 105615:
/// the reduced argument and the quadrant.
fn payne_hanek(x: f32) -> (f32, i32) {
    let bits = x.to_bits();
    let mut sign = bits & 0x8000_0000;
    let e = ((bits >> 23) & 0xff).wrapping_sub(128);
    let mantissa = (bits << 8) | 0x8000_0000;
    let idx = 4u32.wrapping_sub(e >> 5) as usize;
    let mut words = [0u32; 7];
    let mut hi = 0u32;
    for (word, &k) in words.iter_mut().zip(&TWO_OVER_PI_BITS) {
        let wide = k as u64 * mantissa as u64 + hi as u64;
        *word = wide as u32;
        hi = (wide >> 32) as u32;
    }
    words[6] = hi;
    let shift = e & 31;
    let (mut hi, mut lo) = (words[idx + 2], words[idx + 1]);
    if shift != 0 {
        hi = (hi << shift).wrapping_add(lo >> (32 - shift));
        lo = (lo << shift).wrapping_add(words[idx] >> (32 - shift));
    }
    let mut q = hi >> 30;
    hi = (hi << 2).wrapping_add(lo >> 30);
    lo <<= 2;
    let carry = hi >> 31;
    q = q.wrapping_add(carry);
    let mut q = q as i32;
    if sign != 0 {
        q = q.wrapping_neg();
    }
    if carry != 0 {
        hi = !hi;
        lo = !lo;
        sign ^= 0x8000_0000;
    }
    let fixed = (((hi as u64) << 32) | lo as u64) as i64;
    // pi/2 * 2^-64, the double libdevice multiplies by.
    let r = (fixed as f64 * f64::from_bits(0x3bf9_21fb_5444_2d19)) as f32;
    (if sign != 0 { -r } else { r }, q)
}

/// `__nv_sinf(x)` for |x| < [`UNIT_LIMIT`] (and NaN), bit for bit, without
/// libdevice's general machinery: `j = rint(x * 2/pi)` is -1, 0 or 1, so
/// the quadrant is a select and the sign flip of `j = -1` folds into the
/// polynomial's constant term (`c = j`).
///
/// Cost: 16 instructions (against about 25 for `__nv_sinf`'s fast path).
#[inline(always)]
pub fn sin_unit(x: f32) -> f32 {
    let j = rint(x * TWO_OVER_PI);
    let t = fma(j, -PIO2_1, x);
    let t = fma(j, -PIO2_2, t);
    let t = fma(j, -PIO2_3, t);
    let odd = j != 0.0;
    let x2 = t * t;
    // libdevice: c = 1 in odd quadrants, then r = -r for j = -1; here
    // c = j = -1 gives -p and -c, hence exactly -r (r is never 0 there).
    // In the even quadrant libdevice's t is x itself (its integer j is +0);
    // rint's j may be -0, which would turn x = -0 into t = +0, so c = x.
    let c = if odd { j } else { x };
    let p = fma(x2, c, 0.0);
    let z = if odd { fma(C0, x2, C1) } else { S0 };
    let z = fma(z, x2, if odd { C2 } else { S1 });
    let z = fma(z, x2, if odd { C3 } else { S2 });
    fma(z, p, c)
}

/// `__nv_sinf(x)` for |x| <= [`QUARTER_LIMIT`] (and NaN), bit for bit: `j`
/// is 0, the reduction leaves `x` as it is, and what is left is libdevice's
/// sine polynomial: 5 instructions.
#[inline(always)]
pub fn sin_quarter(x: f32) -> f32 {
    let x2 = x * x;
    let p = fma(x2, x, 0.0);
    let z = fma(S0, x2, S1);
    let z = fma(z, x2, S2);
    fma(z, p, x)
}

/// The SFU's `sin.approx.f32` (CUDA's `__sinf`): an absolute error that
/// grows with |x| (the unit's own range reduction is short), no relative
/// bound near the zeros of sine, no correct bits for huge |x| (1e30 and
/// beyond); `docs/nested_sin.md` has the errors measured on the GPU. On the
/// host, where no such unit exists, `f32::sin`.
#[inline(always)]
pub fn sin_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        unsafe extern "C" {
            #[link_name = "llvm.nvvm.sin.approx.f"]
            fn sin_approx_f32(x: f32) -> f32;
        }
        // SAFETY: an instruction defined for every input.
        unsafe { sin_approx_f32(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `step`-th f32 with |x| <= limit, both signs, plus the limit itself.
    fn floats_up_to(limit: f32, step: u32) -> impl Iterator<Item = f32> {
        (0..=limit.to_bits()).step_by(step as usize).chain([limit.to_bits()]).flat_map(|b| {
            let x = f32::from_bits(b);
            [x, -x]
        })
    }

    fn same_bits(what: &str, x: f32, got: f32, want: f32) {
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{what}({x:e} = {:#x}) = {got:e} ({:#x}), libdevice gives {want:e} ({:#x})",
            x.to_bits(),
            got.to_bits(),
            want.to_bits()
        );
    }

    fn check_shortcuts(step: u32) {
        for x in floats_up_to(UNIT_LIMIT, step) {
            same_bits("sin_unit", x, sin_unit(x), libdevice_sinf_port(x));
        }
        for x in floats_up_to(QUARTER_LIMIT, step) {
            same_bits("sin_quarter", x, sin_quarter(x), libdevice_sinf_port(x));
        }
        for x in [f32::NAN, -f32::NAN] {
            assert!(sin_unit(x).is_nan() && sin_quarter(x).is_nan());
        }
    }

    /// About 2 million arguments of each shortcut, subnormals and zeros included.
    #[test]
    fn shortcuts_match_libdevice_bit_for_bit() {
        check_shortcuts(1021);
    }

    /// Every f32 in both ranges (about 2.2e9 arguments): minutes on one core.
    /// `cargo test --release -p coalesce-kernels -- --ignored exhaustive`
    #[test]
    #[ignore]
    fn shortcuts_match_libdevice_bit_for_bit_exhaustive() {
        check_shortcuts(1);
    }

    #[test]
    fn the_limits_hold_for_the_ranges_the_fused_kernel_feeds_them() {
        // After one sine |x| <= 1, after two <= sin(1), after three <= sin(sin(1)).
        let after1 = 1.0f32;
        let after2 = sin_unit(after1);
        let after3 = sin_unit(after2);
        assert!(after1 < UNIT_LIMIT && after2 < UNIT_LIMIT);
        assert!(after3 <= QUARTER_LIMIT, "{after3}");
        // And at QUARTER_LIMIT libdevice's quadrant is still 0.
        assert_eq!(rint(QUARTER_LIMIT * TWO_OVER_PI), 0.0);
        assert_eq!(rint(UNIT_LIMIT * TWO_OVER_PI), 1.0);
    }

    #[test]
    fn port_special_values() {
        assert_eq!(libdevice_sinf_port(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(libdevice_sinf_port(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sin_unit(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sin_quarter(-0.0).to_bits(), (-0.0f32).to_bits());
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            assert!(libdevice_sinf_port(x).is_nan());
        }
        let tiny = f32::from_bits(1); // the smallest subnormal: sin(x) = x
        assert_eq!(libdevice_sinf_port(tiny), tiny);
        assert_eq!(libdevice_sinf_port(-tiny), -tiny);
        // Payne-Hanek: within 2 ulp of the f64 sine at the extremes.
        for x in [f32::MAX, -f32::MAX, 105_615.0, 1.0e6, 3.0e38, 1.0e20] {
            let got = libdevice_sinf_port(x) as f64;
            let want = (x as f64).sin();
            assert!((got - want).abs() <= 2.0 * f32::EPSILON as f64 * want.abs().max(1e-30), "{x}: {got} vs {want}");
        }
    }
}
