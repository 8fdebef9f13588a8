//! Scalar math that `core` lacks on one of the two targets.

/// `a * b + c` with one rounding: `fma.rn.f32` on the GPU, the same on the host.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}
