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
//! conflict. Step 3 runs here as `tile.rs` writes it out; only the tile's
//! layout is yours: how many floats it takes, and where `(row, col)` lives.
//!
//! **Goal:** 1 wavefront per shared-memory request, with one float per
//! tile row at most beyond the `[32][32]` footprint.
//!
//! `cargo learn 3` grades it; `cargo learn 3 --solution` runs the ladder's
//! step 4, `kernels/src/transpose/04_padded.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::TileLayout;

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

/// The tiled transpose around your layout (`tile.rs`, the ladder's step 3
/// written out): block `(b.x, b.y)` moves the input tile at rows
/// `b.y * 32 ..`, columns `b.x * 32 ..`, through a tile laid out by `Layout`.
pub fn transpose<C: Checked>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    super::tile::transpose_with::<Layout, C>(ctx, input, output, rows, cols)
}
