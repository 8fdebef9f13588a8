//! Step 9 (tensor cores, Hopper, `sm_90a` only): TF32 `wgmma.mma_async`,
//! operands staged in shared memory by the threads. Measured in
//! [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Idea:** step 8's `mma.sync` is a warp-wide instruction fed from
//! registers: every thread loads its fragments from shared memory before
//! each 16x8x8 product, so the load units, not the tensor cores, set the
//! pace. Hopper's `wgmma` is issued by a *warpgroup* (4 warps, 128 threads)
//! and reads both operands straight from shared memory, through 64-bit
//! matrix descriptors, for a 64xNx8 product (`N` up to 256) that runs
//! asynchronously: the threads issue it, go on staging the next tiles, and
//! wait for it only when its shared memory is to be reused. Here each of two
//! warpgroups owns 64 rows by 256 columns of the block's 128x256 `C` tile
//! (128 f32 accumulators per thread) and issues one `m64n256k8` per 8 of `K`.
//!
//! **Layout:** `wgmma` with TF32 operands reads both `A` and `B` K-major:
//! each row (of `M` for `A`, of `N` for `B`) holds its `K` values
//! contiguously. A tile is 32 deep in `K`, so a row is 128 bytes, and rows
//! are stored in the 128-byte swizzle: the 16-byte chunk `c` of row `r` sits
//! at chunk `c ^ (r % 8)`. A warp's 16-byte stores of 8 chunks of one row, and
//! the tensor cores' reads of one chunk of 8 rows, then fall in 8 different
//! groups of 4 banks: no bank conflicts on either side. The descriptor (see
//! [`k_major_128b`]) gives the tile's start, 1024 bytes between groups of 8
//! rows, and the swizzle mode; the `k`-th step of 8 starts `32 k` bytes into
//! the row, and the hardware applies the swizzle to the final address, so a
//! tile whose base is aligned to 1024 bytes reads back as written.
//!
//! `A` is row-major `M x K`, already K-major: a thread loads 16 bytes of a
//! row and stores them as one chunk. `B` is row-major `K x N`, N-major, so
//! the threads transpose it while staging: a thread loads a 4x4 block of `B`
//! (4 rows of `K`, 16 bytes each) and stores its 4 columns as 4 chunks of 4
//! consecutive `k`, one per row of `N`. Both are rounded to TF32
//! (`cvt.rna`) on the way, as in step 8.
//!
//! **Pipeline:** three shared buffers. While the tensor cores work on tile
//! `t`, the threads store tile `t + 1` (loaded into registers during the
//! previous iteration's products) into the buffer that tile `t - 2` used,
//! which every warpgroup has finished with: each waited for all but its
//! latest group (`wgmma.wait_group 1`) before the barrier that ended
//! iteration `t - 1`. Ordinary stores that `wgmma` reads need
//! `fence.proxy.async.shared::cta` in the storing thread before that barrier.
//!
//! **What it costs:** TF32 precision, as step 8. The threads still move
//! every operand through registers into shared memory (Hopper's TMA copies
//! tiles without them), and the block is one producer and consumer at once:
//! the loads for tile `t + 2` start only when tile `t + 1` is stored.
//!
//! On the CPU emulator the `wgmma` is computed at issue from shared memory
//! through the same descriptors (see `emu/wgmma.rs`), so the layout, the
//! swizzle and the descriptors are what the tests check; the asynchrony and
//! the proxy fences are not modelled there.

use super::warpgroup::{ROW_BYTES, StagedBlock, k_major_128b, load4, store_fragment, swizzle_base, swizzled};
use super::{Problem, to_tf32};
use crate::{Load, Shared, ThreadCtx};

use super::{Dim3, Geometry, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Tf32, (WG_BM, WG_BN), Dim3::xy(WG_THREADS, 1), WG_SHARED_BYTES / 4);

/// Rows of the `C` tile per block: two warpgroups of 64.
pub const WG_BM: u32 = 128;
/// Columns of the `C` tile per block: one `m64n256k8` per warpgroup.
pub const WG_BN: u32 = 256;
/// Depth of a staged tile: 32 TF32 values, one 128-byte swizzled row.
pub const WG_BK: u32 = 32;
/// Threads per block: two warpgroups.
pub const WG_THREADS: u32 = 256;
/// Shared buffers in the pipeline.
pub const WG_STAGES: u32 = 3;
/// Bytes of shared memory per block: the buffers, and 1024 bytes to align
/// them to the swizzle pattern's period.
pub const WG_SHARED_BYTES: u32 = WG_STAGES * (WG_BM + WG_BN) * WG_BK * 4 + 1024;

const BM: usize = WG_BM as usize;
const BN: usize = WG_BN as usize;
const BK: usize = WG_BK as usize;
const THREADS: usize = WG_THREADS as usize;
const STAGES: usize = WG_STAGES as usize;
/// Floats of one buffer: the `A` tile, then the `B` tile.
const STAGE_FLOATS: usize = (BM + BN) * BK;
/// 16-byte vectors of the `A` tile per thread: `BM * BK / 4 / THREADS`.
pub(super) const NA: usize = BM * BK / 4 / THREADS;
/// 4x4 blocks of the `B` tile per thread.
pub(super) const NB: usize = BK * BN / 16 / THREADS;

const _: () = assert!(ROW_BYTES == BK * 4 && NA * THREADS * 4 == BM * BK && NB * THREADS * 16 == BK * BN);
const _: () = assert!((STAGE_FLOATS * 4).is_multiple_of(1024) && (BM * BK * 4).is_multiple_of(1024));

/// Stores four floats, rounded to TF32, as one 16-byte shared store at
/// byte `at` of `tile`.
///
/// # Safety
/// `at` 16-byte aligned, the 16 bytes inside `tile`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn store_tf32<C: ThreadCtx>(tile: Shared<'_, C, u8>, at: usize, v: [f32; 4]) {
    // SAFETY: forwarded.
    unsafe { tile.store_f32x4(at, v.map(to_tf32)) };
}

/// `C = alpha * A * B + beta * C` with `wgmma`, inputs rounded to TF32,
/// accumulation in f32.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: [`WG_SHARED_BYTES`] (145 KiB, an
/// opt-in size): three buffers of a 128x32 `A` tile and a 256x32 `B^T`
/// tile, K-major, 128-byte swizzle.
///
/// # Thread mapping
/// 256 threads (1D), grid `ceil(n/256) x ceil(m/128)`. Warpgroup `g` (threads
/// `128 g ..+128`) owns rows `64 g ..+64` of the block's tile, all 256
/// columns; its thread `t` holds the `wgmma` D fragment (see
/// [`ThreadCtx::wgmma_m64n256k8_tf32`]). Staging: thread `t` moves vectors
/// `t + 256 i` of `A` (row `v / 8`, chunk `v % 8`) and 4x4 blocks `t + 256 i`
/// of `B` (rows of `K` `4 (v % 8) ..+4`, columns of `N` `4 (v / 8) ..+4`).
///
/// # Memory pattern
/// `A`: 8 lanes read one 128-byte row segment (coalesced); `B`: 8 lanes read
/// 16 bytes of 8 different rows, 4 such groups side by side (64 contiguous
/// bytes per row, whole sectors). Shared stores: the 8 lanes of each quarter
/// warp store the 8 chunks of one row (`A`) or one column of `N` (`B`), which
/// the swizzle spreads over all 32 banks.
///
/// # Safety
/// As [`super::naive`]; the GPU must run `sm_90a` code (compute capability 9.0).
#[inline(always)]
pub unsafe fn wgmma<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let blk = StagedBlock::new(ctx, (a, b, c), p, (BM, BN, BK));
    // SAFETY (both): forwarded.
    if blk.interior { unsafe { wgmma_with::<C, true>(ctx, blk) } } else { unsafe { wgmma_with::<C, false>(ctx, blk) } }
}

/// [`wgmma`]'s staging, products and epilogue, with unconditional vector
/// loads when `INTERIOR`.
///
/// # Safety
/// As [`wgmma`]; `INTERIOR` only when `blk.interior`.
#[inline(always)]
unsafe fn wgmma_with<C: ThreadCtx, const INTERIOR: bool>(ctx: &C, blk: StagedBlock<'_, C>) {
    let StagedBlock { a, b, c, p, tid, m0, n0, vec, .. } = blk;
    let k = p.k as usize;

    let (base, base_addr) = swizzle_base(ctx, WG_SHARED_BYTES);
    // SAFETY (both): buffer `s` < STAGES lies inside the launch's shared memory.
    let a_tile = |s: usize| unsafe { base.at(s * STAGE_FLOATS * 4, BM * ROW_BYTES) };
    let b_tile = |s: usize| unsafe { base.at(s * STAGE_FLOATS * 4 + BM * ROW_BYTES, BN * ROW_BYTES) };

    let load = |k0: usize, sa: &mut [[f32; 4]; NA], sb: &mut [[[f32; 4]; 4]; NB]| {
        // SAFETY: forwarded from the caller (A and B hold their matrices).
        unsafe { load_tiles::<INTERIOR>(&a, &b, &p, (m0, n0, k0), vec, tid, sa, sb) }
    };
    let stage = |s: usize, sa: &[[f32; 4]; NA], sb: &[[[f32; 4]; 4]; NB]| {
        unroll!(i < NA, [0, 1, 2, 3], {
            let v = tid + i * THREADS;
            // SAFETY: row v / 8 < BM, chunk < 8: inside the A tile; 16-byte aligned.
            unsafe { store_tf32(a_tile(s), swizzled(v / 8, v % 8), sa[i]) };
        });
        unroll!(i < NB, [0, 1, 2, 3], {
            let v = tid + i * THREADS;
            unroll!(j < 4, [0, 1, 2, 3], {
                // Column j of the 4x4 block: 4 consecutive k of row 4 (v / 8) + j of B^T.
                let col = [sb[i][0][j], sb[i][1][j], sb[i][2][j], sb[i][3][j]];
                // SAFETY: row < BN, chunk < 8: inside the B tile; 16-byte aligned.
                unsafe { store_tf32(b_tile(s), swizzled(4 * (v / 8) + j, v % 8), col) };
            });
        });
        ctx.fence_proxy_async();
    };

    let group = tid / 128;
    let mut acc = [0.0f32; 128];
    let (mut sa, mut sb) = ([[0.0f32; 4]; NA], [[[0.0f32; 4]; 4]; NB]);
    let tiles = k.div_ceil(BK);
    load(0, &mut sa, &mut sb);
    stage(0, &sa, &sb);
    ctx.sync_threads();
    for t in 0..tiles {
        let more = t + 1 < tiles;
        if more {
            load((t + 1) * BK, &mut sa, &mut sb);
        }
        let s = t % STAGES;
        let a_addr = base_addr + (s * STAGE_FLOATS * 4 + group * 64 * ROW_BYTES) as u32;
        let b_addr = base_addr + (s * STAGE_FLOATS * 4 + BM * ROW_BYTES) as u32;
        ctx.wgmma_fence();
        unroll!(kk < BK / 8, [0, 1, 2, 3], {
            let step = (32 * kk) as u32;
            // SAFETY: buffer s holds tile t, stored and fenced by every
            // thread before the barrier that ended the previous iteration.
            unsafe { ctx.wgmma_m64n256k8_tf32(&mut acc, k_major_128b(a_addr + step), k_major_128b(b_addr + step)) };
        });
        ctx.wgmma_commit();
        // Tile t - 1 done: with the barrier below, buffer (t + 1) % 3, last
        // read by tile t - 2, is free for every warpgroup next iteration.
        ctx.wgmma_wait::<1>(&mut acc);
        if more {
            stage((t + 1) % STAGES, &sa, &sb);
        }
        ctx.sync_threads();
    }
    ctx.wgmma_wait::<0>(&mut acc);

    // SAFETY: forwarded from the caller (C holds its matrix).
    unsafe { store_fragment(&c, &acc, &p, (m0, n0), tid) };
}

/// Loads the tiles at `k0` of `A` (this thread's [`NA`] vectors) and `B`
/// (its [`NB`] 4x4 blocks) into registers, mapped as the kernel's doc says:
/// 16-byte loads where the tile is whole and rows are vector-aligned
/// (`vec`: `(A, B)`), checked loads with zeros elsewhere; only 16-byte loads,
/// without a branch, when `INTERIOR` (`StagedBlock::interior`).
///
/// # Safety
/// `a` and `b` hold the `m * k` and `k * n` floats; `INTERIOR` only when
/// `StagedBlock::interior` holds for this block.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn load_tiles<const INTERIOR: bool>(
    a: &impl Load<f32>, b: &impl Load<f32>, p: &Problem, (m0, n0, k0): (usize, usize, usize), vec: (bool, bool),
    tid: usize, sa: &mut [[f32; 4]; NA], sb: &mut [[[f32; 4]; 4]; NB],
) {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let whole_k = k0 + BK <= k;
    let (fa, fb) = (INTERIOR || (m0 + BM <= m && whole_k && vec.0), INTERIOR || (n0 + BN <= n && whole_k && vec.1));
    unroll!(i < NA, [0, 1, 2, 3], {
        let v = tid + i * THREADS;
        // SAFETY: fast only when the tile is inside A, rows vector-aligned.
        sa[i] = unsafe { load4(a, (m, k), k, m0 + v / 8, k0 + 4 * (v % 8), fa) };
    });
    unroll!(i < NB, [0, 1, 2, 3], {
        let v = tid + i * THREADS;
        unroll!(r < 4, [0, 1, 2, 3], {
            // SAFETY: as above, for B.
            sb[i][r] = unsafe { load4(b, (k, n), n, k0 + 4 * (v % 8) + r, n0 + 4 * (v / 8), fb) };
        });
    });
}
