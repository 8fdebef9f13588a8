//! # Exercise 3: remove the bank conflict by padding
//!
//! Shared memory is 32 *banks* of 4-byte words: word `w` lives in bank
//! `w % 32`. A warp's request takes one *wavefront* when its lanes touch
//! different banks (or the same word); lanes that need different words of
//! one bank are served one after another, a wavefront each.
//!
//! The tiled transpose of exercise 2 (the ladder's step 3) keeps its tile
//! as `[32][32]` floats: element `(row, col)` at word `row * 32 + col`. Its
//! writes go along a tile row (32 banks), but its reads go down a column:
//! words 32 apart, all in one bank: 32 wavefronts per request, a 32-way
//! conflict. The kernel below is step 3, written out; only the tile's layout
//! is yours: how many floats it takes, and where `(row, col)` lives.
//!
//! **Goal:** 1 wavefront per shared-memory request, with one float per
//! tile row at most beyond the `[32][32]` footprint.
//!
//! `cargo learn 3` grades it; `cargo learn 3 --solution` runs the ladder's
//! step 4, `kernels/src/transpose/04_padded.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE, TileLayout};

/// The tile's layout in shared memory, for a `T x T` tile.
pub struct Layout;

impl TileLayout for Layout {
    fn floats<const T: usize>() -> usize {
        // ---- your code: start ----
        T * T
        // ---- your code: end ----
    }

    fn at<const T: usize>(row: usize, col: usize) -> usize {
        // ---- your code: start ----
        row * T + col
        // ---- your code: end ----
    }
}

/// `input` and `output` hold `rows * cols` floats each and do not overlap;
/// the launch gives `Layout::floats::<TILE>()` floats of shared memory.
/// Block `(b.x, b.y)` moves the input tile at rows `b.y * 32 ..`, columns
/// `b.x * 32 ..`; its 32x8 threads each move 4 elements.
pub fn transpose<C: Checked>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    const T: usize = TILE as usize;
    const R: usize = BLOCK_ROWS as usize;
    let tile = ctx.shared::<f32>(Layout::floats::<T>());
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
            tile.set(Layout::at::<T>(j, tx), input.get(row * cols + col));
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
            output.set(out_row * rows + out_col, tile.get(Layout::at::<T>(tx, j)));
        }
    }
}
