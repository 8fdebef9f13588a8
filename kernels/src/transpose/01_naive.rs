//! Step 1: naive transpose (`docs/transpose.md`, "1. naive").
//!
//! **Idea:** each thread copies its elements straight from `in[r][c]` to
//! `out[c][r]`; no shared memory.
//!
//! **Memory pattern:** the 32 threads of a warp have consecutive `c`, so the
//! warp reads 128 contiguous bytes of one input row (coalesced: 4 sectors) but
//! writes 32 floats that lie `rows * 4` bytes apart in the output (32 sectors,
//! each of which carries 4 useful bytes of 32). The write side moves up to 8x
//! the bytes it needs, and the caches only partly rescue it. (The emulator
//! counts both: `cargo run --release -- --emulate --counters`.)

use super::{BLOCK_ROWS, Geometry, TILE};
use crate::ThreadCtx;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::tiles(TILE, BLOCK_ROWS, 0);

/// Transposes a `rows x cols` row-major matrix into `cols x rows`.
///
/// # Parameters
/// `input`: `rows * cols` floats; `output`: `rows * cols` floats, written as
/// the `cols x rows` transpose.
///
/// # Thread mapping
/// Block `TILE x BLOCK_ROWS`, grid `ceil(cols/TILE) x ceil(rows/TILE)`; thread
/// `(tx, ty)` of block `(bx, by)` handles column `bx*TILE + tx` and rows
/// `by*TILE + ty + k*BLOCK_ROWS`.
///
/// # Safety
/// `input` and `output` must be valid for `rows * cols` floats and not
/// overlap; the launch must use [`super::Variant::launch_dims`].
#[inline(always)]
pub unsafe fn naive<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let col = (b.x * TILE + t.x) as usize;
    for k in 0..TILE / BLOCK_ROWS {
        let row = (b.y * TILE + t.y + k * BLOCK_ROWS) as usize;
        if row < rows as usize && col < cols as usize {
            // SAFETY: row < rows and col < cols, so both indices are in bounds.
            unsafe { output.store(col * rows as usize + row, input.load(row * cols as usize + col)) };
        }
    }
}
