//! Step 5: the shared tile XOR-swizzled, free of bank conflicts without padding.
//!
//! **Idea:** keep the `[32][32]` tile of step 3 but store element
//! `(row, col)` at column `col ^ row`. Along a row the XOR with a fixed `row`
//! is a permutation of 0..32, so the row-wise stores still touch 32 banks;
//! down a column (`col` fixed, `row` = 0..32) the physical columns
//! `col ^ row` are again all different: 32 banks, one wavefront.
//!
//! **What it costs:** an XOR per shared access, and no wasted shared memory,
//! which matters once tiles are large or vector-wide (a padded row breaks
//! 16-byte alignment; a swizzle does not). This is how CUTLASS and the
//! tensor-core copy engines lay out shared memory.

use super::through_shared_tile;
use crate::ThreadCtx;

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
    // SAFETY: forwarded; the launch gives TILE * TILE floats of shared memory
    // and `col ^ row` < TILE.
    unsafe { through_shared_tile::<C, super::SwizzledTile>(ctx, input, output, rows, cols) }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn transpose_swizzled(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: the host launcher checked lengths and launch geometry.
    unsafe { swizzled(&crate::gpu::Gpu, input, output, rows, cols) }
}
