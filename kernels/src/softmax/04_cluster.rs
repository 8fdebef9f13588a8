//! Step 4 (Hopper, `sm_90a`): a thread-block cluster per row, the row in
//! the registers of its blocks. (`docs/softmax.md`, "4. cluster")
//!
//! **Idea:** step 2 holds a row in one block's registers, which caps it at
//! 32768 columns and, for rows near that, one block per SM; step 3 goes past
//! it by reading the row twice (3b: through shared memory, one 224 KiB block
//! per SM), and while an SM's one block reduces, nobody loads. Hopper groups
//! blocks into *clusters* that run at once on neighbouring SMs and can write
//! each other's shared memory. So a row is split over the `CLUSTER` blocks
//! of a cluster, each holding its slice in registers as step 2 does: a row
//! of 50000 columns is 8 slices of 6250 floats, 256 threads of 28 each, and
//! an SM runs four such blocks (of four rows) at once, so one block's
//! reduction overlaps the others' loads. Each block reduces its slice to a
//! pair `(m_b, s_b)` exactly as step 2, then sends it to every other block
//! of its cluster with `st.async`, a store into another block's shared
//! memory that counts its 8 bytes on that block's mbarrier; each block
//! waits on its own mbarrier for the others' pairs, merges all of them with
//! step 2's rule, and scales and writes its slice.
//!
//! **Why an mbarrier and not the cluster barrier:** a cluster-wide barrier
//! after the pairs (`barrier.cluster.arrive` + `wait`) ran 78% of the copy
//! of the same bytes at 1024x50000 on an H200 where these `st.async` pairs
//! ran 93%, both in clusters of 4 blocks of 512 threads (a CUDA C probe of
//! both, `docs/measurements/2026-11-25-softmax-cluster-probe` at commit f58f145): each block
//! then waits for every thread of every block, where here it waits only for
//! the pairs' bytes. The cluster barrier still publishes each block's
//! mbarrier before anyone sends to it: arrived (relaxed) as soon as the
//! loads are issued, waited on only after the block's own reduction, so it
//! costs nothing but an instruction.
//!
//! **How many blocks a cluster:** as few as keep each block within 256
//! threads (4 up to 28672 columns, then 8), and 8 blocks of up to 512
//! threads past 57344. Fewer blocks a row mean fewer, larger clusters for
//! the GPU to place (a cluster starts only when all its blocks fit one GPC
//! at once), and blocks of at most 256 threads keep four or more an SM. In a
//! CUDA C probe on an H200 (`docs/measurements/2026-11-29-h200-softmax-cluster-sizes` at commit f58f145)
//! clusters of 4 ran 98.0% of the copy at 3640x18432 where clusters of 8
//! ran 92.4%, and 16 blocks (a non-portable size) lost at every length,
//! 87.3% at 512x100000 against 8 blocks' 90.2%: 28 such clusters fit the
//! GPU at once, against 30 of 8.
//!
//! **What it costs:** a cluster launch (`cuLaunchKernelEx`) and an `sm_90`
//! GPU; `CLUSTER * T * N` columns at most (28672, 57344 and 114688 for the
//! three instantiations); a row shorter than the cluster's registers leaves
//! some idle. A block may not exit while others still send to it, which the
//! mbarrier guarantees: a block leaves only after receiving every pair, and
//! sends only to blocks still waiting for it.

use super::{
    Part, Span, WARP, base_of, block_combine, by_alignment, exp_minus, vector_rows, warp_combine, warp_max, warp_sum,
};
use crate::ThreadCtx;

/// Softmax of each row of a `rows x cols` row-major matrix, `CLUSTER`
/// blocks (one cluster) per row, each holding a slice of the row in
/// registers.
///
/// # Parameters
/// `input`, `output`: `rows * cols` floats each, row-major. `N`: floats per
/// thread, a multiple of 4; requires `1 <= cols <= CLUSTER * N *
/// blockDim.x`. Dynamic shared memory: [`super::cluster_shared_bytes`]
/// (the warps' pairs, the mbarrier, the cluster's pairs).
///
/// # Thread mapping
/// 1D blocks of `T` threads (whole warps, `ceil(S / N)` rounded up to a
/// warp) in clusters of `CLUSTER` along `x`, grid `rows * CLUSTER`: cluster
/// `b / CLUSTER` owns row `b / CLUSTER`, and the block of rank `r` the
/// slice of floats `r * S ..` with `S` = [`super::cluster_slice`] (whole
/// float4 groups, so each slice starts 16-byte aligned where the rows do).
/// Within its slice a block is step 2: thread `t` holds the groups `t + T
/// k`, `k < N / 4`.
///
/// # Memory pattern
/// As step 2: on the vector path each warp instruction moves 512 contiguous
/// bytes, `N / 4` loads in flight per thread; every element read once and
/// written once. Between blocks: `CLUSTER - 1` stores of 8 bytes each.
///
/// # Safety
/// `input` and `output` valid for `rows * cols` floats, not overlapping;
/// launched with [`super::Kernel::launch_dims`] in clusters of `CLUSTER`
/// blocks ([`super::Kernel::cluster`]).
#[inline(always)]
pub unsafe fn cluster<C: ThreadCtx, const N: usize, const CLUSTER: usize>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    // SAFETY: forwarded; each path is its own straight-line code.
    unsafe { by_alignment!(input, output, cols, |VEC| body::<C, N, CLUSTER, VEC>(ctx, input, output, rows, cols)) }
}

#[inline(always)]
unsafe fn body<C: ThreadCtx, const N: usize, const CLUSTER: usize, const VEC: bool>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let t = ctx.thread_idx().x as usize;
    let threads = ctx.block_dim().x as usize;
    let row = ctx.block_idx().x as usize / CLUSTER;
    if row >= rows as usize {
        return; // the whole cluster: its blocks share the row
    }
    // Launched without its clusters, every block would wait for pairs that
    // never come: stop the launch instead (a launch error on the host).
    if ctx.cluster_nctarank() != CLUSTER as u32 {
        ctx.trap("softmax step 4 launched without its clusters");
    }
    let (cols, rank) = (cols as usize, ctx.cluster_ctarank() as usize);
    let slice = super::cluster_slice(cols as u32, CLUSTER as u32) as usize;
    let start = (rank * slice).min(cols);
    let len = slice.min(cols - start);
    // SAFETY: row < rows and start + len <= cols: inside both buffers.
    let (x, y) = unsafe { (input.at(row * cols + start, len), output.at(row * cols + start, len)) };
    let span = Span::of(len, t, threads, N / 4);
    // SAFETY: span is this thread's share of this slice; VEC: aligned rows,
    // and the slice starts a whole number of float4 groups into its row.
    let mut part = unsafe { Part::<N, VEC>::load(x, t, threads, span) };

    // The cluster's pairs (m, s), one per rank, after the warps' pairs of
    // `block_combine` and the mbarrier that counts the others' bytes.
    let pairs = ctx.shared::<f32>(super::cluster_shared_bytes(CLUSTER as u32) as usize / 4);
    let base = ctx.shared_addr(pairs.as_ptr());
    let bar = base + super::PAIRS_SHARED_BYTES;
    // The float index in `pairs` of block r's (m, s): after the mbarrier.
    let slot = |r: usize| (PAIRS_FLOATS + 2) as usize + 2 * r;
    if t == 0 {
        ctx.mbarrier_init(bar, 1);
        ctx.mbarrier_init_fence();
    }
    ctx.cluster_arrive_relaxed();

    // This block's slice, as step 2 reduces its row.
    let m_warp = warp_max(ctx, part.max());
    let s_warp = warp_sum(ctx, part.exp_in_place(base_of(m_warp)));
    // SAFETY: every thread of the block gets here exactly once.
    let (m_block, s_block) = unsafe { block_combine(ctx, m_warp, s_warp) };

    // The one arrival, announcing the others' bytes. It may come after some
    // of them have landed (the tx-count goes below zero until it does), and
    // it comes after `block_combine`'s barrier, which orders it after the
    // init for compute-sanitizer's racecheck: ptxas issues the init once per
    // warp, which racecheck counts as another lane's write.
    if t == 0 {
        ctx.mbarrier_arrive_expect_tx(bar, 8 * (CLUSTER as u32 - 1));
    }
    // Every block's mbarrier is initialised once the cluster has arrived.
    ctx.cluster_wait();
    if t < CLUSTER {
        if t == rank {
            // SAFETY: this block's own slot, read after the barrier below.
            unsafe {
                pairs.store(slot(t), m_block);
                pairs.store(slot(t) + 1, s_block);
            }
        } else {
            // SAFETY: slot `rank` of block `t`, which nobody else writes and
            // which block `t` reads only after its mbarrier counted it.
            unsafe { ctx.st_async_f32x2(t as u32, base + 4 * slot(rank) as u32, [m_block, s_block], bar) };
        }
    }
    ctx.mbarrier_wait_cluster(bar, 0);
    ctx.sync_threads(); // this block's own slot, written above
    // Lane r of every warp takes block r's pair, and the warp merges them
    // with shuffles, as `block_combine` merges the warps' pairs: two
    // registers a thread, where a loop over the slots would hold all 16.
    let lane = t % WARP as usize;
    let (m, s) = if lane < CLUSTER {
        // SAFETY: slot `lane`: written by block `lane` (counted on the
        // mbarrier), or by this block before the barrier.
        unsafe { (pairs.load(slot(lane)), pairs.load(slot(lane) + 1)) }
    } else {
        (f32::NEG_INFINITY, 0.0)
    };
    let (m_row, s_row) = warp_combine(ctx, m, s);
    // exp(x - m_w) * exp(m_w - M) / S, as step 2.
    part.scale(exp_minus(m_warp, base_of(m_row)) * (1.0 / s_row));

    // SAFETY: as for the load.
    unsafe { part.store(y, t, threads, span) };
}

/// Floats of the warps' pairs, which the mbarrier follows.
const PAIRS_FLOATS: u32 = super::PAIRS_SHARED_BYTES / 4;
