//! Step 1: one `sin` per launch, CUDA's accurate `sinf` (libdevice
//! `__nv_sinf`). Launched four times, the last three in place, it is the
//! unfused nested sine: each launch reads and writes the whole array, so the
//! nested sine moves four times the bytes it needs to.
//! (`docs/nested_sin.md`, "1. unfused")

use super::math::libdevice_sinf;

/// What one launch applies to each element: libdevice's `sinf` (2 ulp
/// documented).
#[inline(always)]
pub fn sin1(x: f32) -> f32 {
    libdevice_sinf(x)
}

#[cfg(target_arch = "nvptx64")]
super::elementwise_entry!(sin_f32 => sin1);
