//! Step 8: step 7 with its grid over the output's tiles
//! (`docs/transpose.md`, "8. vec4_cols").
//!
//! **Idea:** steps 1-7 fixed what one block does; this step changes only
//! which tiles run *at the same time*. The GPU starts blocks in grid order,
//! x fastest, and about a thousand run at once. With step 7's grid over the
//! input's tiles, those blocks read whole input rows, and each writes its 64
//! output rows 256 bytes at a time, scattered over the whole output. Turn the
//! grid to cover the output's tiles, as step 2 turned step 1, and the blocks
//! running at once write whole output rows instead, while their reads are
//! the scattered ones. Both orders move the same bytes in the same
//! requests; which side wants the order is a property of the memory system,
//! measured in `docs/transpose.md`: as in step 2, it is the writes. The
//! kernel is step 7's, with the tile's two block indices swapped:
//!
//! ```diff
//! -    vec4_with::<C, false>   // block (x, y) transposes input tile (y, x)
//! +    vec4_with::<C, true>    // block (x, y) transposes input tile (x, y)
//! ```
//!
//! **What it costs:** nothing in the kernel. The grid's y now counts the
//! input's tile columns, so `cols` is limited by the grid's 65535 rows of
//! blocks (4,194,240 columns) where step 7 limits `rows`.

use super::Geometry;
use super::vec4::{GEOMETRY as VEC4, vec4_with};
use crate::ThreadCtx;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = VEC4.over_output();

/// Transposes a `rows x cols` row-major matrix into `cols x rows` through a
/// `64 x 65` shared tile, with 16-byte global accesses where aligned, blocks
/// in the output's tile order.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `64 * 65` floats (16.25 KiB).
///
/// # Thread mapping
/// Block 16x16, grid `ceil(rows/64) x ceil(cols/64)` (the output's tiles):
/// block `(bx, by)` transposes the input tile at rows `bx*64..`, columns
/// `by*64..`; within the block, threads as [`super::vec4`].
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn vec4_cols<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded; the launch is this step's geometry, over the output's tiles.
    unsafe { vec4_with::<C, true>(ctx, input, output, rows, cols) }
}
