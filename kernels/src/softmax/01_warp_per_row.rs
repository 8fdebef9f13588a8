//! Step 1: one warp per row, the row in the warp's registers.
//! (`docs/softmax.md`, "1. warp per row")
//!
//! **Idea:** a row of up to 1024 floats fits in the registers of one warp (32
//! per lane). The warp loads it once, reduces the maximum and the sum with
//! five butterfly shuffles each (`shfl.sync.bfly`), and writes it once: no
//! shared memory, no block barrier, and each warp is independent of every
//! other, so the SM overlaps one warp's reductions with other warps' loads.
//!
//! **What it costs:** registers: `N` floats per lane, fixed at compile time
//! (one instantiation per `N`: 4, 8, 16, 32; a row shorter than `32 N`
//! leaves lanes holding `-inf` padding). Rows past 1024 floats would need
//! more than 32 per lane: step 2.

use super::{Part, Span, WARP, WARP_ROWS_PER_BLOCK, base_of, by_alignment, vector_rows, warp_max, warp_sum};
use crate::ThreadCtx;

/// Softmax of each row of a `rows x cols` row-major matrix, one warp per row.
///
/// # Parameters
/// `input`, `output`: `rows * cols` floats each, row-major. `N`: floats per
/// lane, a multiple of 4; requires `1 <= cols <= 32 * N`.
///
/// # Thread mapping
/// Block of [`WARP_ROWS_PER_BLOCK`] warps (128 threads), grid
/// `ceil(rows / 4)`; warp `w` of block `b` owns row `4b + w` (warps past the
/// last row return at once, as a whole warp). Lane `l` holds the float4
/// groups `l + 32k` of the row, `k < N / 4` (and the last `cols % 4` floats
/// if its next group would hold them).
///
/// # Memory pattern
/// Vector path (both buffers 16-byte aligned, `cols % 4 == 0`): each warp
/// load or store instruction moves 512 contiguous bytes (`ld/st.global.v4`,
/// 16 sectors per request), `N / 4` loads in flight per lane. Scalar path:
/// four 4-byte accesses per group at the same addresses, so each warp request
/// spans the vector request's 16 sectors for a quarter of its bytes: four
/// times the requests and the sectors through L1, for the same DRAM sectors.
/// Each input element is read once and each output element written once.
///
/// # Safety
/// `input` and `output` valid for `rows * cols` floats, not overlapping;
/// `1 <= cols <= 32 * N`; launched with [`super::Kernel::launch_dims`].
#[inline(always)]
pub unsafe fn warp_per_row<C: ThreadCtx, const N: usize>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    // SAFETY: forwarded; each path is its own straight-line code.
    unsafe { by_alignment!(input, output, cols, |VEC| body::<C, N, VEC>(ctx, input, output, rows, cols)) }
}

#[inline(always)]
unsafe fn body<C: ThreadCtx, const N: usize, const VEC: bool>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    const W: usize = WARP as usize;
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let t = ctx.thread_idx().x as usize;
    let (warp, lane) = (t / W, t % W);
    let row = ctx.block_idx().x as usize * WARP_ROWS_PER_BLOCK as usize + warp;
    if row >= rows as usize {
        return; // the whole warp: no shuffle is left half-attended
    }
    let cols = cols as usize;
    // SAFETY: row < rows: the row's first element is inside both buffers.
    let (x, y) = unsafe { (input.at(row * cols, cols), output.at(row * cols, cols)) };
    let span = Span::of(cols, lane, W, N / 4);

    // Load; floats outside the row hold -inf, which adds exp(-inf) = 0.
    // SAFETY: span is this lane's share of this row; VEC: aligned rows.
    let mut part = unsafe { Part::<N, VEC>::load(x, lane, W, span) };

    // Max, then exp and sum, each reduced over the warp by shuffles.
    let base = base_of(warp_max(ctx, part.max()));
    let s = warp_sum(ctx, part.exp_in_place(base));
    // An all -inf row: 0 * (1 / 0) = NaN, as PyTorch.
    part.scale(1.0 / s);

    // SAFETY: as for the load.
    unsafe { part.store(y, lane, W, span) };
}
