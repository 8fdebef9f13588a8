//! Step 2: one block per row, the row in the block's registers.
//! (`docs/softmax.md`, "2. block per row")
//!
//! **Idea:** a row of 4096 floats would need 128 registers per lane of one
//! warp; spread over a block it is 16 per thread. The block loads its row
//! once, and each warp reduces *its own part* to a partial state `(m_w,
//! s_w)`: the part's maximum, and its sum of `exp(x - m_w)`, computed while
//! the values are in registers (step 1's two shuffle reductions, per warp).
//! One barrier publishes the warps' pairs through shared memory; every warp
//! then merges them with shuffles into the row's `(M, S)` (the merge rule of
//! online softmax: `S = sum_w s_w exp(m_w - M)`) and writes
//! `exp(x - m_w) * exp(m_w - M) / S`. So the block pays one barrier, not one
//! per reduction, and a warp whose data arrived early does its exponentials
//! while the others still wait for DRAM.
//!
//! **What it costs:** `N` registers of data per thread (8, 16 or 32), at most
//! 1024 threads: rows up to `1024 N` (32768 for `N = 32`, 128 KiB: half an
//! SM's register file, so one such row per SM at a time). Longer rows: step 3.

use super::{Part, Span, base_of, block_combine, by_alignment, exp_minus, vector_rows, warp_max, warp_sum};
use crate::ThreadCtx;

/// Softmax of each row of a `rows x cols` row-major matrix, one block per
/// row, the row held in registers across the block.
///
/// # Parameters
/// `input`, `output`: `rows * cols` floats each, row-major. `N`: floats per
/// thread, a multiple of 4; requires `1 <= cols <= N * blockDim.x`. Dynamic
/// shared memory: [`super::PAIRS_SHARED_BYTES`] (one (max, sum) pair per warp).
///
/// # Thread mapping
/// 1D block of `T` threads, a whole number of warps (`ceil(cols / N)` rounded
/// up to a warp), grid `rows`: block `b` owns row `b`. Thread `t` holds the
/// float4 groups `t + T k` of the row, `k < N / 4` (and the last `cols % 4`
/// floats if its next group would hold them).
///
/// # Memory pattern
/// As step 1: on the vector path each warp instruction moves 512 contiguous
/// bytes, `N / 4` loads in flight per thread; every element read once and
/// written once. Shared memory: 64 floats, written by lane 0 of each warp and
/// read by every lane once, one wavefront per request up to 16 warps; with
/// more, lanes `l` and `l + 16` read words 32 apart, in one bank: two.
///
/// # Safety
/// `input` and `output` valid for `rows * cols` floats, not overlapping;
/// launched with [`super::Kernel::launch_dims`] (which gives `cols <= N T`).
#[inline(always)]
pub unsafe fn block_per_row<C: ThreadCtx, const N: usize>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    // SAFETY: forwarded; each path is its own straight-line code.
    unsafe { by_alignment!(input, output, cols, |VEC| body::<C, N, VEC>(ctx, input, output, rows, cols)) }
}

#[inline(always)]
unsafe fn body<C: ThreadCtx, const N: usize, const VEC: bool>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let t = ctx.thread_idx().x as usize;
    let threads = ctx.block_dim().x as usize;
    let row = ctx.block_idx().x as usize;
    if row >= rows as usize {
        return; // the whole block: the barrier below is never split
    }
    let cols = cols as usize;
    // SAFETY: row < rows: the row's first element is inside both buffers.
    let (x, y) = unsafe { (input.at(row * cols, cols), output.at(row * cols, cols)) };
    let span = Span::of(cols, t, threads, N / 4);
    // SAFETY: span is this thread's share of this row; VEC: aligned rows.
    let mut part = unsafe { Part::<N, VEC>::load(x, t, threads, span) };

    // This warp's part: its maximum m_w and sum of exp(x - base_of(m_w)).
    let m_warp = warp_max(ctx, part.max());
    let s_warp = warp_sum(ctx, part.exp_in_place(base_of(m_warp)));

    // The row: one barrier, then every warp merges the pairs by shuffles.
    // SAFETY: every thread of the block gets here exactly once.
    let (m_row, s_row) = unsafe { block_combine(ctx, m_warp, s_warp) };
    // exp(x - m_w) * exp(m_w - M) / S. A warp of only -inf has m_w = -inf:
    // factor 0 (its values are 0 too). An all -inf row: 0 * (1 / 0) = NaN.
    part.scale(exp_minus(m_warp, base_of(m_row)) * (1.0 / s_row));

    // SAFETY: as for the load.
    unsafe { part.store(y, t, threads, span) };
}
