//! Step 6: step 4 on a 64x64 tile, 16 elements per thread
//! (`docs/transpose.md`, "6. wide").
//!
//! **Idea:** steps 3-5 fixed the access *pattern*; what is left is how many
//! bytes each thread keeps in flight. Step 4's thread issues 4 loads before
//! it waits; here a 64x4 block moves a 64x64 tile and each thread issues 16
//! independent loads (64 bytes) before its first store to shared memory. The
//! kernel is step 4's, [`super::tiled_with`] with [`super::Padded`], at
//! another tile size:
//!
//! ```diff
//! -    tiled_with::<C, Padded, 32, 8>
//! +    tiled_with::<C, Padded, 64, 4>
//! ```
//!
//! **What it costs:** 16.25 KiB of shared memory per block instead of
//! 4.1 KiB, and twice the rows at the bottom edge that a partial tile checks.

use super::{Geometry, Padded, tiled_with};
use crate::ThreadCtx;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::tiles(WIDE_TILE, WIDE_BLOCK_ROWS, WIDE_TILE * (WIDE_TILE + 1));

/// Side of the square tile of steps 6 and 7.
pub const WIDE_TILE: u32 = 64;
/// Rows of threads per block of step 6: 64 x 4 = 256 threads.
pub const WIDE_BLOCK_ROWS: u32 = 4;

/// Transposes a `rows x cols` row-major matrix into `cols x rows` through a
/// `64 x 65` shared tile.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `64 * 65` floats (16.25 KiB).
///
/// # Thread mapping
/// Block 64x4, grid `ceil(cols/64) x ceil(rows/64)`; as [`super::tiled`]
/// with 64 for `TILE` and 4 for `BLOCK_ROWS`.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn wide<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded; the launch gives the layout's floats of shared memory.
    unsafe {
        tiled_with::<C, Padded, { WIDE_TILE as usize }, { WIDE_BLOCK_ROWS as usize }>(ctx, input, output, rows, cols)
    }
}
