//! # Exercise 4: remove the bank conflict by a swizzle
//!
//! Padding costs 32 floats of shared memory per tile, and breaks the tile's
//! rows out of 128-byte alignment (which 16-byte accesses need). A
//! *swizzle* keeps the `[32][32]` footprint and permutes each row's
//! columns instead, so that the 32 elements of a column land in 32
//! different banks. Element `(row, col)` goes to column `f(row, col)` of
//! its row, where `f` is a permutation of `0..32` for each row; the XOR of
//! the column with the row is the classic one.
//!
//! As exercise 3: the kernel is the ladder's tiled transpose, written out;
//! the layout is yours.
//!
//! **Goal:** 1 wavefront per shared-memory request with exactly `T * T`
//! floats of shared memory.
//!
//! `cargo learn 4` grades it; `cargo learn 4 --solution` runs the ladder's
//! step 5, `kernels/src/transpose/05_swizzled.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE, TileLayout};

/// The tile's layout in shared memory, for a `T x T` tile.
pub struct Layout;

impl TileLayout for Layout {
    fn floats<const T: usize>() -> usize {
        T * T
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
