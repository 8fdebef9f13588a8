//! Step 4: the shared tile padded by one column, free of bank conflicts
//! (`docs/transpose.md`, "4. padded").
//!
//! **Idea:** make the tile `[32][33]`. Step 3's kernel, with one token of
//! its layout changed:
//!
//! ```diff
//! -        row * T + col
//! +        row * (T + 1) + col
//! ```
//!
//! Consecutive tile rows now start one bank apart, so the column read
//! `tile[tx][j]` (addresses 33 floats apart) touches 32 different banks: one
//! shared-memory wavefront instead of 32.
//!
//! **What it costs:** 32 unused floats per tile (128 bytes, 3%); the global
//! memory pattern is step 3's, coalesced on both sides.

use super::{BLOCK_ROWS, Geometry, TILE, TileLayout, tiled_with};
use crate::ThreadCtx;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::tiles(TILE, BLOCK_ROWS, TILE * (TILE + 1));

/// `[T][T + 1]`: a column steps `T + 1` floats, for `T = 32` one bank apart.
pub struct Padded;

impl TileLayout for Padded {
    fn floats<const T: usize>() -> usize {
        T * (T + 1)
    }
    #[inline(always)]
    fn at<const T: usize>(row: usize, col: usize) -> usize {
        row * (T + 1) + col
    }
}

/// Transposes a `rows x cols` row-major matrix into `cols x rows` through a
/// `TILE x (TILE + 1)` shared tile.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `TILE * (TILE + 1)` floats.
///
/// # Thread mapping
/// As [`super::tiled`].
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn padded<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded; the launch gives the layout's floats of shared memory.
    unsafe { tiled_with::<C, Padded, { TILE as usize }, { BLOCK_ROWS as usize }>(ctx, input, output, rows, cols) }
}
