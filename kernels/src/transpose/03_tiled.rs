//! Step 3: coalesced transpose through a shared-memory tile, bank conflicts
//! left in on purpose.
//!
//! **Idea:** a block first reads a 32x32 tile row by row into shared memory,
//! then writes it out row by row from the tile's columns. Both global memory
//! sides now move 128 contiguous bytes per warp (4 sectors), fixing step 1.
//!
//! **What it costs:** the tile is `[32][32]` floats, so the column read
//! `tile[tx][j]` has addresses 32 floats apart: all 32 lanes of a warp hit the
//! same shared-memory bank and the access is replayed 32 times (a 32-way bank
//! conflict). Step 4 removes this with one token.

use super::through_shared_tile;
use crate::ThreadCtx;

/// Transposes a `rows x cols` row-major matrix into `cols x rows` through a
/// `TILE x TILE` shared tile.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `TILE * TILE` floats (4 KiB).
///
/// # Thread mapping
/// As [`super::naive`] for the load; for the store, thread `(tx, ty)` writes
/// output row `bx*TILE + ty + k*BLOCK_ROWS`, column `by*TILE + tx`.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn tiled<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded; the launch gives TILE * TILE floats of shared memory.
    unsafe { through_shared_tile::<C, super::PlainTile>(ctx, input, output, rows, cols) }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn transpose_tiled(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: the host launcher checked lengths and launch geometry.
    unsafe { tiled(&crate::gpu::Gpu, input, output, rows, cols) }
}
