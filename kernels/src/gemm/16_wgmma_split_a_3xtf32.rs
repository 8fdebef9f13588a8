//! Step 16 (tensor cores, Hopper, `sm_90a` only): step 15's FP32-accurate
//! 3xTF32 with `A`'s halves made by a pass before the product and `B`'s
//! in the consumers' registers. Measured in
//! [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Idea:** split each operand where the split costs least. The two
//! operands reach the tensor cores by different roads:
//!
//! - **`B` through registers** (`C^T = B^T A^T`, as step 15): the
//!   consumers load their fragments of `B` anyway, and its low half is two
//!   integer operations on values already in registers. Free.
//! - **`A` through shared memory:** `wgmma` reads `A_lo` from the stage, so
//!   someone writes it there. Step 15's splitter warpgroup reads the f32
//!   tile and writes `A_lo` beside it: 32 KiB of shared-memory traffic a
//!   stage, in the banks the TMA writes and the tensor cores read, and
//!   what bounds step 15. Here `gemm_pack` splits `A` once before the
//!   product (step 13's pass, for `A` only: `hi = tf32(x)`, `lo = tf32(x -
//!   hi)`, rows padded to 128 bytes), and the TMA copies both halves: 16
//!   KiB more a stage through L2, none through the threads.
//!
//! So the block has no splitter: warpgroup 2 is one thread issuing the
//! copies (the rest of it gives its registers to the consumers and
//! leaves), and the consumers are step 15's ([`consume`]), waiting for the
//! copies alone. One tensor map covers both halves: the pass writes the
//! `m` rows of `A_hi` and right after them the `m` rows of `A_lo`, so the
//! map has `2 m` rows, and `A_lo`'s tile lies `m` rows below `A_hi`'s. A
//! tile at the bottom edge of `A_hi` reads rows of `A_lo` where the copy
//! would fill zeros: they are rows of `C` past `m`, which the store skips.
//!
//! Where `C` has too few tiles for the SMs, the block takes run
//! `blockIdx.z` of `K` as step 15 does ([`super::split_k`]).
//!
//! **Non-finite inputs:** the pass writes zero halves for a non-finite `a`
//! and marks its row of `A` (as for step 13); the consumers zero a
//! non-finite `b` and mark its column (as in step 15); `gemm_fixup`
//! recomputes those rows and columns of `C` after the product.
//!
//! **Every finite input:** the product runs on `A` and `B` scaled by
//! exact powers of two, each row of `A` and each column of `B` peaking in
//! `[2^-8, 2^47)`, and unscales each element of `C` before the store
//! ([`super::scale`]): subnormal rows, near-`FLT_MAX` rows and operands
//! scaled by `1e-17` or `1e17` keep FP32's accuracy. `gemm_maxima` finds
//! the peaks before the pass, the pass scales `A`'s rows as it splits them
//! ([`super::pack::PACK_SCALE`]), and the consumers scale their two columns
//! of `B` as they load them.
//!
//! **Accuracy:** `A`'s split is step 13's (exact to `2^-22 |a|`), `B`'s
//! step 15's (`2^-21 |b|`): step 15's bound holds
//! ([`super::Variant::error_bound`]).

use super::split_k::run_of;
use super::warpgroup::{TMA_GROUP_ROWS, grouped_tile_at, swizzle_base};
use super::wgmma_direct::DIRECT_B_BOX;
use super::wgmma_direct_3xtf32::{
    A_BYTES, CONSUMERS, DX3_BK, DX3_BM, DX3_BN, DX3_MARKS_OFFSET, DX3_REGS, DX3_SHARED_BYTES, DX3_STAGE_BYTES,
    DX3_STAGES, DX3_THREADS, a_tile, b_box, consume, empty, full, lo_tile, parity,
};
use super::{Feed, Geometry, Operand, Problem};
use crate::{TensorMap, ThreadCtx};

/// How this step is launched: `launch_dims` reads it. Step 15's precision,
/// block, stages and split `K`, with `A` split by a pass first and the
/// operands scaled. Its blocks do not walk tiles: walking as step 15's do
/// measured 3.8% slower at 8192x8192x256 on an H100, and the second copy
/// of the code it takes cost the unwalked 1024^3 3.6% (`43d888f-walk/` in
/// docs/measurements/2026-12-05-h100-gemm-pack-walk at commit 8510382).
pub const GEOMETRY: Geometry = Geometry {
    walks_tiles: 0,
    ..super::wgmma_direct_3xtf32::GEOMETRY.fed_by(Feed { a: Operand::Stacked, b: Operand::AsItIs, scaled: true })
};

const STAGES: usize = DX3_STAGES as usize;
const BM: usize = DX3_BM as usize;
const BN: usize = DX3_BN as usize;
const BK: usize = DX3_BK as usize;

/// `C = alpha * A * B + beta * C` in 3xTF32 with promoted partial sums, on
/// `A`'s halves made by `gemm_pack` and `B` as it is, both copied by the
/// TMA.
///
/// # Parameters
/// `a` and `b` are not the matrices but the addresses of two
/// [`TensorMap`]s in global memory (64-byte aligned), written before the
/// launch: `a`'s describes `A_hi` and below it `A_lo` (`K` columns by `2 M`
/// rows, box 32 x 128), `b`'s describes `B` (`N` columns by `K` rows, box
/// 32 x 32), both f32 with the 128-byte swizzle; [`DX3_MARKS_OFFSET`] bytes
/// from `a` lie the `1 + m + n` words of marks (`gemm::fixup`), zeroed and
/// then raised by the pass for `A`'s rows, and after them the peaks of
/// `A`'s `m` rows and of `B`'s `n` columns (`gemm_maxima`), by which `A`
/// arrives scaled. `c`, `p` as [`super::naive`].
/// Shared memory: [`DX3_SHARED_BYTES`] (193 KiB, an opt-in size).
///
/// # Thread mapping
/// 384 threads (1D), grid `ceil(n/128) x ceil(m/128) x S`; the block
/// computes the tile [`grouped_tile_at`] names for its index, over run
/// `blockIdx.z` of the `S` runs of `K` ([`run_of`]; `S = 1`: all of it),
/// as step 15. Threads `0..256` consume as step 15's; thread 256 issues
/// the copies.
///
/// # Safety
/// The tensor maps and the marks are as above; `c` holds the `m * n`
/// floats (`S` slices of `m * n` where `S > 1`: then each slice receives
/// `alpha` times its run's product, `beta == 0`, for
/// [`super::split_k::sum_splits`]); the GPU runs `sm_90a` code (compute
/// capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_split_a_3xtf32<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    // ptxas fits the launch to 384 threads ([`DX3_REGS`]).
    ctx.launch_bound::<DX3_THREADS>();
    let (map_a, map_b) = (a.cast::<TensorMap>(), b.cast::<TensorMap>());
    let (m, n) = (p.m as usize, p.n as usize);
    // The marks, then the rows' and the columns' peaks.
    let marks = ctx.global_mut(a.cast::<u8>().wrapping_add(DX3_MARKS_OFFSET).cast::<u32>().cast_mut(), 1 + 2 * (m + n));
    // Split K (`gridDim.z` runs, [`super::split_k`]): this block's run of
    // K's tiles, and its slice of the partial products.
    let (z, splits) = (ctx.block_idx().z, ctx.grid_dim().z);
    let (first, tiles) = run_of((p.k as usize).div_ceil(BK) as u32, z, splits);
    let (first, tiles) = (first as usize, tiles as usize);
    let c = ctx.global_mut(c.wrapping_add(z as usize * m * n), (p.m, p.n));
    let tid = ctx.thread_idx().x as usize;
    let (blk, grid) = (ctx.block_idx(), ctx.grid_dim());
    let (tile_m, tile_n) = grouped_tile_at::<TMA_GROUP_ROWS>(blk.y * grid.x + blk.x, (grid.x, grid.y));
    let (m0, n0) = (tile_m as usize * BM, tile_n as usize * BN);

    let (smem, base) = swizzle_base(ctx, DX3_SHARED_BYTES);
    if tid == 0 {
        for s in 0..STAGES {
            ctx.mbarrier_init(full(base, s), 1);
            ctx.mbarrier_init(empty(base, s), CONSUMERS as u32);
        }
        ctx.mbarrier_init_fence();
    }
    ctx.sync_threads();

    if tid >= CONSUMERS {
        ctx.setmaxnreg_dec::<{ DX3_REGS.0 }>();
        if tid == CONSUMERS {
            // SAFETY: the caller's contract: two tensor maps in global memory.
            unsafe {
                ctx.tensormap_acquire(map_a);
                ctx.tensormap_acquire(map_b);
            }
            for t in 0..tiles {
                let s = t % STAGES;
                // The t-th fill of stage s waits for its (t/4 - 1)-th
                // release; the first four pass at once.
                if t >= STAGES {
                    ctx.mbarrier_wait(empty(base, s), parity(t) ^ 1);
                }
                ctx.mbarrier_arrive_expect_tx(full(base, s), DX3_STAGE_BYTES);
                let k0 = ((first + t) * BK) as i32;
                // SAFETY: the boxes (16 KiB each of A_hi and A_lo, four of
                // 4 KiB of B) fit the stage at 1024-byte-aligned offsets;
                // the stage is free.
                unsafe {
                    ctx.tma_load_2d(base + a_tile(s) as u32, map_a, (k0, m0 as i32), full(base, s));
                    ctx.tma_load_2d(base + lo_tile(s) as u32, map_a, (k0, (m + m0) as i32), full(base, s));
                    for j in 0..BN / DIRECT_B_BOX as usize {
                        let x = (n0 + j * DIRECT_B_BOX as usize) as i32;
                        ctx.tma_load_2d(base + b_box(s, j) as u32, map_b, (x, k0), full(base, s));
                    }
                }
            }
        }
        return;
    }

    ctx.setmaxnreg_inc::<{ DX3_REGS.1 }>();
    // SAFETY: the caller's contract; the copies of each stage bring A_hi,
    // A_lo and B (`full`), and the consumers release it (`empty`).
    unsafe { consume::<C, false, true>(ctx, (smem, base), marks, c, p, (1, tiles), |_| (m0, n0), tid) }
}

const _: () = assert!(A_BYTES * 2 + (BN * BK * 4) == DX3_STAGE_BYTES as usize);
