//! Step 14 (tensor cores, Hopper, `sm_90a` only): step 12's TMA pipeline
//! reading `A` and `B` where they are, with no operand pass. Measured in
//! [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Idea:** step 12 spends a pass over each operand before its product
//! (`gemm_pack`): `wgmma` takes TF32 operands from shared memory K-major
//! only, so `B` (row-major `K x N`, N-major) is transposed into a
//! workspace, and both are rounded to TF32 on the way. Two things remove
//! the pass:
//!
//! - **The TMA rounds.** A tensor map of element type TF32
//!   (`CU_TENSOR_MAP_DATA_TYPE_TFLOAT32`) makes each copy round every f32
//!   to TF32, to nearest even (the probe in
//!   `docs/measurements/2026-11-28-h100-tma-tf32-probe` at commit f58f145 shows it bit by
//!   bit), so the copies read `A` and `B` themselves and the tensor cores
//!   see rounded operands: the products have cuBLAS TF32's error.
//! - **`B` goes through registers.** `wgmma` reads its first operand from
//!   registers too, in any layout the threads load. So the block computes
//!   `C^T = B^T A^T`: `B^T`'s rows (columns `n` of `B`) are `wgmma`'s `M`,
//!   loaded by the threads from the N-major tile the TMA copied; `A^T`'s
//!   columns (rows `m` of `A`, K-major as they are) are its `N`, read from
//!   shared memory through a descriptor as in step 12. The accumulators
//!   hold `C^T`'s fragment, stored to `C` transposed.
//!
//! **The `B` tile** is four TMA boxes of 32 `n` by 32 `k`, each row of 32
//! `n` 128 bytes in the 128-byte swizzle (16-byte chunk `q` of row `k` at
//! chunk `q ^ (k % 8)`). A thread's `A` fragment is, per 8 of `K`, rows `r`
//! and `r + 8` at columns `k` and `k + 4` ([`ThreadCtx::wgmma_m64n256k8_tf32_rs`]).
//! The rows of `C^T` may be any columns of `B`, as long as the store puts
//! them back: row `r` and `r + 8` are the adjacent `n` and `n + 1`, one
//! 8-byte load per `k`, and the `n` of a warp's lanes are chosen so that
//! the loads of each half-warp (4 `k` by 4 pairs) fall in 8 different
//! chunks, all 32 banks: `n = 2 (g % 2) + 4 (g / 4) + 16 ((g / 2) % 2)`
//! for lane group `g = l / 4` ([`pair_of`]): 2 wavefronts a load, the
//! least 256 bytes take, as the emulator counts and as an H100 serves these
//! addresses alone (`docs/measurements/2026-11-28-h100-ld64-probe` at commit f58f145; in
//! lane order, `n = 2 g`, they take 4). The same pairing makes the stores
//! 8 bytes wide.
//!
//! **Registers:** a `wgmma` that reads registers may not have them written
//! before its group completes. Each 8-deep slice of a stage is a group of
//! its own, and two fragments (4 registers each) take turns: the loads of
//! slice `i + 1` write the set that slice `i - 1` read, retired by the wait
//! after slice `i` (`wgmma.wait_group 1`), 162 registers a thread in all.
//! A whole stage's 16 fragment registers, twice, would take 186, past the
//! 168 that 288 threads may have (a sub-partition of the SM holds 3 of the
//! 9 warps in its 16384 registers): such a launch fails with
//! `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`.
//!
//! A tensor map needs each row 16-byte aligned: the host copies an
//! operand whose rows are not (`K` or `N` not a multiple of 4, or a base
//! not 16-byte aligned) into a padded workspace first, the one case with
//! a pass.

use super::ring::{Ring, acquire, produce};
use super::warpgroup::{grouped_tile_in, k_major_128b, store_transposed, swizzle_base, swizzled};
use super::{Dim3, Feed, Geometry, Operand, Precision, Problem};
use crate::vector::F2;
use crate::{TensorMap, ThreadCtx};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Tf32, (DIRECT_BM, DIRECT_BN), Dim3::xy(DIRECT_THREADS, 1), DIRECT_SHARED_BYTES / 4)
        .fed_by(Feed { a: Operand::AsItIs, b: Operand::AsItIs, scaled: false });

/// Rows of the `C` tile per block: `wgmma`'s `N`, the rows of `A` a stage holds.
pub const DIRECT_BM: u32 = 256;
/// Columns of the `C` tile per block: two consumer warpgroups of 64 (`wgmma`'s `M`).
pub const DIRECT_BN: u32 = 128;
/// Depth of a stage: 32 of `K`, one 128-byte swizzled row of `A`'s tile.
pub const DIRECT_BK: u32 = 32;
/// Columns of `B` in one TMA box: one 128-byte swizzled row.
pub const DIRECT_B_BOX: u32 = 32;
/// Threads per block: two consumer warpgroups and one producer warp.
pub const DIRECT_THREADS: u32 = 2 * 128 + 32;
/// Tile rows per group in the order of tiles (step 12's, in groups of 8:
/// the blocks that run at once, one per SM, then cover a region about as
/// tall as it is wide, 8 tiles of 256 rows by 16 of 128 columns).
pub const DIRECT_GROUP_ROWS: u32 = 8;
/// Stages of the pipeline.
pub const DIRECT_STAGES: u32 = 4;
/// Bytes one stage holds: `A`'s 256 x 32 tile and `B`'s 32 x 128.
pub const DIRECT_STAGE_BYTES: u32 = (DIRECT_BM + DIRECT_BN) * DIRECT_BK * 4;
/// Bytes of shared memory per block: the stages, two 8-byte barriers per
/// stage, and 1024 bytes to align the stages to the swizzle's period.
pub const DIRECT_SHARED_BYTES: u32 = DIRECT_STAGES * DIRECT_STAGE_BYTES + 16 * DIRECT_STAGES + 1024;

const BM: usize = DIRECT_BM as usize;
const BN: usize = DIRECT_BN as usize;
const BK: usize = DIRECT_BK as usize;
const STAGES: usize = DIRECT_STAGES as usize;
const STAGE_BYTES: usize = DIRECT_STAGE_BYTES as usize;
/// Bytes of one `B` box: 32 rows (`k`) of 128 bytes.
const BOX_BYTES: usize = (DIRECT_B_BOX * DIRECT_BK * 4) as usize;
/// Threads that consume (both warpgroups).
const CONSUMERS: usize = 256;

const _: () = assert!(BK * 4 == 128 && (BM * BK * 4).is_multiple_of(1024) && BOX_BYTES.is_multiple_of(1024));

/// The column of `B`, within its box, that holds rows `r` (even element)
/// and `r + 8` (odd) of warp `w`'s 16 rows of `C^T`, for lane group `g =
/// lane / 4` (see the module doc): each warp takes 16 of a box's 32 columns.
#[inline(always)]
pub fn pair_of(w: usize, g: usize) -> usize {
    2 * (g % 2) + 4 * (g / 4) + 16 * ((g / 2) % 2) + 8 * (w % 2)
}

/// `C = alpha * A * B + beta * C` with `wgmma` on operands the TMA copies,
/// and rounds to TF32, from `A` and `B` as they are.
///
/// # Parameters
/// `a` and `b` are not the matrices but the addresses of two
/// [`TensorMap`]s in global memory (64-byte aligned), written before the
/// launch: `a`'s describes `A` (`K` columns by `M` rows, box 32 x 256),
/// `b`'s describes `B` (`N` columns by `K` rows, box 32 x 32), both of
/// element type TF32 (f32 in memory, rounded by the copy) with the 128-byte
/// swizzle. `c`, `p` as [`super::naive`]. Shared memory:
/// [`DIRECT_SHARED_BYTES`] (193 KiB, an opt-in size).
///
/// # Thread mapping
/// 288 threads (1D), grid `ceil(n/128) x ceil(m/256)`; the block computes
/// the tile [`grouped_tile_in`] names (groups of [`DIRECT_GROUP_ROWS`]). Threads `0..256`: warpgroup `g` owns
/// columns `64 g ..+64` of the tile (rows of `C^T`), all 256 rows; warp `w`
/// of it the 16 columns of box `2 g + w / 2` that [`pair_of`] names.
/// Thread 256 issues the copies; threads 257..288 only wait at the start.
///
/// # Safety
/// The tensor maps describe `A` and `B` as above, readable; `c` holds the
/// `m * n` floats; the GPU runs `sm_90a` code (compute capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_direct<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (map_a, map_b) = (a.cast::<TensorMap>(), b.cast::<TensorMap>());
    let c = ctx.global_mut(c, (p.m, p.n));
    let tid = ctx.thread_idx().x as usize;
    let (tile_m, tile_n) = grouped_tile_in::<DIRECT_GROUP_ROWS>(ctx.block_idx(), ctx.grid_dim());
    let (m0, n0) = (tile_m as usize * BM, tile_n as usize * BN);

    let (smem, base) = swizzle_base(ctx, DIRECT_SHARED_BYTES);
    let a_tile = |s: usize| base + (s * STAGE_BYTES) as u32;
    // Byte offset of `B`'s box `j` of stage `s` from the aligned base.
    let b_box = |s: usize, j: usize| s * STAGE_BYTES + BM * BK * 4 + j * BOX_BYTES;
    let ring = Ring::<STAGES> { base, at: STAGES * STAGE_BYTES };
    ring.init(ctx, tid, CONSUMERS);

    let tiles = (p.k as usize).div_ceil(BK);
    if tid >= CONSUMERS {
        if tid == CONSUMERS {
            // SAFETY: the caller's contract: two tensor maps in global memory.
            unsafe { acquire(ctx, [map_a, map_b]) };
            produce!(ctx, ring, tiles, DIRECT_STAGE_BYTES, |s, t| {
                let k0 = (t * BK) as i32;
                // SAFETY: the boxes (32 KiB of A, four of 4 KiB of B) fit
                // the stage at 1024-byte-aligned offsets; the stage is free.
                unsafe {
                    ctx.tma_load_2d(a_tile(s), map_a, (k0, m0 as i32), ring.full(s));
                    for j in 0..BN / DIRECT_B_BOX as usize {
                        let x = (n0 + j * DIRECT_B_BOX as usize) as i32;
                        ctx.tma_load_2d(base + b_box(s, j) as u32, map_b, (x, k0), ring.full(s));
                    }
                }
            });
        }
        return;
    }

    let (group, warp, lane) = (tid / 128, (tid % 128) / 32, tid % 32);
    let q = lane % 4;
    let (box_j, col) = (2 * group + warp / 2, pair_of(warp, lane / 4));
    // The 8-byte word of B's box at row `k`, columns `col, col + 1`.
    let word = |s: usize, k: usize| (b_box(s, box_j) + swizzled(k, col / 4) + 4 * (col % 4)) / 8;
    let words = smem.cast::<F2>(STAGES * STAGE_BYTES / 8);
    // The fragment of stage `s`'s 8-deep slice `kk`: rows (r, r + 8) at
    // column `q` and at `q + 4`.
    let load = |s: usize, kk: usize| -> [f32; 4] {
        // SAFETY: inside the stage's B tile, delivered by the copies whose
        // phase the caller waited for.
        let (F2([x0, x1]), F2([y0, y1])) =
            unsafe { (words.load(word(s, 8 * kk + q)), words.load(word(s, 8 * kk + q + 4))) };
        [x0, x1, y0, y1]
    };

    let mut acc = [0.0f32; 128];
    // Two fragments, for the even and the odd slices: slice `kk` of stage `s`
    // loads `$frag`, issues its product as a group of its own, and waits
    // until only it is in flight, which retires the slice before, whose
    // product read `$before`. (A macro, not a closure: LLVM keeps a closure
    // that is used four times out of line, the accumulators on the stack.)
    let mut even: [f32; 4];
    let mut odd = [0.0f32; 4];
    macro_rules! slice {
        ($s:expr, $kk:literal, $frag:ident, $before:ident) => {{
            $frag = load($s, $kk);
            ctx.wgmma_fence();
            let desc = k_major_128b(a_tile($s) + 32 * $kk);
            // SAFETY: stage s holds its tile: its copies completed the phase waited for.
            unsafe { ctx.wgmma_m64n256k8_tf32_rs(&mut acc, $frag, desc) };
            ctx.wgmma_commit();
            ctx.wgmma_wait_rs::<1>(&mut acc, &$before);
        }};
    }
    for t in 0..tiles {
        let s = t % STAGES;
        ctx.mbarrier_wait(ring.full(s), ring.parity(t));
        slice!(s, 0, even, odd);
        // The last slice of tile t - 1 has read its stage: release it.
        if t > 0 {
            ctx.mbarrier_arrive(ring.empty((t - 1) % STAGES));
        }
        slice!(s, 1, odd, even);
        slice!(s, 2, even, odd);
        slice!(s, 3, odd, even);
    }
    ctx.wgmma_wait::<0>(&mut acc);

    // SAFETY: the caller's contract (C holds its matrix).
    unsafe { store_transposed(&c, &acc, &p, (m0, n0 + 64 * group + 32 * (warp / 2) + col), q) };
}
