//! Step 12 (tensor cores, Hopper, `sm_90a` only): step 9's TF32 `wgmma`,
//! fed by the Tensor Memory Accelerator through an mbarrier pipeline, with
//! one warp that only loads. Measured in [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Idea:** in step 9 every thread moves every operand: a 16-byte global
//! load into registers, a rounding, a swizzled 16-byte shared store, a
//! proxy fence, and a block barrier per tile, so the two warpgroups spend
//! their issue slots and registers on staging, and a tile's products wait
//! for the slowest thread's stores. Hopper's TMA copies a whole tile from
//! global to shared memory on its own (`cp.async.bulk.tensor`), described
//! by a *tensor map* the host encodes once (sizes, strides, the box of one
//! copy, the 128-byte swizzle that `wgmma` reads); one thread issues it, and
//! the copy signals its completion by counting its bytes on an *mbarrier*
//! in shared memory. So the block splits in two roles:
//!
//! - a producer warp (threads 256..288), whose first thread issues the two
//!   copies of each tile (`A` and `B^T`, 48 KiB) into one of four stages
//!   as soon as that stage is free;
//! - two consumer warpgroups (threads 0..256), each of which waits for a
//!   stage to be full, issues its four `m64n256k8` products from it, and,
//!   once the products of the stage before have completed
//!   (`wgmma.wait_group 1`), tells the producer that stage is empty.
//!
//! Each stage has two barriers: `full` (one arrival, the producer's, plus
//! the 48 KiB the copies deliver) and `empty` (256 arrivals, one per
//! consumer thread). Waiters track the phase parity: the `t`-th use of a
//! stage is its phase `t / 4`. There is no block-wide barrier in the loop:
//! the warpgroups drift apart by up to the pipeline's depth, and the
//! tensor cores see the next stage as soon as its bytes land.
//!
//! **Operands:** the TMA reads both operands K-major (`wgmma` takes TF32
//! operands K-major only) and does not transpose, so the host first runs
//! `gemm_pack` over each operand into a workspace: `B` (row-major `K x N`,
//! N-major) transposed, `A` (row-major `M x K`) copied; both rounded to
//! TF32 (to nearest, as step 9 does while staging: the tensor cores would
//! truncate), rows padded to a multiple of 128 bytes (a tensor map's must
//! be 16; 128 puts each row of a box in one L2 line). The copies fill elements outside the matrices with zeros, so
//! edge tiles and a `K` residue need no code here.
//!
//! **Order of tiles:** consecutive blocks take the `C` tiles of a group of
//! 16 tile rows column by column, so the blocks that run at once (one per
//! SM) share rows of `A` and columns of `B` in L2 instead of sweeping all of
//! `B` per row of tiles.
//!
//! On the CPU emulator, copies complete at issue and count their bytes on
//! the barrier, and the barriers' arrivals and waits order accesses for the
//! checker (see `emu/races.rs`).

use super::Problem;
use super::ring::{Ring, acquire, produce};
use super::warpgroup::{ROW_BYTES, grouped_tile, k_major_128b, store_fragment, swizzle_base};
use crate::{TensorMap, ThreadCtx};

use super::{Dim3, Feed, Geometry, Operand, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Tf32, (TMA_BM, TMA_BN), Dim3::xy(TMA_THREADS, 1), TMA_SHARED_BYTES / 4).fed_by(Feed {
        a: Operand::KMajor,
        b: Operand::KMajor,
        scaled: false,
    });

/// Rows of the `C` tile per block: two consumer warpgroups of 64.
pub const TMA_BM: u32 = 128;
/// Columns of the `C` tile per block: one `m64n256k8` per warpgroup.
pub const TMA_BN: u32 = 256;
/// Depth of a stage: 32 values, one 128-byte swizzled row (the TMA box's
/// inner size, which the 128-byte swizzle caps at 128 bytes).
pub const TMA_BK: u32 = 32;
/// Threads per block: two consumer warpgroups and one producer warp.
pub const TMA_THREADS: u32 = 2 * 128 + 32;
/// Stages of the pipeline.
pub const TMA_STAGES: u32 = 4;
/// Bytes one stage holds: the `A` tile and the `B^T` tile.
pub const TMA_STAGE_BYTES: u32 = (TMA_BM + TMA_BN) * TMA_BK * 4;
/// Bytes of shared memory per block: the stages, two 8-byte barriers per
/// stage, and 1024 bytes to align the stages to the swizzle's period.
pub const TMA_SHARED_BYTES: u32 = TMA_STAGES * TMA_STAGE_BYTES + 16 * TMA_STAGES + 1024;

const BM: usize = TMA_BM as usize;
const BK: usize = TMA_BK as usize;
const STAGES: usize = TMA_STAGES as usize;
const STAGE_BYTES: usize = TMA_STAGE_BYTES as usize;
/// Threads that consume (both warpgroups).
const CONSUMERS: usize = 256;

const _: () = assert!(ROW_BYTES == BK * 4 && STAGE_BYTES.is_multiple_of(1024) && (BM * ROW_BYTES).is_multiple_of(1024));

/// `C = alpha * A * B + beta * C` with `wgmma` on TF32 operands that the TMA
/// copies into a four-stage pipeline.
///
/// # Parameters
/// `a` and `b` are not the matrices but the addresses of two
/// [`TensorMap`]s in global memory (64-byte aligned), written before the
/// launch: `a`'s describes `A` (`K` columns by `M` rows, box 32 x 128),
/// `b`'s describes `B^T` (`K` columns by `N` rows, box 32 x 256), both f32
/// with the 128-byte swizzle. `c`, `p` as [`super::naive`]. Shared memory:
/// [`TMA_SHARED_BYTES`] (193 KiB, an opt-in size).
///
/// # Thread mapping
/// 288 threads (1D), grid `ceil(n/256) x ceil(m/128)`; the block computes
/// the tile [`grouped_tile`] names. Threads `0..256`: warpgroup `g` owns
/// rows `64 g ..+64` of the tile, all 256 columns, as in step 9. Thread 256
/// issues the copies; threads 257..288 only wait at the start.
///
/// # Safety
/// The tensor maps describe `A` and `B^T` as above, readable; `c` holds the
/// `m * n` floats; the GPU runs `sm_90a` code (compute capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_tma<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (map_a, map_b) = (a.cast::<TensorMap>(), b.cast::<TensorMap>());
    let c = ctx.global_mut(c, (p.m, p.n));
    let tid = ctx.thread_idx().x as usize;
    let (tile_m, tile_n) = grouped_tile(ctx.block_idx(), ctx.grid_dim());
    let (m0, n0) = (tile_m as usize * BM, tile_n as usize * TMA_BN as usize);

    let (_, base) = swizzle_base(ctx, TMA_SHARED_BYTES);
    let a_tile = |s: usize| base + (s * STAGE_BYTES) as u32;
    let b_tile = |s: usize| a_tile(s) + (BM * ROW_BYTES) as u32;
    let ring = Ring::<STAGES> { base, at: STAGES * STAGE_BYTES };
    ring.init(ctx, tid, CONSUMERS);

    let tiles = (p.k as usize).div_ceil(BK);
    if tid >= CONSUMERS {
        if tid == CONSUMERS {
            // SAFETY: the caller's contract: two tensor maps in global memory.
            unsafe { acquire(ctx, [map_a, map_b]) };
            produce!(ctx, ring, tiles, TMA_STAGE_BYTES, |s, t| {
                let k0 = (t * BK) as i32;
                // SAFETY: the maps' boxes (16 and 32 KiB) fit the stage at
                // its 1024-byte-aligned offsets; the stage is free (waited above).
                unsafe {
                    ctx.tma_load_2d(a_tile(s), map_a, (k0, m0 as i32), ring.full(s));
                    ctx.tma_load_2d(b_tile(s), map_b, (k0, n0 as i32), ring.full(s));
                }
            });
        }
        return;
    }

    let group = tid / 128;
    let mut acc = [0.0f32; 128];
    for t in 0..tiles {
        let s = t % STAGES;
        ctx.mbarrier_wait(ring.full(s), ring.parity(t));
        let a_addr = a_tile(s) + (group * 64 * ROW_BYTES) as u32;
        ctx.wgmma_fence();
        unroll!(kk < BK / 8, [0, 1, 2, 3], {
            let step = (32 * kk) as u32;
            // SAFETY: stage s holds tile t: its copies completed the phase waited for.
            unsafe { ctx.wgmma_m64n256k8_tf32(&mut acc, k_major_128b(a_addr + step), k_major_128b(b_tile(s) + step)) };
        });
        ctx.wgmma_commit();
        // Tile t - 1's products have read their stage: release it.
        ctx.wgmma_wait::<1>(&mut acc);
        if t > 0 {
            ctx.mbarrier_arrive(ring.empty((t - 1) % STAGES));
        }
    }
    ctx.wgmma_wait::<0>(&mut acc);

    // SAFETY: the caller's contract (C holds its matrix).
    unsafe { store_fragment(&c, &acc, &p, (m0, n0), tid) };
}
