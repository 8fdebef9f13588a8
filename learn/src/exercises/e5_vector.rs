//! # Exercise 5: move 16 bytes per lane
//!
//! A warp's request of 32 consecutive floats is already coalesced: 4
//! sectors, every byte used. Yet each request carries only 128 bytes, and a
//! GPU keeps a bounded number of requests in flight per SM: to keep the
//! memory busy, each request should carry more. One 16-byte access per
//! lane (an `F4`, four floats) makes a request of 512 bytes, 16 sectors:
//! four times fewer requests for the same bytes.
//!
//! This is a grid-stride copy: thread `first` copies elements `first`,
//! `first + stride`, ... A view of `F4`s over the same buffer,
//! `ctx.global(src.cast::<F4>(), len / 4)`, loads element `i` as floats
//! `4i .. 4i + 4` in one access (`get`, `set`); it needs 16-byte aligned buffers (the
//! checker reports a misaligned one), and the last `len % 4` floats still
//! go one at a time.
//!
//! **Goal:** 512 bytes per load and per store request.
//!
//! `cargo learn 5` grades it; `cargo learn 5 --solution` runs the copy
//! kernel the roofline report measures, `kernels/src/copy.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::mem::Checked;
#[allow(unused_imports)] // the tool for the job
use coalesce::kernels::vector::F4;

/// `src` and `dst` hold `len` floats each, 16-byte aligned, and do not
/// overlap.
pub fn copy<C: Checked>(ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
    let (t, b, bd, gd) = (ctx.thread_idx(), ctx.block_idx(), ctx.block_dim(), ctx.grid_dim());
    let first = b.x as u64 * bd.x as u64 + t.x as u64;
    let stride = gd.x as u64 * bd.x as u64;
    // ---- your code: start ----
    let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
    let mut i = first;
    while i < len {
        dst.set(i as usize, src.get(i as usize));
        i += stride;
    }
    // ---- your code: end ----
}
