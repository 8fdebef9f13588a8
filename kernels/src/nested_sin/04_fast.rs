//! Step 4: fast math. Four `sin.approx.f32`, the special function unit's
//! sine: one instruction each (a quarter-rate SFU op), so the kernel is
//! memory-bound with room to spare.
//! (`docs/nested_sin.md`, "4. fast")
//!
//! **What it costs:** accuracy, and a range. The SFU reduces its argument
//! with a short 2/pi, so the absolute error grows with |x|, and for huge
//! |x| (1e30 and beyond) no bits are correct. An absolute error means no
//! relative bound: where the result is small (x near a multiple of pi) it
//! may have no correct bits, so its error in ulp is unbounded. Valid for
//! moderate arguments (|x| up to a few hundred) where that absolute error is
//! acceptable; not a drop-in for `sinf`. The errors measured on the GPU, for
//! the four in a row, are in `docs/nested_sin.md` ("Accuracy").

use super::Geometry;
use super::math::sin_approx;

/// How this step is launched: one launch.
pub const GEOMETRY: Geometry = Geometry { launches: 1 };

/// What one launch applies to each element.
#[inline(always)]
pub fn sin4(x: f32) -> f32 {
    sin_approx(sin_approx(sin_approx(sin_approx(x))))
}

map_kernel!(pub unsafe fn fast<C>(ctx, src, dst, len) = map(sin4));
