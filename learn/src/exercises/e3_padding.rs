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
//! conflict. The kernel below is step 3 itself; only the tile's layout is
//! yours: how many floats it takes, and where `(row, col)` lives.
//!
//! **Goal:** 1 wavefront per shared-memory request, by giving each row one
//! float more than it holds.
//!
//! `cargo learn 3` grades it; `cargo learn 3 --solution` runs the ladder's
//! step 4, `kernels/src/transpose/04_padded.rs`.

use coalesce::kernels::ThreadCtx;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE, TileLayout, tiled_with};

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

/// # Safety
/// `input` and `output` hold `rows * cols` floats each and do not overlap;
/// the launch gives `Layout::floats::<TILE>()` floats of shared memory.
pub unsafe fn transpose<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded.
    unsafe { tiled_with::<C, Layout, { TILE as usize }, { BLOCK_ROWS as usize }>(ctx, input, output, rows, cols) }
}
