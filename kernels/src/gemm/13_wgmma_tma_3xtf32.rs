//! Step 13 (tensor cores, Hopper, `sm_90a` only): step 11's FP32-accurate
//! 3xTF32 with promoted partial sums, on step 12's TMA pipeline. Measured
//! in [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Idea:** step 11 splits each operand into TF32 halves while the threads
//! stage it, so the same threads that issue 12 `wgmma`s a tile also load,
//! split, swizzle and store 48 KiB of operands a tile, and a barrier joins
//! them every tile. Here the split happens once per element, before the
//! product: `gemm_pack` writes `A`'s and `B`'s halves (`hi = tf32(x)`, `lo =
//! tf32(x - hi)`) K-major into the workspace, and the product is step 12's
//! pipeline with four operand tiles a stage instead of two: the producer
//! warp copies `A_hi`, `A_lo`, `B^T_hi` and `B^T_lo` (64 KiB) into one of
//! three stages, and the consumers issue, per 8 of `K`, `A_lo B_hi`, `A_hi
//! B_lo` and `A_hi B_hi` from it.
//!
//! **Promotion, as step 11:** each tile's products start a new partial sum
//! (scale-d 0 on the first), and after the tile each thread adds it into
//! its f32 sums (`add.f32`, to nearest): the tensor cores' truncation stays
//! inside one 32-deep partial sum. So each warpgroup waits for its tile's
//! products (`wgmma.wait_group 0`) before it adds, releases the stage and
//! goes on; the other warpgroup's products keep the tensor cores busy
//! meanwhile. The tile is step 11's 128x128 (`m64n128k8`, 64 registers a set,
//! two sets), since two sets of `m64n256`'s 128 do not fit in 255.
//!
//! **What it costs:** the pass over the operands writes four halves (at
//! 4096^2, 64 MiB each) before the product starts, and the tensor cores do
//! three products per term, where cuBLAS SGEMM's FMA units do one.
//!
//! The pipeline's barriers and producer loop are step 12's ring
//! (`ring.rs`), written so that this kernel compiles to the instructions
//! of its own copy of them (`ptx/ENTRIES.sha256`): an earlier helper type
//! that changed its machine code measured 101.2 TFLOP/s at 8192^3 against
//! 108.6 (step 12 and the rest of the ladder unchanged in the same call).
//!
//! On the CPU emulator, copies complete at issue, and the tensor cores'
//! accumulation truncates as on the GPU (see `emu/wgmma.rs`).

use super::Problem;
use super::ring::{Ring, produce};
use super::warpgroup::{ACC_N128, ROW_BYTES, grouped_tile, products_3x, promote, store_fragment, swizzle_base};
use crate::{TensorMap, ThreadCtx};

use super::{Dim3, Feed, Geometry, Operand, Precision, Split};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::of(
    Precision::Split3xTf32 { split: Split::Rounded, promoted: true },
    (TX3_BM, TX3_BN),
    Dim3::xy(TX3_THREADS, 1),
    TX3_SHARED_BYTES / 4,
)
.fed_by(Feed { a: Operand::KMajor, b: Operand::KMajor, scaled: false });

/// Rows of the `C` tile per block: two consumer warpgroups of 64.
pub const TX3_BM: u32 = 128;
/// Columns of the `C` tile per block: one `m64n128k8` per warpgroup.
pub const TX3_BN: u32 = 128;
/// Depth of a stage: one 128-byte swizzled row of each operand tile.
pub const TX3_BK: u32 = 32;
/// Threads per block: two consumer warpgroups and one producer warp.
pub const TX3_THREADS: u32 = 2 * 128 + 32;
/// Stages of the pipeline.
pub const TX3_STAGES: u32 = 3;
/// Bytes one stage holds: `A_hi`, `A_lo`, `B^T_hi`, `B^T_lo`, 128 rows each.
pub const TX3_STAGE_BYTES: u32 = 4 * 128 * TX3_BK * 4;
/// Bytes of shared memory per block: the stages, two 8-byte barriers per
/// stage, and 1024 bytes to align the stages to the swizzle's period.
pub const TX3_SHARED_BYTES: u32 = TX3_STAGES * TX3_STAGE_BYTES + 16 * TX3_STAGES + 1024;

const BM: usize = TX3_BM as usize;
const BK: usize = TX3_BK as usize;
const STAGES: usize = TX3_STAGES as usize;
const STAGE_BYTES: usize = TX3_STAGE_BYTES as usize;
/// Bytes of one operand tile (128 rows of 128 bytes).
const TILE_BYTES: usize = 128 * ROW_BYTES;
/// Threads that consume (both warpgroups).
const CONSUMERS: usize = 256;

const _: () = assert!(ROW_BYTES == BK * 4 && TILE_BYTES.is_multiple_of(1024) && TX3_BN == 128);

/// `C = alpha * A * B + beta * C` in 3xTF32 with promoted partial sums, the
/// operands' halves copied by the TMA into a three-stage pipeline.
///
/// # Parameters
/// `a` and `b` are not the matrices but the addresses of two consecutive
/// [`TensorMap`]s each in global memory (64-byte aligned), written before
/// the launch: `a`'s describe `A_hi` and `A_lo` (`K` columns by `M` rows),
/// `b`'s `B^T_hi` and `B^T_lo` (`K` columns by `N` rows); f32 TF32 halves,
/// boxes of 32 x 128, the 128-byte swizzle. `c`, `p` as [`super::naive`].
/// Shared memory: [`TX3_SHARED_BYTES`] (193 KiB, an opt-in size).
///
/// # Thread mapping
/// 288 threads (1D), grid `ceil(n/128) x ceil(m/128)`; the block computes
/// the tile `grouped_tile` names (step 12's order). Threads `0..256`:
/// warpgroup `g` owns rows `64 g ..+64`, all 128 columns (step 11's
/// fragments). Thread 256 issues the copies.
///
/// # Safety
/// The tensor maps describe the halves as above, readable; `c` holds the
/// `m * n` floats; the GPU runs `sm_90a` code (compute capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_tma_3xtf32<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let maps_a = a.cast::<TensorMap>();
    let maps_b = b.cast::<TensorMap>();
    let c = ctx.global_mut(c, (p.m, p.n));
    let tid = ctx.thread_idx().x as usize;
    let (tile_m, tile_n) = grouped_tile(ctx.block_idx(), ctx.grid_dim());
    let (m0, n0) = (tile_m as usize * BM, tile_n as usize * TX3_BN as usize);

    let (_, base) = swizzle_base(ctx, TX3_SHARED_BYTES);
    // Operand tile `o` (0 A_hi, 1 A_lo, 2 B^T_hi, 3 B^T_lo) of stage `s`.
    let tile = |s: usize, o: usize| base + (s * STAGE_BYTES + o * TILE_BYTES) as u32;
    let ring = Ring::<STAGES> { base, at: STAGES * STAGE_BYTES };
    ring.init(ctx, tid, CONSUMERS);

    let tiles = (p.k as usize).div_ceil(BK);
    if tid >= CONSUMERS {
        if tid == CONSUMERS {
            // SAFETY (all): the caller's contract: two maps at `a`, two at
            // `b`; each box (16 KiB) fits its tile at a 1024-byte-aligned
            // offset, and the stage is free (the ring waited for it).
            unsafe {
                for i in 0..2 {
                    ctx.tensormap_acquire(maps_a.add(i));
                    ctx.tensormap_acquire(maps_b.add(i));
                }
            }
            produce!(ctx, ring, tiles, TX3_STAGE_BYTES, |s, t| {
                let k0 = (t * BK) as i32;
                // SAFETY: as above.
                unsafe {
                    for i in 0..2 {
                        ctx.tma_load_2d(tile(s, i), maps_a.add(i), (k0, m0 as i32), ring.full(s));
                        ctx.tma_load_2d(tile(s, 2 + i), maps_b.add(i), (k0, n0 as i32), ring.full(s));
                    }
                }
            });
        }
        return;
    }

    let group = tid / 128;
    // The promoted sums, and the tensor cores' partial sum of the current
    // tile (each tile's first product overwrites it: no reset needed).
    let mut acc = [0.0f32; ACC_N128];
    let mut part = [0.0f32; ACC_N128];
    let a_rows = (group * 64 * ROW_BYTES) as u32;
    for t in 0..tiles {
        let s = t % STAGES;
        ctx.mbarrier_wait(ring.full(s), ring.parity(t));
        let (a_hi, a_lo) = (tile(s, 0) + a_rows, tile(s, 1) + a_rows);
        let (b_hi, b_lo) = (tile(s, 2), tile(s, 3));
        ctx.wgmma_fence();
        // SAFETY: stage s holds tile t: its copies completed the phase
        // waited for. The tile's first product starts the partial sum.
        unsafe { products_3x(ctx, &mut part, ((a_hi, a_lo), (b_hi, b_lo))) };
        ctx.wgmma_commit();
        ctx.wgmma_wait_n128::<0>(&mut part);
        // The products have read stage s: release it, then add.
        ctx.mbarrier_arrive(ring.empty(s));
        promote(&mut acc, &part);
    }

    // SAFETY: the caller's contract (C holds its matrix).
    unsafe { store_fragment(&c, &acc, &p, (m0, n0), tid) };
}
