//! Step 1: one `sin` per launch, CUDA's accurate `sinf` (libdevice
//! `__nv_sinf`). Launched four times, the last three in place, it is the
//! unfused nested sine: each launch reads and writes the whole array, so the
//! nested sine moves four times the bytes it needs to.

use super::math::libdevice_sinf;
use crate::ThreadCtx;

/// What one launch applies to each element.
#[inline(always)]
pub(super) fn sin1(x: f32) -> f32 {
    libdevice_sinf(x)
}

/// `dst[i] = sin(src[i])` for `i < len`, libdevice's `sinf` (2 ulp
/// documented).
///
/// # Parameters
/// `len` floats at `src` and at `dst`; `src == dst` computes in place.
///
/// # Thread mapping and memory pattern
/// As [`super::map`]: grid-stride over 16-byte vectors, scalar head and tail.
///
/// # Safety
/// As [`super::map`].
#[inline(always)]
pub unsafe fn sin<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
    // SAFETY: forwarded from the caller.
    unsafe { super::map(ctx, src, dst, len, sin1) }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn sin_f32(src: *const f32, dst: *mut f32, len: u64) {
    // SAFETY: the host launcher checked lengths (and passes src == dst only for in place).
    unsafe { sin(&crate::gpu::Gpu, src, dst, len) }
}
