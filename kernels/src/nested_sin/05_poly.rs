//! Step 5: one polynomial for the three inner sines. Step 3 at the roof of
//! an H100 is issue-bound on an H200, whose copy roof is 1.4x higher.
//! (`docs/nested_sin.md`, "5. poly")
//!
//! **Idea:** the first sine's result lies in [-1, 1], and on [-1, 1]
//! `sin(sin(sin(s)))` is a smooth odd function: one degree-17 odd minimax
//! polynomial ([`math::sin3_minimax`](super::math::sin3_minimax), 10
//! instructions) takes the place of step 3's `sin_unit`, `sin_unit`,
//! `sin_quarter` (37): no range reduction, no quadrant, and one rounding
//! where three f32 sines round three times.
//!
//! **What it costs:** libdevice's bits (step 3's are unchanged; this step
//! has its own). The first sine is still `__nv_sinf`. The bound, in ulp of
//! the f64 result: `sin3_minimax` is within 1.09 ulp of sin(sin(sin(s)))
//! for every f32 `s` in [-1, 1], and for every such `s`, whatever true sine
//! within 1.5 ulp (the single sine's bound; 1.479 measured on the GPU for
//! `__nv_sinf`) the first sine rounded to it, the nested result is within
//! 3.50 ulp; within CUDA's documented 2 ulp, 4.50 (at s = 2.4e-4, where the
//! first sine's own error, counted in the ulp of a result just below a power
//! of two, is already 4). Both are checked over every f32 of [-1, 1] by
//! `sin3_minimax_within_its_bounds_exhaustive` (`nested_sin/math/minimax.rs`).
//!
//! **Registers:** 32 a thread on Hopper (`blocks_per_sm(8)`), so that an SM holds
//! eight blocks: each thread has a vector of loads in flight at a time, and
//! on an H200 six blocks' warps left DRAM short of the roof
//! (`docs/nested_sin.md`, "Registers for eight blocks a SM").

use super::Geometry;
use super::math::{libdevice_sinf, sin3_minimax};

/// How this step is launched: one launch.
pub const GEOMETRY: Geometry = Geometry { launches: 1 };

/// What one launch applies to each element.
#[inline(always)]
pub fn sin4(x: f32) -> f32 {
    // |x| any -> [-1, 1] -> sin(sin(sin(.))) in one polynomial.
    sin3_minimax(libdevice_sinf(x))
}

map_kernel!(pub unsafe fn poly<C>(ctx, src, dst, len) = map(sin4), blocks_per_sm(8));
