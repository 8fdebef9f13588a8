//! Step 2: naive transpose the other way round (`docs/transpose.md`,
//! "2. naive_cols").
//!
//! **Idea:** step 1 with the thread mapping flipped: the 32 threads of a warp
//! now have consecutive *output* columns, so the warp writes 128 contiguous
//! bytes (coalesced) and reads 32 floats `cols * 4` bytes apart.
//!
//! **What it teaches:** which side to leave uncoalesced is not a matter of
//! taste, and the cheap side is the loads. A strided load brings whole
//! 32-byte sectors into L1, and the neighbouring warps of the block, which
//! read the next columns of the same rows, find their floats there: the
//! load's wasted 28 bytes per sector are used after all. L1 does not keep
//! stores (it writes through to L2), so each strided store stays a separate
//! 4-byte partial write of a sector all the way to L2. The sector counters
//! of steps 1 and 2 are mirror images; the DRAM bytes in `docs/transpose.md`
//! show the difference (step 1 moves a quarter more than the ideal, step 2
//! the ideal).

use super::{BLOCK_ROWS, Geometry, TILE};
use crate::ThreadCtx;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::tiles(TILE, BLOCK_ROWS, 0).over_output();

/// Transposes a `rows x cols` row-major matrix into `cols x rows`, threads
/// mapped along the output.
///
/// # Parameters
/// As [`super::naive`].
///
/// # Thread mapping
/// Block `TILE x BLOCK_ROWS`, grid `ceil(rows/TILE) x ceil(cols/TILE)` (the
/// output's tiles); thread `(tx, ty)` of block `(bx, by)` writes output row
/// `by*TILE + ty + k*BLOCK_ROWS`, column `bx*TILE + tx`.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn naive_cols<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    // The output is cols x rows: out_col indexes input rows, out_row input columns.
    let out_col = (b.x * TILE + t.x) as usize;
    for k in 0..TILE / BLOCK_ROWS {
        let out_row = (b.y * TILE + t.y + k * BLOCK_ROWS) as usize;
        if out_row < cols as usize && out_col < rows as usize {
            // SAFETY: out_row < cols and out_col < rows, so both indices are in bounds.
            unsafe { output.store(out_row * rows as usize + out_col, input.load(out_col * cols as usize + out_row)) };
        }
    }
}
