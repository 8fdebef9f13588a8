//! Step 3: the fused kernel at the memory roof, with the same bits.
//! (`docs/nested_sin.md`, "3. fused_reduced")
//!
//! **Idea:** only the first sine sees an arbitrary argument. Its result lies
//! in [-1, 1], where `j = rint(x * 2/pi)`, libdevice's quadrant, can only be
//! -1, 0 or 1: the float-to-int round trip, the Payne-Hanek test and the
//! general quadrant logic go, and what is left is a few selects and the
//! polynomial ([`math::sin_unit`](super::math::sin_unit), 16 instructions).
//! The second sine's result lies in [-0.8415, 0.8415] (still past pi/4 at
//! the ends, so the third sine needs `sin_unit` too), and the third's in
//! [-0.7457, 0.7457], below pi/4, where `j = 0` and libdevice's work is its
//! bare sine polynomial ([`math::sin_quarter`](super::math::sin_quarter),
//! 5 instructions).
//!
//! **What it costs:** nothing. The shortcuts perform the same IEEE
//! operations `__nv_sinf` performs on those arguments, so every output is
//! bit-identical to step 2's and to the unfused four launches, with two
//! `sin_unit` and one `sin_quarter` in place of three full `__nv_sinf`
//! (about 25 instructions each): fewer instructions per element, which
//! moves the kernel from issue-bound (step 2) to memory-bound
//! (`docs/nested_sin.md` has ncu's instruction counts, issue-slot use and
//! DRAM throughput for both).
//!
//! **Registers:** 32 a thread on Hopper (`blocks_per_sm(8)`), eight blocks an SM, as
//! step 5: more warps to cover the loads (`docs/nested_sin.md`, "Registers
//! for eight blocks a SM").

use super::Geometry;
use super::math::{libdevice_sinf, sin_quarter, sin_unit};

/// How this step is launched: one launch.
pub const GEOMETRY: Geometry = Geometry { launches: 1 };

/// What one launch applies to each element.
#[inline(always)]
pub fn sin4(x: f32) -> f32 {
    // |x| any -> [-1, 1] -> [-0.8415, 0.8415] -> [-0.7457, 0.7457] -> out.
    sin_quarter(sin_unit(sin_unit(libdevice_sinf(x))))
}

map_kernel!(pub unsafe fn fused_reduced<C>(ctx, src, dst, len) = map(sin4), blocks_per_sm(8));
