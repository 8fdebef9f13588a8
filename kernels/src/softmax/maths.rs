//! The exponential of softmax and the (max, sum) states that threads, warps,
//! chunks and blocks merge their partial results with; why `exp` is taken this
//! way and how special values come out is in the module docs (Numerics).

/// `log2(e)`: `exp(d) = 2^(d * LOG2_E)`.
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.ex2.approx.ftz.f"]
    fn ex2_approx_ftz(x: f32) -> f32;
}

/// `2^x`: `ex2.approx.ftz.f32` on the GPU (one MUFU instruction, about 2 ulp,
/// results below 2^-126 flushed to 0), `f32::exp2` on the host.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a pure arithmetic instruction, defined for every input.
        unsafe { ex2_approx_ftz(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.exp2()
    }
}

/// `exp(x - base)`, for `base` a row (or chunk) maximum, never `-inf`.
#[inline(always)]
pub fn exp_minus(x: f32, base: f32) -> f32 {
    exp2((x - base) * LOG2_E)
}

/// The exponent base for a running maximum `m`: `m` itself, or 0 while every
/// value seen is `-inf` (masked), so that `exp(-inf - base)` is 0, not NaN.
#[inline(always)]
pub fn base_of(m: f32) -> f32 {
    if m == f32::NEG_INFINITY { 0.0 } else { m }
}

/// Merges two partial softmax states. A state `(m, s)` covers some elements
/// `x`: `m` is their maximum and `s = sum exp(x - base_of(m))`. Symmetric bit
/// for bit (`max` and `+` commute), so a butterfly leaves every lane with the
/// same result.
#[inline(always)]
pub fn combine(m1: f32, s1: f32, m2: f32, s2: f32) -> (f32, f32) {
    let m = m1.max(m2);
    let base = base_of(m);
    (m, s1 * exp_minus(m1, base) + s2 * exp_minus(m2, base))
}
