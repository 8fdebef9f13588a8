//! Step 1: one `sin` per launch, CUDA's accurate `sinf` (libdevice
//! `__nv_sinf`). Launched four times, the last three in place, it is the
//! unfused nested sine: each launch reads and writes the whole array, so the
//! nested sine moves four times the bytes it needs to.
//! (`docs/nested_sin.md`, "1. unfused")

use super::Geometry;
use super::math::libdevice_sinf;

/// How this step is launched: four launches, in place after the first.
pub const GEOMETRY: Geometry = Geometry { launches: 4 };

/// What one launch applies to each element: libdevice's `sinf` (2 ulp
/// documented).
#[inline(always)]
pub fn sin1(x: f32) -> f32 {
    libdevice_sinf(x)
}

map_kernel!(pub unsafe fn unfused<C>(ctx, src, dst, len) = map(sin1));
