//! # Exercise 6: find the missing barrier
//!
//! The threads of a block run at their own pace. A thread that reads a
//! shared-memory word another thread writes must wait until that write is
//! done: a barrier (`ctx.sync_threads()`) between the two, which every
//! thread of the block reaches before any goes on. Without it the kernel
//! may even give the right answer on one run and a wrong one on the next.
//!
//! This padded transpose (the ladder's step 4, written out) has lost its
//! barrier. The emulator's checker remembers, for every shared word, who
//! wrote it and when, and reports each read that nothing orders after the
//! write it depends on: run it and read what it finds.
//!
//! **Goal:** no finding from the checker, and the right transpose.
//!
//! `cargo learn 6` grades it; `cargo learn 6 --solution` runs the ladder's
//! step 4, `kernels/src/transpose/04_padded.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE};

/// `input` and `output` hold `rows * cols` floats each and do not overlap;
/// the launch gives `TILE * (TILE + 1)` floats of shared memory.
pub fn transpose<C: Checked>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let (tile, block_rows) = (TILE as usize, BLOCK_ROWS as usize);
    let shared = ctx.shared::<f32>(tile * (tile + 1));
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (tx, ty, rows, cols) = (t.x as usize, t.y as usize, rows as usize, cols as usize);
    let (row0, col0) = (b.y as usize * tile, b.x as usize * tile);
    for k in 0..tile / block_rows {
        let (row, col) = (row0 + ty + k * block_rows, col0 + tx);
        if row < rows && col < cols {
            shared.set((ty + k * block_rows) * (tile + 1) + tx, input.get(row * cols + col));
        }
    }
    // ---- your code: start ----
    // ---- your code: end ----
    for k in 0..tile / block_rows {
        let (out_row, out_col) = (col0 + ty + k * block_rows, row0 + tx);
        if out_row < cols && out_col < rows {
            output.set(out_row * rows + out_col, shared.get(tx * (tile + 1) + ty + k * block_rows));
        }
    }
}
