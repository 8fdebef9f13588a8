//! Step 2: fusion. The four sines in one kernel: one read and one write
//! of the array instead of four of each.
//!
//! **What it costs:** nothing in accuracy (the same four `__nv_sinf` calls,
//! so the same bits as step 1 launched four times), but the kernel is no
//! longer memory-bound. Each `__nv_sinf` is about 25 instructions on its fast
//! path (a float-to-int rounding and back, three FMAs of Cody-Waite
//! reduction, a test for the Payne-Hanek slow path, quadrant selects, the
//! polynomial), 100 per element for four: more than an H100 can issue in the
//! time DRAM takes to stream the element's 8 bytes. DESIGN.md measured the
//! scalar form at 59% of the copy roof; with 16-byte accesses it reaches 70%
//! (ncu: 98 instructions per element, 78% of issue slots busy).

use super::math::libdevice_sinf;
use crate::ThreadCtx;

/// What one launch applies to each element.
#[inline(always)]
pub(super) fn sin4(x: f32) -> f32 {
    libdevice_sinf(libdevice_sinf(libdevice_sinf(libdevice_sinf(x))))
}

/// `dst[i] = sin(sin(sin(sin(src[i]))))` with four `__nv_sinf` calls.
///
/// # Parameters, thread mapping, memory pattern, safety
/// As [`super::sin`].
///
/// # Safety
/// As [`super::map`].
#[inline(always)]
pub unsafe fn fused<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
    // SAFETY: forwarded from the caller.
    unsafe { super::map(ctx, src, dst, len, sin4) }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn nested_sin_fused(src: *const f32, dst: *mut f32, len: u64) {
    // SAFETY: the host launcher checked lengths.
    unsafe { fused(&crate::gpu::Gpu, src, dst, len) }
}
