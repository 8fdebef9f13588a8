//! # Exercise 1: coalesce the stores
//!
//! A warp is 32 threads that issue each load or store together: one
//! *request*. Global memory serves a request in 32-byte *sectors*. When the
//! 32 lanes touch 32 consecutive floats, the request takes 4 sectors and
//! uses every byte it fetches; when each lane's float lies in a sector of
//! its own, it takes 32 sectors and uses 4 bytes of every 32.
//!
//! This kernel transposes a `rows x cols` row-major matrix into the
//! `cols x rows` one. Block `(b.x, b.y)` owns a 32x32 tile of the output:
//! output columns `b.x * 32 ..` (input rows) and output rows `b.y * 32 ..`
//! (input columns); its 32x8 threads each move 4 elements. As written,
//! consecutive lanes (`t.x`) walk along an input *row*: the loads are
//! coalesced, and every lane stores into a different output row, `rows`
//! floats from its neighbour: 32 sectors per store request.
//!
//! The kernel reads and writes through *views* of its buffers
//! (`ctx.global(input, (rows, cols))`): `input.get(i)` reads element `i`,
//! `output.set(i, v)` writes it. The emulator checks every such access (an
//! index past the view, a race) and counts it; this file is
//! `#![forbid(unsafe_code)]`, so no access escapes it.
//!
//! **Goal:** 4 sectors per store request. Make consecutive lanes write
//! consecutive output addresses. (The loads get worse: exercise 2 fixes
//! both sides.)
//!
//! `cargo learn 1` grades it; `cargo learn 1 --solution` runs the ladder's
//! step 2, `kernels/src/transpose/02_naive_cols.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE};

/// `input` and `output` hold `rows * cols` floats each and do not overlap.
pub fn transpose<C: Checked>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (rows, cols, tile, block_rows) = (rows as usize, cols as usize, TILE as usize, BLOCK_ROWS as usize);
    // ---- your code: start ----
    let col = b.y as usize * tile + t.x as usize; // an input column: lanes walk along a row
    for k in 0..tile / block_rows {
        let row = b.x as usize * tile + t.y as usize + k * block_rows; // an input row
        if row < rows && col < cols {
            output.set(col * rows + row, input.get(row * cols + col));
        }
    }
    // ---- your code: end ----
}
