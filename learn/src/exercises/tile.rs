//! The kernel around exercises 3 and 4's layouts: the ladder's tiled
//! transpose (step 3, `kernels/src/transpose/03_tiled.rs`), written out
//! with the tile's layout as a parameter. The exercises' files hold only
//! their layouts; this is where `floats` sizes the tile and `at` places
//! each element, on the way in (along a tile row) and out (down a column).
//! Its accesses count as the exercise's.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE, TileLayout};

/// `input` and `output` hold `rows * cols` floats each and do not overlap;
/// the launch gives `L::floats::<TILE>()` floats of shared memory.
/// Block `(b.x, b.y)` moves the input tile at rows `b.y * 32 ..`, columns
/// `b.x * 32 ..`; its 32x8 threads each move 4 elements.
pub fn transpose_with<L: TileLayout, C: Checked>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    const T: usize = TILE as usize;
    const R: usize = BLOCK_ROWS as usize;
    let tile = ctx.shared::<f32>(L::floats::<T>());
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (tx, ty, rows, cols) = (t.x as usize, t.y as usize, rows as usize, cols as usize);
    let (row0, col0) = (b.y as usize * T, b.x as usize * T);
    // In: a warp reads 32 consecutive floats of an input row (coalesced)
    // into tile row j.
    for k in 0..T / R {
        let j = ty + k * R;
        let (row, col) = (row0 + j, col0 + tx);
        if row < rows && col < cols {
            tile.set(L::at::<T>(j, tx), input.get(row * cols + col));
        }
    }
    // Every element of the tile is in place before any thread reads it.
    ctx.sync_threads();
    // Out: a warp writes 32 consecutive floats of an output row (coalesced)
    // from tile column j: lane tx reads tile row tx.
    for k in 0..T / R {
        let j = ty + k * R;
        let (out_row, out_col) = (col0 + j, row0 + tx);
        if out_row < cols && out_col < rows {
            output.set(out_row * rows + out_col, tile.get(L::at::<T>(tx, j)));
        }
    }
}
