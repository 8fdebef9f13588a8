//! Step 4: fast math. Four `sin.approx.f32`, the special function unit's
//! sine: one instruction each (a quarter-rate SFU op), so the kernel is
//! memory-bound with room to spare.
//!
//! **What it costs:** accuracy, and a range. The PTX ISA bounds the absolute
//! error by 2^-20.5 for |x| <= 100 pi; past that the SFU's own range
//! reduction loses bits as |x| grows. An absolute bound means no relative
//! bound: near the zeros of sine (x close to a multiple of pi) the result
//! may have few or no correct bits, so its error in ulp is unbounded. The
//! GPU tests measure and print both. Use it where an absolute error of about
//! 1e-6 is fine and the inputs are moderate.

use super::math::sin_approx;
use crate::ThreadCtx;

/// What one launch applies to each element.
#[inline(always)]
pub(super) fn sin4(x: f32) -> f32 {
    sin_approx(sin_approx(sin_approx(sin_approx(x))))
}

/// `dst[i] ~ sin(sin(sin(sin(src[i]))))` with four `sin.approx.f32`.
///
/// # Parameters, thread mapping, memory pattern
/// As [`super::sin`].
///
/// # Safety
/// As [`super::map`].
#[inline(always)]
pub unsafe fn fast<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
    // SAFETY: forwarded from the caller.
    unsafe { super::map(ctx, src, dst, len, sin4) }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn nested_sin_fast(src: *const f32, dst: *mut f32, len: u64) {
    // SAFETY: the host launcher checked lengths.
    unsafe { fast(&crate::gpu::Gpu, src, dst, len) }
}
