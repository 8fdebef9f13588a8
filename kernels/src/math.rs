//! Scalar math that `core` lacks on one of the two targets.

/// `a * b + c` with one rounding: `fma.rn.f32` on the GPU, the host's
/// `mul_add` (the same operation) on the emulator.
///
/// Written out because LLVM's NVPTX backend does not contract a plain
/// `a * b + c` (rustc emits no `contract` flag): it prints `mul.rn.f32` and
/// `add.rn.f32`, whose explicit rounding forbids ptxas to fuse them, which
/// halves the FMA throughput.
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
