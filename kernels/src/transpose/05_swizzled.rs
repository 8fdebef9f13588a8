//! Step 5: the shared tile XOR-swizzled, free of bank conflicts without
//! padding (`docs/transpose.md`, "5. swizzled").
//!
//! **Idea:** keep step 3's `[32][32]` tile but store element `(row, col)` at
//! column `col ^ row`. Step 3's kernel, with its layout line changed:
//!
//! ```diff
//! -        row * T + col
//! +        row * T + (col ^ row)
//! ```
//!
//! Along a row the XOR with a fixed `row` is a permutation of 0..32, so the
//! row-wise stores still touch 32 banks; down a column (`col` fixed, `row` =
//! 0..32) the physical columns `col ^ row` are again all different: 32 banks,
//! one wavefront.
//!
//! **What it costs:** an XOR per shared access, and no shared memory wasted.
//! That matters when a padded row would break the alignment of 16-byte
//! shared-memory accesses, or when the tile is large: the layouts CUTLASS and
//! the tensor-core copy engines use are swizzles.

use super::{BLOCK_ROWS, Geometry, TILE, TileLayout, tiled_with};
use crate::ThreadCtx;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::tiles(TILE, BLOCK_ROWS, TILE * TILE);

/// `[T][T]` with column `col ^ row`: for `T` a power of two the XOR stays
/// below `T`, a permutation within each row and a spread down each column.
pub struct Swizzled;

impl TileLayout for Swizzled {
    #[inline(always)]
    fn at<const T: usize>(row: usize, col: usize) -> usize {
        row * T + (col ^ row)
    }
}

/// Transposes a `rows x cols` row-major matrix into `cols x rows` through an
/// XOR-swizzled `TILE x TILE` shared tile.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `TILE * TILE` floats (4 KiB).
///
/// # Thread mapping
/// As [`super::tiled`].
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn swizzled<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded; the launch gives the layout's floats of shared
    // memory, and `col ^ row` < TILE.
    unsafe { tiled_with::<C, Swizzled, { TILE as usize }, { BLOCK_ROWS as usize }>(ctx, input, output, rows, cols) }
}
