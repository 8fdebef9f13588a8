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
//! As exercise 3: the kernel is the ladder's tiled transpose (`tile.rs`);
//! where the layout puts `(row, col)` is yours, and its size stays the
//! trait's `T * T`.
//!
//! **Goal:** 1 wavefront per shared-memory request with exactly `T * T`
//! floats of shared memory.
//!
//! `cargo learn 4` grades it; `cargo learn 4 --solution` runs the ladder's
//! step 5, `kernels/src/transpose/05_swizzled.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::TileLayout;

/// The tile's layout in shared memory, for a `T x T` tile.
pub struct Layout;

// `floats` keeps the trait's own: the tile's `T * T`.
impl TileLayout for Layout {
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
