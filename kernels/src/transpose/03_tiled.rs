//! Step 3: coalesced transpose through a shared-memory tile, bank conflicts
//! left in on purpose (`docs/transpose.md`, "3. tiled").
//!
//! **Idea:** a block first reads a 32x32 tile row by row into shared memory,
//! then writes it out row by row from the tile's columns. Both global memory
//! sides now move 128 contiguous bytes per warp (4 sectors), fixing step 1.
//!
//! **What it costs:** the tile is `[32][32]` floats ([`Plain`]), so the
//! column read `tile[tx][j]` has addresses 32 floats apart: all 32 lanes of a
//! warp hit the same shared-memory bank and the access is replayed 32 times
//! (a 32-way bank conflict). Steps 4 and 5 change only [`Plain`]'s one line.
//! `cargo run --release -- --emulate --counters` shows it without a GPU: 32
//! wavefronts per shared load request at the store loop's line, 1 after
//! either fix.

use super::{BLOCK_ROWS, Geometry, TILE};
use crate::ThreadCtx;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::tiles(TILE, BLOCK_ROWS, TILE * TILE);

/// Where element `(row, col)` of a `T x T` tile lives in shared memory.
/// Steps 3, 4 and 5 differ only in this function.
pub trait TileLayout {
    /// Floats of shared memory the layout needs for a `T x T` tile: the
    /// tile's own `T * T`, unless the layout pads it.
    fn floats<const T: usize>() -> usize {
        T * T
    }
    /// The shared-memory index of element `(row, col)`.
    fn at<const T: usize>(row: usize, col: usize) -> usize;
}

/// `[T][T]`, row-major. A column is `T` floats apart: for `T = 32`, one bank.
pub struct Plain;

impl TileLayout for Plain {
    #[inline(always)]
    fn at<const T: usize>(row: usize, col: usize) -> usize {
        row * T + col
    }
}

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
    // SAFETY: forwarded; the launch gives the layout's floats of shared memory.
    unsafe { tiled_with::<C, Plain, { TILE as usize }, { BLOCK_ROWS as usize }>(ctx, input, output, rows, cols) }
}

/// The tiled transpose for any layout `L`, a `T x T` tile and `T x R`
/// threads (`T / R` elements per thread).
///
/// # Safety
/// As [`super::naive`]; shared memory holds `L::floats::<T>()` floats and
/// the block is `T x R` threads.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // `k` picks the row as well as the register
pub unsafe fn tiled_with<C: ThreadCtx, L: TileLayout, const T: usize, const R: usize>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    let tile = ctx.shared::<f32>(L::floats::<T>());
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (tx, ty) = (t.x as usize, t.y as usize);
    let (rows, cols) = (rows as usize, cols as usize);
    let row0 = b.y as usize * T;
    let col = b.x as usize * T + tx;
    // Interior tiles (all but the right and bottom edges) take a path with
    // no bounds checks, so each thread's loads issue back to back.
    let interior = row0 + T <= rows && b.x as usize * T + T <= cols;

    // Load: a warp reads 32 consecutive floats of one input row (coalesced)
    // and stores them along one tile row.
    if interior {
        // T entries, of which the first T / R are used (an array length
        // cannot be T / R on stable Rust); the rest are dead and vanish.
        let mut v = [0.0f32; T];
        for k in 0..T / R {
            // SAFETY: interior tile: every row and column is in bounds.
            v[k] = unsafe { input.load((row0 + ty + k * R) * cols + col) };
        }
        for k in 0..T / R {
            // SAFETY: L::at stays inside the tile's shared memory.
            unsafe { tile.store(L::at::<T>(ty + k * R, tx), v[k]) };
        }
    } else {
        for k in 0..T / R {
            let j = ty + k * R;
            let row = row0 + j;
            if row < rows && col < cols {
                // SAFETY: row < rows, col < cols; L::at inside the tile.
                let v = unsafe { input.load(row * cols + col) };
                // SAFETY: L::at stays inside the tile's shared memory.
                unsafe { tile.store(L::at::<T>(j, tx), v) };
            }
        }
    }
    ctx.sync_threads();

    // Store: a warp writes 32 consecutive floats of one output row (coalesced)
    // and reads them down one tile column: where the bank conflicts are.
    let out_col = row0 + tx; // an input row
    let out_row0 = b.x as usize * T; // an input column
    for k in 0..T / R {
        let j = ty + k * R;
        let out_row = out_row0 + j;
        if interior || (out_row < cols && out_col < rows) {
            // SAFETY: out_row < cols, out_col < rows: inside the rows x cols output.
            unsafe { output.store(out_row * rows + out_col, tile.load(L::at::<T>(tx, j))) };
        }
    }
}
