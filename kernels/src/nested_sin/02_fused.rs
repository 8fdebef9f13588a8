//! Step 2: fusion. The four sines in one kernel: one read and one write
//! of the array instead of four of each.
//!
//! **What it costs:** nothing in accuracy (the same four `__nv_sinf` calls,
//! so the same bits as step 1 launched four times), but the kernel is no
//! longer memory-bound. Each `__nv_sinf` is about 25 instructions on its fast
//! path (a float-to-int rounding and back, three FMAs of Cody-Waite
//! reduction, a test for the Payne-Hanek slow path, quadrant selects, the
//! polynomial), 100 per element for four: more than an H100 can issue in the
//! time DRAM takes to stream the element's 8 bytes (`docs/nested_sin.md`
//! has ncu's instruction count and issue-slot use).

use super::Geometry;
use super::math::libdevice_sinf;

/// How this step is launched: one launch.
pub const GEOMETRY: Geometry = Geometry { launches: 1 };

/// What one launch applies to each element.
#[inline(always)]
pub fn sin4(x: f32) -> f32 {
    libdevice_sinf(libdevice_sinf(libdevice_sinf(libdevice_sinf(x))))
}

map_kernel!(pub unsafe fn fused<C>(ctx, src, dst, len) = map(sin4));
