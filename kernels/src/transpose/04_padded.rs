//! Step 4: the shared tile padded by one column, free of bank conflicts.
//!
//! **Idea:** make the tile `[32][33]`. Consecutive tile rows now start one
//! bank apart, so the column read `tile[tx][j]` (addresses 33 floats apart)
//! touches 32 different banks: one shared-memory wavefront instead of 32.
//!
//! **What it costs:** 32 unused floats per tile (128 bytes, 3%); the global
//! memory pattern is step 3's, coalesced on both sides.

use super::through_shared_tile;
use crate::ThreadCtx;

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
    // SAFETY: forwarded; the launch gives TILE * (TILE + 1) floats of shared memory.
    unsafe { through_shared_tile::<C, super::PaddedTile>(ctx, input, output, rows, cols) }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn transpose_padded(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: the host launcher checked lengths and launch geometry.
    unsafe { padded(&crate::gpu::Gpu, input, output, rows, cols) }
}
