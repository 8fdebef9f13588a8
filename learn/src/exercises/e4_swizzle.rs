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
//! As exercise 3: the kernel is the ladder's tiled transpose, the layout is
//! yours.
//!
//! **Goal:** 1 wavefront per shared-memory request with exactly `T * T`
//! floats of shared memory.
//!
//! `cargo learn 4` grades it; `cargo learn 4 --solution` runs the ladder's
//! step 5, `kernels/src/transpose/05_swizzled.rs`.

use coalesce::kernels::ThreadCtx;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE, TileLayout, tiled_with};

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

/// # Safety
/// `input` and `output` hold `rows * cols` floats each and do not overlap;
/// the launch gives `TILE * TILE` floats of shared memory.
pub unsafe fn transpose<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded.
    unsafe { tiled_with::<C, Layout, { TILE as usize }, { BLOCK_ROWS as usize }>(ctx, input, output, rows, cols) }
}
