//! Step 4: fast math. Four `sin.approx.f32`, the special function unit's
//! sine: one instruction each (a quarter-rate SFU op), so the kernel is
//! memory-bound with room to spare.
//! (`docs/nested_sin.md`, "4. fast")
//!
//! **What it costs:** accuracy, and a range. The SFU reduces its argument
//! with a short 2/pi, so the absolute error grows with |x|: measured on an
//! H100 for the four in a row, 3.7e-5 for |x| <= 100 pi, 3.8e-4 near
//! |x| = 3.6e3, and no correct bits at all for |x| >= 1e30 (errors up to
//! 0.68). An absolute error means no relative bound: where the result is
//! small (x near a multiple of pi) it may have no correct bits, so its
//! error in ulp is unbounded (1.3e10 ulp measured). Valid for moderate
//! arguments (|x| up to a few hundred) where an absolute error around 1e-5
//! is acceptable; not a drop-in for `sinf`.

use super::math::sin_approx;

/// What one launch applies to each element.
#[inline(always)]
pub fn sin4(x: f32) -> f32 {
    sin_approx(sin_approx(sin_approx(sin_approx(x))))
}

#[cfg(target_arch = "nvptx64")]
super::elementwise_entry!(nested_sin_fast => sin4);
