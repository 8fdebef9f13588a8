//! # Exercise 2: stage a tile through shared memory
//!
//! Exercise 1 moved the strided side from the stores to the loads: a
//! transpose read and written straight from global memory has one strided
//! side whichever way its lanes walk. Shared memory removes it. A block
//! reads a 32x32 tile with lanes along input rows (coalesced), stores it
//! into shared memory, waits at a barrier (`ctx.sync_threads()`) until the
//! whole tile is there, then reads the tile down its columns and writes
//! output rows with lanes along them (coalesced again). Shared memory has
//! no sectors: any lane may read any word of it.
//!
//! Here block `(b.x, b.y)` owns the *input* tile at rows `b.y * 32 ..`,
//! columns `b.x * 32 ..`, with 32x8 threads; the launch gives it 32 * 32
//! floats of shared memory: `ctx.shared::<f32>(32 * 32)` is a view of them,
//! with `load(i)` and `store(i, v)` like the global views. As written, the
//! kernel is exercise 1's starting point: coalesced loads, strided stores.
//!
//! **Goal:** 4 sectors per request on both global sides.
//!
//! `cargo learn 2` grades it; `cargo learn 2 --solution` runs the ladder's
//! step 3, `kernels/src/transpose/03_tiled.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE};

/// `input` and `output` hold `rows * cols` floats each and do not overlap;
/// the launch gives `TILE * TILE` floats of shared memory.
pub fn transpose<C: Checked>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (rows, cols, tile, block_rows) = (rows as usize, cols as usize, TILE as usize, BLOCK_ROWS as usize);
    // ---- your code: start ----
    let col = b.x as usize * tile + t.x as usize;
    for k in 0..tile / block_rows {
        let row = b.y as usize * tile + t.y as usize + k * block_rows;
        if row < rows && col < cols {
            output.set(col * rows + row, input.get(row * cols + col));
        }
    }
    // ---- your code: end ----
}
